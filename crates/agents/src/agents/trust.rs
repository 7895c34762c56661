//! Folder trust for a task's worktree. Claude Code asks "Is this a project you created or one
//! you trust?" once per git repository, with "No, exit" preselected, so an agent started in a
//! new worktree would stop there (agent-lab.md, "Measured later"). drydock made the worktree
//! from a project the person allowed; when Claude Code already trusts that project, the
//! worktree gets the same entry in `.claude.json` (the project's whole entry, tagged with the
//! task, written atomically and read back), and loses it again when the worktree goes. A
//! project Claude Code does not trust is not trusted for it: its agent asks, as in place.
//!
//! `.claude.json` can be megabytes, and its writers take turns: every public function reads
//! and writes it on a blocking thread, never on the runtime.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::{Map, Value};

/// The key that marks entries drydock added, with the task's id.
const TAG: &str = "drydockTask";

/// One writer of `.claude.json` at a time in this process.
static WRITING: Mutex<()> = Mutex::new(());

/// Why Claude Code's folder trust was not granted.
#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("its writer failed")]
    WriterFailed,
    #[error("no home directory to find .claude.json in")]
    NoHome,
    #[error("cannot read {}: {source}", file.display())]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is not JSON Claude Code wrote: {source}", file.display())]
    NotJson {
        file: PathBuf,
        source: serde_json::Error,
    },
    #[error("{} does not hold a JSON object", file.display())]
    NotAnObject { file: PathBuf },
    #[error("`projects` in {} is not an object", file.display())]
    ProjectsNotAnObject { file: PathBuf },
    #[error("cannot write {}: {source}", file.display())]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{} did not keep the entry (another writer?)", file.display())]
    NotKept { file: PathBuf },
}

/// [`vouch`]'s refusal, as the task's note says it.
#[derive(Debug, thiserror::Error)]
#[error("Claude Code's folder trust was not granted: {0}")]
pub struct NotGranted(#[from] pub TrustError);

/// Claude Code's global config: `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
pub fn claude_config_file() -> Option<PathBuf> {
    match std::env::var_os("CLAUDE_CONFIG_DIR") {
        Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir).join(".claude.json")),
        _ => dirs::home_dir().map(|home| home.join(".claude.json")),
    }
}

/// `work` on a blocking thread; `failed` when that thread panicked.
async fn off_runtime<T: Send + 'static>(work: impl FnOnce() -> T + Send + 'static, failed: T) -> T {
    tokio::task::spawn_blocking(work).await.unwrap_or(failed)
}

fn owned(dirs: &[&Path]) -> Vec<PathBuf> {
    dirs.iter().map(|dir| dir.to_path_buf()).collect()
}

/// Lets agent `kind` work in `dirs` (a task's worktree) without asking, when it trusts
/// `project`; says what was done, for the task.
pub fn trust_worktree<'a>(
    kind: &'a str,
    project: &'a Path,
    dirs: &'a [&'a Path],
    task_id: &'a str,
) -> BoxFuture<'a, String> {
    async move {
        let (kind, project, dirs, task_id) = (
            kind.to_string(),
            project.to_path_buf(),
            owned(dirs),
            task_id.to_string(),
        );
        off_runtime(
            move || {
                let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
                trust_worktree_now(&kind, &project, &dirs, &task_id)
            },
            NotGranted(TrustError::WriterFailed).to_string(),
        )
        .await
    }
    .boxed()
}

fn trust_worktree_now(kind: &str, project: &Path, dirs: &[&Path], task_id: &str) -> String {
    if kind != "claude" {
        return format!(
            "{kind} is started in the worktree as it is (drydock grants folder trust for Claude Code only)"
        );
    }
    let Some(file) = claude_config_file() else {
        return NotGranted(TrustError::NoHome).to_string();
    };
    match grant(&file, project, dirs, task_id) {
        Ok(Granted::Now) => format!(
            "Claude Code trusts the worktree as it trusts {} (entry added to {})",
            project.display(),
            file.display()
        ),
        Ok(Granted::Before) => "Claude Code trusted the worktree already".into(),
        Ok(Granted::NotTrusted) => format!(
            "Claude Code does not trust {} itself, so the worktree was not trusted either: its agent asks first",
            project.display()
        ),
        Err(error) => NotGranted(error).to_string(),
    }
}

/// Lets agent `kind` trust `clone`, a clone drydock made of a remote its config allows
/// (`[tasks] repositories`): the person vouched for it there. Claude Code only.
pub fn vouch<'a>(kind: &'a str, clone: &'a Path) -> BoxFuture<'a, Result<(), NotGranted>> {
    async move {
        let (kind, clone) = (kind.to_string(), clone.to_path_buf());
        let failed = Err(TrustError::WriterFailed);
        Ok(off_runtime(move || vouch_now(&kind, &clone), failed).await?)
    }
    .boxed()
}

