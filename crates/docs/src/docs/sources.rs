//! What an ingest reads, and how one file becomes chunks.
//!
//! A [`Root`] is either a tree of files (Markdown, MDX, reStructuredText, AsciiDoc, text, HTML,
//! Rust and Elixir sources, chunked by their extension) tagged with a library and version, or an Elixir `ebin`
//! directory whose compiled modules carry their docs. `drydock index PATH`, a project's
//! dependencies ([`super::project`]) and the installed toolchains all come down to roots.

use std::path::{Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};

use super::chunk::{Chunk, FileMeta, SourceType};
use super::{asciidoc, elixir_docs, html, markdown, mdx, rst, rust_source};

/// A tree of documentation files, or one file of it.
#[derive(Debug, Clone)]
pub struct FileRoot {
    /// Absolute and canonical; `file_path`s are relative to it.
    pub dir: PathBuf,
    /// Index only this file (below `dir`) instead of the whole tree.
    pub only: Option<PathBuf>,
    pub library: Library,
    pub version: Option<String>,
    pub filter: PathFilter,
    /// Leave out subdirectories that are packages of their own (a `Cargo.toml` or
    /// `mix.exs`): a workspace's members are indexed as their own libraries.
    pub skip_nested_packages: bool,
}

/// The library a file of a [`FileRoot`] belongs to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Library {
    Named(String),
    /// The file's first directory below the root names it (`book/ch01.html` → `book`, as in
    /// the Rust docs rustup installs); files directly in the root belong to `top_level`.
    FirstDirectory {
        top_level: String,
    },
}

/// An Elixir `ebin` directory: library and version come from its `.app` file.
#[derive(Debug, Clone)]
pub struct BeamRoot {
    pub ebin: PathBuf,
}

#[derive(Debug, Clone)]
pub enum Root {
    Files(FileRoot),
    Beams(BeamRoot),
}

impl Root {
    /// Where the root is, for messages and for finding deleted files.
    pub fn path(&self) -> &Path {
        match self {
            Root::Files(root) => root.only.as_deref().unwrap_or(&root.dir),
            Root::Beams(root) => &root.ebin,
        }
    }
}

/// Include and exclude globs, matched against paths relative to the root.
#[derive(Debug, Clone, Default)]
pub struct PathFilter {
    include: Option<GlobSet>,
    exclude: Option<GlobSet>,
}

impl PathFilter {
    /// Empty `include` lets every path in; `exclude` wins over `include`.
    pub fn new(include: &[String], exclude: &[String]) -> Result<PathFilter, globset::Error> {
        let set = |patterns: &[String]| -> Result<Option<GlobSet>, globset::Error> {
            if patterns.is_empty() {
                return Ok(None);
            }
            let mut builder = GlobSetBuilder::new();
            for pattern in patterns {
                builder.add(Glob::new(pattern)?);
            }
            builder.build().map(Some)
        };
        Ok(PathFilter {
            include: set(include)?,
            exclude: set(exclude)?,
        })
    }

    pub fn allows(&self, relative: &Path) -> bool {
        self.include
            .as_ref()
            .is_none_or(|set| set.is_match(relative))
            && !self
                .exclude
                .as_ref()
                .is_some_and(|set| set.is_match(relative))
    }
}

/// How a file is read, by its extension.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileKind {
    Markdown,
    Mdx,
    ReStructuredText,
    AsciiDoc,
    Text,
    Html,
    Rust,
    Elixir,
}

impl FileKind {
    pub fn of(path: &Path) -> Option<FileKind> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        let name = path.file_name()?.to_str()?.to_ascii_lowercase();
        Some(match extension.as_str() {
            // ex_doc extras: cheatsheets and Livebook notebooks are Markdown too.
            "md" | "markdown" | "mdown" | "cheatmd" | "livemd" => FileKind::Markdown,
            "mdx" => FileKind::Mdx,
            "rst" | "rest" => FileKind::ReStructuredText,
            // The sources a Sphinx build copies next to its HTML (`_sources/x.rst.txt`).
            "txt" if name.ends_with(".rst.txt") => FileKind::ReStructuredText,
            "adoc" | "asciidoc" | "asc" => FileKind::AsciiDoc,
            "txt" | "text" => FileKind::Text,
            "html" | "htm" => FileKind::Html,
            "rs" => FileKind::Rust,
            "ex" => FileKind::Elixir,
            _ => return None,
        })
    }
}

