//! The dashboard in a real Chromium (Debian's, through its chromedriver): a live terminal
//! typed into and resized, the user's own tmux pane, a second page that sees the same
//! screen, the tool feed, the problems panel, the queue form, stop, a person answering a
//! waiting agent; and the guards: a cross-origin WebSocket is refused, a server with a token
//! asks for its one-time login. Each test opens a page of its own.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::agent_kit::fake_anthropic::FakeAnthropic;
use crate::agent_kit::home::{AgentHome, Cli};
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
    let (drydock, _page) = until_read(
        WITHIN,
        || sizes(client, chromium, session),
        |(drydock, page)| *drydock != before && drydock == page,
    )
    .await
    .unwrap_or_else(|(drydock, page)| {
        panic!("{session} never left {before:?}: drydock {drydock:?}, page {page:?}")
    });
    drydock
}

/// What the tests of one page share: the user's own tmux server (one window, 90x25), a
/// drydock that sees it (with the pinned Claude Code on its PATH: tasks need their agent's
/// CLI, though nothing starts it here), one of drydock's own terminals (a PTY in
/// test-projects/cargo-clean, created 40x120) and a page of the dashboard in Chromium that
/// shows it, fitted to its panel.
struct Desk {
    chromium: Chromium,
    client: Client,
    base: String,
    session: String,
    /// `.panel[data-session=...]` of the session.
    panel: String,
    /// The session's size once the page fitted it to its panel.
    fitted: (u64, u64),
    project: std::path::PathBuf,
    _server: Server,
    users: UsersTmux,
}

/// The user's pane, as drydock names it.
const PANE: &str = "tmux:work:0.0";

impl Desk {
    async fn open() -> Desk {
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
        let fitted = resized_from(&client, &chromium, &session, (40, 120)).await;
        Desk {
            chromium,
            client,
            base,
            session,
            panel,
            fitted,
            project,
            _server: server,
            users,
        }
    }

    /// Types `text` into the session's panel.
    fn type_into_panel(&self, text: &str) {
        self.chromium.type_into(
            &format!("{} textarea.xterm-helper-textarea", self.panel),
            text,
        );
    }

    /// Waits until the session's panel shows `text`.
    async fn panel_shows(&self, text: &str, what: &str) {
        let script = format!(
            "return (window.drydock.terminalText({:?}) || '').includes({text:?})",
            self.session
        );
        self.chromium.until(&script, what).await;
    }

    /// Adds the user's own pane to the grid from the picker; its panel's selector.
    async fn add_the_users_pane(&self) -> String {
        let chromium = &self.chromium;
        chromium.eval("document.getElementById('pane-picker').focus()");
        chromium
            .until(
                &format!("return [...document.querySelectorAll('#pane-picker option')].some(o => o.value === {PANE:?})"),
                "the user's pane offered in the picker",
            )
            .await;
        chromium.eval(&format!(
            "document.getElementById('pane-picker').value = {PANE:?}"
        ));
        chromium.click("#pane-add");
        let pane_panel = format!(".panel[data-session={PANE:?}]");
        chromium
            .until(
                &format!("return document.querySelector('{pane_panel}') !== null"),
                "the user's pane in the grid",
            )
            .await;
        pane_panel
    }

    /// The size of the user's tmux window, as tmux has it.
    fn users_window(&self) -> String {
        let window = self.users.run(&[
            "display",
            "-p",
            "-t",
            "work",
            "#{window_width}x#{window_height}",
        ]);
        String::from_utf8_lossy(&window.stdout).trim().to_string()
    }

    /// Waits for `tool`'s call to show in the feed, finished with `status` (`compile ok`);
    /// the line's text.
    async fn in_the_feed(&self, tool: &str, status: &str) -> String {
        let script = format!(
            "const li = document.querySelector('#calls li[data-tool={tool}]'); \
             return li && li.textContent.includes({status:?}) && li.textContent"
        );
        self.chromium
            .until_text(&script, &format!("the {tool} call in the feed, finished"))
            .await
    }

