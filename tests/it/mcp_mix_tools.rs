//! Every build tool on mix projects through the real server and a real MCP client, with real
//! Elixir 1.14, on the projects in test-projects/ whose outcomes are known exactly
//! (test-projects/README.md).

use std::collections::BTreeSet;
use std::time::Duration;

use crate::support::*;
use serde_json::{Value, json};

/// file:line code message (Elixir 1.14 gives no columns), for comparing diagnostics as a set.
fn located(diagnostics: &Value) -> BTreeSet<String> {
    diagnostics
        .as_array()
        .expect("a list of diagnostics")
        .iter()
        .map(|d| {
            format!(
                "{}:{} {} {}",
                d["file"].as_str().unwrap_or("?"),
                d["line"],
                d["code"].as_str().unwrap_or("-"),
                d["message"].as_str().unwrap().lines().next().unwrap()
            )
        })
        .collect()
}

const UNUSED: &str = "(if the variable is not meant to be used, prefix it with an underscore)";

const MIX_ERRORS_ERROR: &str = "lib/mix_errors/report.ex:16 CompileError undefined function format_row/1 (expected MixErrors.Report to define such a function or for it to be imported, but none are available)";

/// mix-errors' warnings: its library never compiles, so every build prints them all.
fn mix_errors_warnings() -> BTreeSet<String> {
    set(&[
        &format!("lib/mix_errors.ex:7 - variable \"count\" is unused {UNUSED}"),
        "lib/mix_errors.ex:4 - unused alias Report",
        &format!("lib/mix_errors/format.ex:6 - variable \"width\" is unused {UNUSED}"),
        "lib/mix_errors/format.ex:4 - unused import String",
        &format!("lib/mix_errors/report.ex:10 - variable \"unused_width\" is unused {UNUSED}"),
    ])
}

