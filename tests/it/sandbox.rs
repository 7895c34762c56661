//! A task's agent in its sandbox, on the real Claude Code against the scripted fake: under a
//! policy that approves Bash it tries every way out it has (the person's checkout, their
//! home and secrets, another host, drydock's keys and unscoped routes, git hooks and an
//! fsmonitor for drydock to run, a build script and a test that drydock's checks run), and
//! every one fails; the same task still edits, commits, compiles and tests through drydock,
//! and its result is reviewed and merged.

use std::net::TcpListener;
use std::path::Path;

use base64::Engine;
use serde_json::{Value, json};

use crate::agent_kit::home::sh_quote;
use crate::mcp_spawn::spawning_server_with;
use crate::mcp_tasks::{claude_home, no_agent_left};
use crate::support::*;
use crate::task_worktrees::{repository, until_reviewed};

const SECRET: &str = "lab-secret-key-material";
/// A secret no command names: only a link the agent made leads to it.
const PLANTED_SECRET: &str = "lab-planted-secret-material";

fn encoded(script: &str) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(script)
}

/// A bash function that records whether each attempt got through, one line each.
const TRY: &str = "attempt() { if bash -c \"$2\" >/dev/null 2>&1; then echo \"$1: GOT THROUGH\"; \
                   else echo \"$1: refused\"; fi >> escape.txt; }\n";

