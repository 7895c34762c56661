//! Every cargo tool through the real server and a real MCP client, in both protocol eras,
//! on the projects in test-projects/ whose outcomes are known exactly.

use std::collections::BTreeSet;

use crate::support::*;
use serde_json::{Value, json};

/// file:line:column code message, for comparing diagnostics as a set.
fn located(diagnostics: &Value) -> BTreeSet<String> {
    diagnostics
        .as_array()
        .expect("a list of diagnostics")
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{} {} {}",
                d["file"].as_str().unwrap_or("?"),
                d["line"],
                d["column"],
                d["code"].as_str().unwrap_or("-"),
                d["message"].as_str().unwrap()
            )
        })
        .collect()
}

const ERRORS: [&str; 3] = [
    "src/parser/mod.rs:6:19 E0425 cannot find value `missing_value` in this scope",
    "src/shapes.rs:7:12 E0599 no method named `perimeter` found for reference `&Square` in the current scope",
    "src/lib.rs:11:5 E0308 mismatched types",
];
const WARNINGS: [&str; 2] = [
    "src/lib.rs:3:5 unused_imports unused import: `std::collections::HashMap`",
    "src/parser/tokens.rs:2:9 unused_variables unused variable: `separator`",
];

async fn assert_compile_errors(client: &Client, tool: &str) {
    let report = call_ok(client, tool, json!({"project_path": "cargo-errors"})).await;
    assert_eq!(report["status"], "failed", "{report}");
    assert_eq!(located(&report["errors"]), set(&ERRORS), "{tool}");
    assert_eq!(located(&report["warnings"]), set(&WARNINGS), "{tool}");
    let mismatched = report["errors"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["code"] == "E0308")
        .unwrap();
    assert_eq!(mismatched["label"], "expected `i32`, found `&str`");
    assert_eq!(mismatched["severity"], "error");
    assert_eq!(mismatched["end_line"], 11);
    assert!(
        mismatched.get("rendered").is_none(),
        "rendered only on request"
    );
    assert!(report["duration_ms"].is_u64());
}

#[tokio::test]
async fn compile_and_type_check_report_exact_diagnostics_in_both_eras() {
    let server = Server::start(&[]);
    for era in [Era::Legacy, Era::Modern] {
        let client = client(&era, &server.url).await;
        assert_compile_errors(&client, "compile").await;
        assert_compile_errors(&client, "type_check").await;
        let clean = call_ok(&client, "compile", json!({"project_path": "cargo-clean"})).await;
        assert_eq!(clean["status"], "ok");
        assert_eq!(clean["errors"], json!([]));
        assert_eq!(clean["warnings"], json!([]));
        client.cancel().await.ok();
    }
}

#[tokio::test]
async fn rendered_text_is_there_when_asked_for() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let report = call_ok(
        &client,
        "compile",
        json!({"project_path": "cargo-errors", "include_rendered": true}),
    )
    .await;
    let first = &report["errors"][0];
    let rendered = first["rendered"].as_str().expect("rendered");
    assert!(rendered.contains("-->"), "{rendered}");
    client.cancel().await.ok();
}

#[tokio::test]
async fn paths_with_spaces_and_non_ascii_keep_character_columns() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let project = test_project("odd päths/crate with space");
    let report = call_ok(
        &client,
        "compile",
        json!({"project_path": project.to_str().unwrap()}),
    )
    .await;
    assert_eq!(report["status"], "ok");
    let warning = &report["warnings"][0];
    assert_eq!(warning["file"], "src/módulo con espacio.rs");
    assert_eq!(warning["line"], 4);
    assert_eq!(warning["column"], 45);
    assert_eq!(warning["end_column"], 52);
    assert_eq!(warning["code"], "unused_variables");
    assert_eq!(warning["message"], "unused variable: `sin_uso`");
    client.cancel().await.ok();
}

