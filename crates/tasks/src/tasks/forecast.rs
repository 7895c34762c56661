//! Conflicts seen coming while tasks still run: every few seconds, what each running task's
//! worktree changes of the commit it started from (committed or not, new files too), against
//! what the other tasks of its repository change and what its branch gained since. Two
//! changes of the same lines of a file (or of lines next to each other, as git's merge sees
//! them) are a likely conflict; changes of the same file apart are shown as an overlap.
//! Read with git's optional locks off: an agent's own git is never kept waiting.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};
use schemars::JsonSchema;
use serde::Serialize;
use tokio_util::sync::CancellationToken;

use super::isolation::Isolation;
use super::ledger::Ledger;
use super::state::TaskState;
use super::store::Task;
use crate::config::Config;
use crate::git::Git;
use crate::supervise::spawn_supervised;

/// How often the running tasks' changes are read again.
const EVERY: Duration = Duration::from_secs(5);

/// Lines `start..end` of the base (1-based) that a change rewrites; an insertion is the
/// empty range at the line it comes before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Lines {
    start: u32,
    end: u32,
}

impl Lines {
    /// Git's merge conflicts on changes that overlap or touch.
    fn meets(self, other: Lines) -> bool {
        self.start <= other.end && other.start <= self.end
    }
}

const WHOLE_FILE: Lines = Lines {
    start: 0,
    end: u32::MAX,
};

/// What a tree changes of its base, file by file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Changes {
    files: BTreeMap<String, Vec<Lines>>,
}

impl Changes {
    /// `git diff -U0` output, plus `added` files git does not track yet.
    pub fn parse(diff: &str, added: &[String]) -> Changes {
        let mut files: BTreeMap<String, Vec<Lines>> = BTreeMap::new();
        let mut old: Option<String> = None;
        let mut current: Option<String> = None;
        for line in diff.lines() {
            // A name with a space ends in a tab there.
            if let Some(path) = line.strip_prefix("--- ") {
                old = path
                    .strip_prefix("a/")
                    .map(|p| p.trim_end_matches('\t').to_string());
            } else if let Some(path) = line.strip_prefix("+++ ") {
                let path = path
                    .strip_prefix("b/")
                    .map(|p| p.trim_end_matches('\t').to_string())
                    .or(old.take());
                current = path.clone();
                if let Some(path) = path {
                    files.entry(path).or_default();
                }
            } else if let Some(rest) = line.strip_prefix("Binary files ") {
                if let Some(path) = binary_path(rest) {
                    files.entry(path).or_default().push(WHOLE_FILE);
                }
                current = None;
            } else if line.starts_with("diff --git ") {
                current = None;
                old = None;
            } else if let (Some(path), Some(lines)) = (&current, hunk_lines(line)) {
                files.entry(path.clone()).or_default().push(lines);
            }
        }
        for path in added {
            files.entry(path.clone()).or_default().push(WHOLE_FILE);
        }
        Changes { files }
    }

    pub fn files(&self) -> impl Iterator<Item = &String> {
        self.files.keys()
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }

    /// Where `self` and `other` (changes of the same base) meet: the files both change, and
    /// those in which they change the same lines. `None` when they share no file.
    fn against(&self, other: &Changes, same_base: bool) -> Option<(Vec<String>, Vec<String>)> {
        let mut files = Vec::new();
        let mut same_lines = Vec::new();
        for (path, mine) in &self.files {
            let Some(theirs) = other.files.get(path) else {
                continue;
            };
            files.push(path.clone());
            // Apart from the same base, line numbers do not compare: the same file is all
            // that is known.
            let meets = !same_base
                || mine.is_empty()
                || theirs.is_empty()
                || mine.iter().any(|a| theirs.iter().any(|b| a.meets(*b)));
            if meets && same_base {
                same_lines.push(path.clone());
            }
        }
        (!files.is_empty()).then_some((files, same_lines))
    }
}

