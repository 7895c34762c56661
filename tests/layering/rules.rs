//! The rules ARCHITECTURE.md states, checked on a source tree: each returns what breaks it,
//! one line each, empty when the tree keeps it.

use std::collections::{BTreeMap, BTreeSet};

use crate::architecture::Architecture;

/// The layers' Rust files: each path relative to the `src/` of its crate, with its text.
pub struct Source {
    pub files: Vec<(String, String)>,
    /// The `src/` folder of each top-level module's crate, where it is not the root's.
    pub homes: BTreeMap<String, String>,
}

impl Source {
    /// Where the file at `path` is, from the repository's root.
    pub fn shown(&self, path: &str) -> String {
        let home = self
            .homes
            .get(&top_level_of(path))
            .map_or("src", String::as_str);
        format!("{home}/{path}")
    }

    /// The top-level modules: `x.rs` and `x/` for every x but `lib` and `main`.
    pub fn top_level_modules(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .map(|(path, _)| top_level_of(path))
            .filter(|name| name != "lib" && name != "main")
            .collect()
    }

    /// The modules directly inside top-level module `parent` (`parent/x.rs`, `parent/x/`).
    fn submodules(&self, parent: &str) -> BTreeSet<String> {
        let prefix = format!("{parent}/");
        self.files
            .iter()
            .filter_map(|(path, _)| path.strip_prefix(&prefix))
            .filter_map(|rest| rest.split('/').next())
            .map(|first| first.strip_suffix(".rs").unwrap_or(first).to_string())
            .filter(|name| name != "mod")
            .collect()
    }
}

fn top_level_of(path: &str) -> String {
    let first = path.split('/').next().unwrap_or_default();
    first.strip_suffix(".rs").unwrap_or(first).to_string()
}

/// The lines of `text` that are code: comment lines left out.
fn code_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(n, line)| (n + 1, line))
        .filter(|(_, line)| !line.trim_start().starts_with("//"))
}

/// Every top-level module has a row, and every module of the table exists.
pub fn every_module_has_its_place(source: &Source, architecture: &Architecture) -> Vec<String> {
    let modules = source.top_level_modules();
    let listed: BTreeSet<String> = architecture
        .rows
        .iter()
        .flat_map(|row| row.modules.iter().cloned())
        .collect();
    let unlisted = modules
        .difference(&listed)
        .map(|m| format!("`{m}` has no place in the layers table"));
    let missing = listed
        .difference(&modules)
        .map(|m| format!("the layers table lists `{m}`, which the source does not have"));
    let no_entry = listed
        .iter()
        .map(|m| source.shown(m))
        .filter(|shown| !architecture.text.contains(&format!("`{shown}")))
        .map(|shown| format!("the code map has no entry for `{shown}`"));
    unlisted.chain(missing).chain(no_entry).collect()
}

/// An arrow points to a module of its own row listed before its own, so no two modules can
/// use each other.
pub fn arrows_point_back(architecture: &Architecture) -> Vec<String> {
    let mut wrong = Vec::new();
    for row in &architecture.rows {
        for (from, to) in &row.arrows {
            let at = |m: &str| row.modules.iter().position(|x| x == m);
            match (at(from), at(to)) {
                (Some(f), Some(t)) if t < f => {}
                _ => wrong.push(format!(
                    "{}: `{from}` → `{to}` does not point to a module listed before `{from}` in its row",
                    row.layer
                )),
            }
        }
    }
    wrong
}

/// A crate of the workspace: its package name, the top-level modules its `src/` holds, and
/// the drydock crates its `Cargo.toml` depends on.
pub struct Crate {
    pub name: String,
    pub modules: BTreeSet<String>,
    pub depends_on: Vec<String>,
}

/// A crate depends on another only when each module of the other is one a module of its own
/// may name: then the compiler refuses an import the table does not allow.
pub fn crates_follow_the_layers(crates: &[Crate], architecture: &Architecture) -> Vec<String> {
    let mut wrong = Vec::new();
    for krate in crates {
        let may_use: BTreeSet<String> = krate
            .modules
            .iter()
            .flat_map(|module| architecture.allowed_uses(module))
            .collect();
        for dependency in &krate.depends_on {
            let Some(other) = crates.iter().find(|c| &c.name == dependency) else {
                continue;
            };
            for module in other.modules.difference(&may_use) {
                wrong.push(format!(
                    "`{}` depends on `{dependency}`, whose `{module}` none of its modules may use",
                    krate.name
                ));
            }
        }
    }
    wrong
}

/// No module names (`crate::x`) a module its row does not allow.
pub fn no_import_goes_up(source: &Source, architecture: &Architecture) -> Vec<String> {
    let modules = source.top_level_modules();
    let mut wrong = Vec::new();
    for (path, text) in &source.files {
        let module = top_level_of(path);
        if architecture.row_of(&module).is_none() {
            continue;
        }
        let allowed = architecture.allowed_uses(&module);
        let targets: BTreeSet<(usize, String)> = crate_paths(path, text)
            .into_iter()
            .map(|(line, used)| {
                (
                    line,
                    used.split("::").next().unwrap_or_default().to_string(),
                )
            })
            .collect();
        for (line, target) in targets {
            if target != module && modules.contains(&target) && !allowed.contains(&target) {
                wrong.push(format!(
                    "{}:{line}: `{module}` uses `crate::{target}`, which its row does not allow",
                    source.shown(path)
                ));
            }
        }
    }
    wrong
}