#[tokio::test]
async fn test_reports_counts_and_every_failure() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let report = call_ok(&client, "test", json!({"project_path": "cargo-failing"})).await;
    assert_eq!(report["status"], "failed", "{report}");
    assert_eq!(
        (
            &report["passed"],
            &report["failed"],
            &report["ignored"],
            &report["filtered_out"]
        ),
        (&json!(4), &json!(9), &json!(1), &json!(0))
    );
    let numbers = failure(&report, "tests::compares_numbers");
    assert_eq!(numbers["file"], "src/lib.rs");
    assert_eq!(numbers["line"], 59);
    assert_eq!(numbers["message"], "assertion `left == right` failed");
    assert_eq!(numbers["left"], "5000");
    assert_eq!(numbers["right"], "500");
    let with_message = failure(&report, "tests::compares_with_message");
    assert_eq!(
        with_message["message"],
        "assertion `left == right` failed: halving 9 should round up"
    );
    let panic = failure(&report, "tests::panics_with_message");
    assert_eq!(panic["message"], "something went wrong: code 7");
    assert_eq!(panic["line"], 74);
    let printed = failure(&report, "tests::prints_then_fails");
    assert_eq!(
        printed["stdout"],
        "first line of output\nsecond line of output"
    );
    let no_panic = failure(&report, "tests::should_panic_but_does_not");
    assert_eq!(no_panic["message"], "test did not panic as expected");
    let integration = failure(&report, "integration_fails");
    assert_eq!(integration["file"], "tests/integration.rs");
    assert_eq!(integration["line"], 10);
    let doc = failure(&report, "src/lib.rs - halve (line 14)");
    assert_eq!((&doc["left"], &doc["right"]), (&json!("5"), &json!("4")));
    let points = failure(&report, "tests::compares_points");
    assert!(points["left"].as_str().unwrap().contains("y: 2"));
    assert_eq!(report["failures"].as_array().unwrap().len(), 9);
    client.cancel().await.ok();
}

#[tokio::test]
async fn test_filters_include_ignored_and_counts_every_binary() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let clean = call_ok(&client, "test", json!({"project_path": "cargo-clean"})).await;
    assert_eq!(clean["status"], "passed", "{clean}");
    assert_eq!(
        (&clean["passed"], &clean["failed"], &clean["ignored"]),
        (&json!(7), &json!(0), &json!(1))
    );
    assert_eq!(clean["failures"], json!([]));

    let filtered = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-failing", "filter": "compares_numbers"}),
    )
    .await;
    assert_eq!(filtered["failed"], 1);
    assert_eq!(filtered["passed"], 0);
    assert!(filtered["filtered_out"].as_u64().unwrap() > 0);

    let with_ignored = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-clean", "include_ignored": true}),
    )
    .await;
    assert_eq!(
        (&with_ignored["passed"], &with_ignored["ignored"]),
        (&json!(8), &json!(0))
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn tests_that_do_not_compile_come_back_as_diagnostics() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let report = call_ok(&client, "test", json!({"project_path": "cargo-errors"})).await;
    assert_eq!(report["status"], "build_failed", "{report}");
    assert_eq!(report["stage"], "build");
    assert_eq!(located(&report["errors"]), set(&ERRORS));
    assert_eq!(located(&report["warnings"]), set(&WARNINGS));
    assert_eq!(report["passed"], 0);
    client.cancel().await.ok();
}

const BROKEN_BIN_ERRORS: [&str; 1] = ["src/main.rs:7:22 E0308 mismatched types"];
const BROKEN_BIN_WARNINGS: [&str; 2] = [
    "build.rs:1:4 dead_code function `unused_helper` is never used",
    "src/main.rs:2:9 unused_variables unused variable: `unused`",
];

/// Issue 10: `test` dropped the warnings of the build that failed, and `run` called the same
/// failure `error` with nothing saying the program never ran.
#[tokio::test]
async fn test_and_run_of_code_that_does_not_build_say_build_failed_with_every_diagnostic() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let args = json!({"project_path": "cargo-broken-bin"});
    let compiled = call_ok(&client, "compile", args.clone()).await;
    let tested = call_ok(&client, "test", args.clone()).await;
    let ran = call_ok(&client, "run", args).await;
    for report in [&compiled, &tested, &ran] {
        assert_eq!(
            located(&report["errors"]),
            set(&BROKEN_BIN_ERRORS),
            "{report}"
        );
        assert_eq!(
            located(&report["warnings"]),
            set(&BROKEN_BIN_WARNINGS),
            "{report}"
        );
        assert_eq!(
            (&report["omitted_errors"], &report["omitted_warnings"]),
            (&json!(0), &json!(0))
        );
    }
    for report in [&tested, &ran] {
        assert_eq!(
            (&report["status"], &report["stage"]),
            (&json!("build_failed"), &json!("build")),
            "{report}"
        );
    }
    assert!(ran.get("exit_code").is_none(), "{ran}");
    assert_eq!((&ran["stdout"], &ran["stderr"]), (&json!(""), &json!("")));

    let exited = call_ok(
        &client,
        "run",
        json!({"project_path": "cargo-clean", "args": ["--exit", "3"]}),
    )
    .await;
    assert_eq!(
        (&exited["status"], &exited["stage"], &exited["exit_code"]),
        (&json!("error"), &json!("run"), &json!(3))
    );
    client.cancel().await.ok();
}

