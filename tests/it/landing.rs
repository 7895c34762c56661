//! Only green lands, on the real Claude Code against the scripted fake: four results from
//! the same base, each green or red on its own, land by themselves (`[tasks] land =
//! "when_green"`) in the order they were done. A renames `one()` to `uno()` and lands; B's
//! new test still calls `one()`, so the merged tree does not compile and B goes back to its
//! agent naming E0425, then lands once its next attempt compiles; C lands; D's own test
//! fails, so D goes back naming its test, then lands. Every commit on the branch passes
//! `cargo test`, and the person's checkout stays clean.

use std::path::Path;
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use crate::chromium::Chromium;
use crate::mcp_spawn::{spawning_server, spawning_server_with};
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::{git, lab_crate};

const WITHIN: Duration = Duration::from_secs(600);

const LIB: &str =
    "pub fn one() -> u32 {\n    1\n}\n\n#[test]\nfn one_is_one() {\n    assert_eq!(one(), 1);\n}\n";

/// A task whose agent runs `run` in its worktree, or `fix` when its prompt says an earlier
/// attempt did not land; then says it is done.
pub fn task(title: &str, project: &Value, run: &str, fix: Option<&str>) -> Value {
    let encode = |c: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(c);
    let fix = fix
        .map(|f| format!(" lab:fix={}", encode(f)))
        .unwrap_or_default();
    json!({"title": title, "project_path": project, "auto_approve": "trusted",
           "description": format!("Change the crate lab:run={}{fix} lab:complete=done", encode(run))})
}

async fn landing_of(client: &Client, id: &str) -> Value {
    call_ok(client, "task_show", json!({"task_id": id})).await["task"].clone()
}

/// task_show's task until its result landed.
async fn until_landed(client: &Client, id: &str) -> Value {
    until_read(
        WITHIN,
        || landing_of(client, id),
        |task| task["landing"]["state"]["state"] == "landed",
    )
    .await
    .unwrap_or_else(|task| {
        panic!(
            "task {id} never landed ({}): {task:#}",
            landing_story(&task)
        )
    })
}

/// A task's state, attempts and why each attempt went back, on one line: what a failure
/// report cut to its first lines must still say.
fn landing_story(task: &Value) -> String {
    let sent_back: Vec<String> = task["landing"]["sent_back"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .map(|sent| {
            let failure = &sent["failure"];
            let detail: String = failure["detail"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(300)
                .collect();
            format!(
                "{} (merged tree: {}): {detail}",
                failure["check"], failure["on_merged_tree"]
            )
        })
        .collect();
    format!(
        "{} after {} attempts, landing {}; sent back: {}",
        task["state"],
        task["attempts"],
        task["landing"]["state"],
        sent_back.join(" | ")
    )
}

/// Queues `tasks` and runs them one at a time, so they are done (and land) in order; their
/// ids.
async fn one_at_a_time(client: &Client, tasks: Value) -> Vec<String> {
    let added = call_ok(client, "task_add", json!({ "tasks": tasks })).await;
    call_ok(
        client,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 1}),
    )
    .await;
    added["added"]
        .as_array()
        .unwrap()
        .iter()
        .map(|task| task["id"].as_str().unwrap().to_string())
        .collect()
}

