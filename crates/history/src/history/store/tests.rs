use super::*;

fn problem(message: &str, file: &str) -> (Problem, String, String) {
    let problem = Problem {
        kind: ProblemKind::Error,
        code: Some("E0502".into()),
        test: None,
        message: message.into(),
        file: Some(file.into()),
        line: Some(4),
        text: format!("error[E0502]: {message}"),
    };
    let (identity, family) = (problem.identity("cargo"), problem.family("cargo"));
    (problem, identity, family)
}

fn content(text: &str) -> Content {
    Content {
        hash: crate::history::snapshot::hash(text.as_bytes()),
        bytes: text.as_bytes().to_vec(),
    }
}

fn run<'a>(at_ms: u64, manifest: &'a Manifest, contents: &'a [Content]) -> NewRun<'a> {
    NewRun {
        at_ms,
        project: "/p",
        toolchain: "cargo",
        tool: "compile",
        check_key: "compile",
        arguments: "{}",
        status: "failed",
        complete: true,
        duration_ms: 10,
        client: Some("claude-code"),
        head: None,
        manifest: Some(manifest),
        contents,
    }
}

#[test]
fn the_files_are_private_and_forgetting_leaves_nothing_readable() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("history.sqlite3");
    let store = HistoryStore::open(&path).unwrap();
    let secret = content("the-forgotten-file-content\n");
    let manifest = Manifest::from([("a".to_string(), secret.hash.clone())]);
    store
        .record(
            &run(1000, &manifest, std::slice::from_ref(&secret)),
            &[problem("the-forgotten-message", "a")],
        )
        .unwrap();
    let files = || {
        std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect::<Vec<_>>()
    };
    assert!(files().len() >= 2, "{:?}", files());
    for file in files() {
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o077, 0, "{} is {mode:o}", file.display());
    }

    assert_eq!(store.forget(Some("/p")).unwrap(), (1, 1));
    for file in files() {
        let bytes = std::fs::read(&file).unwrap();
        for word in ["the-forgotten-file-content", "the-forgotten-message"] {
            let found = bytes.windows(word.len()).any(|w| w == word.as_bytes());
            assert!(!found, "{word} is still in {}", file.display());
        }
    }
}

#[test]
fn a_problem_opens_is_resolved_by_the_next_run_without_it_with_its_fix_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let store = HistoryStore::open(&dir.path().join("history.sqlite3")).unwrap();
    let broken = content("let r = &v;\nv.push(1);\n");
    let fixed = content("v.push(1);\nlet r = &v;\n");
    let before = Manifest::from([("src/lib.rs".to_string(), broken.hash.clone())]);
    let after = Manifest::from([("src/lib.rs".to_string(), fixed.hash.clone())]);
    let borrow = problem("cannot borrow `v` as mutable", "src/lib.rs");

    let first = store
        .record(
            &run(1000, &before, std::slice::from_ref(&broken)),
            std::slice::from_ref(&borrow),
        )
        .unwrap();
    assert_eq!(first.opened.len(), 1);
    let id = first.opened[0];
    let again = store
        .record(&run(1500, &before, &[]), std::slice::from_ref(&borrow))
        .unwrap();
    assert!(again.opened.is_empty() && again.resolved.is_empty());

    // A run stopped short resolves nothing.
    let stopped = NewRun {
        complete: false,
        ..run(1800, &after, std::slice::from_ref(&fixed))
    };
    assert!(store.record(&stopped, &[]).unwrap().resolved.is_empty());

    let passing = store.record(&run(2000, &after, &[]), &[]).unwrap();
    assert_eq!(passing.resolved, [id]);
    let remembered = store.problem(id).unwrap().unwrap();
    assert_eq!(remembered.seen, 2);
    assert_eq!(remembered.resolved_ms, Some(2000));
    let fix = remembered.fix.unwrap();
    assert_eq!(fix.files, ["src/lib.rs"]);
    assert!(
        fix.diff.contains("+v.push(1);\n let r = &v;\n-v.push(1);"),
        "{}",
        fix.diff
    );

    let elsewhere = problem("cannot borrow `list` as mutable", "src/other.rs");
    let family = store.fixed_in_family(&elsewhere.2, "/p", 3).unwrap();
    assert_eq!(family.iter().map(|p| p.id).collect::<Vec<_>>(), [id]);
    assert_eq!(store.text_matches("\"borrow\"", 5).unwrap(), [id]);

    let back = store
        .record(&run(3000, &before, &[]), std::slice::from_ref(&borrow))
        .unwrap();
    assert_eq!(back.opened, [id], "the same problem back is reopened");
    assert_eq!(store.problem(id).unwrap().unwrap().resolved_ms, None);
}

#[test]
fn forgetting_and_pruning_take_runs_problems_and_their_contents() {
    let dir = tempfile::tempdir().unwrap();
    let store = HistoryStore::open(&dir.path().join("history.sqlite3")).unwrap();
    let old = content("old\n");
    let new = content("new\n");
    let m_old = Manifest::from([("a".to_string(), old.hash.clone())]);
    let m_new = Manifest::from([("a".to_string(), new.hash.clone())]);
    store
        .record(
            &run(1000, &m_old, std::slice::from_ref(&old)),
            &[problem("x", "a")],
        )
        .unwrap();
    store
        .record(
            &run(5000, &m_new, std::slice::from_ref(&new)),
            &[problem("y", "a")],
        )
        .unwrap();
    assert_eq!(store.sizes().unwrap().0, 2);

    // Older than 2 s at 6 s: the first run goes, and the content only it referred to;
    // its problem stays, resolved by the run that is kept (its fix is kept as text).
    assert_eq!(store.prune(6000, 2000, usize::MAX).unwrap(), 1);
    let (runs, problems, contents, _) = store.sizes().unwrap();
    assert_eq!((runs, problems, contents), (1, 2, 1));
    assert!(!store.has_content(&old.hash).unwrap() && store.has_content(&new.hash).unwrap());
    // Once the run that resolved it goes too, so does the problem.
    assert_eq!(store.prune(9000, 2000, usize::MAX).unwrap(), 1);
    assert_eq!(store.sizes().unwrap(), (0, 0, 0, 0));

    store
        .record(
            &run(10_000, &m_new, std::slice::from_ref(&new)),
            &[problem("z", "a")],
        )
        .unwrap();
    assert_eq!(store.forget(Some("/elsewhere")).unwrap(), (0, 0));
    assert_eq!(store.forget(Some("/p")).unwrap(), (1, 1));
    assert_eq!(store.sizes().unwrap(), (0, 0, 0, 0));
    assert!(store.text_matches("\"z\"", 5).unwrap().is_empty());
}
