//! A task's agent in its sandbox (see [`crate::sandbox`]): what it sees (its work, a private
//! git and home, the toolchains, its CLI), and its two ways out, opened before it starts and
//! closed when its run ends: drydock as the task, and its model API.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

use super::error::TaskError;
use super::files;
use super::isolation::Isolation;
use super::store::Task;
use super::worktree::Author;
use crate::agents::profile::Profile;
use crate::agents::{Agents, SandboxedRun};
use crate::config::Config;
use crate::sandbox::net_gate::{self, AllowList, KeyedOrigin};
use crate::sandbox::{Confinement, Mount, PrivateGit, confinement, support};
use crate::untrusted::{self, Refused, Tree};

mod keys;

/// Serves drydock to one sandbox: its listener, its task's token, until the token's run ends.
pub type Door = Arc<dyn Fn(UnixListener, String, CancellationToken) + Send + Sync>;

/// The first loopback port the sandbox's proxy is offered at inside.
const PROXY_PORT: u16 = 3128;
const DRYDOCK_SOCKET: &str = "drydock.sock";
const NET_SOCKET: &str = "net.sock";

/// The ways out of the sandboxes of the runs this drydock started, by session.
#[derive(Default)]
pub(super) struct Gates {
    door: OnceLock<Door>,
    open: Mutex<HashMap<String, Gate>>,
}

struct Gate {
    stop: CancellationToken,
    dir: PathBuf,
    /// Waiting for the door (a run adopted before the HTTP server opened it).
    waiting: Option<(UnixListener, String)>,
}

impl Gates {
    /// From now on sandboxes reach drydock through `door`; those that waited for it too.
    pub(super) fn open_door(&self, door: Door) {
        let _ = self.door.set(door.clone());
        for gate in self.lock().values_mut() {
            if let Some((listener, token)) = gate.waiting.take() {
                door(listener, token, gate.stop.clone());
            }
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Gate>> {
        self.open.lock().expect("gates lock")
    }

    /// Opens `session`'s two sockets in `dir` (closing any earlier ones): drydock as the
    /// task of `token`, and the proxy to `allow`, which holds the keys of `keyed`.
    fn open(
        &self,
        session: &str,
        dir: &Path,
        token: &str,
        allow: Arc<AllowList>,
        keyed: Vec<KeyedOrigin>,
    ) -> std::io::Result<()> {
        self.close(session);
        std::fs::create_dir_all(dir)?;
        for name in [DRYDOCK_SOCKET, NET_SOCKET] {
            match std::fs::remove_file(dir.join(name)) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
                _ => {}
            }
        }
        let drydock = UnixListener::bind(dir.join(DRYDOCK_SOCKET))?;
        let net = UnixListener::bind(dir.join(NET_SOCKET))?;
        let stop = CancellationToken::new();
        let task = session.to_string();
        let told = std::sync::atomic::AtomicU64::new(0);
        // A sandbox that asks again and again must not fill drydock's log: the first few
        // refusals, then one in a thousand with the count.
        let refused = move |destination: &str| {
            let count = told.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            if count <= 10 || count.is_multiple_of(1000) {
                tracing::warn!(
                    "the sandbox of {task} was refused {destination}: not an allowed host ({count} refusals so far)"
                );
            }
        };
        tokio::spawn(net_gate::serve(
            net,
            allow,
            keyed.into(),
            Arc::new(refused),
            stop.clone(),
        ));
        let waiting = match self.door.get() {
            Some(door) => {
                door(drydock, token.to_string(), stop.clone());
                None
            }
            None => Some((drydock, token.to_string())),
        };
        let gate = Gate {
            stop,
            dir: dir.to_path_buf(),
            waiting,
        };
        self.lock().insert(session.to_string(), gate);
        Ok(())
    }

    /// Closes `session`'s sockets: its sandbox reaches nothing from now on.
    pub(super) fn close(&self, session: &str) {
        if let Some(gate) = self.lock().remove(session) {
            gate.stop.cancel();
            let _ = std::fs::remove_dir_all(&gate.dir);
        }
    }
}

/// A policy that approves commands, on a host that cannot sandbox an agent.
#[derive(Debug, thiserror::Error)]
#[error(
    "the policy {policy:?} approves Bash without a person, and this host cannot sandbox an agent ({why}); \
     install bubblewrap, choose a policy without Bash, or set `[tasks] sandbox = false` to run agents unconfined"
)]
pub(super) struct Unconfined {
    policy: String,
    why: String,
}

