//! AsciiDoc, as Asciidoctor reads it.
//!
//! - **Sections**: `= Title` is the document title (level 0), `== Section` level 1, and so on
//!   (`#` works like `=`). An `[[id]]` or `[#id]` line above a title is its anchor, else
//!   Asciidoctor's id (`_` + lowercase words joined by `_`).
//! - **Attributes** (`:name: value`) are dropped; the header's `:description:` opens the page.
//! - **Blocks**: `----` listing and `....` literal blocks become fenced code (`[source,rust]`
//!   above one names its language); `////` comment and `++++` passthrough blocks go; the
//!   delimiters of example, sidebar, quote and open blocks go and their text stays.
//!   `[NOTE]`-style admonition blocks are introduced by their name.
//! - `//` comments, `include::` and `image::` lines, and block attribute lines go.
//!
//! Every passage line keeps the number of the source line it was read from.

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};

/// Chunks an AsciiDoc document.
pub fn chunk_asciidoc(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(asciidoc_sections(source), meta)
}

/// The sections of an AsciiDoc document, before chunking.
pub fn asciidoc_sections(source: &str) -> Vec<Section> {
    let lines: Vec<&str> = source.lines().map(|l| l.trim_end()).collect();
    let mut sections = vec![Section {
        mergeable: true,
        ..Section::default()
    }];
    let mut titles: Vec<(usize, String)> = Vec::new();
    let mut anchor: Option<String> = None;
    let mut language: Option<String> = None;
    let mut admonition: Option<String> = None;
    let mut in_header = false;
    let mut i = 0;
    let push = |sections: &mut Vec<Section>, text: String, line: usize| {
        sections
            .last_mut()
            .expect("a first section")
            .lines
            .push(SourceLine::new(text, line as u32 + 1));
    };
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim();
        if trimmed.is_empty() {
            in_header = false;
            push(&mut sections, String::new(), i);
            i += 1;
            continue;
        }
        if let Some((level, title)) = section_title(line) {
            while titles.last().is_some_and(|(l, _)| *l >= level) {
                titles.pop();
            }
            let title = inline(title);
            titles.push((level, title.clone()));
            sections.push(Section {
                heading_path: titles.iter().map(|(_, t)| t.clone()).collect(),
                anchor: Some(anchor.take().unwrap_or_else(|| make_id(&title))),
                heading_line: Some(i as u32 + 1),
                lines: Vec::new(),
                mergeable: true,
            });
            in_header = level == 0;
            language = None;
            admonition = None;
            i += 1;
            continue;
        }
        if let Some((name, value)) = attribute_entry(trimmed) {
            if in_header && name == "description" && !value.is_empty() {
                push(&mut sections, value.to_string(), i);
            }
            i += 1;
            continue;
        }
        if let Some(id) = block_anchor(trimmed) {
            anchor = Some(id);
            i += 1;
            continue;
        }
        if trimmed.starts_with('[') && trimmed.ends_with(']') && !trimmed.starts_with("[[[") {
            let attributes = &trimmed[1..trimmed.len() - 1];
            let mut parts = attributes.split(',').map(str::trim);
            match parts.next() {
                Some("source") => language = parts.next().map(str::to_string),
                Some(kind) if is_admonition(kind) => admonition = Some(kind.to_string()),
                _ => {}
            }
            if let Some(id) = attributes
                .split(',')
                .next()
                .and_then(|a| a.split_once('#'))
                .map(|(_, id)| id.split(['.', '%']).next().unwrap_or(id))
                .filter(|id| !id.is_empty())
            {
                anchor = Some(id.to_string());
            }
            i += 1;
            continue;
        }
        if let Some(delimiter) = block_delimiter(trimmed) {
            let end = (i + 1..lines.len())
                .find(|&n| lines[n].trim() == trimmed)
                .unwrap_or(lines.len());
            match delimiter {
                Block::Code => {
                    let ticks = if lines[i + 1..end].iter().any(|l| l.contains("```")) {
                        "````"
                    } else {
                        "```"
                    };
                    let lang = language.take().unwrap_or_default();
                    push(&mut sections, format!("{ticks}{lang}"), i);
                    for (n, code) in lines.iter().enumerate().take(end).skip(i + 1) {
                        push(&mut sections, code.to_string(), n);
                    }
                    push(&mut sections, ticks.to_string(), end.min(lines.len() - 1));
                    i = end + 1;
                }
                Block::Dropped => i = end + 1,
                Block::Text => {
                    if let Some(kind) = admonition.take() {
                        push(&mut sections, format!("{}:", title_case(&kind)), i);
                    }
                    i += 1;
                }
            }
            continue;
        }
        if trimmed.starts_with("//")
            || trimmed.starts_with("include::")
            || trimmed.starts_with("image::")
            || trimmed.starts_with("toc::")
            || trimmed == "'''"
            || trimmed == "<<<"
        {
            i += 1;
            continue;
        }
        // `.Block title` lines read as text without their dot.
        let text = match trimmed.strip_prefix('.') {
            Some(title) if title.starts_with(|c: char| c.is_alphanumeric()) => title,
            _ => line,
        };
        push(&mut sections, inline(text), i);
        i += 1;
    }
    sections
}

enum Block {
    Code,
    Dropped,
    Text,
}

/// A delimiter line of four or more of one character (`--` alone opens an open block).
fn block_delimiter(line: &str) -> Option<Block> {
    if line == "--" {
        return Some(Block::Text);
    }
    let first = line.chars().next()?;
    if line.len() < 4 || !line.chars().all(|c| c == first) {
        return None;
    }
    match first {
        '-' | '.' => Some(Block::Code),
        '/' | '+' => Some(Block::Dropped),
        '=' | '*' | '_' => Some(Block::Text),
        _ => None,
    }
}

