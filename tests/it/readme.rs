//! The README and the pages under docs/, checked against the code so they cannot drift: every
//! `drydock` command their shell blocks show is one the command line takes, every
//! `drydock call` names a served tool with arguments its schema takes, every script they run
//! is there, every TOML block is a config drydock accepts, and every `DRYDOCK_*` variable they
//! name is one drydock (or a benchmark) reads. The README links every page.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::support::{Server, modern_client, repo_root};

/// A fenced block: the page it is on, its info string (`sh`, `toml`, ...), its first line
/// number, its text.
struct Block {
    page: String,
    info: String,
    line: usize,
    text: String,
}

/// A line of a page, as `README.md:12`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Place {
    page: String,
    line: usize,
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.page, self.line)
    }
}

/// The pages checked: README.md and every page under docs/ (the reference moved there, so a
/// block moved out of the README is checked where it went).
fn pages() -> Vec<(String, String)> {
    let mut names = vec!["README.md".to_string()];
    let mut docs: Vec<String> = std::fs::read_dir(repo_root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    docs.sort();
    names.extend(docs);
    names
        .into_iter()
        .map(|name| {
            let text = std::fs::read_to_string(repo_root().join(&name)).unwrap();
            (name, text)
        })
        .collect()
}

fn readme() -> String {
    std::fs::read_to_string(repo_root().join("README.md")).unwrap()
}

/// Every page's blocks.
fn all_blocks() -> Vec<Block> {
    pages()
        .iter()
        .flat_map(|(page, text)| blocks(page, text))
        .collect()
}

fn blocks(page: &str, markdown: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    for (index, line) in markdown.lines().enumerate() {
        match (open.take(), line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    page: page.to_string(),
                    info: info.trim().to_string(),
                    line: index + 2,
                    text: String::new(),
                })
            }
            (Some(block), Some(_)) => blocks.push(block),
            (Some(mut block), None) => {
                block.text.push_str(line);
                block.text.push('\n');
                open = Some(block);
            }
            (None, None) => {}
        }
    }
    assert!(open.is_none(), "{page} ends inside a code block");
    blocks
}

/// The commands of the shell blocks, each split into words (comments dropped, `&&` chains
/// and leading `VAR=value` assignments taken apart), with the place it is at.
fn shell_commands(blocks: &[Block]) -> Vec<(Place, Vec<String>)> {
    let mut commands = Vec::new();
    for block in blocks.iter().filter(|b| b.info == "sh") {
        for (offset, line) in block.text.lines().enumerate() {
            let place = Place {
                page: block.page.clone(),
                line: block.line + offset,
            };
            let words = shell_words::split(line)
                .unwrap_or_else(|e| panic!("{place}: not a shell line ({e})"));
            let words: Vec<String> = words.into_iter().take_while(|w| w != "#").collect();
            for command in words.split(|w| w == "&&" || w == "||" || w == ";") {
                let command: Vec<String> = command
                    .iter()
                    .skip_while(|w| is_assignment(w))
                    .cloned()
                    .collect();
                if !command.is_empty() {
                    commands.push((place.clone(), command));
                }
            }
        }
    }
    commands
}

fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(name, _)| {
        !name.is_empty() && name.chars().all(|c| c.is_ascii_uppercase() || c == '_')
    })
}

#[test]
fn every_drydock_command_in_the_pages_is_one_the_command_line_takes() {
    let commands = shell_commands(&all_blocks());
    let drydock: Vec<_> = commands.iter().filter(|(_, c)| c[0] == "drydock").collect();
    assert!(
        drydock.len() >= 10,
        "the pages show few drydock commands: {drydock:?}"
    );
    let mut refused = Vec::new();
    for (place, command) in &drydock {
        if let Err(error) = drydock::cli::accepts(command) {
            refused.push(format!("{place}: {}\n{error}", command.join(" ")));
        }
    }
    assert!(refused.is_empty(), "{}", refused.join("\n\n"));
}

