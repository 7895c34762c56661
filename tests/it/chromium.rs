//! A headless Chromium (Debian's, through its chromedriver) for the dashboard's tests and
//! benchmarks, spoken to in WebDriver: JSON over HTTP, the few commands needed, no client
//! crate (fantoccini's dependencies made cargo rebuild most of the tree).
//!
//! Both programs are found on PATH (`chromedriver`; `chromium`, `chromium-browser`,
//! `google-chrome`), or where `IT_CHROMEDRIVER` and `IT_CHROMIUM` name them.

use std::io::{BufRead, BufReader, Lines, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How long a WebDriver command, or a condition waited for, may take.
const WITHIN: Duration = Duration::from_secs(30);

/// chromedriver (in a process group of its own, with its own HOME and TMPDIR) and a headless
/// Chromium session, spoken to in WebDriver (JSON over HTTP: the few commands the tests need,
/// no client crate); both end with it, however the test ends.
pub struct Chromium {
    driver: Child,
    port: u16,
    session: String,
    _home: tempfile::TempDir,
}

/// The program `variable` names, else the first of `names` on PATH; a panic saying how to
/// get one when there is none.
fn program(variable: &str, names: &[&str]) -> PathBuf {
    if let Some(named) = std::env::var_os(variable) {
        let named = PathBuf::from(named);
        assert!(
            named.is_file(),
            "{variable}={} is not a file",
            named.display()
        );
        return named;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |name| dir.join(name)))
        .find(|candidate| candidate.is_file())
        .unwrap_or_else(|| {
            panic!(
                "none of {names:?} is on PATH and {variable} is not set: install Debian's \
                 chromium and chromium-driver (scripts/ensure-deps.sh), or set {variable} to \
                 the program"
            )
        })
}

/// Starts chromedriver on a port of its choosing and reads that port from what it prints;
/// `None` (the driver stopped) when it exits first, its stderr kept in `chromedriver.log`.
fn start_driver(
    program: &Path,
    home: &Path,
) -> Option<(Child, Lines<BufReader<ChildStdout>>, u16)> {
    let log = std::fs::File::create(home.join("chromedriver.log")).unwrap();
    let mut driver = Command::new(program)
        .arg("--port=0")
        .env("HOME", home)
        .env("TMPDIR", home)
        .stdout(Stdio::piped())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap_or_else(|e| panic!("{} does not start: {e}", program.display()));
    let mut lines = BufReader::new(driver.stdout.take().unwrap()).lines();
    let mut said = Vec::new();
    let port = lines.by_ref().find_map(|line| {
        let line = line.ok()?;
        said.push(line.clone());
        line.split("started successfully on port ")
            .nth(1)?
            .trim_end_matches('.')
            .parse::<u16>()
            .ok()
    });
    match port {
        Some(port) => Some((driver, lines, port)),
        None => {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", driver.id())])
                .status();
            let status = driver.wait();
            eprintln!(
                "chromedriver stopped before saying its port ({status:?}); it printed {said:?}"
            );
            None
        }
    }
}

