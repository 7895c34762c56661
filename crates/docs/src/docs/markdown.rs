//! Heading-aware Markdown: every ATX or setext heading outside lists and quotes starts a
//! section whose body is the source text up to the next heading, verbatim (lists, tables and
//! code fences kept as written, so line ranges are exact). Headings inside code fences are
//! not headings: pulldown-cmark parses the document, this module only reads its headings.

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};
use std::collections::HashMap;

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};
use super::front_matter::{PageInfo, split_front_matter};

/// Chunks a Markdown document; YAML or TOML front matter gives the page its title.
pub fn chunk_markdown(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    let (page, body) = split_front_matter(source);
    chunk_markdown_page(&body, page, meta)
}

/// Chunks a Markdown body whose page title and description are known.
pub fn chunk_markdown_page(body: &str, page: PageInfo, meta: &FileMeta) -> Vec<Chunk> {
    let mut sections = markdown_sections(body);
    page.apply(&mut sections);
    chunk_sections(sections, meta)
}

struct Heading {
    level: usize,
    title: String,
    anchor: String,
    /// 0-based first and last source line of the heading (setext headings take two).
    first_line: usize,
    last_line: usize,
}

/// A doc comment or doc string (`lines`, Markdown) cut at its own headings: each section under
/// `base` + its headings, anchored by `anchor(slug)`, mapped back to the doc's source lines.
/// What precedes the first heading stays under `base`, from `doc_line` (where the doc is).
pub fn doc_sections(
    base: &[String],
    lines: Vec<SourceLine>,
    doc_line: u32,
    anchor: impl Fn(&str) -> String,
) -> Vec<Section> {
    let text = lines
        .iter()
        .map(|l| l.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    // markdown_sections numbers lines from 1 in `text`: map them back to the doc's lines.
    let line_of = |n: u32| lines.get(n as usize - 1).map_or(n, |l| l.line);
    markdown_sections(&text)
        .into_iter()
        .filter(|section| !section.is_blank())
        .map(|section| {
            let mut heading_path = base.to_vec();
            heading_path.extend(section.heading_path);
            Section {
                heading_path,
                anchor: section.anchor.map(|slug| anchor(&slug)),
                heading_line: Some(section.heading_line.map_or(doc_line, line_of)),
                lines: section
                    .lines
                    .into_iter()
                    .map(|l| SourceLine::new(l.text, line_of(l.line)))
                    .collect(),
                mergeable: false,
            }
        })
        .collect()
}

/// The sections of a Markdown document, before chunking.
pub fn markdown_sections(source: &str) -> Vec<Section> {
    let lines: Vec<&str> = source.lines().collect();
    let line_starts = line_starts(source);
    let headings = headings(source, &line_starts);

    let body = |from: usize, to: usize| -> Vec<SourceLine> {
        (from..to.min(lines.len()))
            .map(|i| SourceLine::new(lines[i], i as u32 + 1))
            .collect()
    };

    let mut sections = Vec::new();
    let first_heading = headings.first().map_or(lines.len(), |h| h.first_line);
    sections.push(Section {
        lines: body(0, first_heading),
        mergeable: true,
        ..Section::default()
    });

    let mut path: Vec<(usize, String)> = Vec::new();
    for (i, heading) in headings.iter().enumerate() {
        while path
            .last()
            .is_some_and(|(level, _)| *level >= heading.level)
        {
            path.pop();
        }
        path.push((heading.level, heading.title.clone()));
        let end = headings.get(i + 1).map_or(lines.len(), |h| h.first_line);
        sections.push(Section {
            heading_path: path.iter().map(|(_, t)| t.clone()).collect(),
            anchor: Some(heading.anchor.clone()),
            heading_line: Some(heading.first_line as u32 + 1),
            lines: body(heading.last_line + 1, end),
            mergeable: true,
        });
    }
    sections
}

fn line_starts(source: &str) -> Vec<usize> {
    std::iter::once(0)
        .chain(source.match_indices('\n').map(|(i, _)| i + 1))
        .collect()
}

fn line_of(line_starts: &[usize], offset: usize) -> usize {
    line_starts.partition_point(|&start| start <= offset) - 1
}

fn headings(source: &str, line_starts: &[usize]) -> Vec<Heading> {
    let options =
        Options::ENABLE_TABLES | Options::ENABLE_HEADING_ATTRIBUTES | Options::ENABLE_STRIKETHROUGH;
    let mut slugs = Slugger::default();
    let mut headings = Vec::new();
    let mut depth = 0usize;
    let mut current: Option<(HeadingLevel, Option<String>, String, std::ops::Range<usize>)> = None;
    for (event, range) in Parser::new_ext(source, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, id, .. }) if depth == 0 => {
                current = Some((level, id.map(|id| id.to_string()), String::new(), range));
                depth += 1;
            }
            Event::End(TagEnd::Heading(_)) if depth == 1 && current.is_some() => {
                depth -= 1;
                let (level, id, title, range) = current.take().expect("checked");
                let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
                let anchor = match id {
                    Some(id) => slugs.claim(id),
                    None => slugs.slug(&title),
                };
                let end = range.end.saturating_sub(1).max(range.start);
                headings.push(Heading {
                    level: level as usize,
                    first_line: line_of(line_starts, range.start),
                    last_line: line_of(line_starts, end).min(
                        // A setext underline ends the heading; a trailing newline does not.
                        line_of(line_starts, range.start) + 1,
                    ),
                    title,
                    anchor,
                });
            }
            Event::Start(_) => depth += 1,
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Text(text) | Event::Code(text) => {
                if let Some((_, _, title, _)) = current.as_mut() {
                    title.push_str(&text);
                }
            }
            Event::SoftBreak | Event::HardBreak => {
                if let Some((_, _, title, _)) = current.as_mut() {
                    title.push(' ');
                }
            }
            _ => {}
        }
    }
    headings
}

