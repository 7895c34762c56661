//! A real repository, a real worktree and a real sandbox: the agent commits on its branch,
//! and cannot touch the person's history, branches or hooks.

use std::process::Command;

use super::*;
use crate::git::test_repo::{Repo, git};
use crate::sandbox::{Confinement, support};

const BRANCH: &str = "drydock/task-1";

struct Task {
    repo: Repo,
    worktree: PathBuf,
    private: PathBuf,
}

fn task() -> Task {
    let repo = Repo::new();
    let root = repo.path.parent().unwrap().to_path_buf();
    let worktree = root.join("worktree");
    repo.git(&[
        "worktree",
        "add",
        "-q",
        "-b",
        BRANCH,
        worktree.to_str().unwrap(),
    ]);
    Task {
        repo,
        worktree,
        private: root.join("private-git"),
    }
}

/// Runs `script` with sh in a sandbox that works in the worktree through `git`.
fn agent(task: &Task, git: &PrivateGit, script: &str) -> (i32, String) {
    let confinement = Confinement {
        work: task.worktree.clone(),
        readable: git.readable(),
        writable: git.writable(),
        protected: git.protected(),
        env: vec![("GIT_CONFIG_NOSYSTEM".into(), "1".into())],
        ..Confinement::default()
    };
    let out = Command::new(support::host().bwrap().expect("bubblewrap works here"))
        .args(confinement.args())
        .args(["--", "/bin/sh", "-c", script])
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

async fn prepared(task: &Task) -> PrivateGit {
    PrivateGit::prepare(
        &task.repo.path,
        &task.worktree,
        BRANCH,
        &task.private,
        ("drydock task 1", "task-1@drydock.invalid"),
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn the_agent_commits_on_its_branch_and_it_comes_back_checked() {
    let task = task();
    let base = task.repo.git(&["rev-parse", "main"]).trim().to_string();
    let git = prepared(&task).await;

    let (code, out) = agent(
        &task,
        &git,
        "git status --short && echo work > work.txt && git add work.txt \
         && git commit -q -m 'the agent commits' && git log --format=%s -2 && git branch --list main",
    );
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("the agent commits\nfirst\n"), "{out}");
    assert!(
        out.contains("main"),
        "the repository's branches are seen: {out}"
    );
    assert_eq!(
        task.repo.git(&["rev-parse", BRANCH]).trim(),
        base,
        "nothing reaches the repository before it is brought back"
    );

    let notes = git.bring_back().await.unwrap();
    assert!(notes.is_empty(), "{notes:?}");
    let message = task.repo.git(&["log", "--format=%s %an", "-1", BRANCH]);
    assert_eq!(message.trim(), "the agent commits Test Person");
    task.repo.git(&["fsck", "--strict"]);
    assert!(task.repo.git(&["for-each-ref", "refs/drydock"]).is_empty());
    // The worktree is the repository's again, outside: its commit is there.
    assert_eq!(
        git_in(&task.worktree, &["log", "--format=%s", "-1"]),
        "the agent commits"
    );
}

fn git_in(dir: &Path, args: &[&str]) -> String {
    git(dir, args).trim().to_string()
}

#[tokio::test]
async fn the_persons_history_branches_and_hooks_are_out_of_reach() {
    let task = task();
    let main = task.repo.git(&["rev-parse", "main"]).trim().to_string();
    let git = prepared(&task).await;
    let common = git.repo_common.display().to_string();
    let attempts = [
        format!("rm -rf '{common}/objects/pack' '{common}/objects/'??"),
        format!("echo 'touch /tmp/pwned' > '{common}/hooks/post-checkout'"),
        format!(
            "echo '/' > '{}'",
            git.common.join("objects/info/alternates").display()
        ),
        format!("echo '[core]' >> '{}'", git.common.join("config").display()),
    ];
    for attempt in &attempts {
        let (code, out) = agent(&task, &git, attempt);
        assert_ne!(code, 0, "{attempt} succeeded: {out}");
    }
    let (code, out) = agent(
        &task,
        &git,
        "git update-ref refs/heads/main HEAD~0 && git branch -f main HEAD && git tag planted",
    );
    assert_eq!(
        code, 0,
        "its own copies of the refs are its to change: {out}"
    );

    // What it writes where the repository is, is the sandbox's own (its root is a tmpfs).
    let planted = format!("git config --file '{common}/config' core.fsmonitor 'touch /tmp/pwned'");
    agent(&task, &git, &planted);
    let fsmonitor = Command::new("git")
        .args([
            "config",
            "--file",
            &format!("{common}/config"),
            "core.fsmonitor",
        ])
        .output()
        .unwrap();
    assert!(
        fsmonitor.stdout.is_empty(),
        "the repository's config was changed"
    );

    git.bring_back().await.unwrap();
    assert_eq!(task.repo.git(&["rev-parse", "main"]).trim(), main);
    assert!(task.repo.git(&["tag", "--list"]).is_empty());
    task.repo.git(&["fsck", "--strict"]);
    assert!(!Path::new("/tmp/pwned").exists());
    let alternates = std::fs::read_to_string(git.common.join("objects/info/alternates")).unwrap();
    assert_eq!(alternates.trim(), format!("{common}/objects"));
}

#[tokio::test]
async fn a_forged_object_is_refused_and_the_branch_stays() {
    let task = task();
    let base = task.repo.git(&["rev-parse", BRANCH]).trim().to_string();
    let git = prepared(&task).await;
    let forged = "1234567890123456789012345678901234567890";
    std::fs::create_dir_all(git.common.join("objects/12")).unwrap();
    std::fs::write(git.common.join("objects/12").join(&forged[2..]), "not zlib").unwrap();
    std::fs::write(
        git.common.join(format!("refs/heads/{BRANCH}")),
        format!("{forged}\n"),
    )
    .unwrap();

    let notes = git.bring_back().await.unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("could not be brought back")),
        "{notes:?}"
    );
    assert_eq!(task.repo.git(&["rev-parse", BRANCH]).trim(), base);
}

