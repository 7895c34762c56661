//! reStructuredText, as Sphinx projects write it.
//!
//! - **Sections** are titles with an underline (and optionally an overline) of one
//!   punctuation character; as in docutils, a style's level is the order it first appears in.
//!   A `.. _label:` target just above a title is its anchor, else Sphinx's id of the title.
//! - **API objects** (`.. function::`, `.. class::`, `.. method::`, …, any domain's) are
//!   sections of their own under the section they are in, headed by their signature and
//!   anchored by their full name (`json.dumps`), as Sphinx's HTML anchors them.
//! - **Code**: `.. code-block::` and its kin, `::` literal blocks and `>>>` sessions become
//!   fenced blocks.
//! - **Admonitions** (`.. note::`, `.. versionadded::`, …) keep their text, introduced by
//!   their name; markup-only directives (`toctree`, `index`, `image`, …) and comments go.
//! - **Roles** render as their text: ``:func:`json.dumps` `` → `` `json.dumps` ``,
//!   ``:ref:`text <label>` `` → `text`, ``:class:`~a.B` `` → `` `B` ``.
//!
//! Every passage line keeps the number of the source line it was read from.

use std::sync::LazyLock;

use regex::Regex;

use super::chunk::{Chunk, FileMeta, Section, SourceLine, chunk_sections};

/// Chunks a reStructuredText document.
pub fn chunk_rst(source: &str, meta: &FileMeta) -> Vec<Chunk> {
    chunk_sections(rst_sections(source), meta)
}

/// Directives whose content is markup for the builder, not text for a reader.
const DROPPED: &[&str] = &[
    "toctree",
    "index",
    "include",
    "literalinclude",
    "image",
    "figure",
    "contents",
    "sectionauthor",
    "moduleauthor",
    "codeauthor",
    "highlight",
    "tabularcolumns",
    "raw",
    "testsetup",
    "testcleanup",
    "only",
    "ifconfig",
    "meta",
    "sectnum",
    "autosummary",
    "default-role",
    "role",
];

/// Directives whose content is code.
const CODE: &[&str] = &[
    "code-block",
    "sourcecode",
    "code",
    "doctest",
    "testcode",
    "testoutput",
    "parsed-literal",
    "productionlist",
];

/// Object directives (Python, C and the standard domain) that describe one API item.
const OBJECTS: &[&str] = &[
    "function",
    "method",
    "class",
    "data",
    "attribute",
    "property",
    "exception",
    "decorator",
    "decoratormethod",
    "classmethod",
    "staticmethod",
    "abstractmethod",
    "coroutinefunction",
    "coroutinemethod",
    "awaitablefunction",
    "awaitablemethod",
    "opcode",
    "cmdoption",
    "option",
    "envvar",
    "describe",
    "object",
    "pdbcommand",
    "monitoring-event",
    "macro",
    "member",
    "type",
    "var",
    "struct",
    "enum",
    "enumerator",
];

fn directive_kind(name: &str) -> &str {
    // `py:function`, `c:func`, `rst:directive` → the part after the domain.
    name.rsplit(':').next().unwrap_or(name)
}

/// The sections of a reStructuredText document, before chunking.
pub fn rst_sections(source: &str) -> Vec<Section> {
    let lines: Vec<&str> = source.lines().map(|l| l.trim_end()).collect();
    let mut reader = Reader {
        lines: &lines,
        sections: vec![Section {
            mergeable: true,
            ..Section::default()
        }],
        styles: Vec::new(),
        titles: Vec::new(),
        objects: Vec::new(),
        module: None,
        pending_anchor: None,
    };
    reader.read(0, lines.len(), 0);
    reader.sections
}

struct Reader<'a> {
    lines: &'a [&'a str],
    sections: Vec<Section>,
    /// Adornment styles (character, has overline) in the order they first appear.
    styles: Vec<(char, bool)>,
    /// Open section titles: (level, title, anchor).
    titles: Vec<(usize, String, String)>,
    /// Open API objects: (indent of their directive, full name, signature).
    objects: Vec<(usize, String, String)>,
    module: Option<String>,
    pending_anchor: Option<String>,
}

