//! Which models the docs use: the embedding model (the shipped all-MiniLM-L6-v2 unless
//! `[docs] model` names another) and the cross-encoder that re-scores a lookup's first
//! candidates (`[docs] reranker`, off unless named).
//!
//! A model is named from fastembed's catalogue (`bge-small-en-v1.5`, or its repository,
//! `Xenova/bge-small-en-v1.5`) or given as a local directory of ONNX model files. A catalogue
//! model is kept in `DATA_DIR/models/NAME/` with its repository's paths; missing there, its
//! files are fetched from `$HF_ENDPOINT` (default https://huggingface.co) into a `.partial`
//! folder renamed once whole. Without a network the error lists each file's address and where
//! it goes.
//!
//! A model's name is what the index records: a catalogue model's short name; for a directory,
//! its folder name and the first 12 hex digits of its ONNX file's SHA-256 (so a changed model
//! is another model), except that the shipped model's own files, wherever they are, are the
//! shipped model.

use std::path::{Path, PathBuf};
use std::time::Duration;

use fastembed::{Pooling, TextEmbedding, TextRerank};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::embed::{
    DEFAULT_DIMENSION, DEFAULT_MODEL_NAME, EmbedError, ModelSource, TOKENIZER_FILES, find_model,
};
use crate::config::ModelRef;
use crate::digest;

/// SHA-256 of the shipped `model_quantized.onnx` (a unit test checks it).
pub const SHIPPED_ONNX_SHA256: &str =
    "4f5ea2957e167785332ff8434d900105ea1163c8ba99f7725461ab7383c02a9b";
/// Where a model directory's ONNX file is looked for, first hit wins.
pub const ONNX_FILES: [&str; 4] = [
    "model.onnx",
    "model_quantized.onnx",
    "onnx/model.onnx",
    "onnx/model_quantized.onnx",
];
const DEFAULT_ENDPOINT: &str = "https://huggingface.co";
/// How long a fetch may wait for the server before it is taken for offline.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error(
        "unknown {role} `{name}`: set it to a directory holding an ONNX model (a path starting \
         with /, ./, ../ or ~) or to one of fastembed's: {known}"
    )]
    Unknown {
        role: Role,
        name: String,
        known: String,
    },
    #[error(
        "{dir} is not an ONNX model directory: {missing} is missing (it needs an ONNX file, one \
         of {onnx}, and {tokenizer})",
        onnx = ONNX_FILES.join(", "),
        tokenizer = TOKENIZER_FILES.join(", ")
    )]
    NotAModel { dir: PathBuf, missing: String },
    #[error("the {role} {dir}/config.json says no embedding size (hidden_size, d_model or dim)")]
    NoDimension { role: Role, dir: PathBuf },
    #[error("cannot read {path}: {reason}")]
    Unreadable { path: PathBuf, reason: String },
    #[error(
        "the {role} {name} is not in {dir} and fetching it from {endpoint} failed: {reason}. \
         Without a network, download these files and put them there, keeping their paths: \
         {files}; or set `[docs] {key}` to a directory holding an ONNX model",
        key = role.key()
    )]
    Offline {
        role: Role,
        name: String,
        dir: PathBuf,
        endpoint: String,
        reason: Box<FetchError>,
        files: String,
    },
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

/// Why a model's files were not fetched.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The fetcher fetches nothing (`drydock doctor`, tests), and says why.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Client(#[source] model_fetch::Error),
    #[error("{url}: {source}")]
    Http {
        url: String,
        source: model_fetch::Error,
    },
    #[error("{}: {source}", path.display())]
    File {
        path: PathBuf,
        source: std::io::Error,
    },
}

/// What a model is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Embedding,
    Reranker,
}

impl Role {
    fn key(self) -> &'static str {
        match self {
            Role::Embedding => "model",
            Role::Reranker => "reranker",
        }
    }
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Embedding => "embedding model",
            Role::Reranker => "reranker",
        })
    }
}

