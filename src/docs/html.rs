//! rustdoc and mdBook HTML (and plain HTML pages) → chunks.
//!
//! The page is parsed with html5ever (through scraper's tree) by a sink that records the
//! source line every element starts on, so line ranges point into the HTML file. Chrome and
//! navigation are dropped (see [`is_chrome`]); headings h1–h6 start sections and give their
//! `id` as anchor; paragraphs, lists, tables and definition lists become text lines; `<pre>`
//! becomes a fenced code block (mdBook's hidden `boring` lines left out).
//!
//! rustdoc pages get their item structure: the heading path starts with the item's full
//! path (`std::vec::Vec`, from `<title>`); the declaration (`pre.item-decl`) opens the page's
//! first section; headings of the top doc are sections; each documented member (a method,
//! required method, field, variant, associated type or constant) is one section "signature +
//! doc" named after it (`["std::vec::Vec", "push"]`, anchor `method.push`), never merged with
//! its neighbours. Trait implementations keep the impl header, its own doc and the member
//! signatures and docs of the members that have docs of their own, not the others (their
//! docs are the trait's, which the trait's page has), and small impls share chunks; auto
//! trait, blanket and implementor listings and "Methods from Deref" (the target's page has
//! them) are dropped. Translations (a page whose `<html lang>` is not English) are skipped.
//!
//! Sphinx pages (the Python docs, any Sphinx project's build) get their API objects: each
//! documented object (`dl.py.function > dt#json.dumps`, a class and the methods in it) is a
//! section of its own under the section it is in, named as Sphinx's table of contents names
//! it (`json.dumps()`, `decode()` under `json.JSONDecoder`) and anchored by its id, as the
//! reStructuredText chunker reads the same objects from the sources. A heading's anchor is
//! its permalink's (Sphinx puts the id on the enclosing section), and the permalink's "¶"
//! is chrome.

mod lines;

use std::collections::HashMap;
use std::path::Path;

use ego_tree::NodeId;
use scraper::node::Element;
use scraper::{ElementRef, Node};

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};
use lines::parse_with_lines;

/// Whether an HTML documentation file is generated noise to leave out of the index:
///
/// - anything that is not `.html`/`.htm` (`search-index*.js`, `sidebar-items*.js`, CSS, …);
/// - rustdoc's rendered sources: `*.rs.html`, or any page under a `src/` directory;
/// - SIMD intrinsics: pages under `core::arch`, `std::arch` or `core::core_arch`
///   (40 000 of the 48 000 pages rustup installs);
/// - mdBook's `print.html` (the whole book again on one page) and `toc.html`;
/// - rustdoc's `all.html` item listings and its `settings.html` / `help.html` chrome pages,
///   and `404.html`;
/// - redirect stubs: pages under 4 KiB with a `<meta http-equiv="refresh">`.
pub(crate) fn skip_html(path: &Path, content: &str) -> bool {
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let lower = name.to_ascii_lowercase();
    if !(lower.ends_with(".html") || lower.ends_with(".htm")) {
        return true;
    }
    if lower.ends_with(".rs.html")
        || matches!(
            lower.as_str(),
            "print.html" | "toc.html" | "all.html" | "settings.html" | "help.html" | "404.html"
        )
    {
        return true;
    }
    let components: Vec<&str> = path
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .collect();
    if components.contains(&"src") {
        return true;
    }
    let arch = components
        .windows(2)
        .any(|w| matches!(w[0], "core" | "std") && matches!(w[1], "arch" | "core_arch"));
    if arch {
        return true;
    }
    if is_translation(content) {
        return true;
    }
    content.len() < 4096
        && content
            .to_ascii_lowercase()
            .contains("http-equiv=\"refresh\"")
}

