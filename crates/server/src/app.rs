//! The running drydock: the resolved config, one handle per capability, the event feed and
//! the lifecycle they share. Every front end (the HTTP server, MCP over stdio, `drydock
//! call`) starts one `App` and stops it with [`App::shutdown`], which stops every child
//! process of every capability.

use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::agents::Agents;
use crate::agents::approvals::{Approval, ApprovalError};
use crate::catalog::{ToolName, Toolset};
use crate::config::Config;
use crate::docs::Docs;
use crate::events::{EventKind, Events, Received};
use crate::history::problem::ProblemKind;
use crate::history::{History, NoteJob};
use crate::long_calls::LongCalls;
use crate::supervise::supervised;
use crate::tasks::Tasks;
use crate::tasks::requests::TaskRequest;
use crate::tasks::state::TaskState;
use crate::tasks::store::Task;
use crate::terminal::Terminals;
use crate::toolchain::Toolchains;

/// How drydock was started: decides what runs in the background.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `drydock serve`: long-lived, many clients; idle terminals are reaped and the
    /// embedding model is loaded ahead of the first docs_lookup.
    Server,
    /// `drydock mcp`: one client on stdin/stdout, for as long as it stays.
    Stdio,
    /// `drydock call TOOL`: one tool, then exit.
    OneCall(ToolName),
}

pub struct App {
    config: Arc<Config>,
    toolchains: Toolchains,
    terminals: Arc<Terminals>,
    docs: Arc<Docs>,
    history: Arc<History>,
    agents: Arc<Agents>,
    tasks: Arc<Tasks>,
    events: Arc<Events>,
    /// The calls that became MCP tasks, where this run serves MCP clients.
    long_calls: Option<Arc<LongCalls>>,
    /// Cancelled by `shutdown`: every call in flight and every background task sees it.
    shutdown: CancellationToken,
    /// Tool calls in flight and background tasks, so `shutdown` can wait for them.
    tracker: TaskTracker,
}

