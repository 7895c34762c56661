use super::*;
use crate::toolchain::recorded;

fn parse_in(case: &str, project_root: &Path, include_rendered: bool) -> CargoMessages {
    let mut parser = CargoMessageParser::new(
        &recorded::cargo(case).root(),
        project_root,
        include_rendered,
    );
    parser.feed(Stream::Stdout, &recorded::cargo(case).stdout());
    parser.finish()
}

fn parse(case: &str) -> CargoMessages {
    parse_in(case, &recorded::cargo(case).root(), false)
}

/// `file:line:column severity code message | label`, one per diagnostic.
fn summaries(diagnostics: &[Diagnostic]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| {
            format!(
                "{}:{}:{} {:?} {} {} | {}",
                d.file.as_deref().unwrap_or("-"),
                d.line.unwrap_or(0),
                d.column.unwrap_or(0),
                d.severity,
                d.code.as_deref().unwrap_or("-"),
                d.message,
                d.label.as_deref().unwrap_or("-"),
            )
        })
        .collect()
}

const CARGO_ERRORS: [&str; 5] = [
    "src/parser/mod.rs:6:19 Error E0425 cannot find value `missing_value` in this scope | not found in this scope",
    "src/lib.rs:3:5 Warning unused_imports unused import: `std::collections::HashMap` | -",
    "src/shapes.rs:7:12 Error E0599 no method named `perimeter` found for reference `&Square` in the current scope | method not found in `&Square`",
    "src/lib.rs:11:5 Error E0308 mismatched types | expected `i32`, found `&str`",
    "src/parser/tokens.rs:2:9 Warning unused_variables unused variable: `separator` | -",
];

#[test]
fn build_with_errors_reports_each_error_and_warning_in_its_file() {
    let messages = parse("build-errors");
    assert_eq!(summaries(&messages.diagnostics), CARGO_ERRORS);
    assert_eq!(messages.build_success, Some(false));
    assert_eq!(messages.artifacts, 0);
    assert!(messages.executables.is_empty());
}

#[test]
fn spans_notes_and_machine_applicable_suggestions_are_kept() {
    let messages = parse("build-errors");
    let unused = &messages.diagnostics[4];
    assert_eq!((unused.end_line, unused.end_column), (Some(2), Some(18)));
    assert!(unused.notes.is_empty(), "boilerplate notes are dropped");
    assert_eq!(
        unused.suggestions,
        [Suggestion {
            message: "if this is intentional, prefix it with an underscore".into(),
            file: "src/parser/tokens.rs".into(),
            line: 2,
            column: 9,
            end_line: 2,
            end_column: 18,
            replacement: "_separator".into(),
        }]
    );
    assert_eq!(unused.rendered, None);
    let mismatched = &messages.diagnostics[3];
    assert!(mismatched.notes.is_empty() && mismatched.suggestions.is_empty());
}

#[test]
fn lib_and_lib_test_duplicates_are_reported_once() {
    let stdout = recorded::cargo("check-all-targets-errors").stdout();
    let raw = stdout
        .lines()
        .filter(|l| l.contains("\"compiler-message\""))
        .count();
    assert_eq!(
        raw, 14,
        "the fixture reports each diagnostic twice, plus failure notes"
    );
    let mut found = summaries(&parse("check-all-targets-errors").diagnostics);
    let mut expected = CARGO_ERRORS.map(String::from).to_vec();
    // lib and lib-test compile in parallel: their messages interleave differently per run.
    found.sort();
    expected.sort();
    assert_eq!(found, expected);
}

#[test]
fn failed_test_build_reports_compile_errors_and_no_executables() {
    let messages = parse("test-errors");
    assert_eq!(messages.diagnostics.len(), 5);
    assert_eq!(messages.build_success, Some(false));
    assert!(messages.executables.is_empty());
}