/// No `super::super::`: a path that climbs two modules hides which module it reaches.
pub fn no_path_climbs_twice(source: &Source) -> Vec<String> {
    source
        .files
        .iter()
        .flat_map(|(path, text)| {
            code_lines(text)
                .filter(|(_, line)| line.contains("super::super::"))
                .map(move |(n, _)| {
                    format!(
                        "{}:{n}: `super::super::` (name it from `crate::`)",
                        source.shown(path)
                    )
                })
        })
        .collect()
}

/// A face names a capability's root, its `requests` and `reports`, and of its other modules
/// only the published ones.
pub fn faces_stay_at_the_facades(source: &Source, architecture: &Architecture) -> Vec<String> {
    let faces = architecture.modules_of_layer("faces");
    let capabilities = architecture.modules_of_layer("capabilities");
    let mut wrong = Vec::new();
    for (path, text) in &source.files {
        if !faces.contains(&top_level_of(path)) {
            continue;
        }
        let whole = whole_capability_imports(path, text, &capabilities);
        // A path can be read both ways (`use crate::{docs::{self, store}}`): once is enough.
        let code = code_text(text);
        let reached: BTreeSet<(usize, String)> = crate_paths(path, text)
            .into_iter()
            .chain(
                // `use crate::{docs, ..}` then `docs::store::DocStore`.
                whole
                    .iter()
                    .flat_map(|cap| paths_after(&code, &format!("{cap}::"), cap)),
            )
            .collect();
        for (line, used) in reached {
            let mut parts = used.split("::");
            let (Some(capability), Some(inner)) = (parts.next(), parts.next()) else {
                continue;
            };
            if !capabilities.contains(capability)
                || !source.submodules(capability).contains(inner)
                || ["requests", "reports"].contains(&inner)
                || architecture
                    .published
                    .contains(&format!("{capability}::{inner}"))
            {
                continue;
            }
            wrong.push(format!(
                "{}:{line}: a face reaches `{capability}::{inner}`, inside the capability (its facade, requests, reports or a published module only)",
                source.shown(path)
            ));
        }
    }
    wrong
}

/// `rmcp` and `axum` appear only in the faces.
pub fn protocols_only_in_faces(source: &Source, architecture: &Architecture) -> Vec<String> {
    let faces = architecture.modules_of_layer("faces");
    let mut wrong = Vec::new();
    for (path, text) in &source.files {
        if faces.contains(&top_level_of(path)) {
            continue;
        }
        for (n, line) in code_lines(text) {
            for protocol in ["rmcp", "axum"] {
                let named = line.contains(&format!("{protocol}::"))
                    || line.trim_start().starts_with(&format!("use {protocol}"));
                if named {
                    wrong.push(format!(
                        "{}:{n}: `{protocol}` outside the faces",
                        source.shown(path)
                    ));
                }
            }
        }
    }
    wrong
}

/// The capabilities `text` imports whole (`use crate::{docs, tasks}`, `use crate::docs;`).
fn whole_capability_imports(
    path: &str,
    text: &str,
    capabilities: &BTreeSet<String>,
) -> BTreeSet<String> {
    crate_paths(path, text)
        .into_iter()
        .map(|(_, path)| path.trim_end_matches("::self").to_string())
        .filter(|path| capabilities.contains(path))
        .collect()
}

/// Every path the file at `path` (its `text`) names from the crate's root, with its line:
/// after `crate::`, and in a top-level module's own code (its tests left out) after
/// `super::`, which there is the crate's root too. A `use` group is read whole however
/// rustfmt wrapped it, nested groups flattened to each of their paths; comment lines are left
/// out.
fn crate_paths(path: &str, text: &str) -> Vec<(usize, String)> {
    let code = code_text(text);
    let mut paths = paths_after(&code, "crate::", "");
    if is_top_level(path) {
        let own = code
            .find("#[cfg(test)]")
            .map_or(&code[..], |at| &code[..at]);
        paths.extend(paths_after(own, "super::", ""));
    }
    paths
}

/// `x.rs` or `x/mod.rs`: a module whose parent is the crate's root.
fn is_top_level(path: &str) -> bool {
    !path.contains('/') || path.split('/').count() == 2 && path.ends_with("/mod.rs")
}