/// The failure of the first attempt of `task` that was sent back, once it is known to be
/// on the merged tree or on its own branch (`on_merged_tree`) and to name `naming`.
fn first_sent_back<'t>(task: &'t Value, on_merged_tree: bool, naming: &str) -> &'t Value {
    let failure = &task["landing"]["sent_back"][0]["failure"];
    assert_eq!(failure["on_merged_tree"], on_merged_tree, "{task:#}");
    let detail = failure["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(naming), "{naming:?} not in {task:#}");
    failure
}

/// A command that adds the integration test `name` with `body`.
fn new_test(name: &str, body: &str) -> String {
    format!(
        "mkdir -p tests && printf '#[test]\\nfn {name}() {{\\n    {body}\\n}}\\n' > tests/{name}.rs"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn only_green_results_land_and_red_ones_go_back_to_their_agents() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing");
    lab_crate(&home.project, LIB, &[]);
    let base = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();
    let config = "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_batch = 1\n\
                  [tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    // One at a time: they are done, and so land, in the order A, B, C, D.
    let ids = one_at_a_time(
        &client,
        json!([
            task(
                "A renames one to uno",
                &project,
                "sed -i 's/one()/uno()/g' src/lib.rs",
                None
            ),
            task(
                "B tests one",
                &project,
                &new_test("b_calls_one", "assert_eq!(lab::one(), 1);"),
                Some("sed -i 's/lab::one()/lab::uno()/' tests/b_calls_one.rs")
            ),
            task(
                "C adds its own test",
                &project,
                &new_test("c_adds", "assert_eq!(2 + 2, 4);"),
                None
            ),
            task(
                "D adds a failing test",
                &project,
                &new_test("d_fails", "assert_eq!(1 + 1, 3);"),
                Some("sed -i 's/assert_eq!(1 + 1, 3)/assert_eq!(1 + 1, 2)/' tests/d_fails.rs")
            ),
        ]),
    )
    .await;
    let (a, b, c, d) = (&ids[0], &ids[1], &ids[2], &ids[3]);

    let a_landed = until_landed(&client, a).await;
    assert_eq!(
        a_landed["landing"]["state"]["how"], "fast_forward",
        "{a_landed:#}"
    );
    assert_eq!(a_landed["landing"].get("sent_back"), None, "{a_landed:#}");

    let c_landed = until_landed(&client, c).await;
    assert_eq!(c_landed["landing"].get("sent_back"), None, "{c_landed:#}");
    assert_eq!(c_landed["attempts"], 1);

    let b_landed = until_landed(&client, b).await;
    let sent = &b_landed["landing"]["sent_back"];
    assert_eq!(sent.as_array().map(Vec::len), Some(1), "{b_landed:#}");
    let failure = first_sent_back(&b_landed, true, "E0425");
    assert_eq!(failure["kind"], "red", "{b_landed:#}");
    assert_eq!(b_landed["attempts"], 2);
    assert_eq!(b_landed["landing"]["state"]["how"], "merge_commit");

    let d_landed = until_landed(&client, d).await;
    let failure = first_sent_back(&d_landed, false, "d_fails");
    assert_eq!(failure["check"], "test");

    // task_show says where each result went and why an attempt was sent back.
    let shown = call_ok(&client, "task_show", json!({"task_id": b})).await;
    let text = shown.to_string();
    assert!(text.contains("sent_back"), "{shown:#}");
    let listed = call_ok(&client, "task_list", json!({})).await;
    let line = listed["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == *b)
        .unwrap()["landing"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(line.starts_with("landed on main at "), "{line}");

    // The person's checkout followed, clean, and every commit on main passes cargo test.
    assert_eq!(git(&home.project, &["status", "--porcelain"]), "");
    let tip = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();
    assert_eq!(git(&home.project, &["rev-parse", "HEAD"]).trim(), tip);
    let commits = git(
        &home.project,
        &["rev-list", "--first-parent", &format!("{base}..main")],
    );
    let commits: Vec<&str> = commits.lines().collect();
    assert_eq!(
        commits.len(),
        4,
        "A fast-forwarded, three merges: {commits:?}"
    );
    every_commit_passes(&home.project, &base, &commits);
    let lib = std::fs::read_to_string(home.project.join("src/lib.rs")).unwrap();
    assert!(lib.contains("pub fn uno()"), "{lib}");
    for test in ["b_calls_one", "c_adds", "d_fails"] {
        assert!(
            home.project.join(format!("tests/{test}.rs")).is_file(),
            "{test}"
        );
    }
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}

/// A red result whose agent cannot be started again (its CLI gone from this host) is not
/// sent back into a failure: it waits for a person, saying why, and its branch and change
/// are kept. The task ran with results landed by hand; drydock then restarts with the queue
/// on and no Claude Code.
#[tokio::test(flavor = "multi_thread")]
async fn a_red_result_whose_agent_is_gone_waits_for_a_person_with_its_change_kept() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing-gone");
    lab_crate(&home.project, LIB, &[]);
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap().to_string();
    let by_hand = "[tasks]\ngrace_s = 1\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server_with(
        &home,
        &cli,
        tmux_dir.path(),
        by_hand,
        &["--data-dir", &data_arg],
    );
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let fails = "mkdir -p tests && printf '#[test]\\nfn g_fails() {\\n    assert_eq!(1, 2);\\n}\\n' > tests/g_fails.rs";
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [task("G adds a failing test", &project, fails, Some("true"))]}),
    )
    .await;
    let g = added["added"][0]["id"].as_str().unwrap().to_string();
    call_ok(&client, "task_start", json!({"task_id": g})).await;
    let done = until_task(&client, &g, "G done and checked", |t| {
        t["state"] == "done" && t["review"]["checks"]["state"] == "done"
    })
    .await;
    let head = done["review"]["head"].as_str().unwrap().to_string();
    let branch = done["isolation"]["branch"].as_str().unwrap().to_string();
    assert!(done["landing"].is_null(), "landed by hand: {done:#}");
    drop(client);
    drop(server);

    let gone = "[tasks]\ngrace_s = 1\nland = \"when_green\"\n\
                [agents.commands]\nclaude = \"/nonexistent/claude\"\n";
    let server = spawning_server_with(
        &home,
        &cli,
        tmux_dir.path(),
        gone,
        &["--data-dir", &data_arg],
    );
    let client = modern_client(&server.url).await;
    let waits = until_task(&client, &g, "G waits for a person", |t| {
        landing_state(t) == "waits_for_person"
    })
    .await;
    let why = waits["attention"].as_str().unwrap();
    assert!(
        why.contains("test on its own branch")
            && why.contains("its agent cannot be started again")
            && why.contains("/nonexistent/claude"),
        "{waits:#}"
    );
    assert_eq!(waits["state"], "done", "{waits:#}");
    assert_eq!(waits["attempts"], 1);
    let failure = first_sent_back(&waits, false, "g_fails");
    assert_eq!(failure["check"], "test", "{waits:#}");
    assert_eq!(
        git(&home.project, &["rev-parse", &branch]).trim(),
        head,
        "its branch is kept"
    );
    let worktree = Path::new(waits["isolation"]["path"].as_str().unwrap());
    assert!(
        worktree.join("tests/g_fails.rs").is_file(),
        "its change is kept"
    );
    assert!(
        !home.project.join("tests/g_fails.rs").exists(),
        "nothing landed"
    );
    // A person still decides: one more attempt needs its agent too, and says so.
    let refused = call_err(&client, "task_retry", json!({"task_id": g})).await;
    assert!(refused.contains("/nonexistent/claude"), "{refused}");
    no_agent_left(&home, tmux_dir.path(), "no agent left").await;
}

