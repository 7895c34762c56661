//! Tasks that do not trample each other, on the real Claude Code against the scripted fake:
//! three tasks on one git project run at once, each in its own worktree and branch; each
//! result is its branch's diff with the project's checks (compile and test through drydock's
//! own tools); results that touch the same file are flagged; two merge, the third conflicts
//! and is discarded, and nothing is left. A task's token reaches the build tools in its own
//! worktree only. Each test runs its own tasks.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agent_kit::fake_anthropic::FakeAnthropic;
use crate::agent_kit::home::AgentHome;
use crate::mcp_spawn::spawning_server;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;

const WITHIN: Duration = Duration::from_secs(180);

pub use crate::agent_kit::lab_crate::{git, lab_crate};

/// Makes `dir` a git repository holding a small cargo crate (with a test) and `shared.txt`,
/// committed on `main`.
pub fn cargo_repository(dir: &Path) {
    let lib = "pub fn answer() -> u32 {\n    42\n}\n\n#[test]\nfn answers() {\n    assert_eq!(answer(), 42);\n}\n";
    lab_crate(dir, lib, &[("shared.txt", "base\n")]);
}

/// Makes `dir` a git repository with what it holds committed on `main`.
pub fn repository(dir: &Path) {
    std::fs::write(dir.join("README.md"), "a lab project\n").unwrap();
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "the lab project"]);
}

async fn task(client: &Client, id: &str) -> Value {
    call_ok(client, "task_show", json!({"task_id": id})).await
}

/// task_show until the task's checks are done (or skipped); its report.
pub async fn until_reviewed(client: &Client, id: &str) -> Value {
    until_read(
        WITHIN,
        || task(client, id),
        |report| {
            let checks = &report["task"]["review"]["checks"]["state"];
            checks == "done" || checks == "skipped"
        },
    )
    .await
    .unwrap_or_else(|report| panic!("task {id} was never reviewed: {report:#}"))
}

fn changed_paths(report: &Value) -> Vec<String> {
    report["task"]["review"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap().to_string())
        .collect()
}

/// What the agent of task `id` saw in its directory (its `ls -A`, committed on its branch).
fn seen_by(project: &Path, id: &str) -> String {
    git(
        project,
        &["show", &format!("drydock/task-{id}:seen-{id}.txt")],
    )
}

/// A drydock whose task agents run the pinned Claude Code against the fake, on a git
/// project holding a small cargo crate; tasks trusted to run Bash.
struct Lab {
    client: Client,
    server: Server,
    home: AgentHome,
    tmux_dir: tempfile::TempDir,
    _fake: FakeAnthropic,
}

impl Lab {
    async fn start(name: &str) -> Lab {
        let (cli, home, fake, tmux_dir) = claude_home(name);
        cargo_repository(&home.project);
        let config = "[tasks]\ngrace_s = 1\n[tasks.policies]\ntrusted = [\"Bash\"]\n";
        let server = spawning_server(&home, &cli, tmux_dir.path(), config);
        Lab {
            client: modern_client(&server.url).await,
            server,
            home,
            tmux_dir,
            _fake: fake,
        }
    }

    fn project(&self) -> Value {
        path_arg(&self.home.project)
    }

    /// A task that edits `files` (each gets a line naming the task), and `extra` (lab tokens).
    fn task(&self, title: &str, files: &str, extra: &str) -> Value {
        json!({"title": title, "project_path": self.project(), "auto_approve": "trusted",
               "description": format!("Edit lab:files={files} {extra} lab:complete=done")})
    }

    /// Queues `tasks` and starts them all at once; their ids.
    async fn run_at_once(&self, tasks: Vec<Value>) -> Vec<String> {
        let n = tasks.len();
        let added = call_ok(&self.client, "task_add", json!({"tasks": tasks})).await;
        let ids: Vec<String> = (0..n)
            .map(|i| added["added"][i]["id"].as_str().unwrap().to_string())
            .collect();
        let configured = call_ok(
            &self.client,
            "queue_configure",
            json!({"mode": "auto", "max_concurrent": n}),
        )
        .await;
        assert_eq!(
            configured["started"].as_array().unwrap().len(),
            n,
            "{configured:#}"
        );
        ids
    }