/// `text` with its comment lines blanked, so offsets keep their line numbers.
fn code_text(text: &str) -> String {
    text.lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The paths that follow each `marker` in `text`, each prefixed with `prefix` (and `::`),
/// with the line of their marker.
fn paths_after(text: &str, marker: &str, prefix: &str) -> Vec<(usize, String)> {
    let mut paths = Vec::new();
    let mut searched = 0;
    while let Some(found) = text[searched..].find(marker) {
        let at = searched + found;
        searched = at + marker.len();
        let before = text[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
            continue;
        }
        let line = text[..at].matches('\n').count() + 1;
        for path in expand(&text[searched..]) {
            paths.push((
                line,
                match prefix {
                    "" => path,
                    prefix => format!("{prefix}::{path}"),
                },
            ));
        }
    }
    paths
}

/// The paths a `use` tail names: `a::b::C` is one, `{a::b, c::{d, e}}` is `a::b`, `c::d`,
/// `c::e`.
fn expand(tail: &str) -> Vec<String> {
    let tail = tail.trim_start();
    let head_len = tail
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == ':'))
        .unwrap_or(tail.len());
    let (head, after) = tail.split_at(head_len);
    let head = head.trim_end_matches(':');
    match after.strip_prefix('{') {
        Some(group) => group_items(group)
            .into_iter()
            .flat_map(expand)
            .map(|inner| match head {
                "" => inner,
                head => format!("{head}::{inner}"),
            })
            .collect(),
        None if head.is_empty() => Vec::new(),
        None => vec![head.to_string()],
    }
}

/// The items of a `{..}` group (its text after `{`), split at its own commas.
fn group_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0, 0);
    for (index, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..index]);
                break;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..index]);
                start = index + 1;
            }
            _ => {}
        }
    }
    items
        .into_iter()
        .filter(|item| !item.trim().is_empty())
        .collect()
}

/// The paths the file at `path` names from the crate's root (see `crate_paths`).
pub fn paths_of(path: &str, text: &str) -> Vec<String> {
    crate_paths(path, text)
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// The modules that handle what a task or a repository wrote (worktrees, the private git and
/// home, landing trees, tool output that names files): they read it through `untrusted` and
/// run git on it through `git`.
pub const CONTENT_MODULES: &[&str] = &[
    "tasks/",
    "sandbox/private_git",
    "history/snapshot.rs",
    "toolchain/warm_start.rs",
    "toolchain/mix/format_diff.rs",
    "agents/usage.rs",
];

/// Calls that open, copy or follow a file, or start git, cargo or mix, on their own.
const AROUND_THE_DOOR: &[&str] = &[
    "fs::read(",
    "fs::read_to_string(",
    "fs::copy(",
    "fs::read_link(",
    "File::open(",
    "Command::new(\"git\")",
    "Command::new(\"cargo\")",
    "Command::new(\"mix\")",
];

/// In the content modules, no file is read, copied or followed and no git, cargo or mix is
/// started but through `untrusted`, `git` and `process`, unless the line (or the one above
/// it) has a `// door:` comment saying why the file is drydock's or the person's own. Tests
/// are left out.
pub fn content_only_through_the_door(source: &Source) -> Vec<String> {
    let mut wrong = Vec::new();
    for (path, text) in &source.files {
        let content = CONTENT_MODULES
            .iter()
            .any(|prefix| path.starts_with(prefix));
        if !content || path.ends_with("tests.rs") || path.contains("/tests/") {
            continue;
        }
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                break;
            }
            if line.trim_start().starts_with("//") {
                continue;
            }
            let marked = |line: &str| line.contains("// door:");
            let excused = marked(line) || i > 0 && marked(lines[i - 1]);
            for call in AROUND_THE_DOOR {
                if line.contains(call) && !excused {
                    wrong.push(format!(
                        "{}:{}: `{call}` on content a task may have written: read it through `untrusted`, run git through `git` (or say `// door:` and whose file it is)",
                        source.shown(path),
                        i + 1
                    ));
                }
            }
        }
    }
    wrong
}

/// No crate below the command line has a `pub async fn` whose body is its own to compile: rustc
/// compiles an async body again in every crate that awaits it, so such a function returns a
/// `BoxFuture` instead. Generic ones are left: their callers compile them anyway. Tests and
/// test fixtures are left out.
pub fn async_bodies_are_boxed(source: &Source) -> Vec<String> {
    let mut wrong = Vec::new();
    for (path, text) in &source.files {
        let below = source.homes.contains_key(&top_level_of(path));
        let test = path.ends_with("tests.rs") || path.contains("/tests/");
        if !below || test || path.contains("parts_for_tests") || path.contains("fixtures") {
            continue;
        }
        let code = text.split("\n#[cfg(test)]").next().unwrap_or_default();
        for (at, _) in code.match_indices("pub async fn ") {
            let signature = &code[at..code[at..].find('{').map_or(code.len(), |end| at + end)];
            let rest = &signature["pub async fn ".len()..];
            let name = &rest[..rest.find(['(', '<']).unwrap_or(rest.len())];
            let generic = rest[name.len()..].starts_with('<') || signature.contains("impl ");
            if !generic {
                let line = code[..at].matches('\n').count() + 1;
                wrong.push(format!(
                    "{}:{line}: `pub async fn {name}` is compiled again in every crate that awaits it: return a `BoxFuture`",
                    source.shown(path)
                ));
            }
        }
    }
    wrong
}