/// With `[tasks] land_with = "rebase"` results land as a line: P fast-forwards, Q's two
/// commits (one its agent made, one drydock made of what it left) are replayed onto P and
/// tested there, and main has no merge commit.
#[tokio::test(flavor = "multi_thread")]
async fn rebased_results_land_as_a_line_of_their_own_commits() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing-rebase");
    lab_crate(&home.project, LIB, &[]);
    let base = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();
    let config = "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_with = \"rebase\"\n\
                  [tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let commit = "git -c user.name=Agent -c user.email=agent@example.test commit -qm";
    let ids = one_at_a_time(
        &client,
        json!([
            task("P adds p.txt", &project, "echo p > p.txt", None),
            task(
                "Q adds q.txt twice",
                &project,
                &format!(
                    "echo q > q.txt && git add q.txt && {commit} 'q: the first' && echo qq >> q.txt"
                ),
                None
            ),
        ]),
    )
    .await;
    let (p, q) = (&ids[0], &ids[1]);
    let p_landed = until_landed(&client, p).await;
    assert_eq!(
        p_landed["landing"]["state"]["how"], "fast_forward",
        "{p_landed:#}"
    );
    let q_landed = until_landed(&client, q).await;
    assert_eq!(
        q_landed["landing"]["state"]["how"], "rebased",
        "{q_landed:#}"
    );
    let tip = q_landed["landing"]["state"]["commit"].as_str().unwrap();
    assert_eq!(git(&home.project, &["rev-parse", "main"]).trim(), tip);
    // The dashboard shows where each result went.
    let chromium = Chromium::start();
    chromium.open(&format!("{}/", server.base_url())).await;
    let script = format!(
        "const e = document.querySelector('#tasks li[data-task=\"{q}\"] [data-testid=task-landing]'); \
         return e && e.textContent"
    );
    let shown = chromium
        .until_text(&script, "Q's landing on the dashboard")
        .await;
    assert_eq!(shown, format!("landed on main at {}", &tip[..12]));
    let merges = git(
        &home.project,
        &["rev-list", "--merges", &format!("{base}..main")],
    );
    assert_eq!(merges, "", "a line");
    let subjects = git(
        &home.project,
        &["log", "--format=%s", &format!("{base}..main")],
    );
    let subjects: Vec<&str> = subjects.lines().collect();
    assert_eq!(subjects.len(), 3, "{subjects:?}");
    assert_eq!(subjects[1], "q: the first", "{subjects:?}");
    assert_eq!(
        std::fs::read_to_string(home.project.join("q.txt")).unwrap(),
        "q\nqq\n"
    );
    assert!(home.project.join("p.txt").is_file());
    assert_eq!(git(&home.project, &["status", "--porcelain"]), "");
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}