impl Unconfined {
    fn new(policy: &str, why: &str) -> Unconfined {
        Unconfined {
            policy: policy.to_string(),
            why: why.to_string(),
        }
    }
}

/// How a task's agent was confined, as `task_show` and the dashboard say it.
pub(super) fn unconfined(why: &str) -> String {
    format!("none: {why}")
}

/// The sandboxes of this host's agents: what each may read and reach, and its two ways
/// out (drydock's MCP endpoint and the allowed hosts).
pub(super) struct Sandboxes {
    config: Arc<Config>,
    agents: Arc<Agents>,
    gates: Gates,
}

impl Sandboxes {
    pub(super) fn new(config: Arc<Config>, agents: Arc<Agents>) -> Sandboxes {
        Sandboxes {
            config,
            agents,
            gates: Gates::default(),
        }
    }

    /// From now on the sandboxes reach drydock through `door` (the HTTP server's).
    pub(super) fn open_door(&self, door: Door) {
        self.gates.open_door(door);
    }

    /// Closes the ways out of `session`'s sandbox.
    pub(super) fn close(&self, session: &str) {
        self.gates.close(session);
    }

    /// The sandbox `task`'s agent runs in, or None (and why) where the config turned it off or
    /// the host cannot make one; a task whose policy lets its agent run commands without a
    /// person is refused then, unless the config turned the sandbox off by name.
    pub(super) async fn sandbox_for(
        &self,
        task: &Task,
        isolation: &Isolation,
        session: &str,
        token: &str,
    ) -> Result<(Option<SandboxedRun>, String), TaskError> {
        if !self.config.tasks.sandbox {
            return Ok((
                None,
                unconfined("[tasks] sandbox = false in drydock's config"),
            ));
        }
        let support = tokio::task::spawn_blocking(support::host)
            .await
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        let Some(bwrap) = support.bwrap() else {
            self.refuse_unconfined(task, &support.describe())?;
            return Ok((None, unconfined(&support.describe())));
        };
        let profile = self
            .agents
            .launchable_profile(&task.agent_kind)
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?
            .clone();
        let dir = files::task_dir(&self.config, &task.id);
        let work = PathBuf::from(isolation.dir(&task.project_path));
        let mut confinement = Confinement {
            work: work.clone(),
            home: self
                .private_home(&profile, &dir, &work_folders(isolation, &work))
                .await?,
            readable: self.readable_for(task, &profile),
            ..Confinement::default()
        };
        if let Some(home) = &confinement.home {
            confinement.protected.extend(credentials(&profile, home));
        }
        let mut wanted = profile.sandbox.env.clone();
        wanted.extend(profile.sandbox.base_url_env.iter().cloned());
        wanted.extend(self.config.tasks.sandbox_env.iter().cloned());
        let held = self.held_keys(&profile)?;
        confinement.passed = confinement::passed_env(&wanted);
        confinement
            .passed
            .retain(|(name, _)| !held.withheld.contains(name));
        confinement.env.extend(held.placeholders.iter().cloned());
        confinement.hide_credentials(&self.config.data_dir.join("sandbox"));
        // As drydock's own terminals have it: the agent draws in a terminal of drydock's.
        confinement
            .env
            .push(("TERM".into(), "xterm-256color".into()));
        if let Isolation::Worktree(worktree) = isolation {
            let author = Author::of_task(&task.id);
            let git = PrivateGit::prepare(
                Path::new(&worktree.repo),
                worktree.path(),
                &worktree.branch,
                &dir.join("git"),
                (&author.name, &author.email),
            )
            .await
            .map_err(|e| TaskError::InvalidArgument(format!("its sandbox's git: {e}")))?;
            confinement.readable.extend(git.readable());
            confinement.writable.push(Mount::same(worktree.path()));
            confinement.writable.extend(git.writable());
            confinement.protected.extend(git.protected());
        }
        if let Some(target) = self.config.task_dirs().cargo_target_for(&work) {
            std::fs::create_dir_all(&target).map_err(|e| {
                TaskError::InvalidArgument(format!("cannot make {}: {e}", target.display()))
            })?;
            confinement.writable.push(Mount::same(target));
        }
        let (allow, loopback) = self.destinations(&profile)?;
        let allow = Arc::new(allow);
        let gate_dir = self.config.data_dir.join("sandbox").join(session);
        self.gates
            .open(session, &gate_dir, token, allow.clone(), held.origins)
            .map_err(|e| {
                TaskError::InvalidArgument(format!(
                    "cannot open its sandbox's sockets in {}: {e}",
                    gate_dir.display()
                ))
            })?;
        confinement.readable.push(Mount::same(&gate_dir));
        let mut forwards = Vec::new();
        let mut taken: BTreeSet<u16> = loopback.iter().copied().collect();
        if let Some(port) = self.agents.local_endpoint().and_then(|e| port_of(&e.base)) {
            forwards.extend([
                "--relay".to_string(),
                format!("{port}={}", gate_dir.join(DRYDOCK_SOCKET).display()),
            ]);
            taken.insert(port);
        }
        for port in &loopback {
            forwards.extend([
                "--tunnel".to_string(),
                format!(
                    "{port}={}=127.0.0.1:{port}",
                    gate_dir.join(NET_SOCKET).display()
                ),
            ]);
        }
        let mut free_port = || {
            let port = (PROXY_PORT..).find(|p| !taken.contains(p)).expect("a port");
            taken.insert(port);
            port
        };
        let proxy_port = free_port();
        if let Some(stand_in) = &held.stand_in {
            let port = free_port();
            forwards.extend([
                "--tunnel".to_string(),
                format!(
                    "{port}={}={}",
                    gate_dir.join(NET_SOCKET).display(),
                    stand_in.destination
                ),
            ]);
            confinement
                .env
                .push((stand_in.var.clone(), stand_in.url_at(port)));
        }
        forwards.extend([
            "--relay".to_string(),
            format!("{proxy_port}={}", gate_dir.join(NET_SOCKET).display()),
        ]);
        let proxy = format!("http://127.0.0.1:{proxy_port}");
        for name in [
            "HTTPS_PROXY",
            "https_proxy",
            "HTTP_PROXY",
            "http_proxy",
            "ALL_PROXY",
            "all_proxy",
        ] {
            confinement.env.push((name.into(), proxy.clone()));
        }
        for name in ["NO_PROXY", "no_proxy"] {
            confinement
                .env
                .push((name.into(), "127.0.0.1,localhost,::1".into()));
        }
        confinement.env.push((
            crate::local_endpoint::SANDBOX_SOCKET_VAR.into(),
            gate_dir.join(DRYDOCK_SOCKET).display().to_string(),
        ));
        confinement
            .env
            .push(("GIT_CONFIG_NOSYSTEM".into(), "1".into()));
        let described = describe(&confinement, &allow, &held.placeholders);
        Ok((
            Some(SandboxedRun {
                bwrap: bwrap.to_path_buf(),
                confinement,
                forwards,
            }),
            described,
        ))
    }

