//! `drydock doctor`: everything drydock uses, found or not, with the fix for what is missing.
//! Exits 0 when every toolset switched on has what it needs, 1 otherwise; what only some
//! calls use (a second shell, an agent CLI, dialyzer) and what only the tests use (Chromium)
//! is reported but never fails it.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

mod git;
mod rust_docs;
mod task_store;

use super::{ConfigArgs, Exit};
use crate::agents::hook_settings;
use crate::config::{Config, ModelRef, QueueStore, Toolset};
use crate::docs::Docs;
use crate::docs::embed::load_onnx_runtime;
use crate::docs::models::{self, Fetcher};
use crate::events::Events;
use crate::process::{self, CommandSpec, Policy, find_program};
use crate::terminal::shell_integration::user_shell;
use crate::toolchain::TOOLCHAINS;

#[derive(Args, Clone)]
pub(super) struct DoctorArgs {
    #[command(flatten)]
    pub config: ConfigArgs,
    /// Print the checks as JSON.
    #[arg(long)]
    json: bool,
}

/// One thing drydock uses.
#[derive(Debug, Serialize)]
struct Check {
    name: &'static str,
    /// What uses it.
    used_by: String,
    /// Whether its absence fails the doctor.
    need: Need,
    #[serde(flatten)]
    found: Found,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
enum Need {
    /// A toolset that is switched on needs it.
    Required,
    /// Some calls use it.
    Optional,
    /// Only drydock's own tests use it.
    TestsOnly,
}

#[derive(Debug, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
enum Found {
    Ok { detail: String },
    Missing { detail: String, fix: String },
}

impl Check {
    fn fails(&self) -> bool {
        self.need == Need::Required && matches!(self.found, Found::Missing { .. })
    }
}

pub(super) async fn run(config: &Config, args: DoctorArgs) -> Exit {
    let checks = checks(config).await;
    let failing = checks.iter().filter(|c| c.fails()).count();
    match args.json {
        true => println!(
            "{}",
            serde_json::to_string_pretty(&serde_json::json!({
                "ok": failing == 0,
                "checks": checks,
            }))
            .expect("checks serialize")
        ),
        false => print!("{}", render(config, &checks, failing)),
    }
    Ok(match failing {
        0 => ExitCode::SUCCESS,
        _ => ExitCode::FAILURE,
    })
}

async fn checks(config: &Config) -> Vec<Check> {
    let on = |toolset: Toolset| config.toolsets.contains(&toolset);
    let need_if = |toolsets: &[Toolset]| match toolsets.iter().any(|t| on(*t)) {
        true => Need::Required,
        false => Need::Optional,
    };
    let build = need_if(&[Toolset::Build]);
    let docs = need_if(&[Toolset::Docs]);
    let mut checks = vec![data_dir(config)];
    checks.push(check(
        "ONNX Runtime",
        "docs_lookup, drydock index",
        docs,
        onnx_runtime(),
    ));
    checks.push(check(
        "embedding model",
        "docs_lookup, drydock index",
        docs,
        model(config).await,
    ));
    if let Some(reranker) = &config.docs.reranker {
        checks.push(check(
            "reranker",
            "docs_lookup",
            docs,
            reranker_found(config, reranker).await,
        ));
    }
    checks.push(check(
        "docs index",
        "docs_lookup",
        Need::Optional,
        index(config).await,
    ));
    checks.push(check(
        "Rust docs",
        "drydock index --toolchain-docs",
        Need::Optional,
        rust_docs::found().await,
    ));
    let tasks = need_if(&[Toolset::Tasks]);
    checks.extend(git::checks(config, tasks).await);
    if let QueueStore::Postgres(url) = &config.tasks.store {
        checks.push(check(
            "task store",
            "tasks (the queue the team's hosts share)",
            tasks,
            task_store::found(url).await,
        ));
    }
    checks.push(sandbox(config, tasks).await);
    checks.push(check(
        "tmux",
        "tmux sessions, agent_spawn, tasks, the user's panes",
        need_if(&[Toolset::Agents, Toolset::Tasks]),
        version("tmux", &["-V"], "sudo apt-get install tmux").await,
    ));
    let shell = config.terminal.shell.clone().unwrap_or_else(user_shell);
    checks.push(check(
        "shell",
        "terminal sessions",
        need_if(&[Toolset::Terminal]),
        version(
            &shell,
            &["--version"],
            &format!("install {shell}, or set [terminal] shell"),
        )
        .await,
    ));
    checks.push(check(
        "zsh",
        "terminal sessions with shell: zsh",
        Need::Optional,
        version("zsh", &["--version"], "sudo apt-get install zsh").await,
    ));
    checks.extend(toolchains(build).await);
    checks.extend(agent_clis(need_if(&[Toolset::Agents, Toolset::Tasks])).await);
    checks.push(hooks());
    checks.push(check(
        "chromium",
        "drydock's dashboard tests",
        Need::TestsOnly,
        version("chromium", &["--version"], "sudo apt-get install chromium").await,
    ));
    checks.push(check(
        "chromedriver",
        "drydock's dashboard tests",
        Need::TestsOnly,
        version(
            "chromedriver",
            &["--version"],
            "sudo apt-get install chromium-driver",
        )
        .await,
    ));
    checks
}

/// Whether tasks' agents run sandboxed here: bubblewrap installed and able to make its
/// namespaces, or the sandbox turned off by name.
async fn sandbox(config: &Config, tasks: Need) -> Check {
    let support = tokio::task::spawn_blocking(crate::sandbox::support::host)
        .await
        .expect("the probe does not panic");
    let found = match (config.tasks.sandbox, support.bwrap()) {
        (false, _) => Found::Ok {
            detail: "off: [tasks] sandbox = false, tasks' agents run unconfined".into(),
        },
        (true, Some(_)) => Found::Ok {
            detail: support.describe(),
        },
        (true, None) => Found::Missing {
            detail: support.describe(),
            fix: "sudo apt-get install bubblewrap (and allow user namespaces: \
                  sysctl kernel.unprivileged_userns_clone=1), or set [tasks] sandbox = false"
                .into(),
        },
    };
    check(
        "sandbox",
        "tasks (each agent, its checks and its builds confined)",
        tasks,
        found,
    )
}

fn check(name: &'static str, used_by: &str, need: Need, found: Found) -> Check {
    Check {
        name,
        used_by: used_by.to_string(),
        need,
        found,
    }
}

fn data_dir(config: &Config) -> Check {
    let dir = &config.data_dir;
    let probe = dir.join(format!(".doctor-{}", std::process::id()));
    let writable = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::write(&probe, b""))
        .and_then(|()| std::fs::remove_file(&probe));
    let found = match writable {
        Ok(()) => Found::Ok {
            detail: format!("{} (writable)", dir.display()),
        },
        Err(e) => Found::Missing {
            detail: format!("{}: {e}", dir.display()),
            fix: "make it writable, or choose another with --data-dir, DRYDOCK_DATA_DIR or \
                  data_dir in the config"
                .into(),
        },
    };
    check(
        "data dir",
        "the task queue, agents' hooks, tokens",
        Need::Required,
        found,
    )
}