#[test]
fn clippy_lint_in_workspace_member_is_relative_to_the_project_root() {
    let workspace = recorded::cargo("clippy-workspace").root();
    let messages = parse("clippy-workspace");
    assert_eq!(
        summaries(&messages.diagnostics),
        [
            "crates/core/src/lib.rs:7:5 Warning clippy::needless_return unneeded `return` statement | -"
        ]
    );
    let lint = &messages.diagnostics[0];
    assert!(lint.notes.is_empty(), "boilerplate notes are dropped");
    let edits: Vec<_> = lint
        .suggestions
        .iter()
        .map(|s| {
            (
                s.message.as_str(),
                s.line,
                s.column,
                s.end_column,
                s.replacement.as_str(),
            )
        })
        .collect();
    assert_eq!(
        edits,
        [
            ("remove `return`", 7, 5, 17, "n * 2"),
            ("remove `return`", 7, 17, 18, "")
        ]
    );
    assert_eq!(
        (messages.artifacts, messages.build_success),
        (2, Some(true))
    );

    let member = parse_in("clippy-workspace", &workspace.join("crates/core"), false);
    assert_eq!(member.diagnostics[0].file.as_deref(), Some("src/lib.rs"));
    assert_eq!(member.diagnostics[0].suggestions[0].file, "src/lib.rs");

    let sibling = parse_in("clippy-workspace", &workspace.join("crates/app"), false);
    let absolute = workspace.join("crates/core/src/lib.rs");
    assert_eq!(sibling.diagnostics[0].file.as_deref(), absolute.to_str());
}

#[test]
fn non_ascii_path_and_character_columns_are_preserved() {
    let messages = parse_in(
        "build-odd-path",
        &recorded::cargo("build-odd-path").root(),
        true,
    );
    assert_eq!(
        summaries(&messages.diagnostics),
        ["src/módulo con espacio.rs:4:45 Warning unused_variables unused variable: `sin_uso` | -"]
    );
    let warning = &messages.diagnostics[0];
    assert_eq!(warning.end_column, Some(52));
    let rendered = warning.rendered.as_deref().expect("asked for rendered");
    let source = rendered
        .lines()
        .find_map(|line| line.strip_prefix("4 | "))
        .expect("the rendered snippet shows line 4");
    let byte_offset = source.find("sin_uso").expect("variable on the line");
    assert_eq!(source[..byte_offset].chars().count() + 1, 45);
    assert_ne!(
        byte_offset + 1,
        45,
        "the line has multi-byte characters before the span"
    );
}

#[test]
fn rendered_text_only_when_asked() {
    let root = recorded::cargo("build-errors").root();
    let with = parse_in("build-errors", &root, true);
    let rendered = with.diagnostics[0].rendered.as_deref().unwrap_or_default();
    assert!(rendered.starts_with("error[E0425]: cannot find value `missing_value`"));
    assert!(
        parse("build-errors")
            .diagnostics
            .iter()
            .all(|d| d.rendered.is_none())
    );
}

#[test]
fn test_build_collects_test_executables_and_ignores_libtest_lines() {
    let root = recorded::cargo("test-clean").root();
    let messages = parse("test-clean");
    assert!(messages.diagnostics.is_empty());
    assert_eq!(
        (messages.artifacts, messages.build_success),
        (5, Some(true))
    );
    let names: Vec<_> = messages
        .executables
        .iter()
        .map(|path| {
            Path::new(path)
                .strip_prefix(&root)
                .expect("inside the project")
        })
        .map(|path| path.to_string_lossy().into_owned())
        .collect();
    assert_eq!(
        names,
        [
            "target/debug/deps/cargo_clean-ccf468074745fc1a",
            "target/debug/deps/cargo_clean-d3394973d882e955",
            "target/debug/deps/api-efa6175f6d6def19",
        ]
    );
}

#[test]
fn events_follow_the_build() {
    let mut parser = CargoMessageParser::new(Path::new("/p"), Path::new("/p"), false);
    let events: Vec<_> = recorded::cargo("clippy-workspace")
        .stdout()
        .lines()
        .filter_map(|line| parser.line(Stream::Stdout, line))
        .collect();
    assert_eq!(
        events,
        [
            CargoEvent::Diagnostic {
                severity: Severity::Warning
            },
            CargoEvent::Artifact {
                target: "ws_core".into(),
                fresh: false
            },
            CargoEvent::Artifact {
                target: "ws-app".into(),
                fresh: false
            },
            CargoEvent::BuildFinished { success: true },
        ]
    );
}

