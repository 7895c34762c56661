//! Starting an agent on a task, with a person's consent: through the client (MCP elicitation)
//! when it can ask, else as a pending approval a person answers with `drydock approve ID`.
//! The agent runs behind a shell in a session of its own (tmux by default, so the user can
//! attach), with drydock's hooks and drydock as an MCP server for that run, passed through
//! the CLI's own flags: the user's settings files are never touched.

use futures::FutureExt;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use futures::future::BoxFuture;
use serde_json::json;

use super::approvals::Approval;
use super::hook_settings;
use super::launch::LaunchVars;
use super::profile::Profile;
use super::reports::{AgentInfo, SpawnReport};
use super::requests::{SpawnBackend, SpawnRequest};
use super::{AgentError, Agents};
use crate::call::Call;
use crate::millis::unix_millis;
use crate::private::write_private;
use crate::process::shell_quote::shell_word;
use crate::terminal::requests::{BackendKind, CreateRequest};
use crate::workspace::PathArgument;

/// Prefix of the sessions spawned agents run in.
pub(super) const PREFIX: &str = "agent-";
/// How long a spawned agent may take to show up in its terminal.
const STARTS_WITHIN: Duration = Duration::from_secs(30);
/// How long a spawned agent's PermissionRequest hook waits for a decision (Claude Code gives
/// the hook [`DECISION_HOOK_TIMEOUT_S`]).
pub(super) const DECISION_WAIT: Duration = Duration::from_secs(590);
const DECISION_HOOK_TIMEOUT_S: u64 = 600;

/// Asks the person at the client: Some(true) when they accept, Some(false) when they decline,
/// None when the client could not ask.
pub type AskClient = Box<dyn FnOnce(String) -> BoxFuture<'static, Option<bool>> + Send>;

/// How consent was given, or why the agent was not started.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Consent {
    /// The directory is one config names for spawning without asking.
    Waived,
    /// Accepted at the client (elicitation).
    AtClient,
    /// Approved with `drydock approve` (or the dashboard).
    Approved,
    Declined,
    TimedOut,
}

impl Consent {
    fn name(self) -> &'static str {
        match self {
            Consent::Waived => "waived",
            Consent::AtClient => "accepted",
            Consent::Approved => "approved",
            Consent::Declined => "declined",
            Consent::TimedOut => "timed_out",
        }
    }
}

/// One run of an agent, checked and consented to: what [`Agents::launch`] starts.
#[derive(Debug, Clone)]
pub struct Run {
    pub kind: String,
    pub prompt: String,
    /// Inside an allowed root (checked by the caller).
    pub cwd: PathBuf,
    /// The terminal session it runs in.
    pub session: String,
    pub backend: SpawnBackend,
    /// Set in the session for the agent (and what it runs).
    pub env: BTreeMap<String, String>,
    /// Tools the agent may use without asking: listed in its settings where the CLI has
    /// them, and allowed by its permission hook otherwise.
    pub allow: Vec<String>,
    /// The bearer token its MCP client sends drydock (default: the server's own).
    pub mcp_token: Option<String>,
    /// The agent replaces the session's shell: the session ends when the agent does, with its
    /// exit status (a task's run); otherwise the shell stays for the user.
    pub replace_shell: bool,
    /// The sandbox it runs in, if any.
    pub sandbox: Option<SandboxedRun>,
    /// The niceness it runs at, with all it starts (0: drydock's own).
    pub nice: u8,
}

/// A run's sandbox: bubblewrap with what the sandbox sees, and the loopback ports drydock's
/// `sandbox-run` forwards inside (its flags).
#[derive(Debug, Clone)]
pub struct SandboxedRun {
    pub bwrap: PathBuf,
    pub confinement: crate::sandbox::Confinement,
    pub forwards: Vec<String>,
}

