//! The project memory, replayed on real projects: `test-projects/history-replay.json` holds
//! 31 real errors and failing tests of `history-rust` and `history-elixir` (each checked by
//! `test-projects/history-replay-check.py` with the real cargo and mix). For each case, as an
//! agent would: break the project, call the tool, fix it (another change than the break's
//! undoing, often in other files too), call again; then break it the same way elsewhere and
//! call again. Measured: the fixes recorded with the right diff, the later errors whose
//! result carries that fix as `seen_before`, and history_search's Hit@3 for each fix asked
//! by its error text and by a symptom sentence.

use std::path::Path;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::support::*;
use crate::task_worktrees::git;

#[derive(Debug, Deserialize)]
struct Case {
    id: String,
    project: String,
    tool: String,
    #[serde(rename = "break")]
    breaks: Vec<Edit>,
    fix: Vec<Edit>,
    again: Vec<Edit>,
    error_text: String,
    symptom: String,
    #[serde(default)]
    warnings_as_errors: bool,
}

#[derive(Debug, Deserialize)]
struct Edit {
    file: String,
    find: Option<String>,
    #[serde(default)]
    replace: String,
    #[serde(default)]
    delete: bool,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(repo_root().join("test-projects/history-replay.json"))
        .expect("the replay corpus");
    serde_json::from_str(&text).expect("the replay corpus is JSON")
}

/// Waits for the next second of the clock: mix sees a source changed by its time in whole
/// seconds, and the replay edits faster than a person, often in the second of the build
/// before.
fn next_second(project: &Path) {
    if project.join("mix.exs").is_file() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap();
        let left = 1000 - u64::from(now.subsec_millis()) + 20;
        std::thread::sleep(std::time::Duration::from_millis(left));
    }
}

fn apply(project: &Path, edits: &[Edit]) {
    next_second(project);
    for edit in edits {
        let path = project.join(&edit.file);
        if edit.delete {
            std::fs::remove_file(&path).unwrap();
            continue;
        }
        let text = match &edit.find {
            None => edit.replace.clone(),
            Some(find) => {
                let old = std::fs::read_to_string(&path).unwrap();
                assert_eq!(
                    old.matches(find.as_str()).count(),
                    1,
                    "{}: {find}",
                    edit.file
                );
                old.replacen(find.as_str(), &edit.replace, 1)
            }
        };
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
    }
}

/// The project as committed, its build output kept.
fn reset(project: &Path) {
    next_second(project);
    git(project, &["checkout", "-q", "--", "."]);
    git(project, &["clean", "-fdq"]);
}

