//! `[docs]`: the docs index, its model and reranker.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::paths::absolute;
use super::values::positive;
use super::{ConfigError, EnvLookup, Overrides};

/// The docs index.
#[derive(Debug, Clone)]
pub struct DocsConfig {
    /// The LanceDB index directory (default `index/` in the working directory).
    pub index_dir: PathBuf,
    /// The embedding model (`[docs] model`; `model_dir` is the same as a directory there);
    /// None: the shipped all-MiniLM-L6-v2.
    pub model: Option<ModelRef>,
    /// The cross-encoder that re-scores a lookup's first candidates; None: off.
    pub reranker: Option<ModelRef>,
    /// How many candidates the reranker re-scores.
    pub rerank_candidates: usize,
    /// Files larger than this are not indexed.
    pub max_file_bytes: u64,
    /// Glob patterns (relative to an indexed path) a file must match to be indexed by
    /// `drydock index PATH`; empty = every supported file.
    pub include: Vec<String>,
    /// Glob patterns of files never indexed (besides what .gitignore excludes).
    pub exclude: Vec<String>,
}

/// A model the docs use: one of fastembed's catalogue by name, or a local directory (a value
/// written as a path: starting with `/`, `./`, `../` or `~`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ModelRef {
    Named(String),
    Dir(PathBuf),
}

impl ModelRef {
    /// Reads a config or command-line value; `absolute` makes a directory absolute.
    pub fn parse(value: &str, absolute: impl Fn(PathBuf) -> PathBuf) -> ModelRef {
        let is_path = ["/", "./", "../", "~"]
            .iter()
            .any(|start| value.starts_with(start));
        match is_path {
            true => ModelRef::Dir(absolute(PathBuf::from(value))),
            false => ModelRef::Named(value.to_string()),
        }
    }
}

impl std::fmt::Display for ModelRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ModelRef::Named(name) => write!(f, "{name}"),
            ModelRef::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct FileDocs {
    index_dir: Option<PathBuf>,
    model: Option<String>,
    model_dir: Option<PathBuf>,
    reranker: Option<String>,
    rerank_candidates: Option<usize>,
    max_file_bytes: Option<u64>,
    include: Option<Vec<String>>,
    exclude: Option<Vec<String>>,
}

pub(super) fn resolve(
    overrides: &Overrides,
    file: FileDocs,
    env: EnvLookup,
    cwd: &Path,
) -> Result<DocsConfig, ConfigError> {
    let absolute = |path: PathBuf| absolute(&path, env, cwd);
    let docs = DocsConfig {
        index_dir: absolute(
            overrides
                .index_dir
                .clone()
                .or_else(|| env("DRYDOCK_INDEX").map(PathBuf::from))
                .or(file.index_dir)
                .unwrap_or_else(|| PathBuf::from("index")),
        ),
        model: match (file.model, file.model_dir) {
            (Some(_), Some(_)) => return Err(ConfigError::Invalid(
                "[docs] has both `model` and `model_dir`: `model` takes a directory too, keep one"
                    .into(),
            )),
            (Some(model), None) => Some(ModelRef::parse(&model, absolute)),
            (None, dir) => dir.map(|dir| ModelRef::Dir(absolute(dir))),
        },
        reranker: file
            .reranker
            .map(|reranker| ModelRef::parse(&reranker, absolute)),
        rerank_candidates: positive(
            file.rerank_candidates.unwrap_or(30),
            "docs.rerank_candidates",
        )?,
        max_file_bytes: positive(
            file.max_file_bytes.unwrap_or(8 * 1024 * 1024) as usize,
            "docs.max_file_bytes",
        )? as u64,
        include: file.include.unwrap_or_default(),
        exclude: file.exclude.unwrap_or_default(),
    };
    for pattern in docs.include.iter().chain(&docs.exclude) {
        globset::Glob::new(pattern).map_err(|e| ConfigError::Glob {
            pattern: pattern.clone(),
            message: e.kind().to_string(),
        })?;
    }
    Ok(docs)
}
