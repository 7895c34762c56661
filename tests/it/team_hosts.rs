//! Three drydock servers as the hosts of one queue on a real PostgreSQL, on one machine and
//! one tmux server, running the real Claude Code against the scripted fake model API: thirty
//! tasks under a team cap of 6 and host caps of 2, 2 and 3; one host SIGKILLed mid-task (its
//! tasks taken over once its lease ran out, beside the agents it left running, and those
//! stopped when it comes back), and the database restarted mid-run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use crate::dashboard::get;
use crate::mcp_spawn::{claude_processes, spawning_server, spawning_server_with};
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::postgres::Postgres;
use crate::support::*;
use crate::task_worktrees::{git, repository};

const HOSTS: [(&str, u32); 3] = [("a", 2), ("b", 2), ("c", 3)];
const TASKS: usize = 30;

pub fn config(url: &str, name: &str, cap: u32) -> String {
    format!(
        "[tasks]\nstore = \"{url}\"\nhost = \"{name}\"\nhost_cap = {cap}\nlease_s = 5\ngrace_s = 1\n"
    )
}

/// The tasks' state, host and epoch by id, read in one statement (empty while the database
/// is down).
pub fn tasks_now(postgres: &Postgres, database: &str) -> BTreeMap<String, (String, String, i64)> {
    let output = std::process::Command::new("psql")
        .args(["-X", "-A", "-t", "-F", " ", "-h", "127.0.0.1"])
        .args([
            "-p",
            &postgres.port.to_string(),
            "-U",
            "drydock",
            "-d",
            database,
        ])
        .args([
            "-c",
            "SELECT id, state, coalesce(host, '-'), epoch FROM drydock.tasks",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let id = words.next()?.to_string();
            let state = words.next()?.to_string();
            let host = words.next()?.to_string();
            let epoch = words.next()?.parse().ok()?;
            Some((id, (state, host, epoch)))
        })
        .collect()
}

pub fn count(tasks: &BTreeMap<String, (String, String, i64)>, state: &str) -> usize {
    tasks.values().filter(|(s, _, _)| s == state).count()
}

pub async fn until(
    what: &str,
    limit: Duration,
    postgres: &Postgres,
    check: impl Fn(&BTreeMap<String, (String, String, i64)>) -> bool,
) {
    until_showing(what, limit, postgres, None, check).await
}

/// [`until`], and when it never comes, the screens of the tasks still running on the tmux
/// server under `tmux_dir`.
pub async fn until_showing(
    what: &str,
    limit: Duration,
    postgres: &Postgres,
    tmux_dir: Option<&Path>,
    check: impl Fn(&BTreeMap<String, (String, String, i64)>) -> bool,
) {
    let read = || async { tasks_now(postgres, "team") };
    if let Err(now) = until_read(limit, read, check).await {
        let screens = tmux_dir.map(|dir| running_screens(dir, &now));
        panic!("{what}: never; the tasks: {now:?}; their screens: {screens:#?}");
    }
}

