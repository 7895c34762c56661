//! A page's own title and description, from YAML (`---`) or TOML (`+++`) front matter at the
//! top of a Markdown file, or from MDX exports ([`super::mdx`]). The front matter's lines are
//! blanked, not removed, so every other line keeps its number, and `---` is never read as a
//! setext underline.

use super::chunk::{Section, SourceLine};

/// What a page says about itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PageInfo {
    pub title: Option<String>,
    /// The description and the 1-based line it is on.
    pub description: Option<(String, u32)>,
}

impl PageInfo {
    /// Puts the page into its sections: the title heads every heading path (unless the
    /// page's first heading already says it), the description opens the first section.
    pub fn apply(&self, sections: &mut [Section]) {
        if let Some(title) = self.title.as_deref().filter(|t| !t.is_empty()) {
            let first_heading = sections.iter().find_map(|s| s.heading_path.first());
            let said = first_heading.is_some_and(|h| same_title(h, title));
            if !said {
                for section in sections.iter_mut() {
                    section.heading_path.insert(0, title.to_string());
                }
            }
        }
        if let (Some((description, line)), Some(first)) = (&self.description, sections.first_mut())
            && !description.is_empty()
        {
            let at = first.lines.partition_point(|l| l.line < *line);
            first
                .lines
                .insert(at, SourceLine::new(description.clone(), *line));
        }
    }

    /// Fills what `other` has and `self` lacks.
    pub fn or(self, other: PageInfo) -> PageInfo {
        PageInfo {
            title: self.title.or(other.title),
            description: self.description.or(other.description),
        }
    }
}

fn same_title(a: &str, b: &str) -> bool {
    let norm = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    norm(a) == norm(b)
}

/// The front matter of `source`, and the source with its lines blanked. A document without
/// front matter (or with one never closed) comes back unchanged.
pub fn split_front_matter(source: &str) -> (PageInfo, String) {
    let mut lines = source.split('\n');
    let fence = match lines.next().map(|l| l.trim_end_matches('\r').trim_end()) {
        Some("---") => "---",
        Some("+++") => "+++",
        _ => return (PageInfo::default(), source.to_string()),
    };
    // YAML may close with `...` too.
    let Some(close) = lines.position(|l| {
        let l = l.trim_end_matches('\r').trim_end();
        l == fence || (fence == "---" && l == "...")
    }) else {
        return (PageInfo::default(), source.to_string());
    };
    let all: Vec<&str> = source.split('\n').collect();
    let body = &all[1..=close];
    let info = if fence == "---" {
        yaml_info(body)
    } else {
        toml_info(body)
    };
    let blanked = all
        .iter()
        .enumerate()
        .map(|(i, line)| if i <= close + 1 { "" } else { line })
        .collect::<Vec<_>>()
        .join("\n");
    (info, blanked)
}

/// `title:` and `description:` at the top level of a YAML mapping: plain, quoted or block
/// scalars (`>` / `|`, continued on the more indented lines below).
fn yaml_info(lines: &[&str]) -> PageInfo {
    let mut info = PageInfo::default();
    for (i, line) in lines.iter().enumerate() {
        let line = line.trim_end_matches('\r');
        let Some((key, value)) = line.split_once(':') else {
            continue;
        };
        if key.starts_with(char::is_whitespace) {
            continue;
        }
        let value = value.trim();
        let value = if matches!(value.chars().next(), Some('>' | '|')) {
            lines[i + 1..]
                .iter()
                .take_while(|l| l.trim().is_empty() || l.starts_with(char::is_whitespace))
                .map(|l| l.trim())
                .collect::<Vec<_>>()
                .join(" ")
                .trim()
                .to_string()
        } else {
            unquote(value)
        };
        // Lines of `lines` start at the source's line 2.
        let line_no = i as u32 + 2;
        match key.trim() {
            "title" if info.title.is_none() => info.title = Some(value),
            "description" if info.description.is_none() => {
                info.description = Some((value, line_no));
            }
            _ => {}
        }
    }
    info
}

fn toml_info(lines: &[&str]) -> PageInfo {
    let text = lines.join("\n");
    let Ok(table) = text.parse::<toml::Table>() else {
        return PageInfo::default();
    };
    let string = |key: &str| table.get(key).and_then(|v| v.as_str()).map(str::to_string);
    let line_of = |key: &str| {
        lines
            .iter()
            .position(|l| l.trim_start().starts_with(key))
            .map_or(2, |i| i as u32 + 2)
    };
    PageInfo {
        title: string("title"),
        description: string("description").map(|d| (d, line_of("description"))),
    }
}

/// A YAML or JS scalar without its quotes (and without a trailing comment when unquoted).
pub fn unquote(value: &str) -> String {
    let value = value.trim();
    for quote in ['"', '\'', '`'] {
        if let Some(inner) = value
            .strip_prefix(quote)
            .and_then(|v| v.rfind(quote).map(|end| &v[..end]))
        {
            return inner.replace(&format!("\\{quote}"), &quote.to_string());
        }
    }
    match value.find(" #") {
        Some(comment) => value[..comment].trim().to_string(),
        None => value.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn yaml_front_matter_is_read_and_blanked() {
        let doc = "---\ntitle: useEffect\ndescription: >\n  Synchronize a component\n  with an external system.\ntags: [a, b]\n---\n\nIntro.\n";
        let (info, body) = split_front_matter(doc);
        assert_eq!(info.title.as_deref(), Some("useEffect"));
        assert_eq!(
            info.description,
            Some(("Synchronize a component with an external system.".into(), 3))
        );
        assert_eq!(body.lines().count(), doc.lines().count());
        assert_eq!(body.lines().nth(8), Some("Intro."));
        assert!(!body.contains("title"));
    }

    #[test]
    fn toml_front_matter_and_quotes() {
        let doc = "+++\ntitle = \"Install\"\ndescription = 'How to install it'\n[extra]\nx = 1\n+++\n# Install\n";
        let (info, body) = split_front_matter(doc);
        assert_eq!(info.title.as_deref(), Some("Install"));
        assert_eq!(info.description, Some(("How to install it".into(), 3)));
        assert!(body.ends_with("# Install\n"));
        let (info, _) = split_front_matter("---\ntitle: \"Say \\\"hi\\\"\"\n---\n");
        assert_eq!(info.title.as_deref(), Some("Say \"hi\""));
    }

    #[test]
    fn no_front_matter_or_an_unclosed_one_changes_nothing() {
        for doc in [
            "# A\n---\n",
            "---\ntitle: x\n",
            "text\n---\ntitle: x\n---\n",
            "",
        ] {
            let (info, body) = split_front_matter(doc);
            assert_eq!(info, PageInfo::default());
            assert_eq!(body, doc);
        }
    }
}
