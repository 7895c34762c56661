//! `drydock index`: fill the docs index from the command line, with progress bars.

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use clap::Args;
use tokio_util::sync::CancellationToken;

use super::{ConfigArgs, Failure, Outcome};
use crate::call::Call;
use crate::config::Config;
use crate::docs::Docs;
use crate::docs::ingest::{IngestProgress, human_duration};
use crate::docs::requests::IndexRequest;
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
    #[command(flatten)]
    pub config: ConfigArgs,
}

impl IndexArgs {
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
pub(super) async fn run(config: Arc<Config>, args: IndexArgs) -> Outcome {
    let request = args.request()?;
    let docs = Docs::for_command_line(config);
    // The paths given are wrong (missing, not a project): a usage error.
    let roots = docs
        .roots_of(&request)
        .await
        .map_err(|e| Failure::Usage(e.to_string()))?;
    eprintln!(
        "indexing into {} ({} roots)",
        docs.index_dir().display(),
        roots.len()
    );
    let cancel = CancellationToken::new();
    let on_interrupt = cancel.clone();
    tokio::spawn(async move {
        let _ = tokio::signal::ctrl_c().await;
        eprintln!("\nstopping after the current batch (Ctrl-C again to quit now)");
        on_interrupt.cancel();
        let _ = tokio::signal::ctrl_c().await;
        std::process::exit(130);
    });
    let progress = Arc::new(IngestProgress::default());
    let display = tokio::spawn(show_progress(Arc::clone(&progress)));
    let result = docs
        .ingest_roots(roots, progress, &Call::silent(cancel))
        .await;
    display.abort();
    let _ = display.await;
    let report = result.map_err(|e| Failure::Runtime(e.to_string()))?;
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