/// Makes `dir` a git repository holding the mix project `lab` (`Lab.one/0` and its test),
/// committed on `main`.
fn lab_mix(dir: &Path) {
    let files = [
        (
            "mix.exs",
            "defmodule Lab.MixProject do\n  use Mix.Project\n\n  def project, do: [app: :lab, version: \"0.1.0\", elixir: \"~> 1.14\"]\nend\n",
        ),
        ("lib/lab.ex", "defmodule Lab do\n  def one, do: 1\nend\n"),
        ("test/test_helper.exs", "ExUnit.start()\n"),
        (
            "test/lab_test.exs",
            "defmodule LabTest do\n  use ExUnit.Case\n\n  test \"one is one\" do\n    assert Lab.one() == 1\n  end\nend\n",
        ),
        (".gitignore", "/_build\n/deps\n"),
    ];
    for (name, text) in files {
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "the lab mix project"]);
}

/// The four results on a mix project: A renames `Lab.one/0` and lands; B's new module
/// imports `Lab.one/0`, so the merged tree does not compile and B goes back naming it, then
/// lands once it imports `uno`; C lands; D's new ExUnit test fails on its own branch, so D
/// goes back naming that test, then lands. Every commit on main passes `mix test`.
#[tokio::test(flavor = "multi_thread")]
async fn on_a_mix_project_only_green_lands_and_a_compile_error_and_a_failing_test_go_back() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing-mix");
    lab_mix(&home.project);
    let base = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();
    let config =
        "[tasks]\ngrace_s = 1\nland = \"when_green\"\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let test_file = |module: &str, file: &str, check: &str| {
        format!(
            "printf 'defmodule {module} do\\n  use ExUnit.Case\\n\\n  test \"{file} holds\" do\\n    assert {check}\\n  end\\nend\\n' > test/{file}.exs"
        )
    };
    let b_module = "printf 'defmodule B do\\n  import Lab, only: [one: 0]\\n  def b, do: one()\\nend\\n' > lib/b.ex";
    let ids = one_at_a_time(
        &client,
        json!([
            task("A renames one to uno", &project,
                 "sed -i 's/def one/def uno/' lib/lab.ex && sed -i 's/Lab.one()/Lab.uno()/' test/lab_test.exs", None),
            task("B imports one", &project, b_module,
                 Some("sed -i 's/one: 0/uno: 0/; s/do: one()/do: uno()/' lib/b.ex")),
            task("C adds its own test", &project, &test_file("CTest", "c_test", "2 + 2 == 4"), None),
            task("D adds a failing test", &project, &test_file("DTest", "d_test", "1 + 1 == 3"),
                 Some("sed -i 's/1 + 1 == 3/1 + 1 == 2/' test/d_test.exs")),
        ]),
    )
    .await;
    let (a, b, c, d) = (&ids[0], &ids[1], &ids[2], &ids[3]);

    let a_landed = until_landed(&client, a).await;
    assert_eq!(a_landed["landing"].get("sent_back"), None, "{a_landed:#}");
    let c_landed = until_landed(&client, c).await;
    assert_eq!(c_landed["attempts"], 1, "{c_landed:#}");
    let b_landed = until_landed(&client, b).await;
    let sent = &b_landed["landing"]["sent_back"];
    assert_eq!(sent.as_array().map(Vec::len), Some(1), "{b_landed:#}");
    first_sent_back(&b_landed, true, "cannot import Lab.one/0");
    assert_eq!(b_landed["attempts"], 2);
    let d_landed = until_landed(&client, d).await;
    let failure = first_sent_back(&d_landed, false, "d_test holds");
    assert_eq!(failure["check"], "test");

    assert_eq!(git(&home.project, &["status", "--porcelain"]), "");
    let commits = git(
        &home.project,
        &["rev-list", "--first-parent", &format!("{base}..main")],
    );
    let checkout = tempfile::tempdir().unwrap();
    let at = checkout.path().join("at");
    git(
        &home.project,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            at.to_str().unwrap(),
            &base,
        ],
    );
    for commit in commits.lines() {
        git(&at, &["checkout", "-q", "--detach", commit]);
        let tested = Command::new("mix")
            .arg("test")
            .env("MIX_ENV", "test")
            .current_dir(&at)
            .output()
            .unwrap();
        assert!(
            tested.status.success(),
            "mix test fails at {commit}: {}{}",
            String::from_utf8_lossy(&tested.stdout),
            String::from_utf8_lossy(&tested.stderr)
        );
    }
    assert!(home.project.join("lib/b.ex").is_file());
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}