#[tokio::test]
async fn an_agent_that_switched_branches_is_told_of() {
    let task = task();
    let git = prepared(&task).await;
    let (code, out) = agent(&task, &git, "git checkout -q -b elsewhere");
    assert_eq!(code, 0, "{out}");
    let notes = git.bring_back().await.unwrap();
    assert!(
        notes
            .iter()
            .any(|n| n.contains("left its worktree on elsewhere")),
        "{notes:?}"
    );
}

#[test]
fn the_private_settings_name_the_format_and_the_identity_and_nothing_else() {
    let config = private_config("sha256", "A \"quoted\" name", "a@b");
    assert!(config.contains("repositoryformatversion = 1"), "{config}");
    assert!(config.contains("objectformat = sha256"), "{config}");
    assert!(config.contains(r#"name = "A \"quoted\" name""#), "{config}");
    assert!(!config.contains("hooks"), "{config}");
    assert!(private_config("sha1", "n", "e").contains("repositoryformatversion = 0"));
}

/// Issue 48: what the agent plants in its private git (links to files outside, a `.git` of
/// its own, its read-only files moved away with their folder) is neither read nor written
/// through when drydock brings its work back and prepares the git again for a retry.
#[tokio::test]
async fn what_the_agent_planted_in_its_private_git_is_not_followed() {
    let task = task();
    let outside = tempfile::tempdir().unwrap();
    let (victim, secret) = (outside.path().join("victim"), outside.path().join("secret"));
    std::fs::write(&victim, "the person's").unwrap();
    std::fs::write(&secret, "lab-secret-material").unwrap();
    let git = prepared(&task).await;
    let (admin, common) = (git.repo_admin.display(), git.common.display());
    let (victim_text, secret_text, outside_text) =
        (victim.display(), secret.display(), outside.path().display());
    let script = format!(
        "echo work > work.txt && git add work.txt && git commit -q -m 'the agent commits' \
         && cd '{admin}' && rm -f HEAD index && ln -s '{secret_text}' HEAD && ln -s '{victim_text}' index \
         && cd '{common}' && rm -f packed-refs && ln -s '{victim_text}' packed-refs \
         && rm -rf refs/tags && ln -s '{outside_text}' refs/tags \
         && mv objects/info objects/moved && mkdir objects/info && echo / > objects/info/alternates \
         && git init -q --bare .git"
    );
    let (code, out) = agent(&task, &git, &script);
    assert_eq!(code, 0, "{out}");

    let notes = git.bring_back().await.unwrap();
    let said = notes.join("\n");
    assert!(!said.contains("lab-secret-material"), "{said}");
    assert!(said.contains("holds a .git of the agent's"), "{said}");

    std::fs::remove_dir_all(git.common.join(".git")).unwrap();
    let notes = git.bring_back().await.unwrap();
    assert!(
        !notes.iter().any(|n| n.contains("not brought back from")),
        "alternates and settings put back, the fetch goes on: {notes:?}"
    );
    assert_eq!(
        std::fs::read_to_string(git.common.join("objects/info/alternates")).unwrap(),
        format!("{}\n", git.repo_common.join("objects").display())
    );

    let again = prepared(&task).await;
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the person's");
    let names: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "nothing made outside: {names:?}");
    assert_eq!(
        std::fs::read_to_string(again.admin.join("HEAD")).unwrap(),
        format!("ref: refs/heads/{BRANCH}\n")
    );
    assert!(
        !std::fs::symlink_metadata(again.common.join("refs/tags"))
            .unwrap()
            .is_symlink()
    );
}
