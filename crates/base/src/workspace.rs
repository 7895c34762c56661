//! Resolve a caller's project path against the allowlist: canonical, inside a root, no escapes.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WorkspaceError {
    #[error("{argument} is empty; the allowed roots are: {roots}")]
    Empty {
        argument: PathArgument,
        roots: String,
    },
    #[error("{argument} contains a NUL byte; the allowed roots are: {roots}")]
    Nul {
        argument: PathArgument,
        roots: String,
    },
    #[error(
        "{argument} `{path}` contains `..`, which is refused; pass the path without it, inside the allowed roots: {roots}"
    )]
    ParentComponent {
        argument: PathArgument,
        path: String,
        roots: String,
    },
    #[error("{argument} `{path}` does not exist; the allowed roots are: {roots}")]
    Missing {
        argument: PathArgument,
        path: String,
        roots: String,
    },
    #[error("{argument} `{path}` is a file, not a directory; the allowed roots are: {roots}")]
    NotADirectory {
        argument: PathArgument,
        path: String,
        roots: String,
    },
    #[error("{argument} `{path}` resolves to {resolved}, outside the allowed roots: {roots}")]
    OutsideRoots {
        argument: PathArgument,
        path: String,
        resolved: String,
        roots: String,
    },
    #[error("{path} is not a {names} project (no {manifests})")]
    NotAProject {
        path: String,
        /// "cargo or mix"
        names: String,
        /// "Cargo.toml or mix.exs"
        manifests: String,
    },
    #[error("{path} has both {manifests}; name the toolchain to use (`toolchain`: {names})")]
    Ambiguous {
        path: String,
        /// "Cargo.toml and mix.exs"
        manifests: String,
        /// "\"cargo\" or \"mix\""
        names: String,
    },
    #[error("{path} has no {manifest}, so it is not a {toolchain} project")]
    MissingManifest {
        path: String,
        manifest: &'static str,
        toolchain: &'static str,
    },
}

/// The request argument a path came in, so an error names what the caller wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathArgument {
    ProjectPath,
    Cwd,
    Paths,
}

impl std::fmt::Display for PathArgument {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            PathArgument::ProjectPath => "project_path",
            PathArgument::Cwd => "cwd",
            PathArgument::Paths => "paths",
        })
    }
}

/// What a project is, known by the file its directory holds: a toolchain (`toolchain`), or
/// an ecosystem of docs (`docs`).
pub trait ProjectKind: Copy + PartialEq {
    fn name(&self) -> &'static str;
    /// The file that makes a directory a project of this kind.
    fn manifest(&self) -> &'static str;
}

/// A project directory that lies inside an allowed root, with its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project<K> {
    pub root: PathBuf,
    pub kind: K,
}

/// Where a project lies, as any machine can name it: the name of the allowed root it is in
/// (the root directory's own name) and its path below that root. Another host finds the
/// project below its own root of that name.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct ProjectPlace {
    pub root: String,
    /// Below the root ("" for the root itself).
    pub path: String,
}

/// The allowed roots (already canonical, see `Config`).
#[derive(Debug, Clone)]
pub struct Workspace {
    roots: Vec<PathBuf>,
    /// Directories drydock makes itself (tasks' worktrees), allowed too once they exist;
    /// canonicalised when a path is checked, and not listed in messages.
    managed: Vec<PathBuf>,
}

impl Workspace {
    pub fn new(roots: Vec<PathBuf>) -> Self {
        Self {
            roots,
            managed: Vec::new(),
        }
    }

    /// The same roots, and `dir` once it exists.
    pub fn with_managed(mut self, dir: PathBuf) -> Self {
        self.managed.push(dir);
        self
    }

    fn allows(&self, resolved: &Path) -> bool {
        self.roots.iter().any(|root| resolved.starts_with(root))
            || self
                .managed
                .iter()
                .filter_map(|dir| dir.canonicalize().ok())
                .any(|dir| resolved.starts_with(dir))
    }

    /// `dir` (canonical) as a place any host can find: the root it lies in, by name.
    pub fn place_of(&self, dir: &Path) -> Option<ProjectPlace> {
        let root = self.roots.iter().find(|root| dir.starts_with(root))?;
        let name = root.file_name()?.to_str()?.to_string();
        let below = dir.strip_prefix(root).ok()?.to_str()?.to_string();
        Some(ProjectPlace {
            root: name,
            path: below,
        })
    }