#[test]
fn every_script_the_pages_run_is_there_and_executable() {
    use std::os::unix::fs::PermissionsExt;
    for (place, command) in shell_commands(&all_blocks()) {
        if !command[0].starts_with("scripts/") {
            continue;
        }
        let path = repo_root().join(&command[0]);
        let mode = std::fs::metadata(&path)
            .unwrap_or_else(|e| panic!("{place}: {}: {e}", path.display()))
            .permissions()
            .mode();
        assert!(
            mode & 0o111 != 0,
            "{place}: {} is not executable",
            path.display()
        );
    }
}

#[test]
fn the_readme_starts_with_the_command_that_installs_and_serves_and_shows_the_test_command() {
    let blocks = blocks("README.md", &readme());
    let first = blocks
        .iter()
        .find(|b| b.info == "sh")
        .expect("a shell block");
    let install = first.text.lines().next().unwrap_or_default();
    assert!(
        install.contains("cargo install --path . --locked") && install.contains("drydock serve"),
        "the first command installs and runs the server: {install}"
    );
    let commands = shell_commands(&blocks);
    assert!(
        commands.iter().any(|(_, c)| c == &["scripts/test.sh"]),
        "the README shows the test command"
    );
    let ci = std::fs::read_to_string(repo_root().join(".ci/run")).unwrap();
    assert!(
        ci.lines().any(|l| l.trim() == "scripts/test.sh"),
        "CI runs the README's test command"
    );
}

#[test]
fn no_figure_is_left_to_fill_in() {
    for (page, text) in pages() {
        assert!(!text.contains("{{"), "{page} has a placeholder left");
    }
}

#[test]
fn the_readme_links_every_page_under_docs() {
    let readme = readme();
    let pages = pages();
    assert!(
        pages.len() > 5,
        "the reference lives under docs/: {:?}",
        pages.iter().map(|(name, _)| name).collect::<Vec<_>>()
    );
    for (page, _) in pages.iter().skip(1) {
        assert!(
            readme.contains(&format!("]({page}")),
            "README.md does not link {page}"
        );
    }
}

#[test]
fn every_toml_block_in_the_pages_is_a_config_drydock_accepts() {
    let blocks = all_blocks();
    let tomls: Vec<&Block> = blocks.iter().filter(|b| b.info == "toml").collect();
    assert!(tomls.len() >= 4, "the pages show the config");
    for block in tomls {
        let home = tempfile::tempdir().unwrap();
        make_home_paths(home.path(), &block.text);
        let config = home.path().join("drydock.toml");
        std::fs::write(&config, &block.text).unwrap();
        let overrides = drydock::config::Overrides {
            config_file: Some(config),
            ..Default::default()
        };
        let home_dir = home.path().to_str().unwrap().to_string();
        let env = move |name: &str| (name == "HOME").then(|| home_dir.clone());
        if let Err(error) = drydock::config::Config::resolve(&overrides, &env, home.path()) {
            panic!(
                "{}:{}: the config block is refused: {error}\n{}",
                block.page, block.line, block.text
            );
        }
    }
}

/// The `~/...` directories a config names, made in the fake home (a root must exist).
fn make_home_paths(home: &Path, toml: &str) {
    for word in toml.split('"') {
        if let Some(rest) = word.strip_prefix("~/") {
            std::fs::create_dir_all(home.join(rest)).unwrap();
        }
    }
}