    /// The page logged no error, and neither did its console.
    fn assert_no_page_errors(&self) {
        let errors = self.chromium.eval("return window.drydock.errors");
        assert_eq!(errors, json!([]), "the page logged no error");
        let console: Vec<String> = self.chromium.console_errors();
        assert!(
            console.is_empty(),
            "the console shows no error: {console:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn typing_into_a_panel_runs_the_command_in_drydocks_terminal() {
    let desk = Desk::open().await;
    desk.type_into_panel("echo hello-$((6*7))\n");
    desk.panel_shows("hello-42", "the command's output in the panel")
        .await;
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn fullscreen_and_one_column_resize_drydocks_terminal_and_its_program_sees_it() {
    let desk = Desk::open().await;
    let (chromium, client, session, panel) =
        (&desk.chromium, &desk.client, &desk.session, &desk.panel);
    chromium.click(&format!("{panel} [data-testid=fullscreen]"));
    let (rows, cols) = resized_from(client, chromium, session, desk.fitted).await;
    assert!(
        rows > desk.fitted.0 && cols > desk.fitted.1,
        "{:?} → {rows}x{cols}",
        desk.fitted
    );
    let stty = call_ok(
        client,
        "terminal_run",
        json!({"session": session, "command": "stty size"}),
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
    let back = resized_from(client, chromium, session, (rows, cols)).await;
    // One column: the panel is as wide as the grid.
    let columns = "const c = document.getElementById('columns'); c.value = COLUMNS; \
                   c.dispatchEvent(new Event('change'))";
    chromium.eval(&columns.replace("COLUMNS", "1"));
    let wide = resized_from(client, chromium, session, back).await;
    assert!(wide.1 > back.1, "{back:?} → {wide:?}");
    chromium.eval(&columns.replace("COLUMNS", "2"));
    resized_from(client, chromium, session, wide).await;
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_users_own_pane_is_added_by_choice_typed_into_never_resized_and_hidden() {
    let desk = Desk::open().await;
    let chromium = &desk.chromium;
    let pane_panel = format!(".panel[data-session={PANE:?}]");
    assert_eq!(
        chromium.eval(&format!(
            "return document.querySelector('{pane_panel}') !== null"
        )),
        false,
        "not in the grid until the person adds it"
    );
    desk.add_the_users_pane().await;
    chromium.type_into(
        &format!("{pane_panel} textarea.xterm-helper-textarea"),
        "echo pane-$((5*5))\n",
    );
    chromium
        .until(
            &format!("return (window.drydock.terminalText({PANE:?}) || '').includes('pane-25')"),
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

    // Fullscreen never resizes the user's window: checked once a tool call made after it has
    // gone through the feed, by when a resize the page asked for would have been made.
    let fullscreen = |on: bool| {
        format!(
            "return document.querySelector('{pane_panel}').classList.contains('fullscreen') === {on}"
        )
    };
    chromium.click(&format!("{pane_panel} [data-testid=fullscreen]"));
    chromium
        .until(&fullscreen(true), "the pane in fullscreen")
        .await;
    chromium.click(&format!("{pane_panel} [data-testid=fullscreen]"));
    chromium
        .until(&fullscreen(false), "the pane back in the grid")
        .await;
    call_ok(
        &desk.client,
        "compile",
        json!({"project_path": path_arg(&desk.project)}),
    )
    .await;
    desk.in_the_feed("compile", "compile ok").await;
    assert_eq!(
        desk.users_window(),
        "90x25",
        "the user's window kept its size"
    );

    // Hiding the pane takes it off the grid and leaves it running.
    chromium.click(&format!("{pane_panel} [data-testid=hide]"));
    chromium
        .until(
            &format!("return document.querySelector('{pane_panel}') === null"),
            "the pane hidden",
        )
        .await;
    assert!(
        desk.users
            .run(&["has-session", "-t", "work"])
            .status
            .success()
    );
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_call_shows_in_the_feed_with_its_status_and_a_click_shows_its_result() {
    let desk = Desk::open().await;
    call_ok(
        &desk.client,
        "compile",
        json!({"project_path": path_arg(&desk.project)}),
    )
    .await;
    let line = desk.in_the_feed("compile", "compile ok").await;
    assert!(line.contains("cargo-clean"), "{line}");
    desk.chromium.click("#calls li[data-tool=compile]");
    let result = desk
        .chromium
        .until_text(
            "const pre = document.querySelector('#calls li[data-tool=compile] [data-testid=result]'); return pre && pre.textContent.includes('result:') && pre.textContent",
            "the compile call's result",
        )
        .await;
    assert!(result.contains("\"status\": \"ok\""), "{result}");
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn the_problems_panel_lists_the_open_problems_of_the_project_chosen() {
    let desk = Desk::open().await;
    let broken = test_project("cargo-errors");
    call_ok(
        &desk.client,
        "compile",
        json!({"project_path": path_arg(&broken)}),
    )
    .await;
    desk.chromium
        .until(
            &format!(
                "return [...document.querySelectorAll('#problem-project option')].some(o => o.value === {:?})",
                broken.to_str().unwrap()
            ),
            "the broken project among the panel's choices",
        )
        .await;
    desk.chromium.eval(&format!(
        "const s = document.getElementById('problem-project'); s.value = {:?}; s.dispatchEvent(new Event('change')); return true",
        broken.to_str().unwrap()
    ));
    let problems = text_at(
        &desk.chromium,
        "#problem-list li.problem-open",
        "the open problems",
    )
    .await;
    assert!(
        problems.contains("E0425") || problems.contains("E0599") || problems.contains("E0308"),
        "{problems}"
    );
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_command_typed_into_a_panel_is_remembered_with_its_output_and_exit_code() {
    let desk = Desk::open().await;
    desk.type_into_panel("echo hello-$((6*7))\n");
    desk.panel_shows("hello-42", "the command's output in the panel")
        .await;
    let commands = until_read(
        WITHIN,
        || {
            call_ok(
                &desk.client,
                "history_search",
                json!({"query": "echo hello", "kind": "command"}),
            )
        },
        |found| found["hits"][0].is_object(),
    )
    .await
    .unwrap_or_else(|found| panic!("never recorded: {found:#}"));
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
}

#[tokio::test(flavor = "multi_thread")]
async fn a_task_added_in_the_form_is_queued_and_the_dashboards_call_shows_in_the_feed() {
    let desk = Desk::open().await;
    let chromium = &desk.chromium;
    chromium.type_into("#add-task input[name=title]", "tidy the readme");
    chromium.type_into(
        "#add-task input[name=project_path]",
        desk.project.to_str().unwrap(),
    );
    chromium.click("#add-task-submit");
    let queued = text_at(chromium, "#tasks li", "the task in the queue").await;
    assert!(queued.contains("queued tidy the readme"), "{queued}");
    let listed = call_ok(&desk.client, "task_list", json!({})).await;
    assert_eq!(listed["tasks"][0]["title"], "tidy the readme");
    let feed = text_at(
        chromium,
        "#calls li[data-tool=task_add]",
        "the dashboard's own action in the feed",
    )
    .await;
    assert!(feed.contains("dashboard"), "{feed}");
    desk.assert_no_page_errors();
}

/// A second page sees the same screen, with the history above it (scrolled off the screen
/// by then), the calls made before it came, and the pane the person added on the first; the
/// first page draws the size the second one fitted the terminal to.
#[tokio::test(flavor = "multi_thread")]
async fn a_second_page_sees_the_same_screen_history_calls_and_panes_as_the_first() {
    let desk = Desk::open().await;
    let (chromium, client, session) = (&desk.chromium, &desk.client, &desk.session);
    desk.type_into_panel("echo hello-$((6*7)); seq 1 300\n");
    desk.panel_shows("\n300", "the command's output in the panel")
        .await;
    call_ok(
        client,
        "compile",
        json!({"project_path": path_arg(&desk.project)}),
    )
    .await;
    desk.in_the_feed("compile", "compile ok").await;
    desk.add_the_users_pane().await;

    let first = chromium.new_window();
    chromium.open(&format!("{}/", desk.base)).await;
    desk.panel_shows("hello-42", "the history on a second page")
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
            &format!("return document.querySelector('.panel[data-session={PANE:?}]') !== null"),
            "the added pane, remembered",
        )
        .await;
    let now = sizes(client, chromium, session).await;
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
    desk.assert_no_page_errors();
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_ends_the_session() {
    let desk = Desk::open().await;
    desk.chromium
        .click(&format!("{} [data-testid=stop]", desk.panel));
    let client = &desk.client;
    let session = &desk.session;
    until_read(
        WITHIN,
        || session_names(client),
        |names| !names.contains(session),
    )
    .await
    .unwrap_or_else(|names| panic!("stop never ended {session}: {names:?}"));
    desk.assert_no_page_errors();
}

#[tokio::test]
async fn only_the_dashboards_own_origin_may_open_its_socket() {
    let server = Server::start(&[]);
    let base = server.base_url();
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

/// A drydock whose agents run the pinned Claude Code against the fake model API, in a git
/// project of its own, and a page of its dashboard.
struct AgentDesk {
    chromium: Chromium,
    client: Client,
    server: Server,
    /// The project, as a tool argument.
    project: serde_json::Value,
    home: AgentHome,
    tmux_dir: tempfile::TempDir,
    _fake: FakeAnthropic,
}

impl AgentDesk {
    async fn open(name: &str) -> AgentDesk {
        let (cli, home, fake, tmux_dir) = claude_home(name);
        repository(&home.project);
        let server = spawning_server(&home, &cli, tmux_dir.path(), "[tasks]\ngrace_s = 1\n");
        let client = modern_client(&server.url).await;
        let project = path_arg(&home.project);
        let chromium = Chromium::start();
        chromium.open(&format!("{}/", server.base_url())).await;
        AgentDesk {
            chromium,
            client,
            server,
            project,
            home,
            tmux_dir,
            _fake: fake,
        }
    }

    /// Asks for Claude Code as `agent-NAME` (prompt "Say hello") beside the page; the call's
    /// handle, once the page shows the spawn waiting for a person.
    async fn ask_to_spawn(&self, name: &str) -> tokio::task::JoinHandle<serde_json::Value> {
        let spawning = spawn_meanwhile(
            &self.server,
            json!({"kind": "claude", "prompt": "Say hello", "cwd": self.project, "name": name}),
        );
        let asked = text_at(
            &self.chromium,
            "#approval-list li[data-approval]",
            "the pending spawn",
        )
        .await;
        assert!(
            asked.contains("agent_spawn: claude") && asked.contains(&format!("agent-{name}")),
            "{asked}"
        );
        spawning
    }

    /// `agent-NAME` spawned, accepted on the page, idle after its first prompt.
    async fn spawn_accepted(&self, name: &str) -> String {
        let spawning = self.ask_to_spawn(name).await;
        assert_eq!(
            self.chromium.eval("return document.title"),
            "(1) drydock",
            "the page counts what waits for a person"
        );
        self.chromium.click("#approval-list [data-testid=accept]");
        let spawned = spawning.await.unwrap();
        assert_eq!(spawned["consent"], "approved", "{spawned:#}");
        // The spawn returns once the agent took up its prompt: the wait for idle below cannot
        // end on the idle screen Claude Code shows before it submits its prompt.
        let hook = spawned["agent"]["last_hook"].as_str().unwrap_or_default();
        let state = spawned["agent"]["state"].as_str().unwrap_or_default();
        let before_prompt =
            matches!(state, "starting" | "idle") && matches!(hook, "" | "SessionStart");
        assert!(!before_prompt, "{spawned:#}");
        let agent = format!("agent-{name}");
        let idle = call_ok(
            &self.client,
            "agent_wait",
            json!({"agents": [agent], "states": ["idle"], "timeout_ms": 60000}),
        )
        .await;
        assert_eq!(idle["matched"], true, "{idle:#}");
        agent
    }

    /// Adds a task through the page's form (its agent works a little, then completes).
    fn add_task(&self, title: &str) {
        let chromium = &self.chromium;
        chromium.type_into("#add-task input[name=title]", title);
        chromium.type_into(
            "#add-task textarea[name=description]",
            "Work a little lab:think=2 lab:complete=done",
        );
        chromium.type_into(
            "#add-task input[name=project_path]",
            self.project.as_str().unwrap(),
        );
        chromium.click("#add-task-submit");
    }

    /// The page logged no error; once it is closed no Claude Code is left, and drydock's
    /// tmux server goes.
    async fn close(self) {
        let errors = self.chromium.eval("return window.drydock.errors");
        assert_eq!(errors, json!([]), "the page logged no error");
        let console: Vec<String> = self.chromium.console_errors();
        assert!(
            console.is_empty(),
            "the console shows no error: {console:#?}"
        );
        drop(self.chromium);
        assert!(
            eventually(Duration::from_secs(30), || claude_processes(&self.home)
                .is_empty())
            .await,
            "no Claude Code left: {:?}",
            claude_processes(&self.home)
        );
        kill_tmux(self.tmux_dir.path());
    }
}

/// `#tasks li[data-task="ID"] CSS`.
fn task_line(id: &str, css: &str) -> String {
    format!("#tasks li[data-task=\"{id}\"] {css}")
}

#[tokio::test(flavor = "multi_thread")]
async fn the_page_offers_notifications_until_the_person_allows_them() {
    let desk = AgentDesk::open("dashboard-notify").await;
    let chromium = &desk.chromium;
    assert_eq!(
        chromium.eval("return document.getElementById('notify').hidden"),
        false,
        "the page offers notifications"
    );
    // Granted for the page's origin, then it reloads.
    chromium.grant("notifications");
    chromium.open(&format!("{}/", desk.server.base_url())).await;
    assert_eq!(
        chromium.eval("return document.getElementById('notify').hidden"),
        true,
        "no need to ask once notifications are allowed"
    );
    desk.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_waits_for_a_person_and_accept_on_the_page_starts_it() {
    let desk = AgentDesk::open("dashboard-accept").await;
    let agent = desk.spawn_accepted("dash").await;
    let accepted = text_at(
        &desk.chromium,
        "#calls li[data-tool=approve]",
        "the approval in the feed",
    )
    .await;
    assert!(accepted.contains("agent-dash · dashboard"), "{accepted}");
    call_ok(&desk.client, "agent_kill", json!({"agent": agent})).await;
    desk.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_spawn_declined_on_the_page_starts_nothing() {
    let desk = AgentDesk::open("dashboard-decline").await;
    let spawning = desk.ask_to_spawn("nope").await;
    desk.chromium.click("#approval-list [data-testid=decline]");
    let declined = spawning.await.unwrap();
    assert_eq!(
        (&declined["consent"], &declined["started"]),
        (&json!("declined"), &json!(false)),
        "{declined:#}"
    );
    desk.chromium
        .until(
            "return document.getElementById('approvals').hidden",
            "no approval left",
        )
        .await;
    desk.close().await;
}

/// A waiting agent's question shows in its panel (yellow, counted in the title, notified
/// once), beside three more live terminals; Approve on the panel lets it run its command.
#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_agents_question_shows_in_its_panel_and_approve_lets_it_run() {
    let desk = AgentDesk::open("dashboard-waiting").await;
    let (chromium, client) = (&desk.chromium, &desk.client);
    chromium.grant("notifications");
    chromium.open(&format!("{}/", desk.server.base_url())).await;
    let agent = desk.spawn_accepted("dash").await;
    for command in ["ls -la", "git --version; uname -sr", "seq 1 30"] {
        call_ok(
            client,
            "terminal_create",
            json!({"cwd": desk.project, "command": command, "backend": "pty"}),
        )
        .await;
    }
    call_ok(
        client,
        "agent_send",
        json!({"agent": agent, "text": "Run the lab command lab:bash"}),
    )
    .await;
    let panel = format!(".panel[data-session={agent:?}]");
    // The hook says it waits before Claude Code draws its question; then the question.
    let question = chromium
        .until_text(
            &format!(
                "const q = document.querySelector('{panel}.state-waiting [data-testid=question]'); \
                 return q && q.textContent.includes('proceed') && q.textContent"
            ),
            "the panel shows the agent's question",
        )
        .await;
    assert!(question.contains("Do you want to proceed?"), "{question}");
    assert_eq!(chromium.eval("return document.title"), "(1) drydock");
    // One notification per wait (the same wait's is replaced once its question is drawn).
    let notified =
        chromium.eval("return [...new Set(window.drydock.notifications.map(n => n.title))]");
    assert_eq!(
        notified,
        json!(["start claude as agent-dash?", "agent-dash waits"]),
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
    let ran = desk.home.project.join("lab-bash.txt");
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
    call_ok(client, "agent_kill", json!({"agent": agent})).await;
    desk.close().await;
}

/// In manual mode "start next" starts a task added on the page; in auto mode a task added
/// starts by itself; each one's agent shows in a panel, and it ends done.
#[tokio::test(flavor = "multi_thread")]
async fn the_page_starts_queued_tasks_by_hand_and_in_auto_mode() {
    let desk = AgentDesk::open("dashboard-queue").await;
    let chromium = &desk.chromium;
    desk.add_task("started by hand");
    text_at(chromium, "#tasks li .task-state.queued", "the task queued").await;
    chromium.click("#queue-next");
    let started = running_task(chromium, "the task started by hand").await;
    finished_task(chromium, &started, "the task started by hand done").await;
    chromium.eval("document.getElementById('queue-mode').value = 'auto'");
    chromium.click("#queue-apply");
    chromium
        .until(
            "return document.getElementById('queue-status').textContent.startsWith('auto')",
            "auto mode",
        )
        .await;
    desk.add_task("finish from the page");
    let task = running_task(chromium, "the task running").await;
    chromium
        .until(
            &format!(
                "return document.querySelector('.panel[data-session=\"task-{task}\"]') !== null"
            ),
            "the task's agent in a panel",
        )
        .await;
    let done = finished_task(chromium, &task, "the task done").await;
    assert!(done.contains("finish from the page"), "{done}");
    desk.close().await;
}

/// Each task works in a worktree of its own: the page shows how it was confined and its
/// change, and merges one result or discards another (its worktree then gone).
#[tokio::test(flavor = "multi_thread")]
async fn a_tasks_result_is_shown_merged_or_discarded_from_the_page() {
    let desk = AgentDesk::open("dashboard-results").await;
    let (chromium, client) = (&desk.chromium, &desk.client);
    chromium.eval("document.getElementById('queue-mode').value = 'auto'");
    chromium.click("#queue-apply");
    chromium
        .until(
            "return document.getElementById('queue-status').textContent.startsWith('auto')",
            "auto mode",
        )
        .await;
    desk.add_task("merged from the page");
    let merged = running_task(chromium, "the first task running").await;
    finished_task(chromium, &merged, "the first task done").await;
    desk.add_task("discarded from the page");
    let discarded = chromium
        .until_text(
            &format!(
                "const s = [...document.querySelectorAll('#tasks li .task-state.running')]\
                 .find(s => s.parentElement.dataset.task !== {merged:?}); \
                 return s && s.parentElement.dataset.task"
            ),
            "the second task running",
        )
        .await;
    finished_task(chromium, &discarded, "the second task done").await;

    let confined = text_at(
        chromium,
        &task_line(&merged, "[data-testid=task-confinement]"),
        "how the task was confined",
    )
    .await;
    assert_eq!(confined.trim(), "sandboxed");
    // What it spent, and what today's tasks spent in all and per project.
    let usage = text_at(
        chromium,
        &task_line(&merged, "[data-testid=task-usage]"),
        "what the task spent",
    )
    .await;
    assert!(
        usage.contains(" tokens (") && usage.contains("), $"),
        "{usage}"
    );
    let today = text_at(chromium, "[data-testid=spending]", "today's spending").await;
    assert!(
        today.starts_with("spent today: ") && today.contains(" tokens, $"),
        "{today}"
    );
    let change = text_at(
        chromium,
        &task_line(&merged, ".change"),
        "the task's change",
    )
    .await;
    assert!(
        change.contains(&format!("drydock/task-{merged}")),
        "{change}"
    );
    chromium.click(&task_line(&merged, "[data-testid=change]"));
    let shown = text_at(
        chromium,
        &task_line(&merged, ".task-change"),
        "its change shown",
    )
    .await;
    assert!(shown.contains("merges cleanly into main"), "{shown}");
    chromium.click(&task_line(&merged, "[data-testid=merge]"));
    chromium
        .until(
            &format!(
                "const c = document.querySelector('{}'); return c && c.textContent.includes('merged')",
                task_line(&merged, ".change")
            ),
            "the result merged",
        )
        .await;
    // Discard asks to be clicked twice; its button shows once the result was reviewed.
    let discard = task_line(&discarded, "[data-testid=discard]");
    for _ in 0..2 {
        chromium
            .until(
                &format!("return document.querySelector('{discard}') !== null"),
                "the discard button",
            )
            .await;
        chromium.click(&discard);
    }
    chromium
        .until(
            &format!(
                "const c = document.querySelector('{}'); return c && c.textContent.includes('discarded')",
                task_line(&discarded, ".change")
            ),
            "the other result discarded",
        )
        .await;
    let listed = call_ok(client, "task_show", json!({"task_id": discarded})).await;
    let gone = listed["task"]["isolation"]["path"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(!Path::new(&gone).exists(), "{gone}");
    desk.close().await;
}