impl SandboxedRun {
    /// `argv` run in the sandbox, which also sees `run_files` (the run's hooks settings and
    /// MCP config) and has the run's variables `env` (the shell that starts it has them, but
    /// the sandbox starts from nothing).
    fn wrap(
        &self,
        drydock: &str,
        run_files: Option<&Path>,
        env: &BTreeMap<String, String>,
        argv: Vec<String>,
    ) -> Vec<String> {
        let mut confinement = self.confinement.clone();
        if let Some(dir) = run_files {
            confinement.readable.push(crate::sandbox::Mount::same(dir));
        }
        confinement.env.extend(
            env.iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
        let inside = [drydock.to_string(), "sandbox-run".into()]
            .into_iter()
            .chain(self.forwards.iter().cloned())
            .chain(std::iter::once("--".to_string()))
            .chain(argv);
        confinement.command(&self.bwrap, inside)
    }
}

/// What [`Agents::launch`] started.
#[derive(Debug, Clone)]
pub struct Launched {
    pub session: String,
    pub attach: Option<String>,
    pub hooks: bool,
    pub mcp: bool,
    /// The agent once it showed up in its terminal; None if it did not within 30 s.
    pub agent: Option<AgentInfo>,
}

/// What drydock knows of a run it started, by session.
#[derive(Debug, Clone, Default)]
pub(super) struct RunTraits {
    /// Its hooks reach drydock.
    pub hooks: bool,
    pub allow: Vec<String>,
}

impl Agents {
    /// Starts an agent on `req.prompt` once a person agreed: see the module doc.
    pub fn spawn<'a>(
        &'a self,
        req: SpawnRequest,
        ask_client: Option<AskClient>,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<SpawnReport, AgentError>> {
        async move {
            self.launchable_profile(&req.kind).map_err(|e| match e {
                AgentError::InvalidArgument(why) => {
                    AgentError::InvalidArgument(format!("kind: {why}"))
                }
                other => other,
            })?;
            if req.prompt.trim().is_empty() {
                return Err(AgentError::InvalidArgument(
                    "prompt: the agent's task is empty".into(),
                ));
            }
            let cwd = self
                .workspace
                .resolve_dir(PathArgument::Cwd, &req.cwd)
                .map_err(|e| AgentError::InvalidArgument(e.to_string()))?;
            let name = self.session_name(&req)?;

            let (consent, approval_id) = self.consent(&req, &name, &cwd, ask_client, call).await?;
            if matches!(consent, Consent::Declined | Consent::TimedOut) {
                return Ok(SpawnReport {
                    started: false,
                    consent: consent.name().into(),
                    approval_id,
                    session: None,
                    attach: None,
                    hooks: false,
                    mcp: false,
                    agent: None,
                });
            }
            let run = Run {
                kind: req.kind,
                prompt: req.prompt,
                cwd,
                session: name,
                backend: req.backend.unwrap_or_default(),
                env: BTreeMap::new(),
                allow: Vec::new(),
                mcp_token: None,
                replace_shell: false,
                sandbox: None,
                // A person's agent, which they watch: at drydock's own priority.
                nice: 0,
            };
            let launched = self.launch(run, call).await?;
            Ok(SpawnReport {
                started: launched.agent.is_some(),
                consent: consent.name().into(),
                approval_id,
                session: Some(launched.session),
                attach: launched.attach,
                hooks: launched.hooks,
                mcp: launched.mcp,
                agent: launched.agent,
            })
        }
        .boxed()
    }

    /// The profile of `kind`, launchable or not.
    pub fn profile(&self, kind: &str) -> Option<&Profile> {
        self.profiles.get(kind)
    }

    /// The profile of `kind` if drydock can start it: it says how, and its CLI is installed.
    pub fn launchable_profile(&self, kind: &str) -> Result<&Profile, AgentError> {
        let profile = self.profiles.get(kind).filter(|p| p.launch.is_some());
        let Some(profile) = profile else {
            return Err(AgentError::InvalidArgument(format!(
                "{kind:?} is not an agent drydock can start; it can start: {}",
                self.launchable().join(", ")
            )));
        };
        let program = self.program_of(profile);
        if crate::process::find_program(&program).is_none() {
            return Err(AgentError::InvalidArgument(format!(
                "the {kind} CLI is not installed: `{program}` was not found {where_}; \
                 set agents.commands.{kind} in drydock's config to the path of its executable",
                where_ = match program.contains('/') {
                    true => "there".to_string(),
                    false => format!(
                        "on drydock's PATH ({})",
                        std::env::var("PATH").unwrap_or_default()
                    ),
                }
            )));
        }
        Ok(profile)
    }