/// Whether the page says it is in a language other than English (`<html lang="es">`): the
/// translations mdBook books ship beside the English pages (Rust by Example's es, ja, ko,
/// zh), which would answer English questions with a copy in another language.
fn is_translation(content: &str) -> bool {
    // The first KiB, ended at a character boundary.
    let mut end = content.len().min(1024);
    while !content.is_char_boundary(end) {
        end -= 1;
    }
    let head = &content[..end];
    let Some(start) = head.find("<html") else {
        return false;
    };
    let tag = &head[start..];
    let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
    let Some(lang) = tag.split("lang=\"").nth(1) else {
        return false;
    };
    let lang = lang.split('"').next().unwrap_or("").to_ascii_lowercase();
    !(lang.is_empty() || lang == "en" || lang.starts_with("en-"))
}

/// Chunks one HTML page (rustdoc, mdBook or plain).
pub(crate) fn chunk_html(content: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(html_sections(content), meta)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageKind {
    Rustdoc,
    MdBook,
    Sphinx,
    Plain,
}

/// Whether a page was generated by rustdoc (an API page rather than a guide).
pub(crate) fn is_rustdoc(content: &str) -> bool {
    content.contains("content=\"rustdoc\"")
}

/// The sections of an HTML page, before chunking.
pub(crate) fn html_sections(content: &str) -> Vec<Section> {
    let (html, lines) = parse_with_lines(content);
    let root = html.root_element();
    let kind = if is_rustdoc(content) {
        PageKind::Rustdoc
    } else if content.contains("id=\"mdbook-") || content.contains("class=\"menu-title\"") {
        PageKind::MdBook
    } else if content.contains("class=\"sig sig-object") {
        PageKind::Sphinx
    } else {
        PageKind::Plain
    };
    let title = first(root, |e| e.name() == "title").map(|t| squash(&t.text().collect::<String>()));
    let root_path = match kind {
        PageKind::Rustdoc => title
            .as_deref()
            .map(rustdoc_item_path)
            .into_iter()
            .collect(),
        PageKind::MdBook => first(root, |e| e.name() == "h1" && has_class(e, "menu-title"))
            .map(|h| squash(&h.text().collect::<String>()))
            .into_iter()
            .collect(),
        PageKind::Sphinx | PageKind::Plain => Vec::new(),
    };
    let body = match kind {
        PageKind::Rustdoc => first(root, |e| e.attr("id") == Some("main-content")),
        PageKind::Sphinx => first(root, |e| e.attr("role") == Some("main")),
        _ => None,
    }
    .or_else(|| first(root, |e| e.name() == "main"))
    .or_else(|| first(root, |e| e.name() == "body"))
    .unwrap_or(root);

    let mut walker = Walker {
        lines: &lines,
        kind,
        root_path: root_path.clone(),
        headings: Vec::new(),
        heading_anchor: None,
        objects: Vec::new(),
        sections: Vec::new(),
        current: Section {
            heading_path: root_path,
            mergeable: true,
            ..Section::default()
        },
        line: lines.get(&body.id()).copied().unwrap_or(1),
        in_item: false,
        trait_impls: false,
        own_member_doc: false,
        deref_methods: false,
        in_impl_items: false,
    };
    walker.children(body, "");
    walker.finish()
}

/// `"Vec in std::vec - Rust"` → `"std::vec::Vec"`; `"std - Rust"` → `"std"`.
fn rustdoc_item_path(title: &str) -> String {
    let title = title.strip_suffix(" - Rust").unwrap_or(title);
    match title.split_once(" in ") {
        Some((name, parent)) => format!("{parent}::{name}"),
        None => title.to_string(),
    }
}

fn first<'a>(root: ElementRef<'a>, pred: impl Fn(&Element) -> bool) -> Option<ElementRef<'a>> {
    root.descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| pred(e.value()))
}

fn has_class(element: &Element, class: &str) -> bool {
    element.classes().any(|c| c == class)
}

