//! `drydock index`: fill the docs index from the command line, with progress bars.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{ConfigArgs, Exit, Failure};
use crate::call::Call;
use crate::config::Config;
use crate::config::ModelRef;
use crate::docs::Docs;
use crate::docs::ingest::{IngestProgress, human_duration};
use crate::docs::reports::IngestReport;
use crate::docs::requests::IndexRequest;
use crate::docs::store::DocStore;
use crate::render::Render;

#[derive(Args, Clone)]
pub(super) struct IndexArgs {
    /// Files or directories of Markdown, text, HTML, Rust or Elixir sources.
    paths: Vec<PathBuf>,
    /// A cargo or mix project: its own docs and its dependencies' at their locked versions.
    #[arg(long, value_name = "DIR")]
    project: Option<PathBuf>,
    /// With --project: every package in Cargo.lock, not only the direct dependencies.
    #[arg(long, requires = "project")]
    transitive: bool,
    /// The Rust docs rustup installed and Elixir's standard library.
    #[arg(long)]
    toolchain_docs: bool,
    /// Library name for PATHS (default: each path's directory name).
    #[arg(long, value_name = "NAME")]
    library: Option<String>,
    /// The embedding model (overrides `[docs] model`): a name from fastembed's catalogue, the
    /// shipped all-MiniLM-L6-v2-int8, or a directory. An index built with another model is
    /// built again with this one (what it records as indexed, and PATHS/--project/
    /// --toolchain-docs when given) and replaced once whole.
    #[arg(long, value_name = "NAME|DIR")]
    model: Option<String>,
    #[command(flatten)]
    pub config: ConfigArgs,
}

impl IndexArgs {
    fn names_sources(&self) -> bool {
        !self.paths.is_empty() || self.project.is_some() || self.toolchain_docs
    }

    fn request(&self) -> Result<IndexRequest, Failure> {
        Ok(IndexRequest {
            paths: Some(
                self.paths
                    .iter()
                    .map(|p| absolute(p))
                    .collect::<Result<_, _>>()?,
            ),
            project_path: self.project.as_deref().map(absolute).transpose()?,
            transitive: self.transitive.then_some(true),
            toolchain_docs: self.toolchain_docs.then_some(true),
            library: self.library.clone(),
        })
    }
}

fn absolute(path: &Path) -> Result<String, Failure> {
    std::path::absolute(path)
        .map(|p| p.display().to_string())
        .map_err(|e| Failure::Usage(format!("{}: {e}", path.display())))
}

/// Progress bars on a terminal, a log line every 10 s otherwise; the first Ctrl-C stops
/// after the current batch (what was committed stays), a second one at once.
pub(super) async fn run(config: Arc<Config>, args: IndexArgs) -> Exit {
    let mut config = (*config).clone();
    if let Some(model) = &args.model {
        config.docs.model = Some(ModelRef::parse(model, |p| {
            std::path::absolute(&p).unwrap_or(p)
        }));
    }
    let docs = Docs::for_command_line(Arc::new(config.clone()));
    let spec = docs
        .spec()
        .await
        .map_err(|e| Failure::Runtime(e.to_string()))?;
    let built_with =
        DocStore::model_of(docs.index_dir()).map_err(|e| Failure::Runtime(e.to_string()))?;
    let cancel = stop_on_ctrl_c();
    match built_with {
        Some(other) if other != spec.name => {
            rebuild(config, &args, &other, &spec.name, cancel).await
        }
        _ => finish(ingest(&docs, &args.request()?, &cancel).await?),
    }
}

/// Builds the index again with the configured model beside the old one, and puts it in the
/// old one's place once whole; stopped or failed, the old index is left as it was.
async fn rebuild(
    mut config: Config,
    args: &IndexArgs,
    old_model: &str,
    new_model: &str,
    cancel: CancellationToken,
) -> Exit {
    let index_dir = config.docs.index_dir.clone();
    let mut requests = recorded_requests(&index_dir)?;
    if args.names_sources() {
        let given = args.request()?;
        if !requests.contains(&given) {
            requests.push(given);
        }
    }
    if requests.is_empty() {
        return Err(Failure::Usage(format!(
            "{} does not record what was indexed into it (an older drydock built it): say what \
             to index with the new model (PATHS, --project DIR or --toolchain-docs)",
            index_dir.display()
        )));
    }
    let folder = index_dir.file_name().unwrap_or_default().to_string_lossy();
    let fresh = index_dir.with_file_name(format!(".{folder}.rebuild-{}", std::process::id()));
    eprintln!(
        "{} was built with {old_model}: building it again with {new_model} in {} ({} sources)",
        index_dir.display(),
        fresh.display(),
        requests.len()
    );
    config.docs.index_dir = fresh.clone();
    let docs = Docs::for_command_line(Arc::new(config));
    let mut last = None;
    for request in &requests {
        let report = ingest(&docs, request, &cancel).await;
        match report {
            Ok(report) if !report.cancelled => last = Some(report),
            stopped => {
                drop(docs);
                let _ = std::fs::remove_dir_all(&fresh);
                eprintln!("{} is left as it was", index_dir.display());
                return finish(stopped?);
            }
        }
    }
    drop(docs);
    let old = index_dir.with_file_name(format!(".{folder}.old-{}", std::process::id()));
    let swap = std::fs::rename(&index_dir, &old).and_then(|()| std::fs::rename(&fresh, &index_dir));
    if let Err(error) = swap {
        let _ = std::fs::rename(&old, &index_dir);
        return Err(Failure::Runtime(format!(
            "could not put the new index ({}) in the place of {}: {error}",
            fresh.display(),
            index_dir.display()
        )));
    }
    let _ = std::fs::remove_dir_all(&old);
    eprintln!("{} now holds vectors of {new_model}", index_dir.display());
    finish(last.unwrap_or_default())
}