/// `-a,b` of a `@@ -a,b +c,d @@` line: lines a..a+b of the base, or an insertion after a.
fn hunk_lines(line: &str) -> Option<Lines> {
    let old = line.strip_prefix("@@ -")?.split(' ').next()?;
    let (start, count) = match old.split_once(',') {
        Some((start, count)) => (start.parse::<u32>().ok()?, count.parse::<u32>().ok()?),
        None => (old.parse::<u32>().ok()?, 1),
    };
    Some(match count {
        0 => Lines {
            start: start.saturating_add(1),
            end: start.saturating_add(1),
        },
        n => Lines {
            start,
            end: start.saturating_add(n),
        },
    })
}

/// The path of `a/X and b/X differ`.
fn binary_path(rest: &str) -> Option<String> {
    let (old, new) = rest.strip_suffix(" differ")?.split_once(" and ")?;
    match new.strip_prefix("b/") {
        Some(path) => Some(path.to_string()),
        None => old.strip_prefix("a/").map(str::to_string),
    }
}

/// A likely meeting of a running task's change with another's, or with its branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct Collision {
    /// The other task's id, or the branch (`main`) that changed since the task started.
    pub with: String,
    /// The other is the task's branch, not a task.
    pub branch: bool,
    /// The files both change.
    pub files: Vec<String>,
    /// Those in which both change the same lines or lines next to each other: a conflict
    /// is likely there.
    pub same_lines: Vec<String>,
    /// For a queued task: `with` is a running task that changes, or is to change, files it
    /// is to touch; `held` when it does not start before that one ends.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiting: Option<Waiting>,
}

/// How a queued task meets a running one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Waiting {
    /// It starts anyway when its turn comes (`[tasks] hold_colliding` is off).
    Warned,
    /// It starts once that task ends.
    Held,
}

impl Collision {
    pub fn line(&self) -> String {
        if let Some(waiting) = self.waiting {
            let files = self.files.join(", ");
            let line = format!(
                "running task {} changes what it is to touch ({files})",
                self.with
            );
            return match waiting {
                Waiting::Held => format!("held: {line}; it starts once that one ends"),
                Waiting::Warned => line,
            };
        }
        let who = match self.branch {
            true => format!("{} (changed since it started)", self.with),
            false => format!("task {}", self.with),
        };
        match self.same_lines.is_empty() {
            false => format!(
                "likely conflict with {who} in {}",
                self.same_lines.join(", ")
            ),
            true => format!("changes the same files as {who}: {}", self.files.join(", ")),
        }
    }
}

/// What is known of the running tasks' collisions.
#[derive(Default)]
pub struct Forecasts {
    by_task: std::sync::Mutex<HashMap<String, Vec<Collision>>>,
    /// The files each running task changes, as last read.
    changing: std::sync::Mutex<HashMap<String, Vec<String>>>,
    /// The changes of the finished results, by their head.
    results: std::sync::Mutex<HashMap<String, Changes>>,
}

impl Forecasts {
    fn changing(&self, task_id: &str) -> Vec<String> {
        let known = self.changing.lock().expect("not poisoned");
        known.get(task_id).cloned().unwrap_or_default()
    }

    pub fn of(&self, task_id: &str) -> Vec<Collision> {
        let known = self.by_task.lock().expect("not poisoned");
        known.get(task_id).cloned().unwrap_or_default()
    }

    /// Keeps `now`; the ids of the tasks whose forecast changed.
    fn replace(&self, now: HashMap<String, Vec<Collision>>) -> Vec<String> {
        let mut known = self.by_task.lock().expect("not poisoned");
        let mut changed: Vec<String> = now
            .iter()
            .filter(|(id, collisions)| known.get(*id) != Some(collisions))
            .map(|(id, _)| id.clone())
            .collect();
        changed.extend(known.keys().filter(|id| !now.contains_key(*id)).cloned());
        *known = now;
        changed
    }
}

