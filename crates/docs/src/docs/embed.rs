//! Text embeddings for the docs index: one fastembed model shared by the whole process.
//!
//! The default model, all-MiniLM-L6-v2 quantized to 8 bits (384 dimensions), ships with
//! drydock: its files in `models/all-MiniLM-L6-v2-int8/` are built into the binary (the
//! default `bundled-model` feature), so an installed `drydock` needs no checkout, and it loads
//! through fastembed's user-defined model API, so nothing is downloaded. [`find_model`] says
//! where it is looked for.
//!
//! ONNX Runtime is loaded at run time (ort's `load-dynamic`), looked for in this order:
//! 1. `$ORT_DYLIB_PATH`, when set (used as is: a bad path is an error, not a fall-through);
//! 2. drydock's cache dir: `~/.cache/drydock/ort/libonnxruntime.so.1.31.1`
//!    (`$XDG_CACHE_HOME/drydock/ort/...` when that is set), where `scripts/setup-docs.sh`
//!    puts the library from PyPI's `onnxruntime==1.31.1` wheel;
//! 3. the system: `libonnxruntime.so` next to the executable, then through the dynamic
//!    loader's search path (`LD_LIBRARY_PATH`, ld.so.cache).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use fastembed::{InitOptionsUserDefined, TextEmbedding, TokenizerFiles, UserDefinedEmbeddingModel};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::models::EmbeddingSpec;

/// The name recorded in an index built with the shipped model.
pub const DEFAULT_MODEL_NAME: &str = "all-MiniLM-L6-v2-int8";
/// The shipped model's embedding size.
pub const DEFAULT_DIMENSION: usize = 384;
/// The ONNX Runtime release `scripts/setup-docs.sh` installs.
pub const ORT_VERSION: &str = "1.31.1";
/// Texts per model call: fastembed's default (256) costs 3.5x the memory for no speed.
pub const BATCH_SIZE: usize = 32;
/// ONNX Runtime's worker threads spin for a while after each run by default: on a small
/// machine that takes the cores a lookup's search needs right after its query's embedding
/// (p99 of a lookup 40 ms with spinning, 15 ms without, on 2 cores at 100k chunks).
pub(super) const NO_SPINNING: (&str, &str) = ("session.intra_op.allow_spinning", "0");
/// ONNX Runtime threads of the query session (see [`Embedder`]).
const QUERY_THREADS: usize = 1;
/// Word pieces per text, as the reference sentence-transformers model (longer is cut).
pub const MAX_LENGTH: usize = 256;

/// The shipped model's ONNX file.
pub const MODEL_FILE: &str = "model_quantized.onnx";
/// The tokenizer's files every model directory needs, in the order of fastembed's
/// `TokenizerFiles` fields.
pub const TOKENIZER_FILES: [&str; 4] = [
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error(
        "ONNX Runtime was not found (looked at {tried}). Get it with `scripts/setup-docs.sh` from \
         the drydock checkout, or by hand: `pip download --no-deps --only-binary=:all: \
         --python-version 3.11 --platform manylinux_2_28_x86_64 onnxruntime=={ORT_VERSION} -d /tmp/ort` \
         then unzip `onnxruntime/capi/libonnxruntime.so.{ORT_VERSION}` from the wheel into \
         {cache_dir} (or point ORT_DYLIB_PATH at it)"
    )]
    OnnxRuntimeMissing { tried: String, cache_dir: String },
    #[error("ONNX Runtime at {path} could not be loaded: {reason}")]
    OnnxRuntimeUnusable { path: String, reason: String },
    #[error(
        "the embedding model was not found (looked in {tried}); it ships with drydock in \
         models/all-MiniLM-L6-v2-int8/: build drydock with its default `bundled-model` feature, \
         copy that folder to {data_dir}, or set `[docs] model_dir` in the config"
    )]
    ModelMissing { tried: String, data_dir: String },
    #[error("cannot read the embedding model file {path}: {source}")]
    ModelFile {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the embedding model failed: {0}")]
    Model(String),
    #[error("the embedding task stopped: {0}")]
    Task(String),
}

pub type Result<T> = std::result::Result<T, EmbedError>;