/// GitHub- and mdBook-style heading ids: lowercase; letters, digits, `-` and `_` kept;
/// spaces become `-`; everything else dropped; repeats get `-1`, `-2`, ….
#[derive(Default)]
pub struct Slugger {
    seen: HashMap<String, usize>,
}

impl Slugger {
    pub fn slug(&mut self, title: &str) -> String {
        self.claim(slug(title))
    }

    fn claim(&mut self, base: String) -> String {
        let count = self.seen.entry(base.clone()).or_insert(0);
        let id = if *count == 0 {
            base.clone()
        } else {
            format!("{base}-{count}")
        };
        *count += 1;
        id
    }
}

/// The GitHub/mdBook slug of one heading, without de-duplication.
pub fn slug(title: &str) -> String {
    title
        .trim()
        .chars()
        .filter_map(|c| {
            if c == ' ' {
                Some('-')
            } else if c.is_alphanumeric() || c == '-' || c == '_' {
                Some(c)
            } else {
                None
            }
        })
        .flat_map(char::to_lowercase)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::assert_well_formed;

    const TRICKY: &str = "\
Intro before any heading.

Title
=====

Some text under a setext title.

Subtitle with `code`
--------------------

```sh
# not a heading: a shell comment
echo hi
```

## Tables and lists

| a | b |
|---|---|
| 1 | 2 |

- item one
- item two

### Repeat
first
### Repeat
second
";

    fn meta() -> FileMeta {
        FileMeta::new("demo", SourceType::Guide, "README.md")
    }

    #[test]
    fn setext_and_atx_headings_with_fenced_hashes() {
        let sections = markdown_sections(TRICKY);
        let paths: Vec<_> = sections
            .iter()
            .map(|s| s.heading_path.join(" > "))
            .collect();
        assert_eq!(
            paths,
            [
                "",
                "Title",
                "Title > Subtitle with code",
                "Title > Tables and lists",
                "Title > Tables and lists > Repeat",
                "Title > Tables and lists > Repeat",
            ]
        );
        let anchors: Vec<_> = sections.iter().map(|s| s.anchor.clone()).collect();
        assert_eq!(anchors[2].as_deref(), Some("subtitle-with-code"));
        assert_eq!(anchors[4].as_deref(), Some("repeat"));
        assert_eq!(anchors[5].as_deref(), Some("repeat-1"));
        assert_eq!(sections[1].heading_line, Some(3));
        assert_eq!(
            sections[1].lines[0].line, 5,
            "body starts after the setext underline"
        );
        assert_eq!(sections[2].lines[1].text, "```sh");
        assert_eq!(sections[2].lines[1].line, 11);
    }

    #[test]
    fn tiny_sections_merge_and_lines_are_exact() {
        let chunks = chunk_markdown(TRICKY, &meta());
        assert_well_formed(&chunks);
        let source_lines: Vec<&str> = TRICKY.lines().collect();
        for chunk in &chunks {
            // Every non-synthetic line of a chunk is the source line its range says.
            let first = chunk.text.lines().next().unwrap();
            if !first.starts_with('#') {
                assert!(
                    source_lines[chunk.line_start as usize - 1..chunk.line_end as usize]
                        .contains(&first),
                    "{first:?} not in lines {}-{}",
                    chunk.line_start,
                    chunk.line_end
                );
            }
        }
        let table = chunks
            .iter()
            .find(|c| c.text.contains("| 1 | 2 |"))
            .unwrap();
        assert!(table.text.contains("- item two"));
        let shell = chunks.iter().find(|c| c.text.contains("echo hi")).unwrap();
        assert!(shell.text.contains("# not a heading"));
    }

    #[test]
    fn a_very_long_code_block_is_split_with_fences_reopened() {
        let mut doc = String::from("# Big\n\nSee below.\n\n```rust\n");
        for i in 0..400 {
            doc.push_str(&format!(
                "    println!(\"line {i}\"); // # looks like a heading\n"
            ));
        }
        doc.push_str("```\n\n## After\n\nDone.\n");
        let chunks = chunk_markdown(&doc, &meta());
        assert_well_formed(&chunks);
        let code: Vec<_> = chunks
            .iter()
            .filter(|c| c.text.contains("println!"))
            .collect();
        assert!(code.len() >= 4, "{}", code.len());
        for chunk in &code {
            let body: Vec<&str> = chunk
                .text
                .lines()
                .filter(|l| l.contains("println!"))
                .collect();
            let first: u32 = body[0]
                .split("line ")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse()
                .unwrap();
            assert_eq!(
                chunk.line_start.max(6),
                first + 6,
                "first code line is on its source line"
            );
        }
        assert!(chunks.iter().any(|c| c.heading_path == ["Big", "After"]));
    }

    #[test]
    fn front_matter_titles_the_page_and_is_no_setext_heading() {
        let doc = "---\ntitle: useEffect\ndescription: Synchronize with an external system.\n---\n\nIntro text.\n\n## Usage\n\nCall it at the top level.\n";
        let chunks = chunk_markdown(doc, &meta());
        assert_well_formed(&chunks);
        assert!(
            chunks.iter().all(|c| c.heading_path[0] == "useEffect"),
            "{chunks:?}"
        );
        assert!(
            !chunks
                .iter()
                .any(|c| c.heading_path.iter().any(|h| h.contains("title:")))
        );
        let intro = &chunks[0];
        assert!(
            intro
                .text
                .starts_with("Synchronize with an external system."),
            "{intro:?}"
        );
        assert!(intro.text.contains("Intro text."));
        assert_eq!(intro.line_start, 3, "the description's own line");
        // A page whose first heading is its title does not say it twice.
        let titled = chunk_markdown(
            "+++\ntitle = \"Install\"\n+++\n# Install\n\nRun it.\n",
            &meta(),
        );
        assert_eq!(titled[0].heading_path, ["Install"]);
        assert_eq!(titled[0].line_start, 4);
    }

    #[test]
    fn the_readme_of_this_repo() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
                .unwrap();
        let chunks = chunk_markdown(&readme, &meta());
        assert!(chunks.len() > 5);
        assert_well_formed(&chunks);
    }
}
