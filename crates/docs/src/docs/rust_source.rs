//! Rust sources → chunks of doc comments with the item they document.
//!
//! Outer docs (`///`, `/** */`) become one section each: the item's signature (the lines
//! after the comment and its attributes, up to the line with `{`, or ending in `;`, or, for
//! fields and variants, in `,`) as a fenced `rust` block, then the doc text. Inner docs
//! (`//!`, `/*! */`) become the module's section. The heading path is the module path from
//! the file path (`drydock::toolchain::cargo`) and the item, qualified by the top-level `impl`,
//! `struct`, `enum`, `trait` or `mod` block it sits in (`CommandSpec::new`). Line-based, no
//! parser: doc-like text inside string literals is the accepted imprecision.

use std::sync::LazyLock;

use regex::Regex;

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};
use super::markdown::doc_sections;

/// Chunks the doc comments of one Rust source file; `meta.file_path` names the module.
pub fn chunk_rust_source(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(rust_doc_sections(source, &module_path(meta)), meta)
}

/// `src/build/cargo.rs` of library `drydock` → `drydock::toolchain::cargo`; `src/lib.rs` → `drydock`.
pub fn module_path(meta: &FileMeta) -> String {
    let path = meta.file_path.replace('\\', "/");
    let inner = path
        .rsplit_once("src/")
        .map_or(path.as_str(), |(_, rest)| rest)
        .trim_end_matches(".rs");
    let mut parts: Vec<&str> = inner.split('/').filter(|p| !p.is_empty()).collect();
    if matches!(parts.last(), Some(&"mod" | &"lib" | &"main")) {
        parts.pop();
    }
    let library = meta.library.replace('-', "_");
    std::iter::once(library.as_str())
        .chain(parts)
        .collect::<Vec<_>>()
        .join("::")
}

static ITEM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(?:fn|struct|enum|trait|type|const|static|mod|union|macro_rules!)\s+(r#)?([A-Za-z_][A-Za-z0-9_]*)",
    )
    .expect("valid regex")
});
static FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:pub(?:\([^)]*\))?\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*[:(,{=]?")
        .expect("valid regex")
});
static CONTAINER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?:pub(?:\([^)]*\))?\s+)?(?:unsafe\s+)?(impl|struct|enum|trait|union|mod)\b(.*)\{\s*$",
    )
    .expect("valid regex")
});

/// The doc-comment sections of a Rust source file.
pub fn rust_doc_sections(source: &str, module: &str) -> Vec<Section> {
    let lines: Vec<&str> = source.lines().collect();
    let mut sections: Vec<Section> = Vec::new();
    let mut module_doc: Vec<SourceLine> = Vec::new();
    let mut container: Option<String> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if !line.starts_with(char::is_whitespace) {
            if line.starts_with('}') {
                container = None;
            } else if let Some(caps) = CONTAINER.captures(line) {
                container = container_name(&caps[1], &caps[2]);
            }
        }
        if let Some(rest) = trimmed.strip_prefix("//!") {
            module_doc.push(SourceLine::new(strip_one_space(rest), i as u32 + 1));
            i += 1;
            continue;
        }
        if trimmed.starts_with("/*!") {
            let (doc, next) = block_comment(&lines, i, "/*!");
            module_doc.extend(doc);
            i = next;
            continue;
        }
        let outer = trimmed.starts_with("///") && !trimmed.starts_with("////");
        let outer_block = trimmed.starts_with("/**")
            && !trimmed.starts_with("/***")
            && !trimmed.starts_with("/**/");
        if !outer && !outer_block {
            i += 1;
            continue;
        }
        let mut doc = Vec::new();
        if outer {
            while i < lines.len() {
                let t = lines[i].trim_start();
                match t.strip_prefix("///") {
                    Some(rest) if !t.starts_with("////") => {
                        doc.push(SourceLine::new(strip_one_space(rest), i as u32 + 1));
                        i += 1;
                    }
                    _ => break,
                }
            }
        } else {
            let (block, next) = block_comment(&lines, i, "/**");
            doc = block;
            i = next;
        }
        let (signature, next) = signature(&lines, i);
        let name = signature
            .first()
            .map(|first| item_name(&signature, first))
            .unwrap_or_default();
        let name = match (&container, signature.first()) {
            (Some(c), Some(first))
                if first.text.starts_with(char::is_whitespace) && !name.is_empty() =>
            {
                format!("{c}::{name}")
            }
            _ => name,
        };
        let mut body = Vec::new();
        if !signature.is_empty() {
            let first = signature[0].line;
            let last = signature[signature.len() - 1].line;
            let indent = signature
                .iter()
                .map(|l| l.text.len() - l.text.trim_start().len())
                .min()
                .unwrap_or(0);
            body.push(SourceLine::new("```rust", first));
            body.extend(signature.iter().map(|l| {
                SourceLine::new(l.text.get(indent..).unwrap_or(l.text.trim_start()), l.line)
            }));
            body.push(SourceLine::new("```", last));
            body.push(SourceLine::new("", last));
        }
        let mut heading_path = vec![module.to_string()];
        if !name.is_empty() {
            heading_path.push(name);
        }
        sections.extend(item_sections(heading_path, body, doc));
        i = next.max(i);
    }
    if let Some(first) = module_doc.first() {
        let first_line = first.line;
        let module_sections = doc_sections(&[module.to_string()], module_doc, first_line, slug);
        sections.splice(0..0, module_sections);
    }
    sections
}