    /// Opens again the ways out of the sandbox of `task`'s agent, which an earlier drydock
    /// started and which runs on (its sockets' folder is bound in, so new sockets reach it).
    pub(super) fn reopen_sandbox(
        &self,
        task: &Task,
        session: &str,
        token: &str,
    ) -> Result<(), TaskError> {
        let gate_dir = self.config.data_dir.join("sandbox").join(session);
        if !gate_dir.is_dir() {
            return Ok(());
        }
        let profile = self
            .agents
            .launchable_profile(&task.agent_kind)
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        let (allow, _) = self.destinations(profile)?;
        let held = self.held_keys(profile)?;
        self.gates
            .open(session, &gate_dir, token, Arc::new(allow), held.origins)
            .map_err(|e| {
                TaskError::InvalidArgument(format!(
                    "cannot open its sandbox's sockets in {} again: {e}",
                    gate_dir.display()
                ))
            })
    }

    /// Refuses to run `task` without a sandbox when its policy approves commands.
    fn refuse_unconfined(&self, task: &Task, why: &str) -> Result<(), TaskError> {
        match self.policy_runs_commands(task.policy.as_deref()) {
            true => Err(TaskError::InvalidArgument(format!(
                "task {}: {}",
                task.id,
                Unconfined::new(task.policy.as_deref().unwrap_or_default(), why)
            ))),
            false => Ok(()),
        }
    }