#[tokio::test]
async fn compile_reports_exact_errors_and_warnings_in_both_eras() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    for era in [Era::Legacy, Era::Modern] {
        let client = client(&era, &server.url).await;
        let report = call_ok(&client, "compile", json!({"project_path": "mix-errors"})).await;
        assert_eq!(report["status"], "failed", "{report}");
        assert_eq!(located(&report["errors"]), set(&[MIX_ERRORS_ERROR]));
        assert_eq!(located(&report["warnings"]), mix_errors_warnings());
        assert_eq!(report["errors"][0]["severity"], "error");

        let clean = call_ok(&client, "compile", json!({"project_path": "mix-clean"})).await;
        assert_eq!(
            (&clean["status"], &clean["errors"], &clean["warnings"]),
            (&json!("ok"), &json!([]), &json!([]))
        );
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn warnings_are_repeated_for_unchanged_files_and_can_fail_the_build() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let args = json!({"project_path": "mix-warnings"});
    let first = call_ok(&client, "compile", args.clone()).await;
    // Nothing is recompiled the second time; the warnings are still all there.
    let second = call_ok(&client, "compile", args).await;
    for report in [&first, &second] {
        assert_eq!(report["status"], "ok", "{report}");
        assert_eq!(report["warnings"].as_array().unwrap().len(), 9, "{report}");
    }
    let multi_line = second["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .find(|w| w["line"] == 27)
        .unwrap();
    let message = multi_line["message"].as_str().unwrap();
    assert!(
        message.starts_with("def label/2 has multiple clauses"),
        "{message}"
    );
    assert!(message.contains("def foo(a, b \\\\ :default)"), "{message}");
    let cache_lines: BTreeSet<String> = second["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|w| w["file"] == "lib/mix_warnings/cache.ex")
        .map(|w| w["line"].to_string())
        .collect();
    assert_eq!(cache_lines, set(&["7", "11"]));

    let strict = call_ok(
        &client,
        "compile",
        json!({"project_path": "mix-warnings", "warnings_as_errors": true, "force": true}),
    )
    .await;
    assert_eq!(strict["status"], "failed", "{strict}");
    assert_eq!(strict["errors"], json!([]));
    assert_eq!(
        strict["notes"][0],
        "failed because of warnings (warnings_as_errors)"
    );

    let odd = call_ok(
        &client,
        "compile",
        json!({"project_path": "odd päths/mix app"}),
    )
    .await;
    assert_eq!(
        located(&odd["warnings"]),
        set(&[&format!(
            "lib/módulo con espacio.ex:4 - variable \"año_sin_uso\" is unused {UNUSED}"
        )])
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn test_reports_counts_and_each_failure_exactly() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let report = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-failing", "seed": 0}),
    )
    .await;
    assert_eq!(report["status"], "failed");
    assert_eq!(
        [
            &report["passed"],
            &report["failed"],
            &report["ignored"],
            &report["filtered_out"],
            &report["invalid"],
            &report["seed"]
        ],
        [
            &json!(2),
            &json!(8),
            &json!(1),
            &json!(1),
            &json!(2),
            &json!(0)
        ]
    );
    assert_eq!(report["failures"].as_array().unwrap().len(), 9);

    let numbers = failure(&report, "test compares numbers");
    assert_eq!(numbers["module"], "MixFailingTest");
    assert_eq!(numbers["file"], "test/mix_failing_test.exs");
    assert_eq!(numbers["line"], 10);
    assert_eq!(
        numbers["message"],
        "Assertion with == failed\ncode: assert MixFailing.times_ten(45) == 500"
    );
    assert_eq!(
        (&numbers["left"], &numbers["right"]),
        (&json!("450"), &json!("500"))
    );

    let doctest = failure(&report, "doctest MixFailing.halve/1 (1)");
    assert_eq!(
        (&doctest["file"], &doctest["line"]),
        (&json!("lib/mix_failing.ex"), &json!(15))
    );
    assert_eq!(
        (&doctest["left"], &doctest["right"]),
        (&json!("4"), &json!("5"))
    );

    let raises = failure(&report, "test raises");
    assert_eq!(
        raises["message"],
        "** (ArgumentError) not a number: \"forty-two\""
    );
    assert_eq!(raises["line"], 22);
    assert!(
        raises["stacktrace"]
            .as_str()
            .unwrap()
            .contains("lib/mix_failing.ex:23"),
        "{raises}"
    );
    let custom = failure(&report, "test compares with a message");
    assert_eq!(custom["message"], "halving 9 should round up");
    let multi_line = failure(&report, "test multi-line message");
    assert_eq!(
        multi_line["message"],
        "first line of the reason\nsecond line of the reason"
    );
    let setup_all = failure(&report, "MixFailing.SetupAllTest (setup_all)");
    assert_eq!(
        setup_all["message"],
        "** (RuntimeError) database unavailable"
    );
    assert_eq!(
        (&setup_all["file"], &setup_all["line"]),
        (&json!("test/setup_all_test.exs"), &json!(5))
    );

    let slow = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-failing", "tags": ["slow"]}),
    )
    .await;
    assert_eq!(
        (&slow["failed"], &slow["filtered_out"]),
        (&json!(1), &json!(13)),
        "{slow}"
    );
    let only_one = failure(&slow, "test slow and failing");
    assert_eq!(
        (&only_one["left"], &only_one["right"]),
        (&json!("55"), &json!("0"))
    );

    let exact = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-failing", "filter": "compares maps", "exact": true}),
    )
    .await;
    assert_eq!(
        (&exact["failed"], &exact["passed"]),
        (&json!(1), &json!(0)),
        "{exact}"
    );

    let by_line = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-failing", "path": "test/mix_failing_test.exs:5"}),
    )
    .await;
    assert_eq!(
        (&by_line["status"], &by_line["passed"]),
        (&json!("passed"), &json!(1)),
        "{by_line}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn passing_umbrella_and_broken_test_suites() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let clean = call_ok(&client, "test", json!({"project_path": "mix-clean"})).await;
    assert_eq!(
        [
            &clean["status"],
            &clean["passed"],
            &clean["ignored"],
            &clean["filtered_out"]
        ],
        [&json!("passed"), &json!(5), &json!(1), &json!(1)]
    );
    let included = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-clean", "exclude": ["nothing"], "tags": ["slow"]}),
    )
    .await;
    assert_eq!(
        (&included["passed"], &included["status"]),
        (&json!(1), &json!("passed")),
        "{included}"
    );
    let nothing = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-clean", "tags": ["missing_tag"]}),
    )
    .await;
    // mix exits 1 ("The --only option was given ... but no test was executed"): not a pass.
    assert_eq!(
        (
            &nothing["status"],
            &nothing["stage"],
            &nothing["passed"],
            &nothing["filtered_out"]
        ),
        (
            &json!("no_tests_matched"),
            &json!("test"),
            &json!(0),
            &json!(7)
        ),
        "{nothing}"
    );
    let reason = nothing["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("missing_tag") && reason.contains("7 filtered out"),
        "{reason}"
    );

    let umbrella = call_ok(&client, "test", json!({"project_path": "mix-umbrella"})).await;
    assert_eq!(
        (&umbrella["status"], &umbrella["passed"]),
        (&json!("passed"), &json!(4))
    );
    let one_app = call_ok(
        &client,
        "test",
        json!({"project_path": "mix-umbrella", "package": "web"}),
    )
    .await;
    assert_eq!(one_app["passed"], 2, "{one_app}");

    // Issue 10: the warnings of the build that failed came back only from `compile`.
    let not_built = call_ok(&client, "test", json!({"project_path": "mix-errors"})).await;
    assert_mix_errors_not_built(&not_built);

    let broken = call_ok(&client, "test", json!({"project_path": "mix-warnings"})).await;
    assert_eq!(broken["status"], "build_failed", "{broken}");
    assert_eq!(
        located(&broken["errors"]),
        set(&[
            "test/broken_test.exs:5 CompileError undefined function build_fixture/1 (expected MixWarnings.BrokenTest to define such a function or for it to be imported, but none are available)"
        ])
    );
    client.cancel().await.ok();
}

