//! The test projects in test-projects/, copies of them, and directories outside every
//! allowed root.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `test-projects/NAME`, canonical.
pub fn test_project(name: &str) -> PathBuf {
    repo_root()
        .join("test-projects")
        .join(name)
        .canonicalize()
        .unwrap_or_else(|e| panic!("test project {name}: {e}"))
}

pub fn test_projects_root() -> PathBuf {
    repo_root().join("test-projects").canonicalize().unwrap()
}

pub fn path_arg(path: &Path) -> Value {
    json!(path.to_str().unwrap())
}

/// Copy a test project (without its target dir) into a fresh temporary directory.
pub fn copy_project(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let source = test_project(name);
    let dest = dir.path().canonicalize().unwrap().join(name);
    for entry in walkdir::WalkDir::new(&source)
        .into_iter()
        .filter_entry(|e| e.file_name() != "target" && e.file_name() != "_build")
    {
        let entry = entry.unwrap();
        let to = dest.join(entry.path().strip_prefix(&source).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
        } else {
            std::fs::copy(entry.path(), &to).unwrap();
        }
    }
    (dir, dest)
}

/// A directory outside every allowed root (`root`, in a temporary directory of its own) whose
/// files write `MARKER` there if drydock ever runs, builds or loads one of them.
pub struct Outside {
    _dir: tempfile::TempDir,
    pub root: PathBuf,
}

impl Outside {
    pub fn new(name: &str) -> Outside {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap().join(name);
        std::fs::create_dir_all(&root).unwrap();
        Outside { _dir: dir, root }
    }

    pub fn file(&self, name: &str) -> String {
        self.root.join(name).display().to_string()
    }

    pub fn marker(&self) -> PathBuf {
        self.root.join("MARKER")
    }
}
