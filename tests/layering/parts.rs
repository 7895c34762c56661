//! The task system's parts as ARCHITECTURE.md orders them (the table whose header starts
//! `| tier |`), and the imports inside `crates/tasks/src/tasks` checked against it: a module
//! may use the modules of the tiers before its own and those listed before it in its row,
//! so imports run one way.

use std::collections::BTreeMap;

use regex::Regex;

/// The modules of the task system, tier by tier, each row in its order.
#[derive(Debug, Clone, PartialEq)]
pub struct Tiers(pub Vec<Vec<String>>);

impl Tiers {
    pub fn parse(text: &str) -> Result<Tiers, String> {
        let table = text
            .split("\n| tier |")
            .nth(1)
            .ok_or("no table headed `| tier |`")?;
        let word = Regex::new(r"`([a-z_]+)`").unwrap();
        let rows: Vec<Vec<String>> = table
            .lines()
            .skip(2)
            .take_while(|line| line.starts_with('|'))
            .map(|line| {
                let modules = line.split('|').nth(2).unwrap_or_default();
                word.captures_iter(modules)
                    .map(|c| c[1].to_string())
                    .collect()
            })
            .collect();
        match rows.iter().any(Vec::is_empty) || rows.is_empty() {
            true => Err("a tier with no module".into()),
            false => Ok(Tiers(rows)),
        }
    }

    /// Where `module` stands: its tier and its place in the row.
    fn place(&self, module: &str) -> Option<(usize, usize)> {
        self.0.iter().enumerate().find_map(|(tier, row)| {
            let at = row.iter().position(|m| m == module)?;
            Some((tier, at))
        })
    }

    /// Every import in `files` (paths relative to `crates/tasks/src/tasks`, with their text)
    /// that runs up or across, and every module the table does not place.
    pub fn broken(&self, files: &[(String, String)]) -> Vec<String> {
        let mut broken = Vec::new();
        for (path, text) in files {
            let module = module_of(path);
            if module == "mod" {
                continue;
            }
            let Some(here) = self.place(&module) else {
                broken.push(format!("{path}: module `{module}` has no tier"));
                continue;
            };
            for (line, used) in imports(path, text) {
                if used == module {
                    continue;
                }
                match self.place(&used) {
                    Some(there) if there < here => {}
                    None if used != FRONT => {}
                    _ => broken.push(format!(
                        "{path}:{line}: `{module}` uses `{used}`, which is not below it"
                    )),
                }
            }
        }
        broken
    }
}

/// What a part names when it imports an item through the front (`super::Tasks`).
const FRONT: &str = "the front (mod.rs)";

/// The task system's module a file belongs to: `ledger` for `ledger.rs`, `lander` for
/// `lander/batch.rs`; `mod` for the front.
fn module_of(path: &str) -> String {
    let first = path.split('/').next().unwrap_or_default();
    first.trim_end_matches(".rs").to_string()
}

/// The task system's modules `text` names, with their line: through as many `super::` as lead
/// from the file to the front, and through `crate::tasks::`. Tests are left out: they may build any part.
fn imports(path: &str, text: &str) -> Vec<(usize, String)> {
    let code = match text.find("#[cfg(test)]\nmod tests") {
        Some(at) => &text[..at],
        None => text,
    };
    // Comments name other modules freely; each line keeps its place for the line numbers.
    let uncommented: Vec<&str> = code
        .lines()
        .map(|line| match line.trim_start().starts_with("//") {
            true => "",
            false => line,
        })
        .collect();
    let text = &uncommented.join("\n");
    let depth = path.matches('/').count() - usize::from(path.ends_with("/mod.rs"));
    let to_front = "super::".repeat(depth + 1);
    let lead = format!(r"(?:\bcrate::tasks::|(?:^|[^:])\b{to_front})");
    let group = Regex::new(&format!(r"{lead}\{{")).unwrap();
    let single = Regex::new(&format!(r"{lead}([A-Za-z_]+)")).unwrap();
    let line_of = |at: usize| text[..at].matches('\n').count() + 1;
    let mut found = Vec::new();
    for opening in group.find_iter(text) {
        for head in group_heads(&text[opening.end()..]) {
            found.push((line_of(opening.start()), head));
        }
    }
    for captures in single.captures_iter(text) {
        let at = captures.get(0).unwrap().start();
        found.push((line_of(at), captures[1].to_string()));
    }
    found.retain(|(_, used)| !["self", "super"].contains(&used.as_str()));
    for (_, used) in &mut found {
        if used.starts_with(char::is_uppercase) {
            *used = FRONT.to_string();
        }
    }
    found.sort();
    found.dedup();
    found
}

/// The first name of each path in a `use` group that `rest` opens (after its `{`), however
/// rustfmt wrapped it and whatever groups it nests.
fn group_heads(rest: &str) -> Vec<String> {
    let (mut heads, mut depth, mut current) = (Vec::new(), 0, String::new());
    for c in rest.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => heads.push(std::mem::take(&mut current)),
            c if depth == 0 => current.push(c),
            _ => {}
        }
    }
    heads.push(current);
    heads
        .iter()
        .filter_map(|path| {
            let head = path.trim().split("::").next()?.trim();
            (!head.is_empty()).then(|| head.to_string())
        })
        .collect()
}

/// The files of the task system, read from `dir`.
pub fn read(dir: &std::path::Path) -> Vec<(String, String)> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir) {
        let path = entry.unwrap().into_path();
        if path.extension().is_some_and(|ext| ext == "rs") {
            let relative = path.strip_prefix(dir).unwrap().display().to_string();
            files.insert(relative, std::fs::read_to_string(&path).unwrap());
        }
    }
    files.into_iter().collect()
}