/// A mix project with one module: `warnings` functions with an unused variable each, and
/// one call to a function that does not exist.
fn many_warnings_app(dir: &std::path::Path, warnings: usize) {
    let root = dir.join("noisy");
    std::fs::create_dir_all(root.join("lib")).unwrap();
    std::fs::create_dir_all(root.join("test")).unwrap();
    std::fs::write(
        root.join("mix.exs"),
        "defmodule Noisy.MixProject do\n  use Mix.Project\n\n  \
         def project, do: [app: :noisy, version: \"0.1.0\", elixir: \"~> 1.14\"]\nend\n",
    )
    .unwrap();
    let functions: String = (0..warnings)
        .map(|n| format!("  def f{n}(x) do\n    y{n} = x\n    x\n  end\n\n"))
        .collect();
    let module =
        format!("defmodule Noisy do\n{functions}  def broken, do: missing_function(1)\nend\n");
    std::fs::write(root.join("lib/noisy.ex"), module).unwrap();
    std::fs::write(root.join("test/test_helper.exs"), "ExUnit.start()\n").unwrap();
}

/// Issue 10: mix listed every diagnostic while cargo kept 50; both now keep 50 and count the rest.
#[tokio::test]
async fn diagnostics_beyond_fifty_are_counted_by_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    many_warnings_app(dir.path(), 60);
    let server = Server::start_in(dir.path());
    let client = modern_client(&server.url).await;
    for tool in ["compile", "test", "run"] {
        let report = call_ok(&client, tool, json!({"project_path": "noisy"})).await;
        assert_diagnostics_capped(tool, &report, 10);
    }
    client.cancel().await.ok();
}