/// Checks out each of `commits` of `project` (a crate whose history starts at `base`) and
/// runs `cargo test` there.
fn every_commit_passes(project: &Path, base: &str, commits: &[&str]) {
    let checkout = tempfile::tempdir().unwrap();
    let at = checkout.path().join("at");
    git(
        project,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            at.to_str().unwrap(),
            base,
        ],
    );
    let target = tempfile::tempdir().unwrap();
    for commit in commits {
        git(&at, &["checkout", "-q", "--detach", commit]);
        let tested = Command::new(std::env::var("CARGO").unwrap())
            .args(["test", "--offline", "--quiet"])
            .env("CARGO_TARGET_DIR", target.path())
            .current_dir(&at)
            .output()
            .unwrap();
        assert!(
            tested.status.success(),
            "cargo test fails at {commit}: {}",
            String::from_utf8_lossy(&tested.stderr)
        );
    }
    git(
        project,
        &["worktree", "remove", "--force", at.to_str().unwrap()],
    );
}

/// Results that wait together are tested together (`land_batch`): held untested while the
/// person's checkout is dirty, then E, F, G and H merged onto the new tip at once. G renames
/// `one()` and H's new test calls it, so the batch is red and is split: E and F land under one
/// merge commit, G lands alone, and H goes back to its agent naming E0425, then lands. I's
/// result trips the project's own named check (`[tasks.land_commands]`) and goes back
/// naming it. F's test, which tries to write into the person's checkout, cannot: the checks
/// on its branch and on the merged trees run sandboxed.
#[tokio::test(flavor = "multi_thread")]
async fn waiting_results_are_tested_together_and_a_red_batch_is_split_until_the_culprit_is_alone() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing-batch");
    lab_crate(&home.project, LIB, &[]);
    person_commits(&home.project, "NOTES.md");
    let base = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();
    std::fs::write(home.project.join("NOTES.md"), "a draft\n").unwrap();
    let config = "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_batch = 4\n\
                  land_checks = [\"compile\", \"test\", \"nothing_broken\"]\n\
                  [tasks.land_commands]\nnothing_broken = [\"sh\", \"-c\", \"if [ -e BROKEN ]; then echo BROKEN is there >&2; exit 3; fi\"]\n\
                  [tasks.policies]\ntrusted = [\"Bash\"]\n";
    let server = spawning_server(&home, &cli, tmux_dir.path(), config);
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    // F's test also tries to write into the person's checkout, from its own branch and from
    // the merged tree: both builds run sandboxed, so it cannot.
    let escape = format!(
        "let _ = std::fs::write(\"{}/ESCAPED\", env!(\"CARGO_MANIFEST_DIR\")); assert_eq!(3 + 3, 6);",
        home.project.display()
    );
    let ids = one_at_a_time(
        &client,
        json!([
            task(
                "E adds a test",
                &project,
                &new_test("e_adds", "assert_eq!(2 + 3, 5);"),
                None
            ),
            task(
                "F adds a test",
                &project,
                &new_test("f_adds", &escape),
                None
            ),
            task(
                "G renames one to uno",
                &project,
                "sed -i 's/one()/uno()/g' src/lib.rs",
                None
            ),
            task(
                "H tests one",
                &project,
                &new_test("h_calls_one", "assert_eq!(lab::one(), 1);"),
                Some("sed -i 's/lab::one()/lab::uno()/' tests/h_calls_one.rs")
            ),
            task(
                "I breaks the named check",
                &project,
                "echo oops > BROKEN",
                Some("rm BROKEN")
            ),
        ]),
    )
    .await;
    let (e, f, g, h, i) = (&ids[0], &ids[1], &ids[2], &ids[3], &ids[4]);

    // I's own checks failed on its branch: it goes back at once, dirty checkout or not.
    let i_back = until_task(&client, i, "I sent back", |t| {
        t["landing"]["sent_back"]
            .as_array()
            .is_some_and(|s| !s.is_empty())
    })
    .await;
    let failure = &i_back["landing"]["sent_back"][0]["failure"];
    assert_eq!(failure["check"], "nothing_broken", "{i_back:#}");
    assert_eq!(failure["on_merged_tree"], false);
    assert!(
        failure["detail"]
            .as_str()
            .unwrap()
            .contains("BROKEN is there"),
        "{i_back:#}"
    );
    // The four green ones wait, untested, while the checkout of main is dirty.
    for id in [e, f, g, h] {
        let held = until_task(&client, id, "held", |t| landing_state(t) == "held").await;
        assert!(
            held["attention"]
                .as_str()
                .unwrap()
                .contains("uncommitted changes (NOTES.md)"),
            "{held:#}"
        );
        assert_eq!(held["landing"].get("sent_back"), None, "{held:#}");
    }
    git(&home.project, &["commit", "-qam", "the person's draft"]);
    let tip = git(&home.project, &["rev-parse", "main"])
        .trim()
        .to_string();

    let e_landed = until_landed(&client, e).await;
    let f_landed = until_landed(&client, f).await;
    let together = &e_landed["landing"]["state"];
    assert_eq!(together["how"], "merged_together", "{e_landed:#}");
    assert_eq!(f_landed["landing"]["state"]["commit"], together["commit"]);
    let commit = together["commit"].as_str().unwrap();
    let parents = git(&home.project, &["rev-list", "--parents", "-n1", commit]);
    let parents: Vec<&str> = parents.split_whitespace().skip(1).collect();
    assert_eq!(parents.len(), 3, "the tip, E and F: {parents:?}");
    assert_eq!(parents[0], tip);
    let g_landed = until_landed(&client, g).await;
    assert_eq!(g_landed["landing"].get("sent_back"), None, "{g_landed:#}");
    assert_eq!(g_landed["attempts"], 1);
    let h_landed = until_landed(&client, h).await;
    let sent = &h_landed["landing"]["sent_back"];
    assert_eq!(sent.as_array().map(Vec::len), Some(1), "{h_landed:#}");
    first_sent_back(&h_landed, true, "E0425");
    assert_eq!(h_landed["attempts"], 2);
    let i_landed = until_landed(&client, i).await;
    assert_eq!(i_landed["attempts"], 2, "{i_landed:#}");
    assert!(!home.project.join("BROKEN").exists());

    assert_eq!(git(&home.project, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(home.project.join("NOTES.md")).unwrap(),
        "a draft\n"
    );
    assert!(
        !home.project.join("ESCAPED").exists(),
        "a check wrote into the checkout"
    );
    let commits = git(
        &home.project,
        &["rev-list", "--first-parent", &format!("{base}..main")],
    );
    let commits: Vec<&str> = commits.lines().collect();
    every_commit_passes(&home.project, &base, &commits);
    assert!(
        home.project.join("ESCAPED").exists(),
        "unsandboxed, the same test does write into the checkout"
    );
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}