/// An item's doc cut at its own headings (`# Examples`, `# Panics`): its signature and what
/// precedes the first heading under `[module, item]`, each section under `[module, item,
/// heading]`.
fn item_sections(
    heading_path: Vec<String>,
    signature: Vec<SourceLine>,
    doc: Vec<SourceLine>,
) -> Vec<Section> {
    let doc_line = doc.first().or(signature.first()).map_or(1, |l| l.line);
    let mut sections = doc_sections(&heading_path, doc, doc_line, slug);
    match sections.first_mut() {
        Some(first) if first.heading_path == heading_path => {
            first.lines.splice(0..0, signature);
        }
        _ if signature.is_empty() => {}
        _ => sections.insert(
            0,
            Section {
                heading_path,
                lines: signature,
                mergeable: false,
                ..Section::default()
            },
        ),
    }
    sections
}

/// rustdoc's anchor of a heading in a doc comment is its slug.
fn slug(slug: &str) -> String {
    slug.to_string()
}

fn strip_one_space(rest: &str) -> String {
    rest.strip_prefix(' ')
        .unwrap_or(rest)
        .trim_end()
        .to_string()
}

/// The text of a `/** … */` or `/*! … */` comment starting on line `start`, and the line after it.
fn block_comment(lines: &[&str], start: usize, opener: &str) -> (Vec<SourceLine>, usize) {
    let mut doc = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let mut text = lines[i].trim_start();
        if i == start {
            text = text.strip_prefix(opener).unwrap_or(text);
        }
        let end = text.find("*/");
        let content = end.map_or(text, |e| &text[..e]);
        let content = if i == start {
            content.trim_start()
        } else {
            content
        };
        let content = content
            .trim_start()
            .strip_prefix("* ")
            .or_else(|| content.trim_start().strip_prefix('*'))
            .unwrap_or(content);
        if !(i == start && content.trim().is_empty()) {
            doc.push(SourceLine::new(content.trim_end(), i as u32 + 1));
        }
        i += 1;
        if end.is_some() {
            break;
        }
    }
    (doc, i)
}

/// The item after a doc comment: attributes and comments skipped, then lines up to the
/// one holding `{` (cut there) or ending in `;` or `,`. At most 12 lines.
fn signature(lines: &[&str], start: usize) -> (Vec<SourceLine>, usize) {
    let mut i = start;
    let mut attribute_depth = 0i32;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if attribute_depth > 0 || t.starts_with("#[") {
            attribute_depth += t.matches('[').count() as i32 - t.matches(']').count() as i32;
            i += 1;
            continue;
        }
        if t.is_empty() || (t.starts_with("//") && !t.starts_with("///")) {
            i += 1;
            continue;
        }
        break;
    }
    let mut signature = Vec::new();
    while i < lines.len() && signature.len() < 12 {
        let line = lines[i];
        let t = line.trim();
        if t.starts_with("///") || t.starts_with("//!") {
            break;
        }
        if let Some(brace) = line.find('{') {
            let head = line[..brace].trim_end();
            if !head.trim().is_empty() {
                signature.push(SourceLine::new(head, i as u32 + 1));
            }
            i += 1;
            break;
        }
        signature.push(SourceLine::new(line.trim_end(), i as u32 + 1));
        i += 1;
        if t.ends_with(';')
            || t.ends_with(',')
            || t.ends_with(')') && !t.contains("fn ") && !t.contains("struct ")
        {
            break;
        }
    }
    (signature, i)
}

fn item_name(signature: &[SourceLine], first: &SourceLine) -> String {
    let joined = signature
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join(" ");
    if let Some(caps) = ITEM.captures(&joined) {
        return caps[2].to_string();
    }
    if let Some(caps) = CONTAINER.captures(&format!("{} {{", first.text.trim())) {
        return container_name(&caps[1], &caps[2]).unwrap_or_default();
    }
    FIELD
        .captures(&first.text)
        .map(|c| c[1].to_string())
        .filter(|n| n != "pub" && n != "impl")
        .unwrap_or_default()
}

