//! Finding a problem drydock saw: the same hybrid as the docs, full text (SQLite FTS5 over
//! the code, message, file, what the tool said and the fix) and the shipped embedding
//! model's vectors, fused by reciprocal rank.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::access::StoreSlot;
use super::problem::ProblemKind;
use super::reports::{HistoryHit, ProjectReport, SearchReport};
use super::requests::{ProjectRequest, SearchRequest};
use super::{ANSWERS_WITHIN, History, HistoryError};
use crate::docs::Docs;
use crate::workspace::{PathArgument, Workspace};

/// Candidates each way before fusing.
const CANDIDATES: usize = 50;
/// Problems embedded in one batch.
const EMBED_BATCH: usize = 64;
/// The usual reciprocal-rank constant.
const RRF_K: f64 = 60.0;

/// The records a search may find.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// Every record: problems, terminals' commands, tasks' ends.
    Everything,
    /// The problems builds meet (errors, warnings, failing tests): what a task's agent may
    /// read, never the person's commands nor other agents' transcripts.
    BuildProblems,
}

impl Reach {
    fn admits(self, kind: ProblemKind) -> bool {
        match self {
            Reach::Everything => true,
            Reach::BuildProblems => kind.is_build_problem(),
        }
    }
}

impl History {
    /// The best `limit` records within `reach` for the request.
    pub fn search(
        &self,
        req: SearchRequest,
        reach: Reach,
    ) -> BoxFuture<'_, Result<SearchReport, HistoryError>> {
        async move {
            if !self.config.history.enabled {
                return Err(HistoryError::Off);
            }
            let query = req.query.trim();
            if query.is_empty() {
                return Err(HistoryError::InvalidArgument(
                    "query: say what to look for (an error's text, a code, a test, a symptom)"
                        .into(),
                ));
            }
            let kind = match req.kind.as_deref() {
                None => None,
                Some(name) => Some(ProblemKind::parse(name).ok_or_else(|| {
                    HistoryError::InvalidArgument(format!(
                        "kind: {name:?} is not one of error, warning, test, command, task"
                    ))
                })?),
            };
            let project = req
                .project_path
                .as_deref()
                .map(|path| self.project_dir(path))
                .transpose()?;
            let limit = req.limit.map_or(5, |n| n.get() as usize);
            self.recorded().await?;
            embed_new(&self.store, &self.docs).await;
            let text = text_query(query);
            let by_text = self
                .store
                .within(ANSWERS_WITHIN, move |store| {
                    store.text_matches(&text, CANDIDATES)
                })
                .await?;
            let by_meaning = self.nearest(query).await;
            let candidates = fused(&[by_text, by_meaning]);
            let (since, until) = (req.since_ms.map(|s| s.get()), req.until_ms.map(|u| u.get()));
            let project = project.map(|p| p.display().to_string());
            let hits = self
                .store
                .within(ANSWERS_WITHIN, move |store| {
                    let mut hits = Vec::new();
                    for id in candidates {
                        let Some(remembered) = store.problem(id)? else {
                            continue;
                        };
                        let wanted = reach.admits(remembered.problem.kind)
                            && project.as_ref().is_none_or(|p| remembered.project == *p)
                            && kind.is_none_or(|k| remembered.problem.kind == k)
                            && since.is_none_or(|since| remembered.last_ms >= since)
                            && until.is_none_or(|until| remembered.first_ms <= until);
                        if wanted {
                            hits.push(HistoryHit::from(remembered));
                        }
                        if hits.len() == limit {
                            break;
                        }
                    }
                    Ok(hits)
                })
                .await?;
            Ok(SearchReport { hits })
        }
        .boxed()
    }

    /// A project's open problems and the most recently fixed ones.
    pub fn project(
        &self,
        req: ProjectRequest,
    ) -> BoxFuture<'_, Result<ProjectReport, HistoryError>> {
        async move {
            if !self.config.history.enabled {
                return Err(HistoryError::Off);
            }
            let project = self.project_dir(&req.project_path)?;
            self.recorded().await?;
            let problems = self.project_problems(&project, 100).await?;
            let (fixed, open): (Vec<_>, Vec<_>) = problems
                .into_iter()
                .filter(|p| p.problem.kind.is_build_problem())
                .map(HistoryHit::from)
                .partition(|hit| hit.resolved_ms.is_some());
            Ok(ProjectReport {
                project: project.display().to_string(),
                open,
                fixed: fixed.into_iter().take(20).collect(),
            })
        }
        .boxed()
    }

    fn project_dir(&self, path: &str) -> Result<PathBuf, HistoryError> {
        Workspace::new(self.config.allowed_roots.clone())
            .with_managed(self.config.task_dirs().worktrees())
            .resolve_dir(PathArgument::ProjectPath, path)
            .map_err(|e| HistoryError::InvalidArgument(e.to_string()))
    }

    /// The problems nearest to `query` in meaning; none when the model cannot be loaded or
    /// the memory does not answer.
    async fn nearest(&self, query: &str) -> Vec<i64> {
        let Ok(embedder) = self.docs.embedder().await else {
            return Vec::new();
        };
        let Ok(wanted) = embedder.embed_query(query).await else {
            return Vec::new();
        };
        let Ok(vectors) = self
            .store
            .within(ANSWERS_WITHIN, |store| store.vectors())
            .await
        else {
            return Vec::new();
        };
        let mut scored: Vec<(f32, i64)> = vectors
            .iter()
            .filter(|(_, v)| v.len() == wanted.len())
            .map(|(id, v)| (v.iter().zip(&wanted).map(|(a, b)| a * b).sum(), *id))
            .collect();
        scored.sort_by(|a, b| b.0.total_cmp(&a.0));
        scored
            .into_iter()
            .take(CANDIDATES)
            .map(|(_, id)| id)
            .collect()
    }
}