/// A task whose change counts: running, or done with an open result.
struct Active<'t> {
    task: &'t Task,
    /// A finished result's commit (empty while the task runs).
    head: String,
    repo: String,
    base: String,
    into: Option<String>,
    changes: Changes,
}

/// Reads what running tasks change, and says which collisions they head for.
pub(super) struct Forecaster {
    ledger: Arc<Ledger>,
    config: Arc<Config>,
    forecasts: Forecasts,
}

impl Forecaster {
    pub(super) fn new(ledger: Arc<Ledger>, config: Arc<Config>) -> Forecaster {
        Forecaster {
            ledger,
            config,
            forecasts: Forecasts::default(),
        }
    }

    /// Task `id`'s collisions, as last forecast.
    pub(super) fn of(&self, id: &str) -> Vec<Collision> {
        self.forecasts.of(id)
    }

    /// Reads the running tasks' changes every few seconds until `stop`.
    pub(super) fn keep_forecasting(self: &Arc<Self>, stop: CancellationToken) {
        let (this, until) = (self.clone(), stop.clone());
        spawn_supervised("the conflict forecast", stop, move || {
            let (this, until) = (this.clone(), until.clone());
            async move {
                loop {
                    this.forecast().await;
                    tokio::select! {
                        () = tokio::time::sleep(EVERY) => {}
                        () = until.cancelled() => return,
                    }
                }
            }
        });
    }

    /// Each running task's collisions with the other tasks' changes and with its branch.
    async fn forecast(&self) {
        let tasks = self.ledger.all_tasks().await;
        let running = tasks.iter().any(|t| t.state == TaskState::Running);
        // A finished result's commits do not change: its changes are read once.
        let mut known = std::mem::take(&mut *self.forecasts.results.lock().expect("not poisoned"));
        let mut results = HashMap::new();
        let mut active: Vec<Active> = Vec::new();
        // With nothing running there is nothing to forecast.
        for task in tasks.iter().filter(|_| running) {
            if let Some(found) = self.active(task, &mut known).await {
                if task.state == TaskState::Done {
                    results.insert(found.head.clone(), found.changes.clone());
                }
                active.push(found);
            }
        }
        *self.forecasts.results.lock().expect("not poisoned") = results;
        let mut branches: HashMap<(String, String, String), Changes> = HashMap::new();
        let mut now: HashMap<String, Vec<Collision>> = HashMap::new();
        for mine in active.iter().filter(|a| a.task.state == TaskState::Running) {
            let mut collisions: Vec<Collision> = active
                .iter()
                .filter(|other| other.task.id != mine.task.id && other.repo == mine.repo)
                .filter_map(|other| {
                    let (files, same_lines) = mine
                        .changes
                        .against(&other.changes, other.base == mine.base)?;
                    Some(Collision {
                        with: other.task.id.clone(),
                        branch: false,
                        files,
                        same_lines,
                        waiting: None,
                    })
                })
                .collect();
            if let Some(into) = &mine.into {
                let key = (mine.repo.clone(), mine.base.clone(), into.clone());
                if !branches.contains_key(&key) {
                    let gained = branch_changes(&mine.repo, &mine.base, into).await;
                    branches.insert(key.clone(), gained);
                }
                if let Some((files, same_lines)) = mine.changes.against(&branches[&key], true) {
                    collisions.push(Collision {
                        with: into.clone(),
                        branch: true,
                        files,
                        same_lines,
                        waiting: None,
                    });
                }
            }
            if !collisions.is_empty() {
                now.insert(mine.task.id.clone(), collisions);
            }
        }
        let changing = active
            .iter()
            .filter(|a| a.task.state == TaskState::Running)
            .map(|a| (a.task.id.clone(), a.changes.files().cloned().collect()))
            .collect();
        *self.forecasts.changing.lock().expect("not poisoned") = changing;
        let hold = self.config.tasks.hold_colliding;
        for task in tasks.iter().filter(|t| t.state == TaskState::Queued) {
            if let Some(mut collision) = self.meets_running(task, &tasks).await {
                collision.waiting = Some(match hold {
                    true => Waiting::Held,
                    false => Waiting::Warned,
                });
                now.insert(task.id.clone(), vec![collision]);
            }
        }
        for id in self.forecasts.replace(now) {
            if let Some(task) = tasks.iter().find(|t| t.id == id) {
                self.ledger.publish(task, Some(task.state));
            }
        }
    }

