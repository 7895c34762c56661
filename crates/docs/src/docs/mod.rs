//! Docs lookup: a local hybrid (vector + full-text) index of documentation.
//!
//! Each source format has its own module that produces [`Chunk`]s through the shared rules
//! of [`chunk`] (budget, code fences, merges, hashes):
//!
//! - [`markdown::chunk_markdown`]: heading-aware Markdown, its [`front_matter`] read first;
//!   [`mdx::chunk_mdx`]: MDX pages, their JSX taken out;
//! - [`rst::chunk_rst`] and [`asciidoc::chunk_asciidoc`]: reStructuredText and AsciiDoc;
//! - [`html::chunk_html`] and [`html::skip_html`]: rustdoc and mdBook output;
//! - [`rust_source::chunk_rust_source`]: doc comments with the item they document;
//! - [`elixir_docs::chunk_elixir_beams`] (compiled modules, via `Code.fetch_docs`) and
//!   [`elixir_docs::chunk_elixir_source`] (`.ex` files).
//!
//! [`sources`] says which files are read and how, [`project`] finds a project's dependencies
//! and the toolchain docs, [`ingest`] runs the pipeline (chunk, embed, write, incrementally)
//! and [`under_way`] shows an ingest in progress to other readers, [`models`] says which
//! models the config names and [`embed`] loads the embedding model, [`store`] keeps the
//! vectors in LanceDB next to a full-text index, [`search`] fuses vector and full-text
//! results, [`rescore`] re-scores the fused candidates and the optional [`cross_encoder`]
//! puts the first ones in its order; [`excerpt`] picks the sentences a later result shows.
//!
//! [`Docs`], the facade, is the docs index as the server and the command line use it: one
//! model and one open index per process, lookups, ingests (one at a time) and a summary of
//! what is indexed, taking [`requests`] and answering [`reports`].
pub mod asciidoc;
pub mod chunk;
pub mod cross_encoder;
pub mod elixir_docs;
pub mod embed;
pub mod excerpt;
pub mod front_matter;
#[doc(hidden)]
pub mod fuzzing;
pub mod html;
pub mod ingest;
pub mod markdown;
pub mod mdx;
pub mod models;
pub mod project;
pub mod reports;
pub mod requests;
pub mod rescore;
pub mod rst;
pub mod rust_source;
pub mod search;
pub mod sources;
pub mod store;
pub mod under_way;

#[cfg(test)]
pub mod wordpiece;

pub use chunk::{Chunk, FileMeta, Section, SourceLine, SourceType};
pub use sources::rust_toolchain_root;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::sync::OnceCell;

use self::cross_encoder::CrossEncoder;
use self::embed::{EmbedError, Embedder};
use self::ingest::{IngestError, IngestOptions, IngestProgress, ingest};
use self::models::{EmbeddingSpec, Fetcher, ModelError};
use self::project::{
    DependencyChoice, ECOSYSTEMS, ProjectDocsError, project_roots, project_scope, toolchain_roots,
};
use self::reports::{IndexSummary, IngestReport, LookupReport, LookupResult, ReadReport};
use self::requests::{Around, IndexRequest, LookupRequest, ReadRequest};
use self::search::{SearchFilter, SearchMode};
use self::sources::{FileRoot, Library, PathFilter, Root};
use self::store::{DocStore, IndexError, TABLE_NAME};
use self::under_way::under_way;
use crate::call::Call;
use crate::config::{Config, ToolName};
use crate::events::{EventKind, Events, IngestPhase};
use crate::millis::unix_millis;
use crate::process::Policy;
use crate::process::shell_quote::shell_word;
use crate::workspace::{PathArgument, Workspace, WorkspaceError};

pub const DEFAULT_LIMIT: usize = 30;
pub const MAX_LIMIT: usize = 50;
/// How many of the first results carry their whole passage by default: the reader reads them
/// all, so the rest come as their best sentences (docs_quality prints what that costs).
pub const DEFAULT_FULL: usize = 3;
/// How many results after the whole ones carry their best sentences by default; the rest
/// are named by their heading path.
pub const DEFAULT_EXCERPTS: usize = 7;
/// The longest query taken: the model reads 256 word pieces of it anyway, and a huge one
/// makes full-text search slow.
pub const MAX_QUERY_CHARS: usize = 2000;