    /// Why a task under `policy` would be refused here, if it would: its policy approves
    /// commands, and this host cannot sandbox its agent (the config did not turn the sandbox
    /// off by name).
    pub(super) async fn refuse_unsandboxed_commands(
        &self,
        policy: Option<&str>,
    ) -> Result<(), Unconfined> {
        if !self.config.tasks.sandbox || !self.policy_runs_commands(policy) {
            return Ok(());
        }
        let policy = policy.unwrap_or_default();
        let support = tokio::task::spawn_blocking(support::host)
            .await
            .map_err(|e| Unconfined::new(policy, &e.to_string()))?;
        match support.bwrap() {
            Some(_) => Ok(()),
            None => Err(Unconfined::new(policy, &support.describe())),
        }
    }

    /// Whether the approval policy named `policy` lets an agent run commands unasked.
    pub(super) fn policy_runs_commands(&self, policy: Option<&str>) -> bool {
        policy
            .and_then(|name| self.config.tasks.policies.get(name))
            .is_some_and(|tools| {
                tools
                    .iter()
                    .any(|tool| tool == "Bash" || tool.starts_with("Bash(") || tool == "*")
            })
    }

    /// The agent's private home in the task's directory, with the profile's files of the
    /// person's home copied in; shown at the person's home path.
    async fn private_home(
        &self,
        profile: &Profile,
        dir: &Path,
        work: &[PathBuf],
    ) -> Result<Option<Mount>, TaskError> {
        let Some(person) = dirs::home_dir() else {
            return Ok(None);
        };
        let private = dir.join("home");
        let home = PrivateHome {
            files: profile.sandbox.home.clone(),
            scoped: profile.sandbox.scoped.clone(),
            credentials: profile.sandbox.credentials.clone(),
            folders: work.to_vec(),
        };
        let (from, to) = (person.clone(), private.clone());
        let made = tokio::task::spawn_blocking(move || home.copy(&from, &to))
            .await
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))?;
        made.map_err(|e| {
            TaskError::InvalidArgument(format!(
                "cannot prepare its private home in {}: {e}",
                private.display()
            ))
        })?;
        Ok(Some(Mount {
            source: private,
            target: person,
        }))
    }

    /// Seen read-only: drydock, the agent's CLI, the toolchains and caches, `PATH`, and what
    /// the config adds; never a folder that holds the person's home, drydock's data or the
    /// project.
    fn readable_for(&self, task: &Task, profile: &Profile) -> Vec<Mount> {
        let mut dirs: Vec<PathBuf> = Vec::new();
        if let Ok(drydock) = std::env::current_exe() {
            dirs.push(drydock);
        }
        if let Some(program) = self.agents.program_path(&profile.name) {
            dirs.push(install_root(&program));
        }
        dirs.extend(confinement::toolchain_dirs());
        dirs.extend(self.config.tasks.sandbox_read.iter().cloned());
        let hidden = [
            self.config.data_dir.as_path(),
            Path::new(&task.project_path),
        ];
        confinement::readable(dirs, dirs::home_dir().as_deref(), &hidden)
    }

    /// The keys of the agent's API (and the config's) that drydock holds for its sandbox.
    fn held_keys(&self, profile: &Profile) -> Result<keys::HeldKeys, TaskError> {
        let env = |name: &str| std::env::var(name).ok();
        keys::held(&profile.sandbox, &self.config.tasks.sandbox_keys, &env)
            .map_err(|e| TaskError::InvalidArgument(e.to_string()))
    }

    /// The hosts the agent may reach (its profile's, its base URL's, its keys' APIs', the
    /// config's), and the loopback ports among them (a local API the sandbox's loopback must
    /// stand in for).
    fn destinations(&self, profile: &Profile) -> Result<(AllowList, Vec<u16>), TaskError> {
        let mut hosts = profile.sandbox.hosts.clone();
        let mut loopback = Vec::new();
        let mut urls = Vec::new();
        for name in &profile.sandbox.base_url_env {
            let Some(url) = std::env::var(name).ok().filter(|u| !u.is_empty()) else {
                continue;
            };
            let parsed = url::Url::parse(&url).map_err(|e| {
                TaskError::InvalidArgument(format!("{name}={url} is not a URL: {e}"))
            })?;
            urls.push(parsed);
        }
        urls.extend(self.config.tasks.sandbox_keys.values().cloned());
        for url in &urls {
            let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
                continue;
            };
            if keys::is_loopback(url) {
                loopback.push(port);
                hosts.push(format!("127.0.0.1:{port}"));
            } else {
                hosts.push(format!("{host}:{port}"));
            }
        }
        loopback.sort_unstable();
        loopback.dedup();
        hosts.extend(self.config.tasks.sandbox_hosts.iter().cloned());
        let allow = AllowList::parse(&hosts)
            .map_err(|e| {
                TaskError::InvalidArgument(format!(
                    "the sandbox's hosts (profile and [tasks] sandbox_hosts): {e}"
                ))
            })?
            .with_private_names(self.config.tasks.sandbox_private_names);
        Ok((allow, loopback))
    }
}