/// Collapses whitespace runs to one space and trims.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Page chrome and navigation, never indexed.
fn is_chrome(element: &Element) -> bool {
    const TAGS: &[&str] = &[
        "script",
        "style",
        "noscript",
        "nav",
        "button",
        "template",
        "svg",
        "head",
        "form",
        "input",
        "iframe",
        "rustdoc-toolbar",
        "rustdoc-topbar",
        "rustdoc-search",
    ];
    const CLASSES: &[&str] = &[
        "sidebar",
        "sidebar-elems",
        "rightside",
        "src",
        "anchor",
        "tooltip",
        "hideme",
        "nav-wrapper",
        "nav-wide-wrapper",
        "menu-bar",
        "search-wrapper",
        "mdbook-help-container",
        "notable-traits",
        "notable-traits-tooltip",
        "since",
        "out-of-band",
        "boring",
        "rustdoc-breadcrumbs",
        "sub-heading",
        "main-heading",
        "search-form",
        "test-arrow",
        "sidebar-resize-indicator",
        "skip-main-content",
        "doc-anchor",
        "headerlink",
    ];
    const IDS: &[&str] = &[
        "mdbook-sidebar",
        "mdbook-menu-bar",
        "mdbook-search-wrapper",
        "mdbook-help-container",
        "copy-path",
        "synthetic-implementations",
        "synthetic-implementations-list",
        "blanket-implementations",
        "blanket-implementations-list",
        "implementors",
        "implementors-list",
        "synthetic-implementors",
        "synthetic-implementors-list",
        "search",
        "settings",
        "help",
        "sidebar",
    ];
    TAGS.contains(&element.name())
        || element.classes().any(|c| CLASSES.contains(&c))
        || element.attr("id").is_some_and(|id| IDS.contains(&id))
}

/// What starts a list item's text line: the marker on its first line, indentation after.
fn item_lead(first: bool, prefix: &str, marker: &str, nested: &str) -> String {
    if first {
        format!("{prefix}{marker}")
    } else {
        nested.to_string()
    }
}

fn is_block(name: &str) -> bool {
    matches!(
        name,
        "p" | "div"
            | "section"
            | "article"
            | "main"
            | "details"
            | "summary"
            | "pre"
            | "ul"
            | "ol"
            | "li"
            | "table"
            | "thead"
            | "tbody"
            | "tfoot"
            | "tr"
            | "dl"
            | "dt"
            | "dd"
            | "blockquote"
            | "h1"
            | "h2"
            | "h3"
            | "h4"
            | "h5"
            | "h6"
            | "header"
            | "footer"
            | "aside"
            | "figure"
            | "hr"
    )
}

/// A Sphinx API object's list: `<dl class="py function">` whose `dt` is a signature.
fn is_sphinx_object(dl: ElementRef) -> bool {
    dl.children()
        .filter_map(ElementRef::wrap)
        .find(|c| c.value().name() == "dt")
        .is_some_and(|dt| has_class(dt.value(), "sig-object"))
}

/// The id a Sphinx heading's permalink (`<a class="headerlink" href="#basic-usage">`) names.
fn permalink(heading: ElementRef) -> Option<String> {
    heading
        .children()
        .filter_map(ElementRef::wrap)
        .find(|a| a.value().name() == "a" && has_class(a.value(), "headerlink"))?
        .value()
        .attr("href")?
        .strip_prefix('#')
        .filter(|id| !id.is_empty())
        .map(str::to_string)
}

/// rustdoc member ids that start an item section.
const ITEM_ID_PREFIXES: &[&str] = &[
    "method.",
    "tymethod.",
    "structfield.",
    "variant.",
    "associatedtype.",
    "associatedconstant.",
    "impl-",
];

struct Walker<'a> {
    lines: &'a HashMap<NodeId, u32>,
    kind: PageKind,
    root_path: Vec<String>,
    headings: Vec<(usize, String)>,
    /// The anchor of the innermost heading.
    heading_anchor: Option<String>,
    /// The Sphinx API objects the walk is in: (id, heading), outermost first.
    objects: Vec<(String, String)>,
    sections: Vec<Section>,
    current: Section,
    line: u32,
    /// Inside a rustdoc member: headings of its doc stay inline.
    in_item: bool,
    /// Inside rustdoc's "Trait Implementations": a member whose doc is the trait's (a
    /// summary ending in "Read more") is left out; one with a doc of its own keeps it.
    trait_impls: bool,
    /// The next docblock is a trait impl member's own doc: kept.
    own_member_doc: bool,
    /// Inside "Methods from Deref<Target = …>": copies of another type's methods, which its
    /// own page documents; left out.
    deref_methods: bool,
    in_impl_items: bool,
}

