//! The dashboard in a real Chromium (Debian's, through its chromedriver): a live terminal
//! typed into, a second page that sees the same screen, the tool feed, the queue form, stop;
//! and the guards: a cross-origin WebSocket is refused, a server with a token asks for its
//! one-time login.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::agent_kit::home::Cli;
use crate::mcp_agents::ClaudeInPty;
use crate::support::*;

const WITHIN: Duration = Duration::from_secs(30);

/// chromedriver (in a process group of its own, with its own HOME and TMPDIR) and a headless
/// Chromium session, spoken to in WebDriver (JSON over HTTP: the few commands the tests need,
/// no client crate); both end with it, however the test ends.
struct Chromium {
    driver: Child,
    port: u16,
    session: String,
    _home: tempfile::TempDir,
}

impl Chromium {
    fn start() -> Chromium {
        let home = tempfile::tempdir().unwrap();
        let mut driver = Command::new("chromedriver")
            .arg("--port=0")
            .env("HOME", home.path())
            .env("TMPDIR", home.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("chromedriver (Debian's chromium-driver, installed by scripts/ensure-deps.sh)");
        let mut lines = BufReader::new(driver.stdout.take().unwrap()).lines();
        let port = lines
            .find_map(|line| {
                let line = line.ok()?;
                line.split("started successfully on port ")
                    .nth(1)?
                    .trim_end_matches('.')
                    .parse::<u16>()
                    .ok()
            })
            .expect("chromedriver says its port");
        std::thread::spawn(move || lines.for_each(drop));
        let profile = home.path().join("profile");
        let mut chromium = Chromium {
            driver,
            port,
            session: String::new(),
            _home: home,
        };
        let options = json!({
            "binary": "/usr/lib/chromium/chromium",
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                     format!("--user-data-dir={}", profile.display())]
        });
        let capabilities =
            json!({"capabilities": {"alwaysMatch": {"goog:chromeOptions": options}}});
        let created = chromium.command("POST", "/session", capabilities);
        chromium.session = created["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        chromium
    }

    /// One WebDriver command; its `value`.
    fn command(&self, method: &str, path: &str, body: Value) -> Value {
        let path = match self.session.is_empty() {
            true => path.to_string(),
            false => format!("/session/{}{path}", self.session),
        };
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let body = match body {
            Value::Null => String::new(),
            body => body.to_string(),
        };
        let request = format!(
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
             Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        );
        stream.write_all(request.as_bytes()).unwrap();
        stream.set_read_timeout(Some(WITHIN)).unwrap();
        let mut reader = BufReader::new(stream);
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line.trim().is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let answer: Value = serde_json::from_slice(&body)
            .unwrap_or_else(|_| panic!("{}", String::from_utf8_lossy(&body)));
        assert!(
            answer["value"]["error"].is_null(),
            "{method} {path}: {answer:#}"
        );
        answer["value"].clone()
    }

    fn eval(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Evaluates `script` until it returns something truthy; that value.
    async fn until(&self, script: &str, what: &str) -> Value {
        let deadline = Instant::now() + WITHIN;
        loop {
            let value = self.eval(script);
            let truthy = !matches!(&value, Value::Null | Value::Bool(false))
                && value != json!("")
                && value != json!(0);
            if truthy {
                return value;
            }
            assert!(Instant::now() < deadline, "{what}: never ({script})");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn open(&self, url: &str) {
        self.command("POST", "/url", json!({"url": url}));
        self.until(
            "return window.drydock && window.drydock.ready",
            "the page connects",
        )
        .await;
    }

    /// The first element `css` selects.
    fn find(&self, css: &str) -> String {
        let found = self.command(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        let reference = found.as_object().and_then(|o| o.values().next());
        reference.and_then(Value::as_str).unwrap().to_string()
    }

    fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        let path = format!("/element/{element}/value");
        self.command("POST", &path, json!({"text": text}));
    }

    fn click(&self, css: &str) {
        let element = self.find(css);
        self.command("POST", &format!("/element/{element}/click"), json!({}));
    }

    /// Opens a new window and switches to it.
    fn new_window(&self) {
        let window = self.command("POST", "/window/new", json!({"type": "window"}));
        self.command("POST", "/window", json!({"handle": window["handle"]}));
    }

    fn screenshot(&self) -> Vec<u8> {
        use base64::Engine;
        let png = self.command("GET", "/screenshot", Value::Null);
        let png = png.as_str().unwrap();
        base64::engine::general_purpose::STANDARD
            .decode(png)
            .unwrap()
    }
}

impl Drop for Chromium {
    fn drop(&mut self) {
        // The driver's whole group: chromedriver and every Chromium process it started.
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.driver.id())])
            .status();
        let _ = self.driver.wait();
    }
}

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
fn get(base: &str, path: &str, cookie: Option<&str>) -> (u16, Option<String>, Option<String>) {
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
    let server = Server::start_with_env(&[], &[("PATH", &path)]);
    let base = server.base_url();
    let client = modern_client(&server.url).await;
    let project = test_project("cargo-clean");
    let created = call_ok(
        &client,
        "terminal_create",
        json!({"cwd": path_arg(&project), "backend": "pty"}),
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
    chromium.type_into(
        &format!("{panel} textarea.xterm-helper-textarea"),
        "echo hello-$((6*7))\n",
    );
    let has_output =
        format!("return (window.drydock.terminalText({session:?}) || '').includes('hello-42')");
    chromium
        .until(&has_output, "the command's output in the panel")
        .await;

    // A tool call of an MCP client shows in the feed with its status.
    call_ok(
        &client,
        "compile",
        json!({"project_path": path_arg(&project)}),
    )
    .await;
    let line = chromium
        .until(
            "const li = document.querySelector('#calls li[data-tool=compile]'); return li && li.textContent",
            "the compile call in the feed",
        )
        .await;
    let line = line.as_str().unwrap();
    assert!(
        line.contains("compile ok") && line.contains("cargo-clean"),
        "{line}"
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

    // A second page sees the same screen, and the calls made before it came.
    chromium.new_window();
    chromium.open(&format!("{base}/")).await;
    chromium
        .until(&has_output, "the redraw on a second page")
        .await;
    chromium
        .until(
            "return document.querySelector('#calls li[data-tool=compile]') !== null",
            "the earlier compile call on the second page",
        )
        .await;
    let shot = std::env::temp_dir().join("drydock-dashboard.png");
    std::fs::write(&shot, chromium.screenshot()).unwrap();

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

#[tokio::test(flavor = "multi_thread")]
async fn a_waiting_claude_code_turns_its_panel_yellow_and_approve_lets_it_run() {
    let ClaudeInPty {
        home,
        fake: _fake,
        server,
        client,
        session: agent,
    } = ClaudeInPty::start("dashboard-claude").await;
    let idle = call_ok(
        &client,
        "agent_wait",
        json!({"agents": [agent], "states": ["idle"], "timeout_ms": 60000}),
    )
    .await;
    assert_eq!(idle["matched"], true, "{idle:#}");

    // Three more live terminals beside the agent: the four-panel screenshot.
    for command in ["ls -la", "git --version; cargo --version", "seq 1 30"] {
        call_ok(
            &client,
            "terminal_create",
            json!({"cwd": path_arg(&home.project), "command": command, "backend": "pty"}),
        )
        .await;
    }
    let chromium = Chromium::start();
    chromium.open(&format!("{}/", server.base_url())).await;
    call_ok(
        &client,
        "agent_send",
        json!({"agent": agent, "text": "Run the lab command lab:bash"}),
    )
    .await;
    let panel = format!(".panel[data-session={agent:?}]");
    let question = chromium
        .until(
            &format!(
                "const p = document.querySelector('{panel}.state-waiting [data-testid=question]'); return p && p.textContent"
            ),
            "the panel shows the agent's question",
        )
        .await;
    assert!(!question.as_str().unwrap().is_empty(), "{question}");
    let title = chromium.eval("return document.title");
    assert_eq!(title, "(1) drydock");
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
    let errors = chromium.eval("return window.drydock.errors");
    assert_eq!(errors, json!([]), "the page logged no error");
    drop(chromium);
    call_ok(&client, "agent_kill", json!({"agent": agent})).await;
}