/// The person's credentials of the profile, read-only over their stand-ins in the private
/// home (shown at the person's home path, so a credential keeps its path).
fn credentials(profile: &Profile, home: &Mount) -> Vec<Mount> {
    profile
        .sandbox
        .credentials
        .iter()
        .map(|file| home.target.join(file))
        .filter(|person| person.is_file())
        .map(Mount::same)
        .collect()
}

/// The folders a task's agent works in: its worktree's top and its project's folder there.
fn work_folders(isolation: &Isolation, work: &Path) -> Vec<PathBuf> {
    let mut folders = vec![work.to_path_buf()];
    if let Isolation::Worktree(worktree) = isolation {
        folders.push(worktree.path().to_path_buf());
    }
    folders
}

/// What the agent's private home gets of the person's.
struct PrivateHome {
    /// Copied.
    files: Vec<String>,
    /// Of `files`, copied scoped to `folders` (see [`scoped_settings`]).
    scoped: Vec<String>,
    /// An empty stand-in made for each, to be mounted over read-only.
    credentials: Vec<String>,
    folders: Vec<PathBuf>,
}

/// The largest settings file copied into a private home.
const LARGEST_SETTINGS: u64 = 64 * 1024 * 1024;

impl PrivateHome {
    /// Writes the private home `to` from the person's home `from`. On a retry `to` holds what
    /// the agent left there: every file is written through the door, replacing what was
    /// there (a link to a file outside among it), never through it.
    fn copy(&self, from: &Path, to: &Path) -> Result<(), Refused> {
        std::fs::create_dir_all(to).map_err(|e| Refused::Io(to.to_path_buf(), e))?;
        let home = Tree::open(to)?;
        for file in &self.files {
            let bytes = match untrusted::read_file(&from.join(file), LARGEST_SETTINGS) {
                Ok(bytes) => bytes,
                Err(refused) if refused.is_missing() => continue,
                Err(refused) => return Err(refused),
            };
            let bytes = match self.scoped.contains(file) {
                true => scoped_settings(&bytes, &self.folders),
                false => bytes,
            };
            home.write(Path::new(file), &bytes, 0o600)?;
        }
        for file in &self.credentials {
            if from.join(file).is_file() {
                home.write(Path::new(file), b"", 0o600)?;
            }
        }
        Ok(())
    }
}

