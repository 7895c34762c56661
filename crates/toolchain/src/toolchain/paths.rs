//! Paths as the tools print them, made relative to the project.

use std::path::{Component, Path, PathBuf};

/// Maps the paths tools print (relative to the workspace root, or absolute) to paths
/// relative to the project root when they lie inside it, else absolute.
#[derive(Debug, Clone)]
pub struct PathMapper {
    workspace_root: PathBuf,
    project_root: PathBuf,
}

impl PathMapper {
    pub fn new(workspace_root: &Path, project_root: &Path) -> Self {
        Self {
            workspace_root: normalize(workspace_root),
            project_root: normalize(project_root),
        }
    }

    pub fn map(&self, file: &str) -> String {
        let absolute = self.absolute(file);
        match absolute.strip_prefix(&self.project_root) {
            Ok(relative) if !relative.as_os_str().is_empty() => path_string(relative),
            _ => path_string(&absolute),
        }
    }

    /// Whether the file is the user's code rather than std's or a dependency's
    /// (`<anon>`-style pseudo files are neither).
    pub fn is_in_workspace(&self, file: &str) -> bool {
        !file.starts_with('<') && self.absolute(file).starts_with(&self.workspace_root)
    }

    fn absolute(&self, file: &str) -> PathBuf {
        normalize(&self.workspace_root.join(file))
    }
}

/// Resolves `.` and `..` lexically: the files may not exist any more when we map them.
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

fn path_string(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}
