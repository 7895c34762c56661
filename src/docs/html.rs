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
//! signatures, but not the members' docs (they repeat the trait's docs, which the trait's
//! page has); auto trait, blanket and implementor listings are dropped.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::path::Path;

use ego_tree::NodeId;
use html5ever::tendril::{StrTendril, TendrilSink};
use html5ever::tree_builder::{ElementFlags, NodeOrText, QuirksMode, TreeSink};
use html5ever::{Attribute, QualName};
use scraper::node::Element;
use scraper::{ElementRef, Html, HtmlTreeSink, Node};

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};

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
pub fn skip_html(path: &Path, content: &str) -> bool {
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
    content.len() < 4096
        && content
            .to_ascii_lowercase()
            .contains("http-equiv=\"refresh\"")
}

/// Chunks one HTML page (rustdoc, mdBook or plain).
pub fn chunk_html(content: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(html_sections(content), meta)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PageKind {
    Rustdoc,
    MdBook,
    Plain,
}

/// The sections of an HTML page, before chunking.
pub fn html_sections(content: &str) -> Vec<Section> {
    let (html, lines) = parse_with_lines(content);
    let root = html.root_element();
    let kind = if content.contains("content=\"rustdoc\"") {
        PageKind::Rustdoc
    } else if content.contains("id=\"mdbook-") || content.contains("class=\"menu-title\"") {
        PageKind::MdBook
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
        PageKind::Plain => Vec::new(),
    };
    let body = match kind {
        PageKind::Rustdoc => first(root, |e| e.attr("id") == Some("main-content")),
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
        sections: Vec::new(),
        current: Section {
            heading_path: root_path,
            mergeable: true,
            ..Section::default()
        },
        line: lines.get(&body.id()).copied().unwrap_or(1),
        in_item: false,
        trait_impls: false,
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
    sections: Vec<Section>,
    current: Section,
    line: u32,
    /// Inside a rustdoc member: headings of its doc stay inline.
    in_item: bool,
    /// Inside rustdoc's "Trait Implementations": members keep only their signatures.
    trait_impls: bool,
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
                Node::Element(e) => is_block(e.name()) || is_item_header(e),
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
                    let lead = if first {
                        format!("{prefix}{marker}")
                    } else {
                        nested.clone()
                    };
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
            let lead = if first {
                format!("{prefix}{marker}")
            } else {
                nested.clone()
            };
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
        let mut path = self.root_path.clone();
        path.extend(self.headings.iter().map(|(_, t)| t.clone()));
        let anchor = element.value().attr("id").map(str::to_string);
        self.start_section(path, anchor, true);
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
            self.heading(element);
            return true;
        }
        if has_class(e, "impl-items") {
            let was = self.in_impl_items;
            self.in_impl_items = true;
            self.children(element, "");
            self.in_impl_items = was;
            return true;
        }
        if has_class(e, "docblock") && self.trait_impls && self.in_impl_items {
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
                self.push_line(format!("- `{}`", squash(&signature)), line);
                return true;
            }
            let name = if is_impl {
                squash(signature.split("\nwhere").next().unwrap_or(&signature))
            } else {
                id.split_once('.').map_or(id, |(_, n)| n).to_string()
            };
            let mut path = self.root_path.clone();
            path.push(name);
            self.start_section(path, Some(id.to_string()), false);
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

/// Parses a page, recording the source line (1-based) where each element starts.
fn parse_with_lines(content: &str) -> (Html, HashMap<NodeId, u32>) {
    let sink = LineSink {
        inner: HtmlTreeSink::new(Html::new_document()),
        line: Cell::new(1),
        lines: RefCell::new(HashMap::new()),
    };
    html5ever::driver::parse_document(sink, Default::default()).one(content)
}

struct LineSink {
    inner: HtmlTreeSink,
    line: Cell<u64>,
    lines: RefCell<HashMap<NodeId, u32>>,
}

impl TreeSink for LineSink {
    type Output = (Html, HashMap<NodeId, u32>);
    type Handle = NodeId;
    type ElemName<'a> = <HtmlTreeSink as TreeSink>::ElemName<'a>;

    fn finish(self) -> Self::Output {
        (self.inner.finish(), self.lines.into_inner())
    }
    fn parse_error(&self, _msg: Cow<'static, str>) {}
    fn set_current_line(&self, line: u64) {
        self.line.set(line);
    }
    fn get_document(&self) -> NodeId {
        self.inner.get_document()
    }
    fn elem_name<'a>(&'a self, target: &'a NodeId) -> Self::ElemName<'a> {
        self.inner.elem_name(target)
    }
    fn create_element(&self, name: QualName, attrs: Vec<Attribute>, flags: ElementFlags) -> NodeId {
        let id = self.inner.create_element(name, attrs, flags);
        let line = u32::try_from(self.line.get()).unwrap_or(u32::MAX);
        self.lines.borrow_mut().insert(id, line);
        id
    }
    fn create_comment(&self, text: StrTendril) -> NodeId {
        self.inner.create_comment(text)
    }
    fn create_pi(&self, target: StrTendril, data: StrTendril) -> NodeId {
        self.inner.create_pi(target, data)
    }
    fn append(&self, parent: &NodeId, child: NodeOrText<NodeId>) {
        self.inner.append(parent, child)
    }
    fn append_based_on_parent_node(
        &self,
        element: &NodeId,
        prev_element: &NodeId,
        child: NodeOrText<NodeId>,
    ) {
        self.inner
            .append_based_on_parent_node(element, prev_element, child)
    }
    fn append_doctype_to_document(
        &self,
        name: StrTendril,
        public_id: StrTendril,
        system_id: StrTendril,
    ) {
        self.inner
            .append_doctype_to_document(name, public_id, system_id)
    }
    fn get_template_contents(&self, target: &NodeId) -> NodeId {
        self.inner.get_template_contents(target)
    }
    fn same_node(&self, x: &NodeId, y: &NodeId) -> bool {
        self.inner.same_node(x, y)
    }
    fn set_quirks_mode(&self, mode: QuirksMode) {
        self.inner.set_quirks_mode(mode)
    }
    fn append_before_sibling(&self, sibling: &NodeId, new_node: NodeOrText<NodeId>) {
        self.inner.append_before_sibling(sibling, new_node)
    }
    fn add_attrs_if_missing(&self, target: &NodeId, attrs: Vec<Attribute>) {
        self.inner.add_attrs_if_missing(target, attrs)
    }
    fn remove_from_parent(&self, target: &NodeId) {
        self.inner.remove_from_parent(target)
    }
    fn reparent_children(&self, node: &NodeId, new_parent: &NodeId) {
        self.inner.reparent_children(node, new_parent)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::assert_well_formed;
    use std::path::PathBuf;

    pub fn rust_docs() -> Option<PathBuf> {
        let out = std::process::Command::new("rustc")
            .args(["--print", "sysroot"])
            .output()
            .ok()?;
        let root =
            PathBuf::from(String::from_utf8(out.stdout).ok()?.trim()).join("share/doc/rust/html");
        root.join("std/index.html").exists().then_some(root)
    }

    #[test]
    fn the_book_chapter_on_references() {
        let Some(root) = rust_docs() else { return };
        let path = root.join("book/ch04-02-references-and-borrowing.html");
        let content = std::fs::read_to_string(&path).unwrap();
        assert!(!skip_html(&path, &content));
        let mut meta = FileMeta::new(
            "rust-book",
            SourceType::Guide,
            "book/ch04-02-references-and-borrowing.html",
        );
        meta.url = Some(format!("file://{}", path.display()));
        let chunks = chunk_html(&content, &meta);
        assert_well_formed(&chunks);
        let mutable = chunks
            .iter()
            .find(|c| c.anchor.as_deref() == Some("mutable-references"))
            .expect("a chunk for Mutable References");
        assert_eq!(
            mutable.heading_path,
            [
                "The Rust Programming Language",
                "References and Borrowing",
                "Mutable References"
            ]
        );
        assert!(
            mutable
                .url
                .as_deref()
                .unwrap()
                .ends_with("#mutable-references")
        );
        let source: Vec<&str> = content.lines().collect();
        assert!(source[mutable.line_start as usize - 1].contains("id=\"mutable-references\""));
        assert!(
            chunks
                .iter()
                .any(|c| c.text.contains("```rust") && c.text.contains("let r1 = &mut s;"))
        );
        assert!(
            chunks
                .iter()
                .all(|c| !c.text.contains("Keyboard shortcuts"))
        );
        assert!(
            chunks
                .iter()
                .all(|c| !c.text.contains("function playground_text"))
        );
        // Code lines sit on their own source lines.
        let code = chunks
            .iter()
            .find(|c| {
                c.text
                    .contains("fn calculate_length(s: &String) -> usize {")
            })
            .unwrap();
        let line = source
            .iter()
            .position(|l| {
                l.contains("calculate_length(s: &amp;String)")
                    || l.contains("calculate_length</span>(s: &amp;String)")
            })
            .map(|i| i as u32 + 1);
        if let Some(line) = line {
            assert!(
                code.line_start <= line && line <= code.line_end,
                "{line} in {}-{}",
                code.line_start,
                code.line_end
            );
        }
    }

    #[test]
    fn std_vec_page_items_have_signature_and_doc() {
        let Some(root) = rust_docs() else { return };
        let path = root.join("std/vec/struct.Vec.html");
        let content = std::fs::read_to_string(&path).unwrap();
        let meta = FileMeta::new("std", SourceType::Api, "std/vec/struct.Vec.html");
        let chunks = chunk_html(&content, &meta);
        let texts: Vec<String> = chunks.iter().map(|c| c.embedding_text()).collect();
        eprintln!(
            "std Vec page: {} chunks; word pieces real, estimated, max real: {:?}",
            chunks.len(),
            crate::docs::wordpiece::compare(texts.iter().map(String::as_str))
        );
        assert_well_formed(&chunks);
        let push = chunks
            .iter()
            .find(|c| c.anchor.as_deref() == Some("method.push"))
            .expect("Vec::push");
        assert_eq!(push.heading_path, ["std::vec::Vec", "push"]);
        assert!(
            push.text
                .starts_with("```rust\npub fn push(&mut self, value: T)\n```"),
            "{}",
            push.text
        );
        assert!(
            push.text
                .contains("Appends an element to the back of a collection.")
        );
        let top = &chunks[0];
        assert_eq!(top.heading_path, ["std::vec::Vec"]);
        assert!(
            top.text.contains("pub struct Vec<T, A = Global>"),
            "{}",
            top.text
        );
        assert!(
            chunks
                .iter()
                .any(|c| c.anchor.as_deref() == Some("guarantees")
                    && c.heading_path == ["std::vec::Vec", "Guarantees"])
        );
        // Trait impls: headers and signatures, not the traits' docs again; no blanket impls.
        assert!(chunks.iter().any(|c| {
            c.heading_path
                .last()
                .is_some_and(|h| h.starts_with("impl<T, A> AsMut<[T]> for Vec<T, A>"))
        }));
        assert!(chunks.iter().all(|c| {
            !c.text
                .contains("Converts this type into a mutable reference")
        }));
        assert!(chunks.iter().all(|c| !c.text.contains("impl<T> Any for T")));
        for chunk in &chunks {
            assert!(!chunk.text.contains('§'), "{}", chunk.text);
            assert!(!chunk.text.contains("Source"), "{}", chunk.text);
        }
    }

    #[test]
    fn skip_rules() {
        let p = |s: &str| PathBuf::from(s);
        let page = "<html>".repeat(1000);
        assert!(skip_html(&p("html/src/alloc/vec/mod.rs.html"), &page));
        assert!(skip_html(
            &p("html/core/arch/x86_64/fn._mm_add_ps.html"),
            &page
        ));
        assert!(skip_html(&p("html/core/core_arch/x86/index.html"), &page));
        assert!(skip_html(&p("html/std/arch/index.html"), &page));
        assert!(skip_html(&p("html/book/print.html"), &page));
        assert!(skip_html(&p("html/std/all.html"), &page));
        assert!(skip_html(&p("html/std/search-index.js"), &page));
        assert!(skip_html(&p("html/std/vec/sidebar-items.js"), &page));
        let stub = r#"<meta http-equiv="refresh" content="0;URL=macro.x.html">"#;
        assert!(skip_html(&p("html/std_detect/macro.x!.html"), stub));
        assert!(!skip_html(&p("html/std/vec/struct.Vec.html"), &page));
        assert!(!skip_html(
            &p("html/book/ch04-02-references-and-borrowing.html"),
            &page
        ));
    }
}

/// Measures the rustup doc tree: pages kept after [`skip_html`], chunks, time. Chunks every
/// `DRYDOCK_TREE_STRIDE`-th kept page (default 10, so the test stays quick in a debug build)
/// and extrapolates; `DRYDOCK_TREE_STRIDE=1` chunks the whole tree.
#[cfg(test)]
mod whole_tree {
    use super::tests::rust_docs;
    use super::*;
    use crate::docs::chunk::SourceType;
    use std::collections::BTreeMap;
    use std::path::PathBuf;
    use std::sync::Mutex;
    use std::time::Instant;

    #[test]
    fn chunk_the_rustup_doc_tree() {
        let Some(root) = rust_docs() else { return };
        let stride: usize = std::env::var("DRYDOCK_TREE_STRIDE")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(10)
            .max(1);
        let started = Instant::now();
        let big_page = "<html>".repeat(1000);
        let files: Vec<PathBuf> = walkdir::WalkDir::new(&root)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .collect();
        // The path rules first (no read), then the content rule (redirect stubs).
        let kept: Vec<(PathBuf, String)> = files
            .iter()
            .filter(|p| !skip_html(p.strip_prefix(&root).unwrap(), &big_page))
            .filter_map(|p| Some((p.clone(), std::fs::read_to_string(p).ok()?)))
            .filter(|(p, c)| !skip_html(p.strip_prefix(&root).unwrap(), c))
            .collect();
        let filtered = started.elapsed();
        let sample: Vec<&(PathBuf, String)> = kept.iter().step_by(stride).collect();
        let workers = std::thread::available_parallelism().map_or(2, |n| n.get());
        let next = std::sync::atomic::AtomicUsize::new(0);
        let per_dir: Mutex<BTreeMap<String, (usize, usize)>> = Mutex::default();
        let chunking = Instant::now();
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((path, content)) = sample.get(i) else {
                            break;
                        };
                        let relative = path.strip_prefix(&root).unwrap().to_string_lossy();
                        let meta = FileMeta::new("rust", SourceType::Guide, &relative);
                        let chunks = chunk_html(content, &meta).len();
                        let top = relative.split('/').next().unwrap_or("").to_string();
                        let mut per_dir = per_dir.lock().unwrap();
                        let entry = per_dir.entry(top).or_default();
                        entry.0 += 1;
                        entry.1 += chunks;
                    }
                });
            }
        });
        let chunking = chunking.elapsed();
        let per_dir = per_dir.into_inner().unwrap();
        let chunks: usize = per_dir.values().map(|v| v.1).sum();
        let mut largest: Vec<_> = per_dir.iter().collect();
        largest.sort_by_key(|(_, v)| std::cmp::Reverse(v.1));
        eprintln!(
            "rustup docs {}: {} files, {} pages kept (read and filtered in {filtered:?}); \
             chunked 1 page in {stride}: {} pages -> {chunks} chunks in {chunking:?} on {workers} threads; \
             whole tree ~{} chunks in ~{:?}; largest dirs (pages, chunks): {:?}",
            root.display(),
            files.len(),
            kept.len(),
            sample.len(),
            chunks * stride,
            chunking * stride as u32,
            &largest[..largest.len().min(10)]
        );
        assert!(kept.len() > 1000 && chunks > sample.len());
    }
}
