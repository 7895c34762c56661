//! MDX: Markdown with ESM and JSX. Before the Markdown reader sees a page, its `import` and
//! `export` statements and its JSX markup (component tags, `{expressions}`) are blanked line
//! by line, so passages hold the prose and code fences alone and keep their line numbers.
//! A title or description the page exports (`export const title = …`,
//! `export const meta = { title: …, description: … }`) is the page's own.

use std::sync::LazyLock;

use regex::Regex;

use super::chunk::{Chunk, FileMeta};
use super::front_matter::{PageInfo, split_front_matter, unquote};
use super::markdown::chunk_markdown_page;

/// Chunks an MDX page.
pub fn chunk_mdx(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    let (front, source) = split_front_matter(source);
    let (exported, body) = strip_mdx(&source);
    chunk_markdown_page(&body, front.or(exported), meta)
}

/// The page's exported title and description, and the source with ESM and JSX blanked.
pub fn strip_mdx(source: &str) -> (PageInfo, String) {
    let lines: Vec<&str> = source.split('\n').collect();
    let mut out: Vec<&str> = Vec::with_capacity(lines.len());
    let mut info = PageInfo::default();
    let mut fence: Option<(char, usize)> = None;
    // JSX components open around the line: Markdown inside them is kept, their tags are not.
    let mut components = 0usize;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let trimmed = line.trim_start();
        if let Some((marker, len)) = fence {
            out.push(line);
            if fence_of(trimmed).is_some_and(|(m, l)| m == marker && l >= len)
                && trimmed.trim_start_matches(marker).trim().is_empty()
            {
                fence = None;
            }
            i += 1;
            continue;
        }
        if let Some(open) = fence_of(trimmed) {
            fence = Some(open);
            out.push(line);
            i += 1;
            continue;
        }
        let esm = components == 0
            && !line.starts_with(char::is_whitespace)
            && (trimmed.starts_with("import ") || trimmed.starts_with("export "));
        if esm {
            let end = statement_end(&lines, i);
            let statement = lines[i..=end].join("\n");
            if trimmed.starts_with("export ") {
                info = info.or(exported_info(&statement, i as u32 + 1));
            }
            out.extend(std::iter::repeat_n("", end - i + 1));
            i = end + 1;
            continue;
        }
        if is_jsx_start(trimmed) || trimmed.starts_with('{') {
            let (end, opened) = jsx_end(&lines, i);
            components = (components as isize + opened).max(0) as usize;
            out.extend(std::iter::repeat_n("", end - i + 1));
            i = end + 1;
            continue;
        }
        out.push(line);
        i += 1;
    }
    (info, out.join("\n"))
}

fn fence_of(trimmed: &str) -> Option<(char, usize)> {
    let marker = trimmed.chars().next().filter(|c| *c == '`' || *c == '~')?;
    let len = trimmed.chars().take_while(|c| *c == marker).count();
    (len >= 3).then_some((marker, len))
}

/// A line that opens or closes a JSX element: `<Tabs>`, `</Tabs>`, `<>`, `<Demo.Box x={1} />`,
/// or an HTML tag while a component is open (`<div>` inside a demo).
fn is_jsx_start(trimmed: &str) -> bool {
    let rest = trimmed
        .strip_prefix("</")
        .or_else(|| trimmed.strip_prefix('<'));
    match rest.and_then(|r| r.chars().next()) {
        Some('>') => true,
        Some(c) => c.is_ascii_uppercase() || (c.is_ascii_lowercase() && looks_like_tag(trimmed)),
        None => false,
    }
}

/// `<div …>`-like: a tag name, then a space, `>` or `/`.
fn looks_like_tag(trimmed: &str) -> bool {
    let name = trimmed.trim_start_matches(['<', '/']);
    let len = name
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        .count();
    matches!(name[len..].chars().next(), Some(' ' | '>' | '/') | None)
}

/// The last line of the ESM statement starting at `start`: brackets balanced and the line
/// not ending in an operator, or the line with the `from '…'` of an import.
fn statement_end(lines: &[&str], start: usize) -> usize {
    let mut depth = 0isize;
    for (i, line) in lines.iter().enumerate().skip(start) {
        depth += bracket_balance(line);
        let end = line.trim_end();
        let continues = end.ends_with(['=', ',', '(', '{', '[', '+', '?', ':']) || end.is_empty();
        if depth <= 0 && !continues {
            return i;
        }
        if i > start && depth <= 0 && end.is_empty() {
            return i;
        }
    }
    lines.len() - 1
}

/// Opening minus closing brackets outside strings.
fn bracket_balance(line: &str) -> isize {
    let mut depth = 0;
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for c in line.chars() {
        if let Some(q) = quote {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            '"' | '\'' | '`' => quote = Some(c),
            '{' | '(' | '[' => depth += 1,
            '}' | ')' | ']' => depth -= 1,
            _ => {}
        }
    }
    depth
}