fn onnx_runtime() -> Found {
    match load_onnx_runtime() {
        Ok(path) => Found::Ok {
            detail: path.display().to_string(),
        },
        Err(e) => Found::Missing {
            detail: e.to_string(),
            fix: "scripts/setup-docs.sh from the drydock checkout".into(),
        },
    }
}

/// Doctor looks for models and never fetches one.
fn no_fetch() -> Fetcher {
    Fetcher::refusing(
        "drydock doctor does not fetch models; the first docs_lookup or drydock index does",
    )
}

async fn model(config: &Config) -> Found {
    match models::embedding_spec(config.docs.model.as_ref(), &config.data_dir, &no_fetch()).await {
        Ok(spec) => Found::Ok {
            detail: format!("{}, {}", spec.name, spec.source),
        },
        Err(e) => Found::Missing {
            detail: e.to_string(),
            fix: "build drydock with its default features (cargo install --path . --locked), \
                  or copy models/all-MiniLM-L6-v2-int8/ to DATA_DIR/models/; for `[docs] model`, \
                  its files where the message says"
                .into(),
        },
    }
}

async fn reranker_found(config: &Config, reranker: &ModelRef) -> Found {
    match models::reranker_spec(reranker, &config.data_dir, &no_fetch()).await {
        Ok(spec) => Found::Ok {
            detail: format!("{}, {}", spec.name, spec.dir.display()),
        },
        Err(e) => Found::Missing {
            detail: e.to_string(),
            fix: "its files where the message says, or remove `[docs] reranker`".into(),
        },
    }
}