/// task_show's task until `done(task)` holds (`what` says what is awaited).
async fn until_task(client: &Client, id: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    until_read(WITHIN, || landing_of(client, id), done)
        .await
        .unwrap_or_else(|task| panic!("{what}: {task:#}"))
}

fn landing_state(task: &Value) -> &str {
    task["landing"]["state"]["state"].as_str().unwrap_or("")
}

/// The person commits a file of their own on the branch they have checked out.
fn person_commits(project: &Path, file: &str) -> String {
    std::fs::write(project.join(file), "the person's\n").unwrap();
    git(project, &["add", file]);
    git(project, &["commit", "-qm", file]);
    git(project, &["rev-parse", "HEAD"]).trim().to_string()
}

fn hung_tests() -> Vec<String> {
    let listing = Command::new("ps").args(["-eo", "args"]).output().unwrap();
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter(|l| l.contains("/deps/hangs-"))
        .map(str::to_string)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_landing_outlasts_a_moving_branch_a_dirty_checkout_a_hung_test_and_a_restart() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-landing-faults");
    lab_crate(&home.project, LIB, &[]);
    let project_dir = home.project.clone();
    let data = tempfile::tempdir().unwrap();
    let data_arg = data.path().to_str().unwrap().to_string();
    let config = "[tasks]\ngrace_s = 1\nland = \"when_green\"\nland_attempts = 1\n\
                  land_check_timeout_s = 45\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
    let start = || {
        spawning_server_with(
            &home,
            &cli,
            tmux_dir.path(),
            config,
            &["--data-dir", &data_arg],
        )
    };
    let mut server = start();
    let mut client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let add = |task: Value| {
        let client = &client;
        async move {
            let added = call_ok(client, "task_add", json!({"tasks": [task]})).await;
            added["added"][0]["id"].as_str().unwrap().to_string()
        }
    };
    call_ok(
        &client,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 1}),
    )
    .await;
    let slow = "mkdir -p tests && printf '#[test]\\nfn slow() {\\n    std::thread::sleep(std::time::Duration::from_secs(8));\\n}\\n' > tests/slow.rs";

    // The branch moves while the merged tree is tested: it is tested again on the new tip.
    let t1 = add(task("slow test", &project, slow, None)).await;
    // Once its worktree is made: it started from main as it was.
    until_task(&client, &t1, "t1 in its worktree", |t| {
        t["isolation"]["kind"] == "worktree"
    })
    .await;
    let p1 = person_commits(&project_dir, "person-1.txt");
    until_task(&client, &t1, "t1's merged tree tested", |t| {
        landing_state(t) == "testing"
    })
    .await;
    let p2 = person_commits(&project_dir, "person-2.txt");
    let landed = until_landed(&client, &t1).await;
    let commit = landed["landing"]["state"]["commit"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        git(&project_dir, &["rev-parse", &format!("{commit}^1")]).trim(),
        p2,
        "merged onto the tip the person moved it to: {landed:#}"
    );
    assert!(git(&project_dir, &["log", "--format=%H", "main"]).contains(&p1));
    assert_eq!(git(&project_dir, &["status", "--porcelain"]), "");

    // A dirty checkout of the branch holds it, untouched, until the person commits.
    std::fs::write(project_dir.join(".gitignore"), "/target\n# the person's\n").unwrap();
    let t2 = add(task("a file", &project, "echo two > two.txt", None)).await;
    let held = until_task(&client, &t2, "t2 held", |t| landing_state(t) == "held").await;
    assert!(
        held["attention"]
            .as_str()
            .unwrap()
            .contains("uncommitted changes (.gitignore)"),
        "{held:#}"
    );
    assert_eq!(git(&project_dir, &["rev-parse", "main"]).trim(), commit);
    assert_eq!(
        git(&project_dir, &["status", "--porcelain"]),
        " M .gitignore\n"
    );
    git(&project_dir, &["commit", "-qam", "the person's ignore"]);
    let landed = until_landed(&client, &t2).await;
    assert_eq!(landed["attention"], Value::Null, "{landed:#}");
    assert!(project_dir.join("two.txt").is_file());
    assert_eq!(
        std::fs::read_to_string(project_dir.join(".gitignore")).unwrap(),
        "/target\n# the person's\n"
    );

    // The person works on another branch: the task's branch lands on main by itself.
    let t3 = add(task(
        "another file",
        &project,
        "echo three > three.txt",
        None,
    ))
    .await;
    // Once its worktree is made: it started from main as it was.
    until_task(&client, &t3, "t3 in its worktree", |t| {
        t["isolation"]["kind"] == "worktree"
    })
    .await;
    git(&project_dir, &["checkout", "-q", "-b", "feature"]);
    let landed = until_landed(&client, &t3).await;
    assert_eq!(landed["landing"]["state"]["into"], "main", "{landed:#}");
    assert_eq!(
        git(&project_dir, &["branch", "--show-current"]).trim(),
        "feature"
    );
    assert!(
        !project_dir.join("three.txt").exists(),
        "the checkout is the person's"
    );
    git(&project_dir, &["checkout", "-q", "main"]);
    assert!(project_dir.join("three.txt").is_file());

    // A test that hangs is stopped at the check's timeout, and with no attempt left the
    // result waits for a person, saying why.
    let hang = "mkdir -p tests && printf '#[test]\\nfn forever() {\\n    loop {\\n        std::thread::sleep(std::time::Duration::from_secs(1));\\n    }\\n}\\n' > tests/hangs.rs";
    let t4 = add(task("a hanging test", &project, hang, None)).await;
    let waits = until_task(&client, &t4, "t4 waits for a person", |t| {
        landing_state(t) == "waits_for_person"
    })
    .await;
    let why = waits["attention"].as_str().unwrap();
    assert!(why.contains("test on its own branch: timeout"), "{waits:#}");
    assert_eq!(
        waits["landing"]["sent_back"][0]["failure"]["status"],
        "timeout"
    );
    assert!(
        eventually(Duration::from_secs(10), || hung_tests().is_empty()).await,
        "{:?}",
        hung_tests()
    );
    assert!(!project_dir.join("tests/hangs.rs").exists());
    // The person gives it one more attempt: its agent hears why again, and with no luck it
    // waits for the person again, both attempts kept.
    let again = call_ok(&client, "task_retry", json!({"task_id": t4})).await;
    let state = again["task"]["state"].as_str().unwrap();
    assert!(matches!(state, "queued" | "running"), "{again:#}");
    assert_eq!(again["task"]["attention"], Value::Null);
    let waits = until_task(&client, &t4, "t4 waits again", |t| {
        t["landing"]["sent_back"].as_array().map(Vec::len) == Some(2)
            && landing_state(t) == "waits_for_person"
    })
    .await;
    assert_eq!(waits["attempts"], 2, "{waits:#}");
    let refused = call_err(&client, "task_retry", json!({"task_id": t3})).await;
    assert!(
        refused.contains("only a result that did not land"),
        "{refused}"
    );

    // drydock stops in the middle of a landing: once it is back, the result lands.
    let t5 = add(task("a fifth file", &project, "echo five > five.txt", None)).await;
    // Once its worktree is made: it started from main as it was.
    until_task(&client, &t5, "t5 in its worktree", |t| {
        t["isolation"]["kind"] == "worktree"
    })
    .await;
    let p3 = person_commits(&project_dir, "person-3.txt");
    until_task(&client, &t5, "t5's merged tree tested", |t| {
        landing_state(t) == "testing"
    })
    .await;
    server.kill_now();
    assert_eq!(git(&project_dir, &["rev-parse", "main"]).trim(), p3);
    server = start();
    client = modern_client(&server.url).await;
    let landed = until_landed(&client, &t5).await;
    let commit = landed["landing"]["state"]["commit"].as_str().unwrap();
    assert_eq!(
        git(&project_dir, &["rev-parse", &format!("{commit}^1")]).trim(),
        p3
    );
    assert!(project_dir.join("five.txt").is_file());
    assert_eq!(git(&project_dir, &["status", "--porcelain"]), "");
    drop(client);
    drop(server);
    no_agent_left(&home, tmux_dir.path(), "every task ended").await;
}