fn vouch_now(kind: &str, clone: &Path) -> Result<(), TrustError> {
    if kind != "claude" {
        return Ok(());
    }
    let Some(file) = claude_config_file() else {
        return Err(TrustError::NoHome);
    };
    let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let mut config = read(&file)?;
    let projects = projects_of(&mut config, &file)?;
    if is_trusted(projects.get(&key(clone))) {
        return Ok(());
    }
    let mut entry = Map::new();
    entry.insert("hasTrustDialogAccepted".into(), Value::Bool(true));
    entry.insert(TAG.into(), Value::String("clone".into()));
    projects.insert(key(clone), Value::Object(entry));
    write(&file, &config)
}

/// Whether Claude Code trusts `project` (or a folder above it).
pub fn trusts(project: &Path) -> BoxFuture<'_, bool> {
    async move {
        let project = project.to_path_buf();
        off_runtime(move || trusts_now(&project), false).await
    }
    .boxed()
}

fn trusts_now(project: &Path) -> bool {
    let Some(file) = claude_config_file() else {
        return false;
    };
    let Ok(config) = read(&file) else {
        return false;
    };
    config["projects"]
        .as_object()
        .is_some_and(|projects| trusted_entry(projects, project).is_some())
}

/// Takes back the entries drydock added for `task_id`'s worktree.
pub fn withdraw<'a>(dirs: &'a [&'a Path], task_id: &'a str) -> BoxFuture<'a, ()> {
    async move {
        let (dirs, task_id) = (owned(dirs), task_id.to_string());
        off_runtime(
            move || {
                let dirs: Vec<&Path> = dirs.iter().map(PathBuf::as_path).collect();
                withdraw_now(&dirs, &task_id)
            },
            (),
        )
        .await
    }
    .boxed()
}

fn withdraw_now(dirs: &[&Path], task_id: &str) {
    let Some(file) = claude_config_file() else {
        return;
    };
    if let Err(error) = remove(&file, dirs, task_id) {
        tracing::debug!("task {task_id}: taking back its folder trust: {error}");
    }
}

#[derive(Debug, PartialEq, Eq)]
enum Granted {
    Now,
    Before,
    NotTrusted,
}

fn grant(
    file: &Path,
    project: &Path,
    dirs: &[&Path],
    task_id: &str,
) -> Result<Granted, TrustError> {
    let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let mut config = read(file)?;
    let projects = projects_of(&mut config, file)?;
    let Some(mut entry) = trusted_entry(projects, project) else {
        return Ok(Granted::NotTrusted);
    };
    if dirs.iter().all(|dir| is_trusted(projects.get(&key(dir)))) {
        return Ok(Granted::Before);
    }
    entry.insert(TAG.into(), Value::String(task_id.into()));
    for dir in dirs {
        if !is_trusted(projects.get(&key(dir))) {
            projects.insert(key(dir), Value::Object(entry.clone()));
        }
    }
    write(file, &config)?;
    let back = read(file)?;
    let all_there = dirs
        .iter()
        .all(|dir| is_trusted(back["projects"].get(key(dir))));
    match all_there {
        true => Ok(Granted::Now),
        false => Err(TrustError::NotKept {
            file: file.to_path_buf(),
        }),
    }
}

/// The `projects` map of Claude Code's config, made when it has none.
fn projects_of<'a>(
    config: &'a mut Value,
    file: &Path,
) -> Result<&'a mut Map<String, Value>, TrustError> {
    let file = || file.to_path_buf();
    config
        .as_object_mut()
        .ok_or_else(|| TrustError::NotAnObject { file: file() })?
        .entry("projects")
        .or_insert_with(|| Value::Object(Map::new()))
        .as_object_mut()
        .ok_or_else(|| TrustError::ProjectsNotAnObject { file: file() })
}

fn remove(file: &Path, dirs: &[&Path], task_id: &str) -> Result<(), TrustError> {
    let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    if !file.exists() {
        return Ok(());
    }
    let mut config = read(file)?;
    let Some(projects) = config.get_mut("projects").and_then(Value::as_object_mut) else {
        return Ok(());
    };
    let before = projects.len();
    for dir in dirs {
        let ours = projects
            .get(&key(dir))
            .is_some_and(|entry| entry[TAG] == Value::String(task_id.into()));
        if ours {
            projects.remove(&key(dir));
        }
    }
    match projects.len() == before {
        true => Ok(()),
        false => write(file, &config),
    }
}