async fn index(config: &Config) -> Found {
    let fix = "drydock index --toolchain-docs (the Rust and Elixir docs), and \
               drydock index --project DIR for a project's dependencies";
    if !config.docs.index_dir.exists() {
        return Found::Missing {
            detail: format!("{}: no index yet", config.docs.index_dir.display()),
            fix: fix.into(),
        };
    }
    let docs = Docs::new(Arc::new(config.clone()), Arc::new(Events::default()));
    match docs.summary().await {
        Ok(summary) if summary.chunks > 0 => Found::Ok {
            detail: format!(
                "{}: {} chunks of {} libraries",
                summary.index_dir,
                summary.chunks,
                summary.libraries.len()
            ),
        },
        Ok(summary) => Found::Missing {
            detail: format!("{}: empty", summary.index_dir),
            fix: fix.into(),
        },
        Err(e) => Found::Missing {
            detail: e.to_string(),
            fix: format!("remove {} and index again", config.docs.index_dir.display()),
        },
    }
}

/// What each toolchain's kit says to check ([`crate::toolchain::DoctorCheck`]): the build
/// tools need at least one toolchain, so each toolchain's own program is required only when
/// every other one is missing too.
async fn toolchains(build: Need) -> Vec<Check> {
    let mut found = Vec::new();
    for toolchain in TOOLCHAINS {
        for doctor in toolchain.kit().doctor_checks() {
            let line = doctor.version_line;
            let version = version_line(doctor.program, doctor.version_args, line, doctor.fix);
            found.push((doctor, version.await));
        }
    }
    let none = found
        .iter()
        .filter(|(doctor, _)| doctor.essential)
        .all(|(_, found)| matches!(found, Found::Missing { .. }));
    found
        .into_iter()
        .map(|(doctor, found)| {
            let need = match doctor.essential && none {
                true => build,
                false => Need::Optional,
            };
            check(doctor.name, doctor.used_by, need, found)
        })
        .collect()
}

/// The agent CLIs drydock has profiles for: agent_spawn and tasks need at least one.
async fn agent_clis(agents: Need) -> Vec<Check> {
    let clis = [
        ("claude", "npm install -g @anthropic-ai/claude-code"),
        ("codex", "npm install -g @openai/codex"),
        ("gemini", "npm install -g @google/gemini-cli"),
    ];
    let mut found = Vec::new();
    for (program, install) in clis {
        found.push((program, version(program, &["--version"], install).await));
    }
    let none = found
        .iter()
        .all(|(_, f)| matches!(f, Found::Missing { .. }));
    // With none at all, the first stands for "an agent CLI" in what is required.
    found
        .into_iter()
        .enumerate()
        .map(|(index, (program, found))| Check {
            name: program,
            used_by: "agent_spawn and tasks (one agent CLI is enough)".into(),
            need: match none && index == 0 {
                true => agents,
                false => Need::Optional,
            },
            found,
        })
        .collect()
}

/// drydock's hooks in the user's Claude Code settings: agents drydock spawns get theirs per
/// run, agents the user starts report through these.
fn hooks() -> Check {
    let fix = "drydock hooks install (agents drydock spawns need none: they get theirs per run)";
    let found = match dirs::home_dir().map(|home| home.join(".claude/settings.json")) {
        None => Found::Missing {
            detail: "no home directory".into(),
            fix: fix.into(),
        },
        Some(path) => installed_hooks(&path, fix),
    };
    check(
        "Claude Code hooks",
        "states of Claude Code agents the user starts",
        Need::Optional,
        found,
    )
}

