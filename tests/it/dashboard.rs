//! The dashboard in a real Chromium (Debian's, through its chromedriver): a live terminal
//! typed into, a second page that sees the same screen, the tool feed, the queue form, stop;
//! and the guards: a cross-origin WebSocket is refused, a server with a token asks for its
//! one-time login.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::agent_kit::home::Cli;
use crate::chromium::Chromium;
use crate::mcp_agents::UsersTmux;
use crate::mcp_spawn::{claude_processes, kill_tmux, spawn_meanwhile, spawning_server};
use crate::mcp_tasks::claude_home;
use crate::support::*;
use crate::task_worktrees::repository;

const WITHIN: Duration = Duration::from_secs(30);

/// A WebSocket handshake for the dashboard with `origin`; the response's status line.
fn upgrade_status(base: &str, origin: &str) -> String {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let request = format!(
        "GET /dashboard/ws HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nOrigin: {origin}\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = [0u8; 512];
    let read = stream.read(&mut response).unwrap();
    let text = String::from_utf8_lossy(&response[..read]).into_owned();
    text.lines().next().unwrap_or_default().to_string()
}

/// `GET path` with `cookie`; the status code, the Set-Cookie and Location headers.
pub fn get(base: &str, path: &str, cookie: Option<&str>) -> (u16, Option<String>, Option<String>) {
    let host = base.trim_start_matches("http://");
    let mut stream = TcpStream::connect(host).unwrap();
    let cookie = cookie
        .map(|c| format!("Cookie: {c}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {host}\r\n{cookie}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response.split(' ').nth(1).unwrap().parse().unwrap();
    let header = |name: &str| {
        response.lines().find_map(|line| {
            let (key, value) = line.split_once(": ")?;
            key.eq_ignore_ascii_case(name).then(|| value.to_string())
        })
    };
    (status, header("set-cookie"), header("location"))
}

/// Rows and columns of `session` as drydock has them, and as `chromium`'s page draws it.
async fn sizes(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    chromium: &Chromium,
    session: &str,
) -> ((u64, u64), (u64, u64)) {
    let listed = call_ok(client, "terminal_list", json!({"session": session})).await;
    let info = &listed["sessions"][0];
    let page = chromium.eval(&format!(
        "const t = window.drydock.terminal({session:?}); return t ? [t.rows, t.cols] : null"
    ));
    (
        (
            info["rows"].as_u64().unwrap(),
            info["cols"].as_u64().unwrap(),
        ),
        (page[0].as_u64().unwrap_or(0), page[1].as_u64().unwrap_or(0)),
    )
}

/// Waits until drydock's size of `session` is not `before` and the page draws that size;
/// the size.
async fn resized_from(
    client: &rmcp::service::Peer<rmcp::RoleClient>,
    chromium: &Chromium,
    session: &str,
    before: (u64, u64),
) -> (u64, u64) {
    let deadline = Instant::now() + WITHIN;
    loop {
        let (drydock, page) = sizes(client, chromium, session).await;
        if drydock != before && drydock == page {
            return drydock;
        }
        assert!(
            Instant::now() < deadline,
            "{session} never left {before:?}: drydock {drydock:?}, page {page:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_types_into_a_live_terminal_and_watches_the_tool_feed_and_the_queue() {
    // Tasks need their agent's CLI: the pinned Claude Code (nothing starts it here).
    let claude = Cli::claude()
        .program
        .parent()
        .unwrap()
        .display()
        .to_string();
    let path = format!("{claude}:{}", std::env::var("PATH").unwrap_or_default());
    let users = UsersTmux(tempfile::tempdir().unwrap());
    let started = users.run(&[
        "-f",
        "/dev/null",
        "new-session",
        "-d",
        "-s",
        "work",
        "-x",
        "90",
        "-y",
        "25",
        "bash",
        "--norc",
    ]);
    assert!(started.status.success(), "{started:?}");
    let tmux_dir = users.0.path().to_str().unwrap();
    let server = Server::start_with_env(
        &[],
        &[("PATH", &path), ("TMUX_TMPDIR", tmux_dir), ("TMUX", "")],
    );
    let base = server.base_url();
    let client = modern_client(&server.url).await;
    let project = test_project("cargo-clean");
    let created = call_ok(
        &client,
        "terminal_create",
        json!({"cwd": path_arg(&project), "backend": "pty", "rows": 40, "cols": 120}),
    )
    .await;
    let session = created["name"].as_str().unwrap().to_string();

    let chromium = Chromium::start();
    chromium.open(&format!("{base}/")).await;
    let panel = format!(".panel[data-session={session:?}]");
    chromium
        .until(
            &format!("return document.querySelector('{panel}') !== null"),
            "a panel for the session",
        )
        .await;
    // The page fitted drydock's terminal to its panel.
    let fitted = resized_from(&client, &chromium, &session, (40, 120)).await;
    chromium.type_into(
        &format!("{panel} textarea.xterm-helper-textarea"),
        "echo hello-$((6*7))\n",
    );
    let has_output =
        format!("return (window.drydock.terminalText({session:?}) || '').includes('hello-42')");
    chromium
        .until(&has_output, "the command's output in the panel")
        .await;

    // Fullscreen makes the terminal bigger, and its program sees the new size.
    chromium.click(&format!("{panel} [data-testid=fullscreen]"));
    let (rows, cols) = resized_from(&client, &chromium, &session, fitted).await;
    assert!(
        rows > fitted.0 && cols > fitted.1,
        "{fitted:?} → {rows}x{cols}"
    );
    let stty = call_ok(
        &client,
        "terminal_run",
        json!({"session": session, "command": "stty size; seq 1 300"}),
    )
    .await;
    assert!(
        stty["output"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{rows} {cols}")),
        "{stty:#}"
    );
    chromium.click(&format!("{panel} [data-testid=fullscreen]"));
    let back = resized_from(&client, &chromium, &session, (rows, cols)).await;
    // One column: the panel is as wide as the grid.
    let columns = "const c = document.getElementById('columns'); c.value = COLUMNS; \
                   c.dispatchEvent(new Event('change'))";
    chromium.eval(&columns.replace("COLUMNS", "1"));
    let wide = resized_from(&client, &chromium, &session, back).await;
    assert!(wide.1 > back.1, "{back:?} → {wide:?}");
    chromium.eval(&columns.replace("COLUMNS", "2"));
    resized_from(&client, &chromium, &session, wide).await;

    // The user's own tmux pane is not in the grid until the person adds it.
    let pane = "tmux:work:0.0";
    let pane_panel = format!(".panel[data-session={pane:?}]");
    assert_eq!(
        chromium.eval(&format!(
            "return document.querySelector('{pane_panel}') !== null"
        )),
        false
    );
    chromium.eval("document.getElementById('pane-picker').focus()");
    chromium
        .until(
            &format!("return [...document.querySelectorAll('#pane-picker option')].some(o => o.value === {pane:?})"),
            "the user's pane offered in the picker",
        )
        .await;
    chromium.eval(&format!(
        "document.getElementById('pane-picker').value = {pane:?}"
    ));
    chromium.click("#pane-add");
    chromium.type_into(
        &format!("{pane_panel} textarea.xterm-helper-textarea"),
        "echo pane-$((5*5))\n",
    );
    chromium
        .until(
            &format!("return (window.drydock.terminalText({pane:?}) || '').includes('pane-25')"),
            "the user's pane typed into",
        )
        .await;
    assert_eq!(
        chromium.eval(&format!(
            "return document.querySelector('{pane_panel} [data-testid=stop]') === null"
        )),
        true,
        "stopping a user's pane is never offered"
    );
    // Fullscreen never resizes the user's window.
    chromium.click(&format!("{pane_panel} [data-testid=fullscreen]"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let window = users.run(&[
        "display",
        "-p",
        "-t",
        "work",
        "#{window_width}x#{window_height}",
    ]);
    assert_eq!(String::from_utf8_lossy(&window.stdout).trim(), "90x25");
    chromium.click(&format!("{pane_panel} [data-testid=fullscreen]"));

    // A tool call of an MCP client shows in the feed with its status, and a click shows
    // what it returned.
    call_ok(
        &client,
        "compile",
        json!({"project_path": path_arg(&project)}),
    )
    .await;
    let line = chromium
        .until(
            "const li = document.querySelector('#calls li[data-tool=compile]'); return li && li.textContent.includes('compile ok') && li.textContent",
            "the compile call in the feed, finished",
        )
        .await;
    let line = line.as_str().unwrap();
    assert!(line.contains("cargo-clean"), "{line}");
    chromium.click("#calls li[data-tool=compile]");
    let result = chromium
        .until(
            "const pre = document.querySelector('#calls li[data-tool=compile] [data-testid=result]'); return pre && pre.textContent.includes('result:') && pre.textContent",
            "the compile call's result",
        )
        .await;
    assert!(
        result.as_str().unwrap().contains("\"status\": \"ok\""),
        "{result}"
    );

    // The project memory: a project with errors, chosen in the problems panel, lists them
    // open; the command typed into the terminal was recorded too.
    let broken = test_project("cargo-errors");
    call_ok(
        &client,
        "compile",
        json!({"project_path": path_arg(&broken)}),
    )
    .await;
    chromium
        .until(
            &format!(
                "return [...document.querySelectorAll('#problem-project option')].some(o => o.value === {:?})",
                broken.to_str().unwrap()
            ),
            "the broken project among the panel's choices",
        )
        .await;
    chromium.eval(&format!(
        "const s = document.getElementById('problem-project'); s.value = {:?}; s.dispatchEvent(new Event('change')); return true",
        broken.to_str().unwrap()
    ));
    let problems = text_at(
        &chromium,
        "#problem-list li.problem-open",
        "the open problems",
    )
    .await;
    assert!(
        problems.contains("E0425") || problems.contains("E0599") || problems.contains("E0308"),
        "{problems}"
    );
    let commands = call_ok(
        &client,
        "history_search",
        json!({"query": "echo hello", "kind": "command"}),
    )
    .await;
    let typed = &commands["hits"][0];
    assert_eq!(typed["state"], "recorded", "{commands:#}");
    assert!(
        typed["message"]
            .as_str()
            .unwrap()
            .contains("echo hello-$((6*7))")
            && typed["text"].as_str().unwrap().contains("hello-42")
            && typed["code"] == "exit 0",
        "{commands:#}"
    );

    // A task added in the form shows in the queue, and the dashboard's action in the feed.
    chromium.type_into("#add-task input[name=title]", "tidy the readme");
    chromium.type_into(
        "#add-task input[name=project_path]",
        project.to_str().unwrap(),
    );
    chromium.click("#add-task-submit");
    let queued = chromium
        .until(
            "const li = document.querySelector('#tasks li'); return li && li.textContent",
            "the task in the queue",
        )
        .await;
    assert!(
        queued.as_str().unwrap().contains("queued tidy the readme"),
        "{queued}"
    );
    let listed = call_ok(&client, "task_list", json!({})).await;
    assert_eq!(listed["tasks"][0]["title"], "tidy the readme");
    let feed = chromium
        .until(
            "const li = document.querySelector('#calls li[data-tool=task_add]'); return li && li.textContent",
            "the dashboard's own action in the feed",
        )
        .await;
    assert!(feed.as_str().unwrap().contains("dashboard"), "{feed}");

    // A second page sees the same screen, with the history above it (hello-42 scrolled off
    // the screen by then), the calls made before it came, and the pane the person added.
    let first = chromium.new_window();
    chromium.open(&format!("{base}/")).await;
    chromium
        .until(&has_output, "the history on a second page")
        .await;
    let text = chromium.eval(&format!("return window.drydock.terminalText({session:?})"));
    assert!(text.as_str().unwrap().contains("\n150\n"), "{text}");
    chromium
        .until(
            "return document.querySelector('#calls li[data-tool=compile]') !== null",
            "the earlier compile call on the second page",
        )
        .await;
    chromium
        .until(
            &format!("return document.querySelector('{pane_panel}') !== null"),
            "the added pane, remembered",
        )
        .await;
    // The second page's panel is fitted too; the first page follows the new size.
    let now = sizes(&client, &chromium, &session).await;
    chromium.switch_to(&first);
    assert!(
        eventually(WITHIN, || {
            let page = chromium.eval(&format!(
                "const t = window.drydock.terminal({session:?}); return [t.rows, t.cols]"
            ));
            page == json!([now.0.0, now.0.1])
        })
        .await,
        "the first page draws the size the second asked for: {now:?}"
    );
    let shot = std::env::temp_dir().join("drydock-dashboard.png");
    std::fs::write(&shot, chromium.screenshot()).unwrap();

    // Hiding the pane takes it off the grid and leaves it running.
    chromium.click(&format!("{pane_panel} [data-testid=hide]"));
    chromium
        .until(
            &format!("return document.querySelector('{pane_panel}') === null"),
            "the pane hidden",
        )
        .await;
    assert!(users.run(&["has-session", "-t", "work"]).status.success());

    // Stop ends the session.
    chromium.click(&format!("{panel} [data-testid=stop]"));
    let deadline = Instant::now() + WITHIN;
    loop {
        let names = session_names(&client).await;
        if !names.contains(&session) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "stop never ended {session}: {names:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let errors = chromium.eval("return window.drydock.errors");
    assert_eq!(errors, json!([]), "the page logged no error");
    let console: Vec<String> = chromium.console_errors();
    assert!(
        console.is_empty(),
        "the console shows no error: {console:#?}"
    );
    drop(chromium);

    // Only the dashboard's own origin may open its socket.
    assert!(upgrade_status(&base, "http://evil.example").contains("403"));
    assert!(upgrade_status(&base, "http://127.0.0.1:1").contains("403"));
    let same = upgrade_status(&base, &base);
    assert!(same.contains("101"), "{same}");
}

#[tokio::test]
async fn with_a_token_the_dashboard_asks_for_its_one_time_login() {
    let server = Server::start(&["--token", "s3cret-token"]);
    let base = server.base_url();
    let login = server
        .banner
        .lines()
        .find_map(|line| line.strip_prefix("dashboard: "))
        .expect("the banner names the dashboard")
        .to_string();
    let path = login.trim_start_matches(&base).to_string();
    assert!(path.starts_with("/login?code="), "{login}");
    assert!(
        !login.contains("s3cret-token"),
        "the token stays out of URLs"
    );

    assert_eq!(get(&base, "/", None).0, 401);
    assert_eq!(get(&base, "/assets/app.js", None).0, 401);
    assert_eq!(get(&base, "/login?code=guess", None).0, 401);
    let (status, cookie, location) = get(&base, &path, None);
    assert_eq!((status, location.as_deref()), (303, Some("/")));
    let cookie = cookie.unwrap();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap().to_string();
    assert_eq!(get(&base, "/", Some(&pair)).0, 200);
    assert_eq!(get(&base, &path, None).0, 401, "the login URL works once");
    assert_eq!(get(&base, "/", Some("drydock_dashboard=forged")).0, 401);
}

/// The text of what `css` selects once it exists.
async fn text_at(chromium: &Chromium, css: &str, what: &str) -> String {
    let script = format!("const e = document.querySelector('{css}'); return e && e.textContent");
    chromium.until_text(&script, what).await
}

/// The id of the task the queue panel shows running, once one is.
async fn running_task(chromium: &Chromium, what: &str) -> String {
    let script = "const s = document.querySelector('#tasks li .task-state.running'); \
                  return s && s.parentElement.dataset.task";
    chromium.until_text(script, what).await
}

/// The queue panel's line of `task` once it shows the task done.
async fn finished_task(chromium: &Chromium, task: &str, what: &str) -> String {
    let script = format!(
        "const s = document.querySelector('#tasks li[data-task=\"{task}\"] .task-state.done'); \
         return s && s.parentElement.textContent"
    );
    chromium.until_text(&script, what).await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_person_accepts_a_spawn_answers_a_waiting_claude_code_and_runs_a_task_in_auto_mode() {
    let (cli, home, _fake, tmux_dir) = claude_home("dashboard-claude");
    repository(&home.project);
    let server = spawning_server(&home, &cli, tmux_dir.path(), "[tasks]\ngrace_s = 1\n");
    let client = modern_client(&server.url).await;
    let project = path_arg(&home.project);
    let chromium = Chromium::start();
    // The person allows notifications (granted for the page's origin, then it reloads).
    chromium.open(&format!("{}/", server.base_url())).await;
    assert_eq!(
        chromium.eval("return document.getElementById('notify').hidden"),
        false,
        "the page offers notifications"
    );
    chromium.grant("notifications");
    chromium.open(&format!("{}/", server.base_url())).await;
    assert_eq!(
        chromium.eval("return document.getElementById('notify').hidden"),
        true,
        "no need to ask once notifications are allowed"
    );

    // A spawn waits for a person: the page shows it, counts it and notifies; Accept starts it.
    let spawning = spawn_meanwhile(
        &server,
        json!({"kind": "claude", "prompt": "Say hello", "cwd": project, "name": "dash"}),
    );
    let asked = text_at(&chromium, "#approval-list li", "the pending spawn").await;
    assert!(
        asked.contains("agent_spawn: claude") && asked.contains("agent-dash"),
        "{asked}"
    );
    assert_eq!(chromium.eval("return document.title"), "(1) drydock");
    chromium.click("#approval-list [data-testid=accept]");
    let spawned = spawning.await.unwrap();
    assert_eq!(spawned["consent"], "approved", "{spawned:#}");
    // The spawn returns once the agent took up its prompt: the wait for idle below cannot end
    // on the idle screen Claude Code shows before it submits its prompt.
    let hook = spawned["agent"]["last_hook"].as_str().unwrap_or_default();
    let state = spawned["agent"]["state"].as_str().unwrap_or_default();
    let before_prompt = matches!(state, "starting" | "idle") && matches!(hook, "" | "SessionStart");
    assert!(!before_prompt, "{spawned:#}");
    let agent = "agent-dash";
    let idle = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [agent], "states": ["idle"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(idle["matched"], true, "{idle:#}");
    let accepted = text_at(
        &chromium,
        "#calls li[data-tool=approve]",
        "the approval in the feed",
    )
    .await;
    assert!(accepted.contains("agent-dash · dashboard"), "{accepted}");

    // A second spawn, declined: nothing starts.
    let spawning = spawn_meanwhile(
        &server,
        json!({"kind": "claude", "prompt": "Say hello", "cwd": project, "name": "nope"}),
    );
    text_at(
        &chromium,
        "#approval-list li[data-approval]",
        "the second spawn",
    )
    .await;
    chromium.click("#approval-list [data-testid=decline]");
    let declined = spawning.await.unwrap();
    assert_eq!(
        (&declined["consent"], &declined["started"]),
        (&json!("declined"), &json!(false)),
        "{declined:#}"
    );
    chromium
        .until(
            "return document.getElementById('approvals').hidden",
            "no approval left",
        )
        .await;

    // Three more live terminals beside the agent: the four-panel screenshot.
    for command in ["ls -la", "git --version; uname -sr", "seq 1 30"] {
        call_ok(
            &client,
            "terminal_create",
            json!({"cwd": project, "command": command, "backend": "pty"}),
        )
        .await;
    }
    call_ok(
        &client,
        "agent_send",
        json!({"agent": agent, "text": "Run the lab command lab:bash"}),
    )
    .await;
    let panel = format!(".panel[data-session={agent:?}]");
    // The hook says it waits before Claude Code draws its question; then the question.
    let question = chromium
        .until(
            &format!(
                "const q = document.querySelector('{panel}.state-waiting [data-testid=question]'); \
                 return q && q.textContent.includes('proceed') && q.textContent"
            ),
            "the panel shows the agent's question",
        )
        .await;
    assert!(
        question
            .as_str()
            .unwrap()
            .contains("Do you want to proceed?"),
        "{question}"
    );
    assert_eq!(chromium.eval("return document.title"), "(1) drydock");
    // One notification per wait (the same wait's is replaced once its question is drawn).
    let notified =
        chromium.eval("return [...new Set(window.drydock.notifications.map(n => n.title))]");
    assert_eq!(
        notified,
        json!([
            "start claude as agent-dash?",
            "start claude as agent-nope?",
            "agent-dash waits"
        ]),
    );
    chromium
        .until(
            "return document.querySelectorAll('.panel').length === 4",
            "four panels",
        )
        .await;
    std::fs::write(
        std::env::temp_dir().join("drydock-dashboard-waiting.png"),
        chromium.screenshot(),
    )
    .unwrap();
    chromium.click(&format!("{panel} [data-testid=approve]"));
    let ran = home.project.join("lab-bash.txt");
    assert!(
        eventually(WITHIN, || ran.exists()).await,
        "Approve let the agent run its command"
    );
    chromium
        .until(
            &format!("return document.querySelector('{panel}.state-waiting') === null"),
            "the panel leaves yellow",
        )
        .await;
    call_ok(&client, "agent_kill", json!({"agent": agent})).await;

    // The queue, fed through the page: in manual mode "start next" starts the task; in
    // auto mode a task added starts by itself; each one's agent shows in a panel, and it
    // ends done.
    let add_task = |title: &str| {
        chromium.type_into("#add-task input[name=title]", title);
        chromium.type_into(
            "#add-task textarea[name=description]",
            "Work a little lab:think=2 lab:complete=done",
        );
        chromium.type_into(
            "#add-task input[name=project_path]",
            project.as_str().unwrap(),
        );
        chromium.click("#add-task-submit");
    };
    add_task("started by hand");
    text_at(&chromium, "#tasks li .task-state.queued", "the task queued").await;
    chromium.click("#queue-next");
    let started = running_task(&chromium, "the task started by hand").await;
    finished_task(&chromium, &started, "the task started by hand done").await;
    chromium.eval("document.getElementById('queue-mode').value = 'auto'");
    chromium.click("#queue-apply");
    text_at(&chromium, "#queue-status", "the queue's status").await;
    chromium
        .until(
            "return document.getElementById('queue-status').textContent.startsWith('auto')",
            "auto mode",
        )
        .await;
    add_task("finish from the page");
    let task = running_task(&chromium, "the task running").await;
    chromium
        .until(
            &format!(
                "return document.querySelector('.panel[data-session=\"task-{task}\"]') !== null"
            ),
            "the task's agent in a panel",
        )
        .await;
    let done = finished_task(&chromium, &task, "the task done").await;
    assert!(done.contains("finish from the page"), "{done}");

    // Each task worked in a worktree of its own: its result is shown, merged or discarded
    // from the page.
    let line = |id: &str, css: &str| format!("#tasks li[data-task=\"{id}\"] {css}");
    let confined = text_at(
        &chromium,
        &line(&task, "[data-testid=task-confinement]"),
        "how the task was confined",
    )
    .await;
    assert_eq!(confined.trim(), "sandboxed");
    let change = text_at(&chromium, &line(&task, ".change"), "the task's change").await;
    assert!(change.contains(&format!("drydock/task-{task}")), "{change}");
    chromium.click(&line(&task, "[data-testid=change]"));
    let shown = text_at(&chromium, &line(&task, ".task-change"), "its change shown").await;
    assert!(shown.contains("merges cleanly into main"), "{shown}");
    chromium.click(&line(&task, "[data-testid=merge]"));
    chromium
        .until(
            &format!(
                "const c = document.querySelector('{}'); return c && c.textContent.includes('merged')",
                line(&task, ".change")
            ),
            "the result merged",
        )
        .await;
    chromium.click(&line(&started, "[data-testid=discard]"));
    chromium.click(&line(&started, "[data-testid=discard]"));
    chromium
        .until(
            &format!(
                "const c = document.querySelector('{}'); return c && c.textContent.includes('discarded')",
                line(&started, ".change")
            ),
            "the other result discarded",
        )
        .await;
    let listed = call_ok(&client, "task_show", json!({"task_id": started})).await;
    let gone = listed["task"]["isolation"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!Path::new(&gone).exists(), "{gone}");
    let errors = chromium.eval("return window.drydock.errors");
    assert_eq!(errors, json!([]), "the page logged no error");
    let console: Vec<String> = chromium.console_errors();
    assert!(
        console.is_empty(),
        "the console shows no error: {console:#?}"
    );
    drop(chromium);
    assert!(
        eventually(Duration::from_secs(30), || claude_processes(&home)
            .is_empty())
        .await,
        "no Claude Code left: {:?}",
        claude_processes(&home)
    );
    kill_tmux(tmux_dir.path());
}