impl Reader<'_> {
    fn current(&mut self) -> &mut Section {
        self.sections.last_mut().expect("a first section")
    }

    fn push(&mut self, text: impl Into<String>, line: usize) {
        self.current()
            .lines
            .push(SourceLine::new(text, line as u32 + 1));
    }

    /// Reads lines `from..to` whose text starts at column `base` (less-indented lines there
    /// are not expected; they are read as if at `base`).
    fn read(&mut self, from: usize, to: usize, base: usize) {
        let mut i = from;
        let mut literal_next = false;
        while i < to {
            let line = self.lines[i];
            if line.trim().is_empty() {
                self.push("", i);
                i += 1;
                continue;
            }
            let indent = indent_of(line);
            self.close_objects(indent);
            if base == 0
                && let Some(next) = self.heading(i, to)
            {
                i = next;
                literal_next = false;
                continue;
            }
            if literal_next && indent > base && i > from && self.lines[i - 1].trim().is_empty() {
                let end = block_end(self.lines, i, to, base);
                self.fence("", i, end, indent_of(self.lines[i]));
                literal_next = false;
                i = end;
                continue;
            }
            literal_next = false;
            let text = &line[indent.min(line.len())..];
            if let Some(rest) = text.strip_prefix(".. ").or((text == "..").then_some("")) {
                i = self.explicit(rest, i, to, indent);
                continue;
            }
            if text.starts_with(">>>") {
                let mut end = i;
                while end < to && !self.lines[end].trim().is_empty() {
                    end += 1;
                }
                self.fence("pycon", i, end, indent);
                i = end;
                continue;
            }
            // A transition, or an anonymous link target (`__ https://…`).
            if is_transition(line, self.lines.get(i + 1).copied()) || text.starts_with("__ ") {
                i += 1;
                continue;
            }
            let dedented = &line[base.min(indent)..];
            let (text, literal) = literal_marker(dedented);
            literal_next = literal;
            if !text.trim().is_empty() {
                self.push(inline(&text), i);
            }
            i += 1;
        }
    }

    /// A section title at line `i`: opens its section and returns the line after it.
    fn heading(&mut self, i: usize, to: usize) -> Option<usize> {
        let line = self.lines[i];
        let at = |n: usize| self.lines.get(n).copied().filter(|_| n < to);
        let above_blank = i == 0 || self.lines[i - 1].trim().is_empty();
        let (style, title, next) = if let Some(over) = adornment(line)
            && let Some(text) = at(i + 1)
            && let Some(under) = at(i + 2).and_then(adornment)
            && under == over
            && !text.trim().is_empty()
            && adornment(text).is_none()
            && above_blank
        {
            ((over, true), text.trim(), i + 3)
        } else if indent_of(line) == 0
            && above_blank
            && adornment(line).is_none()
            && let Some(under) = at(i + 1).and_then(adornment)
            && at(i + 1).is_some_and(|u| u.chars().count() >= line.chars().count().min(3))
            && at(i + 2).is_none_or(|l| l.trim().is_empty() || adornment(l).is_none())
        {
            ((under, false), line.trim(), i + 2)
        } else {
            return None;
        };
        let level = match self.styles.iter().position(|s| *s == style) {
            Some(level) => level,
            None => {
                self.styles.push(style);
                self.styles.len() - 1
            }
        };
        let title = inline(title).replace(" --- ", " — ");
        let title = title.replace('`', "");
        let anchor = self
            .pending_anchor
            .take()
            .unwrap_or_else(|| make_id(&title));
        while self.titles.last().is_some_and(|(l, _, _)| *l >= level) {
            self.titles.pop();
        }
        self.objects.clear();
        self.titles.push((level, title, anchor.clone()));
        let heading_path = self.titles.iter().map(|(_, t, _)| t.clone()).collect();
        self.sections.push(Section {
            heading_path,
            anchor: Some(anchor),
            heading_line: Some(i as u32 + 1),
            lines: Vec::new(),
            mergeable: true,
        });
        Some(next)
    }

    /// API objects whose content ended before a line at `indent`: the text after them is
    /// their parent's again.
    fn close_objects(&mut self, indent: usize) {
        let before = self.objects.len();
        while self.objects.last().is_some_and(|(at, _, _)| indent <= *at) {
            self.objects.pop();
        }
        if self.objects.len() < before {
            let (heading_path, anchor, mergeable) = self.path_here();
            self.sections.push(Section {
                heading_path,
                anchor,
                heading_line: None,
                lines: Vec::new(),
                mergeable,
            });
        }
    }

    fn path_here(&self) -> (Vec<String>, Option<String>, bool) {
        let mut path: Vec<String> = self.titles.iter().map(|(_, t, _)| t.clone()).collect();
        path.extend(self.objects.iter().map(|(_, _, sig)| sig.clone()));
        match self.objects.last() {
            Some((_, name, _)) => (path, Some(name.clone()), false),
            None => (path, self.titles.last().map(|(_, _, a)| a.clone()), true),
        }
    }

    /// Explicit markup (`rest` follows `.. `) at line `i`: returns the line after it.
    fn explicit(&mut self, rest: &str, i: usize, to: usize, indent: usize) -> usize {
        let end = block_end(self.lines, i + 1, to, indent);
        if let Some(label) = rest.strip_prefix('_')
            && let Some(label) = label.strip_suffix(':')
        {
            self.pending_anchor = Some(label.trim_matches('`').to_string());
            return end;
        }
        let Some((name, args)) = rest.split_once("::") else {
            // A comment, a footnote or a substitution without a directive.
            return end;
        };
        if name.starts_with('|') || name.contains(' ') {
            return end;
        }
        let args = args.trim();
        let kind = directive_kind(name);
        // Option lines (`:synopsis: …`) directly below the directive, then its content.
        let mut content = i + 1;
        let mut options: Vec<(String, String)> = Vec::new();
        while content < end {
            let text = self.lines[content].trim();
            if text.is_empty() {
                break;
            }
            match text
                .strip_prefix(':')
                .and_then(|t| t.split_once(':'))
                .filter(|(k, _)| !k.contains(' ') && !k.is_empty())
            {
                Some((key, value)) => options.push((key.to_string(), value.trim().to_string())),
                None if kind_takes_multiline_signature(kind) && options.is_empty() => {}
                None => break,
            }
            content += 1;
        }
        let inner = self.lines[content..end]
            .iter()
            .filter(|l| !l.trim().is_empty())
            .map(|l| indent_of(l))
            .min()
            .unwrap_or(indent + 3);
        if DROPPED.contains(&kind) {
            return end;
        }
        if kind == "module" || kind == "currentmodule" {
            self.module = (args != "None").then(|| args.to_string());
            if let Some((_, synopsis)) = options.iter().find(|(k, _)| k == "synopsis") {
                self.push(inline(synopsis), i);
            }
            return end;
        }
        if CODE.contains(&kind) {
            let language = if kind == "doctest" { "pycon" } else { args };
            self.fence(language, content, end, inner);
            return end;
        }
        if OBJECTS.contains(&kind) {
            self.object(kind, args, i, content, end, inner);
            return end;
        }
        // Admonitions, version notes, tables, topics: their text stays, introduced by name.
        let label = admonition_label(kind);
        let intro = match (label.as_str(), args) {
            ("", "") => String::new(),
            ("", args) => inline(args),
            (label, "") => format!("{label}:"),
            // `Changed in version 3.9:`, as Sphinx writes it.
            (label, args) if kind.starts_with("version") || kind.starts_with("deprecated") => {
                format!("{label} {}:", inline(args))
            }
            (label, args) => format!("{label}: {}", inline(args)),
        };
        if !intro.is_empty() {
            self.push(intro, i);
        }
        self.read(content, end, inner);
        end
    }

    fn object(
        &mut self,
        kind: &str,
        args: &str,
        i: usize,
        content: usize,
        end: usize,
        inner: usize,
    ) {
        let indent = indent_of(self.lines[i]);
        // A signature may go on after a `\`; further signatures follow on their own lines.
        let mut signatures: Vec<String> = Vec::new();
        let mut signature = args.to_string();
        for line in &self.lines[i + 1..content] {
            let text = line.trim();
            if text.starts_with(':') {
                continue;
            }
            match signature.strip_suffix('\\') {
                Some(open) => signature = format!("{} {text}", open.trim_end()),
                None => signatures.push(std::mem::replace(&mut signature, text.to_string())),
            }
        }
        signatures.push(signature);
        let args = signatures[0].as_str();
        let name = object_name(args, kind);
        let full = match (&self.module, self.objects.last()) {
            (_, Some((_, parent, _))) if !name.contains('.') => format!("{parent}.{name}"),
            (Some(module), None) if !name.starts_with(&format!("{module}.")) && is_python(kind) => {
                format!("{module}.{name}")
            }
            _ => name,
        };
        // The heading names the object as Sphinx's table of contents does (`json.dumps()`,
        // `decode()` under its class); its signatures open the body.
        let shown = match self.objects.last() {
            Some((_, parent, _)) => full.strip_prefix(&format!("{parent}.")).unwrap_or(&full),
            None => &full,
        };
        let heading = if is_callable(kind) {
            format!("{shown}()")
        } else {
            shown.to_string()
        };
        self.objects.push((indent, full.clone(), heading));
        let (heading_path, anchor, _) = self.path_here();
        self.sections.push(Section {
            heading_path,
            anchor,
            heading_line: Some(i as u32 + 1),
            lines: Vec::new(),
            mergeable: false,
        });
        for signature in &signatures {
            self.push(format!("`{}`", inline(signature).replace('`', "")), i);
        }
        self.read(content, end, inner);
    }

    /// Lines `from..to` as a fenced block, dedented by `indent`.
    fn fence(&mut self, language: &str, from: usize, to: usize, indent: usize) {
        let (mut from, mut to) = (from, to);
        while from < to && self.lines[from].trim().is_empty() {
            from += 1;
        }
        while to > from && self.lines[to - 1].trim().is_empty() {
            to -= 1;
        }
        if to == from {
            return;
        }
        let language = language.split_whitespace().next().unwrap_or("");
        let ticks = if (from..to).any(|n| self.lines[n].contains("```")) {
            "````"
        } else {
            "```"
        };
        self.push(format!("{ticks}{language}"), from);
        for n in from..to {
            let line = self.lines[n];
            self.push(line.get(indent.min(indent_of(line))..).unwrap_or(""), n);
        }
        self.push(ticks, to - 1);
    }
}

