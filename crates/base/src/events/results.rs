//! The results of the latest tool calls, for a viewer that wants to see what a call on the
//! feed returned (the dashboard's feed). Bounded in calls and in bytes: a result larger than
//! [`RESULT_BYTES`] is kept cut, and the oldest results go first once the total passes
//! [`KEPT_BYTES`].

use serde::Serialize;
use serde_json::Value;
use std::collections::VecDeque;

/// A result's JSON kept whole up to this size; a larger one is kept cut to it.
pub(super) const RESULT_BYTES: usize = 64 * 1024;
/// The results kept, in bytes of JSON, at most.
pub(super) const KEPT_BYTES: usize = 4 * 1024 * 1024;

/// What a call returned, as kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kept", rename_all = "snake_case")]
pub enum KeptResult {
    /// The whole result.
    Whole { result: Value },
    /// The result's JSON was `bytes` long: its beginning.
    Cut { bytes: usize, head: String },
}

/// A result as stored: its JSON text (serialized once, when the call ends; parsed again
/// only when a viewer asks), cut to [`RESULT_BYTES`] when it was longer.
struct Kept {
    call_id: u64,
    json: String,
    /// The whole JSON's length, when `json` is its beginning.
    cut_from: Option<usize>,
}

impl Kept {
    fn of(call_id: u64, result: &Value) -> Kept {
        let mut json = result.to_string();
        let whole = json.len();
        let cut_from = (whole > RESULT_BYTES).then(|| {
            let mut cut = RESULT_BYTES;
            while !json.is_char_boundary(cut) {
                cut -= 1;
            }
            json.truncate(cut);
            json.shrink_to_fit();
            whole
        });
        Kept {
            call_id,
            json,
            cut_from,
        }
    }

    fn result(&self) -> KeptResult {
        match self.cut_from {
            None => KeptResult::Whole {
                result: serde_json::from_str(&self.json).unwrap_or(Value::Null),
            },
            Some(bytes) => KeptResult::Cut {
                bytes,
                head: self.json.clone(),
            },
        }
    }
}

#[derive(Default)]
pub(super) struct KeptResults {
    results: VecDeque<Kept>,
    bytes: usize,
}

impl KeptResults {
    /// Keeps call `call_id`'s result; at most `calls` results.
    pub(super) fn keep(&mut self, call_id: u64, result: &Value, calls: usize) {
        let kept = Kept::of(call_id, result);
        self.bytes += kept.json.len();
        self.results.push_back(kept);
        while self.results.len() > calls || self.bytes > KEPT_BYTES {
            let Some(oldest) = self.results.pop_front() else {
                break;
            };
            self.bytes -= oldest.json.len();
        }
    }

    pub(super) fn get(&self, call_id: u64) -> Option<KeptResult> {
        self.results
            .iter()
            .find(|kept| kept.call_id == call_id)
            .map(Kept::result)
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
            kept.get(1).unwrap(),
            KeptResult::Whole {
                result: json!({"status": "ok"})
            }
        );

        let huge = json!({"output": "é".repeat(RESULT_BYTES)});
        kept.keep(2, &huge, 3);
        let KeptResult::Cut { bytes, head } = kept.get(2).unwrap() else {
            panic!("a huge result is cut");
        };
        assert_eq!(bytes, huge.to_string().len());
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