/// An embedding model ready to load, and how its texts are given to it.
#[derive(Debug, Clone, PartialEq)]
pub struct EmbeddingSpec {
    /// Recorded in the index: an index is searched with the model that built it only.
    pub name: String,
    pub dimension: usize,
    pub source: ModelSource,
    /// The ONNX file's path in `source`.
    pub onnx: String,
    pub pooling: Pooling,
    /// Put before a query (some models are trained with one, e.g. nomic's `search_query: `).
    pub query_prefix: String,
    /// Put before a passage.
    pub passage_prefix: String,
}

impl EmbeddingSpec {
    /// The shipped all-MiniLM-L6-v2 from `source`.
    pub fn shipped(source: ModelSource) -> EmbeddingSpec {
        EmbeddingSpec {
            name: DEFAULT_MODEL_NAME.to_string(),
            dimension: DEFAULT_DIMENSION,
            source,
            onnx: super::embed::MODEL_FILE.to_string(),
            pooling: Pooling::Mean,
            query_prefix: String::new(),
            passage_prefix: String::new(),
        }
    }
}

/// A cross-encoder ready to load.
#[derive(Debug, Clone, PartialEq)]
pub struct RerankerSpec {
    pub name: String,
    pub dir: PathBuf,
    pub onnx: String,
}

/// Where catalogue models come from when they are not on disk yet.
#[derive(Debug, Clone)]
pub struct Fetcher {
    endpoint: String,
    /// Why nothing is fetched, when fetching is off.
    refusal: Option<String>,
}

impl Fetcher {
    /// Hugging Face, or the mirror `$HF_ENDPOINT` names (the variable fastembed and
    /// huggingface_hub read).
    pub fn from_env() -> Fetcher {
        let endpoint = std::env::var("HF_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
            .unwrap_or_else(|| DEFAULT_ENDPOINT.to_string());
        Fetcher::at(&endpoint)
    }

    pub fn at(endpoint: &str) -> Fetcher {
        Fetcher {
            endpoint: endpoint.trim_end_matches('/').to_string(),
            refusal: None,
        }
    }

    /// A fetcher that fetches nothing and says `why`.
    pub fn refusing(why: &str) -> Fetcher {
        Fetcher {
            refusal: Some(why.to_string()),
            ..Fetcher::from_env()
        }
    }

    fn url(&self, repository: &str, file: &str) -> String {
        format!("{}/{repository}/resolve/main/{file}", self.endpoint)
    }

    /// Fetches `files` of `repository` into `dir`, whole or not at all.
    async fn fetch(
        &self,
        repository: &str,
        files: &[String],
        dir: &Path,
    ) -> Result<(), FetchError> {
        if let Some(refusal) = &self.refusal {
            return Err(FetchError::Refused(refusal.clone()));
        }
        let folder = dir.file_name().unwrap_or_default().to_string_lossy();
        let partial = dir.with_file_name(format!(".{folder}.partial-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&partial);
        let client = model_fetch::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .map_err(FetchError::Client)?;
        let on_file = |path: &Path| {
            let path = path.to_path_buf();
            move |source| FetchError::File { path, source }
        };
        let fetched = async {
            for file in files {
                let url = self.url(repository, file);
                let on_url = |source| FetchError::Http {
                    url: url.clone(),
                    source,
                };
                let mut response = client
                    .get(&url)
                    .send()
                    .await
                    .and_then(|r| r.error_for_status())
                    .map_err(on_url)?;
                let path = partial.join(file);
                std::fs::create_dir_all(path.parent().unwrap_or(&partial))
                    .map_err(on_file(&partial))?;
                // Hundreds of megabytes: written without holding up the runtime's workers.
                let mut out = tokio::fs::File::create(&path)
                    .await
                    .map_err(on_file(&path))?;
                while let Some(chunk) = response.chunk().await.map_err(on_url)? {
                    tokio::io::AsyncWriteExt::write_all(&mut out, &chunk)
                        .await
                        .map_err(on_file(&path))?;
                }
                tokio::io::AsyncWriteExt::flush(&mut out)
                    .await
                    .map_err(on_file(&path))?;
            }
            std::fs::rename(&partial, dir).map_err(on_file(dir))
        }
        .await;
        if fetched.is_err() {
            let _ = std::fs::remove_dir_all(&partial);
        }
        fetched
    }
}

/// The embedding model `choice` names (None or the shipped model's name: the shipped one),
/// found or fetched.
pub fn embedding_spec<'a>(
    choice: Option<&'a ModelRef>,
    data_dir: &'a Path,
    fetcher: &'a Fetcher,
) -> BoxFuture<'a, Result<EmbeddingSpec, ModelError>> {
    async move {
        match choice {
            None => Ok(EmbeddingSpec::shipped(find_model(None, Some(data_dir))?)),
            Some(ModelRef::Named(name)) if name.eq_ignore_ascii_case(DEFAULT_MODEL_NAME) => {
                Ok(EmbeddingSpec::shipped(find_model(None, Some(data_dir))?))
            }
            Some(ModelRef::Dir(dir)) => {
                let dir = dir.clone();
                blocking(move || embedding_dir(&dir)).await
            }
            Some(ModelRef::Named(name)) => {
                let entry = catalogue_entry(Role::Embedding, name)?;
                let dir = cached(&entry, data_dir, fetcher).await?;
                let info = TextEmbedding::list_supported_models()
                    .into_iter()
                    .find(|m| m.model_code == entry.repository)
                    .expect("the entry came from this list");
                let (query_prefix, passage_prefix) = prefixes(&entry.short);
                Ok(EmbeddingSpec {
                    name: entry.short.clone(),
                    dimension: info.dim,
                    source: ModelSource::Dir(dir),
                    onnx: entry.onnx,
                    pooling: TextEmbedding::get_default_pooling_method(&info.model)
                        .unwrap_or(Pooling::Mean),
                    query_prefix: query_prefix.into(),
                    passage_prefix: passage_prefix.into(),
                })
            }
        }
    }
    .boxed()
}

/// The cross-encoder `choice` names, found or fetched.
pub fn reranker_spec<'a>(
    choice: &'a ModelRef,
    data_dir: &'a Path,
    fetcher: &'a Fetcher,
) -> BoxFuture<'a, Result<RerankerSpec, ModelError>> {
    async move {
        match choice {
            ModelRef::Dir(dir) => {
                let dir = dir.clone();
                blocking(move || {
                    let onnx = model_files(&dir)?;
                    let name = local_name(&dir, &onnx, "")?;
                    Ok(RerankerSpec { name, dir, onnx })
                })
                .await
            }
            ModelRef::Named(name) => {
                let entry = catalogue_entry(Role::Reranker, name)?;
                let dir = cached(&entry, data_dir, fetcher).await?;
                Ok(RerankerSpec {
                    name: entry.short,
                    dir,
                    onnx: entry.onnx,
                })
            }
        }
    }
    .boxed()
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ModelError> + Send + 'static,
) -> Result<T, ModelError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ModelError::Embed(EmbedError::Task(e.to_string())))?
}