/// What the index at `dir` records as indexed.
fn recorded_requests(dir: &Path) -> Result<Vec<IndexRequest>, Failure> {
    let sources = DocStore::sources_of(dir).map_err(|e| Failure::Runtime(e.to_string()))?;
    sources
        .into_iter()
        .map(|source| {
            serde_json::from_value(source).map_err(|e| {
                Failure::Runtime(format!(
                    "{}: a recorded source is unreadable: {e}",
                    dir.display()
                ))
            })
        })
        .collect()
}

/// The first Ctrl-C cancels the token (the ingest stops after its batch), a second one quits.
fn stop_on_ctrl_c() -> CancellationToken {
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("\nstopping after the current batch (Ctrl-C again to quit now)");
        on_interrupt.cancel();
        let _ = tokio::signal::ctrl_c().await;
        std::process::exit(130);
    });
    cancel
}

/// Indexes what `request` names, with progress, and records it in the index.
async fn ingest(
    docs: &Docs,
    request: &IndexRequest,
    cancel: &CancellationToken,
) -> Result<IngestReport, Failure> {
    // The paths given are wrong (missing, not a project): a usage error.
    let roots = docs
        .roots_of(request)
        .await
        .map_err(|e| Failure::Usage(e.to_string()))?;
    eprintln!(
        "indexing into {} ({} roots)",
        docs.index_dir().display(),
        roots.len()
    );
    let progress = Arc::new(IngestProgress::default());
    let display = tokio::spawn(show_progress(Arc::clone(&progress)));
    let result = docs
        .ingest_roots(roots, progress, &Call::silent(cancel.clone()))
        .await;
    display.abort();
    let _ = display.await;
    let report = result.map_err(|e| Failure::Runtime(e.to_string()))?;
    if !report.cancelled {
        docs.note_ingest(request)
            .await
            .map_err(|e| Failure::Runtime(e.to_string()))?;
    }
    Ok(report)
}

fn finish(report: IngestReport) -> Exit {
    println!("{}", report.render());
    Ok(if report.cancelled {
        ExitCode::from(130)
    } else {
        ExitCode::SUCCESS
    })
}

async fn show_progress(progress: Arc<IngestProgress>) {
    if !std::io::stderr().is_terminal() {
        let mut ticker = tokio::time::interval(Duration::from_secs(10));
        ticker.tick().await;
        loop {
            ticker.tick().await;
            eprintln!("{}", progress.snapshot().line());
        }
    }
    let bars = indicatif::MultiProgress::new();
    let style = |template: &str| {
        indicatif::ProgressStyle::with_template(template)
            .expect("valid template")
            .progress_chars("=> ")
    };
    let files = bars.add(
        indicatif::ProgressBar::new(0).with_style(style("files  [{bar:40}] {pos}/{len} {msg}")),
    );
    let chunks = bars.add(
        indicatif::ProgressBar::new(0).with_style(style("chunks [{bar:40}] {pos}/~{len} {msg}")),
    );
    let mut ticker = tokio::time::interval(Duration::from_millis(200));
    // Dropping the bars (when this task is aborted) clears them.
    let _guard = BarsGuard(files.clone(), chunks.clone());
    loop {
        ticker.tick().await;
        let now = progress.snapshot();
        files.set_length(now.files_total);
        files.set_position(now.files_done);
        files.set_message(format!("({} changed)", now.files_changed));
        let done = now.chunks_embedded + now.chunks_reused;
        chunks.set_length(now.chunks_expected().max(done));
        chunks.set_position(done);
        let eta = now
            .eta()
            .map(|eta| format!(" · ETA {}", human_duration(eta)))
            .unwrap_or_default();
        chunks.set_message(format!(
            "· {} embedded, {} reused · {:.1}/s{eta}",
            now.chunks_embedded,
            now.chunks_reused,
            now.embeddings_per_second()
        ));
    }
}

struct BarsGuard(indicatif::ProgressBar, indicatif::ProgressBar);

impl Drop for BarsGuard {
    fn drop(&mut self) {
        self.0.finish_and_clear();
        self.1.finish_and_clear();
    }
}