    /// Where the executable that starts agent `kind` is, if it is installed.
    pub fn program_path(&self, kind: &str) -> Option<PathBuf> {
        let profile = self.profiles.get(kind)?;
        crate::process::find_program(&self.program_of(profile))
    }

    /// The executable that starts `profile`'s agent: `agents.commands.KIND`, else the
    /// profile's own.
    fn program_of(&self, profile: &Profile) -> String {
        match self.config.agents.commands.get(&profile.name) {
            Some(program) => program.clone(),
            None => profile
                .launch_argv(&LaunchVars::default())
                .ok()
                .and_then(|argv| argv.into_iter().next())
                .unwrap_or_default(),
        }
    }

    /// Starts `run`'s agent behind a shell in a new session, with drydock's hooks and MCP
    /// config for this run, and waits until it shows up.
    pub fn launch<'a>(
        &'a self,
        run: Run,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<Launched, AgentError>> {
        async move {
            let profile = self.launchable_profile(&run.kind)?;
            let drydock = std::env::current_exe().map_err(|e| {
                AgentError::InvalidArgument(format!("cannot tell where drydock is: {e}"))
            })?;
            let files = self.run_files(&run, &drydock)?;
            let drydock = drydock.display().to_string();
            let (hooks_file, mcp_file) = match &files {
                Some(files) => (
                    Some(files.hooks.display().to_string()),
                    Some(files.mcp.display().to_string()),
                ),
                None => (None, None),
            };
            let mcp_url = self.endpoint.get().map(|e| e.mcp_url());
            let with_hooks =
                files.is_some() && !profile.launch.as_ref().is_some_and(|l| l.hooks.is_empty());
            let with_mcp =
                files.is_some() && !profile.launch.as_ref().is_some_and(|l| l.mcp.is_empty());
            let mut argv = profile
                .launch_argv(&LaunchVars {
                    prompt: Some(&run.prompt),
                    with_hooks,
                    with_mcp,
                    drydock: Some(&drydock),
                    hooks_file: hooks_file.as_deref(),
                    mcp_file: mcp_file.as_deref(),
                    mcp_url: mcp_url.as_deref(),
                })
                .map_err(|e| AgentError::InvalidArgument(e.to_string()))?;
            argv[0] = self.program_of(profile);
            if let Some(sandbox) = &run.sandbox {
                let run_files = files.as_ref().and_then(|f| f.hooks.parent());
                argv = sandbox.wrap(&drydock, run_files, &run.env, argv);
            }
            if run.nice > 0 {
                argv.splice(0..0, ["nice".into(), "-n".into(), run.nice.to_string()]);
            }
            let mut command = argv
                .iter()
                .map(|word| shell_word(word))
                .collect::<Vec<_>>()
                .join(" ");
            if run.replace_shell {
                command = format!("exec {command}");
            }
            let created = self
                .terminals
                .create(
                    CreateRequest {
                        name: Some(run.session.clone()),
                        command: Some(command),
                        cwd: run.cwd.display().to_string(),
                        rows: None,
                        cols: None,
                        env: run.env.clone(),
                        backend: Some(match run.backend {
                            SpawnBackend::Tmux => BackendKind::Tmux,
                            SpawnBackend::Pty => BackendKind::Pty,
                        }),
                        place: None,
                    },
                    call,
                )
                .await?;
            self.remember_run(
                &run.session,
                RunTraits {
                    hooks: with_hooks,
                    allow: run.allow.clone(),
                },
            );
            let mut agent = self.appeared(&run.session, &call.cancel).await?;
            if with_hooks && agent.is_some() {
                agent = self.took_prompt(&run.session, &call.cancel).await?;
            }
            Ok(Launched {
                session: run.session,
                attach: created.session.attach,
                hooks: with_hooks,
                mcp: with_mcp,
                agent,
            })
        }
        .boxed()
    }

    /// Takes up a run started by an earlier drydock (a task adopted after a restart): its
    /// hooks reach this one through the same endpoint file.
    pub fn adopt_run(&self, session: &str, allow: Vec<String>) {
        self.remember_run(session, RunTraits { hooks: true, allow });
    }

