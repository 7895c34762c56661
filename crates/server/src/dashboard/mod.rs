//! The dashboard: a page at `/` that shows drydock's terminals live, the agents and their
//! states, the task queue and every tool call, and lets a person act on them.
//!
//! The page is plain JavaScript modules and CSS, with xterm.js vendored in
//! `assets/vendor/xterm` (see its VERSIONS), all embedded in the binary: no build step, no
//! CDN, nothing fetched at build or run time. Plain modules rather than htmx because the page
//! is driven by one WebSocket that streams terminal bytes into xterm.js and events into the
//! panels; there is no server-rendered HTML to swap.
//!
//! Same guard as `/mcp`: loopback by default, cross-origin requests refused (403) by the
//! router's Origin check. With a token configured, the page needs a login: the banner prints
//! a one-time URL that sets an HttpOnly, SameSite=Strict cookie, so the token never shows in
//! the page's URLs.
//!
//! - [`socket`]: the one WebSocket per page (terminal output as binary frames, events and
//!   tool results as JSON, the person's actions as tool calls).

mod socket;

use std::collections::HashSet;
use std::sync::Mutex;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use serde::Deserialize;

use crate::app::App;

/// The page and its own scripts.
const PAGE: &[(&str, &str, &[u8])] = &[
    (
        "index.html",
        "text/html; charset=utf-8",
        include_bytes!("../../../../assets/dashboard/index.html"),
    ),
    (
        "app.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../assets/dashboard/app.js"),
    ),
    (
        "app.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../../assets/dashboard/app.css"),
    ),
    (
        "vendor/xterm/xterm.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../assets/vendor/xterm/xterm.js"),
    ),
    (
        "vendor/xterm/xterm.css",
        "text/css; charset=utf-8",
        include_bytes!("../../../../assets/vendor/xterm/xterm.css"),
    ),
    (
        "vendor/xterm/addon-fit.js",
        "text/javascript; charset=utf-8",
        include_bytes!("../../../../assets/vendor/xterm/addon-fit.js"),
    ),
    (
        "vendor/xterm/LICENSE",
        "text/plain; charset=utf-8",
        include_bytes!("../../../../assets/vendor/xterm/LICENSE"),
    ),
];

const COOKIE: &str = "drydock_dashboard";

/// Who may see the dashboard when a token is configured: whoever opened the one-time login
/// URL (and so holds its cookie).
pub struct Login {
    /// The one-time code of the login URL; None once used, or when no token is configured.
    code: Mutex<Option<String>>,
    /// Cookie values handed out.
    sessions: Mutex<HashSet<String>>,
    required: bool,
}

impl Login {
    /// A login for a server with a token (`required`), or none needed.
    pub fn new(required: bool) -> Arc<Login> {
        Arc::new(Login {
            code: Mutex::new(required.then(|| crate::private::random_hex(16))),
            sessions: Mutex::default(),
            required,
        })
    }

    /// The URL a person opens first: `base/` or, with a token, the one-time login URL.
    pub fn url(&self, base: &str) -> String {
        match self.code.lock().expect("login lock").as_ref() {
            Some(code) => format!("{base}/login?code={code}"),
            None => format!("{base}/"),
        }
    }

    fn admits(&self, headers: &HeaderMap) -> bool {
        if !self.required {
            return true;
        }
        let sessions = self.sessions.lock().expect("login lock");
        headers
            .get_all(header::COOKIE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(';'))
            .filter_map(|pair| pair.trim().strip_prefix(COOKIE)?.strip_prefix('='))
            .any(|value| sessions.contains(value))
    }
}

#[derive(Deserialize)]
struct LoginQuery {
    code: String,
}

#[derive(Clone)]
struct Shared {
    app: Arc<App>,
    login: Arc<Login>,
}

/// `/`, `/assets/…`, `/dashboard/ws` and `/login`, for `app`.
pub fn routes(app: Arc<App>, login: Arc<Login>) -> Router {
    let shared = Shared { app, login };
    let page = Router::new()
        .route("/", get(index))
        .route("/assets/{*path}", get(asset))
        .route("/dashboard/ws", get(socket::upgrade))
        .route("/hosts/{name}/open", get(open_host))
        .route_layer(middleware::from_fn_with_state(shared.clone(), logged_in))
        .with_state(shared.app.clone());
    Router::new()
        .route("/login", get(log_in))
        .with_state(shared)
        .merge(page)
}

async fn logged_in(State(shared): State<Shared>, request: Request, next: Next) -> Response {
    match shared.login.admits(request.headers()) {
        true => next.run(request).await,
        false => (
            StatusCode::UNAUTHORIZED,
            "drydock's dashboard needs a login: open the login URL `drydock serve` printed",
        )
            .into_response(),
    }
}

async fn log_in(
    State(shared): State<Shared>,
    query: Result<Query<LoginQuery>, axum::extract::rejection::QueryRejection>,
) -> Response {
    let login = &shared.login;
    let given = query.ok().map(|Query(given)| given.code);
    let taken = {
        let mut code = login.code.lock().expect("login lock");
        match (code.as_deref(), &given) {
            (Some(expected), Some(given)) if expected == given => code.take(),
            _ => None,
        }
    };
    // A code another host of the shared queue issued for this one (it is checked, and used
    // up, in the queue's database).
    let from_team = match (&taken, given.as_deref()) {
        (None, Some(code)) => shared.app.tasks().admits_viewer(code).await,
        _ => false,
    };
    if taken.is_none() && !from_team {
        return (
            StatusCode::UNAUTHORIZED,
            "this login URL is not valid (it works once): restart drydock for a new one",
        )
            .into_response();
    }
    let session = crate::private::random_hex(24);
    login
        .sessions
        .lock()
        .expect("login lock")
        .insert(session.clone());
    let cookie = format!("{COOKIE}={session}; HttpOnly; SameSite=Strict; Path=/");
    ([(header::SET_COOKIE, cookie)], Redirect::to("/")).into_response()
}

/// Opens host `name`'s dashboard: another host of the shared queue, through a one-time
/// login code issued for it.
async fn open_host(State(app): State<Arc<App>>, Path(name): Path<String>) -> Response {
    match app.tasks().viewer_link(&name).await {
        Ok(url) => Redirect::to(&url).into_response(),
        Err(error) => (StatusCode::NOT_FOUND, error.to_string()).into_response(),
    }
}

async fn index() -> Response {
    serve("index.html")
}

async fn asset(Path(path): Path<String>) -> Response {
    serve(&path)
}

fn serve(path: &str) -> Response {
    match PAGE.iter().find(|(name, _, _)| *name == path) {
        Some((_, mime, bytes)) => (
            [
                (header::CONTENT_TYPE, *mime),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *bytes,
        )
            .into_response(),
        None => (StatusCode::NOT_FOUND, "no such asset").into_response(),
    }
}