/// `mix test` with a test helper and no test file prints "There are no tests to run" and
/// exits 0: nothing was tested, so it is not a pass.
#[tokio::test]
async fn a_project_without_tests_has_no_tests_rather_than_a_pass() {
    let dir = tempfile::tempdir().unwrap();
    many_warnings_app(dir.path(), 0);
    let lib = dir.path().join("noisy/lib/noisy.ex");
    std::fs::write(lib, "defmodule Noisy do\n  def one, do: 1\nend\n").unwrap();
    let server = Server::start_in(dir.path());
    let client = modern_client(&server.url).await;
    let report = call_ok(&client, "test", json!({"project_path": "noisy"})).await;
    assert_eq!(
        (&report["status"], &report["stage"], &report["reason"]),
        (
            &json!("no_tests"),
            &json!("test"),
            &json!("the project has no tests")
        ),
        "{report}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn test_progress_names_failures_as_they_happen() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let (client, recorder) = progress_client(&server.url).await;
    let result = call_with_progress(
        &client,
        "test",
        json!({"project_path": "mix-failing", "seed": 0}),
        "m1",
    )
    .await;
    assert_eq!(result.structured_content.unwrap()["status"], "failed");
    let messages = recorder.snapshot();
    assert!(messages[0].starts_with("mix test --seed 0"), "{messages:?}");
    let failed = messages.iter().filter(|m| m.starts_with("FAILED ")).count();
    assert_eq!(failed, 8, "{messages:?}");
    assert!(
        messages
            .last()
            .unwrap()
            .starts_with("done: 2 passed, 8 failed"),
        "{messages:?}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn format_lists_and_diffs_then_applies() {
    let _turn = mix_projects_turn().await;
    let (dir, copy) = copy_project("mix-unformatted");
    let server = Server::start_in(dir.path());
    let client = modern_client(&server.url).await;
    let path = copy.to_str().unwrap();
    let check = call_ok(&client, "format", json!({"project_path": path})).await;
    assert_eq!(check["status"], "needs_formatting", "{check}");
    assert_eq!(check["files"].as_array().unwrap().len(), 1);
    assert_eq!(check["files"][0]["file"], "lib/messy.ex");
    let diff = check["files"][0]["diff"].as_str().unwrap();
    assert!(diff.starts_with("@@ line "), "{diff}");
    assert!(diff.lines().any(|l| l.starts_with('+')), "{diff}");
    let before = std::fs::read_to_string(copy.join("lib/messy.ex")).unwrap();

    let applied = call_ok(
        &client,
        "format",
        json!({"project_path": path, "apply": true}),
    )
    .await;
    assert_eq!(applied["status"], "applied");
    assert_eq!(applied["files"][0]["file"], "lib/messy.ex");
    assert_ne!(
        std::fs::read_to_string(copy.join("lib/messy.ex")).unwrap(),
        before
    );
    let again = call_ok(&client, "format", json!({"project_path": path})).await;
    assert_eq!(
        (&again["status"], &again["files"]),
        (&json!("formatted"), &json!([]))
    );
    client.cancel().await.ok();
}

/// Issue 48: the list of unformatted files is what the project's `mix.exs` let mix print. A
/// project that names a file outside it (absolute, `../`, or through a link) gets no diff of
/// it: the file, formattable Elixir holding a secret, is never read.
#[tokio::test]
async fn format_reads_no_file_the_project_names_outside_it() {
    let _turn = mix_projects_turn().await;
    let (dir, copy) = copy_project("mix-unformatted");
    let secret = dir.path().join("secret.ex");
    std::fs::write(&secret, "secret   =   \"lab-secret-material\"\n").unwrap();
    std::os::unix::fs::symlink(&secret, copy.join("lib/linked.ex")).unwrap();
    let mix_exs = std::fs::read_to_string(copy.join("mix.exs")).unwrap();
    let lies = format!(
        "The following files are not formatted:\\n\\n  * {}\\n  * ../secret.ex\\n  * lib/linked.ex\\n  * lib/messy.ex\\n",
        secret.display()
    );
    let mix_exs = mix_exs
        .replace(
            "      deps: []\n",
            "      deps: [],\n      aliases: [format: &__MODULE__.lie/1]\n",
        )
        .replace(
            "  def application do",
            &format!(
                "  def lie(_args) do\n    IO.write(:stderr, \"{lies}\")\n    exit({{:shutdown, 1}})\n  end\n\n  def application do"
            ),
        );
    std::fs::write(copy.join("mix.exs"), mix_exs).unwrap();
    let server = Server::start_in(dir.path());
    let client = modern_client(&server.url).await;
    let check = call_ok(
        &client,
        "format",
        json!({"project_path": copy.to_str().unwrap()}),
    )
    .await;
    assert_eq!(check["status"], "needs_formatting", "{check}");
    let files = check["files"].as_array().unwrap();
    assert_eq!(files.len(), 4, "{check}");
    assert!(
        !check.to_string().contains("lab-secret-material"),
        "{check}"
    );
    for file in files {
        match file["file"].as_str().unwrap() {
            "lib/messy.ex" => assert!(file["diff"].as_str().is_some(), "{file}"),
            _ => assert!(file["diff"].is_null(), "{file}"),
        }
    }
    client.cancel().await.ok();
}

#[tokio::test]
async fn run_executes_allowed_tasks_with_exit_codes_and_stdin() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let printed = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-clean", "args": ["-e", "IO.puts(MixClean.add(2, 3))"]}),
    )
    .await;
    assert_eq!(
        (&printed["status"], &printed["exit_code"]),
        (&json!("ok"), &json!(0))
    );
    assert_eq!(
        printed["stdout"], "5\n",
        "only the program's own output: {printed}"
    );

    let failing = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-clean", "args": ["-e", "IO.puts(:stderr, \"bad\"); System.halt(3)"]}),
    )
    .await;
    assert_eq!(
        (&failing["status"], &failing["exit_code"]),
        (&json!("error"), &json!(3))
    );
    assert_eq!(failing["stderr"], "bad\n");

    let echoed = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-clean", "args": ["-e", "IO.write(String.upcase(IO.read(:stdio, :eof)))"], "stdin": "héllo"}),
    )
    .await;
    assert_eq!(echoed["stdout"], "HÉLLO");

    let not_built = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-errors", "args": ["-e", "IO.puts(1)"]}),
    )
    .await;
    assert_mix_errors_not_built(&not_built);
    assert!(not_built.get("exit_code").is_none(), "{not_built}");
    assert_eq!(
        (&printed["status"], &printed["stage"]),
        (&json!("ok"), &json!("run"))
    );

    let refused = call_err(
        &client,
        "run",
        json!({"project_path": "mix-clean", "task": "deps.get"}),
    )
    .await;
    assert!(
        refused.contains("task `deps.get` is not allowed"),
        "{refused}"
    );
    assert!(refused.contains("mix.tasks"), "{refused}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_timed_out_mix_run_leaves_no_beam_behind() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let report = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-clean", "args": ["-e", "Process.sleep(:infinity)"], "timeout_ms": 3000}),
    )
    .await;
    assert_eq!(report["status"], "timeout", "{report}");
    server.assert_no_descendants_within(Duration::from_secs(15), "the BEAM was left running");
    client.cancel().await.ok();
}