    /// Three tasks at once: one and three both change shared.txt, two works longer; their
    /// ids and reports once each was reviewed.
    async fn three_reviewed(&self) -> (Vec<String>, Vec<Value>) {
        let ids = self
            .run_at_once(vec![
                self.task("one", "one.txt,shared.txt", ""),
                self.task("two", "two.txt", "lab:sleep=15"),
                self.task("three", "three.txt,shared.txt", ""),
            ])
            .await;
        let mut reports = Vec::new();
        for id in &ids {
            reports.push(until_reviewed(&self.client, id).await);
        }
        (ids, reports)
    }

    async fn finish(self, what: &str) {
        no_agent_left(&self.home, self.tmux_dir.path(), what).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_agents_token_reaches_the_build_tools_in_its_own_worktree_only() {
    let lab = Lab::start("claude-worktree-token").await;
    let (client, server, project) = (&lab.client, &lab.server, lab.project());
    let ids = lab
        .run_at_once(vec![lab.task("two", "two.txt", "lab:sleep=15")])
        .await;
    let two = &ids[0];
    until(client, two, |t| t["isolation"]["kind"] == "worktree").await;
    let token_file = server.data_dir.path().join(format!("tasks/{two}/token"));
    assert!(
        eventually(WITHIN, || token_file.exists()).await,
        "task two's token"
    );
    let token = std::fs::read_to_string(&token_file).unwrap();
    let agent = client_with_token(&Era::Modern, &server.url, token.trim()).await;
    let mut tools: Vec<String> = agent
        .list_all_tools()
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect();
    tools.sort();
    assert_eq!(
        tools,
        [
            "compile",
            "docs_lookup",
            "docs_read",
            "format",
            "history_search",
            "lint",
            "project_info",
            "run",
            "task_complete",
            "task_show",
            "test",
            "type_check"
        ]
    );
    let compiled = call_ok(&agent, "compile", json!({"project_path": project})).await;
    assert_eq!(
        compiled["status"], "ok",
        "the project's path means its worktree: {compiled:#}"
    );
    assert!(
        server
            .data_dir
            .path()
            .join(format!("task-targets/{two}"))
            .is_dir(),
        "it built into the task's own target directory"
    );
    assert!(
        !lab.home.project.join("target").exists(),
        "nothing was built in the project"
    );
    let outside = call_err(&agent, "compile", json!({"project_path": "/"})).await;
    assert!(
        outside.contains(&format!("outside the directory of task {two}")),
        "{outside}"
    );
    let other = call_err(&agent, "terminal_list", json!({})).await;
    assert!(other.contains("is not for the agent of task"), "{other}");
    until_reviewed(client, two).await;
    lab.finish("the task ended").await;
}

/// Each task works in a worktree and branch of its own, sees none of the others' files, and
/// its result is its branch's diff with the project's checks (compile and test through
/// drydock's own tools); the project itself is untouched.
#[tokio::test(flavor = "multi_thread")]
async fn tasks_at_once_each_work_in_a_worktree_of_their_own_and_see_none_of_the_others() {
    let lab = Lab::start("claude-worktrees-apart").await;
    let (ids, reports) = lab.three_reviewed().await;
    let (one, two, three) = (&ids[0], &ids[1], &ids[2]);
    let mut dirs = Vec::new();
    for (id, report) in ids.iter().zip(&reports) {
        let shown = &report["task"];
        assert_eq!(shown["state"], "done", "{report:#}");
        let isolation = &shown["isolation"];
        assert_eq!(
            isolation["branch"],
            format!("drydock/task-{id}"),
            "{isolation:#}"
        );
        assert_eq!(isolation["base_ref"], "main");
        let dir = isolation["dir"].as_str().unwrap().to_string();
        assert!(
            dir.starts_with(lab.server.data_dir.path().to_str().unwrap()),
            "{dir}"
        );
        let notes = isolation["notes"].to_string();
        assert!(notes.contains("Claude Code trusts the worktree"), "{notes}");
        // The project never built, so its worktrees start as they are, and say so.
        assert!(
            notes.contains("warm start: no build output was copied"),
            "{notes}"
        );
        dirs.push(dir);
        let seen = seen_by(&lab.home.project, id);
        let listing: Vec<&str> = seen.lines().collect();
        assert_eq!(
            listing,
            [
                ".git",
                ".gitignore",
                "Cargo.lock",
                "Cargo.toml",
                &format!("seen-{id}.txt"),
                "shared.txt",
                "src"
            ],
            "task {id} saw only the project and its own file"
        );
        let review = &shown["review"];
        assert_eq!(review["committed_for_agent"], true, "{review:#}");
        assert_eq!(review["disposition"]["state"], "open");
        let checks = &review["checks"]["results"];
        assert_eq!(checks[0]["tool"], "compile");
        assert_eq!(checks[0]["status"], "ok", "{checks:#}");
        assert_eq!(checks[1]["tool"], "test");
        assert_eq!(checks[1]["status"], "passed", "{checks:#}");
    }
    dirs.sort();
    dirs.dedup();
    assert_eq!(dirs.len(), 3, "three worktrees");
    let seen = |id: &str| format!("seen-{id}.txt");
    assert_eq!(
        changed_paths(&reports[0]),
        ["one.txt", &seen(one), "shared.txt"]
    );
    assert_eq!(changed_paths(&reports[1]), [&seen(two), "two.txt"]);
    assert_eq!(
        changed_paths(&reports[2]),
        [&seen(three), "shared.txt", "three.txt"]
    );
    assert!(
        reports[0]["task"]["review"]["diff"]
            .as_str()
            .unwrap()
            .contains(&format!("+task {one}")),
        "{:#}",
        reports[0]
    );
    assert!(
        !lab.home.project.join("one.txt").exists(),
        "the project itself is untouched"
    );
    lab.finish("every task ended").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn results_that_change_the_same_file_are_flagged_before_either_is_merged() {
    let lab = Lab::start("claude-worktrees-overlap").await;
    let (ids, _) = lab.three_reviewed().await;
    let (one, two, three) = (&ids[0], &ids[1], &ids[2]);
    let listed = call_ok(&lab.client, "task_list", json!({})).await;
    let overlaps = |id: &str| {
        listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .unwrap()["overlaps_with"]
            .clone()
    };
    assert_eq!(overlaps(one), json!([three]), "{listed:#}");
    assert_eq!(overlaps(three), json!([one]));
    assert_eq!(overlaps(two), Value::Null);
    let shown = task(&lab.client, one).await;
    assert_eq!(
        shown["overlaps"],
        json!([{"task_id": three, "files": ["shared.txt"], "conflicts": ["shared.txt"]}]),
        "{shown:#}"
    );
    assert_eq!(shown["target"], json!({"into": "main", "files": []}));
    lab.finish("every task ended").await;
}

/// The first result fast-forwards main, the second merges with a merge commit, the third
/// conflicts and changes nothing; a result merged already is not merged again.
#[tokio::test(flavor = "multi_thread")]
async fn results_merge_by_fast_forward_or_merge_commit_and_a_conflict_changes_nothing() {
    let lab = Lab::start("claude-worktrees-merge").await;
    let (ids, _) = lab.three_reviewed().await;
    let (client, project) = (&lab.client, &lab.home.project);
    let (one, two, three) = (&ids[0], &ids[1], &ids[2]);
    let merged = call_ok(client, "task_merge", json!({"task_id": one})).await;
    assert_eq!(
        merged["task"]["review"]["disposition"]["how"], "fast_forward",
        "{merged:#}"
    );
    let merged = call_ok(client, "task_merge", json!({"task_id": two})).await;
    assert_eq!(
        merged["task"]["review"]["disposition"]["how"], "merge_commit",
        "{merged:#}"
    );
    let main = git(project, &["rev-parse", "main"]);
    let conflict = call_err(client, "task_merge", json!({"task_id": three})).await;
    assert!(
        conflict.contains("conflicts with main in: shared.txt")
            && conflict.contains("Nothing was changed"),
        "{conflict}"
    );
    assert_eq!(git(project, &["rev-parse", "main"]), main);
    assert_eq!(git(project, &["status", "--porcelain"]), "");
    assert_eq!(
        std::fs::read_to_string(project.join("shared.txt")).unwrap(),
        format!("base\ntask {one}\n")
    );
    assert!(project.join("two.txt").is_file());
    let again = call_err(client, "task_merge", json!({"task_id": one})).await;
    assert!(again.contains("was merged into main already"), "{again}");
    let shown = task(client, three).await;
    assert_eq!(shown["target"]["files"], json!(["shared.txt"]), "{shown:#}");
    lab.finish("every task ended").await;
}

/// Discarding the results (after two were merged) leaves the checkout and the scratch
/// worktree where merged trees are tested (kept warm for the next merge into main): no
/// task's worktree, branch, target directory or trust entry is left.
#[tokio::test(flavor = "multi_thread")]
async fn discarded_results_leave_no_worktree_branch_target_or_trust_entry() {
    let lab = Lab::start("claude-worktrees-discard").await;
    let (ids, reports) = lab.three_reviewed().await;
    let (client, project, data_dir) = (&lab.client, &lab.home.project, lab.server.data_dir.path());
    let (one, two, three) = (&ids[0], &ids[1], &ids[2]);
    for id in [one, two] {
        call_ok(client, "task_merge", json!({"task_id": id})).await;
    }
    for (id, kept) in [(one, "merged"), (two, "merged"), (three, "discarded")] {
        let gone = call_ok(client, "task_discard", json!({"task_id": id})).await;
        assert_eq!(
            gone["task"]["review"]["disposition"]["state"], kept,
            "{gone:#}"
        );
    }
    let listed = git(project, &["worktree", "list"]);
    let worktrees: Vec<&str> = listed.lines().collect();
    assert_eq!(worktrees.len(), 2, "{listed}");
    let scratch = data_dir.join("worktrees");
    assert!(
        worktrees[1].starts_with(scratch.to_str().unwrap())
            && worktrees[1].contains("/landing-main ")
            && worktrees[1].ends_with("(detached HEAD)"),
        "{listed}"
    );
    assert_eq!(git(project, &["branch", "--list", "drydock/*"]), "");
    for report in &reports {
        let dir = report["task"]["isolation"]["dir"].as_str().unwrap();
        assert!(!Path::new(dir).exists(), "{dir}");
    }
    assert!(!data_dir.join(format!("task-targets/{two}")).exists());
    let claude_json = std::fs::read_to_string(lab.home.home.join(".claude.json")).unwrap();
    assert!(
        !claude_json.contains("drydockTask"),
        "its trust entries are taken back"
    );
    let twice = call_err(client, "task_discard", json!({"task_id": three})).await;
    assert!(twice.contains("discarded already"), "{twice}");
    lab.finish("every task ended").await;
}

/// task_show's task until `done(task)`.
async fn until(client: &Client, id: &str, done: impl Fn(&Value) -> bool) -> Value {
    until_read(
        WITHIN,
        || async { task(client, id).await["task"].clone() },
        done,
    )
    .await
    .unwrap_or_else(|now| panic!("task {id} never got there: {now:#}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn tasks_in_place_run_one_at_a_time_in_their_project() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-in-place");
    let server = spawning_server(&home, &cli, tmux_dir.path(), "[tasks]\ngrace_s = 1\n");
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let add = |title: &str| {
        json!({"title": title, "project_path": project,
               "description": "Work a little lab:think=4 lab:complete=done"})
    };
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [add("first"), add("second")]}),
    )
    .await;
    let first = added["added"][0]["id"].as_str().unwrap().to_string();
    let second = added["added"][1]["id"].as_str().unwrap().to_string();
    let configured = call_ok(
        &client,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 2}),
    )
    .await;
    assert_eq!(configured["started"], json!([first]), "{configured:#}");
    let refused = call_err(&client, "task_start", json!({"task_id": second})).await;
    assert!(
        refused.contains(&format!("task {first} runs in"))
            && refused.contains("one task at a time works in a project's own directory"),
        "{refused}"
    );
    let mut most_running = 0;
    let deadline = Instant::now() + WITHIN;
    loop {
        let listed = call_ok(&client, "task_list", json!({})).await;
        most_running = most_running.max(listed["queue"]["running"].as_u64().unwrap());
        let states: Vec<&str> = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["state"].as_str().unwrap())
            .collect();
        if states == ["done", "done"] {
            break;
        }
        assert!(Instant::now() < deadline, "{listed:#}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(most_running, 1, "one at a time in one directory");
    for id in [&first, &second] {
        let shown = task(&client, id).await;
        let isolation = &shown["task"]["isolation"];
        assert_eq!(isolation["kind"], "in_place", "{shown:#}");
        assert_eq!(isolation["why"], "the project is not in a git repository");
        let discard = call_err(&client, "task_discard", json!({"task_id": id})).await;
        assert!(discard.contains("ran in the project itself"), "{discard}");
    }
    no_agent_left(&home, tmux_dir.path(), "both tasks ended").await;
}