/// One model, cheap to clone and share, in two ONNX Runtime sessions: one for passages, on
/// every core, and one for queries, on one thread. A query never waits behind a batch of a
/// running ingest, and its embedding (about 20 word pieces) needs no second core, which a
/// build may be holding (docs/retrieval.md has what was measured). Each session sits behind
/// a mutex (fastembed's `embed` takes `&mut self`), and every call runs on tokio's blocking
/// pool.
#[derive(Clone)]
pub struct Embedder {
    inner: Arc<Inner>,
}

struct Inner {
    passages: Mutex<TextEmbedding>,
    queries: Mutex<TextEmbedding>,
    name: String,
    dimension: usize,
    query_prefix: String,
    passage_prefix: String,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("name", &self.inner.name)
            .field("dimension", &self.inner.dimension)
            .finish()
    }
}

impl Embedder {
    /// Loads the shipped model from where [`find_model`] finds it with no configuration: the
    /// copy built into the binary. Blocking (reads ~23 MB and builds an ONNX Runtime session,
    /// about a second).
    pub fn load_default() -> Result<Self> {
        Self::load_from(&find_model(None, None)?)
    }

    /// Loads the shipped int8 all-MiniLM-L6-v2 from `dir` (the files of
    /// `models/all-MiniLM-L6-v2-int8/`). Blocking, like [`Embedder::load_default`].
    pub fn load(dir: &Path) -> Result<Self> {
        Self::load_from(&ModelSource::Dir(dir.to_path_buf()))
    }

    /// Loads the shipped model from `source`. Blocking, like [`Embedder::load_default`].
    pub fn load_from(source: &ModelSource) -> Result<Self> {
        Self::load_spec(&EmbeddingSpec::shipped(source.clone()))
    }

    /// Loads the model `spec` describes. Blocking, like [`Embedder::load_default`].
    pub fn load_spec(spec: &EmbeddingSpec) -> Result<Self> {
        load_onnx_runtime()?;
        let source = &spec.source;
        let model = UserDefinedEmbeddingModel::new(source.file(&spec.onnx)?, source.tokenizer()?)
            // sentence-transformers pools the graph's last_hidden_state (mean for the shipped one).
            .with_pooling(spec.pooling.clone());
        let session = |options: InitOptionsUserDefined| {
            let options = options
                .with_max_length(MAX_LENGTH)
                .with_session_config(NO_SPINNING.0, NO_SPINNING.1);
            TextEmbedding::try_new_from_user_defined(model.clone(), options)
                .map_err(|e| EmbedError::Model(e.to_string()))
        };
        let passages = session(InitOptionsUserDefined::new())?;
        let queries = session(InitOptionsUserDefined::new().with_intra_threads(QUERY_THREADS))?;
        let embedder = Embedder {
            inner: Arc::new(Inner {
                passages: Mutex::new(passages),
                queries: Mutex::new(queries),
                name: spec.name.clone(),
                dimension: spec.dimension,
                query_prefix: spec.query_prefix.clone(),
                passage_prefix: spec.passage_prefix.clone(),
            }),
        };
        let probe = embedder
            .inner
            .embed_batch(&embedder.inner.queries, &["drydock".to_string()])?;
        match probe.first().map(Vec::len) {
            Some(size) if size == spec.dimension => Ok(embedder),
            size => Err(EmbedError::Model(format!(
                "{} gives vectors of {} values where its config.json says {}",
                spec.name,
                size.unwrap_or(0),
                spec.dimension
            ))),
        }
    }

    /// The name an index records, to refuse mixing vectors of different models.
    pub fn model_name(&self) -> &str {
        &self.inner.name
    }

    pub fn dimension(&self) -> usize {
        self.inner.dimension
    }