/// What the sessions of the running tasks show, by session.
fn running_screens(
    tmux_dir: &Path,
    tasks: &BTreeMap<String, (String, String, i64)>,
) -> BTreeMap<String, String> {
    let running: Vec<&String> = tasks
        .iter()
        .filter(|(_, (state, _, _))| state == "running")
        .map(|(id, _)| id)
        .collect();
    tmux_sessions(tmux_dir)
        .into_iter()
        .filter(|session| running.iter().any(|id| session.ends_with(id.as_str())))
        .map(|session| {
            let output = std::process::Command::new("tmux")
                .args(["-L", "drydock", "capture-pane", "-p", "-t", &session])
                .env("TMUX_TMPDIR", tmux_dir)
                .output()
                .unwrap();
            (
                session,
                String::from_utf8_lossy(&output.stdout).into_owned(),
            )
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn three_hosts_run_thirty_tasks_through_a_killed_host_and_a_restarted_database() {
    let mut postgres = Postgres::start();
    let url = postgres.database("team");
    let (cli, home, _fake, tmux_dir) = claude_home("claude-team");
    repository(&home.project);
    let start = |index: usize| {
        let (name, cap) = HOSTS[index];
        spawning_server(&home, &cli, tmux_dir.path(), &config(&url, name, cap))
    };
    let mut servers: Vec<Server> = (0..HOSTS.len()).map(start).collect();
    let client = modern_client(&servers[0].url).await;
    let project = path_arg(&home.project);

    // Every host registered, with its cap and its dashboard.
    // After 30 s, the hosts listed then: the assertions below say what is missing.
    let (Ok(hosts) | Err(hosts)) = until_read(
        Duration::from_secs(30),
        || async {
            let listing = call_ok(&client, "task_list", json!({})).await;
            listing["queue"]["hosts"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        },
        |hosts| hosts.len() == HOSTS.len(),
    )
    .await;
    let seen: Vec<(&str, u64, bool)> = hosts
        .iter()
        .map(|h| {
            (
                h["name"].as_str().unwrap(),
                h["cap"].as_u64().unwrap(),
                h["up"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![("a", 2, true), ("b", 2, true), ("c", 3, true)],
        "{hosts:#?}"
    );
    assert_eq!(hosts[1]["url"], json!(servers[1].base_url()));

    call_ok(&client, "queue_configure", json!({"max_concurrent": 6})).await;
    let tasks: Vec<Value> = (0..TASKS)
        .map(|n| {
            json!({
                "title": format!("team task {n}"),
                "description": "Think, then finish lab:think=4 lab:complete=done",
                "project_path": project,
            })
        })
        .collect();
    let added = call_ok(&client, "task_add", json!({ "tasks": tasks })).await;
    assert_eq!(added["added"].as_array().unwrap().len(), TASKS);

    // A watcher samples the running tasks per host all along.
    let peaks: Arc<Mutex<BTreeMap<String, usize>>> = Arc::default();
    let watching = Arc::new(AtomicBool::new(true));
    let watcher = {
        let (peaks, watching, port) = (peaks.clone(), watching.clone(), postgres.port);
        std::thread::spawn(move || {
            while watching.load(Ordering::Relaxed) {
                let output = std::process::Command::new("psql")
                    .args(["-X", "-A", "-t", "-h", "127.0.0.1", "-p", &port.to_string()])
                    .args(["-U", "drydock", "-d", "team", "-c"])
                    .arg(
                        "SELECT coalesce(host, 'team') || '=' || count(*) FROM drydock.tasks \
                         WHERE state = 'running' GROUP BY ROLLUP (host)",
                    )
                    .output()
                    .unwrap();
                let mut peaks = peaks.lock().unwrap();
                for line in String::from_utf8_lossy(&output.stdout).lines() {
                    if let Some((host, n)) = line.split_once('=') {
                        let peak = peaks.entry(host.to_string()).or_default();
                        *peak = (*peak).max(n.parse().unwrap());
                    }
                }
                drop(peaks);
                std::thread::sleep(Duration::from_millis(100));
            }
        })
    };
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;

    // Host c is killed while it runs tasks.
    until(
        "host c running a task, a few done",
        Duration::from_secs(240),
        &postgres,
        |now| count(now, "done") >= 3 && now.values().any(|(s, h, _)| s == "running" && h == "c"),
    )
    .await;
    servers[2].kill_now();
    let on_c: BTreeSet<String> = tasks_now(&postgres, "team")
        .into_iter()
        .filter(|(_, (state, host, _))| state == "running" && host == "c")
        .map(|(id, _)| id)
        .collect();
    assert!(!on_c.is_empty());
    let c_sessions: Vec<String> = tmux_sessions(tmux_dir.path())
        .into_iter()
        .filter(|s| on_c.iter().any(|id| s.ends_with(id.as_str())))
        .collect();

    // Its tasks are taken over once its lease ran out, and done elsewhere.
    until(
        "host c's tasks taken over",
        Duration::from_secs(180),
        &postgres,
        |now| {
            on_c.iter().all(|id| {
                now.get(id)
                    .is_some_and(|(_, host, epoch)| host != "c" && *epoch >= 2)
            })
        },
    )
    .await;

    // The database restarts under the two hosts left.
    postgres.restart_with(Duration::from_secs(2), || ());
    until(
        "half the tasks done after the restart",
        Duration::from_secs(240),
        &postgres,
        |now| count(now, "done") >= TASKS / 2,
    )
    .await;

    // Host c comes back: it stops its old agents and completes nothing of theirs.
    servers[2] = start(2);
    until_showing(
        "every task done",
        Duration::from_secs(420),
        &postgres,
        Some(tmux_dir.path()),
        |now| {
            assert_eq!(count(now, "failed"), 0, "no task fails: {now:?}");
            count(now, "done") == TASKS
        },
    )
    .await;
    watching.store(false, Ordering::Relaxed);
    watcher.join().unwrap();

    let peaks = peaks.lock().unwrap().clone();
    assert!(
        peaks.get("team").copied().unwrap_or(0) <= 6,
        "team cap: {peaks:?}"
    );
    for (name, cap) in HOSTS {
        assert!(
            peaks.get(name).copied().unwrap_or(0) <= cap as usize,
            "{name}'s cap: {peaks:?}"
        );
    }
    let final_tasks = tasks_now(&postgres, "team");
    let by_host: BTreeSet<&str> = final_tasks.values().map(|(_, h, _)| h.as_str()).collect();
    assert!(
        by_host.contains("a") && by_host.contains("b"),
        "{final_tasks:?}"
    );
    for id in &on_c {
        let shown = call_ok(&client, "task_show", json!({"task_id": id})).await;
        let task = &shown["task"];
        assert_eq!(task["state"], "done", "{task:#}");
        assert_eq!(task["summary"], "LAB-SUMMARY done", "{task:#}");
        assert_eq!(task["attempts"], 2, "taken over once: {task:#}");
        assert!(task["epoch"].as_i64().unwrap() >= 2, "{task:#}");
    }
    // A task claimed again was lost first: once per claim after the first (a host that
    // was slow to renew its lease on this busy machine may lose one too).
    for id in final_tasks.keys() {
        let shown = call_ok(&client, "task_show", json!({"task_id": id})).await;
        let task = &shown["task"];
        assert_eq!(task["attempts"], task["epoch"], "{task:#}");
        assert_eq!(task["summary"], "LAB-SUMMARY done", "{task:#}");
    }
    // The killed host's agents (its tasks' first claims, `drydock-task-ID`) were stopped;
    // the claims that took the tasks over ran beside them in sessions of their own.
    until_read(
        Duration::from_secs(60),
        || async { tmux_sessions(tmux_dir.path()) },
        |sessions| {
            !on_c
                .iter()
                .any(|id| sessions.iter().any(|s| s.ends_with(id.as_str())))
        },
    )
    .await
    .unwrap_or_else(|sessions| panic!("c's old sessions {c_sessions:?} still there: {sessions:?}"));

    // Every agent ends with its task: finished ones when their session closes after the
    // grace period, the killed host's when it came back.
    let gone = eventually(Duration::from_secs(60), || {
        claude_processes(&home).is_empty()
    })
    .await;
    assert!(
        gone,
        "agents left running: {:?}; the tasks: {final_tasks:?}; sessions: {:?}",
        claude_processes(&home),
        tmux_sessions(tmux_dir.path())
    );
    drop(client);
    drop(servers);
    no_agent_left(&home, tmux_dir.path(), "after the team's run").await;
}

/// The tmux sessions of the drydock tmux server under `tmux_dir` (none when it is gone).
pub fn tmux_sessions(tmux_dir: &Path) -> Vec<String> {
    let output = std::process::Command::new("tmux")
        .args(["-L", "drydock", "list-sessions", "-F", "#{session_name}"])
        .env("TMUX_TMPDIR", tmux_dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// Logs into `server`'s dashboard with the one-time URL of its banner; the cookie pair.
fn log_in(server: &Server) -> String {
    let base = server.base_url();
    let login = server
        .banner
        .lines()
        .find_map(|line| line.strip_prefix("dashboard: "))
        .expect("the banner names the dashboard");
    let (status, cookie, _) = get(&base, login.trim_start_matches(&base), None);
    assert_eq!(status, 303);
    cookie.unwrap().split(';').next().unwrap().to_string()
}

/// Two hosts with tokens share a queue: each one's queue lists both, and a person logged
/// into one opens the other's dashboard through a one-time code that works once.
#[tokio::test(flavor = "multi_thread")]
async fn a_hosts_dashboard_opens_another_hosts_terminals_with_a_one_time_code() {
    let postgres = Postgres::start();
    let url = postgres.database("viewers");
    let config = |name: &str| {
        format!(
            "token = \"token-{name}\"\n[tasks]\nstore = \"{url}\"\nhost = \"{name}\"\nlease_s = 3\n"
        )
    };
    let a = Server::start_with_config(&config("a"));
    let b = Server::start_with_config(&config("b"));
    let client = client_with_token(&Era::Modern, &a.url, "token-a").await;
    until_read(
        Duration::from_secs(30),
        || call_ok(&client, "task_list", json!({})),
        |listing| {
            let names: Vec<&str> = listing["queue"]["hosts"]
                .as_array()
                .map(|hosts| hosts.iter().filter_map(|h| h["name"].as_str()).collect())
                .unwrap_or_default();
            names == ["a", "b"]
        },
    )
    .await
    .unwrap_or_else(|listing| panic!("both hosts listed: {listing:#}"));

    let base_a = a.base_url();
    assert_eq!(
        get(&base_a, "/hosts/b/open", None).0,
        401,
        "behind a's login"
    );
    let cookie_a = log_in(&a);
    let (status, _, to_b) = get(&base_a, "/hosts/b/open", Some(&cookie_a));
    assert_eq!(status, 303);
    let to_b = to_b.unwrap();
    let base_b = b.base_url();
    assert!(to_b.starts_with(&format!("{base_b}/login?code=")), "{to_b}");
    assert!(!to_b.contains("token-"), "no token in URLs: {to_b}");
    let path = to_b.trim_start_matches(&base_b).to_string();
    let (status, cookie_b, home) = get(&base_b, &path, None);
    assert_eq!((status, home.as_deref()), (303, Some("/")));
    let cookie_b = cookie_b.unwrap().split(';').next().unwrap().to_string();
    assert_eq!(
        get(&base_b, "/", Some(&cookie_b)).0,
        200,
        "in b's dashboard"
    );
    assert_eq!(get(&base_b, &path, None).0, 401, "the code works once");
    let (status, _, _) = get(&base_a, "/hosts/a/open", Some(&cookie_a));
    assert_eq!(status, 303, "its own host is its own page");
    assert_eq!(get(&base_a, "/hosts/nope/open", Some(&cookie_a)).0, 404);
    // A code issued for b is no key to a.
    let (_, _, again) = get(&base_a, "/hosts/b/open", Some(&cookie_a));
    let code = again.unwrap().split("code=").nth(1).unwrap().to_string();
    assert_eq!(get(&base_a, &format!("/login?code={code}"), None).0, 401);
}

/// A host started while the shared queue's database is down serves anyway, and registers
/// (and can be seen by the team) once the database is back.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_started_while_the_database_is_down_joins_once_it_is_back() {
    let mut postgres = Postgres::start();
    let url = postgres.database("late");
    let config = format!("[tasks]\nstore = \"{url}\"\nhost = \"late\"\nlease_s = 3\n");
    let server = postgres.restart_with(Duration::from_secs(3), || {
        Server::start_with_config(&config)
    });
    let client = modern_client(&server.url).await;
    until_read(
        Duration::from_secs(30),
        || async { text_of(&call(&client, "task_list", json!({})).await) },
        |text| text.contains("host late: up"),
    )
    .await
    .unwrap_or_else(|text| panic!("the host never joined: {text}"));
}

/// A task queued on one machine names its project by its root's name and its path below it;
/// a host whose own root of that name holds the project runs it there, in its own checkout.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_runs_a_task_queued_elsewhere_in_its_own_copy_of_the_project() {
    let postgres = Postgres::start();
    let url = postgres.database("places");
    let (cli, home, _fake, tmux_dir) = claude_home("claude-places");
    repository(&home.project);
    // Host b's root is the folder its copy of the project lies in.
    let root_b = home.project.parent().unwrap().canonicalize().unwrap();
    let root_name = root_b.file_name().unwrap().to_str().unwrap().to_string();
    let project_name = home
        .project
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let config_b = format!(
        "[tasks]\nstore = \"{url}\"\nhost = \"b\"\nlease_s = 3\ngrace_s = 1\nworktrees = true\n"
    );
    let root_arg = root_b.display().to_string();
    let b = spawning_server_with(
        &home,
        &cli,
        tmux_dir.path(),
        &config_b,
        &["--allow-root", &root_arg],
    );

    // Machine a has its own clone under a root of the same name, elsewhere.
    let machine_a = tempfile::tempdir().unwrap();
    let root_a = machine_a.path().canonicalize().unwrap().join(&root_name);
    std::fs::create_dir_all(&root_a).unwrap();
    let project_a = root_a.join(&project_name);
    git(
        &root_a,
        &["clone", "-q", home.project.to_str().unwrap(), &project_name],
    );
    let config_a = machine_a.path().join("drydock.toml");
    std::fs::write(
        &config_a,
        format!("[tasks]\nstore = \"{url}\"\nhost = \"a\"\n"),
    )
    .unwrap();
    let bin = cli.program.parent().unwrap().display().to_string();
    let added = drydock_command()
        .args(["call", "task_add", "--config"])
        .arg(&config_a)
        .args(["--allow-root", root_a.to_str().unwrap()])
        .arg(
            json!({"tasks": [{
                "title": "from machine a",
                "description": "Think, then finish lab:think=1 lab:complete=done",
                "project_path": project_a,
            }]})
            .to_string(),
        )
        .env("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap()))
        .output()
        .unwrap();
    assert!(added.status.success(), "{added:?}");
    let added: Value = serde_json::from_slice(&added.stdout).unwrap();
    let id = added["added"][0]["id"].as_str().unwrap().to_string();

    let client = modern_client(&b.url).await;
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;
    let task = until_read(
        Duration::from_secs(120),
        || async { call_ok(&client, "task_show", json!({"task_id": id})).await["task"].clone() },
        |task| {
            // Any state but these on the way is a failure at once.
            assert!(
                matches!(task["state"].as_str(), Some("queued" | "running" | "done")),
                "{task:#}"
            );
            task["state"] == "done"
        },
    )
    .await
    .unwrap_or_else(|task| panic!("never done: {task:#}"));
    assert_eq!(task["host"], "b");
    assert_eq!(
        task["project_path"],
        json!(home.project.canonicalize().unwrap()),
        "b's own copy"
    );
    assert_eq!(
        task["place"],
        json!({"root": root_name, "path": project_name})
    );
    let worktree = task["isolation"]["repo"].as_str().unwrap_or_default();
    assert_eq!(
        Path::new(worktree),
        home.project.canonicalize().unwrap(),
        "its worktree is of b's checkout: {task:#}"
    );
    let gone = eventually(Duration::from_secs(60), || {
        claude_processes(&home).is_empty()
    })
    .await;
    assert!(
        gone,
        "its agent ended with its session: {:?}",
        claude_processes(&home)
    );
    drop(client);
    drop(b);
    no_agent_left(&home, tmux_dir.path(), "after the task from machine a").await;
}

/// A task named by its git remote alone, queued from a machine with no copy of the project:
/// a host allowed to clone that remote clones it into its data directory, runs the task in a
/// worktree of the clone, fetches the clone again for the next task (which starts from a
/// branch only the remote had), and refuses to merge a result into the clone. A remote no
/// host may clone stays queued.
#[tokio::test(flavor = "multi_thread")]
async fn a_host_clones_a_task_named_by_its_remote_and_only_a_remote_it_may_clone() {
    let postgres = Postgres::start();
    let url = postgres.database("remotes");
    let (cli, home, _fake, tmux_dir) = claude_home("claude-remotes");
    repository(&home.project);
    let remotes = tempfile::tempdir().unwrap();
    let remotes = remotes.path().canonicalize().unwrap();
    let origin = remotes.join("lab project.git");
    git(
        &remotes,
        &[
            "clone",
            "-q",
            "--bare",
            home.project.to_str().unwrap(),
            origin.to_str().unwrap(),
        ],
    );
    let remote = format!("file://{}", origin.display());
    let elsewhere = format!("file://{}/other/lab.git", remotes.display());
    let config_b = format!(
        "[tasks]\nstore = \"{url}\"\nhost = \"b\"\nlease_s = 3\ngrace_s = 1\nrepositories = [\"file://{}/*.git\"]\n[tasks.policies]\ntrusted = [\"Bash\"]\n",
        remotes.display()
    );
    let b = spawning_server_with(&home, &cli, tmux_dir.path(), &config_b, &[]);

    // Machine a has no copy of the project: it queues by remote alone.
    let machine_a = tempfile::tempdir().unwrap();
    let config_a = machine_a.path().join("drydock.toml");
    std::fs::write(
        &config_a,
        format!(
            "[tasks]\nstore = \"{url}\"\nhost = \"a\"\n[tasks.policies]\ntrusted = [\"Bash\"]\n"
        ),
    )
    .unwrap();
    let bin = cli.program.parent().unwrap().display().to_string();
    let add_on_a = |task: Value| {
        let added = drydock_command()
            .args(["call", "task_add", "--config"])
            .arg(&config_a)
            .args(["--allow-root", machine_a.path().to_str().unwrap()])
            .arg(json!({"tasks": [task]}).to_string())
            .env("PATH", format!("{bin}:{}", std::env::var("PATH").unwrap()))
            .output()
            .unwrap();
        assert!(added.status.success(), "{added:?}");
        let added: Value = serde_json::from_slice(&added.stdout).unwrap();
        added["added"][0]["id"].as_str().unwrap().to_string()
    };
    let stranger = add_on_a(json!({
        "title": "from a remote nobody clones",
        "description": "lab:complete=done",
        "repository": elsewhere,
    }));
    let first = add_on_a(json!({
        "title": "from the remote",
        "description": "Edit lab:files=remote.txt lab:complete=done",
        "repository": remote,
        "auto_approve": "trusted",
    }));

    let client = modern_client(&b.url).await;
    call_ok(&client, "queue_configure", json!({"mode": "auto"})).await;
    let done = |id: String| {
        let client = &client;
        async move {
            until_read(
                Duration::from_secs(120),
                || call_ok(client, "task_show", json!({"task_id": id})),
                |shown| {
                    // Any state but these on the way is a failure at once.
                    assert!(
                        matches!(
                            shown["task"]["state"].as_str(),
                            Some("queued" | "running" | "done")
                        ),
                        "{shown:#}"
                    );
                    let checks = &shown["task"]["review"]["checks"]["state"];
                    shown["task"]["state"] == "done" && (checks == "done" || checks == "skipped")
                },
            )
            .await
            .unwrap_or_else(|shown| panic!("never done: {shown:#}"))
        }
    };
    let shown = done(first.clone()).await;
    let task = &shown["task"];
    assert_eq!(task["host"], "b");
    assert_eq!(task["repository"], json!(remote));
    let clone = Path::new(task["project_path"].as_str().unwrap()).to_path_buf();
    assert!(
        clone.starts_with(b.data_dir.path().join("clones")),
        "b's clone, in its data directory: {task:#}"
    );
    assert_eq!(task["isolation"]["repo"], json!(clone));
    let files: Vec<&str> = task["review"]["files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["path"].as_str().unwrap())
        .collect();
    assert!(files.contains(&"remote.txt"), "{task:#}");
    assert_eq!(
        git(&clone, &["status", "--porcelain"]),
        "",
        "nobody works in the clone itself"
    );
    let merge = call_err(&client, "task_merge", json!({"task_id": first})).await;
    assert!(
        merge.contains("push its branch") && merge.contains(&format!("drydock/task-{first}")),
        "{merge}"
    );

    // The remote gains a branch; the next task starts from it, in the same clone, fetched.
    git(&home.project, &["checkout", "-q", "-b", "feature"]);
    std::fs::write(home.project.join("feature.txt"), "a feature\n").unwrap();
    git(&home.project, &["add", "-A"]);
    git(&home.project, &["commit", "-qm", "a feature"]);
    git(
        &home.project,
        &["push", "-q", origin.to_str().unwrap(), "feature"],
    );
    let feature = git(&home.project, &["rev-parse", "HEAD"]);
    let second = add_on_a(json!({
        "title": "from the remote's feature branch",
        "description": "lab:complete=done",
        "repository": remote,
        "base": "feature",
    }));
    let shown = done(second).await;
    let task = &shown["task"];
    assert_eq!(task["project_path"], json!(clone), "the same clone");
    assert_eq!(
        task["isolation"]["base_sha"],
        json!(feature.trim()),
        "{task:#}"
    );

    let stranger = call_ok(&client, "task_show", json!({"task_id": stranger})).await;
    assert_eq!(stranger["task"]["state"], "queued", "{stranger:#}");
    assert_eq!(
        stranger["task"]["project_path"],
        json!(elsewhere),
        "a remote stands for its project until a host clones it"
    );
    drop(client);
    drop(b);
    no_agent_left(&home, tmux_dir.path(), "after the tasks from a remote").await;
}

/// Issue 49: a project's daily budget is the queue's, so every host holds to it: once the
/// project's tasks spent it, its new tasks wait on both hosts, with the reason in the queue's
/// status, while another project's start.
#[tokio::test(flavor = "multi_thread")]
async fn a_projects_daily_budget_spent_holds_its_new_starts_on_every_host_but_no_other() {
    let postgres = Postgres::start();
    let url = postgres.database("daily");
    let (cli, home, _fake, tmux_dir) = claude_home("claude-daily");
    std::fs::create_dir_all(home.project.join("other")).unwrap();
    std::fs::write(home.project.join("other/notes.md"), "another project\n").unwrap();
    repository(&home.project);
    let a = spawning_server(&home, &cli, tmux_dir.path(), &config(&url, "a", 1));
    let b = spawning_server(&home, &cli, tmux_dir.path(), &config(&url, "b", 1));
    let (on_a, on_b) = (modern_client(&a.url).await, modern_client(&b.url).await);
    let (project, other) = (
        path_arg(&home.project),
        path_arg(&home.project.join("other")),
    );

    // Bad input changes nothing.
    for (daily, needle) in [
        (
            json!({"project_path": project, "tokens": 0}),
            "daily_budget.tokens is 0",
        ),
        (
            json!({"project_path": "/", "tokens": 10}),
            "daily_budget.project_path",
        ),
        (json!({"usd": -1.0}), "daily_budget.usd is -1"),
    ] {
        let refused = call_err(&on_a, "queue_configure", json!({"daily_budget": daily})).await;
        assert!(refused.contains(needle), "{daily}: {refused}");
    }
    let listed = call_ok(&on_b, "task_list", json!({})).await;
    assert!(listed["queue"]["daily_budgets"].is_null(), "{listed:#}");

    call_ok(
        &on_a,
        "queue_configure",
        json!({"mode": "auto", "max_concurrent": 2,
               "daily_budget": {"project_path": project, "tokens": 100}}),
    )
    .await;
    let listed = call_ok(&on_b, "task_list", json!({})).await;
    assert_eq!(
        listed["queue"]["daily_budgets"],
        json!({"projects": {"project": {"tokens": 100}}}),
        "host b holds to host a's budget: {listed:#}"
    );

    // The project's first task spends more than its day's budget.
    let first = json!({"title": "first", "project_path": project,
                       "description": "Finish lab:complete=done"});
    let added = call_ok(&on_a, "task_add", json!({"tasks": [first]})).await;
    let first = added["added"][0]["id"].as_str().unwrap().to_string();
    until_read(
        Duration::from_secs(120),
        || async { call_ok(&on_b, "task_show", json!({"task_id": first})).await["task"].clone() },
        |task| task["state"] == "done" && task["usage"]["attempts"][0]["tokens"].is_object(),
    )
    .await
    .unwrap_or_else(|task| panic!("the first task never ended: {task:#}"));

    // Its next task waits, on both hosts; another project's starts and ends.
    let next = json!({"title": "next", "project_path": project, "description": "Finish lab:complete=done"});
    let elsewhere = json!({"title": "elsewhere", "project_path": other, "description": "Finish lab:complete=done"});
    let added = call_ok(&on_b, "task_add", json!({"tasks": [next, elsewhere]})).await;
    let (next, elsewhere) = (
        added["added"][0]["id"].as_str().unwrap().to_string(),
        added["added"][1]["id"].as_str().unwrap().to_string(),
    );
    until_read(
        Duration::from_secs(120),
        || async {
            call_ok(&on_a, "task_show", json!({"task_id": elsewhere})).await["task"].clone()
        },
        |task| task["state"] == "done",
    )
    .await
    .unwrap_or_else(|task| panic!("the other project's task never ended: {task:#}"));
    for client in [&on_a, &on_b] {
        let listed = call_ok(client, "task_list", json!({})).await;
        let held = listed["queue"]["held"][0].as_str().unwrap_or_default();
        assert!(
            held.starts_with("project project spent ") && held.contains("wait for tomorrow"),
            "{listed:#}"
        );
        let waiting = listed["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == next.as_str())
            .unwrap();
        assert_eq!(waiting["state"], "queued", "{listed:#}");
    }

    // A larger budget lets it start.
    call_ok(
        &on_b,
        "queue_configure",
        json!({"daily_budget": {"project_path": project, "tokens": 1_000_000}}),
    )
    .await;
    until_read(
        Duration::from_secs(120),
        || async { call_ok(&on_a, "task_show", json!({"task_id": next})).await["task"].clone() },
        |task| task["state"] == "done",
    )
    .await
    .unwrap_or_else(|task| panic!("the held task never ran: {task:#}"));
    no_agent_left(&home, tmux_dir.path(), "after the daily budget").await;
}