#[tokio::test]
async fn project_info_reads_mix_exs_and_umbrella_apps() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let clean = call_ok(
        &client,
        "project_info",
        json!({"project_path": "mix-clean"}),
    )
    .await;
    assert_eq!(
        (&clean["toolchain"], &clean["name"], &clean["version"]),
        (&json!("mix"), &json!("mix_clean"), &json!("0.1.0"))
    );
    assert!(
        clean["elixir_requirement"]
            .as_str()
            .unwrap()
            .starts_with("~> 1.")
    );
    assert!(
        clean["toolchain_versions"]["elixir"]
            .as_str()
            .unwrap()
            .starts_with("Elixir 1.")
    );
    assert!(
        clean["toolchain_versions"]["otp"]
            .as_str()
            .unwrap()
            .starts_with("Erlang/OTP ")
    );
    assert_eq!(
        clean["test_files"],
        json!(["test/mix_clean_test.exs", "test/shapes_test.exs"])
    );

    let umbrella = call_ok(
        &client,
        "project_info",
        json!({"project_path": "mix-umbrella"}),
    )
    .await;
    let apps: Vec<&str> = umbrella["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(apps, ["core", "web"]);
    assert_eq!(umbrella["packages"][1]["manifest"], "apps/web/mix.exs");
    assert_eq!(
        umbrella["packages"][1]["dependencies"][0]["source"],
        "in_umbrella"
    );

    // mix.exs is read without fetching anything.
    let missing = call_ok(
        &client,
        "project_info",
        json!({"project_path": "mix-missing-deps"}),
    )
    .await;
    let deps: BTreeSet<String> = missing["packages"][0]["dependencies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            format!(
                "{} {}",
                d["name"].as_str().unwrap(),
                d["source"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(deps, set(&["jason git", "shared path"]));
    client.cancel().await.ok();
}

#[tokio::test]
async fn type_check_runs_dialyzer_and_lint_falls_back_to_compiler_warnings() {
    let _turn = mix_projects_turn().await;
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    // The first call on a machine builds the PLT (about a minute here).
    let report = call_ok(
        &client,
        "type_check",
        json!({"project_path": "mix-dialyzer", "timeout_ms": 900000}),
    )
    .await;
    assert_eq!(report["status"], "ok", "{report}");
    let file = "lib/mix_dialyzer/warnings.ex";
    let found: BTreeSet<String> = report["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| {
            format!(
                "{}:{} {}",
                w["file"].as_str().unwrap(),
                w["line"],
                w["code"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        found,
        set(&[
            &format!("{file}:5 no_return"),
            &format!("{file}:6 call"),
            &format!("{file}:12 guard_fail"),
            &format!("{file}:18 no_return"),
            &format!("{file}:19 call"),
            &format!("{file}:28 pattern_match"),
        ])
    );
    assert!(
        report["notes"][0]
            .as_str()
            .unwrap()
            .contains("dialyxir is not a dependency")
    );

    let lint = call_ok(&client, "lint", json!({"project_path": "mix-warnings"})).await;
    assert_eq!(lint["warnings"].as_array().unwrap().len(), 9, "{lint}");
    assert!(
        lint["notes"][0]
            .as_str()
            .unwrap()
            .starts_with("credo is not a dependency")
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn bad_mix_input_gets_clear_errors() {
    let _turn = mix_projects_turn().await;
    // mix-missing-hex needs Hex missing, whatever this machine has installed: a MIX_HOME of
    // its own has no archives, so no Hex.
    let mix_home = tempfile::tempdir().unwrap();
    let archives = mix_home.path().join("archives");
    let env = [
        ("MIX_HOME", mix_home.path().to_str().unwrap()),
        ("MIX_ARCHIVES", archives.to_str().unwrap()),
    ];
    let server = Server::start_with_env(&[], &env);
    let client = modern_client(&server.url).await;
    for project in ["mix-missing-deps", "mix-missing-hex"] {
        let error = call_err(&client, "compile", json!({"project_path": project})).await;
        assert!(error.contains("dependencies are missing"), "{error}");
        assert!(error.contains("`mix deps.get`"), "{error}");
        assert!(
            error.lines().count() == 1,
            "one line, not a wall of text: {error}"
        );
    }
    let hex = call_err(&client, "test", json!({"project_path": "mix-missing-hex"})).await;
    assert!(hex.contains("mix local.hex"), "{hex}");

    let cases = [
        (
            "compile",
            json!({"project_path": "mix-clean", "features": ["x"]}),
            "`features` applies to cargo projects only",
        ),
        (
            "test",
            json!({"project_path": "mix-clean", "filter": "adds"}),
            "needs `exact: true`",
        ),
        (
            "test",
            json!({"project_path": "cargo-clean", "tags": ["slow"]}),
            "`tags` applies to mix projects only",
        ),
        (
            "test",
            json!({"project_path": "mix-umbrella", "package": "nope"}),
            "not an app of the umbrella",
        ),
        (
            "test",
            json!({"project_path": "mix-umbrella", "package": "../mix-clean"}),
            "not an app of the umbrella",
        ),
        (
            "run",
            json!({"project_path": "mix-clean", "bin": "x"}),
            "`bin` applies to cargo projects only",
        ),
    ];
    for (tool, args, expected) in cases {
        let error = call_err(&client, tool, args.clone()).await;
        assert!(error.contains(expected), "{tool} {args}: {error}");
    }
    client.cancel().await.ok();
}

/// Elixir files outside the allowed roots that write `MARKER` when they are run, required,
/// compiled, loaded as config or run as tests: if drydock ever loads one, the marker says so.
fn outside_elixir() -> Outside {
    let outside = Outside::new("evil");
    let write_marker = format!(
        "File.write!({:?}, \"pwned\")\n",
        outside.marker().display().to_string()
    );
    let files = [
        ("evil.exs", write_marker.clone()),
        ("evil.ex", write_marker.clone()),
        ("config.exs", format!("import Config\n{write_marker}")),
        (
            "evil_test.exs",
            format!(
                "{write_marker}defmodule EvilTest do\n  use ExUnit.Case\n  test \"x\", do: :ok\nend\n"
            ),
        ),
    ];
    for (name, text) in files {
        std::fs::write(outside.root.join(name), text).unwrap();
    }
    outside
}

/// Issue 14, for mix: a script, `-r`, `--config` or `xref trace` naming a file outside the
/// project is refused; options a task does not list are refused; nothing runs.
#[tokio::test]
async fn mix_tasks_cannot_load_files_outside_the_project() {
    let _turn = mix_projects_turn().await;
    let outside = outside_elixir();
    let (evil, config, evil_ex) = (
        outside.file("evil.exs"),
        outside.file("config.exs"),
        outside.file("evil.ex"),
    );
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let attacks = [
        ("run", json!([evil]), "outside the project"),
        ("run", json!(["--", evil, "a"]), "outside the project"),
        (
            "run",
            json!(["-r", evil, "-e", "IO.puts 1"]),
            "outside the project",
        ),
        (
            "run",
            json!([format!("--require={evil}")]),
            "outside the project",
        ),
        (
            "run",
            json!(["--parallel-require", evil]),
            "outside the project",
        ),
        ("run", json!(["-c", config]), "outside the project"),
        (
            "run",
            json!([format!("--config={config}")]),
            "outside the project",
        ),
        (
            "run",
            json!(["-r", "../mix-failing/lib/mix_failing.ex"]),
            "contains `..`",
        ),
        (
            "run",
            json!(["-e", "IO.puts 1", "--erl-config", outside.file("x.config")]),
            "`--erl-config` is not accepted by `mix run`",
        ),
        ("xref", json!(["trace", evil_ex]), "outside the project"),
        (
            "deps.tree",
            json!(["--format", "svg"]),
            "must be one of pretty, plain, dot",
        ),
        ("help", json!(["--search", "-x"]), "needs a value"),
    ];
    for (task, args, expected) in attacks {
        let error = call_err(
            &client,
            "run",
            json!({"project_path": "mix-clean", "task": task, "args": args}),
        )
        .await;
        assert!(error.contains(expected), "{task} {args}: {error}");
    }
    assert!(!outside.marker().exists(), "an outside file was loaded");

    let argv = call_ok(
        &client,
        "run",
        json!({"project_path": "mix-clean", "args": ["-e", "IO.inspect(System.argv())", "--", "a", "--b"]}),
    )
    .await;
    assert_eq!(argv["stdout"], "[\"a\", \"--b\"]\n", "{argv}");
    client.cancel().await.ok();
}

/// Issue 14, for `mix test`: `path` is a file inside the project, after `--`; tags are tags.
#[tokio::test]
async fn mix_test_values_stay_inside_the_project_and_are_never_options() {
    let _turn = mix_projects_turn().await;
    let outside = outside_elixir();
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let cases = [
        (
            json!({"path": outside.file("evil_test.exs")}),
            "outside the project",
        ),
        (json!({"path": "--cover"}), "starts with `-`"),
        (
            json!({"path": "test/../../mix-failing/test"}),
            "contains `..`",
        ),
        (json!({"path": "test/missing_test.exs:3"}), "does not exist"),
        (json!({"tags": ["--cover"]}), "starts with `-`"),
        (
            json!({"exclude": ["--export-coverage=x"]}),
            "starts with `-`",
        ),
    ];
    for (mut args, expected) in cases {
        args["project_path"] = json!("mix-clean");
        let error = call_err(&client, "test", args.clone()).await;
        assert!(error.contains(expected), "{args}: {error}");
    }
    assert!(!outside.marker().exists(), "an outside test file was run");
    client.cancel().await.ok();
}

/// `test` or `run` on mix-errors: build_failed at the build stage, with its error and the
/// warnings the same build printed.
fn assert_mix_errors_not_built(report: &Value) {
    assert_eq!(
        (&report["status"], &report["stage"]),
        (&json!("build_failed"), &json!("build")),
        "{report}"
    );
    assert_eq!(located(&report["errors"]), set(&[MIX_ERRORS_ERROR]));
    assert_eq!(located(&report["warnings"]), mix_errors_warnings());
}