impl Walker<'_> {
    fn finish(mut self) -> Vec<Section> {
        let last = std::mem::take(&mut self.current);
        self.sections.push(last);
        self.sections
    }

    fn start_section(
        &mut self,
        heading_path: Vec<String>,
        anchor: Option<String>,
        mergeable: bool,
    ) {
        let next = Section {
            heading_path,
            anchor,
            heading_line: Some(self.line),
            lines: Vec::new(),
            mergeable,
        };
        let done = std::mem::replace(&mut self.current, next);
        self.sections.push(done);
    }

    fn push_line(&mut self, text: String, line: u32) {
        self.current.lines.push(SourceLine::new(text, line));
    }

    fn blank(&mut self) {
        if self
            .current
            .lines
            .last()
            .is_some_and(|l| !l.text.is_empty())
        {
            self.push_line(String::new(), self.line);
        }
    }

    /// Pushes inline text, one output line per source line, with a list/quote prefix.
    fn push_text(&mut self, text: &str, start: u32, prefix: &str, first_prefix: &str) {
        let mut first = true;
        for (i, raw) in text.split('\n').enumerate() {
            let line = squash(raw);
            if line.is_empty() {
                continue;
            }
            let lead = if first { first_prefix } else { prefix };
            first = false;
            self.push_line(format!("{lead}{line}"), start + i as u32);
        }
    }

    fn enter(&mut self, element: ElementRef) {
        if let Some(&line) = self.lines.get(&element.id()) {
            self.line = self.line.max(line);
        }
    }

    fn children(&mut self, element: ElementRef, prefix: &str) {
        let mut inline = String::new();
        let mut inline_line = self.line;
        for child in element.children() {
            let block = match child.value() {
                Node::Element(e) => {
                    is_block(e.name()) || is_item_header(e) || has_class(e, "item-info")
                }
                _ => false,
            };
            if block {
                self.flush_inline(&mut inline, inline_line, prefix);
                let child = ElementRef::wrap(child).expect("element");
                self.block(child, prefix);
                inline_line = self.line;
            } else {
                if inline.trim().is_empty() {
                    inline_line = self.line;
                    if let Some(e) = ElementRef::wrap(child)
                        && let Some(&line) = self.lines.get(&e.id())
                    {
                        inline_line = inline_line.max(line);
                    }
                }
                inline_text(child, &mut inline, false);
            }
        }
        self.flush_inline(&mut inline, inline_line, prefix);
    }

    fn flush_inline(&mut self, inline: &mut String, line: u32, prefix: &str) {
        if !inline.trim().is_empty() {
            self.push_text(inline, line, prefix, prefix);
            self.blank();
        }
        inline.clear();
    }

    fn block(&mut self, element: ElementRef, prefix: &str) {
        let e = element.value();
        if is_chrome(e) {
            return;
        }
        self.enter(element);
        if self.kind == PageKind::Rustdoc && self.rustdoc_block(element) {
            return;
        }
        if self.kind == PageKind::Sphinx && e.name() == "dl" && is_sphinx_object(element) {
            self.sphinx_object(element, prefix);
            return;
        }
        let name = e.name();
        match name {
            "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => self.heading(element),
            "pre" => self.code(element, prefix),
            "p" => {
                let mut text = String::new();
                inline_children(element, &mut text);
                let line = self.line;
                self.push_text(&text, line, prefix, prefix);
                self.blank();
            }
            "ul" | "ol" => {
                for (i, item) in element
                    .children()
                    .filter_map(ElementRef::wrap)
                    .filter(|c| c.value().name() == "li")
                    .enumerate()
                {
                    let marker = if name == "ol" {
                        format!("{}. ", i + 1)
                    } else {
                        "- ".to_string()
                    };
                    self.list_item(item, prefix, &marker);
                }
                self.blank();
            }
            "table" => {
                for row in element
                    .descendants()
                    .filter_map(ElementRef::wrap)
                    .filter(|r| r.value().name() == "tr")
                {
                    self.enter(row);
                    let cells: Vec<String> = row
                        .children()
                        .filter_map(ElementRef::wrap)
                        .filter(|c| matches!(c.value().name(), "td" | "th"))
                        .map(|c| {
                            let mut text = String::new();
                            inline_children(c, &mut text);
                            squash(&text)
                        })
                        .collect();
                    let line = self.line;
                    self.push_line(format!("{prefix}| {} |", cells.join(" | ")), line);
                }
                self.blank();
            }
            "dl" => {
                for child in element.children().filter_map(ElementRef::wrap) {
                    self.enter(child);
                    let mut text = String::new();
                    inline_children(child, &mut text);
                    let text = squash(&text);
                    let line = self.line;
                    match child.value().name() {
                        "dt" => self.push_line(format!("{prefix}- {text}"), line),
                        "dd" if !text.is_empty() => {
                            self.push_line(format!("{prefix}  {text}"), line)
                        }
                        _ => {}
                    }
                }
                self.blank();
            }
            "blockquote" => {
                let quoted = format!("{prefix}> ");
                self.children(element, &quoted);
                self.blank();
            }
            "hr" => self.blank(),
            _ => self.children(element, prefix),
        }
    }

    fn list_item(&mut self, item: ElementRef, prefix: &str, marker: &str) {
        self.enter(item);
        let nested = format!("{prefix}{}", " ".repeat(marker.len()));
        let mut inline = String::new();
        let mut first = true;
        let mut line = self.line;
        for child in item.children() {
            let block = match child.value() {
                Node::Element(e) => is_block(e.name()),
                _ => false,
            };
            if block {
                let child = ElementRef::wrap(child).expect("element");
                if child.value().name() == "p" && first && inline.trim().is_empty() {
                    inline_children(child, &mut inline);
                    continue;
                }
                if !inline.trim().is_empty() {
                    let lead = item_lead(first, prefix, marker, &nested);
                    self.push_text(&inline, line, &nested, &lead);
                    first = false;
                    inline.clear();
                }
                if first {
                    self.push_line(format!("{prefix}{}", marker.trim_end()), line);
                    first = false;
                }
                self.block(child, &nested);
                line = self.line;
            } else {
                inline_text(child, &mut inline, false);
            }
        }
        if !inline.trim().is_empty() {
            let lead = item_lead(first, prefix, marker, &nested);
            self.push_text(&inline, line, &nested, &lead);
        }
    }

    fn heading(&mut self, element: ElementRef) {
        let level: usize = element.value().name()[1..].parse().unwrap_or(1);
        let mut title = String::new();
        inline_children(element, &mut title);
        let title = squash(&title);
        if title.is_empty() {
            return;
        }
        if self.in_item {
            let line = self.line;
            self.blank();
            self.push_line(format!("{} {title}", "#".repeat(level.min(6))), line);
            return;
        }
        while self.headings.last().is_some_and(|(l, _)| *l >= level) {
            self.headings.pop();
        }
        self.headings.push((level, title));
        self.objects.clear();
        self.heading_anchor = element
            .value()
            .attr("id")
            .map(str::to_string)
            .or_else(|| permalink(element));
        let path = self.path_here();
        self.start_section(path, self.heading_anchor.clone(), true);
    }

    /// The heading path at this point of the walk: the page's, its headings, the API objects.
    fn path_here(&self) -> Vec<String> {
        let mut path = self.root_path.clone();
        path.extend(self.headings.iter().map(|(_, t)| t.clone()));
        path.extend(self.objects.iter().map(|(_, heading)| heading.clone()));
        path
    }

    /// A Sphinx API object (`dl.py.function`): its signatures (`dt`) open a section of its
    /// own, its description (`dd`) fills it, objects inside it (a class's methods) nest;
    /// what follows it is its parent's again.
    fn sphinx_object(&mut self, dl: ElementRef, prefix: &str) {
        let callable = dl
            .value()
            .classes()
            .any(|c| c.ends_with("function") || c.ends_with("method") || c == "decorator");
        let mut opened = false;
        for child in dl.children().filter_map(ElementRef::wrap) {
            self.enter(child);
            match child.value().name() {
                "dt" => {
                    if let Some(id) = child.value().attr("id").filter(|_| !opened) {
                        let shown = match self.objects.last() {
                            Some((parent, _)) => {
                                id.strip_prefix(&format!("{parent}.")).unwrap_or(id)
                            }
                            None => id,
                        };
                        let heading = if callable {
                            format!("{shown}()")
                        } else {
                            shown.to_string()
                        };
                        self.objects.push((id.to_string(), heading));
                        let path = self.path_here();
                        self.start_section(path, Some(id.to_string()), false);
                        opened = true;
                    }
                    let mut signature = String::new();
                    inline_children(child, &mut signature);
                    let signature = squash(&signature.replace('`', ""));
                    if !signature.is_empty() {
                        let line = self.line;
                        self.push_line(format!("{prefix}`{signature}`"), line);
                    }
                }
                "dd" => {
                    self.blank();
                    self.children(child, prefix);
                    self.blank();
                }
                _ => {}
            }
        }
        if opened {
            self.objects.pop();
            let path = self.path_here();
            let anchor = match self.objects.last() {
                Some((id, _)) => Some(id.clone()),
                None => self.heading_anchor.clone(),
            };
            self.start_section(path, anchor, self.objects.is_empty());
            self.current.heading_line = None;
        }
    }

    fn code(&mut self, element: ElementRef, prefix: &str) {
        let lang = code_language(element);
        let mut text = String::new();
        code_text(*element, &mut text);
        let text = text.trim_matches('\n');
        if text.trim().is_empty() {
            return;
        }
        let start = self.line;
        self.blank();
        self.push_line(format!("{prefix}```{lang}"), start);
        let mut last = start;
        for (i, line) in text.lines().enumerate() {
            last = start + i as u32;
            self.push_line(format!("{prefix}{}", line.trim_end()), last);
        }
        self.push_line(format!("{prefix}```"), last);
        self.line = self.line.max(last);
        self.blank();
    }

    /// rustdoc structure; returns true when the element was handled.
    fn rustdoc_block(&mut self, element: ElementRef) -> bool {
        let e = element.value();
        let id = e.attr("id").unwrap_or("");
        if e.name() == "h2" && has_class(e, "section-header") {
            self.in_item = false;
            self.in_impl_items = false;
            self.trait_impls = matches!(id, "trait-implementations" | "foreign-impls");
            self.deref_methods = id.starts_with("deref-methods");
            if !self.deref_methods {
                self.heading(element);
            }
            return true;
        }
        if self.deref_methods {
            return true;
        }
        if has_class(e, "impl-items") {
            let was = self.in_impl_items;
            self.in_impl_items = true;
            self.children(element, "");
            self.in_impl_items = was;
            return true;
        }
        if has_class(e, "item-info") && self.trait_impls && self.in_impl_items {
            // A member's stability notes: the trait's page has them.
            return true;
        }
        if has_class(e, "docblock") && self.trait_impls && self.in_impl_items {
            if std::mem::take(&mut self.own_member_doc) {
                self.children(element, "  ");
                self.blank();
            }
            return true;
        }
        if is_item_header(e) {
            let signature = signature(element);
            if signature.is_empty() {
                return true;
            }
            let is_impl = id.starts_with("impl-");
            let line = self.line;
            if self.trait_impls && !is_impl {
                self.own_member_doc = has_own_doc(element);
                if self.own_member_doc {
                    self.push_line(format!("- `{}`", squash(&signature)), line);
                }
                return true;
            }
            let name = if is_impl {
                squash(signature.split("\nwhere").next().unwrap_or(&signature))
            } else {
                id.split_once('.').map_or(id, |(_, n)| n).to_string()
            };
            let mut path = self.root_path.clone();
            path.push(name);
            // A trait impl without docs of its own is one line, "impl Clone for Vec": such
            // lines share a chunk rather than each make a tiny one.
            let mergeable = self.trait_impls && is_impl;
            self.start_section(path, Some(id.to_string()), mergeable);
            self.in_item = true;
            self.push_line("```rust".to_string(), line);
            for (i, l) in signature.lines().enumerate() {
                self.push_line(l.to_string(), line + i as u32);
            }
            self.push_line("```".to_string(), line);
            self.blank();
            return true;
        }
        false
    }
}