    /// Embeds passages in batches of [`BATCH_SIZE`] on a blocking thread; one vector per
    /// passage, in order, L2-normalised.
    pub fn embed_passages(&self, passages: Vec<String>) -> BoxFuture<'_, Result<Vec<Vec<f32>>>> {
        async move {
            let passages = prefixed(&self.inner.passage_prefix, passages);
            self.embed(|inner| &inner.passages, passages).await
        }
        .boxed()
    }

    /// Embeds `texts` in batches in the session `session` picks, on a blocking thread.
    async fn embed(
        &self,
        session: fn(&Inner) -> &Mutex<TextEmbedding>,
        texts: Vec<String>,
    ) -> Result<Vec<Vec<f32>>> {
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let mut vectors = Vec::with_capacity(texts.len());
            for batch in texts.chunks(BATCH_SIZE) {
                vectors.extend(inner.embed_batch(session(&inner), batch)?);
            }
            Ok(vectors)
        })
        .await
        .map_err(|e| EmbedError::Task(e.to_string()))?
    }

    /// Embeds a search query, after the model's query prefix, in the query session.
    pub fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>>> {
        async move {
            let query = format!("{}{query}", self.inner.query_prefix);
            let mut vectors = self.embed(|inner| &inner.queries, vec![query]).await?;
            vectors
                .pop()
                .ok_or_else(|| EmbedError::Model("no vector for the query".into()))
        }
        .boxed()
    }
}

fn prefixed(prefix: &str, texts: Vec<String>) -> Vec<String> {
    match prefix.is_empty() {
        true => texts,
        false => texts.into_iter().map(|t| format!("{prefix}{t}")).collect(),
    }
}

impl Inner {
    fn embed_batch(
        &self,
        session: &Mutex<TextEmbedding>,
        batch: &[String],
    ) -> Result<Vec<Vec<f32>>> {
        let mut model = session.lock().unwrap_or_else(PoisonError::into_inner);
        model
            .embed(batch, Some(BATCH_SIZE))
            .map_err(|e| EmbedError::Model(e.to_string()))
    }
}

/// Where the shipped model's files come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelSource {
    /// A directory holding the files of `models/all-MiniLM-L6-v2-int8/`.
    Dir(PathBuf),
    /// The copy built into the binary (the `bundled-model` feature).
    Bundled,
}

impl ModelSource {
    /// The tokenizer's files, as fastembed takes them.
    pub fn tokenizer(&self) -> Result<TokenizerFiles> {
        let [tokenizer, config, special_tokens_map, tokenizer_config] =
            TOKENIZER_FILES.map(|name| self.file(name));
        Ok(TokenizerFiles {
            tokenizer_file: tokenizer?,
            config_file: config?,
            special_tokens_map_file: special_tokens_map?,
            tokenizer_config_file: tokenizer_config?,
        })
    }

    pub fn file(&self, name: &str) -> Result<Vec<u8>> {
        match self {
            ModelSource::Dir(dir) => {
                let path = dir.join(name);
                std::fs::read(&path).map_err(|source| EmbedError::ModelFile { path, source })
            }
            ModelSource::Bundled => bundled::file(name)
                .map(<[u8]>::to_vec)
                .ok_or_else(|| EmbedError::Model(format!("{name} is not built into drydock"))),
        }
    }
}

impl std::fmt::Display for ModelSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelSource::Dir(dir) => write!(f, "{}", dir.display()),
            ModelSource::Bundled => write!(f, "built into drydock"),
        }
    }
}

/// Where the shipped model is looked for, first hit wins:
/// 1. `configured`, `[docs] model_dir` from the config, when given (it must hold the model);
/// 2. `DATA_DIR/models/all-MiniLM-L6-v2-int8`, when drydock's data dir is given: a copy the
///    user put there overrides the built-in one;
/// 3. the copy built into the binary (the default `bundled-model` feature).
///
/// Never the source checkout: an installed drydock works wherever its checkout went.
pub fn find_model(configured: Option<&Path>, data_dir: Option<&Path>) -> Result<ModelSource> {
    let has_model = |dir: &Path| dir.join(MODEL_FILE).is_file();
    let installed = data_dir.map(installed_model_dir);
    let candidates: Vec<PathBuf> = match configured {
        Some(dir) => vec![dir.to_path_buf()],
        None => installed.iter().cloned().collect(),
    };
    if let Some(dir) = candidates.iter().find(|dir| has_model(dir)) {
        return Ok(ModelSource::Dir(dir.clone()));
    }
    if configured.is_none() && bundled::file(MODEL_FILE).is_some() {
        return Ok(ModelSource::Bundled);
    }
    let mut tried = display_list(&candidates);
    if configured.is_none() {
        tried.push_str(", the binary (built without the `bundled-model` feature)");
    }
    Err(EmbedError::ModelMissing {
        tried,
        data_dir: installed
            .map(|d| d.display().to_string())
            .unwrap_or_else(|| "DATA_DIR/models/".into()),
    })
}

