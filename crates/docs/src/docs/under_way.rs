//! An ingest under way, as other readers of the index see it: while it runs, the ingest keeps
//! `ingest-under-way.json` in the index directory up to date (its process, when it started,
//! how far it got), and removes it when it ends. docs_lookup, in this process or another,
//! answers from what is committed and says how far indexing got. A file left by a process
//! that died is ignored (its process is gone).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};
use tokio_util::sync::CancellationToken;

use super::ingest::IngestProgress;
use crate::millis::unix_millis;

const FILE: &str = "ingest-under-way.json";
/// How often the file is brought up to date.
const EVERY: Duration = Duration::from_secs(2);

/// How far an ingest got, as its file says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UnderWay {
    pub pid: u32,
    pub started_at_ms: u64,
    /// 0 while the sources are still being listed.
    pub files_total: u64,
    pub files_done: u64,
    pub rows_written: u64,
}

impl UnderWay {
    /// One line for a lookup's answer.
    pub fn describe(&self, now_ms: u64) -> String {
        let minutes = now_ms.saturating_sub(self.started_at_ms) / 60_000;
        let files = match self.files_total {
            0 => "listing the sources".to_string(),
            total => format!("{} of {total} files", self.files_done),
        };
        format!(
            "Indexing is under way ({files}, {} passages written, started {minutes} min ago): \
             these results come from what is indexed so far.",
            self.rows_written
        )
    }
}

/// Keeps the file up to date while it lives; removes it when dropped.
pub struct Marker {
    path: PathBuf,
    stop: CancellationToken,
}

impl Marker {
    /// Writes the file for the ingest `progress` tracks into `dir`, and keeps it current.
    pub fn start(dir: &Path, progress: Arc<IngestProgress>) -> Marker {
        let path = dir.join(FILE);
        let stop = CancellationToken::new();
        let started_at_ms = unix_millis(SystemTime::now());
        let write = {
            let path = path.clone();
            move |progress: &IngestProgress| {
                let snapshot = progress.snapshot();
                let state = UnderWay {
                    pid: std::process::id(),
                    started_at_ms,
                    files_total: if snapshot.planned {
                        snapshot.files_total
                    } else {
                        0
                    },
                    files_done: snapshot.files_done,
                    rows_written: snapshot.rows_written,
                };
                // Written whole, then renamed: a reader never sees half a file.
                let partial = path.with_extension("json.partial");
                if let Ok(json) = serde_json::to_vec(&state)
                    && std::fs::write(&partial, json).is_ok()
                {
                    let _ = std::fs::rename(&partial, &path);
                }
            }
        };
        write(&progress);
        let stopped = stop.clone();
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = stopped.cancelled() => return,
                    () = tokio::time::sleep(EVERY) => write(&progress),
                }
            }
        });
        Marker { path, stop }
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        self.stop.cancel();
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The ingest under way in the index at `dir`, if one is (its process still runs).
pub fn under_way(dir: &Path) -> Option<UnderWay> {
    let text = std::fs::read_to_string(dir.join(FILE)).ok()?;
    let state: UnderWay = serde_json::from_str(&text).ok()?;
    Path::new(&format!("/proc/{}", state.pid))
        .exists()
        .then_some(state)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    #[tokio::test]
    async fn the_file_follows_the_ingest_and_goes_with_it() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(under_way(dir.path()), None);
        let progress = Arc::new(IngestProgress::default());
        let marker = Marker::start(dir.path(), progress.clone());
        let first = under_way(dir.path()).expect("written at once");
        assert_eq!((first.pid, first.files_total), (std::process::id(), 0));
        assert!(
            first
                .describe(first.started_at_ms)
                .contains("listing the sources")
        );

        progress.files_total.store(10, Ordering::Relaxed);
        progress.files_done.store(4, Ordering::Relaxed);
        progress.rows_written.store(33, Ordering::Relaxed);
        progress.mark_planned();
        let later = rewritten(dir.path(), |state| state.files_total == 10).await;
        assert_eq!(
            later.describe(later.started_at_ms + 3 * 60_000),
            "Indexing is under way (4 of 10 files, 33 passages written, started 3 min ago): \
             these results come from what is indexed so far."
        );
        drop(marker);
        assert_eq!(under_way(dir.path()), None);
    }

    /// The marker in `dir` once a rewrite made `done` hold (a panic after a few rewrites).
    async fn rewritten(dir: &Path, done: impl Fn(&UnderWay) -> bool) -> UnderWay {
        let deadline = tokio::time::Instant::now() + 3 * EVERY;
        loop {
            let state = under_way(dir).expect("the marker is there");
            if done(&state) {
                return state;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "never rewritten: {state:?}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    #[test]
    fn a_file_left_by_a_dead_process_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let dead = UnderWay {
            pid: u32::MAX - 1,
            started_at_ms: 0,
            files_total: 1,
            files_done: 0,
            rows_written: 0,
        };
        std::fs::write(dir.path().join(FILE), serde_json::to_vec(&dead).unwrap()).unwrap();
        assert_eq!(under_way(dir.path()), None);
    }
}