/// A filter that selects nothing ran nothing: cargo exits 0, drydock does not say passed.
#[tokio::test]
async fn a_test_run_that_ran_no_test_is_not_a_pass() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let unmatched = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-clean", "filter": "no_test_has_this_name"}),
    )
    .await;
    assert_eq!(
        (
            &unmatched["status"],
            &unmatched["stage"],
            &unmatched["passed"],
            &unmatched["failed"]
        ),
        (
            &json!("no_tests_matched"),
            &json!("test"),
            &json!(0),
            &json!(0)
        ),
        "{unmatched}"
    );
    let reason = unmatched["reason"].as_str().expect("a reason");
    assert!(
        reason.contains("`no_test_has_this_name`") && reason.contains("filtered out"),
        "{reason}"
    );

    let only_ignored = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-clean", "filter": "slow_test"}),
    )
    .await;
    assert_eq!(only_ignored["status"], "no_tests_matched", "{only_ignored}");
    assert!(
        only_ignored["reason"]
            .as_str()
            .unwrap()
            .contains("include_ignored"),
        "{only_ignored}"
    );

    let project = test_project("odd päths/crate with space");
    let no_tests = call_ok(
        &client,
        "test",
        json!({"project_path": project.to_str().unwrap()}),
    )
    .await;
    assert_eq!(
        (&no_tests["status"], &no_tests["reason"]),
        (&json!("no_tests"), &json!("the project has no tests")),
        "{no_tests}"
    );
    client.cancel().await.ok();
}

/// A binary crate with one type error and `warnings` unused variables.
fn many_warnings_crate(dir: &std::path::Path, warnings: usize) {
    let root = dir.join("noisy");
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"noisy\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    let unused: String = (0..warnings)
        .map(|n| format!("    let unused_{n} = {n};\n"))
        .collect();
    let main = format!(
        "fn noisy() {{\n{unused}}}\n\nfn main() {{\n    noisy();\n    let broken: i32 = \"text\";\n}}\n"
    );
    std::fs::write(root.join("src/main.rs"), main).unwrap();
}

