//! The optional cross-encoder (`[docs] reranker`): it reads the question with each of a
//! lookup's first candidates and scores the pair, and the candidates are put in its order.
//! Off unless configured; fastembed runs it (a user-defined ONNX model whose output is named
//! `logits`), on the blocking pool, one lookup's candidates at a time.

use std::sync::{Arc, Mutex, PoisonError};

use fastembed::{RerankInitOptionsUserDefined, TextRerank, UserDefinedRerankingModel};
use futures::FutureExt;
use futures::future::BoxFuture;

use super::embed::{EmbedError, ModelSource, NO_SPINNING, load_onnx_runtime};
use super::models::RerankerSpec;
use super::search::Hit;

/// Pairs per model call.
const BATCH_SIZE: usize = 16;
/// Word pieces of a question and passage together (the rest of a passage is cut).
const MAX_LENGTH: usize = 512;

#[derive(Clone)]
pub struct CrossEncoder {
    inner: Arc<Inner>,
}

struct Inner {
    model: Mutex<TextRerank>,
    name: String,
}

impl std::fmt::Debug for CrossEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrossEncoder")
            .field("name", &self.inner.name)
            .finish()
    }
}

impl CrossEncoder {
    /// Loads the model `spec` describes. Blocking (builds an ONNX Runtime session).
    pub fn load(spec: &RerankerSpec) -> Result<Self, EmbedError> {
        load_onnx_runtime()?;
        let source = ModelSource::Dir(spec.dir.clone());
        let model = UserDefinedRerankingModel::new(source.file(&spec.onnx)?, source.tokenizer()?);
        let options = RerankInitOptionsUserDefined::new()
            .with_max_length(MAX_LENGTH)
            .with_session_config(NO_SPINNING.0, NO_SPINNING.1);
        let model = TextRerank::try_new_from_user_defined(model, options)
            .map_err(|e| EmbedError::Model(format!("the reranker {}: {e}", spec.name)))?;
        Ok(CrossEncoder {
            inner: Arc::new(Inner {
                model: Mutex::new(model),
                name: spec.name.clone(),
            }),
        })
    }

    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// One score per passage for `query`, in the passages' order (higher is better).
    pub fn scores<'a>(
        &'a self,
        query: &'a str,
        passages: Vec<String>,
    ) -> BoxFuture<'a, Result<Vec<f32>, EmbedError>> {
        async move {
            let inner = Arc::clone(&self.inner);
            let query = query.to_string();
            tokio::task::spawn_blocking(move || {
                let mut model = inner.model.lock().unwrap_or_else(PoisonError::into_inner);
                let ranked = model
                    .rerank(
                        query.as_str(),
                        passages.iter().map(String::as_str).collect::<Vec<_>>(),
                        false,
                        Some(BATCH_SIZE),
                    )
                    .map_err(|e| EmbedError::Model(format!("the reranker {}: {e}", inner.name)))?;
                let mut scores = vec![0.0; passages.len()];
                for result in ranked {
                    scores[result.index] = result.score;
                }
                Ok(scores)
            })
            .await
            .map_err(|e| EmbedError::Task(e.to_string()))?
        }
        .boxed()
    }

    /// `hits` in the order of the scores of their heading and passage for `query`, each
    /// hit's score its cross-encoder score.
    pub fn rerank<'a>(
        &'a self,
        query: &'a str,
        hits: Vec<Hit>,
    ) -> BoxFuture<'a, Result<Vec<Hit>, EmbedError>> {
        async move {
            let passages = hits
                .iter()
                .map(|hit| format!("{}\n{}", hit.heading, hit.content))
                .collect();
            let scores = self.scores(query, passages).await?;
            let mut scored: Vec<Hit> = hits
                .into_iter()
                .zip(scores)
                .map(|(hit, score)| Hit { score, ..hit })
                .collect();
            scored.sort_by(|a, b| b.score.total_cmp(&a.score));
            Ok(scored)
        }
        .boxed()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The tiny cross-encoder tests/fixtures/onnx/make_tiny_cross_encoder.py writes:
    /// a passage scores 1.0 per "lighthouse" or "harbour" and -0.01 per other word piece.
    fn tiny_cross_encoder(into: &Path) -> RerankerSpec {
        let script = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("tests/fixtures/onnx/make_tiny_cross_encoder.py");
        let made = std::process::Command::new("python3")
            .arg(&script)
            .arg(into)
            .output()
            .expect("python3 runs");
        assert!(made.status.success(), "{made:?}");
        RerankerSpec {
            name: "tiny".into(),
            dir: into.to_path_buf(),
            onnx: "model.onnx".into(),
        }
    }

    #[tokio::test]
    async fn the_cross_encoder_scores_every_pair_in_batches_in_the_order_its_model_implies() {
        let dir = tempfile::tempdir().unwrap();
        let encoder = CrossEncoder::load(&tiny_cross_encoder(dir.path())).unwrap();
        // 40 passages: three batches of 16. Passage i holds i % 4 favoured words among the
        // same number of other words, so its score is (i % 4) * 1.01 less a constant.
        let passages: Vec<String> = (0..40)
            .map(|i| {
                let favoured = ["lighthouse", "harbour", "lighthouse"][..i % 4].join(" ");
                let filler = ["stone", "stone", "stone"][..3 - i % 4].join(" ");
                format!("{favoured} {filler} tide")
            })
            .collect();
        let scores = encoder
            .scores("where do ships wait", passages.clone())
            .await
            .unwrap();
        assert_eq!(scores.len(), 40);
        for (i, score) in scores.iter().enumerate() {
            // [word pieces] tide [SEP]: five pieces; the favoured count at 1.0, the rest -0.01.
            let favoured = (i % 4) as f32;
            let expected = favoured - 0.01 * (5.0 - favoured);
            assert!(
                (score - expected).abs() < 1e-4,
                "passage {i} {:?}: {score} != {expected}",
                passages[i]
            );
        }
        // The question's words count for nothing.
        let again = encoder
            .scores("lighthouse harbour", passages[..3].to_vec())
            .await
            .unwrap();
        assert_eq!(again, scores[..3].to_vec());
    }
}