fn is_callable(kind: &str) -> bool {
    kind.ends_with("function") || kind.ends_with("method") || matches!(kind, "decorator" | "macro")
}

fn kind_takes_multiline_signature(kind: &str) -> bool {
    OBJECTS.contains(&kind)
}

fn is_python(kind: &str) -> bool {
    !matches!(
        kind,
        "opcode"
            | "cmdoption"
            | "option"
            | "envvar"
            | "describe"
            | "object"
            | "pdbcommand"
            | "monitoring-event"
            | "macro"
            | "member"
            | "type"
            | "var"
            | "struct"
            | "enum"
            | "enumerator"
    )
}

/// `json.dumps(obj, *, skipkeys=False)` → `json.dumps`; `int PyList_Check(PyObject *p)` →
/// `PyList_Check`; `--verbose, -v` → `--verbose`.
fn object_name(signature: &str, kind: &str) -> String {
    let head = signature.split('(').next().unwrap_or(signature).trim();
    let head = head.split([',', '=']).next().unwrap_or(head).trim();
    let head = if is_python(kind) {
        head.strip_prefix("async ").unwrap_or(head)
    } else {
        head
    };
    let name = if is_python(kind) || kind == "macro" || kind == "type" || kind == "var" {
        head.rsplit(|c: char| c.is_whitespace() || c == '*')
            .next()
            .unwrap_or(head)
    } else {
        head.split_whitespace().next().unwrap_or(head)
    };
    name.trim_start_matches('@').to_string()
}

