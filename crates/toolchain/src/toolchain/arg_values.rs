//! Checks for the request values that reach a command line: names, feature lists, test tags
//! and paths inside the project.
//!
//! Every check refuses a value that starts with `-`, so no value can be read as an option by
//! the tool it is given to. Callers also pass option values in the `--flag=value` form (or
//! after `--`); the checks make the error clear instead of leaving it to the tool.

use std::path::{Component, Path, PathBuf};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ValueError {
    #[error("{what} is empty")]
    Empty { what: String },
    #[error(
        "{what} {value:?} starts with `-`, so it would be read as an option; expected {expected}"
    )]
    LooksLikeOption {
        what: String,
        value: String,
        expected: &'static str,
    },
    #[error("{what} {value:?} is not {expected}")]
    Malformed {
        what: String,
        value: String,
        expected: &'static str,
    },
    #[error("{what} {value:?} contains `..`; name the path inside the project without it")]
    ParentComponent { what: String, value: String },
    #[error("{what} {value:?} does not exist in the project {project}")]
    Missing {
        what: String,
        value: String,
        project: String,
    },
    #[error("{what} {value:?} resolves to {resolved}, outside the project {project}")]
    OutsideProject {
        what: String,
        value: String,
        resolved: String,
        project: String,
    },
}

/// What a name-like value may be made of, and how an error describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameKind {
    /// A cargo package spec (`serde`, `serde@1.0.200`) or a mix dependency or app name.
    Package,
    /// A cargo target name (`--bin`, `--bench`, `--example`, `--test`).
    Target,
    /// A cargo feature (`json`, `serde/derive`).
    Feature,
    /// An ExUnit tag, optionally with a value (`slow`, `area:math`).
    Tag,
}

impl NameKind {
    fn expected(self) -> &'static str {
        match self {
            NameKind::Package => {
                "a package name or spec (letters, digits and `_-.@:/+#`, e.g. `serde` or `serde@1.0.200`)"
            }
            NameKind::Target => "a target name (letters, digits, `_` and `-`)",
            NameKind::Feature => {
                "a feature name (letters, digits and `_-/+.:`, e.g. `serde/derive`)"
            }
            NameKind::Tag => "a tag, optionally with a value (e.g. `slow` or `area:math`)",
        }
    }

    fn allows(self, c: char) -> bool {
        let extra = match self {
            NameKind::Package => "_-.@:/+#",
            NameKind::Target => "_-",
            NameKind::Feature => "_-/+.:",
            NameKind::Tag => return !c.is_control(),
        };
        c.is_alphanumeric() || extra.contains(c)
    }
}

/// `value` as a name of `kind`; `what` names the argument in the error (e.g. "`package`").
pub fn name<'v>(what: &str, value: &'v str, kind: NameKind) -> Result<&'v str, ValueError> {
    not_an_option(what, value, kind.expected())?;
    if !value.chars().all(|c| kind.allows(c)) {
        return Err(ValueError::Malformed {
            what: what.into(),
            value: value.into(),
            expected: kind.expected(),
        });
    }
    Ok(value)
}

/// Cargo features as one comma-separated value; an item may itself list several,
/// separated by commas or spaces, as cargo's `--features` does.
pub fn features(what: &str, items: &[String]) -> Result<String, ValueError> {
    let mut names = Vec::new();
    for item in items {
        if item.trim().is_empty() {
            return Err(ValueError::Empty { what: what.into() });
        }
        for feature in item.split([',', ' ']).filter(|f| !f.is_empty()) {
            names.push(name(what, feature, NameKind::Feature)?);
        }
    }
    Ok(names.join(","))
}

/// A value that must not start with `-` (free text otherwise).
pub fn not_an_option<'v>(
    what: &str,
    value: &'v str,
    expected: &'static str,
) -> Result<&'v str, ValueError> {
    if value.is_empty() {
        return Err(ValueError::Empty { what: what.into() });
    }
    if value.starts_with('-') {
        return Err(ValueError::LooksLikeOption {
            what: what.into(),
            value: value.into(),
            expected,
        });
    }
    Ok(value)
}