/// The entry of `project` or of the nearest folder above it that Claude Code trusts.
fn trusted_entry(projects: &Map<String, Value>, project: &Path) -> Option<Map<String, Value>> {
    project.ancestors().find_map(|dir| {
        let entry = projects.get(&key(dir))?;
        is_trusted(Some(entry)).then(|| entry.as_object().cloned())?
    })
}

fn is_trusted(entry: Option<&Value>) -> bool {
    entry.is_some_and(|e| e["hasTrustDialogAccepted"] == Value::Bool(true))
}

fn key(dir: &Path) -> String {
    dir.display().to_string()
}

fn read(file: &Path) -> Result<Value, TrustError> {
    match std::fs::read_to_string(file) {
        Ok(text) => serde_json::from_str(&text).map_err(|source| TrustError::NotJson {
            file: file.to_path_buf(),
            source,
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Value::Object(Map::new())),
        Err(source) => Err(TrustError::Read {
            file: file.to_path_buf(),
            source,
        }),
    }
}

/// Writes `config` beside `file`, then renames it over: a reader never sees half a file.
fn write(file: &Path, config: &Value) -> Result<(), TrustError> {
    use std::os::unix::fs::PermissionsExt;
    let text = serde_json::to_string_pretty(config).expect("JSON serializes");
    let temporary = file.with_extension(format!("json.drydock-{}", std::process::id()));
    let mode = std::fs::metadata(file)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o600);
    std::fs::write(&temporary, text)
        .and_then(|()| std::fs::set_permissions(&temporary, std::fs::Permissions::from_mode(mode)))
        .and_then(|()| std::fs::rename(&temporary, file))
        .map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            TrustError::Write {
                file: file.to_path_buf(),
                source,
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_worktree_of_a_trusted_project_is_trusted_and_taken_back() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude.json");
        let before = json!({
            "hasCompletedOnboarding": true,
            "projects": {
                "/code": {"hasTrustDialogAccepted": true, "allowedTools": ["Bash"]},
                "/elsewhere": {"hasTrustDialogAccepted": false}
            }
        });
        std::fs::write(&file, before.to_string()).unwrap();
        let tree = Path::new("/data/worktrees/app-1/t1");
        let inner = Path::new("/data/worktrees/app-1/t1/app");

        let granted = grant(&file, Path::new("/code/app"), &[tree, inner], "t1");

        assert_eq!(granted.ok(), Some(Granted::Now));
        let after: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        let entry = &after["projects"]["/data/worktrees/app-1/t1"];
        assert_eq!(entry["hasTrustDialogAccepted"], true);
        assert_eq!(
            entry["allowedTools"],
            json!(["Bash"]),
            "the whole entry is copied"
        );
        assert_eq!(entry[TAG], "t1");
        assert_eq!(after["hasCompletedOnboarding"], true, "the rest is kept");
        assert_eq!(
            grant(&file, Path::new("/code/app"), &[tree, inner], "t1").ok(),
            Some(Granted::Before)
        );

        remove(&file, &[tree, inner], "t2").unwrap();
        let kept: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert!(
            kept["projects"].get("/data/worktrees/app-1/t1").is_some(),
            "another task's entries stay"
        );
        remove(&file, &[tree, inner], "t1").unwrap();
        let back: Value = serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
        assert_eq!(back, before);
    }

    #[test]
    fn an_untrusted_project_lends_no_trust_and_a_foreign_file_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join(".claude.json");
        let tree = Path::new("/data/worktrees/x/t1");
        assert_eq!(
            grant(&file, Path::new("/code"), &[tree], "t1").ok(),
            Some(Granted::NotTrusted)
        );
        assert!(!file.exists(), "nothing written");
        std::fs::write(
            &file,
            json!({"projects": {"/elsewhere": {"hasTrustDialogAccepted": false}}}).to_string(),
        )
        .unwrap();
        assert_eq!(
            grant(&file, Path::new("/elsewhere"), &[tree], "t1").ok(),
            Some(Granted::NotTrusted)
        );

        std::fs::write(&file, "not json").unwrap();
        let error = grant(&file, Path::new("/code"), &[tree], "t1").unwrap_err();
        assert!(matches!(error, TrustError::NotJson { .. }), "{error}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "not json");
        assert!(
            NotGranted(error)
                .to_string()
                .starts_with("Claude Code's folder trust was not granted: ")
        );

        std::fs::write(&file, "[]").unwrap();
        let error = grant(&file, Path::new("/code"), &[tree], "t1").unwrap_err();
        assert!(matches!(error, TrustError::NotAnObject { .. }), "{error}");
        std::fs::write(&file, json!({"projects": []}).to_string()).unwrap();
        let error = grant(&file, Path::new("/code"), &[tree], "t1").unwrap_err();
        assert!(
            matches!(error, TrustError::ProjectsNotAnObject { .. }),
            "{error}"
        );
    }
}
