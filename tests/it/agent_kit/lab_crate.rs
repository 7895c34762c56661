//! A git repository holding a small cargo crate, for the suites and benchmarks whose tasks
//! change one.

use std::path::Path;
use std::process::Command;

/// `git ARGS` in `dir`, with an identity of its own; its output.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=Person",
            "-c",
            "user.email=person@example.test",
        ])
        .args(args)
        .current_dir(dir)
        .env("LC_ALL", "C")
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Makes `dir` a git repository holding the cargo crate `lab` with `lib` as its
/// `src/lib.rs`, and `more` files, committed on `main`.
pub fn lab_crate(dir: &Path, lib: &str, more: &[(&str, &str)]) {
    let files = [
        (
            "Cargo.toml",
            "[package]\nname = \"lab\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
        ),
        ("src/lib.rs", lib),
        (".gitignore", "/target\n"),
    ];
    for (name, text) in files.iter().chain(more) {
        let file = dir.join(name);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, text).unwrap();
    }
    let locked = Command::new(std::env::var("CARGO").expect("run by cargo"))
        .args(["generate-lockfile", "--offline"])
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(locked.status.success(), "{locked:?}");
    git(dir, &["init", "-q", "-b", "main"]);
    git(dir, &["add", "-A"]);
    git(dir, &["commit", "-qm", "the lab crate"]);
}