    /// Whether queued `task` waits for a running task that changes what it is to touch
    /// (`[tasks] hold_colliding`).
    pub(super) async fn held_by_collision(&self, task: &Task) -> bool {
        if !self.config.tasks.hold_colliding || task.touches.is_empty() {
            return false;
        }
        let tasks = self.ledger.all_tasks().await;
        self.meets_running(task, &tasks).await.is_some()
    }

    /// The first running task of queued `task`'s repository that changes files `task` is
    /// to touch, or declared it touches some of them (as git tracks them now).
    async fn meets_running(&self, task: &Task, tasks: &[Task]) -> Option<Collision> {
        let (top, mine) = touched(task).await?;
        let mut tracked: Option<Vec<String>> = None;
        for running in tasks.iter().filter(|t| t.state == TaskState::Running) {
            let Some(Isolation::Worktree(worktree)) = &running.isolation else {
                continue;
            };
            if Path::new(&worktree.repo) != top {
                continue;
            }
            let mut files: Vec<String> = self
                .forecasts
                .changing(&running.id)
                .into_iter()
                .filter(|f| mine.is_match(f))
                .collect();
            if let Some((_, theirs)) = touched(running).await {
                if tracked.is_none() {
                    let listing = quiet(Git::at(&top)).run(&["ls-files", "-z"]).await;
                    tracked = Some(
                        listing
                            .unwrap_or_default()
                            .split('\0')
                            .filter(|p| !p.is_empty())
                            .map(str::to_string)
                            .collect(),
                    );
                }
                let both = tracked.iter().flatten();
                files.extend(
                    both.filter(|f| mine.is_match(f) && theirs.is_match(f))
                        .cloned(),
                );
            }
            files.sort();
            files.dedup();
            if !files.is_empty() {
                return Some(Collision {
                    with: running.id.clone(),
                    branch: false,
                    files,
                    same_lines: Vec::new(),
                    waiting: None,
                });
            }
        }
        None
    }

    /// `task`'s change, when it counts: its worktree's, while it runs here; its result's,
    /// while that is open.
    /// `known`: the changes of finished results read before, by their head.
    async fn active<'t>(
        &self,
        task: &'t Task,
        known: &mut HashMap<String, Changes>,
    ) -> Option<Active<'t>> {
        let Some(Isolation::Worktree(worktree)) = &task.isolation else {
            return None;
        };
        let repo = Path::new(&worktree.repo);
        let (head, changes) = match (task.state, task.open_result()) {
            (TaskState::Running, _) if self.ledger.is_mine(task) && worktree.path().is_dir() => (
                String::new(),
                worktree_changes(repo, worktree.path(), &worktree.base_sha).await?,
            ),
            (TaskState::Done, Some((_, review))) => {
                let changes = match known.remove(&review.head) {
                    Some(changes) => changes,
                    None => {
                        let range = [worktree.base_sha.as_str(), review.head.as_str()];
                        let diff = quiet(Git::at(repo)).run(&diff_args(&range)).await.ok()?;
                        Changes::parse(&diff, &[])
                    }
                };
                (review.head.clone(), changes)
            }
            _ => return None,
        };
        Some(Active {
            task,
            head,
            repo: worktree.repo.clone(),
            base: worktree.base_sha.clone(),
            into: worktree
                .landing_branch(Path::new(&task.project_path))
                .await
                .ok(),
            changes,
        })
    }
}

