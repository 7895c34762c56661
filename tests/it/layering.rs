//! The layering ARCHITECTURE.md describes, checked on the source: which of drydock's
//! top-level modules each one may name (`crate::x`), so an import that crosses a layer the
//! wrong way fails here instead of in a reviewer's head.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Every top-level module, lowest layer first, with the modules it may use. A module may only
/// use modules listed before it, so no two modules can ever import each other.
const LAYERS: &[(&str, Layer, &[&str])] = &[
    // Foundation: what every capability builds on. Knows no capability.
    ("bounded", Layer::Foundation, &[]),
    ("text_budget", Layer::Foundation, &[]),
    ("private", Layer::Foundation, &[]),
    ("digest", Layer::Foundation, &[]),
    ("project_facts", Layer::Foundation, &[]),
    ("catalog", Layer::Foundation, &[]),
    ("call", Layer::Foundation, &[]),
    ("supervise", Layer::Foundation, &[]),
    ("render", Layer::Foundation, &[]),
    ("exs", Layer::Foundation, &[]),
    ("git", Layer::Foundation, &[]),
    ("process", Layer::Foundation, &["text_budget"]),
    ("workspace", Layer::Foundation, &[]),
    (
        "config",
        Layer::Foundation,
        &["catalog", "process", "workspace"],
    ),
    ("events", Layer::Foundation, &["catalog"]),
    ("local_endpoint", Layer::Foundation, &["private"]),
    ("shared_reading", Layer::Foundation, &[]),
    ("sandbox", Layer::Foundation, &["process", "private", "git"]),
    // Capabilities: each knows the foundation and the capabilities listed, never MCP or HTTP.
    ("terminal", Layer::Capability, &[]),
    ("toolchain", Layer::Capability, &[]),
    ("docs", Layer::Capability, &[]),
    ("history", Layer::Capability, &["toolchain", "docs"]),
    ("agents", Layer::Capability, &["terminal"]),
    (
        "tasks",
        Layer::Capability,
        &["terminal", "toolchain", "agents"],
    ),
    // The running drydock: every capability, built once.
    (
        "app",
        Layer::App,
        &[
            "terminal",
            "toolchain",
            "docs",
            "history",
            "agents",
            "tasks",
        ],
    ),
    // Faces: how the world reaches the app.
    ("tool_call", Layer::Face, &[]),
    ("dashboard", Layer::Face, &["tool_call"]),
    ("mcp", Layer::Face, &["tool_call"]),
    ("http", Layer::Face, &["tool_call", "dashboard", "mcp"]),
    (
        "cli",
        Layer::Face,
        &["tool_call", "dashboard", "mcp", "http"],
    ),
    // The fuzz targets reach each parser as its face does (tests and fuzz builds only).
    ("fuzz_targets", Layer::Face, &["http"]),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Layer {
    Foundation,
    Capability,
    App,
    Face,
}

impl Layer {
    /// The layers below this one, whose every module it may use.
    fn uses_all_of(self) -> &'static [Layer] {
        match self {
            Layer::Foundation => &[],
            Layer::Capability => &[Layer::Foundation],
            Layer::App | Layer::Face => &[Layer::Foundation, Layer::Capability, Layer::App],
        }
    }
}