impl Chromium {
    pub fn start() -> Chromium {
        let home = tempfile::tempdir().unwrap();
        let driver_program = program("IT_CHROMEDRIVER", &["chromedriver"]);
        let browser = program(
            "IT_CHROMIUM",
            &["chromium", "chromium-browser", "google-chrome"],
        );
        let (driver, lines, port) = (1..=3)
            .find_map(|_| start_driver(&driver_program, home.path()))
            .unwrap_or_else(|| {
                let said = std::fs::read_to_string(home.path().join("chromedriver.log"));
                panic!("chromedriver never said its port in 3 starts; it last said: {said:?}")
            });
        std::thread::spawn(move || lines.for_each(drop));
        let profile = home.path().join("profile");
        let mut chromium = Chromium {
            driver,
            port,
            session: String::new(),
            _home: home,
        };
        let options = json!({
            "binary": browser,
            "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--no-first-run", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--window-size=1400,900",
                     format!("--user-data-dir={}", profile.display())]
        });
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": options,
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let created = chromium.command("POST", "/session", capabilities);
        chromium.session = created["sessionId"]
            .as_str()
            .expect("a session")
            .to_string();
        chromium
    }

    /// One WebDriver command; its `value`.
    pub fn command(&self, method: &str, path: &str, body: Value) -> Value {
        match self.try_command(method, path, body) {
            Ok(value) => value,
            Err(answer) => panic!("{method} {path}: {answer:#}"),
        }
    }

    /// One WebDriver command; its `value`, or the error it answered.
    fn try_command(&self, method: &str, path: &str, body: Value) -> Result<Value, Value> {
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
        match answer["value"]["error"].is_null() {
            true => Ok(answer["value"].clone()),
            false => Err(answer["value"].clone()),
        }
    }

    pub fn eval(&self, script: &str) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            json!({"script": script, "args": []}),
        )
    }

    /// Evaluates `script` until it returns something truthy; that value.
    pub async fn until(&self, script: &str, what: &str) -> Value {
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

    /// [`Chromium::until`] for a script that returns a string.
    pub async fn until_text(&self, script: &str, what: &str) -> String {
        let value = self.until(script, what).await;
        value
            .as_str()
            .unwrap_or_else(|| panic!("{what}: not a string: {value}"))
            .to_string()
    }

    pub async fn open(&self, url: &str) {
        self.command("POST", "/url", json!({"url": url}));
        self.until(
            "return window.drydock && window.drydock.ready",
            "the page connects",
        )
        .await;
    }

    /// The first element `css` selects.
    pub fn find(&self, css: &str) -> String {
        let found = self.command(
            "POST",
            "/element",
            json!({"using": "css selector", "value": css}),
        );
        let reference = found.as_object().and_then(|o| o.values().next());
        reference.and_then(Value::as_str).unwrap().to_string()
    }

    pub fn type_into(&self, css: &str, text: &str) {
        let element = self.find(css);
        let path = format!("/element/{element}/value");
        self.command("POST", &path, json!({"text": text}));
    }

    /// Clicks what `css` selects; found again if the page redrew it meanwhile (as a person
    /// would click the button again).
    pub fn click(&self, css: &str) {
        for _ in 0..3 {
            let element = self.find(css);
            let path = format!("/element/{element}/click");
            match self.try_command("POST", &path, json!({})) {
                Ok(_) => return,
                Err(error) if error["error"] == "stale element reference" => continue,
                Err(error) => panic!("click {css}: {error:#}"),
            }
        }
        panic!("click {css}: the page kept redrawing it");
    }

    /// The console's errors (and failed loads) since the last call.
    pub fn console_errors(&self) -> Vec<String> {
        let entries = self.command("POST", "/se/log", json!({"type": "browser"}));
        entries
            .as_array()
            .unwrap()
            .iter()
            .filter(|entry| entry["level"] == "SEVERE")
            .map(|entry| entry["message"].as_str().unwrap_or_default().to_string())
            .collect()
    }

    /// Runs `script` as an async function body and returns what it resolves to (at most
    /// [`WITHIN`]).
    #[allow(dead_code, reason = "the dashboard benchmark's")]
    pub fn eval_async(&self, script: &str) -> Value {
        let script = format!(
            "const done = arguments[arguments.length - 1]; \
             (async () => {{ {script} }})().then(done, (e) => done({{error: String(e)}}));"
        );
        self.command(
            "POST",
            "/execute/async",
            json!({"script": script, "args": []}),
        )
    }

    /// Opens a new window and switches to it; the window before it.
    pub fn new_window(&self) -> String {
        let before = self.command("GET", "/window", Value::Null);
        let window = self.command("POST", "/window/new", json!({"type": "window"}));
        self.switch_to(window["handle"].as_str().unwrap());
        before.as_str().unwrap().to_string()
    }

    pub fn switch_to(&self, window: &str) {
        self.command("POST", "/window", json!({"handle": window}));
    }

    /// Grants pages `permission` ("notifications") as if the person had allowed it.
    pub fn grant(&self, permission: &str) {
        self.command(
            "POST",
            "/permissions",
            json!({"descriptor": {"name": permission}, "state": "granted"}),
        );
    }

    /// The process group of chromedriver and every Chromium process it started.
    #[allow(dead_code, reason = "the dashboard benchmark's")]
    pub fn process_group(&self) -> u32 {
        self.driver.id()
    }

    pub fn screenshot(&self) -> Vec<u8> {
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