/// Where a copy of the shipped model in drydock's data dir `data_dir` lives.
pub fn installed_model_dir(data_dir: &Path) -> PathBuf {
    data_dir.join("models").join(DEFAULT_MODEL_NAME)
}

/// The model's files, built into the binary by the `bundled-model` feature.
mod bundled {
    #[cfg(feature = "bundled-model")]
    pub(super) fn file(name: &str) -> Option<&'static [u8]> {
        macro_rules! model_file {
            ($name:literal) => {
                include_bytes!(concat!(
                    env!("CARGO_MANIFEST_DIR"),
                    "/../../models/all-MiniLM-L6-v2-int8/",
                    $name
                ))
                .as_slice()
            };
        }
        match name {
            "model_quantized.onnx" => Some(model_file!("model_quantized.onnx")),
            "tokenizer.json" => Some(model_file!("tokenizer.json")),
            "config.json" => Some(model_file!("config.json")),
            "special_tokens_map.json" => Some(model_file!("special_tokens_map.json")),
            "tokenizer_config.json" => Some(model_file!("tokenizer_config.json")),
            _ => None,
        }
    }

    #[cfg(not(feature = "bundled-model"))]
    pub(super) fn file(_name: &str) -> Option<&'static [u8]> {
        None
    }
}

/// Where `scripts/setup-docs.sh` puts ONNX Runtime.
pub fn cached_onnx_runtime() -> Option<PathBuf> {
    dirs::cache_dir().map(|d| {
        d.join("drydock/ort")
            .join(format!("libonnxruntime.so.{ORT_VERSION}"))
    })
}

/// Loads ONNX Runtime once per process, in the order the module documents. ort keeps the
/// first library it loads; a failed attempt leaves nothing behind, so a later call (after
/// the user ran the set-up) can still succeed.
pub fn load_onnx_runtime() -> Result<PathBuf> {
    static LOADED: Mutex<Option<PathBuf>> = Mutex::new(None);
    let mut loaded = LOADED.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some(path) = loaded.as_ref() {
        return Ok(path.clone());
    }
    let unusable = |path: &Path, reason: String| EmbedError::OnnxRuntimeUnusable {
        path: path.display().to_string(),
        reason,
    };
    let mut tried = Vec::new();
    let path = match std::env::var_os("ORT_DYLIB_PATH").filter(|p| !p.is_empty()) {
        Some(path) => {
            let path = PathBuf::from(path);
            init_ort(&path).map_err(|e| unusable(&path, format!("{e} (from ORT_DYLIB_PATH)")))?;
            path
        }
        None => {
            let cached = cached_onnx_runtime().filter(|p| p.is_file());
            match cached {
                Some(path) => {
                    init_ort(&path).map_err(|e| unusable(&path, e.to_string()))?;
                    path
                }
                None => {
                    tried.push("ORT_DYLIB_PATH (unset)".to_string());
                    if let Some(path) = cached_onnx_runtime() {
                        tried.push(path.display().to_string());
                    }
                    let system = PathBuf::from("libonnxruntime.so");
                    tried.push("libonnxruntime.so (system)".to_string());
                    match init_ort(&system) {
                        Ok(()) => system,
                        Err(ort::LoadDynamicError::Dlopen { .. }) => {
                            return Err(EmbedError::OnnxRuntimeMissing {
                                tried: tried.join(", "),
                                cache_dir: cached_onnx_runtime()
                                    .and_then(|p| p.parent().map(Path::to_path_buf))
                                    .map(|p| p.display().to_string())
                                    .unwrap_or_else(|| "~/.cache/drydock/ort/".into()),
                            });
                        }
                        Err(e) => return Err(unusable(&system, e.to_string())),
                    }
                }
            }
        }
    };
    *loaded = Some(path.clone());
    Ok(path)
}