/// Whether a trait impl member (its header inside `<details><summary>`) has a doc of its
/// own. rustdoc gives a member without one the trait's summary, rendered inline (no
/// paragraphs, often ending in a "Read more" link to the trait); a doc of its own is
/// rendered in full, in paragraphs.
fn has_own_doc(header: ElementRef) -> bool {
    let details = header
        .ancestors()
        .filter_map(ElementRef::wrap)
        .find(|a| a.value().name() == "details");
    let docblock = details.and_then(|d| {
        d.children()
            .filter_map(ElementRef::wrap)
            .find(|c| has_class(c.value(), "docblock"))
    });
    let Some(docblock) = docblock else {
        return false;
    };
    docblock
        .children()
        .filter_map(ElementRef::wrap)
        .any(|child| matches!(child.value().name(), "p" | "pre" | "ul" | "ol" | "table"))
}

/// A rustdoc member header: `section.method#method.push`, `span.structfield#structfield.x`.
fn is_item_header(e: &Element) -> bool {
    matches!(e.name(), "section" | "span")
        && e.attr("id")
            .is_some_and(|id| ITEM_ID_PREFIXES.iter().any(|p| id.starts_with(p)))
}

/// The signature text of a rustdoc member header (its `.code-header` or `code`).
fn signature(header: ElementRef) -> String {
    let code = header
        .descendants()
        .filter_map(ElementRef::wrap)
        .find(|e| has_class(e.value(), "code-header") || e.value().name() == "code");
    let Some(code) = code else {
        return String::new();
    };
    let mut text = String::new();
    code_text(*code, &mut text);
    text.lines()
        .map(|l| l.trim_end())
        .filter(|l| !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn code_language(pre: ElementRef) -> String {
    let classes = std::iter::once(pre)
        .chain(pre.children().filter_map(ElementRef::wrap))
        .flat_map(|e| e.value().classes().map(str::to_string).collect::<Vec<_>>());
    for class in classes {
        if let Some(lang) = class.strip_prefix("language-") {
            return lang.to_string();
        }
        if class == "rust" {
            return "rust".to_string();
        }
    }
    String::new()
}

/// Text of a code element, newlines kept, chrome and mdBook's hidden lines left out;
/// rustdoc's `where` clauses start on their own line.
fn code_text(node: ego_tree::NodeRef<Node>, out: &mut String) {
    for child in node.children() {
        match child.value() {
            Node::Text(text) => out.push_str(text),
            Node::Element(e) => {
                if is_chrome(e) {
                    continue;
                }
                if e.name() == "br" {
                    out.push('\n');
                } else if has_class(e, "where") {
                    out.push('\n');
                    code_text(child, out);
                } else {
                    code_text(child, out);
                }
            }
            _ => {}
        }
    }
}

fn inline_children(element: ElementRef, out: &mut String) {
    for child in element.children() {
        inline_text(child, out, false);
    }
}

/// Inline text: source newlines kept (so lines map back to the page), `code` in backticks.
fn inline_text(node: ego_tree::NodeRef<Node>, out: &mut String, in_code: bool) {
    match node.value() {
        Node::Text(text) => out.push_str(text),
        Node::Element(e) => {
            if is_chrome(e) {
                return;
            }
            match e.name() {
                "br" => out.push('\n'),
                "img" => {
                    if let Some(alt) = e.attr("alt") {
                        out.push_str(alt);
                    }
                }
                "code" if !in_code => {
                    let mut code = String::new();
                    for child in node.children() {
                        inline_text(child, &mut code, true);
                    }
                    out.push('`');
                    out.push_str(&code.replace('\n', " "));
                    out.push('`');
                }
                _ => {
                    for child in node.children() {
                        inline_text(child, out, in_code);
                    }
                }
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod whole_tree;