fn admonition_label(kind: &str) -> String {
    match kind {
        "versionadded" => "Added in version".into(),
        "versionchanged" => "Changed in version".into(),
        "deprecated" => "Deprecated since version".into(),
        "deprecated-removed" => "Deprecated since version".into(),
        "seealso" => "See also".into(),
        "impl-detail" => "CPython implementation detail".into(),
        "note" | "warning" | "tip" | "hint" | "important" | "caution" | "attention" | "danger"
        | "error" => {
            let mut label = kind.to_string();
            label[..1].make_ascii_uppercase();
            label
        }
        // `admonition`, `rubric`, `topic`, `list-table`, …: their argument is their title.
        _ => String::new(),
    }
}

/// Bytes of indentation: spaces and tabs, as docutils counts them. Other whitespace (a
/// no-break space, U+0085) is text, and counting it would cut a character in two.
fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches([' ', '\t']).len()
}

/// The end of the block indented deeper than `indent` that starts at `from`.
fn block_end(lines: &[&str], from: usize, to: usize, indent: usize) -> usize {
    let mut end = from;
    let mut last = from;
    while end < to {
        let line = lines[end];
        if !line.trim().is_empty() {
            if indent_of(line) <= indent {
                break;
            }
            last = end + 1;
        }
        end += 1;
    }
    last.max(from)
}