/// `== Title` or `## Title`: (level, title).
fn section_title(line: &str) -> Option<(usize, &str)> {
    let marker = line.chars().next().filter(|c| *c == '=' || *c == '#')?;
    let level = line.chars().take_while(|c| *c == marker).count();
    let title = line[level..].strip_prefix(' ')?.trim();
    (level <= 6 && !title.is_empty()).then_some((level - 1, title))
}

/// `:name: value` (and `:name!:`), as an attribute entry.
fn attribute_entry(line: &str) -> Option<(&str, &str)> {
    let rest = line.strip_prefix(':')?;
    let (name, value) = rest.split_once(':')?;
    let valid = !name.is_empty()
        && name
            .trim_end_matches('!')
            .chars()
            .all(|c| c.is_alphanumeric() || c == '-' || c == '_');
    valid.then(|| (name.trim_end_matches('!'), value.trim()))
}

/// `[[id]]` or `[[id,reftext]]`.
fn block_anchor(line: &str) -> Option<String> {
    let inner = line.strip_prefix("[[")?.strip_suffix("]]")?;
    let id = inner.split(',').next()?.trim();
    (!id.is_empty() && !id.contains(' ')).then(|| id.to_string())
}

fn is_admonition(kind: &str) -> bool {
    matches!(kind, "NOTE" | "TIP" | "IMPORTANT" | "WARNING" | "CAUTION")
}

fn title_case(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    let mut chars = lower.chars();
    chars
        .next()
        .map(|c| c.to_ascii_uppercase().to_string() + chars.as_str())
        .unwrap_or_default()
}

/// Links and cross references as their text: `link:url[text]` → `text`, `<<id,text>>` →
/// `text`, `xref:page.adoc[text]` → `text`; `+literal+` passthroughs lose their `+`.
fn inline(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix("<<")
            && let Some(end) = after.find(">>")
        {
            let target = &after[..end];
            out.push_str(target.split_once(',').map_or(target, |(_, t)| t.trim()));
            rest = &after[end + 2..];
            continue;
        }
        let macro_at = ["link:", "xref:", "https://", "http://", "mailto:"]
            .iter()
            .find(|m| rest.starts_with(**m));
        if let Some(prefix) = macro_at
            && let Some(open) = rest.find('[')
            && !rest[..open].contains(char::is_whitespace)
            && let Some(close) = rest[open..].find(']')
        {
            let label = &rest[open + 1..open + close];
            if label.is_empty() {
                let target = &rest[..open];
                out.push_str(
                    target
                        .strip_prefix(*prefix)
                        .filter(|_| prefix.ends_with(':') && !prefix.starts_with("http"))
                        .unwrap_or(target),
                );
            } else {
                out.push_str(label);
            }
            rest = &rest[open + close + 1..];
            continue;
        }
        let c = rest.chars().next().expect("not empty");
        out.push(c);
        rest = &rest[c.len_utf8()..];
    }
    out.replace("`+", "`").replace("+`", "`")
}

/// Asciidoctor's default section id: `_`, then lowercase words joined by `_`.
pub fn make_id(title: &str) -> String {
    let mut id = String::from("_");
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            id.push(c);
        } else if !id.ends_with('_') {
            id.push('_');
        }
    }
    id.trim_end_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::assert_well_formed;

    const DIR: &str = "src/docs/testdata/asciidoc";

    fn chunks(name: &str) -> (String, Vec<Chunk>) {
        let source = std::fs::read_to_string(format!("{DIR}/{name}")).unwrap();
        let chunks = chunk_asciidoc(&source, &FileMeta::new("lib", SourceType::Guide, name));
        assert_well_formed(&chunks);
        (source, chunks)
    }

    #[test]
    fn a_projects_readme() {
        let (source, chunks) = chunks("jetty-README.adoc");
        let quick = chunks
            .iter()
            .find(|c| c.heading_path == ["ECLIPSE JETTY", "Quick Setup"])
            .expect("Quick Setup under the title");
        assert_eq!(quick.anchor.as_deref(), Some("_quick_setup"));
        let all: String = chunks
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(all.contains("```\n$ java -jar $JETTY_HOME/start.jar --add-module=demos\n```"));
        assert!(
            all.contains("The Eclipse Jetty Project provides a:"),
            "{all}"
        );
        assert!(!all.contains("tag::quick"));
        assert!(!all.contains("\n----"));
        let lines: Vec<&str> = source.lines().collect();
        for chunk in &chunks {
            assert!(chunk.line_end as usize <= lines.len());
        }
    }

    #[test]
    fn a_guide_with_attributes_sources_and_admonitions() {
        let (_, chunks) = chunks("guide/getting-started.adoc");
        let paths: Vec<String> = chunks.iter().map(|c| c.heading_path.join(" > ")).collect();
        assert!(
            paths.contains(&"Getting Started > Configuration > Timeouts".to_string()),
            "{paths:#?}"
        );
        let first = &chunks[0];
        assert_eq!(first.heading_path, ["Getting Started"]);
        assert!(
            first.text.starts_with("How to install the server"),
            "{}",
            first.text
        );
        let all: String = chunks
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        assert!(all.contains("```toml\n[server]"), "{all}");
        assert!(all.contains("Warning:"), "{all}");
        assert!(!all.contains(":toc:"));
        assert!(!all.contains("////"));
        assert!(!all.contains("a comment block"));
        let timeouts = chunks
            .iter()
            .find(|c| c.heading_path.last().is_some_and(|h| h == "Timeouts"))
            .unwrap();
        assert_eq!(timeouts.anchor.as_deref(), Some("timeouts"));
    }
}