fn message_line(level: &str, message: &str, code: Option<&str>, spans: &str) -> String {
    let code = code.map_or("null".into(), |c| {
        format!(r#"{{"code":"{c}","explanation":null}}"#)
    });
    format!(
        r#"{{"reason":"compiler-message","package_id":"x","manifest_path":"/p/Cargo.toml","target":{{"name":"x"}},"message":{{"rendered":"r","$message_type":"diagnostic","children":[],"code":{code},"level":"{level}","message":"{message}","spans":[{spans}]}}}}"#
    )
}

fn span(file: &str, line: u32, primary: bool, expansion: Option<&str>) -> String {
    let expansion = expansion.map_or("null".into(), |inner| {
        format!(r#"{{"span":{inner},"macro_decl_name":"m!","def_site_span":null}}"#)
    });
    format!(
        r#"{{"file_name":"{file}","byte_start":0,"byte_end":1,"line_start":{line},"line_end":{line},"column_start":3,"column_end":4,"is_primary":{primary},"text":[],"label":null,"suggested_replacement":null,"suggestion_applicability":null,"expansion":{expansion}}}"#
    )
}

#[test]
fn summaries_and_failure_notes_are_not_diagnostics() {
    let mut parser = CargoMessageParser::new(Path::new("/p"), Path::new("/p"), false);
    for line in [
        message_line(
            "error",
            "aborting due to 3 previous errors; 2 warnings emitted",
            None,
            "",
        ),
        message_line("warning", "2 warnings emitted", None, ""),
        message_line(
            "failure-note",
            "For more information about an error",
            None,
            "",
        ),
    ] {
        assert_eq!(parser.line(Stream::Stdout, &line), None, "{line}");
    }
    let linker = message_line(
        "error",
        "linking with `cc` failed: exit status: 1",
        None,
        "",
    );
    assert_eq!(
        parser.line(Stream::Stdout, &linker),
        Some(CargoEvent::Diagnostic {
            severity: Severity::Error
        })
    );
    let ice = message_line(
        "error: internal compiler error",
        "unexpected panic",
        None,
        "",
    );
    assert_eq!(
        parser.line(Stream::Stdout, &ice),
        Some(CargoEvent::Diagnostic {
            severity: Severity::Error
        })
    );
    let found = parser.finish().diagnostics;
    assert_eq!(found.len(), 2);
    assert_eq!((found[0].file.as_ref(), found[0].line), (None, None));
}

#[test]
fn primary_span_inside_a_foreign_macro_moves_to_the_call_site() {
    let call_site = span("src/lib.rs", 12, false, None);
    let in_std = span(
        "/rustc/abc/library/core/src/macros/mod.rs",
        40,
        true,
        Some(&call_site),
    );
    let line = message_line("error", "bad macro use", Some("E0277"), &in_std);
    let mut parser = CargoMessageParser::new(Path::new("/p"), Path::new("/p"), false);
    parser.line(Stream::Stdout, &line);
    let found = parser.finish().diagnostics;
    assert_eq!(
        (found[0].file.as_deref(), found[0].line),
        (Some("src/lib.rs"), Some(12))
    );
}

#[test]
fn dependency_files_stay_absolute_and_relative_paths_are_normalized() {
    let mapper = PathMapper::new(Path::new("/ws"), Path::new("/ws/crates/a"));
    assert_eq!(mapper.map("crates/a/src/lib.rs"), "src/lib.rs");
    assert_eq!(mapper.map("crates/a/src/../build.rs"), "build.rs");
    assert_eq!(mapper.map("crates/b/src/lib.rs"), "/ws/crates/b/src/lib.rs");
    assert_eq!(
        mapper.map("/home/u/.cargo/registry/src/x-1.0/src/lib.rs"),
        "/home/u/.cargo/registry/src/x-1.0/src/lib.rs"
    );
    assert!(mapper.is_in_workspace("crates/b/src/lib.rs"));
    assert!(!mapper.is_in_workspace("/rustc/abc/library/std/src/lib.rs"));
}

#[test]
fn garbage_and_human_lines_are_ignored() {
    let mut parser = CargoMessageParser::new(Path::new("/p"), Path::new("/p"), false);
    for line in [
        "",
        "running 3 tests",
        "{not json",
        "{\"reason\":\"unknown-thing\"}",
        "   {",
    ] {
        assert_eq!(parser.line(Stream::Stdout, line), None);
    }
    assert_eq!(parser.finish(), CargoMessages::default());
}