/// The most globs a task names in `touches`.
const MOST_TOUCHES: usize = 32;

/// Why a task's `touches` were refused.
#[derive(Debug, thiserror::Error)]
pub enum BadTouches {
    #[error("{0} globs; at most {MOST_TOUCHES} (name folders: \"src/parser/**\")")]
    TooMany(usize),
    #[error("{0:?} is not a glob below the project (\"src/**\", \"Cargo.toml\")")]
    Outside(String),
    #[error("{glob:?}: {source}")]
    NotAGlob {
        glob: String,
        source: globset::Error,
    },
}

/// `touches` as given, once each is a glob below the project.
pub fn checked_touches(touches: &[String]) -> Result<Vec<String>, BadTouches> {
    if touches.len() > MOST_TOUCHES {
        return Err(BadTouches::TooMany(touches.len()));
    }
    for glob in touches {
        let outside = glob.starts_with('/') || glob.split('/').any(|part| part == "..");
        if glob.trim().is_empty() || outside {
            return Err(BadTouches::Outside(glob.clone()));
        }
        Glob::new(glob).map_err(|source| BadTouches::NotAGlob {
            glob: glob.clone(),
            source,
        })?;
    }
    Ok(touches.to_vec())
}

/// The repository top of `task`'s project, and its `touches` as a matcher of paths below
/// that top.
async fn touched(task: &Task) -> Option<(std::path::PathBuf, GlobSet)> {
    if task.touches.is_empty() {
        return None;
    }
    let (top, project) = match &task.isolation {
        Some(Isolation::Worktree(worktree)) => (
            std::path::PathBuf::from(&worktree.repo),
            worktree
                .dir()
                .strip_prefix(worktree.path())
                .ok()?
                .to_path_buf(),
        ),
        _ => {
            let project = Path::new(&task.project_path);
            let top = Git::at(project).top_level().await?;
            let below = project.strip_prefix(&top).ok()?.to_path_buf();
            (top, below)
        }
    };
    let mut set = GlobSetBuilder::new();
    for glob in &task.touches {
        let below = project.join(glob);
        let glob = GlobBuilder::new(&below.to_string_lossy())
            .literal_separator(true)
            .build()
            .ok()?;
        set.add(glob);
    }
    Some((top, set.build().ok()?))
}

/// What worktree `dir` of `repo` changes of `base`: commits, uncommitted edits and new
/// files. Its content is the agent's: git runs on it through the git directory drydock made.
async fn worktree_changes(repo: &Path, dir: &Path, base: &str) -> Option<Changes> {
    let git = quiet(Git::in_worktree(repo, dir).await.ok()?);
    let diff = git.run(&diff_args(&[base])).await.ok()?;
    let added = git
        .run(&["ls-files", "--others", "--exclude-standard", "-z"])
        .await
        .ok()?;
    let added: Vec<String> = added
        .split('\0')
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    Some(Changes::parse(&diff, &added))
}

/// What branch `into` of `repo` gained since `base`.
async fn branch_changes(repo: &str, base: &str, into: &str) -> Changes {
    let git = quiet(Git::at(Path::new(repo)));
    let tip = format!("refs/heads/{into}");
    match git.run(&diff_args(&[base, &tip])).await {
        Ok(diff) => Changes::parse(&diff, &[]),
        Err(_) => Changes::default(),
    }
}

fn diff_args<'a>(revs: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "-c",
        "core.quotePath=false",
        "diff",
        "-U0",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--src-prefix=a/",
        "--dst-prefix=b/",
    ];
    args.extend_from_slice(revs);
    args.push("--");
    args
}

