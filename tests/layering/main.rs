//! The map ARCHITECTURE.md draws, checked on the source: the layers table read from the page
//! itself, and the rules the page states under it. A test binary of its own, so it runs in
//! seconds without building the integration suite. Each rule also has a test that feeds it a
//! small tree breaking it, to show it fails.

// A test or bench crate is a binary: `pub` serves its own modules.
#![allow(unreachable_pub)]

mod architecture;
mod parts;
mod rules;

use std::collections::BTreeMap;
use std::path::Path;

use architecture::{Architecture, PUBLISHED_MARK};
use rules::Source;

fn repository() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn real_architecture() -> Architecture {
    let text = std::fs::read_to_string(repository().join("ARCHITECTURE.md")).unwrap();
    Architecture::parse(&text).unwrap()
}

/// The `src/` folders of this package and of every crate under `crates/`.
fn source_folders() -> Vec<String> {
    let mut crates: Vec<String> = std::fs::read_dir(repository().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .map(|name| format!("crates/{name}/src"))
        .collect();
    crates.sort();
    [vec!["src".to_string()], crates].concat()
}

/// Every crate of the workspace with its modules and the drydock crates it depends on.
fn real_crates() -> Vec<rules::Crate> {
    source_folders()
        .into_iter()
        .map(|folder| {
            let root = repository().join(folder.trim_end_matches("/src").trim_end_matches("src"));
            let manifest: toml::Table = std::fs::read_to_string(root.join("Cargo.toml"))
                .unwrap()
                .parse()
                .unwrap();
            let modules = std::fs::read_dir(repository().join(&folder))
                .unwrap()
                .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                .map(|name| name.trim_end_matches(".rs").to_string())
                .filter(|name| !["lib", "main"].contains(&name.as_str()))
                .collect();
            let depends_on = manifest["dependencies"]
                .as_table()
                .unwrap()
                .keys()
                .filter(|name| name.starts_with("drydock-"))
                .cloned()
                .collect();
            rules::Crate {
                name: manifest["package"]["name"].as_str().unwrap().to_string(),
                modules,
                depends_on,
            }
        })
        .collect()
}

fn real_source() -> Source {
    let mut source = Source {
        files: Vec::new(),
        homes: BTreeMap::new(),
    };
    for folder in source_folders() {
        let src = repository().join(&folder);
        for entry in walkdir::WalkDir::new(&src) {
            let path = entry.unwrap().into_path();
            if path.extension().is_none_or(|ext| ext != "rs") {
                continue;
            }
            let relative = path.strip_prefix(&src).unwrap().display().to_string();
            let module = relative.split('/').next().unwrap().trim_end_matches(".rs");
            if !["lib", "main"].contains(&module) && folder != "src" {
                source.homes.insert(module.to_string(), folder.clone());
            }
            source
                .files
                .push((relative, std::fs::read_to_string(&path).unwrap()));
        }
    }
    source
}

fn assert_kept(rule: &str, broken: Vec<String>) {
    assert!(
        broken.is_empty(),
        "{rule} (ARCHITECTURE.md):\n{}",
        broken.join("\n")
    );
}

#[test]
fn the_source_keeps_every_rule_of_architecture_md() {
    let (source, architecture) = (real_source(), real_architecture());
    assert!(architecture.rows.len() >= 4, "{:?}", architecture.rows);
    let crates = real_crates();
    assert!(crates.len() >= 9, "the root and the crates under crates/");
    assert_kept(
        "crates follow the layers",
        rules::crates_follow_the_layers(&crates, &architecture),
    );
    assert_kept(
        "every module has its place",
        rules::every_module_has_its_place(&source, &architecture),
    );
    assert_kept("arrows point back", rules::arrows_point_back(&architecture));
    assert_kept(
        "no import goes up a layer",
        rules::no_import_goes_up(&source, &architecture),
    );
    assert_kept("no path climbs twice", rules::no_path_climbs_twice(&source));
    assert_kept(
        "faces stay at the facades",
        rules::faces_stay_at_the_facades(&source, &architecture),
    );
    assert_kept(
        "rmcp and axum only in the faces",
        rules::protocols_only_in_faces(&source, &architecture),
    );
    assert_kept(
        "task content only through the door",
        rules::content_only_through_the_door(&source),
    );
    assert_kept(
        "async bodies cross crates boxed",
        rules::async_bodies_are_boxed(&source),
    );
}

#[test]
fn a_pub_async_fn_below_the_command_line_fails_unless_generic() {
    let source = Source {
        files: vec![
            (
                "tasks/launcher.rs".into(),
                "impl L {\n    pub async fn start(&self, id: u64) -> Result<(), E> {\n    }\n}"
                    .into(),
            ),
            (
                "tasks/ledger.rs".into(),
                "pub fn task(&self) -> BoxFuture<'_, Task> { async move {}.boxed() }\n\
                 pub async fn call<T: Send>(&self, f: T) {}\n\
                 pub async fn each(f: impl Fn()) {}\n\
                 pub(crate) async fn inside() {}\n\
                 #[cfg(test)]\nmod tests { pub async fn helper() {} }"
                    .into(),
            ),
            ("tasks/tests.rs".into(), "pub async fn fixture() {}".into()),
            ("cli/serve.rs".into(), "pub async fn run() {}".into()),
        ],
        homes: [("tasks".to_string(), "crates/tasks/src".to_string())].into(),
    };
    let broken = rules::async_bodies_are_boxed(&source);
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(
        broken[0].starts_with("crates/tasks/src/tasks/launcher.rs:2: `pub async fn start`"),
        "{broken:?}"
    );
}

#[test]
fn a_content_module_reading_a_file_on_its_own_fails() {
    let source = Source {
        files: vec![
            (
                "tasks/forecast.rs".into(),
                "fn f(p: &Path) { let _ = std::fs::read_to_string(p.join(\".git\")); }".into(),
            ),
            (
                "tasks/runner.rs".into(),
                "// door: the task's token, drydock's own file\nlet t = std::fs::read_to_string(d);".into(),
            ),
            (
                "history/snapshot.rs".into(),
                "fn g() {}\n#[cfg(test)]\nmod tests { fn t() { std::fs::read(\"x\"); } }".into(),
            ),
            ("terminal/core.rs".into(), "let _ = std::fs::read(\"x\");".into()),
            ("tasks/merge.rs".into(), "Command::new(\"git\").arg(\"merge\");".into()),
        ],
        homes: [("tasks".to_string(), "crates/tasks/src".to_string())].into(),
    };
    let broken = rules::content_only_through_the_door(&source);
    assert_eq!(broken.len(), 2, "{broken:?}");
    assert!(
        broken[0].starts_with("crates/tasks/src/tasks/forecast.rs:1: `fs::read_to_string(`"),
        "{broken:?}"
    );
    assert!(
        broken[1].starts_with("crates/tasks/src/tasks/merge.rs:1: `Command::new(\"git\")`"),
        "{broken:?}"
    );
}

/// A page like ARCHITECTURE.md, small: two foundation modules, two capabilities, a face.
fn small_architecture() -> Architecture {
    let text = format!(
        "# Architecture\n\n## Layers\n\n\
         | layer | modules | may use |\n|---|---|---|\n\
         | foundation | `digest`, `config` | only foundation modules listed before it (`config` → `digest`) |\n\
         | capabilities | `terminal`, `agents` | the foundation, plus: `agents` → `terminal` |\n\
         | faces | `cli` | everything below |\n\n\
         ## API boundaries\n\nA face names ... {PUBLISHED_MARK}:\n\
         - `agents::trust`: the command line's folder trust.\n\n\
         ## Code map\n\n`src/digest.rs`, `src/config.rs`, `src/terminal/`, `src/agents/`, `src/cli/`.\n"
    );
    Architecture::parse(&text).unwrap()
}

/// The small tree, with `extra` files added or put in place of its own.
fn small_source(extra: &[(&str, &str)]) -> Source {
    let files: BTreeMap<String, String> = [
        ("lib.rs", "pub mod cli;"),
        ("digest.rs", ""),
        ("config.rs", "use crate::digest::hash;"),
        (
            "terminal/mod.rs",
            "pub mod requests;\nmod core;\npub struct Terminals;",
        ),
        ("terminal/core.rs", ""),
        ("terminal/requests.rs", ""),
        (
            "agents/mod.rs",
            "use crate::terminal::Terminals;\npub mod trust;\nmod rules;",
        ),
        ("agents/trust.rs", ""),
        ("agents/rules.rs", ""),
        (
            "cli/mod.rs",
            "use crate::terminal::{Terminals, requests::Open};\nuse crate::agents::trust;",
        ),
    ]
    .iter()
    .chain(extra)
    .map(|(path, text)| (path.to_string(), text.to_string()))
    .collect();
    Source {
        files: files.into_iter().collect(),
        homes: BTreeMap::new(),
    }
}

#[test]
fn the_small_tree_keeps_every_rule() {
    let (source, architecture) = (small_source(&[]), small_architecture());
    assert_eq!(
        architecture.allowed_uses("agents"),
        ["config", "digest", "terminal"].map(String::from).into()
    );
    assert!(rules::every_module_has_its_place(&source, &architecture).is_empty());
    assert!(rules::arrows_point_back(&architecture).is_empty());
    assert!(rules::no_import_goes_up(&source, &architecture).is_empty());
    assert!(rules::no_path_climbs_twice(&source).is_empty());
    assert!(rules::faces_stay_at_the_facades(&source, &architecture).is_empty());
    assert!(rules::protocols_only_in_faces(&source, &architecture).is_empty());
}

#[test]
fn a_crate_depending_on_a_layer_above_or_beside_it_fails() {
    let architecture = small_architecture();
    let krate = |name: &str, modules: &[&str], depends_on: &[&str]| rules::Crate {
        name: name.into(),
        modules: modules.iter().map(|m| m.to_string()).collect(),
        depends_on: depends_on.iter().map(|d| d.to_string()).collect(),
    };
    let layered = [
        krate("base", &["digest", "config"], &[]),
        krate("terminal", &["terminal"], &["base"]),
        krate("agents", &["agents"], &["base", "terminal"]),
        krate("root", &["cli"], &["base", "terminal", "agents"]),
    ];
    assert!(rules::crates_follow_the_layers(&layered, &architecture).is_empty());
    let upward = [
        krate("base", &["digest", "config"], &[]),
        krate("terminal", &["terminal"], &["base", "agents"]),
        krate("agents", &["agents"], &["base"]),
    ];
    assert_eq!(
        rules::crates_follow_the_layers(&upward, &architecture),
        ["`terminal` depends on `agents`, whose `agents` none of its modules may use"]
    );
}

#[test]
fn a_module_with_no_row_or_a_row_with_no_module_fails() {
    let architecture = small_architecture();
    let broken =
        rules::every_module_has_its_place(&small_source(&[("shiny.rs", "")]), &architecture);
    assert_eq!(broken, ["`shiny` has no place in the layers table"]);
    let without_config = Source {
        files: small_source(&[])
            .files
            .into_iter()
            .filter(|(path, _)| path != "config.rs")
            .collect(),
        homes: BTreeMap::new(),
    };
    let broken = rules::every_module_has_its_place(&without_config, &architecture);
    assert_eq!(
        broken,
        ["the layers table lists `config`, which the source does not have"]
    );
}

#[test]
fn an_arrow_to_a_later_module_of_its_row_fails() {
    let text = small_architecture()
        .text
        .replace("`agents` → `terminal`", "`terminal` → `agents`");
    let broken = rules::arrows_point_back(&Architecture::parse(&text).unwrap());
    assert_eq!(broken.len(), 1, "{broken:?}");
    assert!(broken[0].contains("`terminal` → `agents`"), "{broken:?}");
}

#[test]
fn an_import_up_a_layer_or_across_a_row_without_an_arrow_fails() {
    let architecture = small_architecture();
    for (path, text, says) in [
        (
            "terminal/core.rs",
            "use crate::agents::Agents;",
            "`terminal` uses `crate::agents`",
        ),
        (
            "digest.rs",
            "let c = crate::config::load();",
            "`digest` uses `crate::config`",
        ),
        (
            "config.rs",
            "use crate::{digest::hash, terminal::{self, core}};",
            "`config` uses `crate::terminal`",
        ),
    ] {
        let broken = rules::no_import_goes_up(&small_source(&[(path, text)]), &architecture);
        assert_eq!(broken.len(), 1, "{text}: {broken:?}");
        assert!(broken[0].contains(says), "{broken:?}");
    }
    let commented = small_source(&[("digest.rs", "// crate::config explains why")]);
    assert!(rules::no_import_goes_up(&commented, &architecture).is_empty());
}

#[test]
fn an_import_up_in_a_use_group_rustfmt_wrapped_fails() {
    let wrapped = "use std::path::Path;\n\nuse crate::{\n    digest::hash,\n    terminal::{\n        self,\n        core::Screen,\n    },\n};";
    let broken = rules::no_import_goes_up(
        &small_source(&[("config.rs", wrapped)]),
        &small_architecture(),
    );
    assert_eq!(
        broken,
        ["src/config.rs:3: `config` uses `crate::terminal`, which its row does not allow"]
    );
}

#[test]
fn super_in_a_top_level_module_is_the_crates_root() {
    let architecture = small_architecture();
    for (path, text, line) in [
        (
            "terminal/mod.rs",
            "pub mod requests;\nuse super::agents::Agents;",
            2,
        ),
        ("digest.rs", "fn f() { super::config::load(); }", 1),
    ] {
        let broken = rules::no_import_goes_up(&small_source(&[(path, text)]), &architecture);
        assert_eq!(broken.len(), 1, "{text}: {broken:?}");
        assert!(
            broken[0].starts_with(&format!("src/{path}:{line}:")),
            "{broken:?}"
        );
    }
    // Below the top level `super::` is the parent module; in a top-level module's tests it
    // is that module.
    for (path, text) in [
        ("terminal/core.rs", "use super::requests::Open;"),
        (
            "digest.rs",
            "fn f() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n}",
        ),
    ] {
        let kept = rules::no_import_goes_up(&small_source(&[(path, text)]), &architecture);
        assert!(kept.is_empty(), "{text}: {kept:?}");
    }
}

#[test]
fn a_path_that_climbs_twice_fails() {
    let broken = rules::no_path_climbs_twice(&small_source(&[(
        "agents/rules.rs",
        "use super::super::terminal::Terminals;",
    )]));
    assert_eq!(
        broken,
        ["src/agents/rules.rs:1: `super::super::` (name it from `crate::`)"]
    );
}

#[test]
fn a_face_reaching_inside_a_capability_fails_unless_the_module_is_published() {
    let architecture = small_architecture();
    for text in [
        "use crate::terminal::core::Screen;",
        "use crate::{terminal::{self, core::Screen}};",
        "use crate::{agents, terminal};\nfn f() { terminal::core::Screen::new(); }",
        "use crate::agents::rules::Rule;",
    ] {
        let broken =
            rules::faces_stay_at_the_facades(&small_source(&[("cli/run.rs", text)]), &architecture);
        assert_eq!(broken.len(), 1, "{text}: {broken:?}");
    }
    let published = small_source(&[("cli/run.rs", "use crate::agents::trust::vouch;")]);
    assert!(rules::faces_stay_at_the_facades(&published, &architecture).is_empty());
}

#[test]
fn rmcp_or_axum_outside_the_faces_fails() {
    let architecture = small_architecture();
    for text in ["use rmcp::model::Tool;", "let app = axum::Router::new();"] {
        let broken = rules::protocols_only_in_faces(
            &small_source(&[("agents/rules.rs", text)]),
            &architecture,
        );
        assert_eq!(broken.len(), 1, "{text}: {broken:?}");
    }
    let in_a_face = small_source(&[("cli/serve.rs", "use axum::Router;")]);
    assert!(rules::protocols_only_in_faces(&in_a_face, &architecture).is_empty());
}

#[test]
fn crate_paths_are_read_from_groups_and_nested_groups() {
    assert_eq!(
        rules::paths_of(
            "x/y.rs",
            "use crate::{events::{Events, Kind}, process::{self, Policy}};"
        ),
        [
            "events::Events",
            "events::Kind",
            "process::self",
            "process::Policy"
        ]
    );
    assert_eq!(
        rules::paths_of("x/y.rs", "let t = crate::terminal::Terminals::new();"),
        ["terminal::Terminals::new"]
    );
    assert!(rules::paths_of("x/y.rs", "use mycrate::x;").is_empty());
}

#[test]
fn the_task_systems_imports_run_one_way() {
    let text = std::fs::read_to_string(repository().join("ARCHITECTURE.md")).unwrap();
    let tiers = parts::Tiers::parse(&text).unwrap();
    let files = parts::read(&repository().join("crates/tasks/src/tasks"));
    assert!(files.len() > 40, "the task system's files are read");
    assert_kept(
        "the task system's parts import only those below them",
        tiers.broken(&files),
    );
}

fn small_tiers() -> parts::Tiers {
    parts::Tiers::parse(
        "## The task system's parts\n\n| tier | modules | holds |\n| --- | --- | --- |\n\
         | records | `files`, `state` | records |\n\
         | the queue | `store`, `ledger` | the queue |\n\
         | the parts | `lander`, `runner` | parts |\n",
    )
    .unwrap()
}

#[test]
fn an_import_up_or_across_the_task_systems_tiers_fails() {
    let tiers = small_tiers();
    let file = |path: &str, text: &str| (path.to_string(), text.to_string());
    let kept = [
        file("files.rs", "use std::path::PathBuf;"),
        file("state.rs", "use super::files;"),
        file(
            "ledger.rs",
            "use super::store::{self, Task};\nuse super::state::TaskState;",
        ),
        file("lander/mod.rs", "mod batch;\nuse super::ledger::Ledger;"),
        file(
            "lander/batch.rs",
            "use super::{Lander, Step};\nuse crate::tasks::store::Task;",
        ),
        file("runner.rs", "use super::lander::{Lander, Starter};"),
        file(
            "mod.rs",
            "use self::runner::Monitor;\npub use runner::Monitor;",
        ),
    ];
    assert_eq!(tiers.broken(&kept), Vec::<String>::new());

    let broken = [
        file("files.rs", "use super::state::TaskState;"),
        file("ledger.rs", "use super::runner::Monitor;"),
        file(
            "store.rs",
            "use crate::tasks::{\n    state,\n    lander::{Lander, Starter},\n};",
        ),
        file("lander/batch.rs", "use super::super::runner;"),
        file("runner.rs", "use super::{TaskError, Tasks};"),
        file("scratch.rs", "use super::state;"),
    ];
    let found = tiers.broken(&broken);
    let expected = [
        "files.rs:1: `files` uses `state`",
        "ledger.rs:1: `ledger` uses `runner`",
        "store.rs:1: `store` uses `lander`",
        "lander/batch.rs:1: `lander` uses `runner`",
        "runner.rs:1: `runner` uses `the front (mod.rs)`",
        "scratch.rs: module `scratch` has no tier",
    ];
    assert_eq!(found.len(), expected.len(), "{found:#?}");
    for (found, expected) in found.iter().zip(expected) {
        assert!(found.starts_with(expected), "{found} is not {expected}");
    }
}