#[derive(Debug, thiserror::Error)]
pub enum DocsError {
    #[error("{0}")]
    InvalidArgument(String),
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Model(Box<ModelError>),
    #[error(
        "{mismatch}. Index again with this model: `{command}` (it indexes again what the index \
         holds, and replaces it once done), or set `[docs] model` back to the model that built it"
    )]
    OtherModel {
        mismatch: Box<IndexError>,
        command: String,
    },
    #[error(transparent)]
    Store(#[from] IndexError),
    #[error(transparent)]
    Ingest(#[from] IngestError),
    #[error(transparent)]
    Project(#[from] ProjectDocsError),
    #[error("an ingest into {index} is already running ({progress}); wait for it to finish")]
    Busy { index: String, progress: String },
}

impl From<ModelError> for DocsError {
    fn from(error: ModelError) -> Self {
        DocsError::Model(Box::new(error))
    }
}

/// The process's docs index.
pub struct Docs {
    config: Arc<Config>,
    events: Arc<Events>,
    workspace: Workspace,
    spec: OnceCell<EmbeddingSpec>,
    embedder: OnceCell<Embedder>,
    reranker: OnceCell<Option<CrossEncoder>>,
    store: OnceCell<DocStore>,
    running: Mutex<Option<Arc<IngestProgress>>>,
}

impl Docs {
    /// For the server: what an MCP client indexes must lie in the allowed roots.
    pub fn new(config: Arc<Config>, events: Arc<Events>) -> Arc<Docs> {
        let workspace = Workspace::new(config.allowed_roots.clone());
        Self::with_workspace(config, events, workspace)
    }

    /// For `drydock index`, run by the user: any path the user can read (given absolute).
    pub fn for_command_line(config: Arc<Config>) -> Arc<Docs> {
        let everything = Workspace::new(vec![PathBuf::from("/")]);
        Self::with_workspace(config, Arc::default(), everything)
    }

    fn with_workspace(config: Arc<Config>, events: Arc<Events>, workspace: Workspace) -> Arc<Docs> {
        Arc::new(Docs {
            workspace,
            config,
            events,
            spec: OnceCell::new(),
            embedder: OnceCell::new(),
            reranker: OnceCell::new(),
            store: OnceCell::new(),
            running: Mutex::new(None),
        })
    }

    pub fn index_dir(&self) -> &Path {
        &self.config.docs.index_dir
    }

    /// The configured embedding model (fetched into the data directory on first use when it
    /// is a catalogue model not there yet).
    pub fn spec(&self) -> BoxFuture<'_, Result<EmbeddingSpec, DocsError>> {
        async move {
            let spec = self
                .spec
                .get_or_try_init(|| async {
                    let fetcher = Fetcher::from_env();
                    models::embedding_spec(
                        self.config.docs.model.as_ref(),
                        &self.config.data_dir,
                        &fetcher,
                    )
                    .await
                })
                .await?;
            Ok(spec.clone())
        }
        .boxed()
    }

    /// The shared model, loaded on first use (about a second).
    pub fn embedder(&self) -> BoxFuture<'_, Result<Embedder, DocsError>> {
        async move {
            let embedder = self
                .embedder
                .get_or_try_init(|| async {
                    let spec = self.spec().await?;
                    tokio::task::spawn_blocking(move || Embedder::load_spec(&spec))
                        .await
                        .map_err(|e| EmbedError::Task(e.to_string()))?
                        .map_err(DocsError::from)
                })
                .await?;
            Ok(embedder.clone())
        }
        .boxed()
    }

    /// The configured cross-encoder, loaded on first use; None when none is configured.
    pub fn reranker(&self) -> BoxFuture<'_, Result<Option<CrossEncoder>, DocsError>> {
        async move {
            let reranker = self
                .reranker
                .get_or_try_init(|| async {
                    let Some(choice) = &self.config.docs.reranker else {
                        return Ok::<_, DocsError>(None);
                    };
                    let spec =
                        models::reranker_spec(choice, &self.config.data_dir, &Fetcher::from_env())
                            .await?;
                    let loaded = tokio::task::spawn_blocking(move || CrossEncoder::load(&spec))
                        .await
                        .map_err(|e| EmbedError::Task(e.to_string()))??;
                    Ok(Some(loaded))
                })
                .await?;
            Ok(reranker.clone())
        }
        .boxed()
    }

    /// The index, opened (and created) on first use; refused when another model built it.
    pub fn store(&self) -> BoxFuture<'_, Result<DocStore, DocsError>> {
        async move {
            let store = self
                .store
                .get_or_try_init(|| async {
                    let spec = self.spec().await?;
                    Ok(DocStore::open(self.index_dir(), &spec.name, spec.dimension).await?)
                })
                .await;
            match store {
                Ok(store) => Ok(store.clone()),
                Err(DocsError::Store(mismatch @ IndexError::ModelMismatch { .. })) => {
                    Err(DocsError::OtherModel {
                        mismatch: Box::new(mismatch),
                        command: format!(
                            "drydock index --model {} --index {}",
                            shell_word(&self.configured_model()),
                            shell_word(&self.index_dir().display().to_string())
                        ),
                    })
                }
                Err(error) => Err(error),
            }
        }
        .boxed()
    }

    /// The embedding model as the configuration names it.
    fn configured_model(&self) -> String {
        match &self.config.docs.model {
            Some(model) => model.to_string(),
            None => embed::DEFAULT_MODEL_NAME.to_string(),
        }
    }

    /// Records in the index that `request` was indexed, to index it again with another model.
    pub fn note_ingest<'a>(
        &'a self,
        request: &'a IndexRequest,
    ) -> BoxFuture<'a, Result<(), DocsError>> {
        async move {
            let store = self.store().await?;
            let source = serde_json::to_value(request).map_err(|e| IndexError::Metadata {
                path: store.dir().display().to_string(),
                reason: e.to_string(),
            })?;
            let reranker = self.config.docs.reranker.as_ref().map(|r| r.to_string());
            Ok(store.note_ingest(source, reranker.as_deref())?)
        }
        .boxed()
    }

    /// Loads the model and opens the index when there is one, so the first lookup does not
    /// wait for them; a failure is logged and reported again by the first call.
    pub fn warm_up(&self) -> BoxFuture<'_, ()> {
        async move {
            if !self.exists() {
                return;
            }
            if let Err(error) = self.store().await {
                tracing::warn!("docs index: {error}");
            } else if let Err(error) = self.embedder().await {
                tracing::warn!("docs index: {error}");
            } else if let Err(error) = self.reranker().await {
                tracing::warn!("docs index: {error}");
            }
        }
        .boxed()
    }

    /// Whether the index has been created (a lookup or summary never creates it).
    fn exists(&self) -> bool {
        self.store.initialized()
            || self
                .index_dir()
                .join(format!("{TABLE_NAME}.lance"))
                .is_dir()
    }

    fn empty_message(&self) -> String {
        format!(
            "The docs index at {} is empty. Fill it with `drydock index --toolchain-docs` (the \
             Rust docs rustup installed and Elixir's standard library), `drydock index --project \
             DIR` (a project and its dependencies at their locked versions) or `drydock index \
             PATH...`; from MCP, call docs_index with project_path, paths or toolchain_docs.",
            self.index_dir().display()
        )
    }

    pub fn lookup(&self, request: LookupRequest) -> BoxFuture<'_, Result<LookupReport, DocsError>> {
        async move {
            let query = request.query.trim().to_string();
            if query.is_empty() {
                return Err(DocsError::InvalidArgument(
                    "`query` is empty: say what to look up".into(),
                ));
            }
            let length = query.chars().count();
            if length > MAX_QUERY_CHARS {
                return Err(DocsError::InvalidArgument(format!(
                    "`query` is {length} characters; docs_lookup takes a question of at most \
                 {MAX_QUERY_CHARS}: ask what you want to know (an error's message, an API's \
                 name), not a whole file or log"
                )));
            }
            let limit = request.limit.map_or(DEFAULT_LIMIT, |n| n.get() as usize);
            let scope = match &request.project_path {
                Some(path) => {
                    let project = self.workspace.resolve_project(path, None, ECOSYSTEMS)?;
                    Some(project_scope(&project.root, project.kind))
                }
                None => None,
            };
            let filter = SearchFilter {
                library: request.library.clone(),
                version: request.version.clone(),
                source_types: request
                    .source_types
                    .iter()
                    .flatten()
                    .map(|t| t.as_str().to_string())
                    .collect(),
                scope,
            };
            let empty = |message: String| LookupReport {
                query: query.clone(),
                results: Vec::new(),
                message: Some(message),
            };
            if !self.exists() {
                return Ok(empty(self.empty_message()));
            }
            let store = self.store().await?;
            if store.count_rows().await? == 0 {
                return Ok(empty(self.empty_message()));
            }
            let mode = request.mode.unwrap_or_default();
            let reranker = match mode {
                SearchMode::Hybrid => self.reranker().await?,
                _ => None,
            };
            let embedding =
                async { Ok::<_, DocsError>(self.embedder().await?.embed_query(&query).await?) };
            let hits = match reranker {
                None => {
                    store
                        .search_embedding(mode, &query, embedding, &filter, limit)
                        .await?
                }
                Some(reranker) => {
                    let candidates = self.config.docs.rerank_candidates.max(limit);
                    let hits = store
                        .search_embedding(mode, &query, embedding, &filter, candidates)
                        .await?;
                    let mut hits = reranker.rerank(&query, hits).await?;
                    hits.truncate(limit);
                    hits
                }
            };
            let nothing = hits.is_empty().then(|| {
            format!(
                "Nothing indexed matches{}. The index holds {}; see the drydock://docs resource \
                 for what is indexed, or index more with docs_index.",
                describe_filter(&request),
                self.config.docs.index_dir.display()
            )
        });
            let under_way = under_way(&self.config.docs.index_dir)
                .map(|ingest| ingest.describe(unix_millis(SystemTime::now())));
            let message = match (nothing, under_way) {
                (Some(nothing), Some(under_way)) => Some(format!("{under_way} {nothing}")),
                (nothing, under_way) => nothing.or(under_way),
            };
            Ok(LookupReport::shaped(
                query,
                hits,
                request.full.map_or(DEFAULT_FULL, |n| n.get() as usize),
                request
                    .excerpts
                    .map_or(DEFAULT_EXCERPTS, |n| n.get() as usize),
                message,
            ))
        }
        .boxed()
    }

    /// The passage a docs_lookup result's id names, its section or its neighbours.
    pub fn read(&self, request: ReadRequest) -> BoxFuture<'_, Result<ReadReport, DocsError>> {
        async move {
            let id = request.id.trim().to_lowercase();
            if id.len() < 8 || !id.chars().all(|c| c.is_ascii_hexdigit()) {
                return Err(DocsError::InvalidArgument(format!(
                    "`id` {:?} is not a docs_lookup result's id (hex digits, as docs_lookup gives them)",
                    request.id
                )));
            }
            if !self.exists() {
                return Err(DocsError::InvalidArgument(self.empty_message()));
            }
            let store = self.store().await?;
            let mut found = store.chunks_with_id_prefix(&id).await?;
            let hit = match found.len() {
                1 => found.remove(0),
                0 => {
                    return Err(DocsError::InvalidArgument(format!(
                        "no passage has the id {id}: the index changed since the lookup that gave it (look it up again)"
                    )));
                }
                n => {
                    return Err(DocsError::InvalidArgument(format!(
                        "{n} passages have ids starting with {id}: give the id as docs_lookup gave it"
                    )));
                }
            };
            let around = request.around.unwrap_or_default();
            let passages = match around {
                Around::Passage => vec![hit],
                Around::Section | Around::Neighbours => {
                    let file = store
                        .chunks_of_file(&hit.library, hit.version.as_deref(), &hit.file_path)
                        .await?;
                    let at = file.iter().position(|h| h.id == hit.id).unwrap_or(0);
                    match around {
                        Around::Section => file
                            .into_iter()
                            .filter(|h| h.heading == hit.heading)
                            .collect(),
                        _ => file
                            .into_iter()
                            .skip(at.saturating_sub(1))
                            .take(if at == 0 { 2 } else { 3 })
                            .collect(),
                    }
                }
            };
            Ok(ReadReport {
                passages: passages.into_iter().map(LookupResult::whole).collect(),
            })
    }
        .boxed()
    }

    /// Runs an ingest of what `request` names, reporting its counts through `call` every
    /// second; refuses a second one while one runs.
    pub fn index<'a>(
        &'a self,
        request: IndexRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<IngestReport, DocsError>> {
        async move {
            // Dropping `roots_of` kills the helpers it runs (`cargo metadata`, the probes).
            let roots = tokio::select! {
                roots = self.roots_of(&request) => roots?,
                () = call.cancelled() => return Ok(IngestReport {
                    cancelled: true,
                    ..IngestReport::default()
                }),
            };
            let counters = Arc::new(IngestProgress::default());
            let ingest = self.ingest_roots(roots, Arc::clone(&counters), call);
            tokio::pin!(ingest);
            let mut ticker = tokio::time::interval(PROGRESS_EVERY);
            ticker.tick().await;
            loop {
                tokio::select! {
                    result = &mut ingest => {
                        let report = result?;
                        if !report.cancelled {
                            self.note_ingest(&request).await?;
                        }
                        return Ok(report);
                    }
                    _ = ticker.tick() => {
                        let now = counters.snapshot();
                        let done = now.chunks_embedded + now.chunks_reused;
                        call.progress.report_count(done, now.chunks_expected().max(done), &now.line());
                    }
                }
            }
    }
        .boxed()
    }

    /// How the helpers of an ingest run (`cargo metadata`, the toolchain probes, `elixir`
    /// reading docs out of beams): each within the docs_index timeout, without the secrets.
    fn helper_policy(&self) -> Policy {
        self.config.policy_for(ToolName::DocsIndex, None)
    }

    /// The roots an index request names, each checked against the allowed roots.
    pub fn roots_of<'a>(
        &'a self,
        request: &'a IndexRequest,
    ) -> BoxFuture<'a, Result<Vec<Root>, DocsError>> {
        async move {
            let paths = request.paths.clone().unwrap_or_default();
            if paths.is_empty()
                && request.project_path.is_none()
                && request.toolchain_docs != Some(true)
            {
                return Err(DocsError::InvalidArgument(
                    "say what to index: `paths`, `project_path` or `toolchain_docs: true`".into(),
                ));
            }
            if request.transitive.is_some() && request.project_path.is_none() {
                return Err(DocsError::InvalidArgument(
                    "`transitive` applies to `project_path` only".into(),
                ));
            }
            let mut roots = Vec::new();
            for path in &paths {
                let resolved = self.resolve_path(path)?;
                roots.push(Root::Files(
                    self.path_root(&resolved, request.library.as_deref())?,
                ));
            }
            if let Some(path) = &request.project_path {
                let project = self.workspace.resolve_project(path, None, ECOSYSTEMS)?;
                let choice = DependencyChoice {
                    transitive: request.transitive == Some(true),
                };
                roots.extend(
                    project_roots(
                        &self.helper_policy(),
                        &project.root,
                        project.kind,
                        choice,
                        &self.config.docs.exclude,
                    )
                    .await?,
                );
            }
            if request.toolchain_docs == Some(true) {
                let cwd = self
                    .workspace
                    .roots()
                    .first()
                    .cloned()
                    .unwrap_or_else(|| PathBuf::from("/"));
                let found = toolchain_roots(&self.helper_policy(), &cwd).await;
                if found.is_empty() {
                    return Err(DocsError::InvalidArgument(
                    "no toolchain docs found: neither rustup's Rust docs (`rustup component add \
                     rust-docs`) nor an Elixir installation"
                        .into(),
                ));
                }
                roots.extend(found);
            }
            Ok(roots)
        }
        .boxed()
    }

    /// A file or directory to index, inside the allowed roots (relative paths are taken
    /// from the first root).
    fn resolve_path(&self, raw: &str) -> Result<PathBuf, DocsError> {
        let explain = |e: WorkspaceError| DocsError::InvalidArgument(e.to_string());
        let path = Path::new(raw);
        let absolute = match self.workspace.roots().first() {
            Some(root) if !path.is_absolute() => root.join(path),
            _ => path.to_path_buf(),
        };
        if absolute.is_file() {
            let file = absolute
                .canonicalize()
                .map_err(|_| explain(self.workspace.missing(PathArgument::Paths, raw)))?;
            let parent = file.parent().and_then(Path::to_str).unwrap_or("/");
            let dir = self
                .workspace
                .resolve_dir(PathArgument::Paths, parent)
                .map_err(explain)?;
            return Ok(dir.join(file.file_name().unwrap_or_default()));
        }
        self.workspace
            .resolve_dir(PathArgument::Paths, raw)
            .map_err(explain)
    }

    /// The root of `drydock index PATH`: a directory tree, or one file of it.
    pub fn path_root(&self, path: &Path, library: Option<&str>) -> Result<FileRoot, DocsError> {
        let (dir, only) = if path.is_file() {
            let dir = path.parent().unwrap_or(Path::new("/")).to_path_buf();
            (dir, Some(path.to_path_buf()))
        } else {
            (path.to_path_buf(), None)
        };
        let name = library.map(String::from).unwrap_or_else(|| {
            dir.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "docs".into())
        });
        let filter = PathFilter::new(&self.config.docs.include, &self.config.docs.exclude)
            .map_err(|e| DocsError::InvalidArgument(e.to_string()))?;
        Ok(FileRoot {
            dir,
            only,
            library: Library::Named(name),
            version: None,
            filter,
            skip_nested_packages: false,
        })
    }

    /// Ingests `roots`, one ingest at a time per process.
    pub fn ingest_roots<'a>(
        &'a self,
        roots: Vec<Root>,
        progress: Arc<IngestProgress>,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<IngestReport, DocsError>> {
        async move {
            {
                let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
                if let Some(other) = running.as_ref() {
                    return Err(DocsError::Busy {
                        index: self.index_dir().display().to_string(),
                        progress: other.snapshot().line(),
                    });
                }
                *running = Some(Arc::clone(&progress));
            }
            let _done = ClearOnDrop(&self.running);
            let _published = PublishedIngest::start(self.events.clone(), Arc::clone(&progress));
            let embedder = self.embedder().await?;
            let store = self.store().await?;
            let options = IngestOptions {
                max_file_bytes: self.config.docs.max_file_bytes,
                helper: self.helper_policy(),
                ..IngestOptions::default()
            };
            Ok(ingest(&store, &embedder, roots, &options, progress, &call.cancel).await?)
        }
        .boxed()
    }

    /// What is indexed.
    pub fn summary(&self) -> BoxFuture<'_, Result<IndexSummary, DocsError>> {
        async move {
            let ingest_running = self
                .running
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map(|p| p.snapshot().line());
            let mut summary = IndexSummary {
                index_dir: self.index_dir().display().to_string(),
                model: String::new(),
                dimension: 0,
                reranker: self.config.docs.reranker.as_ref().map(|r| r.to_string()),
                chunks: 0,
                libraries: Vec::new(),
                last_update: None,
                vector_index: false,
                ingest_running,
                message: None,
            };
            let spec = match self.spec().await {
                Ok(spec) => spec,
                // A model not fetched yet, offline: what is wrong, instead of no summary at all.
                Err(error) => {
                    summary.model = self.configured_model();
                    summary.message = Some(error.to_string());
                    return Ok(summary);
                }
            };
            (summary.model, summary.dimension) = (spec.name, spec.dimension);
            if self.exists() {
                let store = self.store().await?;
                summary.chunks = store.count_rows().await?;
                summary.libraries = store.libraries().await?;
                summary.last_update = store.last_update().await?;
                summary.vector_index = store.has_vector_index().await?;
            }
            if summary.chunks == 0 {
                summary.message = Some(self.empty_message());
            }
            Ok(summary)
        }
        .boxed()
    }
}