/// A raw HTTP request to drydock's port as the sandbox sees it: its status line's code.
fn http_status(port: u16, request: &str) -> String {
    format!(
        "exec 3<>/dev/tcp/127.0.0.1/{port} && printf {} >&3 && head -1 <&3 | grep -q ' 200 '",
        // printf makes the CR LFs: Claude Code refuses a command with control characters.
        sh_quote(&request.replace("\r\n", "\\r\\n"))
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn an_agent_that_approves_bash_cannot_leave_its_sandbox_and_still_does_its_work() {
    let (cli, home, fake, tmux_dir) = claude_home("claude-sandbox");
    let project = home.project.clone();
    std::fs::write(
        project.join("Cargo.toml"),
        "[package]\nname = \"lab\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::create_dir(project.join("src")).unwrap();
    std::fs::write(
        project.join("src/lib.rs"),
        "pub fn one() -> u32 {\n    1\n}\n",
    )
    .unwrap();
    std::fs::write(project.join(".gitignore"), "target\n").unwrap();
    repository(&project);
    std::fs::create_dir_all(home.home.join(".ssh")).unwrap();
    std::fs::write(home.home.join(".ssh/id_lab"), SECRET).unwrap();
    std::fs::write(home.home.join(".ssh/id_planted"), PLANTED_SECRET).unwrap();
    std::fs::write(home.home.join(".bashrc"), "# the person's\n").unwrap();
    let forbidden = TcpListener::bind("127.0.0.1:0").unwrap();
    let forbidden_port = forbidden.local_addr().unwrap().port();
    let markers = tempfile::tempdir().unwrap();
    let marker = |name: &str| markers.path().join(name).display().to_string();

    let config = "[terminal]\nshell = \"bash\"\n[tasks]\ngrace_s = 0\nnice = 10\n[tasks.policies]\n\
                  with_bash = [\"Bash\", \"Read\", \"Edit\", \"Write\", \"mcp__drydock__compile\", \"mcp__drydock__test\"]\n";
    let server = spawning_server_with(&home, &cli, tmux_dir.path(), config, &[]);
    let client = modern_client(&server.url).await;
    let port: u16 = server
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let data = server.data_dir.path().display().to_string();
    let model_port = fake
        .url()
        .rsplit(':')
        .next()
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    let (project_text, home_text) = (
        project.display().to_string(),
        home.home.display().to_string(),
    );

    let mut escapes = format!("pwd; ls -A\n{TRY}");
    for (what, command) in [
        (
            "write the checkout",
            format!("echo planted >> '{project_text}/README.md'"),
        ),
        (
            "plant a hook in the repository",
            format!(
                "printf '#!/bin/sh\\ntouch {}\\n' > '{project_text}/.git/hooks/post-merge' && chmod +x '{project_text}/.git/hooks/post-merge'",
                marker("hook")
            ),
        ),
        (
            "set an fsmonitor",
            format!("git config core.fsmonitor 'touch {}'", marker("fsmonitor")),
        ),
        (
            "read a secret in the home",
            format!("grep -q {SECRET} '{home_text}/.ssh/id_lab'"),
        ),
        (
            "reach another host",
            format!("exec 3<>/dev/tcp/127.0.0.1/{forbidden_port}"),
        ),
        (
            "reach another host through the proxy",
            format!(
                "exec 3<>/dev/tcp/127.0.0.1/3128 && printf 'CONNECT 127.0.0.1:{forbidden_port} HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n' >&3 \
             && head -1 <&3 | grep -q ' 200 '"
            ),
        ),
        (
            // Issue 48: the model API's connection, allowed, asked for another site: the
            // proxy speaks to the model API itself, whose requests name it alone (the fake's
            // log is checked below: it never sees the forged name).
            "reach another site through the model API's connection",
            format!(
                "exec 3<>/dev/tcp/127.0.0.1/{model_port} && printf 'GET / HTTP/1.1\\r\\nHost: forged.example\\r\\nConnection: close\\r\\n\\r\\n' >&3 \
                 && head -1 <&3 >/dev/null; false"
            ),
        ),
        (
            // Issue 48: the model API's key is drydock's; the agent has a placeholder. (The
            // pattern does not match itself: the agent's transcript holds this command.)
            "read the model API's key",
            "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q 'lab-t[o]ken' || grep -rqs 'lab-t[o]ken' ~"
                .to_string(),
        ),
        (
            "read the local endpoint's token",
            format!("cat '{data}/local-endpoint.json'"),
        ),
        ("read a task's token", format!("cat {data}/tasks/*/token")),
        (
            "queue a task without a token",
            http_status(
                port,
                "POST /tasks/task_add HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}",
            ),
        ),
        (
            "list the approvals",
            http_status(
                port,
                "GET /approvals HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            ),
        ),
        (
            "open the dashboard",
            http_status(
                port,
                "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            ),
        ),
        (
            "see drydock's process",
            "ls /proc/*/cmdline | xargs cat 2>/dev/null | tr '\\0' ' ' | grep -q '[d]rydock serve'"
                .to_string(),
        ),
    ] {
        escapes.push_str(&format!(
            "attempt {} {}\n",
            sh_quote(what),
            sh_quote(&command)
        ));
    }
    escapes.push_str(&format!("echo planted >> '{home_text}/.bashrc'\n"));
    // What the agent starts runs at the tasks' niceness, below drydock's.
    escapes.push_str("cut -d' ' -f19 /proc/self/stat > niceness.txt\n");
    // And in a session of its own (Claude Code's commands are), its autogroup is held there
    // too, within a few seconds (drydock looks every second).
    escapes.push_str(
        "for i in $(seq 100); do grep -q ' nice 10$' /proc/self/autogroup && break; sleep 0.1; done\n\
         cut -d' ' -f3 /proc/self/autogroup > autogroup.txt\n",
    );
    // The work, with a build script and a test that try to leave a mark outside.
    escapes.push_str(&format!(
        "printf 'pub fn two() -> u32 {{\\n    2\\n}}\\n' >> src/lib.rs\n\
         printf 'fn main() {{ let _ = std::fs::write(\"{}\", \"x\"); }}\\n' > build.rs\n\
         mkdir -p tests && printf '#[test]\\nfn leaves_a_mark() {{ let _ = std::fs::write(\"{}\", \"x\"); }}\\n' > tests/mark.rs\n\
         git add -A && git commit -qm 'the lab adds two'\ncat escape.txt; git log --oneline -3\n",
        marker("build-script"),
        marker("test")
    ));
    let work = format!(
        "Try to leave. lab:run={} lab:build lab:complete=done",
        encoded(&escapes)
    );
    let breaker = format!(
        "rm .git && git init -q . && git config core.fsmonitor 'touch {}' \
         && printf '#!/bin/sh\\ntouch {}\\n' > .git/hooks/post-commit && chmod +x .git/hooks/post-commit",
        marker("fsmonitor-2"),
        marker("hook-2")
    );
    let breaker = format!("Break git. lab:run={} lab:complete=done", encoded(&breaker));
    // Issue 48: what drydock reads and runs outside the sandbox, planted. A tracked link and
    // a FIFO for the project memory's snapshot, the private git's HEAD made a link to the
    // secret for the task's end, then a repository of the agent's own in place of the
    // worktree's `.git` with a filter, an external diff and a textconv for the conflict
    // forecast (which looks every 5 s: the agent waits 12 s), then drydock's build tools.
    let planter = format!(
        "ln -s '{home_text}/.ssh/id_planted' key.txt && mkfifo pipe.txt && git add key.txt && git commit -qm link \
         && gitdir=$(git rev-parse --absolute-git-dir) && rm -f \"$gitdir/HEAD\" && ln -s '{home_text}/.ssh/id_planted' \"$gitdir/HEAD\" \
         && rm .git && git init -q . && git config filter.x.clean 'touch {m}-filter; cat' \
         && git config diff.external 'touch {m}-external' && git config diff.x.textconv 'touch {m}-textconv; cat' \
         && git config core.worktree / && printf '* filter=x diff=x\\n' > .gitattributes \
         && echo changed >> README.md && timeout 12 tail -f /dev/null; true",
        m = marker("content")
    );
    let planter = format!(
        "Plant. lab:run={} lab:build lab:complete=done",
        encoded(&planter)
    );
    // A `.git` that is a FIFO, then drydock's build tools, which must still answer.
    let fifo = format!(
        "Stall drydock. lab:run={} lab:build lab:complete=done",
        encoded("rm .git && mkfifo .git")
    );
    let project_arg = path_arg(&project);
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [
            {"title": "escape", "project_path": project_arg, "auto_approve": "with_bash", "description": work},
            {"title": "break git", "project_path": project_arg, "auto_approve": "with_bash", "description": breaker},
            {"title": "plant", "project_path": project_arg, "auto_approve": "with_bash", "description": planter},
            {"title": "stall", "project_path": project_arg, "auto_approve": "with_bash", "description": fifo},
        ]}),
    )
    .await;
    let id = |n: usize| added["added"][n]["id"].as_str().unwrap().to_string();
    let (escape, breaker, planted, stalled) = (id(0), id(1), id(2), id(3));
    call_ok(&client, "queue_configure", json!({"max_concurrent": 4})).await;
    for task in [&escape, &breaker, &planted, &stalled] {
        let started = call_ok(&client, "task_start", json!({"task_id": task})).await;
        assert_eq!(started["task"]["state"], "running", "{started:#}");
        let confinement = started["task"]["isolation"]["confinement"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(confinement.starts_with("bubblewrap"), "{started:#}");
    }

    let reviewed = until_reviewed(&client, &escape).await;
    let task = &reviewed["task"];
    assert_eq!(task["state"], "done", "{reviewed:#}");
    let worktree = Path::new(task["isolation"]["path"].as_str().unwrap());
    let report = std::fs::read_to_string(worktree.join("escape.txt")).unwrap_or_default();
    assert_eq!(
        report.lines().count(),
        14,
        "every attempt was made: {report}\ntool results: {:#}",
        Value::from(tool_results(&fake))
    );
    assert_eq!(
        std::fs::read_to_string(worktree.join("niceness.txt")).unwrap_or_default(),
        "10\n",
        "the agent's commands run at [tasks] nice"
    );
    if Path::new("/proc/self/autogroup").exists() {
        assert_eq!(
            std::fs::read_to_string(worktree.join("autogroup.txt")).unwrap_or_default(),
            "10\n",
            "the agent's commands' session is held at [tasks] nice"
        );
    }
    let through: Vec<&str> = report
        .lines()
        .filter(|l| !l.ends_with(": refused"))
        .collect();
    assert!(
        through.is_empty(),
        "ways out of the sandbox: {through:?}\n{report}"
    );
    listener_saw_nobody(&forbidden);
    // The key was the proxy's to add: every turn of every agent came with it.
    let turns = fake.turns();
    assert!(!turns.is_empty());
    for turn in &turns {
        assert_eq!(turn.header("authorization"), Some("Bearer lab-token"));
    }
    let forged: Vec<_> = fake
        .requests()
        .into_iter()
        .filter(|r| r.header("host") != Some(&format!("127.0.0.1:{model_port}")))
        .map(|r| r.header("host").map(str::to_string))
        .collect();
    assert!(
        forged.is_empty(),
        "the model API heard of another site: {forged:?}"
    );
    assert_eq!(
        std::fs::read_to_string(project.join("README.md")).unwrap(),
        "a lab project\n"
    );
    assert_eq!(
        std::fs::read_to_string(home.home.join(".bashrc")).unwrap(),
        "# the person's\n",
        "the person's .bashrc"
    );
    // Its real work: committed, compiled and tested through drydock (in the sandbox too),
    // checked once done, and mergeable.
    let checks = &task["review"]["checks"];
    assert_eq!(checks["state"], "done", "{reviewed:#}");
    assert!(
        task["review"]["diff"]
            .as_str()
            .unwrap()
            .contains("+pub fn two()"),
        "{reviewed:#}"
    );
    let merged = call_ok(&client, "task_merge", json!({"task_id": escape})).await;
    assert!(merged.to_string().contains("merged"), "{merged:#}");
    assert!(
        std::fs::read_to_string(project.join("src/lib.rs"))
            .unwrap()
            .contains("pub fn two()")
    );

    let broken = until_reviewed(&client, &breaker).await;
    assert!(
        broken
            .to_string()
            .contains("not the file git writes in a worktree"),
        "drydock refused the .git the agent made: {broken:#}"
    );
    let planted = until_reviewed(&client, &planted).await;
    assert_eq!(planted["task"]["state"], "done", "{planted:#}");
    let stalled = until_reviewed(&client, &stalled).await;
    assert_eq!(stalled["task"]["state"], "done", "{stalled:#}");
    assert!(
        stalled
            .to_string()
            .contains("not the file git writes in a worktree"),
        "{stalled:#}"
    );
    // compile and test in three tasks (the escape's, the planter's, the FIFO's) answered
    // with their reports, none stalled by what the agent planted.
    let answered = regex::Regex::new(r#"\\"duration_ms\\":\d+"#).unwrap();
    let results = tool_results(&fake);
    let built: std::collections::BTreeSet<String> = results
        .iter()
        .map(Value::to_string)
        .filter(|result| answered.is_match(result))
        .collect();
    assert!(
        built.len() >= 6,
        "every build tool call answered: {results:#?}"
    );
    for (what, text) in [
        ("the planting task", planted.to_string()),
        ("what drydock keeps", kept_text(server.data_dir.path())),
    ] {
        assert!(
            !text.contains(PLANTED_SECRET),
            "{what} holds the secret the agent linked to"
        );
    }
    for name in [
        "hook",
        "fsmonitor",
        "build-script",
        "test",
        "fsmonitor-2",
        "hook-2",
        "content-filter",
        "content-external",
        "content-textconv",
    ] {
        assert!(
            !markers.path().join(name).exists(),
            "{name}: code the agent wrote ran outside its sandbox"
        );
    }
    no_agent_left(&home, tmux_dir.path(), "both tasks ended").await;
}

/// Every regular file under drydock's data directory, as text (links are not followed).
fn kept_text(data: &Path) -> String {
    walkdir::WalkDir::new(data)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_file())
        .filter_map(|entry| std::fs::read(entry.path()).ok())
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .collect()
}

/// What the agent's tools answered, from the conversation the fake was sent.
fn tool_results(fake: &crate::agent_kit::fake_anthropic::FakeAnthropic) -> Vec<Value> {
    fake.turns()
        .iter()
        .flat_map(|turn| {
            turn.body["messages"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|block| block["type"] == "tool_result")
        .map(|block| block["content"].clone())
        .collect()
}

fn listener_saw_nobody(listener: &TcpListener) {
    listener.set_nonblocking(true).unwrap();
    assert!(
        listener.accept().is_err(),
        "a host that is not allowed was reached"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_that_approves_bash_is_refused_where_no_sandbox_can_be_made() {
    let (cli, home, _fake, tmux_dir) = claude_home("claude-no-sandbox");
    repository(&home.project);
    // A PATH with git and Claude Code, and no bubblewrap.
    let bin = home.scratch().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for program in ["git", "tmux", "bash", "sh"] {
        let found = which(program);
        std::os::unix::fs::symlink(found, bin.join(program)).unwrap();
    }
    std::os::unix::fs::symlink(&cli.program, bin.join("claude")).unwrap();
    let config = "[tasks.policies]\nwith_bash = [\"Bash\"]\nread_only = [\"Read\"]\n";
    let server =
        crate::mcp_spawn::spawning_server_on_path(&home, &cli, tmux_dir.path(), config, &bin);
    let client = modern_client(&server.url).await;
    let task = |policy: &str| {
        json!({"tasks": [{"title": "t", "project_path": path_arg(&home.project), "auto_approve": policy,
                          "description": "lab:think=1"}]})
    };
    let refused = call_err(&client, "task_add", task("with_bash")).await;
    assert!(
        refused.contains("approves Bash without a person")
            && refused.contains("bubblewrap")
            && refused.contains("sandbox = false"),
        "{refused}"
    );
    let listed = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(
        listed["tasks"].as_array().map(Vec::len),
        Some(0),
        "{listed:#}"
    );
    // A policy without Bash is queued.
    call_ok(&client, "task_add", task("read_only")).await;
}

fn which(program: &str) -> std::path::PathBuf {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| panic!("{program} is not installed"))
}

/// Issue 48: Codex in its sandbox against the Responses fake, its provider's key named in its
/// own config (`env_key`) and held by drydock (`[tasks.sandbox_keys]`): the agent has a
/// placeholder, the fake hears the key, and what the agent spent is counted from its rollout.
#[tokio::test(flavor = "multi_thread")]
async fn codex_works_in_its_sandbox_through_the_proxy_without_its_key() {
    use crate::agent_kit::fake_openai::FakeOpenAi;
    use crate::agent_kit::home::{AgentHome, Cli};
    let cli = Cli::codex();
    let mut home = AgentHome::new("codex-sandbox");
    let fake = FakeOpenAi::start();
    home.prepare_codex(&fake.base_url());
    let tmux_dir = tempfile::tempdir().unwrap();
    let config = format!(
        "[tasks]\ngrace_s = 0\n[tasks.sandbox_keys]\nLAB_OPENAI_KEY = {:?}\n",
        fake.base_url()
    );
    let server = crate::mcp_spawn::spawning_server(&home, &cli, tmux_dir.path(), &config);
    let client = modern_client(&server.url).await;
    let added = call_ok(
        &client,
        "task_add",
        json!({"tasks": [{"title": "hello", "project_path": path_arg(&home.project),
                          "agent": "codex", "description": "Say hello from the sandbox"}]}),
    )
    .await;
    let id = added["added"][0]["id"].as_str().unwrap().to_string();
    let started = call_ok(&client, "task_start", json!({"task_id": id})).await;
    let confinement = started["task"]["isolation"]["confinement"]
        .as_str()
        .unwrap_or_default();
    assert!(confinement.starts_with("bubblewrap"), "{started:#}");
    assert!(
        confinement.contains("keys held by drydock: LAB_OPENAI_KEY"),
        "{confinement}"
    );

    let asked = eventually(std::time::Duration::from_secs(120), || {
        fake.prompts()
            .iter()
            .any(|p| p.contains("Say hello from the sandbox"))
    })
    .await;
    assert!(
        asked,
        "Codex never asked its model: {:#}\n{}",
        call_ok(&client, "task_show", json!({"task_id": id})).await,
        crate::mcp_spawn::screen_of(&client, &format!("task-{id}")).await
    );
    for turn in fake.turns() {
        assert_eq!(turn.header("authorization"), Some("Bearer lab-key"));
    }
    // Its answer is in: the task is stopped, and what it spent counted once its session closed.
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    call_ok(&client, "task_cancel", json!({"task_id": id})).await;
    let task = until_read(
        std::time::Duration::from_secs(60),
        || async { call_ok(&client, "task_show", json!({"task_id": id})).await["task"].clone() },
        |task| task["usage"].is_object(),
    )
    .await
    .unwrap_or_else(|task| panic!("never counted: {task:#}"));
    let turns = fake.turns().len() as u64;
    assert_eq!(
        task["usage"]["attempts"][0]["tokens"],
        json!({"gpt-lab": {"input": 100 * turns, "output": 20 * turns, "cache_read": 0, "cache_write": 0}}),
        "{task:#}"
    );
    assert!(
        task["usage"]["attempts"][0]["unpriced"] == json!(["gpt-lab"]),
        "{task:#}"
    );
    crate::mcp_spawn::kill_tmux(tmux_dir.path());
}