/// Git that takes no optional lock (no index refresh written behind an agent's back).
fn quiet(git: Git) -> Git {
    git.with_env("GIT_OPTIONAL_LOCKS", "0")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::test_repo::Repo;
    use crate::tasks::isolation::Worktree;
    use crate::tasks::parts_for_tests::{Setting, new_task};
    use crate::tasks::store::{Claimer, NewTask};

    /// Built alone, on a real repository: a running task's worktree changes a file that a
    /// queued task is to touch, so the forecast holds the queued one, and says with whom.
    #[tokio::test]
    async fn a_queued_task_touching_what_a_running_one_changes_is_held_and_told() {
        let setting = Setting::new("[tasks]\nhold_colliding = true\n");
        let repo = Repo::new();
        repo.write("src/parser.rs", "fn parse() {}\n");
        repo.commit_all("a parser");
        let base_sha = repo.git(&["rev-parse", "HEAD"]).trim().to_string();
        let tree = repo.dir.path().join("tree");
        let branch = "drydock/task-running";
        repo.git(&[
            "worktree",
            "add",
            "-q",
            "-b",
            branch,
            tree.to_str().unwrap(),
        ]);
        std::fs::write(tree.join("src/parser.rs"), "fn parse() { todo!() }\n").unwrap();
        let worktree = Worktree {
            repo: repo.path.display().to_string(),
            path: tree.display().to_string(),
            dir: tree.display().to_string(),
            branch: branch.into(),
            base_ref: Some("main".into()),
            base_sha,
            copied: Vec::new(),
            notes: Vec::new(),
            confinement: None,
        };

        let ledger = setting.ledger();
        let forecaster = Forecaster::new(ledger.clone(), setting.config.clone());
        let running = new_task("rewrite the parser", &repo.path);
        let queued = NewTask {
            touches: vec!["src/**".into()],
            ..new_task("document the parser", &repo.path)
        };
        let (running, queued) = ledger
            .persistently(move |q| {
                let added = q.add(running.clone())?;
                let here = Claimer {
                    host: "here".into(),
                    session: "s".into(),
                    cap: None,
                };
                let running = q.claim(&[added.id], &here)?.expect("claimed");
                q.set_isolation(&running.id, &Isolation::Worktree(worktree.clone()))?;
                Ok((running, q.add(queued.clone())?))
            })
            .await
            .unwrap();
        assert!(forecaster.of(&queued.id).is_empty());

        forecaster.forecast().await;
        let told = forecaster.of(&queued.id);
        assert_eq!(told.len(), 1, "{told:?}");
        assert_eq!(told[0].with, running.id);
        assert_eq!(told[0].files, vec!["src/parser.rs".to_string()]);
        assert_eq!(told[0].waiting, Some(Waiting::Held));
        assert!(forecaster.held_by_collision(&queued).await);
    }

    const DIFF: &str = "diff --git a/src/lib.rs b/src/lib.rs\n\
index 1..2 100644\n\
--- a/src/lib.rs\n\
+++ b/src/lib.rs\n\
@@ -3,2 +3,2 @@ fn one()\n\
-a\n-b\n+c\n+d\n\
@@ -10,0 +11 @@\n\
+inserted\n\
diff --git a/gone.txt b/gone.txt\n\
deleted file mode 100644\n\
--- a/gone.txt\n\
+++ /dev/null\n\
@@ -1 +0,0 @@\n\
-bye\n\
diff --git a/dir with space/ü.md b/dir with space/ü.md\n\
--- a/dir with space/ü.md\t\n\
+++ b/dir with space/ü.md\t\n\
@@ -7 +7 @@\n\
-x\n+y\n\
diff --git a/logo.png b/logo.png\n\
Binary files a/logo.png and b/logo.png differ\n";

    fn lines(start: u32, end: u32) -> Lines {
        Lines { start, end }
    }

    #[test]
    fn a_diff_is_read_as_the_lines_of_the_base_each_file_changes() {
        let changes = Changes::parse(DIFF, &["new.rs".into()]);
        let files: Vec<&String> = changes.files().collect();
        assert_eq!(
            files,
            [
                "dir with space/ü.md",
                "gone.txt",
                "logo.png",
                "new.rs",
                "src/lib.rs"
            ]
        );
        assert_eq!(
            changes.files["src/lib.rs"],
            vec![lines(3, 5), lines(11, 11)]
        );
        assert_eq!(changes.files["gone.txt"], vec![lines(1, 2)]);
        assert_eq!(changes.files["dir with space/ü.md"], vec![lines(7, 8)]);
        assert_eq!(changes.files["logo.png"], vec![WHOLE_FILE]);
        assert_eq!(changes.files["new.rs"], vec![WHOLE_FILE]);
    }

    #[test]
    fn changes_meet_where_their_lines_overlap_or_touch() {
        let ours = Changes::parse(DIFF, &[]);
        let touching = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -4,0 +5 @@\n+next to it\n";
        let (files, same) = ours.against(&Changes::parse(touching, &[]), true).unwrap();
        assert_eq!(
            (files.as_slice(), same.as_slice()),
            (
                &["src/lib.rs".to_string()][..],
                &["src/lib.rs".to_string()][..]
            )
        );

        let apart = "--- a/src/lib.rs\n+++ b/src/lib.rs\n@@ -20 +20 @@\n-x\n+y\n";
        let (files, same) = ours.against(&Changes::parse(apart, &[]), true).unwrap();
        assert_eq!(files, ["src/lib.rs"]);
        assert!(same.is_empty(), "{same:?}");
        // From another base the lines do not compare: the same file is all that is said.
        let (_, same) = ours.against(&Changes::parse(touching, &[]), false).unwrap();
        assert!(same.is_empty());

        let elsewhere = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(ours.against(&Changes::parse(elsewhere, &[]), true), None);
        // Two new files of the same name are an add/add conflict.
        let a = Changes::parse("", &["notes.md".into()]);
        let b = Changes::parse("", &["notes.md".into()]);
        assert_eq!(a.against(&b, true).unwrap().1, ["notes.md"]);
    }

    #[test]
    fn touches_are_globs_below_the_project() {
        let fine = [
            "src/**".to_string(),
            "Cargo.toml".into(),
            "docs/*.md".into(),
        ];
        assert_eq!(checked_touches(&fine).unwrap(), fine);
        for (bad, says) in [
            ("/etc/passwd", "not a glob below the project"),
            ("src/../../x", "not a glob below the project"),
            ("  ", "not a glob below the project"),
            ("src/[", "\"src/[\""),
        ] {
            let error = checked_touches(&[bad.to_string()]).unwrap_err();
            assert!(error.to_string().contains(says), "{bad}: {error}");
        }
        let many: Vec<String> = (0..33).map(|n| format!("f{n}")).collect();
        assert!(
            checked_touches(&many)
                .unwrap_err()
                .to_string()
                .contains("at most 32")
        );
    }

    #[test]
    fn a_collision_says_what_it_is_in_a_line() {
        let likely = Collision {
            with: "ab12".into(),
            branch: false,
            files: vec!["src/lib.rs".into(), "README.md".into()],
            same_lines: vec!["src/lib.rs".into()],
            waiting: None,
        };
        assert_eq!(
            likely.line(),
            "likely conflict with task ab12 in src/lib.rs"
        );
        let apart = Collision {
            with: "main".into(),
            branch: true,
            same_lines: Vec::new(),
            ..likely
        };
        assert_eq!(
            apart.line(),
            "changes the same files as main (changed since it started): src/lib.rs, README.md"
        );
        let queued = Collision {
            with: "cd34".into(),
            branch: false,
            files: vec!["src/lib.rs".into()],
            same_lines: Vec::new(),
            waiting: Some(Waiting::Held),
        };
        assert_eq!(
            queued.line(),
            "held: running task cd34 changes what it is to touch (src/lib.rs); it starts once that one ends"
        );
    }
}