/// One model of fastembed's catalogue.
#[derive(Debug, Clone, PartialEq)]
struct Entry {
    role: Role,
    /// Its Hugging Face repository, e.g. `Xenova/bge-small-en-v1.5`.
    repository: String,
    /// The repository's last segment, e.g. `bge-small-en-v1.5`.
    short: String,
    onnx: String,
    /// Files the ONNX file needs beside it (external weights).
    additional: Vec<String>,
}

impl Entry {
    fn files(&self) -> Vec<String> {
        std::iter::once(self.onnx.clone())
            .chain(self.additional.iter().cloned())
            .chain(TOKENIZER_FILES.iter().map(|f| f.to_string()))
            .collect()
    }
}

fn catalogue(role: Role) -> Vec<Entry> {
    let entry = |repository: String, onnx: String, additional: Vec<String>| Entry {
        role,
        short: repository
            .rsplit('/')
            .next()
            .unwrap_or(&repository)
            .to_string(),
        repository,
        onnx,
        additional,
    };
    match role {
        Role::Embedding => TextEmbedding::list_supported_models()
            .into_iter()
            .map(|m| entry(m.model_code, m.model_file, m.additional_files))
            .collect(),
        Role::Reranker => TextRerank::list_supported_models()
            .into_iter()
            .map(|m| entry(m.model_code, m.model_file, m.additional_files))
            .collect(),
    }
}