/// Why a file found in a root is not indexed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// Not valid UTF-8, or has NUL bytes.
    Binary,
    /// Larger than the configured maximum.
    Huge,
    /// Generated noise (rustdoc sources, SIMD intrinsics, print pages, redirects).
    Generated,
    /// A file named explicitly whose type drydock does not read (e.g. `data.json`).
    Unsupported,
}

/// The chunks of one text file (`relative` is its path below the root).
pub fn chunk_file(kind: FileKind, content: &str, meta: &FileMeta) -> Result<Vec<Chunk>, Skip> {
    let chunks = match kind {
        FileKind::Markdown | FileKind::Text => markdown::chunk_markdown(content, meta),
        FileKind::Mdx => mdx::chunk_mdx(content, meta),
        FileKind::ReStructuredText => rst::chunk_rst(content, meta),
        FileKind::AsciiDoc => asciidoc::chunk_asciidoc(content, meta),
        FileKind::Html => {
            if html::skip_html(Path::new(&meta.file_path), content) {
                return Err(Skip::Generated);
            }
            html::chunk_html(content, meta)
        }
        FileKind::Rust => rust_source::chunk_rust_source(content, meta),
        FileKind::Elixir => elixir_docs::chunk_elixir_source(content, meta),
    };
    Ok(chunks)
}

/// The source type of a file: READMEs, API docs (rustdoc pages, doc comments) or guides.
pub fn source_type(kind: FileKind, relative: &Path, content: &str) -> SourceType {
    let name = relative
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    match kind {
        _ if name.starts_with("readme") => SourceType::Readme,
        FileKind::Rust | FileKind::Elixir => SourceType::Api,
        FileKind::Html if html::is_rustdoc(content) => SourceType::Api,
        _ => SourceType::Guide,
    }
}

/// Text content of a file's bytes, or why it is not text.
pub fn text_of(bytes: &[u8]) -> Result<&str, Skip> {
    if bytes[..bytes.len().min(8192)].contains(&0) {
        return Err(Skip::Binary);
    }
    std::str::from_utf8(bytes).map_err(|_| Skip::Binary)
}

impl FileRoot {
    /// The library of a file, from its path below the root.
    pub fn library_of(&self, relative: &Path) -> String {
        match &self.library {
            Library::Named(name) => name.clone(),
            Library::FirstDirectory { top_level } => {
                let mut components = relative.components();
                match (components.next(), components.next()) {
                    (Some(first), Some(_)) => first.as_os_str().to_string_lossy().into_owned(),
                    _ => top_level.clone(),
                }
            }
        }
    }

    /// What the chunks of a file share.
    pub fn meta(&self, relative: &Path, kind: FileKind, content: &str) -> FileMeta {
        let absolute = self.dir.join(relative);
        FileMeta {
            library: self.library_of(relative),
            version: self.version.clone(),
            source_type: source_type(kind, relative, content),
            file_path: relative.to_string_lossy().replace('\\', "/"),
            url: Some(file_url(&absolute)),
        }
    }

    /// The files of the root, sorted, as (absolute path, path below the root): .gitignore and
    /// the filter respected, hidden files and directories left out. Files of a type drydock
    /// does not read are listed too, so that an ingest counts them as skipped.
    pub fn files(&self) -> Vec<(PathBuf, PathBuf)> {
        if let Some(only) = &self.only {
            let relative = only.strip_prefix(&self.dir).unwrap_or(only).to_path_buf();
            return vec![(only.clone(), relative)];
        }
        let root = self.dir.clone();
        let skip_nested = self.skip_nested_packages;
        let walker = ignore::WalkBuilder::new(&self.dir)
            .hidden(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(false)
            .require_git(false)
            .follow_links(false)
            .filter_entry(move |entry| {
                let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
                !(is_dir
                    && entry.path() != root
                    && (matches!(
                        entry.file_name().to_str(),
                        Some("target" | "_build" | "node_modules")
                    ) || skip_nested
                        && (entry.path().join("Cargo.toml").is_file()
                            || entry.path().join("mix.exs").is_file())))
            })
            .build();
        let mut files: Vec<(PathBuf, PathBuf)> = walker
            .filter_map(Result::ok)
            .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
            .filter_map(|entry| {
                let relative = entry.path().strip_prefix(&self.dir).ok()?.to_path_buf();
                self.filter
                    .allows(&relative)
                    .then(|| (entry.path().to_path_buf(), relative))
            })
            .collect();
        files.sort();
        files
    }
}

/// `file:///path/to/file.html`, with the characters a URL cannot hold percent-encoded.
pub fn file_url(path: &Path) -> String {
    let mut url = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'/' | b'-' | b'_' | b'.' | b'~' => {
                url.push(byte as char)
            }
            other => url.push_str(&format!("%{other:02X}")),
        }
    }
    url
}