/// A settings file of every project cut to the task's: `projects` keeps the entries of
/// `folders` alone, and no `mcpServers` is left at any level. What is not a JSON object is
/// not copied at all.
fn scoped_settings(bytes: &[u8], folders: &[PathBuf]) -> Vec<u8> {
    let Ok(serde_json::Value::Object(mut settings)) = serde_json::from_slice(bytes) else {
        return b"{}".to_vec();
    };
    settings.remove("mcpServers");
    if let Some(serde_json::Value::Object(projects)) = settings.get_mut("projects") {
        projects.retain(|path, _| folders.iter().any(|folder| Path::new(path) == folder));
        for project in projects.values_mut() {
            if let Some(project) = project.as_object_mut() {
                project.remove("mcpServers");
            }
        }
    }
    serde_json::to_vec_pretty(&settings).unwrap_or_else(|_| b"{}".to_vec())
}

/// Where an installed CLI's files are: its npm package tree (`…/node_modules`'s parent), else
/// its directory.
fn install_root(program: &Path) -> PathBuf {
    let real = program
        .canonicalize()
        .unwrap_or_else(|_| program.to_path_buf());
    real.ancestors()
        .find(|dir| dir.file_name().is_some_and(|name| name == "node_modules"))
        .and_then(Path::parent)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| real.parent().unwrap_or(&real).to_path_buf())
}

/// The port of `http://HOST:PORT`.
fn port_of(base: &str) -> Option<u16> {
    base.rsplit_once(':')?.1.parse().ok()
}