/// A task named by a git remote on a machine's own queue: the remote must be one this drydock
/// may clone, one of the project's remotes when a project is given too, and never in place.
#[tokio::test(flavor = "multi_thread")]
async fn a_task_from_a_remote_is_refused_with_its_reason_and_nothing_is_queued() {
    let root = tempfile::tempdir().unwrap();
    let config = root.path().join("drydock.toml");
    std::fs::write(
        &config,
        "[tasks]\nrepositories = [\"https://git.example.test/team/*\"]\n",
    )
    .unwrap();
    let project = root.path().join("app");
    std::fs::create_dir(&project).unwrap();
    repository(&project);
    git(
        &project,
        &[
            "remote",
            "add",
            "origin",
            "https://git.example.test/team/app.git",
        ],
    );
    let server = Server::start_with(
        &[
            "--allow-root",
            root.path().to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        &[],
    );
    let client = modern_client(&server.url).await;
    let project = path_arg(&project);
    for (task, why) in [
        (
            json!({"title": "t"}),
            "give the project (a directory inside the allowed roots), or repository",
        ),
        (
            json!({"title": "t", "repository": "https://git.example.test/other/app.git"}),
            "clones only the git remotes [tasks] repositories allows (https://git.example.test/team/*)",
        ),
        (
            json!({"title": "t", "repository": "ext::sh -c reboot"}),
            "is not a URL",
        ),
        (
            json!({"title": "t", "repository": "https://me:pw@git.example.test/team/app.git"}),
            "holds a password",
        ),
        (
            json!({"title": "t", "repository": "https://git.example.test/team/app.git", "in_place": true}),
            "never in the clone itself",
        ),
        (
            json!({"title": "t", "project_path": project, "repository": "https://git.example.test/team/lib.git"}),
            "is not a remote of",
        ),
    ] {
        let refused = call_err(&client, "task_add", json!({"tasks": [task]})).await;
        assert!(refused.contains(why), "{task}: {refused}");
    }
    let listed = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(listed["tasks"], json!([]), "nothing was queued: {listed:#}");
}
