//! What ARCHITECTURE.md states about the code, read from the page itself: the layers table
//! and the modules of a capability that faces may name besides its root.

use std::collections::BTreeSet;

use regex::Regex;

/// One row of the layers table: its name, its modules in order, and the modules of its own
/// row each may use (the arrows of its "may use" cell).
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub layer: String,
    pub modules: Vec<String>,
    pub arrows: Vec<(String, String)>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Architecture {
    pub rows: Vec<Row>,
    /// `capability::module` paths a face may name.
    pub published: BTreeSet<String>,
    pub text: String,
}

/// The line that opens the list of published modules.
pub const PUBLISHED_MARK: &str = "(`layering` reads this list)";

impl Architecture {
    pub fn parse(text: &str) -> Result<Architecture, String> {
        let rows = table_rows(text)?;
        let published = published_modules(text)?;
        Ok(Architecture {
            rows,
            published,
            text: text.to_string(),
        })
    }

    pub fn row_of(&self, module: &str) -> Option<(usize, &Row)> {
        self.rows
            .iter()
            .enumerate()
            .find(|(_, row)| row.modules.iter().any(|m| m == module))
    }

    /// The modules `module` may name: every module of the rows above its own, and those of
    /// its own row its arrows point to.
    pub fn allowed_uses(&self, module: &str) -> BTreeSet<String> {
        let Some((index, row)) = self.row_of(module) else {
            return BTreeSet::new();
        };
        let above = self.rows[..index]
            .iter()
            .flat_map(|r| r.modules.iter().cloned());
        let beside = row
            .arrows
            .iter()
            .filter(|(from, _)| from == module)
            .map(|(_, to)| to.clone());
        above.chain(beside).collect()
    }

    pub fn modules_of_layer(&self, layer: &str) -> BTreeSet<String> {
        self.rows
            .iter()
            .filter(|row| row.layer == layer)
            .flat_map(|row| row.modules.iter().cloned())
            .collect()
    }
}

fn backticked(cell: &str) -> Vec<String> {
    let word = Regex::new(r"`([A-Za-z_][A-Za-z0-9_:]*)`").unwrap();
    word.captures_iter(cell).map(|c| c[1].to_string()).collect()
}

/// The rows of the layers table under `## Layers`.
fn table_rows(text: &str) -> Result<Vec<Row>, String> {
    let section = text
        .split("\n## Layers")
        .nth(1)
        .ok_or("ARCHITECTURE.md has no `## Layers` section")?;
    let section = section.split("\n## ").next().unwrap_or_default();
    let arrow = Regex::new(r"((?:`\w+`,?\s*)+)→\s*((?:`\w+`(?:,\s*)?)+)").unwrap();
    let mut rows = Vec::new();
    // The table whose header is `| layer | modules | may use |` (the crates' table is not it).
    let table = section
        .lines()
        .skip_while(|line| !line.starts_with("| layer |"))
        .take_while(|line| line.starts_with('|'));
    for line in table {
        let cells: Vec<&str> = line.trim_matches('|').split('|').map(str::trim).collect();
        if cells.len() != 3 || cells[0] == "layer" || cells[0].starts_with("---") {
            continue;
        }
        let arrows = arrow
            .captures_iter(cells[2])
            .flat_map(|c| {
                let targets = backticked(&c[2]);
                backticked(&c[1]).into_iter().flat_map(move |from| {
                    targets
                        .clone()
                        .into_iter()
                        .map(move |to| (from.clone(), to))
                })
            })
            .collect();
        rows.push(Row {
            layer: cells[0].to_string(),
            modules: backticked(cells[1]),
            arrows,
        });
    }
    match rows.is_empty() {
        true => Err("the `## Layers` section has no table".into()),
        false => Ok(rows),
    }
}

/// The `capability::module` paths of the list after [`PUBLISHED_MARK`].
fn published_modules(text: &str) -> Result<BTreeSet<String>, String> {
    let after = text
        .split(PUBLISHED_MARK)
        .nth(1)
        .ok_or_else(|| format!("ARCHITECTURE.md has no list marked {PUBLISHED_MARK}"))?;
    Ok(after
        .lines()
        .skip(1)
        .skip_while(|line| line.trim().is_empty())
        .take_while(|line| line.starts_with("- ") || line.starts_with("  "))
        .flat_map(backticked)
        .filter(|path| path.contains("::"))
        .collect())
}