/// The catalogue's model called `name` (its repository or that repository's last segment).
fn catalogue_entry(role: Role, name: &str) -> Result<Entry, ModelError> {
    let entries = catalogue(role);
    entries
        .iter()
        .find(|e| e.repository.eq_ignore_ascii_case(name))
        .or_else(|| entries.iter().find(|e| e.short.eq_ignore_ascii_case(name)))
        .cloned()
        .ok_or_else(|| ModelError::Unknown {
            role,
            name: name.to_string(),
            known: entries
                .iter()
                .map(|e| e.short.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// The catalogue model's folder in the data directory, fetched there first if need be.
async fn cached(entry: &Entry, data_dir: &Path, fetcher: &Fetcher) -> Result<PathBuf, ModelError> {
    let dir = data_dir.join("models").join(&entry.short);
    let files = entry.files();
    if files.iter().all(|f| dir.join(f).is_file()) {
        return Ok(dir);
    }
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent).map_err(|e| ModelError::Unreadable {
            path: parent.to_path_buf(),
            reason: e.to_string(),
        })?;
    }
    if dir.exists() {
        // A folder the user filled by hand, not whole: say what it lacks.
        let missing = files.iter().find(|f| !dir.join(f).is_file());
        return Err(ModelError::NotAModel {
            dir,
            missing: missing.cloned().unwrap_or_default(),
        });
    }
    fetcher
        .fetch(&entry.repository, &files, &dir)
        .await
        .map_err(|reason| ModelError::Offline {
            role: entry.role,
            name: entry.short.clone(),
            dir: dir.clone(),
            endpoint: fetcher.endpoint.clone(),
            reason: Box::new(reason),
            files: files
                .iter()
                .map(|f| format!("{} -> {}", fetcher.url(&entry.repository, f), f))
                .collect::<Vec<_>>()
                .join(", "),
        })?;
    Ok(dir)
}

/// The query and passage prefixes the catalogue's models were trained with.
fn prefixes(short: &str) -> (&'static str, &'static str) {
    let short = short.to_ascii_lowercase();
    if short.starts_with("nomic-embed-text") {
        ("search_query: ", "search_document: ")
    } else if short.contains("e5-") {
        ("query: ", "passage: ")
    } else if short.starts_with("bge-") && short.contains("-en") {
        (
            "Represent this sentence for searching relevant passages: ",
            "",
        )
    } else {
        ("", "")
    }
}

/// A directory's ONNX file (its path in the directory), once every file a model needs is
/// there.
fn model_files(dir: &Path) -> Result<String, ModelError> {
    let not_a_model = |missing: &str| ModelError::NotAModel {
        dir: dir.to_path_buf(),
        missing: missing.to_string(),
    };
    let onnx = ONNX_FILES
        .iter()
        .find(|f| dir.join(f).is_file())
        .ok_or_else(|| not_a_model("an ONNX file"))?;
    if let Some(missing) = TOKENIZER_FILES.iter().find(|f| !dir.join(f).is_file()) {
        return Err(not_a_model(missing));
    }
    Ok(onnx.to_string())
}

/// A local embedding model: its files, its pooling (sentence-transformers'
/// `1_Pooling/config.json`, else mean) and its size (`config.json`).
fn embedding_dir(dir: &Path) -> Result<EmbeddingSpec, ModelError> {
    let onnx = model_files(dir)?;
    let pooling = pooling_of(dir)?;
    let config = read_json(&dir.join("config.json"))?;
    let dimension = ["hidden_size", "d_model", "dim"]
        .iter()
        .find_map(|key| config.get(key).and_then(serde_json::Value::as_u64))
        .ok_or_else(|| ModelError::NoDimension {
            role: Role::Embedding,
            dir: dir.to_path_buf(),
        })? as usize;
    let pooled = match pooling {
        Pooling::Mean => "",
        Pooling::Cls => "+cls",
    };
    Ok(EmbeddingSpec {
        name: local_name(dir, &onnx, pooled)?,
        dimension,
        source: ModelSource::Dir(dir.to_path_buf()),
        onnx,
        pooling,
        query_prefix: String::new(),
        passage_prefix: String::new(),
    })
}

fn pooling_of(dir: &Path) -> Result<Pooling, ModelError> {
    let path = dir.join("1_Pooling/config.json");
    if !path.is_file() {
        return Ok(Pooling::Mean);
    }
    let config = read_json(&path)?;
    let cls = config.get("pooling_mode_cls_token") == Some(&serde_json::Value::Bool(true));
    Ok(if cls { Pooling::Cls } else { Pooling::Mean })
}

/// `dir`'s folder name and its ONNX file's hash; the shipped model's own file with mean
/// pooling is the shipped model.
fn local_name(dir: &Path, onnx: &str, pooled: &str) -> Result<String, ModelError> {
    let path = dir.join(onnx);
    let bytes = std::fs::read(&path).map_err(|e| ModelError::Unreadable {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    let hash = digest::sha256_hex(&bytes);
    if hash == SHIPPED_ONNX_SHA256 && pooled.is_empty() {
        return Ok(DEFAULT_MODEL_NAME.to_string());
    }
    let folder = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    Ok(format!("{folder}@{}{pooled}", &hash[..12]))
}

fn read_json(path: &Path) -> Result<serde_json::Value, ModelError> {
    let unreadable = |reason: String| ModelError::Unreadable {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| unreadable(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| unreadable(e.to_string()))
}

#[cfg(test)]
mod tests {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;

    fn shipped_dir() -> PathBuf {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("models/all-MiniLM-L6-v2-int8")
    }

    fn copy_of_shipped(to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for entry in std::fs::read_dir(shipped_dir()).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }

    #[test]
    fn the_shipped_models_hash_is_its_files() {
        let bytes = std::fs::read(shipped_dir().join("model_quantized.onnx")).unwrap();
        assert_eq!(digest::sha256_hex(&bytes), SHIPPED_ONNX_SHA256);
    }

    #[test]
    fn catalogue_models_are_found_by_short_name_or_repository_and_others_refused() {
        let small = catalogue_entry(Role::Embedding, "bge-small-en-v1.5").unwrap();
        assert_eq!(small.repository, "Xenova/bge-small-en-v1.5");
        assert_eq!(
            catalogue_entry(Role::Embedding, "xenova/BGE-small-en-v1.5").unwrap(),
            small
        );
        let turbo = catalogue_entry(Role::Reranker, "jina-reranker-v1-turbo-en").unwrap();
        assert_eq!(turbo.onnx, "onnx/model.onnx");
        assert!(turbo.files().contains(&"tokenizer.json".to_string()));
        let unknown = catalogue_entry(Role::Reranker, "bge-small-en-v1.5")
            .unwrap_err()
            .to_string();
        for said in [
            "unknown reranker `bge-small-en-v1.5`",
            "bge-reranker-base",
            "./",
        ] {
            assert!(unknown.contains(said), "{said}: {unknown}");
        }
        assert_eq!(prefixes("nomic-embed-text-v1.5").0, "search_query: ");
        assert_eq!(prefixes("all-MiniLM-L6-v2-onnx"), ("", ""));
    }

    #[test]
    fn a_directory_is_a_model_with_its_hash_and_pooling_and_the_shipped_files_are_the_shipped_model()
     {
        let temp = tempfile::tempdir().unwrap();
        let copy = temp.path().join("my minilm");
        copy_of_shipped(&copy);
        let spec = embedding_dir(&copy).unwrap();
        assert_eq!(spec.name, DEFAULT_MODEL_NAME);
        assert_eq!((spec.dimension, spec.pooling.clone()), (384, Pooling::Mean));
        assert_eq!(spec.onnx, "model_quantized.onnx");

        std::fs::create_dir_all(copy.join("1_Pooling")).unwrap();
        std::fs::write(
            copy.join("1_Pooling/config.json"),
            r#"{"word_embedding_dimension": 384, "pooling_mode_cls_token": true}"#,
        )
        .unwrap();
        let cls = embedding_dir(&copy).unwrap();
        assert_eq!(cls.pooling, Pooling::Cls);
        assert_eq!(cls.name, "my minilm@4f5ea2957e16+cls");

        std::fs::remove_file(copy.join("tokenizer.json")).unwrap();
        let error = embedding_dir(&copy).unwrap_err().to_string();
        assert!(error.contains("tokenizer.json is missing"), "{error}");
        let empty = temp.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let error = embedding_dir(&empty).unwrap_err().to_string();
        assert!(error.contains("an ONNX file is missing"), "{error}");
    }

    /// Nothing listens on the endpoint: the refusal names each file's address and where it
    /// goes, and leaves no folder behind.
    #[tokio::test]
    async fn offline_a_catalogue_model_is_refused_with_what_to_download_where() {
        let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let endpoint = format!("http://{}", closed.local_addr().unwrap());
        drop(closed);
        let data_dir = tempfile::tempdir().unwrap();
        let choice = ModelRef::Named("bge-small-en-v1.5".into());
        let error = embedding_spec(Some(&choice), data_dir.path(), &Fetcher::at(&endpoint))
            .await
            .unwrap_err()
            .to_string();
        let dir = data_dir.path().join("models/bge-small-en-v1.5");
        for said in [
            format!(
                "the embedding model bge-small-en-v1.5 is not in {}",
                dir.display()
            ),
            format!(
                "{endpoint}/Xenova/bge-small-en-v1.5/resolve/main/onnx/model.onnx -> onnx/model.onnx"
            ),
            "tokenizer_config.json".to_string(),
            "`[docs] model`".to_string(),
        ] {
            assert!(error.contains(&said), "{said}: {error}");
        }
        let left: Vec<_> = std::fs::read_dir(data_dir.path().join("models"))
            .unwrap()
            .collect();
        assert!(left.is_empty(), "a failed fetch left {left:?}");
    }

    /// A mirror on loopback serving the shipped model's files under a catalogue repository:
    /// fetched once into the data directory, whole, then used from there.
    #[tokio::test]
    async fn a_catalogue_model_is_fetched_once_into_the_data_directory() {
        let served = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = served.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let endpoint = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move {
            loop {
                let (mut stream, _) = listener.accept().await.unwrap();
                let path = request_path(&mut stream).await;
                let file = path
                    .strip_prefix("/Qdrant/all-MiniLM-L6-v2-onnx/resolve/main/")
                    .unwrap_or_else(|| panic!("asked for {path}"));
                counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let name = match file {
                    "model.onnx" => "model_quantized.onnx",
                    other => other,
                };
                let body = std::fs::read(shipped_dir().join(name)).unwrap();
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                    body.len()
                );
                stream.write_all(head.as_bytes()).await.unwrap();
                stream.write_all(&body).await.unwrap();
            }
        });
        let data_dir = tempfile::tempdir().unwrap();
        let choice = ModelRef::Named("all-MiniLM-L6-v2-onnx".into());
        let fetcher = Fetcher::at(&endpoint);
        let spec = embedding_spec(Some(&choice), data_dir.path(), &fetcher)
            .await
            .unwrap();
        let dir = data_dir.path().join("models/all-MiniLM-L6-v2-onnx");
        assert_eq!(spec.source, ModelSource::Dir(dir.clone()));
        assert_eq!(
            (spec.name.as_str(), spec.dimension),
            ("all-MiniLM-L6-v2-onnx", 384)
        );
        assert!(dir.join("model.onnx").is_file() && dir.join("tokenizer.json").is_file());
        assert_eq!(served.load(std::sync::atomic::Ordering::SeqCst), 5);
        embedding_spec(Some(&choice), data_dir.path(), &fetcher)
            .await
            .unwrap();
        assert_eq!(
            served.load(std::sync::atomic::Ordering::SeqCst),
            5,
            "fetched again"
        );
    }

    /// The path of the HTTP request that `stream` brings (its head read to the blank line).
    async fn request_path(stream: &mut tokio::net::TcpStream) -> String {
        let mut head = Vec::new();
        while !head.ends_with(b"\r\n\r\n") {
            let mut byte = [0u8];
            stream.read_exact(&mut byte).await.unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap();
        head.split(' ').nth(1).unwrap().to_string()
    }
}