    fn remember_run(&self, session: &str, traits: RunTraits) {
        self.spawned
            .lock()
            .expect("spawned lock")
            .insert(session.to_string(), traits);
    }

    /// The agent in session `name` once it shows up, or None after [`STARTS_WITHIN`].
    async fn appeared(
        &self,
        name: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<AgentInfo>, AgentError> {
        let deadline = Instant::now() + STARTS_WITHIN;
        loop {
            let watch = self.watch().await;
            match self.one(name).await {
                Ok(agent) => return Ok(Some(agent)),
                Err(AgentError::UnknownAgent { .. }) if Instant::now() < deadline => {}
                Err(AgentError::UnknownAgent { .. }) => return Ok(None),
                Err(other) => return Err(other),
            }
            watch.changed(Some(deadline), cancel).await?;
        }
    }

    /// The agent in session `name` once its hooks say it took up its prompt (it is idle
    /// between its SessionStart and its first UserPromptSubmit: an `agent_wait` for idle
    /// right after the spawn must not end there), or as it is after [`STARTS_WITHIN`]; None
    /// once it is gone.
    async fn took_prompt(
        &self,
        name: &str,
        cancel: &tokio_util::sync::CancellationToken,
    ) -> Result<Option<AgentInfo>, AgentError> {
        let took = |agent: &AgentInfo| {
            !matches!(agent.state.as_str(), "starting" | "idle")
                || agent
                    .last_hook
                    .as_deref()
                    .is_some_and(|hook| hook != "SessionStart")
        };
        let deadline = Instant::now() + STARTS_WITHIN;
        match self.until(name, deadline, cancel, took).await {
            Ok((_, agent)) => Ok(Some(agent)),
            Err(AgentError::UnknownAgent { .. }) => Ok(None),
            Err(other) => Err(other),
        }
    }

    /// Whether `name` is a session drydock started an agent in.
    pub fn is_spawned(&self, name: &str) -> bool {
        self.spawned
            .lock()
            .expect("spawned lock")
            .contains_key(name)
    }

    /// Whether `name` is a session drydock started an agent in with its hooks.
    pub(super) fn hooks_reach_us(&self, name: &str) -> bool {
        self.run_traits(name).is_some_and(|run| run.hooks)
    }

    pub(super) fn run_traits(&self, name: &str) -> Option<RunTraits> {
        self.spawned
            .lock()
            .expect("spawned lock")
            .get(name)
            .cloned()
    }

    /// The agent kinds this drydock can start now (their CLI is installed).
    pub fn startable_kinds(&self) -> Vec<String> {
        self.launchable()
            .into_iter()
            .filter(|kind| self.launchable_profile(kind).is_ok())
            .collect()
    }

    fn launchable(&self) -> Vec<String> {
        self.profiles
            .iter()
            .filter(|p| p.launch.is_some())
            .map(|p| p.name.clone())
            .collect()
    }

    /// `agent-NAME`, or `agent-KIND-N` with the first N free.
    fn session_name(&self, req: &SpawnRequest) -> Result<String, AgentError> {
        let taken = self.terminals.names();
        let Some(name) = &req.name else {
            let free = (1..)
                .map(|n| format!("{PREFIX}{}-{n}", req.kind))
                .find(|candidate| !taken.contains(candidate))
                .expect("some number is free");
            return Ok(free);
        };
        let valid = !name.is_empty()
            && name.len() <= 40
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
        if !valid {
            return Err(AgentError::InvalidArgument(format!(
                "name: {name:?} is not a valid agent name (1-40 letters, digits, `-` or `_`; no `.` or `:`)"
            )));
        }
        let session = format!("{PREFIX}{name}");
        if taken.contains(&session) {
            return Err(AgentError::InvalidArgument(format!(
                "name: {session} is taken; choose another name"
            )));
        }
        Ok(session)
    }

    async fn consent(
        &self,
        req: &SpawnRequest,
        name: &str,
        cwd: &Path,
        ask_client: Option<AskClient>,
        call: &Call<'_>,
    ) -> Result<(Consent, Option<String>), AgentError> {
        if self
            .config
            .agents
            .spawn_without_consent
            .iter()
            .any(|root| cwd.starts_with(root))
        {
            return Ok((Consent::Waived, None));
        }
        let question = format!(
            "Start {} in {} (session {name}) on this task?\n\n{}",
            req.kind,
            cwd.display(),
            req.prompt
        );
        let timeout = req
            .consent_timeout_ms
            .map_or(self.config.agents.consent_timeout, |ms| {
                Duration::from_millis(ms.get())
            });
        if let Some(ask) = ask_client {
            let asked = tokio::select! {
                answer = tokio::time::timeout(timeout, ask(question)) => answer,
                () = call.cancel.cancelled() => return Err(AgentError::Cancelled),
            };
            match asked {
                Ok(Some(true)) => return Ok((Consent::AtClient, None)),
                Ok(Some(false)) => return Ok((Consent::Declined, None)),
                Err(_) => return Ok((Consent::TimedOut, None)),
                Ok(None) => {}
            }
        }
        let now = SystemTime::now();
        let (approval, mut asking) = self.approvals.ask(Approval {
            id: String::new(),
            action: "agent_spawn".into(),
            kind: req.kind.clone(),
            name: name.to_string(),
            cwd: cwd.display().to_string(),
            prompt: req.prompt.clone(),
            asked_at_ms: unix_millis(now),
            expires_at_ms: unix_millis(now + timeout),
        });
        tracing::warn!(
            "agent_spawn waits for a person: `drydock approve {id}` or `drydock decline {id}` ({} in {})",
            req.kind,
            cwd.display(),
            id = approval.id
        );
        let consent = tokio::select! {
            answer = asking.answer() => match answer {
                Some(true) => Consent::Approved,
                _ => Consent::Declined,
            },
            () = tokio::time::sleep(timeout) => Consent::TimedOut,
            () = call.cancel.cancelled() => return Err(AgentError::Cancelled),
        };
        Ok((consent, Some(approval.id)))
    }

    /// The hooks settings and MCP config of one run, in the data directory; None when no
    /// HTTP server takes hooks and MCP (`drydock mcp`).
    fn run_files(&self, run: &Run, drydock: &Path) -> Result<Option<RunFiles>, AgentError> {
        let Some(endpoint) = self.endpoint.get() else {
            return Ok(None);
        };
        let dir = self.config.data_dir.join("runs").join(&run.session);
        let written = (|| -> std::io::Result<RunFiles> {
            std::fs::create_dir_all(&dir)?;
            let files = RunFiles {
                hooks: dir.join("settings.json"),
                mcp: dir.join("mcp.json"),
            };
            let command = hook_settings::hook_command(drydock, Some(&self.config.data_dir));
            let mut settings = json!({});
            hook_settings::install(&mut settings, &files.hooks, &command)
                .map_err(|e| std::io::Error::other(e.to_string()))?;
            // The decision for a spawned agent's permission prompt may take a person a while.
            let permission = &mut settings["hooks"]["PermissionRequest"][0]["hooks"][0];
            permission["command"] =
                json!(format!("{command} --wait-s {}", DECISION_WAIT.as_secs()));
            permission["timeout"] = json!(DECISION_HOOK_TIMEOUT_S);
            if !run.allow.is_empty() {
                settings["permissions"] = json!({"allow": run.allow});
            }
            std::fs::write(&files.hooks, serde_json::to_vec_pretty(&settings)?)?;
            let mut server = json!({"type": "http", "url": endpoint.mcp_url()});
            if let Some(token) = run.mcp_token.as_ref().or(self.config.token.as_ref()) {
                server["headers"] = json!({"Authorization": format!("Bearer {token}")});
            }
            let mcp = json!({"mcpServers": {"drydock": server}});
            write_private(&files.mcp, &serde_json::to_vec_pretty(&mcp)?)?;
            Ok(files)
        })();
        written.map(Some).map_err(|e| {
            AgentError::InvalidArgument(format!(
                "cannot write the run's files in {}: {e}",
                dir.display()
            ))
        })
    }
}

struct RunFiles {
    hooks: PathBuf,
    mcp: PathBuf,
}
