//! The results of the latest tool calls, for a viewer that wants to see what a call on the
//! feed returned (the dashboard's feed). Bounded in calls and in bytes: a result larger than
//! [`RESULT_BYTES`] is kept cut, and the oldest results go first once the total passes
//! [`KEPT_BYTES`].

use std::collections::VecDeque;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

/// A result's JSON kept whole up to this size; a larger one is kept cut to it.
pub const RESULT_BYTES: usize = 64 * 1024;
/// The results kept, in bytes of JSON, at most.
pub const KEPT_BYTES: usize = 4 * 1024 * 1024;

/// What a call returned, as kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kept", rename_all = "snake_case")]
pub enum KeptResult {
    /// The whole result.
    Whole { result: Value },
    /// The result's JSON was `bytes` long: its beginning.
    Cut { bytes: usize, head: String },
}

impl KeptResult {
    fn of(result: &Value) -> (KeptResult, usize) {
        let json = result.to_string();
        if json.len() <= RESULT_BYTES {
            let bytes = json.len();
            return (
                KeptResult::Whole {
                    result: result.clone(),
                },
                bytes,
            );
        }
        let mut cut = RESULT_BYTES;
        while !json.is_char_boundary(cut) {
            cut -= 1;
        }
        let kept = KeptResult::Cut {
            bytes: json.len(),
            head: json[..cut].to_string(),
        };
        (kept, cut)
    }
}

#[derive(Default)]
pub(super) struct KeptResults {
    results: VecDeque<(u64, Arc<KeptResult>, usize)>,
    bytes: usize,
}

impl KeptResults {
    /// Keeps call `call_id`'s result; at most `calls` results.
    pub(super) fn keep(&mut self, call_id: u64, result: &Value, calls: usize) {
        let (kept, bytes) = KeptResult::of(result);
        self.results.push_back((call_id, Arc::new(kept), bytes));
        self.bytes += bytes;
        while self.results.len() > calls || self.bytes > KEPT_BYTES {
            let Some((_, _, bytes)) = self.results.pop_front() else {
                break;
            };
            self.bytes -= bytes;
        }
    }

    pub(super) fn get(&self, call_id: u64) -> Option<Arc<KeptResult>> {
        self.results
            .iter()
            .find(|(id, _, _)| *id == call_id)
            .map(|(_, kept, _)| kept.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_kept_whole_or_cut_and_bounded_in_number_and_bytes() {
        let mut kept = KeptResults::default();
        kept.keep(1, &json!({"status": "ok"}), 3);
        assert_eq!(
            *kept.get(1).unwrap(),
            KeptResult::Whole {
                result: json!({"status": "ok"})
            }
        );

        let huge = json!({"output": "é".repeat(RESULT_BYTES)});
        kept.keep(2, &huge, 3);
        let KeptResult::Cut { bytes, head } = &*kept.get(2).unwrap() else {
            panic!("a huge result is cut");
        };
        assert_eq!(*bytes, huge.to_string().len());
        assert!(head.len() <= RESULT_BYTES && head.starts_with("{\"output\":\"éé"));

        kept.keep(3, &json!(3), 3);
        kept.keep(4, &json!(4), 3);
        assert!(kept.get(1).is_none(), "only the latest 3 calls");
        assert!(kept.get(2).is_some() && kept.get(4).is_some());

        for id in 10..10 + (KEPT_BYTES / RESULT_BYTES) as u64 + 5 {
            kept.keep(id, &huge, 1000);
        }
        assert!(kept.bytes <= KEPT_BYTES, "{}", kept.bytes);
        assert!(kept.get(2).is_none(), "the oldest went first");
        assert!(kept.get(10 + (KEPT_BYTES / RESULT_BYTES) as u64).is_some());
    }
}