fn installed_hooks(path: &Path, fix: &str) -> Found {
    let settings = match hook_settings::read(path) {
        Ok(settings) => settings,
        Err(e) => {
            return Found::Missing {
                detail: e.to_string(),
                fix: fix.into(),
            };
        }
    };
    let installed = hook_settings::installed_events(&settings);
    match installed.len() {
        0 => Found::Missing {
            detail: format!("none in {}", path.display()),
            fix: fix.into(),
        },
        n if n < hook_settings::EVENTS.len() => Found::Missing {
            detail: format!(
                "{n} of {} events in {}",
                hook_settings::EVENTS.len(),
                path.display()
            ),
            fix: fix.into(),
        },
        n => Found::Ok {
            detail: format!("all {n} events in {}", path.display()),
        },
    }
}

async fn version(program: &str, args: &[&str], fix: &str) -> Found {
    version_line(program, args, program, fix).await
}

/// `program args` run (never through a shell) for the first line of its output that mentions
/// `name` (else its first line).
async fn version_line(program: &str, args: &[&str], name: &str, fix: &str) -> Found {
    match output_line(program, args, name).await {
        Ok((line, path)) => Found::Ok {
            detail: format!("{line} ({path})"),
        },
        Err(why) => Found::Missing {
            detail: why.to_string(),
            fix: fix.to_string(),
        },
    }
}

/// Why a program's version was not read.
#[derive(Debug, thiserror::Error)]
enum NotRun {
    #[error("`{0}` is not on PATH")]
    NotOnPath(String),
    #[error("`{command}` failed ({termination}): {said}")]
    Failed {
        command: String,
        termination: String,
        said: String,
    },
    #[error(transparent)]
    Run(#[from] process::RunError),
}

/// The line [`version_line`] reports and where the program is, or why it could not be run.
async fn output_line(program: &str, args: &[&str], name: &str) -> Result<(String, String), NotRun> {
    let Some(path) = find_program(program) else {
        return Err(NotRun::NotOnPath(program.to_string()));
    };
    let policy = Policy {
        limits: process::Limits {
            timeout: Duration::from_secs(20),
            output_cap: 4096,
            kill_grace: Duration::from_secs(1),
        },
        env_remove: Vec::new(),
    };
    // Run from the temp dir, so no project's rustup override or .tool-versions is taken.
    let spec = CommandSpec::new(
        path.display().to_string(),
        args.iter().copied(),
        std::env::temp_dir(),
    );
    let output = policy
        .run(spec, &CancellationToken::new(), &mut |_, _| {})
        .await;
    match output {
        Ok(output) if output.termination.success() => {
            let text = match output.stdout.text.trim().is_empty() {
                true => output.stderr.text,
                false => output.stdout.text,
            };
            let lines = || text.lines().filter(|l| !l.trim().is_empty());
            let first = lines()
                .find(|l| l.to_lowercase().contains(&name.to_lowercase()))
                .or_else(|| lines().next())
                .unwrap_or("");
            Ok((first.trim().to_string(), path.display().to_string()))
        }
        Ok(output) => Err(NotRun::Failed {
            command: format!("{program} {}", args.join(" ")),
            termination: format!("{:?}", output.termination),
            said: output
                .stderr
                .text
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string(),
        }),
        Err(e) => Err(e.into()),
    }
}

fn render(config: &Config, checks: &[Check], failing: usize) -> String {
    let mut out = format!(
        "drydock {} · data dir {} · toolsets {}\n\n",
        env!("CARGO_PKG_VERSION"),
        config.data_dir.display(),
        config
            .toolsets
            .iter()
            .map(|t| t.name())
            .collect::<Vec<_>>()
            .join(", ")
    );
    for check in checks {
        let (mark, detail, fix) = match &check.found {
            Found::Ok { detail } => ("ok", detail, None),
            Found::Missing { detail, fix } => match check.need {
                Need::Required => ("MISSING", detail, Some(fix)),
                Need::Optional => ("missing", detail, Some(fix)),
                Need::TestsOnly => ("tests", detail, Some(fix)),
            },
        };
        out.push_str(&format!("{mark:<8} {:<18} {detail}\n", check.name));
        if let Some(fix) = fix {
            out.push_str(&format!(
                "{:<27}used by {}; fix: {fix}\n",
                "", check.used_by
            ));
        }
    }
    out.push('\n');
    out.push_str(&match failing {
        0 => "everything the switched-on toolsets need is here\n".to_string(),
        n => format!(
            "{n} required thing(s) missing (MISSING above): drydock will refuse those tools\n"
        ),
    });
    out
}