/// An existing file or directory inside the project, relative to it (or absolute), without
/// `..`. Symlinks are resolved before the check. Returns the resolved path.
pub fn project_file(what: &str, project: &Path, value: &str) -> Result<PathBuf, ValueError> {
    let joined = inside_path(what, project, value)?;
    let resolved = joined.canonicalize().map_err(|_| ValueError::Missing {
        what: what.into(),
        value: value.into(),
        project: project.display().to_string(),
    })?;
    within(what, project, value, resolved)
}

/// A file or directory the tool will create inside the project: it need not exist, but
/// the part of it that does (its nearest existing ancestor) must resolve inside the project.
pub fn project_output(what: &str, project: &Path, value: &str) -> Result<PathBuf, ValueError> {
    let joined = inside_path(what, project, value)?;
    let existing = joined
        .ancestors()
        .find(|p| p.symlink_metadata().is_ok())
        .unwrap_or(project);
    // A dangling symlink would let the tool create its target anywhere.
    let resolved = existing.canonicalize().map_err(|_| ValueError::Missing {
        what: what.into(),
        value: value.into(),
        project: project.display().to_string(),
    })?;
    let resolved = within(what, project, value, resolved)?;
    Ok(resolved.join(joined.strip_prefix(existing).unwrap_or(Path::new(""))))
}

/// A mix test path: a file or directory inside the project, optionally with `:LINE`
/// suffixes (`test/math_test.exs:12`).
pub fn test_path(what: &str, project: &Path, value: &str) -> Result<(), ValueError> {
    let file = strip_line_suffixes(value);
    if file.is_empty() {
        return Err(ValueError::Malformed {
            what: what.into(),
            value: value.into(),
            expected: TEST_PATH,
        });
    }
    not_an_option(what, value, TEST_PATH)?;
    project_file(what, project, file).map(|_| ())
}

const TEST_PATH: &str = "a test file or directory inside the project, optionally `file:line`";

fn strip_line_suffixes(value: &str) -> &str {
    let mut file = value;
    while let Some((head, line)) = file.rsplit_once(':')
        && !line.is_empty()
        && line.chars().all(|c| c.is_ascii_digit())
    {
        file = head;
    }
    file
}

/// `value` joined to the project, refused when it could be an option or climbs with `..`.
fn inside_path(what: &str, project: &Path, value: &str) -> Result<PathBuf, ValueError> {
    not_an_option(what, value, "a path inside the project")?;
    if value.contains('\0') {
        return Err(ValueError::Malformed {
            what: what.into(),
            value: value.into(),
            expected: "a path inside the project",
        });
    }
    let path = Path::new(value);
    if path.components().any(|c| c == Component::ParentDir) {
        return Err(ValueError::ParentComponent {
            what: what.into(),
            value: value.into(),
        });
    }
    Ok(project.join(path))
}