    /// The directory `place` names here: below this machine's allowed root of that name, if
    /// there is one and the directory exists.
    pub fn find_place(&self, place: &ProjectPlace) -> Option<PathBuf> {
        let below = Path::new(&place.path);
        if below
            .components()
            .any(|c| !matches!(c, Component::Normal(_)))
        {
            return None;
        }
        self.roots
            .iter()
            .filter(|root| root.file_name().and_then(|n| n.to_str()) == Some(place.root.as_str()))
            .map(|root| root.join(below))
            .filter_map(|dir| dir.canonicalize().ok())
            .find(|dir| dir.is_dir() && self.allows(dir))
    }

    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// A directory inside an allowed root. Relative paths are taken from the first root.
    pub fn resolve_dir(
        &self,
        argument: PathArgument,
        raw: &str,
    ) -> Result<PathBuf, WorkspaceError> {
        let roots = || self.roots_text();
        if raw.trim().is_empty() {
            return Err(WorkspaceError::Empty {
                argument,
                roots: roots(),
            });
        }
        if raw.contains('\0') {
            return Err(WorkspaceError::Nul {
                argument,
                roots: roots(),
            });
        }
        let path = expand_home(Path::new(raw), &|name| std::env::var(name).ok());
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(WorkspaceError::ParentComponent {
                argument,
                path: raw.into(),
                roots: roots(),
            });
        }
        let absolute = match (path.is_absolute(), self.roots.first()) {
            (true, _) => path,
            (false, Some(first)) => first.join(path),
            (false, None) => return Err(self.outside(argument, raw, &path)),
        };
        let resolved = absolute
            .canonicalize()
            .map_err(|_| self.missing(argument, raw))?;
        if !self.allows(&resolved) {
            return Err(self.outside(argument, raw, &resolved));
        }
        if !resolved.is_dir() {
            return Err(WorkspaceError::NotADirectory {
                argument,
                path: raw.into(),
                roots: roots(),
            });
        }
        Ok(resolved)
    }

    /// The error for a path that does not exist.
    pub fn missing(&self, argument: PathArgument, raw: &str) -> WorkspaceError {
        WorkspaceError::Missing {
            argument,
            path: raw.into(),
            roots: self.roots_text(),
        }
    }

    /// A project inside an allowed root, of one of `kinds` (the first whose manifest its
    /// directory holds); `wanted` settles a directory that holds several.
    pub fn resolve_project<K: ProjectKind>(
        &self,
        raw: &str,
        wanted: Option<K>,
        kinds: &[K],
    ) -> Result<Project<K>, WorkspaceError> {
        let root = self.resolve_dir(PathArgument::ProjectPath, raw)?;
        let path = root.display().to_string();
        let has = |kind: &K| root.join(kind.manifest()).is_file();
        let found: Vec<K> = kinds.iter().copied().filter(has).collect();
        let kind = match (wanted, found.as_slice()) {
            (Some(kind), _) if has(&kind) => kind,
            (Some(kind), _) => {
                return Err(WorkspaceError::MissingManifest {
                    path,
                    manifest: kind.manifest(),
                    toolchain: kind.name(),
                });
            }
            (None, [kind]) => *kind,
            (None, []) => {
                return Err(WorkspaceError::NotAProject {
                    path,
                    names: either(kinds.iter().map(|k| k.name())),
                    manifests: either(kinds.iter().map(|k| k.manifest())),
                });
            }
            (None, several) => {
                return Err(WorkspaceError::Ambiguous {
                    path,
                    manifests: several
                        .iter()
                        .map(|k| k.manifest())
                        .collect::<Vec<_>>()
                        .join(" and "),
                    names: either(several.iter().map(|k| format!("{:?}", k.name()))),
                });
            }
        };
        Ok(Project { root, kind })
    }

    fn outside(&self, argument: PathArgument, raw: &str, resolved: &Path) -> WorkspaceError {
        WorkspaceError::OutsideRoots {
            argument,
            path: raw.into(),
            resolved: resolved.display().to_string(),
            roots: self.roots_text(),
        }
    }

    fn roots_text(&self) -> String {
        if self.roots.is_empty() {
            return "(none)".into();
        }
        self.roots
            .iter()
            .map(|r| r.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// "a", "a or b", "a, b or c".
fn either<S: AsRef<str>>(items: impl Iterator<Item = S>) -> String {
    let items: Vec<S> = items.collect();
    match items.split_last() {
        None => String::new(),
        Some((last, [])) => last.as_ref().to_string(),
        Some((last, rest)) => {
            let rest: Vec<&str> = rest.iter().map(AsRef::as_ref).collect();
            format!("{} or {}", rest.join(", "), last.as_ref())
        }
    }
}

/// `~` and `~/x` become the home directory (from $HOME as `env` gives it, as a shell would).
pub fn expand_home(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    let Ok(rest) = path.strip_prefix("~") else {
        return path.to_path_buf();
    };
    match env("HOME") {
        Some(home) => PathBuf::from(home).join(rest),
        None => path.to_path_buf(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    /// The two toolchains the fixture's projects are of.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Kind {
        Cargo,
        Mix,
    }

    impl ProjectKind for Kind {
        fn name(&self) -> &'static str {
            match self {
                Kind::Cargo => "cargo",
                Kind::Mix => "mix",
            }
        }

        fn manifest(&self) -> &'static str {
            match self {
                Kind::Cargo => "Cargo.toml",
                Kind::Mix => "mix.exs",
            }
        }
    }

    const KINDS: &[Kind] = &[Kind::Cargo, Kind::Mix];

    fn resolve(
        ws: &Workspace,
        raw: &str,
        wanted: Option<Kind>,
    ) -> Result<Project<Kind>, WorkspaceError> {
        ws.resolve_project(raw, wanted, KINDS)
    }

    #[test]
    fn a_place_names_a_project_by_its_roots_name_and_another_machine_finds_it_there() {
        let here = fixture();
        let app = here.root.join("app");
        let place = Workspace::new(vec![here.root.clone()])
            .place_of(&app)
            .unwrap();
        assert_eq!(
            place,
            ProjectPlace {
                root: "root".into(),
                path: "app".into()
            }
        );
        assert_eq!(
            Workspace::new(vec![here.root.clone()]).place_of(&here.outside),
            None
        );

        let there = tempfile::tempdir().unwrap();
        let other_root = there.path().canonicalize().unwrap().join("root");
        fs::create_dir_all(other_root.join("app")).unwrap();
        let other = Workspace::new(vec![other_root.clone()]);
        assert_eq!(other.find_place(&place), Some(other_root.join("app")));
        let missing = ProjectPlace {
            root: "root".into(),
            path: "ex".into(),
        };
        assert_eq!(other.find_place(&missing), None, "no such directory there");
        let elsewhere = ProjectPlace {
            root: "code".into(),
            path: "app".into(),
        };
        assert_eq!(other.find_place(&elsewhere), None, "no root of that name");
        let climbing = ProjectPlace {
            root: "root".into(),
            path: "../root/app".into(),
        };
        assert_eq!(other.find_place(&climbing), None, "`..` is refused");
        fs::create_dir_all(there.path().join("outside")).unwrap();
        std::os::unix::fs::symlink(there.path().join("outside"), other_root.join("link")).unwrap();
        let escaping = ProjectPlace {
            root: "root".into(),
            path: "link".into(),
        };
        assert_eq!(
            other.find_place(&escaping),
            None,
            "a symlink out of the root"
        );
    }

    struct Fixture {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("root");
        let outside = base.join("outside");
        for d in [&root, &outside] {
            fs::create_dir_all(d).unwrap();
        }
        fs::create_dir_all(root.join("app")).unwrap();
        fs::write(root.join("app/Cargo.toml"), "").unwrap();
        fs::create_dir_all(root.join("ex")).unwrap();
        fs::write(root.join("ex/mix.exs"), "").unwrap();
        fs::create_dir_all(root.join("both")).unwrap();
        fs::write(root.join("both/Cargo.toml"), "").unwrap();
        fs::write(root.join("both/mix.exs"), "").unwrap();
        fs::create_dir_all(root.join("plain")).unwrap();
        fs::write(root.join("file.txt"), "").unwrap();
        fs::create_dir_all(outside.join("secret")).unwrap();
        fs::write(outside.join("secret/Cargo.toml"), "").unwrap();
        std::os::unix::fs::symlink(outside.join("secret"), root.join("escape")).unwrap();
        std::os::unix::fs::symlink(root.join("app"), root.join("alias")).unwrap();
        Fixture {
            _dir: dir,
            root,
            outside,
        }
    }

    fn workspace(f: &Fixture) -> Workspace {
        Workspace::new(vec![f.root.clone()])
    }

    #[test]
    fn resolves_absolute_relative_and_symlinked_paths_inside_a_root() {
        let f = fixture();
        let ws = workspace(&f);
        let abs = resolve(&ws, f.root.join("app").to_str().unwrap(), None).unwrap();
        assert_eq!(abs.root, f.root.join("app"));
        assert_eq!(abs.kind, Kind::Cargo);
        assert_eq!(resolve(&ws, "app", None).unwrap(), abs);
        assert_eq!(resolve(&ws, "alias", None).unwrap(), abs);
        assert_eq!(resolve(&ws, "ex", None).unwrap().kind, Kind::Mix);
    }

    #[test]
    fn refuses_escapes() {
        let f = fixture();
        let ws = workspace(&f);
        assert!(matches!(
            resolve(&ws, "escape", None),
            Err(WorkspaceError::OutsideRoots { .. })
        ));
        assert!(matches!(
            resolve(&ws, f.outside.join("secret").to_str().unwrap(), None),
            Err(WorkspaceError::OutsideRoots { .. })
        ));
        assert!(matches!(
            resolve(&ws, "app/../app", None),
            Err(WorkspaceError::ParentComponent { .. })
        ));
        let message = resolve(&ws, "/", None).unwrap_err().to_string();
        assert!(message.contains(f.root.to_str().unwrap()), "{message}");
    }

    #[test]
    fn refuses_bad_input() {
        let f = fixture();
        let ws = workspace(&f);
        let roots = f.root.display().to_string();
        let cwd = |raw: &str| ws.resolve_dir(PathArgument::Cwd, raw);
        assert_eq!(
            cwd(""),
            Err(WorkspaceError::Empty {
                argument: PathArgument::Cwd,
                roots: roots.clone()
            })
        );
        assert_eq!(
            cwd("a\0b"),
            Err(WorkspaceError::Nul {
                argument: PathArgument::Cwd,
                roots: roots.clone()
            })
        );
        assert!(matches!(cwd("nope"), Err(WorkspaceError::Missing { .. })));
        assert!(matches!(
            cwd("file.txt"),
            Err(WorkspaceError::NotADirectory { .. })
        ));
        for bad in ["", "a\0b", "nope", "file.txt", "app/../app", "/etc/passwd"] {
            let message = cwd(bad).unwrap_err().to_string();
            assert!(message.contains(&roots), "{bad:?}: {message}");
            assert!(
                message.starts_with("cwd "),
                "the argument is named: {message}"
            );
        }
        let err = resolve(&ws, "plain", None).unwrap_err();
        assert!(
            err.to_string()
                .ends_with("is not a cargo or mix project (no Cargo.toml or mix.exs)"),
            "{err}"
        );
    }

    #[test]
    fn a_managed_directory_is_allowed_once_it_exists() {
        let f = fixture();
        let managed = f.outside.join("worktrees");
        let ws = workspace(&f).with_managed(managed.clone());
        let project = managed.join("repo/t1");
        assert!(matches!(
            ws.resolve_dir(PathArgument::ProjectPath, project.to_str().unwrap()),
            Err(WorkspaceError::Missing { .. })
        ));
        fs::create_dir_all(&project).unwrap();
        fs::write(project.join("Cargo.toml"), "").unwrap();
        assert_eq!(
            resolve(&ws, project.to_str().unwrap(), None).unwrap().root,
            project
        );
        let message = resolve(&ws, "/", None).unwrap_err().to_string();
        assert!(!message.contains("worktrees"), "{message}");
        assert!(matches!(
            resolve(&ws, f.outside.join("secret").to_str().unwrap(), None),
            Err(WorkspaceError::OutsideRoots { .. })
        ));
    }

    #[test]
    fn both_manifests_need_a_choice() {
        let f = fixture();
        let ws = workspace(&f);
        let message = resolve(&ws, "both", None).unwrap_err().to_string();
        assert!(
            message.ends_with(
                "has both Cargo.toml and mix.exs; name the toolchain to use (`toolchain`: \"cargo\" or \"mix\")"
            ),
            "{message}"
        );
        assert_eq!(
            resolve(&ws, "both", Some(Kind::Mix)).unwrap().kind,
            Kind::Mix
        );
        assert!(matches!(
            resolve(&ws, "app", Some(Kind::Mix)),
            Err(WorkspaceError::MissingManifest { .. })
        ));
    }
}