#[test]
fn every_drydock_variable_the_pages_name_is_read_by_drydock() {
    let pages = pages();
    let named: BTreeSet<&str> = pages
        .iter()
        .flat_map(|(_, text)| text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')))
        .filter(|w| w.starts_with("DRYDOCK_") && w.len() > "DRYDOCK_".len())
        .collect();
    let source = ["src", "crates", "benches"]
        .map(|folder| source_text(&repo_root().join(folder)))
        .concat();
    let unknown: Vec<&&str> = named
        .iter()
        .filter(|name| !source.contains(&format!("\"{name}\"")))
        .collect();
    assert!(
        unknown.is_empty(),
        "the pages name variables neither drydock nor a benchmark reads: {unknown:?}"
    );
    for needed in [
        "DRYDOCK_TOKEN",
        "DRYDOCK_BIND",
        "DRYDOCK_CONFIG",
        "DRYDOCK_DATA_DIR",
        "DRYDOCK_INDEX",
        "DRYDOCK_ALLOW_ROOTS",
    ] {
        assert!(named.contains(needed), "no page lists {needed}");
    }
}

fn source_text(dir: &Path) -> String {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .map(|p: PathBuf| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn every_drydock_call_in_the_pages_names_a_served_tool_with_arguments_it_takes() {
    let calls: Vec<(Place, Vec<String>)> = shell_commands(&all_blocks())
        .into_iter()
        .filter(|(_, c)| c.len() > 1 && c[0] == "drydock" && c[1] == "call")
        .collect();
    assert!(!calls.is_empty(), "the pages show `drydock call`");
    let server = Server::start(&[]);
    let client = modern_client(&server.url).await;
    let tools = client.list_all_tools().await.unwrap();
    for (place, call) in calls {
        let name = &call[2];
        let tool = tools
            .iter()
            .find(|t| t.name == name.as_str())
            .unwrap_or_else(|| panic!("{place}: no tool `{name}`"));
        let arguments: Value = match call.get(3).filter(|a| !a.starts_with("--")) {
            Some(json) => serde_json::from_str(json)
                .unwrap_or_else(|e| panic!("{place}: arguments are not JSON: {e}")),
            None => Value::Object(Default::default()),
        };
        let schema = Value::Object((*tool.input_schema).clone());
        if let Err(problem) = fits(&arguments, &schema) {
            panic!("{place}: `{name}` would refuse {arguments}: {problem}");
        }
    }
    client.cancel().await.unwrap();
}

/// Whether `arguments` has the schema's required properties and no property it lacks.
fn fits(arguments: &Value, schema: &Value) -> Result<(), String> {
    let properties = schema["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let given = arguments.as_object().ok_or("not an object")?;
    if let Some(unknown) = given.keys().find(|k| !properties.contains_key(*k)) {
        return Err(format!(
            "no argument `{unknown}` (it takes: {:?})",
            properties.keys()
        ));
    }
    let required = schema["required"].as_array().cloned().unwrap_or_default();
    match required
        .iter()
        .filter_map(Value::as_str)
        .find(|r| !given.contains_key(*r))
    {
        Some(missing) => Err(format!("`{missing}` is required")),
        None => Ok(()),
    }
}

#[test]
fn code_blocks_are_read_with_their_lines() {
    let text = "intro\n```sh\nDRYDOCK_TOKEN=x drydock serve --bind 127.0.0.1:0  # a comment\n\
                scripts/a.sh && drydock doctor\n```\n```text\nnot checked\n```\n";
    let blocks = blocks("docs/a.md", text);
    assert_eq!(blocks.len(), 2);
    let commands = shell_commands(&blocks);
    let words = |c: &[&str]| c.iter().map(|w| w.to_string()).collect::<Vec<_>>();
    let at = |line| Place {
        page: "docs/a.md".into(),
        line,
    };
    assert_eq!(
        commands,
        vec![
            (at(3), words(&["drydock", "serve", "--bind", "127.0.0.1:0"])),
            (at(4), words(&["scripts/a.sh"])),
            (at(4), words(&["drydock", "doctor"])),
        ]
    );
    assert_eq!(at(4).to_string(), "docs/a.md:4");
    assert!(drydock::cli::accepts(["drydock", "serve", "--no-such-flag"]).is_err());
    for outcome in ["wont_do", "wont-do"] {
        let complete = ["drydock", "task", "complete", "3f2a9c1b", "--summary", "no"];
        let args = complete.into_iter().chain(["--outcome", outcome]);
        assert!(drydock::cli::accepts(args).is_ok(), "{outcome}");
    }
}