/// The last line of the JSX tag or expression starting at `start`, and how many elements it
/// leaves open (+1 for `<Tabs>`, -1 for `</Tabs>`, 0 for `<Demo />` or `<b>x</b>`).
fn jsx_end(lines: &[&str], start: usize) -> (usize, isize) {
    let mut braces = 0isize;
    let mut quote: Option<char> = None;
    let mut opened = 0isize;
    let mut in_tag = false;
    let mut closing = false;
    let mut prev = ' ';
    let mut after_lt = false;
    for (i, line) in lines.iter().enumerate().skip(start) {
        for c in line.chars() {
            if let Some(q) = quote {
                if c == q && prev != '\\' {
                    quote = None;
                }
                prev = c;
                continue;
            }
            if after_lt {
                after_lt = false;
                if c == '/' {
                    closing = true;
                    prev = c;
                    continue;
                }
            }
            match c {
                '{' => braces += 1,
                '}' => braces -= 1,
                '"' | '\'' | '`' if braces > 0 || in_tag => quote = Some(c),
                '<' if braces == 0 => {
                    in_tag = true;
                    closing = false;
                    after_lt = true;
                }
                '>' if braces == 0 && in_tag => {
                    in_tag = false;
                    if closing {
                        opened -= 1;
                    } else if prev != '/' {
                        opened += 1;
                    }
                }
                _ => {}
            }
            prev = c;
        }
        if braces <= 0 && !in_tag && quote.is_none_or(|q| q != '`') {
            return (i, opened);
        }
        prev = '\n';
    }
    (lines.len() - 1, opened)
}

static TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\btitle\s*[:=]\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"#).expect("valid")
});
static DESCRIPTION: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\bdescription\s*[:=]\s*("(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|`[^`]*`)"#)
        .expect("valid")
});

/// `title` and `description` of an `export` statement starting on `line`.
fn exported_info(statement: &str, line: u32) -> PageInfo {
    let title = TITLE.captures(statement).map(|c| unquote(&c[1]));
    let description = DESCRIPTION.captures(statement).map(|c| {
        let at = statement[..c.get(0).expect("match").start()]
            .matches('\n')
            .count() as u32;
        (unquote(&c[1]), line + at)
    });
    PageInfo { title, description }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::assert_well_formed;

    const DIR: &str = "src/docs/testdata/mdx";

    fn read(name: &str) -> String {
        std::fs::read_to_string(format!("{DIR}/{name}")).unwrap()
    }

    fn chunks(name: &str) -> Vec<Chunk> {
        let chunks = chunk_mdx(&read(name), &FileMeta::new("site", SourceType::Guide, name));
        assert_well_formed(&chunks);
        chunks
    }

    #[test]
    fn exports_and_imports_are_dropped_and_the_exported_title_heads_the_page() {
        let chunks = chunks("use-effect.mdx");
        let all: String = chunks.iter().map(|c| c.text.as_str()).collect();
        // The page's own ESM is gone; the imports inside its code fences stay.
        assert!(!all.contains("../components"), "{all}");
        assert!(!all.contains("export const"), "{all}");
        assert!(all.contains("import { createConnection } from './chat.js';"));
        for chunk in &chunks {
            assert_eq!(chunk.heading_path[0], "useEffect", "{chunk:?}");
        }
    }

    #[test]
    fn jsx_markup_stays_out_and_code_fences_stay_in() {
        for name in ["use-effect.mdx", "installation.mdx", "button.mdx"] {
            let chunks = chunks(name);
            let source = read(name);
            let all: String = chunks.iter().map(|c| c.text.as_str()).collect();
            for jsx in [
                "<Tabs",
                "</Tabs>",
                "<TabItem",
                "<Sandpack",
                "<Demo",
                "<Callout",
                "<div",
            ] {
                assert!(!all.contains(jsx), "{name}: {jsx} in\n{all}");
            }
            // Every code fence of the page is in a passage, whole.
            for fence in source.split("```").skip(1).step_by(2) {
                let code = fence.split_once('\n').map_or("", |(_, c)| c).trim();
                if !code.is_empty() {
                    assert!(all.contains(code), "{name}: missing code\n{code}");
                }
            }
        }
    }

    #[test]
    fn front_matter_and_an_exported_meta_object() {
        let installation = chunks("installation.mdx");
        assert_eq!(installation[0].heading_path[0], "Installation");
        assert!(
            installation[0]
                .text
                .contains("Install the library with your package manager"),
            "{:?}",
            installation[0]
        );
        let button = chunks("button.mdx");
        assert!(button.iter().all(|c| c.heading_path[0] == "Button"));
        assert!(button[0].text.contains("Buttons trigger an action"));
        assert!(
            button
                .iter()
                .any(|c| c.text.contains("Use `variant` to pick"))
        );
    }

    #[test]
    fn esm_and_jsx_lines_are_blanked_not_removed() {
        let source = read("use-effect.mdx");
        let (_, body) = strip_mdx(&source);
        assert_eq!(body.split('\n').count(), source.split('\n').count());
    }
}
