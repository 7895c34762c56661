use super::*;
use crate::config::CargoTarget;
use crate::git::test_repo::{Repo, git};

fn worktrees(repo: &Repo) -> Worktrees {
    Worktrees::new(TaskDirs::new(
        &repo.dir.path().canonicalize().unwrap().join("data"),
        CargoTarget::PerTask,
    ))
}

#[tokio::test]
async fn a_task_gets_a_worktree_outside_the_project_and_its_change_is_captured() {
    let repo = Repo::new();
    repo.write("src/lib.rs", "pub fn one() -> u32 { 1 }\n");
    repo.write(".gitignore", "/deps\n");
    repo.commit_all("lib");
    repo.write("deps/dep.txt", "fetched\n");
    repo.write(".env", "SECRET=1\n");
    repo.write("README.md", "edited by the person, not committed\n");
    repo.write("config/local.toml", "untracked, not ignored\n");
    let trees = worktrees(&repo);
    let copy: Vec<String> = ["deps", ".env", "nope", "config/local.toml"]
        .map(String::from)
        .to_vec();

    let tree = trees
        .create("t1", 1, &repo.path, &repo.path, None, &copy)
        .await
        .unwrap();

    assert_eq!(tree.branch, "drydock/task-t1");
    assert_eq!(tree.base_ref.as_deref(), Some("main"));
    assert!(!tree.path.starts_with(&repo.path.display().to_string()));
    assert!(Path::new(&tree.dir).join("src/lib.rs").is_file());
    assert_eq!(tree.copied, vec!["deps", "config/local.toml"]);
    assert!(Path::new(&tree.dir).join("deps/dep.txt").is_file());
    assert!(!Path::new(&tree.dir).join(".env").exists());
    let notes = tree.notes.join("\n");
    assert!(notes.contains(".env was not copied"), "{notes}");
    assert!(notes.contains("nope was not copied"), "{notes}");
    assert!(
            notes
                .contains("3 uncommitted change(s) (README.md, .env, config/local.toml) that this task does not have"),
            "{notes}"
        );
    assert_eq!(
        std::fs::read_to_string(Path::new(&tree.dir).join("README.md")).unwrap(),
        "a project\n",
        "the task starts from HEAD"
    );

    // The agent commits once itself and leaves more uncommitted, with a binary file.
    let dir = Path::new(&tree.dir);
    std::fs::write(dir.join("src/lib.rs"), "pub fn one() -> u32 { 2 }\n").unwrap();
    git(
        dir,
        &[
            "-c",
            "user.name=Agent",
            "-c",
            "user.email=a@b",
            "commit",
            "-qam",
            "agent's own",
        ],
    );
    std::fs::write(dir.join("src/new file.rs"), "// new\n").unwrap();
    std::fs::write(dir.join("logo.bin"), [0u8, 159, 146, 150, 0, 1]).unwrap();
    std::fs::write(dir.join("deps/dep.txt"), "changed copy\n").unwrap();
    std::fs::write(dir.join("config/local.toml"), "changed copy\n").unwrap();

    let review = trees
        .capture(&tree, &Author::of_task("t1"), "t1: the summary")
        .await
        .unwrap();

    assert!(review.committed_for_agent);
    assert_eq!(review.commits, 2);
    let paths: Vec<&str> = review.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        vec!["logo.bin", "src/lib.rs", "src/new file.rs"],
        "copied files stay out"
    );
    let binary = &review.files[0];
    assert_eq!((binary.status.as_str(), binary.insertions), ("added", None));
    assert_eq!((review.insertions, review.deletions), (2, 1));
    assert!(
        review.diff.contains("+pub fn one() -> u32 { 2 }"),
        "{}",
        review.diff
    );
    let last = git(
        &repo.path,
        &["log", "-1", "--format=%an <%ae>|%s", &tree.branch],
    );
    assert_eq!(
        last.trim(),
        "drydock task t1 <task-t1@drydock.invalid>|t1: the summary"
    );
    assert_eq!(
        git(
            &repo.path,
            &["status", "--porcelain", "--untracked-files=no"]
        )
        .trim(),
        "M README.md",
        "the person's checkout is untouched"
    );

    // A retry gets the same worktree back; another task cannot take its branch.
    let again = trees
        .create("t1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    assert_eq!(again.path, tree.path);
    repo.git(&["branch", "drydock/task-t2"]);
    let taken = trees
        .create("t2", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap_err();
    assert!(
        matches!(taken, WorktreeError::BranchTaken { .. }),
        "{taken}"
    );
    // Another host taking t1 over (its second claim) keeps the first claim's branch and
    // works on a branch of its own.
    let elsewhere = tempfile::tempdir().unwrap();
    let other_host = Worktrees::new(TaskDirs::new(elsewhere.path(), CargoTarget::PerTask));
    let taken_over = other_host
        .create("t1", 2, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    assert_eq!(taken_over.branch, "drydock/task-t1-claim-2");
    assert!(
        taken_over
            .notes
            .iter()
            .any(|n| n.contains("drydock/task-t1, is kept")),
        "{:?}",
        taken_over.notes
    );
    assert_eq!(
        repo.git(&["rev-parse", "drydock/task-t1"]).trim(),
        review.head
    );
    other_host.discard(&taken_over).await.unwrap();

    // Discarding leaves nothing: no worktree, no branch.
    let last = trees.discard(&tree).await.unwrap().unwrap();
    assert_eq!(last, review.head);
    assert!(!tree.path().exists());
    assert_eq!(repo.git(&["branch", "--list", "drydock/task-t1"]), "");
    assert_eq!(repo.git(&["worktree", "list"]).lines().count(), 1);
}

#[tokio::test]
async fn a_folder_of_a_repository_a_detached_head_and_a_base_are_honoured() {
    let repo = Repo::new();
    repo.write("app/Cargo.toml", "[package]\n");
    repo.commit_all("app");
    let first = repo
        .git(&["rev-list", "--max-parents=0", "HEAD"])
        .trim()
        .to_string();
    repo.git(&["checkout", "-q", "--detach", "HEAD"]);
    let trees = worktrees(&repo);
    let app = repo.path.join("app");

    let tree = trees
        .create("d1", 1, &app, &repo.path, None, &[])
        .await
        .unwrap();
    assert_eq!(tree.base_ref, None, "a detached HEAD has no branch");
    assert!(tree.dir.ends_with("/d1/app"), "{}", tree.dir);
    assert!(Path::new(&tree.dir).join("Cargo.toml").is_file());

    let based = trees
        .create("d2", 1, &app, &repo.path, Some(&first), &[])
        .await
        .unwrap();
    assert_eq!(based.base_sha, first);
    let unknown = trees
        .create("d3", 1, &app, &repo.path, Some("nope"), &[])
        .await
        .unwrap_err();
    assert!(
        unknown
            .to_string()
            .contains("base \"nope\" names no commit"),
        "{unknown}"
    );
}

#[tokio::test]
async fn an_empty_repository_and_a_deleted_worktree_get_clear_answers() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().canonicalize().unwrap().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    let trees = Worktrees::new(TaskDirs::new(dir.path(), CargoTarget::PerTask));
    let error = trees
        .create("e1", 1, &empty, &empty, None, &[])
        .await
        .unwrap_err();
    assert!(error.to_string().contains("has no commit yet"), "{error}");

    let repo = Repo::new();
    let trees = worktrees(&repo);
    let tree = trees
        .create("g1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    std::fs::write(Path::new(&tree.dir).join("work.txt"), "lost\n").unwrap();
    std::fs::remove_dir_all(tree.path()).unwrap();
    let review = trees
        .capture(&tree, &Author::of_task("g1"), "g1")
        .await
        .unwrap();
    assert!(review.files.is_empty());
    assert!(
        review.notes[0].contains("deleted by hand"),
        "{:?}",
        review.notes
    );
    trees.discard(&tree).await.unwrap();
    assert_eq!(repo.git(&["branch", "--list", "drydock/*"]), "");
}

#[tokio::test]
async fn a_merged_worktree_is_retired_unless_work_was_added_after() {
    let repo = Repo::new();
    let trees = worktrees(&repo);
    let tree = trees
        .create("m1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    std::fs::write(Path::new(&tree.dir).join("m.txt"), "merged\n").unwrap();
    let review = trees
        .capture(&tree, &Author::of_task("m1"), "m1")
        .await
        .unwrap();
    repo.git(&["merge", "-q", "--ff-only", &review.head]);
    std::fs::write(Path::new(&tree.dir).join("later.txt"), "after the merge\n").unwrap();

    let kept = trees.retire(&tree, &review.head).await.unwrap();

    assert!(
        matches!(&kept, Retired::Kept(why) if why.contains("later.txt")),
        "uncommitted work keeps it: {kept:?}"
    );
    assert!(tree.path().join("later.txt").is_file());
    std::fs::remove_file(tree.path().join("later.txt")).unwrap();
    let retired = trees.retire(&tree, &review.head).await.unwrap();
    assert_eq!(retired, Retired::Removed);
    assert!(!tree.path().exists());
    assert_eq!(
        repo.git(&["branch", "--list", "drydock/*"]),
        "",
        "merged: its branch goes"
    );

    // An unmerged branch stays when its worktree goes.
    let other = trees
        .create("m2", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    std::fs::write(Path::new(&other.dir).join("n.txt"), "not merged\n").unwrap();
    trees
        .capture(&other, &Author::of_task("m2"), "m2")
        .await
        .unwrap();
    let retired = trees.retire(&other, &review.head).await.unwrap();
    assert_eq!(retired, Retired::Removed);
    assert_eq!(
        repo.git(&["branch", "--list", "drydock/*"]).trim(),
        "drydock/task-m2"
    );
}

/// A repository with a submodule at `vendor/lib`, added from a library repository at the
/// URL `url_of` gives for its path; with the library (its folder lives as long) and the URL.
fn with_submodule(url_of: impl Fn(&Path) -> String) -> (Repo, Repo, String) {
    let library = Repo::new();
    library.write("lib.txt", "library\n");
    library.commit_all("lib");
    let repo = Repo::new();
    let url = url_of(&library.path);
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "add",
        "-q",
        &url,
        "vendor/lib",
    ]);
    repo.commit_all("submodule");
    (repo, library, url)
}

#[tokio::test]
async fn submodules_are_checked_out_in_the_worktree() {
    let (repo, _library, _) = with_submodule(|path| path.display().to_string());
    let trees = worktrees(&repo);

    let tree = trees
        .create("s1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();

    assert!(Path::new(&tree.dir).join("vendor/lib/lib.txt").is_file());
    assert!(
        tree.notes.iter().any(|n| n.contains("1 submodule(s)")),
        "{:?}",
        tree.notes
    );
}

#[tokio::test]
async fn a_branchs_submodule_comes_only_from_an_allowed_remote() {
    let (repo, _library, url) = with_submodule(|path| format!("file://{}", path.display()));
    // As if the .gitmodules came with a branch: the repository's config names none.
    repo.git(&["config", "--remove-section", "submodule.vendor/lib"]);

    let refused = worktrees(&repo)
        .create("r1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    assert!(!Path::new(&refused.dir).join("vendor/lib/lib.txt").exists());
    assert!(
        refused
            .notes
            .iter()
            .any(|n| n.contains("vendor/lib was not checked out") && n.contains(&url)),
        "{:?}",
        refused.notes
    );

    let allowed = RemoteRepositories::new(vec!["file:///**".into()]).unwrap();
    let tree = worktrees(&repo)
        .with_remotes(allowed)
        .create("r2", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    assert!(Path::new(&tree.dir).join("vendor/lib/lib.txt").is_file());
    let config = repo.git(&["config", "--list", "--local"]);
    assert!(!config.contains("submodule."), "{config}");
}

#[tokio::test]
async fn an_agents_own_git_directory_is_not_used_for_its_commit() {
    let repo = Repo::new();
    let trees = worktrees(&repo);
    let tree = trees
        .create("g1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    // The agent puts a repository of its own, with a hook, where the .git file was.
    std::fs::remove_file(tree.path().join(".git")).unwrap();
    git(tree.path(), &["init", "-q"]);
    let marker = repo.dir.path().join("ran");
    let hook = tree.path().join(".git/hooks/post-commit");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", marker.display())).unwrap();
    git(
        tree.path(),
        &["symbolic-ref", "HEAD", "refs/heads/drydock/task-g1"],
    );
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(tree.path().join("new.txt"), "new\n").unwrap();

    let review = trees
        .capture(&tree, &Author::of_task("g1"), "g1")
        .await
        .unwrap();

    assert!(!review.committed_for_agent);
    assert!(!marker.exists(), "the agent's hook ran in drydock");
    assert!(
        review
            .notes
            .iter()
            .any(|n| n.contains("not a worktree of the repository")),
        "{:?}",
        review.notes
    );
    let retired = trees.retire(&tree, "main").await.unwrap();
    assert!(
        matches!(&retired, Retired::Kept(why) if why.contains("not a worktree of the repository")),
        "{retired:?}"
    );
    // The person discards it: removed all the same, with its branch.
    trees.discard(&tree).await.unwrap();
    assert!(!tree.path().exists());
    assert_eq!(repo.git(&["branch", "--list", "drydock/*"]).trim(), "");
}

#[test]
fn numstat_and_statuses_are_joined() {
    let numstat = "3\t1\tsrc/a b.rs\0-\t-\timg.png\0";
    let statuses = "M\0src/a b.rs\0A\0img.png\0";
    let files = changed_files(numstat, statuses);
    assert_eq!(files.len(), 2);
    assert_eq!(files[0].path, "src/a b.rs");
    assert_eq!(
        (files[0].insertions, files[0].deletions),
        (Some(3), Some(1))
    );
    assert_eq!(
        (files[1].status.as_str(), files[1].insertions),
        ("added", None)
    );
}

/// Issue 48: a task's row names the branch and folder that discarding deletes. A row that
/// names the person's own branch, or a folder outside drydock's worktrees, deletes nothing.
#[tokio::test]
async fn discarding_deletes_only_what_drydock_made() {
    let repo = Repo::new();
    repo.git(&["branch", "release"]);
    let trees = worktrees(&repo);
    let tree = trees
        .create("d1", 1, &repo.path, &repo.path, None, &[])
        .await
        .unwrap();
    let forged_branch = Worktree {
        branch: "release".into(),
        ..tree.clone()
    };
    let refused = trees.discard(&forged_branch).await.unwrap_err();
    assert!(
        refused.to_string().contains("not a task's branch"),
        "{refused}"
    );
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::write(elsewhere.path().join("keep.txt"), "the person's").unwrap();
    for path in [
        elsewhere.path().display().to_string(),
        format!("{}/../../..", tree.path),
    ] {
        let forged_path = Worktree {
            path,
            ..tree.clone()
        };
        let refused = trees.discard(&forged_path).await.unwrap_err();
        assert!(
            refused.to_string().contains("removes no other folder"),
            "{refused}"
        );
        assert!(trees.retire(&forged_path, "main").await.is_err());
    }
    assert!(elsewhere.path().join("keep.txt").is_file());
    assert!(!repo.git(&["branch", "--list", "release"]).is_empty());
    assert!(tree.path().is_dir());
    trees.discard(&tree).await.unwrap();
    assert!(!tree.path().exists());
}
