//! scripts/fuzz.sh's corpora: outside the repository, made in one command from the seeds and
//! regressions the repository keeps and from the corpus its history holds.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};

use crate::support::repo_root;

fn names(dir: &Path) -> BTreeSet<String> {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn make_corpus(checkout: &Path, work: &Path, target: &str) -> Output {
    let output = Command::new("bash")
        .arg(checkout.join("scripts/fuzz.sh"))
        .args(["corpus", target])
        .env("FUZZ_WORK", work)
        .current_dir(checkout)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

#[test]
fn one_command_makes_a_corpus_from_the_seeds_the_regressions_and_the_history() {
    let root = repo_root();
    let work = tempfile::tempdir().unwrap();
    let target = "remote_url";
    make_corpus(&root, work.path(), target);
    let corpus = names(&work.path().join("corpus").join(target));
    let seeds = names(&root.join("fuzz/seeds").join(target));
    let regressions = names(&root.join("fuzz/regressions").join(target));
    assert!(!seeds.is_empty() && !regressions.is_empty());
    assert!(corpus.is_superset(&seeds), "{corpus:?}");
    assert!(corpus.is_superset(&regressions), "{corpus:?}");
    // The corpus the campaigns grew, from the commit that last held it.
    assert!(
        corpus.len() > 400,
        "{} inputs: the history's corpus is missing",
        corpus.len()
    );
    assert!(
        !root.join("fuzz/corpus").exists(),
        "the corpora stay outside the repository"
    );
}

#[test]
fn a_clone_without_the_history_starts_from_the_seeds_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let clone = dir.path().join("clone");
    let source = format!("file://{}", repo_root().display());
    let cloned = Command::new("git")
        .args(["clone", "-q", "--depth", "1", &source])
        .arg(&clone)
        .output()
        .unwrap();
    assert!(
        cloned.status.success(),
        "{}",
        String::from_utf8_lossy(&cloned.stderr)
    );
    let work = dir.path().join("work");
    let target = "json_rpc";
    let said = make_corpus(&clone, &work, target);
    let stderr = String::from_utf8_lossy(&said.stderr);
    assert!(
        stderr.contains("its corpus starts from the seeds"),
        "{stderr}"
    );
    let corpus = names(&work.join("corpus").join(target));
    let seeds = names(&clone.join("fuzz/seeds").join(target));
    assert_eq!(corpus, seeds);
}
