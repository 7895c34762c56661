use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use super::*;

fn fifo(path: &Path) {
    nix::unistd::mkfifo(path, Mode::from_bits_truncate(0o644)).unwrap();
}

#[test]
fn a_regular_file_below_the_tree_is_read_within_its_limit() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/lib.rs"), "fn main() {}\n").unwrap();
    let tree = Tree::open(dir.path()).unwrap();
    assert_eq!(
        tree.read_text(Path::new("src/lib.rs"), 100).unwrap(),
        "fn main() {}\n"
    );
    assert_eq!(
        tree.read_text(Path::new("./src/lib.rs"), 100).unwrap(),
        "fn main() {}\n"
    );
    let big = tree.read(Path::new("src/lib.rs"), 5).unwrap_err();
    assert!(matches!(big, Refused::TooLarge(_, 5)), "{big}");
    let missing = tree.read(Path::new("nothing"), 5).unwrap_err();
    assert!(missing.is_missing(), "{missing}");
}

#[test]
fn links_fifos_devices_and_paths_that_leave_are_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let secret = outside.path().join("id_ed25519");
    std::fs::write(&secret, "secret").unwrap();
    let root = dir.path();
    std::fs::create_dir(root.join("src")).unwrap();
    symlink(&secret, root.join("key")).unwrap();
    symlink("../key", root.join("src/relative-key")).unwrap();
    symlink(outside.path(), root.join("linked-folder")).unwrap();
    symlink("/dev/zero", root.join("zero")).unwrap();
    fifo(&root.join("pipe"));
    let tree = Tree::open(root).unwrap();
    for (name, why) in [
        ("key", "a link out"),
        ("src/relative-key", "a link inside"),
        ("linked-folder/id_ed25519", "a folder that is a link"),
        ("zero", "a link to a device"),
        ("pipe", "a FIFO"),
        ("src", "a folder"),
    ] {
        let refused = tree.read(Path::new(name), 1 << 20).unwrap_err();
        assert!(
            matches!(refused, Refused::NotRegular(_)),
            "{why}: {refused}"
        );
    }
    for name in ["../id_ed25519", "/etc/passwd", "", "src/../.."] {
        let refused = tree.read(Path::new(name), 100).unwrap_err();
        assert!(matches!(refused, Refused::NotBelow(_)), "{name}: {refused}");
    }
    let fifo_file = read_file(&root.join("pipe"), 100).unwrap_err();
    assert!(matches!(fifo_file, Refused::NotRegular(_)), "{fifo_file}");
    let zero = read_file(&root.join("zero"), 100).unwrap_err();
    assert!(matches!(zero, Refused::NotRegular(_)), "{zero}");
    let direct = read_file(Path::new("/dev/zero"), 100).unwrap_err();
    assert!(matches!(direct, Refused::NotRegular(_)), "{direct}");
}

#[test]
fn the_walk_for_old_kernels_refuses_links_as_openat2_does() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret"), "secret").unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    std::fs::write(dir.path().join("src/a.rs"), "a").unwrap();
    symlink(outside.path(), dir.path().join("out")).unwrap();
    symlink(outside.path().join("secret"), dir.path().join("src/secret")).unwrap();
    let tree = Tree::open(dir.path()).unwrap();
    assert!(walk(tree.root.as_fd(), Path::new("src/a.rs"), read_flags()).is_ok());
    assert!(walk(tree.root.as_fd(), Path::new("out/secret"), read_flags()).is_err());
    assert!(walk(tree.root.as_fd(), Path::new("src/secret"), read_flags()).is_err());
}

#[test]
fn a_write_replaces_a_planted_link_instead_of_writing_through_it() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "the person's").unwrap();
    let root = dir.path();
    symlink(&victim, root.join("HEAD")).unwrap();
    std::fs::create_dir(root.join("refs")).unwrap();
    symlink(outside.path(), root.join("refs/heads")).unwrap();
    let tree = Tree::open(root).unwrap();

    tree.write(Path::new("HEAD"), b"ref: refs/heads/main\n", 0o644)
        .unwrap();
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "the person's");
    assert_eq!(
        std::fs::read_to_string(root.join("HEAD")).unwrap(),
        "ref: refs/heads/main\n"
    );
    assert!(
        !std::fs::symlink_metadata(root.join("HEAD"))
            .unwrap()
            .is_symlink()
    );

    tree.write(Path::new("refs/heads/main"), b"abc\n", 0o644)
        .unwrap();
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 1);
    assert!(
        std::fs::symlink_metadata(root.join("refs/heads"))
            .unwrap()
            .is_dir()
    );
    assert_eq!(
        std::fs::read_to_string(root.join("refs/heads/main")).unwrap(),
        "abc\n"
    );

    tree.write(Path::new("logs/refs/heads/x"), b"", 0o600)
        .unwrap();
    let mode = std::fs::metadata(root.join("logs/refs/heads/x"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    let names: Vec<_> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".drydock-")),
        "{names:?}"
    );
}

#[test]
fn a_copy_in_reads_its_source_bounded_and_writes_below() {
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("settings.json");
    std::fs::write(&source, "{}").unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir(&home).unwrap();
    let tree = Tree::open(&home).unwrap();
    tree.copy_in(&source, Path::new(".claude/settings.json"), 100, 0o600)
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/settings.json")).unwrap(),
        "{}"
    );
    let big = tree.copy_in(&source, Path::new("x"), 1, 0o600).unwrap_err();
    assert!(matches!(big, Refused::TooLarge(..)), "{big}");
}

#[test]
fn a_printed_path_is_kept_only_when_it_stays_below() {
    assert_eq!(printed_path("lib/a.ex"), Some(PathBuf::from("lib/a.ex")));
    assert_eq!(
        printed_path("./lib/a b.ex"),
        Some(PathBuf::from("lib/a b.ex"))
    );
    for printed in ["/etc/passwd", "../secret", "lib/../../x", "", ".", "~/x/.."] {
        assert_eq!(printed_path(printed), None, "{printed:?}");
    }
}