fn init_ort(path: &Path) -> std::result::Result<(), ort::LoadDynamicError> {
    // Loads the library and checks its version; the environment builder it returns is
    // dropped, fastembed builds its own environment on the loaded library.
    let _environment = ort::init_from(path)?;
    Ok(())
}

fn display_list(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
        let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
        dot / (norm(a) * norm(b))
    }

    #[derive(serde::Deserialize)]
    struct Reference {
        sentences: Vec<String>,
        reference: Vec<Vec<f32>>,
    }

    /// Vectors of sentence-transformers (torch, fp32) for five sentences, made when the
    /// model was converted; kept in the repo so the test needs nothing outside it.
    fn reference() -> Reference {
        serde_json::from_str(include_str!("testdata/reference-embeddings.json")).unwrap()
    }

    #[tokio::test]
    async fn shipped_model_matches_the_reference_embeddings() {
        let embedder = Embedder::load_default().unwrap();
        assert_eq!(embedder.model_name(), "all-MiniLM-L6-v2-int8");
        assert_eq!(embedder.dimension(), 384);
        let reference = reference();
        let vectors = embedder
            .embed_passages(reference.sentences.clone())
            .await
            .unwrap();
        assert_eq!(vectors.len(), reference.sentences.len());
        for (i, (got, want)) in vectors.iter().zip(&reference.reference).enumerate() {
            assert_eq!(got.len(), 384);
            let similarity = cosine(got, want);
            assert!(
                similarity >= 0.99,
                "sentence {i}: cosine {similarity} against the reference"
            );
            let norm = got.iter().map(|x| x * x).sum::<f32>().sqrt();
            assert!((norm - 1.0).abs() < 1e-3, "not normalised: {norm}");
        }
        let query = embedder.embed_query(&reference.sentences[2]).await.unwrap();
        assert!(cosine(&query, &reference.reference[2]) >= 0.99);
    }

    #[test]
    fn a_missing_onnx_runtime_is_explained() {
        let message = EmbedError::OnnxRuntimeMissing {
            tried: "ORT_DYLIB_PATH (unset), libonnxruntime.so (system)".into(),
            cache_dir: "/home/u/.cache/drydock/ort".into(),
        }
        .to_string();
        for needed in [
            "scripts/setup-docs.sh",
            "onnxruntime==1.31.1",
            "libonnxruntime.so.1.31.1",
            "/home/u/.cache/drydock/ort",
            "ORT_DYLIB_PATH",
        ] {
            assert!(message.contains(needed), "{needed} missing from: {message}");
        }
    }

    #[test]
    fn the_model_is_built_in_a_copy_in_the_data_dir_overrides_it_and_a_configured_dir_must_hold_it()
    {
        assert_eq!(find_model(None, None).unwrap(), ModelSource::Bundled);
        let data_dir = tempfile::tempdir().unwrap();
        assert_eq!(
            find_model(None, Some(data_dir.path())).unwrap(),
            ModelSource::Bundled,
            "an empty data dir leaves the built-in model"
        );
        let copy = installed_model_dir(data_dir.path());
        std::fs::create_dir_all(&copy).unwrap();
        let shipped = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("models/all-MiniLM-L6-v2-int8");
        for entry in std::fs::read_dir(&shipped).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), copy.join(entry.file_name())).unwrap();
        }
        assert_eq!(
            find_model(None, Some(data_dir.path())).unwrap(),
            ModelSource::Dir(copy.clone())
        );
        for name in ["model_quantized.onnx", "tokenizer.json", "config.json"] {
            assert_eq!(
                ModelSource::Bundled.file(name).unwrap(),
                ModelSource::Dir(copy.clone()).file(name).unwrap(),
                "the built-in {name} is the shipped one"
            );
        }

        let empty = tempfile::tempdir().unwrap();
        let error = find_model(Some(empty.path()), Some(data_dir.path())).unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains(&empty.path().display().to_string())
                && message.contains("[docs] model_dir"),
            "a configured dir without the model is an error, not a fall-through: {message}"
        );
    }
}