impl App {
    /// The capabilities, ready; with the background work `mode` calls for.
    pub fn start(config: Arc<Config>, mode: Mode) -> BoxFuture<'static, Arc<App>> {
        Self::started(config, mode).boxed()
    }

    async fn started(config: Arc<Config>, mode: Mode) -> Arc<App> {
        let mut app = App::new(config);
        if matches!(mode, Mode::Server | Mode::Stdio) {
            app.long_calls = app.open_long_calls().await;
        }
        let app = Arc::new(app);
        if app.serves(Toolset::Terminal, mode) {
            let adopted = app.terminals.reconcile().await;
            if adopted > 0 && mode == Mode::Server {
                tracing::info!("serving {adopted} tmux session(s) left by an earlier drydock");
            }
        }
        if mode == Mode::Server && app.serves(Toolset::Terminal, mode) {
            app.terminals.start_reaper(app.shutdown.clone());
        }
        if matches!(mode, Mode::Server | Mode::Stdio) && app.serves(Toolset::Agents, mode) {
            let watcher = app.clone();
            app.tracker.spawn(async move {
                supervised("the agents' watcher", &watcher.shutdown.clone(), || {
                    let app = watcher.clone();
                    async move { app.agents.monitor(&app.events, &app.shutdown).await }
                })
                .await
            });
        }
        // Tasks run where their agents can reach drydock: the HTTP server.
        if mode == Mode::Server && app.serves(Toolset::Tasks, mode) {
            let tasks = app.tasks.clone();
            let stop = app.shutdown.clone();
            app.tracker.spawn(async move { tasks.monitor(stop).await });
        }
        if matches!(mode, Mode::Server | Mode::Stdio) && app.config.history.enabled {
            let recorder = app.clone();
            app.tracker.spawn(async move {
                supervised(
                    "the project memory's recorder",
                    &recorder.shutdown.clone(),
                    || {
                        let app = recorder.clone();
                        async move { app.remember().await }
                    },
                )
                .await
            });
        }

        if mode == Mode::Server && app.serves(Toolset::Docs, mode) {
            // Not tracked: loading the model is no reason to delay a shutdown.
            let docs = app.docs.clone();
            tokio::spawn(async move { docs.warm_up().await });
        }
        app
    }

    fn new(config: Arc<Config>) -> App {
        let events = Arc::new(Events::default());
        let terminals = Terminals::new(config.clone(), events.clone());
        let agents = Agents::new(terminals.clone(), config.clone());
        let docs = Docs::new(config.clone(), events.clone());
        let history = History::new(config.clone(), docs.clone());
        let toolchains = Toolchains::new(config.clone()).observed_by(history.clone());
        App {
            tasks: Tasks::new(
                config.clone(),
                agents.clone(),
                terminals.clone(),
                events.clone(),
                toolchains.clone(),
            ),
            toolchains,
            agents,
            terminals,
            docs,
            history,
            events,
            config,
            long_calls: None,
            shutdown: CancellationToken::new(),
            tracker: TaskTracker::new(),
        }
    }

    /// The store of MCP tasks, or None (and a warning) when its file cannot be opened: calls
    /// then answer as plain calls. Opened off the runtime: the file may be held by another
    /// drydock for as long as SQLite waits.
    async fn open_long_calls(&self) -> Option<Arc<LongCalls>> {
        let (dir, http, events) = (
            self.config.data_dir.clone(),
            self.config.http.clone(),
            self.events.clone(),
        );
        let opened = tokio::task::spawn_blocking(move || {
            LongCalls::open(&dir, http.task_ttl, http.task_after, events)
        })
        .await
        .map_err(|e| e.to_string())
        .and_then(|opened| opened.map_err(|e| e.to_string()));
        match opened {
            Ok(calls) => Some(Arc::new(calls)),
            Err(error) => {
                tracing::warn!("long calls will not become MCP tasks: {error}");
                None
            }
        }
    }

    /// Keeps what the event feed tells of in the project memory, until shutdown: each
    /// command a terminal's shell finishes, and each task's end with its transcript.
    async fn remember(&self) {
        let mut feed = self.events.subscribe();
        loop {
            let received = tokio::select! {
                received = feed.recv() => received,
                () = self.shutdown.cancelled() => return,
            };
            let event = match received {
                None => return,
                Some(Received::Missed(_)) => continue,
                Some(Received::Event(event)) => event,
            };
            if let Some(command) = History::command_of(&event) {
                self.history.note(command);
                continue;
            }
            let EventKind::TaskChanged(change) = &event.kind else {
                continue;
            };
            if TaskState::parse(&change.state).is_some_and(TaskState::is_finished) {
                let (tasks, history) = (self.tasks.clone(), self.history.clone());
                let (id, at_ms) = (change.task_id.clone(), event.at_ms);
                let stop = self.shutdown.clone();
                // Not tracked: waiting for a transcript is no reason to delay a shutdown.
                tokio::spawn(async move {
                    tokio::select! {
                        Some(task) = with_transcript(&tasks, &id) => {
                            history.note(task_note(&task, at_ms));
                        }
                        () = stop.cancelled() => {}
                    }
                });
            }
        }
    }

    /// Whether this run serves a toolset: a one-call run only the one its tool is in.
    fn serves(&self, toolset: Toolset, mode: Mode) -> bool {
        let wanted = match mode {
            Mode::OneCall(tool) => tool.toolset() == toolset,
            Mode::Server | Mode::Stdio => true,
        };
        wanted && self.config.toolsets.contains(&toolset)
    }

    pub fn config(&self) -> &Arc<Config> {
        &self.config
    }

    pub fn toolchains(&self) -> &Toolchains {
        &self.toolchains
    }

    pub fn terminals(&self) -> &Arc<Terminals> {
        &self.terminals
    }

    pub fn docs(&self) -> &Arc<Docs> {
        &self.docs
    }

    pub fn history(&self) -> &Arc<History> {
        &self.history
    }

    pub fn agents(&self) -> &Arc<Agents> {
        &self.agents
    }

    pub fn tasks(&self) -> &Arc<Tasks> {
        &self.tasks
    }

    pub fn long_calls(&self) -> Option<&Arc<LongCalls>> {
        self.long_calls.as_ref()
    }

    pub fn events(&self) -> &Arc<Events> {
        &self.events
    }

    /// A person's answer to pending approval `id`, published on the event feed as `by`'s.
    pub fn decide_approval(
        &self,
        id: &str,
        approve: bool,
        by: &str,
    ) -> Result<Approval, ApprovalError> {
        let approval = self.agents.approvals().decide(id, approve)?;
        self.events.publish(EventKind::ApprovalDecided {
            approval: approval.id.clone(),
            action: approval.action.clone(),
            kind: approval.kind.clone(),
            name: approval.name.clone(),
            approved: approve,
            by: by.to_string(),
        });
        Ok(approval)
    }

    /// Cancelled when the app shuts down.
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// A token for one call: cancelled by `caller` (the client's cancellation) or by
    /// shutdown. The call is tracked until the returned guard drops.
    pub fn call_token(&self, caller: &CancellationToken) -> (CancellationToken, CallGuard) {
        let token = self.shutdown.child_token();
        let linked = token.clone();
        let caller = caller.clone();
        self.tracker.spawn(async move {
            tokio::select! {
                _ = caller.cancelled() => linked.cancel(),
                _ = linked.cancelled() => {}
            }
        });
        let guard = CallGuard {
            token: token.clone(),
            _tracked: self.tracker.token(),
        };
        (token, guard)
    }

    /// Stops everything: cancels calls in flight, ends PTY sessions (drydock's tmux sessions
    /// stay for the next drydock), stops every child process of every capability and waits,
    /// bounded, until calls and background tasks are done.
    pub fn shutdown(&self) -> BoxFuture<'_, ()> {
        self.stop().boxed()
    }

    async fn stop(&self) {
        self.shutdown.cancel();
        let terminals = self.terminals.clone();
        let _ = tokio::task::spawn_blocking(move || terminals.shutdown()).await;
        let limit = self.config.limits.kill_grace * 2 + Duration::from_secs(2);
        let everything = async {
            self.toolchains.shutdown().await;
            self.tracker.close();
            self.tracker.wait().await;
        };
        if tokio::time::timeout(limit, everything).await.is_err() {
            tracing::warn!("some child processes or calls did not stop in time");
        }
        // The last results are recorded before drydock goes (`drydock call compile` too).
        if tokio::time::timeout(Duration::from_secs(10), self.history.flush())
            .await
            .is_err()
        {
            tracing::warn!("the project memory did not record the last results in time");
        }
    }
}