/// `impl<T> Trait for Vec<T>` → `Vec`; `struct Foo<T>` → `Foo`; `mod tests` → `tests`.
fn container_name(keyword: &str, rest: &str) -> Option<String> {
    let rest = rest.trim();
    let target = if keyword == "impl" {
        let rest = skip_generics(rest);
        let rest = rest.split(" where ").next().unwrap_or(rest);
        rest.rsplit(" for ").next().unwrap_or(rest).trim()
    } else {
        rest
    };
    let name: String = target
        .trim_start_matches('&')
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
        .collect();
    let name = name.rsplit("::").next().unwrap_or(&name).to_string();
    (!name.is_empty()).then_some(name)
}

fn skip_generics(text: &str) -> &str {
    if !text.starts_with('<') {
        return text;
    }
    let mut depth = 0;
    for (i, c) in text.char_indices() {
        match c {
            '<' => depth += 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    return text[i + 1..].trim_start();
                }
            }
            _ => {}
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::{assert_well_formed, outline};

    #[test]
    fn doc_comments_of_process_rs() {
        // drydock's own src/process.rs as it was before it became a folder: a real module
        // that keeps still while the code moves on.
        let source = include_str!("testdata/process.rs.txt");
        let meta = FileMeta::new("drydock", SourceType::Source, "src/process.rs");
        let chunks = chunk_rust_source(source, &meta);
        assert_well_formed(&chunks);
        let lines: Vec<&str> = source.lines().collect();

        let module = &chunks[0];
        assert_eq!(module.heading_path, ["drydock::process"]);
        assert_eq!(module.line_start, 1);
        assert!(module.text.starts_with("Run a child process"));

        let group = chunks
            .iter()
            .find(|c| c.heading_path == ["drydock::process", "ProcessGroup"])
            .expect("ProcessGroup");
        assert!(
            group.text.starts_with("```rust\nstruct ProcessGroup\n```"),
            "{}",
            group.text
        );
        assert!(lines[group.line_end as usize - 1].contains("struct ProcessGroup"));

        let new = chunks
            .iter()
            .find(|c| c.heading_path == ["drydock::process", "CommandSpec::new"])
            .expect("CommandSpec::new");
        assert!(new.text.contains("pub fn new"), "{}", new.text);
        assert!(new.text.contains("A spec with the inherited environment"));
        assert!(lines[new.line_start as usize - 1].contains("/// A spec with"));

        let field = chunks
            .iter()
            .find(|c| c.heading_path == ["drydock::process", "CommandSpec::program"])
            .expect("field doc");
        assert!(field.text.contains("resolved on PATH"));

        let run = chunks
            .iter()
            .find(|c| c.heading_path == ["drydock::process", "run"])
            .expect("run");
        assert!(run.text.contains("pub async fn run"), "{}", run.text);
        for chunk in &chunks {
            assert!(!chunk.text.contains("///"), "{}", chunk.text);
        }
    }

    #[test]
    fn doc_comments_are_cut_at_their_own_headings() {
        let source = "\
//! Parsing.
//!
//! # Formats
//!
//! Two of them.

/// Parses `text`.
///
/// # Examples
///
/// ```
/// # use demo::parse;
/// parse(\"1\");
/// ```
///
/// # Panics
///
/// On an empty string.
pub fn parse(text: &str) -> u32 {
    0
}
";
        let meta = FileMeta::new("demo", SourceType::Source, "src/lib.rs");
        let chunks = chunk_rust_source(source, &meta);
        assert_well_formed(&chunks);
        assert_eq!(
            outline(&chunks),
            [
                ("demo".to_string(), None, 1),
                ("demo > Formats".to_string(), Some("formats"), 3),
                ("demo > parse".to_string(), None, 7),
                ("demo > parse > Examples".to_string(), Some("examples"), 9),
                ("demo > parse > Panics".to_string(), Some("panics"), 16),
            ]
        );
        assert_eq!(
            chunks[2].text,
            "```rust\npub fn parse(text: &str) -> u32\n```\n\nParses `text`."
        );
        assert!(
            chunks[3].text.contains("# use demo::parse;"),
            "a doctest's hidden line is code, not a heading: {}",
            chunks[3].text
        );
        assert_eq!(chunks[4].text, "On an empty string.");
    }

    #[test]
    fn block_docs_and_attributes() {
        let source = "\
/*! Crate docs. */

/**
 * Adds one.
 */
#[inline]
#[cfg_attr(
    test,
    allow(dead_code)
)]
pub fn add_one(x: i32)
    -> i32 {
    x + 1
}
";
        let meta = FileMeta::new("demo", SourceType::Source, "src/lib.rs");
        let chunks = chunk_rust_source(source, &meta);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[0].text, "Crate docs.");
        assert_eq!(chunks[1].heading_path, ["demo", "add_one"]);
        assert_eq!(
            chunks[1].text,
            "```rust\npub fn add_one(x: i32)\n    -> i32\n```\n\nAdds one."
        );
        assert_eq!((chunks[1].line_start, chunks[1].line_end), (4, 12));
    }
}