/// The character of an adornment line (`=====`, `-----`, `~~~~`), if it is one.
fn adornment(line: &str) -> Option<char> {
    let line = line.trim_end();
    let first = line.chars().next()?;
    (line.len() >= 2
        && !first.is_alphanumeric()
        && !first.is_whitespace()
        && first.is_ascii_punctuation()
        && line.chars().all(|c| c == first))
    .then_some(first)
}

/// A transition: a lone adornment line of four or more characters between blank lines.
fn is_transition(line: &str, next: Option<&str>) -> bool {
    adornment(line).is_some()
        && line.trim_end().len() >= 4
        && next.is_none_or(|n| n.trim().is_empty())
}

/// A paragraph line ending in `::` announces a literal block: `Example::` → `Example:`,
/// `text ::` → `text`, `::` alone → nothing.
fn literal_marker(line: &str) -> (String, bool) {
    let trimmed = line.trim_end();
    match trimmed.strip_suffix("::") {
        Some(before) if !before.ends_with(':') && !before.trim_start().starts_with("..") => {
            if before.trim().is_empty() {
                (String::new(), true)
            } else if before.ends_with(char::is_whitespace) {
                (before.trim_end().to_string(), true)
            } else {
                (format!("{before}:"), true)
            }
        }
        _ => (line.to_string(), false),
    }
}

static ROLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r":(?:[a-zA-Z0-9_.+-]+:)*[a-zA-Z0-9_.+-]+:`([^`]+)`").expect("valid")
});
static LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`<]+?)\s*<[^`>]+>`__?").expect("valid"));
static SUBSTITUTION: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\|\w[\w -]*\w\|_{0,2}").expect("valid"));
static REFERENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"`([^`]+)`__?|\[#?[\w-]*\]_").expect("valid"));

/// Inline markup rendered as a reader sees it.
fn inline(text: &str) -> String {
    let text = ROLE.replace_all(text, |caps: &regex::Captures| {
        let inner = &caps[1];
        let whole = &caps[0];
        let role = whole.split(":`").next().unwrap_or("");
        // `text <target>`: the text; `~a.b.c`: the last part; `!x`: x.
        let shown = match inner.rfind('<') {
            Some(lt) if inner.ends_with('>') && lt > 0 => inner[..lt].trim(),
            _ => inner,
        };
        let shown = match shown.strip_prefix('~') {
            Some(path) => path.rsplit('.').next().unwrap_or(path),
            None => shown.trim_start_matches('!'),
        };
        match role.rsplit(':').next() {
            Some("rfc") => return format!("RFC {shown}"),
            Some("pep") => return format!("PEP {shown}"),
            _ => {}
        }
        let is_code = [
            "func", "meth", "class", "mod", "attr", "data", "exc", "obj", "const", "option",
            "envvar", "program", "file", "samp", "c", "macro", "type", "member", "expr", "code",
            "kbd", "keyword",
        ]
        .iter()
        .any(|r| role.rsplit(':').next() == Some(*r));
        if is_code {
            format!("`{shown}`")
        } else {
            shown.to_string()
        }
    });
    let text = LINK.replace_all(&text, "$1");
    let text = REFERENCE.replace_all(&text, |caps: &regex::Captures| {
        caps.get(1)
            .map_or(String::new(), |m| m.as_str().to_string())
    });
    let text = SUBSTITUTION.replace_all(&text, "");
    text.replace("``", "`")
}

/// Sphinx's (docutils') id of a title: lowercase ASCII words joined by `-`.
pub fn make_id(title: &str) -> String {
    let mut id = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        if c.is_ascii_alphanumeric() {
            id.push(c);
        } else if !id.ends_with('-') && !id.is_empty() {
            id.push('-');
        }
    }
    id.trim_end_matches('-').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::docs::chunk::SourceType;
    use crate::docs::chunk::checks::assert_well_formed;

    const DIR: &str = "src/docs/testdata/sphinx";

    fn read(name: &str) -> (String, Vec<Chunk>) {
        let source = std::fs::read_to_string(format!("{DIR}/{name}")).unwrap();
        let chunks = chunk_rst(&source, &FileMeta::new("python", SourceType::Guide, name));
        assert_well_formed(&chunks);
        (source, chunks)
    }

    #[test]
    fn sections_nest_by_adornment_order_and_take_labels_as_anchors() {
        let (_, chunks) = read("library/json.rst");
        let paths: Vec<String> = chunks.iter().map(|c| c.heading_path.join(" > ")).collect();
        assert!(
            paths
                .iter()
                .any(|p| p == "json — JSON encoder and decoder > Basic Usage > json.dumps()"),
            "{paths:#?}"
        );
        assert!(
            paths.iter().any(|p| p
                == "json — JSON encoder and decoder > Standard Compliance and Interoperability"),
            "{paths:#?}"
        );
        assert!(paths.iter().any(|p| p
            == "json — JSON encoder and decoder > Command Line Interface > Command line options > --indent"));
        // Docutils levels: an overlined style is a style of its own.
        let (_, readme) = read("ndarray-README.rst");
        assert!(readme.iter().any(
            |c| c.heading_path == ["ndarray", "How to enable BLAS integration", "BLAS on MSRV"]
        ));
        assert!(readme.iter().any(|c| c.heading_path == ["License"]));
        let anchors: Vec<_> = chunks.iter().filter_map(|c| c.anchor.as_deref()).collect();
        assert!(anchors.contains(&"json-commandline"), "{anchors:?}");
        assert!(anchors.contains(&"character-encodings"), "{anchors:?}");
    }

    #[test]
    fn api_objects_are_sections_named_as_sphinx_anchors_them() {
        let (_, chunks) = read("library/json.rst");
        let dumps = chunks
            .iter()
            .find(|c| c.anchor.as_deref() == Some("json.dumps"))
            .expect("json.dumps");
        assert_eq!(dumps.heading_path.last().unwrap(), "json.dumps()");
        assert!(
            dumps.text.starts_with(
                "`dumps(obj, *, skipkeys=False, ensure_ascii=True, check_circular=True,"
            ),
            "{}",
            dumps.text
        );
        assert!(
            dumps
                .text
                .contains("Serialize *obj* to a JSON formatted `str`"),
            "{}",
            dumps.text
        );
        let decode = chunks
            .iter()
            .find(|c| c.anchor.as_deref() == Some("json.JSONDecoder.decode"))
            .expect("a method under its class");
        assert!(
            decode
                .heading_path
                .ends_with(&["json.JSONDecoder".into(), "decode()".into()]),
            "{:?}",
            decode.heading_path
        );
    }

    #[test]
    fn code_admonitions_and_roles_read_as_text() {
        let (_, chunks) = read("library/json.rst");
        let all: String = chunks
            .iter()
            .map(|c| c.text.as_str())
            .collect::<Vec<_>>()
            .join("\n");
        // `Encoding basic Python object hierarchies::` opens a literal block.
        assert!(all.contains("Encoding basic Python object hierarchies:\n"));
        assert!(all.contains("```\n>>> import json\n>>> json.dumps(['foo'"));
        assert!(all.contains("Warning:\nBe cautious when parsing JSON data"));
        assert!(!all.contains(":mod:`"), "roles rendered");
        assert!(
            !all.lines().any(|l| l.trim_start().starts_with(".. ")),
            "no directive left:\n{all}"
        );
        assert!(all.contains("specified by\nRFC 7159 (which obsoletes RFC 4627)"));
        assert!(!all.contains(":synopsis:"));
        // `.. code-block:: shell-session` in the command line section.
        assert!(all.contains("```shell-session\n$ echo"), "{all}");
    }

    /// Words the reader writes itself, introducing admonitions.
    const SYNTHETIC: &[&str] = &[
        "Added",
        "Changed",
        "Deprecated",
        "version",
        "since",
        "Warning",
    ];

    #[test]
    fn lines_are_the_source_lines() {
        for name in [
            "library/json.rst",
            "tutorial/controlflow.rst",
            "ndarray-README.rst",
        ] {
            let (source, chunks) = read(name);
            let lines: Vec<&str> = source.lines().collect();
            for chunk in &chunks {
                assert!(chunk.line_end as usize <= lines.len(), "{name}: {chunk:?}");
                // Rendering changes markup, not words: the passage's words are in its lines.
                let range =
                    lines[chunk.line_start as usize - 1..chunk.line_end as usize].join("\n");
                let words: Vec<&str> = chunk
                    .text
                    .split(|c: char| !c.is_alphanumeric())
                    .filter(|w| w.len() >= 5 && !SYNTHETIC.contains(w))
                    .collect();
                let found = words.iter().filter(|w| range.contains(**w)).count();
                assert!(
                    found * 10 >= words.len() * 9,
                    "{name}: {found}/{} words of {}-{} in its lines:\n{}",
                    words.len(),
                    chunk.line_start,
                    chunk.line_end,
                    chunk.text
                );
            }
        }
    }

    #[test]
    fn a_crate_readme_in_rst() {
        let (_, chunks) = read("ndarray-README.rst");
        assert!(
            chunks
                .iter()
                .any(|c| c.heading_path == ["ndarray", "Crate Feature Flags"]),
            "{:?}",
            chunks.iter().map(|c| &c.heading_path).collect::<Vec<_>>()
        );
        assert_eq!(make_id("Crate Feature Flags"), "crate-feature-flags");
        assert_eq!(
            inline(":func:`~json.dumps` and :ref:`the CLI <json-commandline>`"),
            "`dumps` and the CLI"
        );
    }

    #[test]
    fn whitespace_other_than_spaces_and_tabs_is_text_not_indentation() {
        // The fuzzer's crash: a directive's body (indented by one space) holding a line that
        // starts with U+0085, two bytes that trim_start() counted as indentation.
        let source = ".. note::\n\n \u{85}\u{85}text under a next-line mark\n \u{a0}more\n";
        let sections = rst_sections(source);
        let text: String = sections
            .iter()
            .flat_map(|s| &s.lines)
            .map(|l| l.text.as_str())
            .collect();
        assert!(text.contains("text under a next-line mark"), "{sections:?}");
        assert_eq!(indent_of("  \u{85}x"), 2);
        assert_eq!(indent_of("\t x"), 2);
    }
}