struct ClearOnDrop<'a>(&'a Mutex<Option<Arc<IngestProgress>>>);

impl Drop for ClearOnDrop<'_> {
    fn drop(&mut self) {
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

fn describe_filter(request: &LookupRequest) -> String {
    let mut parts = Vec::new();
    if let Some(library) = &request.library {
        parts.push(format!("library {library}"));
    }
    if let Some(version) = &request.version {
        parts.push(format!("version {version}"));
    }
    if let Some(types) = &request.source_types {
        let types: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
        parts.push(format!("source types {}", types.join(", ")));
    }
    if let Some(project) = &request.project_path {
        parts.push(format!("the project {project} and its dependencies"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" with {}", parts.join(", "))
    }
}

/// An ingest on the event feed: started, its progress every [`PUBLISH_EVERY`], finished
/// (when dropped, however the ingest ended).
struct PublishedIngest {
    events: Arc<Events>,
    progress: Arc<IngestProgress>,
    ticker: tokio::task::JoinHandle<()>,
}

const PUBLISH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How often a running `index` reports its counts to its caller.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

impl PublishedIngest {
    fn start(events: Arc<Events>, progress: Arc<IngestProgress>) -> PublishedIngest {
        publish_ingest(&events, IngestPhase::Started, &progress);
        let ticker = tokio::spawn({
            let events = events.clone();
            let progress = progress.clone();
            async move {
                let mut ticks = tokio::time::interval(PUBLISH_EVERY);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    publish_ingest(&events, IngestPhase::Progress, &progress);
                }
            }
        });
        PublishedIngest {
            events,
            progress,
            ticker,
        }
    }
}

impl Drop for PublishedIngest {
    fn drop(&mut self) {
        self.ticker.abort();
        publish_ingest(&self.events, IngestPhase::Finished, &self.progress);
    }
}

fn publish_ingest(events: &Events, phase: IngestPhase, progress: &IngestProgress) {
    let now = progress.snapshot();
    events.publish(EventKind::DocsIngest {
        phase,
        files_done: now.files_done,
        files_total: now.files_total,
        chunks_embedded: now.chunks_embedded,
        chunks_reused: now.chunks_reused,
    });
}