fn within(
    what: &str,
    project: &Path,
    value: &str,
    resolved: PathBuf,
) -> Result<PathBuf, ValueError> {
    let project_resolved = project
        .canonicalize()
        .unwrap_or_else(|_| project.to_path_buf());
    if resolved.starts_with(&project_resolved) {
        return Ok(resolved);
    }
    Err(ValueError::OutsideProject {
        what: what.into(),
        value: value.into(),
        resolved: resolved.display().to_string(),
        project: project.display().to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        _dir: tempfile::TempDir,
        project: PathBuf,
        outside: PathBuf,
    }

    fn fixture() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let project = base.join("project");
        let outside = base.join("outside");
        std::fs::create_dir_all(project.join("test")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(project.join("test/math_test.exs"), "").unwrap();
        std::fs::write(outside.join("evil.exs"), "").unwrap();
        std::os::unix::fs::symlink(&outside, project.join("link")).unwrap();
        Fixture {
            _dir: dir,
            project,
            outside,
        }
    }

    #[test]
    fn names_are_refused_when_they_could_be_read_as_options() {
        for (value, kind) in [
            ("serde", NameKind::Package),
            ("serde@1.0.200", NameKind::Package),
            ("ws-core", NameKind::Package),
            ("my_bin", NameKind::Target),
            ("serde/derive", NameKind::Feature),
            ("area:math", NameKind::Tag),
        ] {
            assert_eq!(name("`x`", value, kind), Ok(value), "{value}");
        }
        for (value, kind) in [
            ("--manifest-path=/x/Cargo.toml", NameKind::Package),
            ("-Zunstable-options", NameKind::Package),
            ("", NameKind::Package),
            ("a b", NameKind::Package),
            ("../bin", NameKind::Target),
            ("--logfile=x", NameKind::Tag),
            ("a\nb", NameKind::Tag),
        ] {
            assert!(name("`x`", value, kind).is_err(), "{value:?}");
        }
        let error = name("`package`", "--config=x", NameKind::Package).unwrap_err();
        assert!(
            error.to_string().starts_with(
                "`package` \"--config=x\" starts with `-`, so it would be read as an option"
            ),
            "{error}"
        );
    }

    #[test]
    fn features_are_one_comma_separated_value() {
        let items = ["a".to_string(), "b,c d".to_string(), "dep/x".to_string()];
        assert_eq!(features("`features`", &items).unwrap(), "a,b,c,d,dep/x");
        assert!(features("`features`", &["--config=x".to_string()]).is_err());
        assert!(features("`features`", &["a,-Zx".to_string()]).is_err());
        assert!(features("`features`", &[" ".to_string()]).is_err());
    }

    #[test]
    fn project_files_resolve_inside_the_project() {
        let f = fixture();
        let inside = f.project.join("test/math_test.exs");
        assert_eq!(
            project_file("`-r`", &f.project, "test/math_test.exs"),
            Ok(inside.clone())
        );
        assert_eq!(
            project_file("`-r`", &f.project, inside.to_str().unwrap()),
            Ok(inside)
        );
        let evil = f.outside.join("evil.exs");
        for value in [evil.to_str().unwrap(), "link/evil.exs"] {
            let error = project_file("`-r`", &f.project, value).unwrap_err();
            assert!(
                matches!(error, ValueError::OutsideProject { .. }),
                "{value}: {error}"
            );
        }
        for value in ["../outside/evil.exs", "test/../../outside/evil.exs"] {
            assert!(matches!(
                project_file("`-r`", &f.project, value),
                Err(ValueError::ParentComponent { .. })
            ));
        }
        assert!(matches!(
            project_file("`-r`", &f.project, "missing.exs"),
            Err(ValueError::Missing { .. })
        ));
        assert!(matches!(
            project_file("`-r`", &f.project, "-x"),
            Err(ValueError::LooksLikeOption { .. })
        ));
    }

    #[test]
    fn outputs_may_be_new_but_not_outside() {
        let f = fixture();
        assert_eq!(
            project_output("`--output`", &f.project, "doc/html"),
            Ok(f.project.join("doc/html"))
        );
        assert!(matches!(
            project_output("`--output`", &f.project, "link/new"),
            Err(ValueError::OutsideProject { .. })
        ));
        let absolute = f.outside.join("new");
        assert!(matches!(
            project_output("`--output`", &f.project, absolute.to_str().unwrap()),
            Err(ValueError::OutsideProject { .. })
        ));
        // A dangling link would have the task create its target, outside.
        std::os::unix::fs::symlink(f.outside.join("later"), f.project.join("dangling")).unwrap();
        assert!(matches!(
            project_output("`--output`", &f.project, "dangling"),
            Err(ValueError::Missing { .. })
        ));
    }

    #[test]
    fn test_paths_may_name_lines() {
        let f = fixture();
        for value in [
            "test",
            "test/math_test.exs",
            "test/math_test.exs:12",
            "test/math_test.exs:12:20",
        ] {
            assert_eq!(test_path("`path`", &f.project, value), Ok(()), "{value}");
        }
        let evil = f.outside.join("evil.exs");
        for value in [
            "--cover",
            "--export-coverage=../x",
            ":12",
            evil.to_str().unwrap(),
            "../outside/evil.exs",
            "test/missing_test.exs",
        ] {
            assert!(test_path("`path`", &f.project, value).is_err(), "{value}");
        }
    }
}