/// One line of what the sandbox allows.
fn describe(
    confinement: &Confinement,
    allow: &AllowList,
    placeholders: &[(String, String)],
) -> String {
    let writable: Vec<String> = std::iter::once(&confinement.work)
        .chain(confinement.writable.iter().map(|m| &m.target))
        .map(|p| p.display().to_string())
        .collect();
    let held: Vec<&str> = placeholders.iter().map(|(var, _)| var.as_str()).collect();
    let keys = match held.is_empty() {
        true => String::new(),
        false => format!("; keys held by drydock: {}", held.join(", ")),
    };
    format!(
        "bubblewrap: writes {} and a private /tmp and home; reads the system, its toolchains and CLI; network: {allow} and drydock as this task{keys}",
        writable.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tasks::parts_for_tests::Setting;

    fn sandboxes_of(setting: &Setting) -> Sandboxes {
        Sandboxes::new(setting.config.clone(), setting.agents())
    }

    /// Built alone: a policy runs commands when it approves Bash in any form; a session
    /// whose sandbox was never made has no ways out to open again.
    #[tokio::test]
    async fn sandboxes_alone_tell_a_policy_that_runs_commands_and_open_nothing_unasked() {
        let setting = Setting::new(
            "[tasks.policies]\nreads = [\"Read\", \"Edit\"]\nruns = [\"Read\", \"Bash(cargo test:*)\"]\nall = [\"*\"]\n",
        );
        let sandboxes = sandboxes_of(&setting);
        for (policy, runs) in [
            (None, false),
            (Some("reads"), false),
            (Some("runs"), true),
            (Some("all"), true),
            (Some("unknown"), false),
        ] {
            assert_eq!(sandboxes.policy_runs_commands(policy), runs, "{policy:?}");
        }
        let task = setting.queued_task("tidy the imports");
        sandboxes
            .reopen_sandbox(&task, "task-x-1", "token")
            .unwrap();
        assert!(!setting.config.data_dir.join("sandbox/task-x-1").exists());
        sandboxes.close("task-x-1");
    }

    #[test]
    fn an_npm_cli_is_seen_with_its_whole_package_tree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let package = root.join("claude-1/node_modules/@anthropic-ai/claude-code/bin");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir_all(root.join("claude-1/node_modules/.bin")).unwrap();
        std::fs::write(package.join("claude.exe"), "").unwrap();
        let link = root.join("claude-1/node_modules/.bin/claude");
        std::os::unix::fs::symlink(package.join("claude.exe"), &link).unwrap();
        assert_eq!(install_root(&link), root.join("claude-1"));
        std::fs::write(root.join("tool"), "").unwrap();
        assert_eq!(install_root(&root.join("tool")), root);
    }

    #[test]
    fn the_private_home_has_copies_and_stand_ins_for_credentials() {
        let dir = tempfile::tempdir().unwrap();
        let (person, private) = (dir.path().join("person"), dir.path().join("private"));
        std::fs::create_dir_all(person.join(".claude")).unwrap();
        std::fs::write(person.join(".claude.json"), "{}").unwrap();
        std::fs::write(person.join(".claude/.credentials.json"), "secret").unwrap();
        std::fs::write(person.join(".bash_history"), "private").unwrap();
        let home = PrivateHome {
            files: vec![".claude.json".into(), ".claude/settings.json".into()],
            scoped: Vec::new(),
            credentials: vec![".claude/.credentials.json".into()],
            folders: Vec::new(),
        };
        home.copy(&person, &private).unwrap();
        assert_eq!(
            std::fs::read_to_string(private.join(".claude.json")).unwrap(),
            "{}"
        );
        assert_eq!(
            std::fs::read_to_string(private.join(".claude/.credentials.json")).unwrap(),
            ""
        );
        assert!(!private.join(".bash_history").exists());
        assert!(!private.join(".claude/settings.json").exists());
        assert_eq!(port_of("http://127.0.0.1:7878"), Some(7878));
    }

    /// Issue 48: the private home gets the task's project settings alone, and what the agent
    /// planted there on an earlier attempt (links to the person's files) is replaced, not
    /// written through.
    #[test]
    fn the_private_home_is_scoped_to_the_task_and_never_written_through() {
        let dir = tempfile::tempdir().unwrap();
        let (person, private) = (dir.path().join("person"), dir.path().join("private"));
        std::fs::create_dir_all(person.join(".claude")).unwrap();
        std::fs::create_dir_all(private.join(".claude")).unwrap();
        let settings = serde_json::json!({
            "theme": "dark",
            "mcpServers": {"bank": {"headers": {"Authorization": "Bearer user-scope-token"}}},
            "projects": {
                "/work/task": {"hasTrustDialogAccepted": true, "mcpServers": {"x": {"env": {"T": "project-token"}}}},
                "/home/person/other": {"mcpServers": {"y": {"env": {"T": "other-token"}}}}
            }
        });
        std::fs::write(person.join(".claude.json"), settings.to_string()).unwrap();
        std::fs::write(person.join(".claude/settings.json"), "{}").unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, "the person's").unwrap();
        std::os::unix::fs::symlink(&victim, private.join(".claude/settings.json")).unwrap();
        std::os::unix::fs::symlink(&victim, private.join(".claude.json")).unwrap();
        let home = PrivateHome {
            files: vec![".claude.json".into(), ".claude/settings.json".into()],
            scoped: vec![".claude.json".into()],
            credentials: Vec::new(),
            folders: vec![PathBuf::from("/work/task")],
        };
        home.copy(&person, &private).unwrap();
        assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the person's");
        let copied = std::fs::read_to_string(private.join(".claude.json")).unwrap();
        for token in [
            "user-scope-token",
            "project-token",
            "other-token",
            "/home/person/other",
        ] {
            assert!(!copied.contains(token), "{token} in {copied}");
        }
        let copied: serde_json::Value = serde_json::from_str(&copied).unwrap();
        assert_eq!(copied["theme"], "dark");
        assert_eq!(
            copied["projects"]["/work/task"]["hasTrustDialogAccepted"],
            true
        );
        assert_eq!(
            std::fs::read_to_string(private.join(".claude/settings.json")).unwrap(),
            "{}"
        );
    }
}
