//! scripts/release.sh: the tarball a team installs, the same bytes from the same commit.

use std::path::Path;
use std::process::Command;

use crate::support::repo_root;

/// Runs the release script on `binary`, with `cache` as the cache directory that holds ONNX
/// Runtime, into `out`; returns the tarball's path.
fn package(binary: &Path, cache: &Path, out: &Path) -> std::path::PathBuf {
    let output = Command::new(repo_root().join("scripts/release.sh"))
        .arg("--binary")
        .arg(binary)
        .arg("--out")
        .arg(out)
        .env("XDG_CACHE_HOME", cache)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let printed = String::from_utf8(output.stdout).unwrap();
    std::path::PathBuf::from(printed.trim())
}

fn run(dir: &Path, program: &str, args: &[&str]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn the_tarball_holds_drydock_onnx_runtime_and_checksums_and_is_reproducible() {
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    let ort = cache.join("drydock/ort/libonnxruntime.so.1.31.1");
    std::fs::create_dir_all(ort.parent().unwrap()).unwrap();
    std::fs::write(&ort, b"not really ONNX Runtime").unwrap();
    let binary = dir.path().join("drydock");
    std::fs::copy("/bin/true", &binary).unwrap();

    let first = package(&binary, &cache, &dir.path().join("one"));
    // The inputs touched again and packaged elsewhere: the same bytes.
    std::fs::copy("/bin/true", &binary).unwrap();
    let second = package(&binary, &cache, &dir.path().join("two"));
    assert_eq!(first.file_name(), second.file_name());
    assert_eq!(
        std::fs::read(&first).unwrap(),
        std::fs::read(&second).unwrap()
    );

    let name = first.file_name().unwrap().to_str().unwrap();
    let stem = name.strip_suffix(".tar.gz").unwrap();
    assert!(
        stem.starts_with("drydock-0.") && stem.ends_with("-linux-gnu"),
        "{name}"
    );
    let out = first.parent().unwrap();
    assert!(run(out, "sha256sum", &["-c", &format!("{name}.sha256")]).contains(": OK"));

    let listing = run(out, "tar", &["-tzvf", name]);
    let mut entries: Vec<&str> = listing
        .lines()
        .map(|l| l.rsplit(' ').next().unwrap())
        .collect();
    entries.sort();
    let expected: Vec<String> = [
        "",
        "README.md",
        "SHA256SUMS",
        "drydock",
        "libonnxruntime.so",
    ]
    .iter()
    .map(|f| format!("{stem}/{f}"))
    .collect();
    assert_eq!(entries, expected, "{listing}");
    assert!(listing.lines().all(|l| l.contains(" 0/0 ")), "{listing}");

    run(out, "tar", &["-xzf", name]);
    let unpacked = out.join(stem);
    let sums = run(&unpacked, "sha256sum", &["-c", "SHA256SUMS"]);
    assert_eq!(sums.matches(": OK").count(), 3, "{sums}");
    assert_eq!(
        std::fs::read(unpacked.join("libonnxruntime.so")).unwrap(),
        b"not really ONNX Runtime"
    );

    let refused = Command::new(repo_root().join("scripts/release.sh"))
        .args(["--bianry", "x"])
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown argument --bianry"));
}