#[test]
fn no_import_crosses_a_layer_the_wrong_way() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let modules = top_level_modules(&src);
    let listed: BTreeSet<&str> = LAYERS.iter().map(|(name, ..)| *name).collect();
    let unlisted: Vec<&String> = modules
        .iter()
        .filter(|m| !listed.contains(m.as_str()))
        .collect();
    assert!(
        unlisted.is_empty(),
        "modules with no place in LAYERS (and ARCHITECTURE.md): {unlisted:?}"
    );

    let mut wrong = Vec::new();
    for (file, module, used) in uses(&src, &modules) {
        let allowed = allowed_uses(&module);
        for target in used.difference(&allowed) {
            wrong.push(format!(
                "{}: `{module}` uses `crate::{target}`, which it may not (it may use: {})",
                file.strip_prefix(&src).unwrap().display(),
                allowed.iter().cloned().collect::<Vec<_>>().join(", ")
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layering in ARCHITECTURE.md:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_layers_only_point_down_and_architecture_md_names_every_module() {
    for (index, (name, layer, uses)) in LAYERS.iter().enumerate() {
        for used in *uses {
            let position = LAYERS.iter().position(|(n, ..)| n == used);
            assert!(
                position.is_some_and(|p| p < index && LAYERS[p].1 <= *layer),
                "{name} may use {used}, which is not below it"
            );
        }
    }
    let architecture =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("ARCHITECTURE.md"))
            .unwrap();
    for (name, ..) in LAYERS {
        let path = format!("`src/{name}");
        assert!(
            architecture.contains(&path),
            "ARCHITECTURE.md has no entry for {path}`"
        );
    }
}

#[test]
fn uses_are_read_from_paths_groups_and_nested_groups_but_not_comments() {
    let modules: BTreeSet<String> = ["config", "events", "process", "terminal", "agents"]
        .map(String::from)
        .into();
    let text = "use crate::config::Config;\n\
                use crate::{events::{Events, unix_millis}, process::{self, Policy}};\n\
                // see crate::agents for why\n\
                let t = crate::terminal::Terminals::new();\n\
                use crate::unknown::X;\n";
    let used = used_modules(text, &modules);
    assert_eq!(
        used,
        ["config", "events", "process", "terminal"]
            .map(String::from)
            .into()
    );
}

fn allowed_uses(module: &str) -> BTreeSet<String> {
    let (_, layer, uses) = LAYERS
        .iter()
        .find(|(name, ..)| *name == module)
        .expect("listed");
    LAYERS
        .iter()
        .filter(|(_, other, _)| layer.uses_all_of().contains(other))
        .map(|(name, ..)| name.to_string())
        .chain(uses.iter().map(|u| u.to_string()))
        .collect()
}

/// `src/x.rs` and `src/x/` for every x but `lib` and `main`.
fn top_level_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter_map(|path| match path.extension() {
            Some(ext) if ext == "rs" => Some(path.file_stem()?.to_string_lossy().into_owned()),
            None if path.is_dir() => Some(path.file_name()?.to_string_lossy().into_owned()),
            _ => None,
        })
        .filter(|name| name != "lib" && name != "main")
        .collect()
}

/// Each source file with its top-level module and the other top-level modules it names.
fn uses(src: &Path, modules: &BTreeSet<String>) -> Vec<(PathBuf, String, BTreeSet<String>)> {
    walkdir::WalkDir::new(src)
        .into_iter()
        .map(|entry| entry.unwrap().into_path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "rs"))
        .filter_map(|path| {
            let first = path.strip_prefix(src).unwrap().components().next()?;
            let first = first.as_os_str().to_string_lossy();
            let module = first.strip_suffix(".rs").unwrap_or(&first).to_string();
            if !modules.contains(&module) {
                return None;
            }
            let mut used = used_modules(&std::fs::read_to_string(&path).unwrap(), modules);
            used.remove(&module);
            Some((path, module, used))
        })
        .collect()
}

/// The top-level modules `text` names through `crate::`, in paths and in `use crate::{..}`
/// groups, leaving out comment lines.
fn used_modules(text: &str, modules: &BTreeSet<String>) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut used = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(at) = rest.find("crate::") {
        rest = &rest[at + "crate::".len()..];
        let names = match rest.strip_prefix('{') {
            Some(group) => group_heads(group),
            None => vec![leading_identifier(rest)],
        };
        used.extend(
            names
                .into_iter()
                .filter(|name| modules.contains(*name))
                .map(String::from),
        );
    }
    used
}

/// The first identifier of each item in a `{a::b, c::{d, e}}` group (its text after `{`).
fn group_heads(group: &str) -> Vec<&str> {
    let mut heads = vec![leading_identifier(group)];
    let mut depth = 0;
    for (index, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(leading_identifier(&group[index + 1..])),
            _ => {}
        }
    }
    heads
}

fn leading_identifier(text: &str) -> &str {
    let text = text.trim_start();
    let end = text
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(text.len());
    &text[..end]
}
