//! `drydock history …`: the project memory from a shell: search it, show a project's
//! problems, forget a project or everything. It reads and writes the data directory's file
//! directly (a running server may write it at the same time: SQLite orders them).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use clap::{Args, Subcommand};

use super::{ConfigArgs, Exit, Failure, RootArgs};
use crate::config::Config;
use crate::docs::Docs;
use crate::history::requests::{Limit, ProjectRequest, SearchRequest};
use crate::history::{History, Reach};
use crate::render::Render;

#[derive(Args, Clone)]
pub(super) struct HistoryArgs {
    #[command(subcommand)]
    pub action: HistoryAction,
}

#[derive(Subcommand, Clone)]
pub(super) enum HistoryAction {
    /// Problems drydock saw that match a query, with how they were fixed:
    /// `drydock history search "cannot borrow as mutable"`.
    Search(SearchArgs),
    /// A project's open problems and the recently fixed ones.
    Show(ShowArgs),
    /// Forget a project's runs and problems (--project DIR), or everything (--all).
    Forget(ForgetArgs),
}

impl HistoryAction {
    pub(super) fn config(&self) -> (&ConfigArgs, &RootArgs) {
        match self {
            HistoryAction::Search(args) => (&args.config, &args.roots),
            HistoryAction::Show(args) => (&args.config, &args.roots),
            HistoryAction::Forget(args) => (&args.config, &args.roots),
        }
    }
}

#[derive(Args, Clone)]
pub(super) struct SearchArgs {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(flatten)]
    roots: RootArgs,
    /// An error's text, a code, a test's name, or what goes wrong in words.
    query: String,
    /// Only this project's problems.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// Only errors, warnings or failing tests: error, warning, test.
    #[arg(long)]
    kind: Option<String>,
    /// How many (default 5, at most 20).
    #[arg(long)]
    limit: Option<Limit>,
    /// Print the structured result as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
pub(super) struct ShowArgs {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(flatten)]
    roots: RootArgs,
    /// The project (default: the current directory).
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    #[arg(long)]
    json: bool,
}

#[derive(Args, Clone)]
pub(super) struct ForgetArgs {
    #[command(flatten)]
    config: ConfigArgs,
    #[command(flatten)]
    roots: RootArgs,
    /// The project whose runs and problems go.
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    project: Option<PathBuf>,
    /// Every project's.
    #[arg(long)]
    all: bool,
}

pub(super) async fn run(config: Arc<Config>, args: HistoryArgs) -> Exit {
    let docs = Docs::for_command_line(config.clone());
    let history = History::new(config, docs);
    let failed = |e: &dyn std::fmt::Display| Failure::Runtime(e.to_string());
    match args.action {
        HistoryAction::Search(args) => {
            let request = SearchRequest {
                query: args.query,
                project_path: args.project.map(|p| absolute(&p)).transpose()?,
                kind: args.kind,
                since_ms: None,
                until_ms: None,
                limit: args.limit,
            };
            let report = history
                .search(request, Reach::Everything)
                .await
                .map_err(|e| failed(&e))?;
            print(&report, args.json)
        }
        HistoryAction::Show(args) => {
            let project = absolute(&args.project.unwrap_or_else(|| PathBuf::from(".")))?;
            let report = history
                .project(ProjectRequest {
                    project_path: project,
                })
                .await
                .map_err(|e| failed(&e))?;
            print(&report, args.json)
        }
        HistoryAction::Forget(args) => {
            let project = match (args.project, args.all) {
                (Some(project), false) => Some(PathBuf::from(absolute(&project)?)),
                (None, true) => None,
                _ => {
                    return Err(Failure::Usage(
                        "say what to forget: --project DIR or --all".into(),
                    ));
                }
            };
            let (runs, problems) = history
                .forget(project.as_deref())
                .await
                .map_err(|e| failed(&e))?;
            let what = match &project {
                Some(project) => project.display().to_string(),
                None => "every project".into(),
            };
            println!("forgot {runs} run(s) and {problems} problem(s) of {what}");
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn print(report: &(impl serde::Serialize + Render), json: bool) -> Exit {
    match json {
        true => println!(
            "{}",
            serde_json::to_string_pretty(report).expect("reports serialize")
        ),
        false => println!("{}", report.render()),
    }
    Ok(ExitCode::SUCCESS)
}

/// `path` absolute and, when it exists, canonical (a forgotten project may be gone).
fn absolute(path: &PathBuf) -> Result<String, Failure> {
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::Runtime(format!("cannot tell the current directory: {e}")))?;
    let path = cwd.join(path);
    Ok(path.canonicalize().unwrap_or(path).display().to_string())
}