/// Embeds the problems recorded since the last search (a search is when vectors are needed:
/// recording never loads the model). What the memory does not answer in time waits for the
/// next search.
async fn embed_new(store: &Arc<StoreSlot>, docs: &Docs) {
    loop {
        let Ok(pending) = store
            .within(ANSWERS_WITHIN, |store| store.unembedded(EMBED_BATCH))
            .await
        else {
            return;
        };
        if pending.is_empty() {
            return;
        }
        let Ok(embedder) = docs.embedder().await else {
            return;
        };
        let texts = pending.iter().map(|(_, text)| text.clone()).collect();
        let Ok(vectors) = embedder.embed_passages(texts).await else {
            return;
        };
        let rows: Vec<(i64, Vec<f32>)> =
            pending.into_iter().map(|(id, _)| id).zip(vectors).collect();
        let put = store.within(ANSWERS_WITHIN, move |store| store.put_vectors(&rows));
        if put.await.is_err() {
            return;
        }
    }
}

/// `query`'s words as an FTS5 query any of which may match: quoted, so no word is read as
/// FTS5 syntax.
fn text_query(query: &str) -> String {
    let mut words: Vec<String> = query
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| w.chars().count() >= 2)
        .map(|w| format!("\"{}\"", w.to_lowercase()))
        .collect();
    words.dedup();
    match words.is_empty() {
        true => "\"\"".into(),
        false => words.join(" OR "),
    }
}

/// The ids of `lists`, best first by reciprocal rank fusion.
fn fused(lists: &[Vec<i64>]) -> Vec<i64> {
    let mut scores: HashMap<i64, f64> = HashMap::new();
    for list in lists {
        for (rank, id) in list.iter().enumerate() {
            *scores.entry(*id).or_default() += 1.0 / (RRF_K + rank as f64 + 1.0);
        }
    }
    let mut ids: Vec<(i64, f64)> = scores.into_iter().collect();
    ids.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    ids.into_iter().map(|(id, _)| id).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_is_words_and_ranks_fuse() {
        assert_eq!(
            text_query("E0502: cannot borrow `items` (as mutable)"),
            "\"e0502\" OR \"cannot\" OR \"borrow\" OR \"items\" OR \"as\" OR \"mutable\""
        );
        assert_eq!(text_query("* ?"), "\"\"");
        assert_eq!(fused(&[vec![1, 2, 3], vec![3, 1]]), [1, 3, 2]);
    }
}
