use super::*;
use crate::docs::chunk::SourceType;
use crate::docs::chunk::checks::assert_well_formed;
use std::path::PathBuf;

/// The Rust docs rustup installed; the tests need them (CI installs them) and say so
/// rather than pass without them.
pub(super) fn rust_docs() -> PathBuf {
    let out = std::process::Command::new("rustc")
        .args(["--print", "sysroot"])
        .output()
        .expect("rustc runs");
    let root =
        PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()).join("share/doc/rust/html");
    assert!(
        root.join("std/index.html").exists(),
        "the Rust docs are needed for this test: rustup component add rust-docs"
    );
    root
}

#[test]
fn the_book_chapter_on_references() {
    let root = rust_docs();
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
    let root = rust_docs();
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
    // Trait impls: headers (small ones sharing chunks), not the traits' docs again; a
    // member's own doc kept; no blanket impls, no "Methods from Deref" copies.
    assert!(
        chunks
            .iter()
            .any(|c| c.text.contains("impl<T, A> AsMut<[T]> for Vec<T, A>"))
    );
    assert!(chunks.iter().all(|c| {
        c.heading_path.last().is_none_or(|h| h != "split_at")
            && !c.text.contains("Methods from Deref")
    }));
    assert!(chunks.iter().any(|c| {
        c.text.contains("impl<T, I, A> Index<I> for Vec<T, A>")
            && !c.text.contains("fn index(&self, index: I)")
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
    // Translations: another language than English said by <html lang>.
    let in_lang =
        |lang: &str| format!("<!DOCTYPE HTML>\n<html lang=\"{lang}\" class=\"light\">{page}");
    assert!(skip_html(
        &p("html/rust-by-example/es/index.html"),
        &in_lang("es")
    ));
    assert!(skip_html(
        &p("html/rust-by-example/zh/fn.html"),
        &in_lang("zh-CN")
    ));
    assert!(!skip_html(
        &p("html/rust-by-example/fn.html"),
        &in_lang("en")
    ));
    assert!(!skip_html(&p("html/book/index.html"), &in_lang("en-US")));
}

#[test]
fn a_page_with_a_character_across_its_first_kib_is_read() {
    // "é" is two bytes: the 1024th byte of this page is the middle of one.
    let page = format!("<!DOCTYPE html>{}", "é".repeat(600));
    assert!(!page.is_char_boundary(1024));
    assert!(!skip_html(&PathBuf::from("html/book/notes.html"), &page));
}