/// The Rust docs rustup installed for the toolchain `rustc` runs: `SYSROOT/share/doc/rust/html`,
/// one library per top directory (`book`, `cargo`, `std`, ...), at the rustc version.
pub fn rust_toolchain_root(sysroot: &Path, rustc_version: &str) -> Option<FileRoot> {
    let dir = sysroot.join("share/doc/rust/html");
    let dir = dir.canonicalize().ok()?;
    Some(FileRoot {
        dir,
        only: None,
        library: Library::FirstDirectory {
            top_level: "rust".into(),
        },
        version: Some(rustc_version.to_string()),
        // Stable copies of std's docs: core and alloc re-export what std shows.
        filter: PathFilter::new(
            &["**/*.html".into()],
            &[
                "core/**".into(),
                "alloc/**".into(),
                "std_detect/**".into(),
                "src/**".into(),
                "trait.impl/**".into(),
                "type.impl/**".into(),
                "static.files/**".into(),
            ],
        )
        .expect("valid globs"),
        skip_nested_packages: false,
    })
}

/// Elixir's own applications (elixir, eex, ex_unit, iex, logger, mix) under `lib_dir`
/// (`:code.lib_dir(:elixir)/..`): each app's `.ex` sources when they are installed, else
/// its compiled modules (Debian ships beams only).
pub fn elixir_toolchain_roots(lib_dir: &Path, elixir_version: &str) -> Vec<Root> {
    let Ok(entries) = std::fs::read_dir(lib_dir) else {
        return Vec::new();
    };
    let mut apps: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join("ebin").is_dir())
        .collect();
    apps.sort();
    apps.into_iter()
        .map(|app| {
            let name = app
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            if app.join("lib").is_dir() {
                Root::Files(FileRoot {
                    dir: app,
                    only: None,
                    library: Library::Named(name),
                    version: Some(elixir_version.to_string()),
                    filter: PathFilter::new(&["lib/**/*.ex".into()], &[]).expect("valid globs"),
                    skip_nested_packages: false,
                })
            } else {
                Root::Beams(BeamRoot {
                    ebin: app.join("ebin"),
                })
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters_kinds_and_source_types() {
        let filter = PathFilter::new(
            &["src/**/*.rs".into(), "*.md".into()],
            &["src/gen/**".into()],
        )
        .unwrap();
        assert!(filter.allows(Path::new("src/lib.rs")));
        assert!(filter.allows(Path::new("README.md")));
        assert!(!filter.allows(Path::new("src/gen/out.rs")));
        assert!(!filter.allows(Path::new("tests/it.rs")));
        assert!(PathFilter::default().allows(Path::new("anything")));

        assert_eq!(FileKind::of(Path::new("a/B.MD")), Some(FileKind::Markdown));
        assert_eq!(FileKind::of(Path::new("x.ex")), Some(FileKind::Elixir));
        assert_eq!(FileKind::of(Path::new("x.exs")), None);
        assert_eq!(FileKind::of(Path::new("Makefile")), None);
        assert_eq!(FileKind::of(Path::new("d/page.mdx")), Some(FileKind::Mdx));
        assert_eq!(
            FileKind::of(Path::new("_sources/library/json.rst.txt")),
            Some(FileKind::ReStructuredText)
        );
        assert_eq!(
            FileKind::of(Path::new("README.rst")),
            Some(FileKind::ReStructuredText)
        );
        assert_eq!(FileKind::of(Path::new("g.adoc")), Some(FileKind::AsciiDoc));
        assert_eq!(FileKind::of(Path::new("notes.txt")), Some(FileKind::Text));
        assert_eq!(
            FileKind::of(Path::new("guides/cheatsheet.cheatmd")),
            Some(FileKind::Markdown)
        );
        assert_eq!(
            source_type(FileKind::Markdown, Path::new("deps/x/README.md"), ""),
            SourceType::Readme
        );
        assert_eq!(
            source_type(FileKind::Rust, Path::new("src/lib.rs"), ""),
            SourceType::Api
        );
        assert_eq!(
            source_type(FileKind::Html, Path::new("book/ch01.html"), "<html>"),
            SourceType::Guide
        );
        assert_eq!(text_of(b"ok \xc3\xa9").unwrap(), "ok é");
        assert_eq!(text_of(b"\x7fELF\0\0"), Err(Skip::Binary));
        assert_eq!(text_of(b"\xff\xfe"), Err(Skip::Binary));
    }

    #[test]
    fn libraries_and_urls_come_from_paths() {
        let root = FileRoot {
            dir: PathBuf::from("/doc/html"),
            only: None,
            library: Library::FirstDirectory {
                top_level: "rust".into(),
            },
            version: Some("1.95.0".into()),
            filter: PathFilter::default(),
            skip_nested_packages: false,
        };
        assert_eq!(root.library_of(Path::new("book/ch01.html")), "book");
        assert_eq!(root.library_of(Path::new("index.html")), "rust");
        let meta = root.meta(Path::new("book/ch 1é.html"), FileKind::Html, "");
        assert_eq!(meta.file_path, "book/ch 1é.html");
        assert_eq!(
            meta.url.as_deref(),
            Some("file:///doc/html/book/ch%201%C3%A9.html")
        );
    }

    /// An mdBook as a crate ships it: `book.toml` is counted as skipped, `SUMMARY.md` and
    /// the chapters are read with their headings.
    #[test]
    fn an_mdbook() {
        let root = FileRoot {
            dir: Path::new("src/docs/testdata/mdbook")
                .canonicalize()
                .unwrap(),
            only: None,
            library: Library::Named("tidewater".into()),
            version: None,
            filter: PathFilter::default(),
            skip_nested_packages: true,
        };
        let files = root.files();
        let relative: Vec<String> = files.iter().map(|(_, r)| r.display().to_string()).collect();
        assert_eq!(
            relative,
            [
                "book.toml",
                "src/README.md",
                "src/SUMMARY.md",
                "src/getting-started.md",
                "src/reference/config.md"
            ]
        );
        assert_eq!(FileKind::of(Path::new("book.toml")), None);
        let mut chunks = Vec::new();
        for (path, relative) in &files[1..] {
            let content = std::fs::read_to_string(path).unwrap();
            let kind = FileKind::of(path).unwrap();
            let meta = root.meta(relative, kind, &content);
            chunks.extend(chunk_file(kind, &content, &meta).unwrap());
        }
        crate::docs::chunk::checks::assert_well_formed(&chunks);
        let holding = |text: &str| {
            chunks
                .iter()
                .find(|c| c.text.contains(text))
                .unwrap_or_else(|| panic!("{text} in {chunks:#?}"))
        };
        let serve = holding("tidewater serve ./public");
        assert_eq!(
            (serve.file_path.as_str(), serve.heading_path.as_slice()),
            (
                "src/getting-started.md",
                ["Getting Started".to_string()].as_slice()
            )
        );
        assert!(
            serve.text.contains("## Serving a directory"),
            "{}",
            serve.text
        );
        let workers = holding("number of CPUs by default");
        assert_eq!(workers.heading_path[0], "Configuration");
        assert_eq!(
            holding("reloads its configuration").heading_path,
            ["Introduction"]
        );
        let summary = holding("[Configuration](reference/config.md)");
        assert_eq!(summary.file_path, "src/SUMMARY.md");
    }

    #[test]
    fn walking_respects_gitignore_filters_and_nested_packages() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (path, text) in [
            (".gitignore", "ignored/\n"),
            ("README.md", "# r"),
            ("docs/guide.md", "# g"),
            ("src/lib.rs", "//! l"),
            ("ignored/x.md", "# x"),
            ("target/doc/y.html", "<p>y</p>"),
            (".hidden/z.md", "# z"),
            ("crates/inner/Cargo.toml", "[package]"),
            ("crates/inner/src/lib.rs", "//! i"),
            ("image.png", "png"),
        ] {
            let path = root.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let mut file_root = FileRoot {
            dir: root.clone(),
            only: None,
            library: Library::Named("p".into()),
            version: None,
            filter: PathFilter::default(),
            skip_nested_packages: true,
        };
        let relative = |root: &FileRoot| -> Vec<String> {
            root.files()
                .into_iter()
                .map(|(_, r)| r.display().to_string())
                .collect()
        };
        // Files of every type are listed, for the ingest to read or count as skipped.
        assert_eq!(
            relative(&file_root),
            ["README.md", "docs/guide.md", "image.png", "src/lib.rs"]
        );
        file_root.skip_nested_packages = false;
        file_root.filter = PathFilter::new(&[], &["docs/**".into(), "*.png".into()]).unwrap();
        assert_eq!(
            relative(&file_root),
            [
                "README.md",
                "crates/inner/Cargo.toml",
                "crates/inner/src/lib.rs",
                "src/lib.rs"
            ]
        );
    }
}