/// Issue 10: cargo kept the first 50 diagnostics and said nothing of the rest.
#[tokio::test]
async fn diagnostics_beyond_fifty_are_counted_by_every_tool() {
    let dir = tempfile::tempdir().unwrap();
    many_warnings_crate(dir.path(), 62);
    let server = Server::start_in(dir.path());
    let client = legacy_client(&server.url).await;
    for tool in ["compile", "type_check", "test", "run"] {
        let report = call_ok(&client, tool, json!({"project_path": "noisy"})).await;
        assert_diagnostics_capped(tool, &report, 12);
    }
    let text = text_of(&call(&client, "compile", json!({"project_path": "noisy"})).await);
    assert!(text.contains("1 error(s), 62 warning(s)"), "{text}");
    assert!(
        text.contains("... and 12 more warnings not shown"),
        "{text}"
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn a_hanging_test_times_out_and_is_named() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    // Build first, so the timeout below is spent in the test, not in the compiler.
    call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-failing", "filter": "no_test_has_this_name"}),
    )
    .await;
    let report = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-failing", "filter": "hangs_forever", "include_ignored": true, "timeout_ms": 20000}),
    )
    .await;
    assert_eq!(report["status"], "timeout", "{report}");
    assert_eq!(report["unfinished"], json!(["tests::hangs_forever"]));
    server.assert_no_descendants_within(
        std::time::Duration::from_secs(10),
        "the test binary was left running",
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn lint_format_and_project_info_on_a_workspace() {
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    let lint = call_ok(&client, "lint", json!({"project_path": "cargo-workspace"})).await;
    assert_eq!(lint["status"], "ok", "{lint}");
    assert_eq!(
        located(&lint["warnings"]),
        set(&["crates/core/src/lib.rs:7:5 clippy::needless_return unneeded `return` statement"])
    );
    let suggestions = lint["warnings"][0]["suggestions"].as_array().unwrap();
    assert_eq!(suggestions[0]["replacement"], "n * 2");
    let member = call_ok(
        &client,
        "lint",
        json!({"project_path": "cargo-workspace/crates/core"}),
    )
    .await;
    assert_eq!(member["warnings"][0]["file"], "src/lib.rs");

    let format = call_ok(
        &client,
        "format",
        json!({"project_path": "cargo-workspace"}),
    )
    .await;
    assert_eq!(format["status"], "needs_formatting", "{format}");
    assert_eq!(format["files"].as_array().unwrap().len(), 1);
    assert_eq!(format["files"][0]["file"], "crates/core/src/shapes.rs");
    assert_eq!(format["files"][0]["hunks"], 2);
    assert!(format["files"][0]["diff"].as_str().unwrap().contains("@@"));

    let info = call_ok(
        &client,
        "project_info",
        json!({"project_path": "cargo-workspace"}),
    )
    .await;
    let packages: BTreeSet<&str> = info["packages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(packages, BTreeSet::from(["ws-app", "ws-core"]));
    let app = info["packages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "ws-app")
        .unwrap();
    assert_eq!(app["dependencies"][0]["name"], "ws-core");
    assert_eq!(app["dependencies"][0]["source"], "path");
    assert_eq!(app["dependencies"][0]["resolved"], "0.1.0");
    assert!(
        info["toolchain_versions"]["rustc"]
            .as_str()
            .unwrap()
            .starts_with("rustc 1.")
    );
    assert!(
        info["toolchain_versions"]["cargo"]
            .as_str()
            .unwrap()
            .starts_with("cargo 1.")
    );
    client.cancel().await.ok();
}

#[tokio::test]
async fn format_apply_rewrites_the_files_and_then_there_is_nothing_left() {
    let (dir, copy) = copy_project("cargo-workspace");
    let server = Server::start_in(dir.path());
    let client = modern_client(&server.url).await;
    let path = copy.to_str().unwrap();
    let before = std::fs::read_to_string(copy.join("crates/core/src/shapes.rs")).unwrap();
    let applied = call_ok(
        &client,
        "format",
        json!({"project_path": path, "apply": true}),
    )
    .await;
    assert_eq!(applied["status"], "applied", "{applied}");
    assert_eq!(applied["files"][0]["file"], "crates/core/src/shapes.rs");
    let after = std::fs::read_to_string(copy.join("crates/core/src/shapes.rs")).unwrap();
    assert_ne!(before, after);
    let check = call_ok(&client, "format", json!({"project_path": path})).await;
    assert_eq!(check["status"], "formatted");
    assert_eq!(check["files"], json!([]));
    client.cancel().await.ok();
}

#[tokio::test]
async fn project_info_describes_a_package() {
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let info = call_ok(
        &client,
        "project_info",
        json!({"project_path": "cargo-clean"}),
    )
    .await;
    assert_eq!(info["name"], "cargo-clean");
    assert_eq!(info["version"], "0.1.0");
    assert_eq!(info["edition"], "2024");
    assert_eq!(
        info["workspace_root"],
        test_project("cargo-clean").to_str().unwrap()
    );
    let targets: BTreeSet<String> = info["packages"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} {} {}",
                t["kind"].as_str().unwrap(),
                t["name"].as_str().unwrap(),
                t["path"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        targets.contains("lib cargo_clean src/lib.rs"),
        "{targets:?}"
    );
    assert!(
        targets.contains("bin cargo-clean src/main.rs"),
        "{targets:?}"
    );
    assert!(targets.contains("test api tests/api.rs"), "{targets:?}");
    assert_eq!(info["test_files"], json!(["src/lib.rs", "tests/api.rs"]));
    client.cancel().await.ok();
}

#[tokio::test]
async fn progress_is_reported_while_tests_run() {
    let server = Server::start(&[]);
    let (client, recorder) = progress_client(&server.url).await;
    let result = call_with_progress(
        &client,
        "test",
        json!({"project_path": "cargo-clean"}),
        "t1",
    )
    .await;
    assert_eq!(result.structured_content.unwrap()["status"], "passed");
    let messages = recorder.snapshot();
    assert!(messages[0].starts_with("cargo test"), "{messages:?}");
    let binaries = messages
        .iter()
        .filter(|m| m.starts_with("test binary done"))
        .count();
    assert_eq!(binaries, 4, "{messages:?}");
    assert!(messages.last().unwrap().starts_with("done"), "{messages:?}");
    client.cancel().await.ok();
}

#[test]
fn drydock_call_runs_a_tool_from_the_shell() {
    let output = drydock_call("compile", r#"{"project_path": "cargo-errors"}"#)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["status"], "failed");
    assert_eq!(located(&report["errors"]), set(&ERRORS));

    let text = drydock_call("compile", r#"{"project_path": "cargo-errors"}"#)
        .arg("--text")
        .output()
        .unwrap();
    let rendered = String::from_utf8(text.stdout).unwrap();
    assert!(
        rendered.starts_with("failed: 3 error(s), 2 warning(s)"),
        "{rendered}"
    );
    assert!(
        rendered.contains("src/lib.rs:11:5: error[E0308]: mismatched types"),
        "{rendered}"
    );

    let outside = drydock_call("compile", r#"{"project_path": "/"}"#)
        .output()
        .unwrap();
    assert_eq!(outside.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&outside.stderr).contains("outside the allowed roots"));

    let unknown = drydock_command()
        .args(["call", "nope", "{}"])
        .output()
        .unwrap();
    assert_eq!(unknown.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&unknown.stderr).contains("unknown tool `nope`"));
}

#[tokio::test]
async fn a_failure_without_diagnostics_still_says_why() {
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken");
    std::fs::create_dir_all(broken.join("src")).unwrap();
    std::fs::write(
        broken.join("Cargo.toml"),
        "[package]\nname = \"broken\"\nversion = \n",
    )
    .unwrap();
    std::fs::write(broken.join("src/lib.rs"), "").unwrap();
    let server = Server::start_in(dir.path());
    let client = legacy_client(&server.url).await;
    let report = call_ok(&client, "compile", json!({"project_path": "broken"})).await;
    assert_eq!(report["status"], "failed");
    assert_eq!(report["errors"], json!([]));
    let output = report["output"]
        .as_str()
        .expect("output explains the failure");
    assert!(output.contains("Cargo.toml"), "{output}");
    let info = call_err(&client, "project_info", json!({"project_path": "broken"})).await;
    assert!(info.contains("cargo metadata failed"), "{info}");
    client.cancel().await.ok();
}

/// A cargo project outside the allowed roots whose build script writes `MARKER` next to its
/// manifest: if drydock ever builds it, the marker says so.
fn outside_crate() -> Outside {
    let outside = Outside::new("evil");
    let root = &outside.root;
    std::fs::create_dir_all(root.join("src")).unwrap();
    std::fs::write(
        root.join("Cargo.toml"),
        "[package]\nname = \"evil\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("build.rs"),
        "fn main() {\n    let dir = std::env::var(\"CARGO_MANIFEST_DIR\").unwrap();\n    \
         std::fs::write(format!(\"{dir}/MARKER\"), \"pwned\").unwrap();\n}\n",
    )
    .unwrap();
    std::fs::write(root.join("src/lib.rs"), "pub fn evil() {}\n").unwrap();
    outside
}

/// Issue 14: `run {task: "doc", args: ["--manifest-path", OUTSIDE]}` built a project outside
/// the roots and ran its build script; `metadata` read it.
#[tokio::test]
async fn task_arguments_cannot_pick_another_manifest_config_target_or_toolchain() {
    let outside = outside_crate();
    let manifest = outside.file("Cargo.toml");
    let target_dir = outside.root.join("target").display().to_string();
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let attacks = [
        ("doc", json!(["--manifest-path", manifest])),
        ("doc", json!([format!("--manifest-path={manifest}")])),
        (
            "metadata",
            json!(["--manifest-path", manifest, "--no-deps"]),
        ),
        ("metadata", json!([format!("--manifest-path={manifest}")])),
        ("tree", json!(["--manifest-path", manifest])),
        (
            "bench",
            json!([format!("--manifest-path={manifest}"), "--no-run"]),
        ),
        (
            "doc",
            json!(["--config", format!("build.target-dir=\"{target_dir}\"")]),
        ),
        ("doc", json!([format!("--target-dir={target_dir}")])),
        (
            "doc",
            json!(["-Zunstable-options", "--artifact-dir", target_dir]),
        ),
        ("doc", json!(["+nightly"])),
        ("doc", json!(["--open"])),
        ("doc", json!(["--package=--manifest-path=x"])),
        ("version", json!(["--config", "x"])),
    ];
    for (task, args) in attacks {
        let first = args[0].as_str().unwrap();
        let flag = first.split('=').next().unwrap();
        let error = call_err(
            &client,
            "run",
            json!({"project_path": "cargo-clean", "task": task, "args": args}),
        )
        .await;
        assert!(
            error.contains(&format!("`{flag}")) && error.contains(&format!("`cargo {task}`")),
            "{task} {args}: {error}"
        );
    }
    assert!(
        !outside.marker().exists(),
        "the outside project's build script ran"
    );

    let tree = call_ok(
        &client,
        "run",
        json!({"project_path": "cargo-clean", "task": "tree", "args": ["--depth", "0", "-e", "normal"]}),
    )
    .await;
    assert_eq!(tree["status"], "ok", "{tree}");
    assert!(
        tree["stdout"]
            .as_str()
            .unwrap()
            .starts_with("cargo-clean v0.1.0"),
        "{tree}"
    );
    let metadata = call_ok(
        &client,
        "run",
        json!({"project_path": "cargo-clean", "task": "metadata", "args": ["--format-version", "1", "--no-deps"]}),
    )
    .await;
    let packages: Value = serde_json::from_str(metadata["stdout"].as_str().unwrap()).unwrap();
    assert_eq!(packages["packages"][0]["name"], "cargo-clean");
    client.cancel().await.ok();
}

/// Issue 14: `test {filter: "--logfile=OUTSIDE/pwned"}` made libtest write a file outside the
/// roots. A filter is passed after `--`: whatever it looks like, it only selects tests.
#[tokio::test]
async fn a_test_filter_is_never_read_as_a_libtest_option() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("pwned");
    let server = Server::start(&[]);
    let client = legacy_client(&server.url).await;
    for exact in [false, true] {
        let report = call_ok(
            &client,
            "test",
            json!({"project_path": "cargo-clean", "filter": format!("--logfile={}", log.display()), "exact": exact}),
        )
        .await;
        // The filter selected nothing (issue 10: a run that ran no test is not a pass).
        assert_eq!(
            (&report["status"], &report["passed"], &report["failed"]),
            (&json!("no_tests_matched"), &json!(0), &json!(0)),
            "{report}"
        );
        assert!(!log.exists(), "libtest wrote {}", log.display());
    }
    // Only the two doc tests (`src/lib.rs - add (line 5)`, `src/lib.rs - greet (line 14)`)
    // have a `-` in their names: a filter that starts with `-` still selects tests.
    let dashed = call_ok(
        &client,
        "test",
        json!({"project_path": "cargo-clean", "filter": "-"}),
    )
    .await;
    assert_eq!(
        (
            &dashed["status"],
            &dashed["passed"],
            &dashed["filtered_out"]
        ),
        (&json!("passed"), &json!(2), &json!(6)),
        "{dashed}"
    );
    client.cancel().await.ok();
}

/// `package`, `features` and `bin` reach cargo's argv as `--flag=value`, and a value that
/// starts with `-` is refused before anything runs.
#[tokio::test]
async fn selection_values_that_look_like_options_are_refused() {
    let outside = outside_crate();
    let option = format!("--manifest-path={}", outside.file("Cargo.toml"));
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let cases = [
        (
            "compile",
            json!({"project_path": "cargo-clean", "package": option}),
        ),
        (
            "type_check",
            json!({"project_path": "cargo-clean", "features": [option]}),
        ),
        (
            "lint",
            json!({"project_path": "cargo-clean", "features": ["ok", "-Zx"]}),
        ),
        (
            "test",
            json!({"project_path": "cargo-clean", "package": option}),
        ),
        (
            "test",
            json!({"project_path": "cargo-clean", "features": [option]}),
        ),
        ("run", json!({"project_path": "cargo-clean", "bin": option})),
        (
            "run",
            json!({"project_path": "cargo-clean", "package": option}),
        ),
        (
            "format",
            json!({"project_path": "cargo-clean", "package": option}),
        ),
    ];
    for (tool, args) in cases {
        let error = call_err(&client, tool, args.clone()).await;
        assert!(
            error.contains("starts with `-`, so it would be read as an option"),
            "{tool} {args}: {error}"
        );
    }
    assert!(!outside.marker().exists());
    let member = call_ok(
        &client,
        "compile",
        json!({"project_path": "cargo-workspace", "package": "ws-core"}),
    )
    .await;
    assert_eq!(member["status"], "ok", "{member}");
    client.cancel().await.ok();
}
