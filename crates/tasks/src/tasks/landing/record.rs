//! What the landing queue keeps with a task: where its result is on the way to its branch,
//! and every attempt that was sent back, with why.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// A result's way to its branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Landing {
    pub state: LandingState,
    /// The attempts that did not land, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sent_back: Vec<SentBack>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LandingState {
    /// In line for its merged tree to be tested.
    Waiting { into: String, since_ms: u64 },
    /// The checks run on `merged`: the tip of `into` (`tip`) with the result, and with the
    /// results of the tasks `together` when several are tested at once.
    Testing {
        into: String,
        tip: String,
        merged: String,
        since_ms: u64,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        together: Vec<String>,
    },
    /// Green, but `into` cannot advance yet (the person's checkout of it has uncommitted
    /// changes); it lands as soon as it can.
    Held { into: String, why: String },
    Landed {
        into: String,
        commit: String,
        /// fast_forward, merge_commit, merged_together (one merge commit of several results,
        /// tested at once), rebased or already_merged.
        how: String,
        at_ms: u64,
    },
    /// Back with its agent, as attempt `attempt`: the last of `sent_back` says why.
    SentBack { attempt: u32 },
    /// It will not land by itself: a person decides (task_merge, task_discard, or task_retry
    /// for one more attempt).
    WaitsForPerson { why: String },
}

/// An attempt that did not land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct SentBack {
    /// The attempt that failed (1 for the task's first run).
    pub attempt: u32,
    /// Its result's commit.
    pub head: String,
    pub into: String,
    /// The tip of `into` it was merged onto.
    pub tip: String,
    pub failure: Failure,
    pub at_ms: u64,
}

/// Why a result did not land.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Failure {
    /// Merging it onto the tip conflicts in `files`; `hunks` shows the conflicting parts.
    Conflicts { files: Vec<String>, hunks: String },
    /// A check failed: on the merged tree, or already on the result's own branch.
    Red {
        on_merged_tree: bool,
        /// compile, test, lint or type_check.
        check: String,
        /// The tool's status (build_failed, failed, timed_out, error, …).
        status: String,
        /// drydock's own diagnostics or failing tests, the errors first.
        detail: String,
    },
}

/// How much of a failure an agent's prompt carries.
const PROMPT_BUDGET: usize = 1_800;

impl Failure {
    /// One line: what failed, where.
    pub fn headline(&self, into: &str) -> String {
        match self {
            Failure::Conflicts { files, .. } => {
                let mut shown: Vec<&str> = files.iter().take(5).map(String::as_str).collect();
                if files.len() > shown.len() {
                    shown.push("…");
                }
                format!("it conflicts with {into} in {}", shown.join(", "))
            }
            Failure::Red {
                on_merged_tree,
                check,
                status,
                ..
            } => match on_merged_tree {
                true => format!("{check} on {into} merged with it: {status}"),
                false => format!("{check} on its own branch: {status}"),
            },
        }
    }

    /// The failure as the next attempt's agent is told it, on one line (it is typed into a
    /// shell as an argument).
    pub fn for_prompt(&self, into: &str) -> String {
        let detail = match self {
            Failure::Conflicts { hunks, .. } => hunks,
            Failure::Red { detail, .. } => detail,
        };
        let detail = detail
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect::<Vec<_>>()
            .join(" | ");
        let line = format!("{}: {detail}", self.headline(into));
        match line.char_indices().nth(PROMPT_BUDGET) {
            Some((cut, _)) => format!("{} … (cut)", &line[..cut]),
            None => line,
        }
    }
}

impl Landing {
    pub fn waiting(into: &str, now_ms: u64) -> Landing {
        Landing {
            state: LandingState::Waiting {
                into: into.to_string(),
                since_ms: now_ms,
            },
            sent_back: Vec::new(),
        }
    }

    /// What a person must know of a done task whose result is here: why it is held or left
    /// to them; nothing while it is on its way or landed.
    pub fn attention(&self) -> Option<&str> {
        match &self.state {
            LandingState::Held { why, .. } | LandingState::WaitsForPerson { why } => Some(why),
            LandingState::Waiting { .. }
            | LandingState::Testing { .. }
            | LandingState::Landed { .. }
            | LandingState::SentBack { .. } => None,
        }
    }

    /// The attempt that was sent back last, while the task works on it again.
    pub fn last_sent_back(&self) -> Option<&SentBack> {
        match self.state {
            LandingState::SentBack { .. } => self.sent_back.last(),
            _ => None,
        }
    }

    /// One line for a list.
    pub fn line(&self) -> String {
        match &self.state {
            LandingState::Waiting { into, .. } => format!("waiting to land on {into}"),
            LandingState::Testing {
                into,
                tip,
                together,
                ..
            } => match together.len() {
                0 => format!("testing the merged tree ({into} at {})", short(tip)),
                n => format!(
                    "testing the merged tree ({into} at {}) with {n} other result(s): {}",
                    short(tip),
                    together.join(", ")
                ),
            },
            LandingState::Held { into, why } => format!("green, held from {into}: {why}"),
            LandingState::Landed { into, commit, .. } => {
                format!("landed on {into} at {}", short(commit))
            }
            LandingState::SentBack { attempt } => match self.sent_back.last() {
                Some(last) => format!(
                    "sent back as attempt {attempt}: {}",
                    last.failure.headline(&last.into)
                ),
                None => format!("sent back as attempt {attempt}"),
            },
            LandingState::WaitsForPerson { why } => format!("waits for a person: {why}"),
        }
    }
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn red(detail: &str) -> Failure {
        Failure::Red {
            on_merged_tree: true,
            check: "test".into(),
            status: "build_failed".into(),
            detail: detail.into(),
        }
    }

    #[test]
    fn a_failure_reaches_the_prompt_on_one_bounded_line() {
        let failure = red(
            "the build failed: 1 error(s)\ntests/b.rs:3:5: error[E0425]: cannot find function `one` in this scope",
        );
        let line = failure.for_prompt("main");
        assert_eq!(
            line,
            "test on main merged with it: build_failed: the build failed: 1 error(s) | tests/b.rs:3:5: error[E0425]: cannot find function `one` in this scope"
        );

        let huge = red(&"FAILED x: boom\n".repeat(1000)).for_prompt("main");
        assert!(!huge.contains('\n'));
        assert_eq!(huge.chars().count(), PROMPT_BUDGET + " … (cut)".len() - 2);
    }

    #[test]
    fn a_landing_says_where_it_is_in_a_line() {
        let mut landing = Landing::waiting("main", 1);
        assert_eq!(landing.line(), "waiting to land on main");
        landing.sent_back.push(SentBack {
            attempt: 1,
            head: "a".repeat(40),
            into: "main".into(),
            tip: "b".repeat(40),
            failure: Failure::Conflicts {
                files: vec!["src/lib.rs".into()],
                hunks: String::new(),
            },
            at_ms: 2,
        });
        landing.state = LandingState::SentBack { attempt: 2 };
        assert_eq!(
            landing.line(),
            "sent back as attempt 2: it conflicts with main in src/lib.rs"
        );
        assert!(landing.last_sent_back().is_some());
        landing.state = LandingState::Landed {
            into: "main".into(),
            commit: "c".repeat(40),
            how: "merge_commit".into(),
            at_ms: 3,
        };
        assert_eq!(landing.line(), "landed on main at cccccccccccc");
        assert!(landing.last_sent_back().is_none());
        let json = serde_json::to_string(&landing).unwrap();
        assert_eq!(serde_json::from_str::<Landing>(&json).unwrap(), landing);
    }
}