/// Finished task `id` once its transcript is kept (its session is read after its agent
/// stops), or as it is after a minute; None when it is gone or runs again.
async fn with_transcript(tasks: &Tasks, id: &str) -> Option<Task> {
    for _ in 0..120 {
        let request = TaskRequest {
            task_id: id.to_string(),
        };
        let task = tasks.show(request).await.ok()?.task;
        if !task.state.is_finished() {
            return None;
        }
        if task.transcript.is_some() {
            return Some(task);
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let request = TaskRequest {
        task_id: id.to_string(),
    };
    Some(tasks.show(request).await.ok()?.task)
}

/// A task's end as the project memory keeps it: its title, how it ended, its summary or
/// failure, and the end of its transcript.
fn task_note(task: &Task, at_ms: u64) -> NoteJob {
    let mut text = String::new();
    for part in [&task.summary, &task.failure, &task.transcript]
        .into_iter()
        .flatten()
    {
        text.push_str(part);
        text.push('\n');
    }
    NoteJob {
        at_ms,
        kind: ProblemKind::Task,
        project: std::path::PathBuf::from(&task.project_path),
        title: format!("{}: {}", task.title, task.description),
        text,
        status: task.state.name().to_string(),
        duration_ms: match (task.started_at_ms, task.finished_at_ms) {
            (Some(start), Some(end)) => end.saturating_sub(start),
            _ => 0,
        },
        by: format!("task {} ({})", task.id, task.agent_kind),
    }
}

/// Held for the length of one call (see [`App::call_token`]).
pub struct CallGuard {
    token: CancellationToken,
    _tracked: tokio_util::task::task_tracker::TaskTrackerToken,
}

impl Drop for CallGuard {
    /// The call is over: its link to the caller's cancellation is no longer needed.
    fn drop(&mut self) {
        self.token.cancel();
    }
}