/// The lines each edit of a fix adds (those of its replacement not in what it replaced),
/// for the edits that add any.
fn added_lines(fix: &[Edit]) -> Vec<Vec<String>> {
    fix.iter()
        .filter(|e| !e.delete)
        .map(|e| {
            let old: Vec<&str> = e
                .find
                .as_deref()
                .unwrap_or("")
                .lines()
                .map(str::trim)
                .collect();
            e.replace
                .lines()
                .map(str::trim)
                .filter(|l| l.len() > 3 && !old.contains(l))
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|lines| !lines.is_empty())
        .collect()
}

/// Whether `diff` is `fix`'s: it adds a line of every edit that adds one, and changes every
/// file an edit that only removes (or adds a bare `end`) changes.
fn shows_fix(diff: &str, fix: &[Edit]) -> bool {
    let plus: Vec<&str> = diff
        .lines()
        .filter(|d| d.starts_with('+') && !d.starts_with("+++"))
        .map(|d| d[1..].trim())
        .collect();
    let added = added_lines(fix);
    let files_changed = fix.iter().all(|e| {
        diff.contains(&format!("a/{}\n", e.file)) || diff.contains(&format!("b/{}\n", e.file))
    });
    match added.is_empty() {
        true => !diff.is_empty() && files_changed,
        false => added
            .iter()
            .all(|lines| lines.iter().any(|line| plus.contains(&line.as_str()))),
    }
}

async fn run(client: &Client, case: &Case, project: &Path) -> Value {
    let mut arguments = json!({"project_path": path_arg(project)});
    if case.warnings_as_errors {
        arguments["warnings_as_errors"] = json!(true);
    }
    call_ok(client, &case.tool, arguments).await
}

fn failed(result: &Value) -> bool {
    result["status"] != "ok" && result["status"] != "passed"
}

#[derive(Default)]
struct Tally {
    cases: usize,
    fixes: usize,
    seen_before: usize,
    by_text: usize,
    by_symptom: usize,
    misses: Vec<String>,
}

impl Tally {
    fn share(n: usize, of: usize) -> f64 {
        n as f64 / of.max(1) as f64
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replayed_errors_are_remembered_with_their_fixes_told_again_and_found() {
    let mut copies = Vec::new();
    let mut roots = Vec::new();
    for name in ["history-rust", "history-elixir"] {
        let (copy, project) = copy_project(name);
        std::fs::write(project.join(".gitignore"), "/target/\n/_build/\n/deps/\n").unwrap();
        git(&project, &["init", "-q", "-b", "main"]);
        git(&project, &["add", "-A"]);
        git(&project, &["commit", "-qm", "pristine"]);
        roots.push(project);
        copies.push(copy);
    }
    let server = Server::start_with(
        &[
            "--allow-root",
            roots[0].to_str().unwrap(),
            "--allow-root",
            roots[1].to_str().unwrap(),
        ],
        &[],
    );
    let client = modern_client(&server.url).await;

    let cases = cases();
    let mut tally = Tally::default();
    let mut ids = Vec::new();
    for case in &cases {
        let project = roots
            .iter()
            .find(|p| p.ends_with(&case.project))
            .expect("a project of the corpus")
            .as_path();
        reset(project);
        apply(project, &case.breaks);
        let broken = run(&client, case, project).await;
        assert!(failed(&broken), "{}: the break fails: {broken:#}", case.id);
        apply(project, &case.fix);
        let fixed = run(&client, case, project).await;
        assert!(!failed(&fixed), "{}: the fix passes: {fixed:#}", case.id);

        // The fix as recorded: the resolved problem whose diff shows the fix's lines.
        let found = call_ok(
            &client,
            "history_search",
            json!({"query": case.error_text, "project_path": path_arg(project), "limit": 20}),
        )
        .await;
        let recorded: Vec<i64> = found["hits"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|hit| {
                hit["state"] == "resolved"
                    && shows_fix(hit["fix"]["diff"].as_str().unwrap_or(""), &case.fix)
            })
            .map(|hit| hit["id"].as_i64().unwrap())
            .collect();
        tally.cases += 1;
        match recorded.is_empty() {
            false => tally.fixes += 1,
            true => tally.misses.push(format!(
                "{}: no fix recorded as {:?}",
                case.id,
                added_lines(&case.fix)
            )),
        }

        reset(project);
        apply(project, &case.again);
        let again = run(&client, case, project).await;
        assert!(
            failed(&again),
            "{}: the second break fails: {again:#}",
            case.id
        );
        let told = again["seen_before"].as_array().is_some_and(|seen| {
            seen.iter()
                .any(|s| shows_fix(s["diff"].as_str().unwrap_or(""), &case.fix))
        });
        match told {
            true => tally.seen_before += 1,
            false => tally.misses.push(format!(
                "{}: the second break was not told its fix: {}",
                case.id, again["seen_before"]
            )),
        }
        reset(project);
        let clean = run(&client, case, project).await;
        assert!(!failed(&clean), "{}: pristine passes: {clean:#}", case.id);
        ids.push(recorded);
    }

    // Asked afterwards, among everything recorded.
    for (case, recorded) in cases.iter().zip(&ids) {
        if recorded.is_empty() {
            continue;
        }
        for (query, hits) in [
            (&case.error_text, &mut tally.by_text),
            (&case.symptom, &mut tally.by_symptom),
        ] {
            let found = call_ok(
                &client,
                "history_search",
                json!({"query": query, "limit": 3}),
            )
            .await;
            let top: Vec<i64> = found["hits"]
                .as_array()
                .unwrap()
                .iter()
                .map(|h| h["id"].as_i64().unwrap())
                .collect();
            match top.iter().any(|id| recorded.contains(id)) {
                true => *hits += 1,
                false => tally.misses.push(format!(
                    "{}: {query:?} top 3 {top:?}, not {recorded:?}",
                    case.id
                )),
            }
        }
    }
    let n = tally.cases;
    let report = format!(
        "history replay, {n} cases: fixes with the right diff {:.3}, seen_before right {:.3}, Hit@3 by error text {:.3}, by symptom {:.3}\nmisses:\n{}",
        Tally::share(tally.fixes, n),
        Tally::share(tally.seen_before, n),
        Tally::share(tally.by_text, n),
        Tally::share(tally.by_symptom, n),
        tally.misses.join("\n")
    );
    println!("{report}");
    assert!(n >= 31, "{report}");
    // Measured on 31 cases 2026-11-26 and again 2026-11-27: 0.968, 0.806, 0.935, 0.581 (30,
    // 25, 29 and 18 cases; the README, Project memory). Each floor lets one case fewer pass.
    assert!(Tally::share(tally.fixes, n) >= 0.93, "{report}");
    assert!(Tally::share(tally.seen_before, n) >= 0.77, "{report}");
    assert!(Tally::share(tally.by_text, n) >= 0.90, "{report}");
    assert!(Tally::share(tally.by_symptom, n) >= 0.54, "{report}");
}

pub(crate) fn crate_at(dir: &Path) {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[package]\nname = \"plain\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        dir.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();
    std::fs::write(dir.join("logo.png"), [0u8, 1, 2, 3]).unwrap();
}

pub(crate) fn serve(root: &Path, data_dir: &Path) -> Server {
    Server::start_with(
        &[
            "--allow-root",
            root.to_str().unwrap(),
            "--data-dir",
            data_dir.to_str().unwrap(),
        ],
        &[],
    )
}

pub(crate) async fn compile(client: &Client, project: &Path) -> Value {
    call_ok(
        client,
        "compile",
        json!({"project_path": path_arg(project)}),
    )
    .await
}

pub(crate) async fn search(client: &Client, query: &str) -> Vec<Value> {
    let found = call_ok(client, "history_search", json!({"query": query})).await;
    found["hits"].as_array().unwrap().clone()
}

/// A project that is not a git repository, a binary file and a deleted one in the fix, a
/// restart, two servers on one data directory, and `drydock history forget`.
#[tokio::test(flavor = "multi_thread")]
async fn the_memory_outlives_a_restart_takes_odd_fixes_and_forgets_on_request() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let project = root.join("plain");
    crate_at(&project);
    let first = serve(&root, data_dir.path());
    let client = modern_client(&first.url).await;
    assert_eq!(compile(&client, &project).await["status"], "ok");

    // Broken in a file of its own; fixed by deleting that file, with a binary file changed.
    std::fs::write(
        project.join("src/lib.rs"),
        "mod gone;\npub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();
    std::fs::write(
        project.join("src/gone.rs"),
        "pub fn half() -> u32 {\n    \"twenty-one\"\n}\n",
    )
    .unwrap();
    let broken = compile(&client, &project).await;
    assert_eq!(broken["status"], "failed", "{broken:#}");
    assert_eq!(broken["errors"][0]["code"], "E0308", "{broken:#}");
    std::fs::remove_file(project.join("src/gone.rs")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();
    std::fs::write(project.join("logo.png"), [0u8, 9, 9, 9]).unwrap();
    assert_eq!(compile(&client, &project).await["status"], "ok");

    let hits = search(&client, "mismatched types").await;
    let hit = &hits[0];
    assert_eq!(
        (&hit["state"], &hit["code"]),
        (&json!("resolved"), &json!("E0308")),
        "{hit:#}"
    );
    assert_eq!(hit["file"], "src/gone.rs");
    let diff = hit["fix"]["diff"].as_str().unwrap();
    assert!(diff.contains("--- a/src/gone.rs\n+++ /dev/null"), "{diff}");
    assert!(diff.contains("-    \"twenty-one\""), "{diff}");
    assert!(
        diff.contains("logo.png") && diff.contains("changed (binary)"),
        "{diff}"
    );
    assert!(diff.contains("-mod gone;"), "{diff}");

    // A format check's unformatted file is a problem until formatting fixes it.
    std::fs::write(project.join("src/lib.rs"), "pub fn answer()->u32{42}\n").unwrap();
    let check = call_ok(
        &client,
        "format",
        json!({"project_path": path_arg(&project)}),
    )
    .await;
    assert_eq!(check["status"], "needs_formatting", "{check:#}");
    let applied = call_ok(
        &client,
        "format",
        json!({"project_path": path_arg(&project), "apply": true}),
    )
    .await;
    assert_eq!(applied["status"], "applied", "{applied:#}");
    let unformatted = call_ok(
        &client,
        "history_search",
        json!({"query": "not formatted", "kind": "warning"}),
    )
    .await;
    let formatted = &unformatted["hits"][0];
    assert_eq!(
        (&formatted["state"], &formatted["file"]),
        (&json!("resolved"), &json!("src/lib.rs")),
        "{unformatted:#}"
    );
    let diff = formatted["fix"]["diff"].as_str().unwrap();
    assert!(diff.contains("+pub fn answer() -> u32 {"), "{diff}");
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    42\n}\n",
    )
    .unwrap();

    // A second server on the same data directory, then the first one gone: nothing lost,
    // and the second's run is recorded beside the first's.
    let second = serve(&root, data_dir.path());
    let other = modern_client(&second.url).await;
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    \"42\"\n}\n",
    )
    .unwrap();
    let (a, b) = tokio::join!(compile(&client, &project), compile(&other, &project));
    assert_eq!(
        (&a["status"], &b["status"]),
        (&json!("failed"), &json!("failed"))
    );
    drop(client);
    drop(first);
    let told = compile(&other, &project).await;
    assert_eq!(told["seen_before"][0]["history_id"], hit["id"], "{told:#}");
    let hits: Vec<Value> = search(&other, "mismatched types")
        .await
        .into_iter()
        .filter(|hit| hit["kind"] == "error")
        .collect();
    assert_eq!(hits.len(), 2, "the earlier fix and the open one: {hits:#?}");
    assert!(
        hits.iter()
            .any(|h| h["state"] == "open" && h["file"] == "src/lib.rs")
    );

    // Forgotten from the command line while the server runs.
    let forgot = drydock_command()
        .args(["history", "forget", "--project"])
        .arg(&project)
        .arg("--data-dir")
        .arg(data_dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&forgot.stdout);
    assert!(forgot.status.success(), "{forgot:?}");
    assert!(
        said.contains("problem(s) of") && !said.contains(" 0 run(s)"),
        "{said}"
    );
    assert!(search(&other, "mismatched types").await.is_empty());
    let nothing = drydock_command()
        .args(["history", "forget", "--data-dir"])
        .arg(data_dir.path())
        .output()
        .unwrap();
    assert_eq!(nothing.status.code(), Some(2), "{nothing:?}");
}

/// `[history] max_mb` holds while a large file changes before every compile, and a project
/// `[history] off` names is never recorded.
#[tokio::test(flavor = "multi_thread")]
async fn the_size_limit_holds_and_a_project_switched_off_is_not_recorded() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let (kept, private) = (root.join("kept"), root.join("private"));
    crate_at(&kept);
    crate_at(&private);
    let data_dir = tempfile::tempdir().unwrap();
    let config = root.join("drydock.toml");
    std::fs::write(
        &config,
        format!(
            "[history]\nmax_mb = 1\noff = [{:?}]\n",
            private.display().to_string()
        ),
    )
    .unwrap();
    let server = Server::start_with(
        &[
            "--allow-root",
            root.to_str().unwrap(),
            "--data-dir",
            data_dir.path().to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let client = modern_client(&server.url).await;

    // Each compile sees a new 400 KB file: twelve of them would keep 4.8 MB.
    for n in 0..12 {
        let filler: String = (0..20_000).map(|i| format!("// {n} {i:012}\n")).collect();
        std::fs::write(kept.join("src/filler.rs"), filler).unwrap();
        assert_eq!(compile(&client, &kept).await["status"], "ok");
    }
    std::fs::write(
        private.join("src/lib.rs"),
        "pub fn answer() -> u32 {\n    \"42\"\n}\n",
    )
    .unwrap();
    let private_result = compile(&client, &private).await;
    assert_eq!(private_result["status"], "failed");
    assert!(
        private_result.get("seen_before").is_none(),
        "{private_result:#}"
    );

    let hits = search(&client, "mismatched types").await;
    assert!(
        hits.is_empty(),
        "the switched-off project was recorded: {hits:#?}"
    );
    // What the file's pages in use hold (freed pages are reused, not returned).
    let store =
        drydock::history::store::HistoryStore::open(&data_dir.path().join("history.sqlite3"))
            .unwrap();
    let bytes = store.file_bytes().unwrap();
    let (runs, ..) = store.sizes().unwrap();
    assert!(
        bytes < 1536 * 1024 && runs < 12,
        "the memory keeps {bytes} bytes in {runs} runs with max_mb = 1"
    );

    // Switched off everywhere, the memory says so instead of finding nothing.
    let off = root.join("off.toml");
    std::fs::write(&off, "[history]\nenabled = false\n").unwrap();
    let refused = drydock_command()
        .args(["history", "search", "filler", "--config"])
        .arg(&off)
        .arg("--data-dir")
        .arg(data_dir.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{refused:?}");
    assert!(said.contains("switched off"), "{said}");
}

/// A failing test that prints 50 MB and panics with 2 MB: the call answers, the failure is
/// remembered by its message within a bounded text, and the memory stays small.
#[tokio::test(flavor = "multi_thread")]
async fn a_test_that_prints_50_mb_is_remembered_within_bounds() {
    let root = tempfile::tempdir().unwrap();
    let root = root.path().canonicalize().unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let project = root.join("flood");
    crate_at(&project);
    std::fs::write(
        project.join("src/lib.rs"),
        r#"#[test]
fn floods() {
    let line = "x".repeat(1023);
    for _ in 0..50 * 1024 {
        println!("{line}");
    }
    panic!("flooded the output and failed\n{}", "y".repeat(2 << 20));
}
"#,
    )
    .unwrap();
    let server = serve(&root, data_dir.path());
    let client = modern_client(&server.url).await;

    let result = call_ok(&client, "test", json!({"project_path": path_arg(&project)})).await;
    assert_eq!(result["status"], "failed", "{result:#}");

    let hits = search(&client, "flooded the output and failed").await;
    let hit = hits
        .iter()
        .find(|hit| hit["test"].as_str().is_some_and(|t| t.contains("floods")))
        .unwrap_or_else(|| panic!("the failing test was not remembered: {hits:#?}"));
    let text = hit["text"].as_str().unwrap();
    assert!(text.len() <= 40 * 1024, "{} bytes of text kept", text.len());
    assert!(text.contains("bytes elided"), "{}", &text[..200]);
    let store =
        drydock::history::store::HistoryStore::open(&data_dir.path().join("history.sqlite3"))
            .unwrap();
    let bytes = store.file_bytes().unwrap();
    assert!(bytes < 4 * 1024 * 1024, "the memory holds {bytes} bytes");
}
