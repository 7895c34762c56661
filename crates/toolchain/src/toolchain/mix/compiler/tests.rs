use super::*;
use crate::toolchain::recorded;
use std::path::PathBuf;

/// Elixir 1.14 prints paths relative to the project: any root will do.
fn root() -> &'static Path {
    Path::new("/p")
}

fn umbrella_root() -> PathBuf {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../..")).join("test-projects/mix-umbrella")
}

/// Feeds a recorded run the way the tests of the cargo parsers do: stdout, then stderr.
fn parse_at(root: &Path, (stdout, stderr): (impl AsRef<str>, impl AsRef<str>)) -> Vec<Diagnostic> {
    let mut parser = MixDiagnosticParser::new(root);
    parser.feed(Stream::Stdout, stdout.as_ref());
    parser.feed(Stream::Stderr, stderr.as_ref());
    parser.finish()
}

fn parse(output: (impl AsRef<str>, impl AsRef<str>)) -> Vec<Diagnostic> {
    parse_at(root(), output)
}

/// The parallel compiler prints warnings in a different order in each run.
fn sorted(mut diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    diagnostics.sort_by(|a, b| (&a.file, a.line, &a.message).cmp(&(&b.file, b.line, &b.message)));
    diagnostics
}

fn warning(file: &str, line: u32, message: &str, function: Option<&str>) -> Diagnostic {
    Diagnostic {
        file: Some(file.into()),
        line: Some(line),
        column: None,
        end_line: None,
        end_column: None,
        severity: Severity::Warning,
        code: None,
        message: message.into(),
        label: None,
        notes: function.map(|f| format!("in {f}")).into_iter().collect(),
        suggestions: Vec::new(),
        rendered: None,
    }
}

fn error(file: &str, line: u32, code: &str, message: &str) -> Diagnostic {
    Diagnostic {
        severity: Severity::Error,
        code: Some(code.into()),
        ..warning(file, line, message, None)
    }
}

fn at_column(diagnostic: Diagnostic, column: u32) -> Diagnostic {
    Diagnostic {
        column: Some(column),
        ..diagnostic
    }
}

const UNUSED: &str =
    "is unused (if the variable is not meant to be used, prefix it with an underscore)";

#[test]
fn elixir_1_14_compile_error_and_the_warnings_before_it() {
    let diagnostics = parse(recorded::mix("compile-errors").streams());
    assert_eq!(
        sorted(diagnostics),
        [
            warning("lib/mix_errors.ex", 4, "unused alias Report", None),
            warning(
                "lib/mix_errors.ex",
                7,
                &format!("variable \"count\" {UNUSED}"),
                Some("MixErrors.total/1")
            ),
            warning("lib/mix_errors/format.ex", 4, "unused import String", None),
            warning(
                "lib/mix_errors/format.ex",
                6,
                &format!("variable \"width\" {UNUSED}"),
                Some("MixErrors.Format.title/2")
            ),
            warning(
                "lib/mix_errors/report.ex",
                10,
                &format!("variable \"unused_width\" {UNUSED}"),
                Some("MixErrors.Report.header/1")
            ),
            error(
                "lib/mix_errors/report.ex",
                16,
                "CompileError",
                "undefined function format_row/1 (expected MixErrors.Report to define such a function or for it to be imported, but none are available)"
            ),
        ]
    );
}

const DEFAULTS_WARNING: &str = "def label/2 has multiple clauses and also declares default values. In such cases, the default values should be defined in a header. Instead of:

    def foo(:first_clause, b \\\\ :default) do ... end
    def foo(:second_clause, b) do ... end

one should write:

    def foo(a, b \\\\ :default)
    def foo(:first_clause, b) do ... end
    def foo(:second_clause, b) do ... end";

const TYPES_WARNING: &str = "incompatible types:

    binary() !~ integer()

in expression:

    # lib/mix_warnings.ex:20
    is_integer(value)

where \"value\" was given the type binary() in:

    # lib/mix_warnings.ex:20
    is_binary(value)

where \"value\" was given the type integer() in:

    # lib/mix_warnings.ex:20
    is_integer(value)";

const MISSING_LOAD: &str = "MixWarnings.Missing.load/0 is undefined (module MixWarnings.Missing is not available or is yet to be defined)";

fn mix_warnings_diagnostics() -> Vec<Diagnostic> {
    vec![
        warning("lib/mix_warnings.ex", 4, "unused alias Storage", None),
        warning(
            "lib/mix_warnings.ex",
            6,
            "module attribute @retries was set but never used",
            None,
        ),
        warning(
            "lib/mix_warnings.ex",
            8,
            &format!("variable \"opts\" {UNUSED}"),
            Some("MixWarnings.fetch/2"),
        ),
        warning(
            "lib/mix_warnings.ex",
            13,
            "MixWarnings.Cache.put/2 is undefined or private",
            Some("MixWarnings.store/2"),
        ),
        warning(
            "lib/mix_warnings.ex",
            17,
            "MixWarnings.Cache.lookup/2 is undefined or private. Did you mean:\n\n      * lookup/1",
            Some("MixWarnings.peek/1"),
        ),
        warning(
            "lib/mix_warnings.ex",
            20,
            TYPES_WARNING,
            Some("MixWarnings.check/1"),
        ),
        warning("lib/mix_warnings.ex", 27, DEFAULTS_WARNING, None),
        warning(
            "lib/mix_warnings/cache.ex",
            7,
            MISSING_LOAD,
            Some("MixWarnings.Cache.warm/0"),
        ),
        warning(
            "lib/mix_warnings/cache.ex",
            11,
            MISSING_LOAD,
            Some("MixWarnings.Cache.refresh/0"),
        ),
    ]
}

#[test]
fn elixir_1_14_multi_line_warnings_and_one_diagnostic_per_location() {
    let diagnostics = parse(recorded::mix("compile-warnings").streams());
    assert_eq!(sorted(diagnostics), mix_warnings_diagnostics());
}

#[test]
fn elixir_1_14_colours_and_warnings_as_errors_change_nothing() {
    assert_eq!(
        sorted(parse(recorded::mix("compile-warnings-color").streams())),
        mix_warnings_diagnostics()
    );
    assert_eq!(
        sorted(parse(recorded::mix("compile-warnings-as-errors").streams())),
        mix_warnings_diagnostics()
    );
}

#[test]
fn elixir_1_14_test_file_that_does_not_compile() {
    let diagnostics = sorted(parse(recorded::mix("test-compile-error").streams()));
    let mut expected = mix_warnings_diagnostics();
    expected.push(error(
            "test/broken_test.exs",
            5,
            "CompileError",
            "undefined function build_fixture/1 (expected MixWarnings.BrokenTest to define such a function or for it to be imported, but none are available)",
        ));
    assert_eq!(diagnostics, expected);
}

#[test]
fn elixir_1_14_non_ascii_path_with_spaces() {
    assert_eq!(
        parse(recorded::mix("compile-odd-path").streams()),
        [warning(
            "lib/módulo con espacio.ex",
            4,
            &format!("variable \"año_sin_uso\" {UNUSED}"),
            Some("OddPaths.Modulo.saludo/2")
        )]
    );
}

#[test]
fn elixir_1_14_multi_line_syntax_error_without_its_stack_frame() {
    let message = "unexpected reserved word: do. In case you wanted to write a \"do\" expression, you must either use do-blocks or separate the keyword argument with comma. For example, you should either write:

    if some_condition? do
      :this
    else
      :that
    end

or the equivalent construct:

    if(some_condition?, do: :this, else: :that)

where \"some_condition?\" is the first argument and the second argument is a keyword list.

You may see this error if you forget a trailing comma before the \"do\" in a \"do\" block";
    assert_eq!(
        parse(recorded::mix("compile-syntax-error").streams()),
        [at_column(
            error("lib/mix_clean/broken.ex", 3, "SyntaxError", message),
            11
        )]
    );
}

#[test]
fn elixir_1_14_token_missing_and_ascii_snippet() {
    assert_eq!(
        parse(recorded::mix("compile-token-missing").streams()),
        [at_column(
            error(
                "lib/mix_clean/broken.ex",
                5,
                "TokenMissingError",
                "missing terminator: end (for \"do\" starting at line 1)"
            ),
            1
        )]
    );
    assert_eq!(
        parse(recorded::mix("compile-syntax-snippet").streams()),
        [at_column(
            error(
                "lib/módulo roto.ex",
                1,
                "SyntaxError",
                "invalid character \"ó\" (code point U+00F3) in alias (only ASCII characters, without punctuation, are allowed): Módulo"
            ),
            20
        )]
    );
}

#[test]
fn elixir_1_14_exception_while_compiling_takes_its_line_from_the_stack() {
    assert_eq!(
        parse(recorded::mix("compile-raise-in-body").streams()),
        [error(
            "lib/mix_clean/config.ex",
            2,
            "ArgumentError",
            "errors were found at the given arguments:\n\n  * 1st argument: not a textual representation of an integer"
        )]
    );
}

#[test]
fn elixir_1_14_umbrella_paths_are_relative_to_the_app() {
    let diagnostics = parse_at(
        &umbrella_root(),
        recorded::mix("compile-umbrella-broken").streams(),
    );
    assert_eq!(
        diagnostics,
        [
            warning(
                "apps/web/lib/web/broken.ex",
                2,
                &format!("variable \"arg\" {UNUSED}"),
                Some("Web.Broken.unused/1")
            ),
            error(
                "apps/web/lib/web/broken.ex",
                4,
                "CompileError",
                "undefined function nope/0 (expected Web.Broken to define such a function or for it to be imported, but none are available)"
            ),
        ]
    );
}

#[test]
fn elixir_1_14_clean_builds_and_dependency_errors_have_no_diagnostics() {
    assert_eq!(parse(recorded::mix("compile-clean").streams()), []);
    assert_eq!(
        parse_at(
            &umbrella_root(),
            recorded::mix("compile-umbrella").streams()
        ),
        []
    );
    assert_eq!(parse(recorded::mix("compile-missing-deps").streams()), []);
    assert_eq!(parse(recorded::mix("compile-missing-hex").streams()), []);
    assert_eq!(
        parse(recorded::mix("format-check-unformatted").streams()),
        []
    );
}

#[test]
fn elixir_1_14_progress_events() {
    let mut parser = MixDiagnosticParser::new(&umbrella_root());
    let events: Vec<MixEvent> = recorded::mix("compile-umbrella")
        .streams()
        .0
        .lines()
        .filter_map(|line| parser.line(Stream::Stdout, line))
        .collect();
    let project = |name: &str| MixEvent::Project { name: name.into() };
    let compiling = MixEvent::Compiling {
        files: 1,
        kind: ".ex".into(),
    };
    let generated = |app: &str| MixEvent::Generated { app: app.into() };
    assert_eq!(
        events,
        [
            project("core"),
            compiling.clone(),
            generated("core"),
            project("web"),
            compiling,
            generated("web"),
        ]
    );
}

#[test]
fn elixir_1_14_missing_dependencies() {
    let (_, stderr) = recorded::mix("compile-missing-deps").streams();
    assert_eq!(
        missing_deps(&stderr),
        Some(vec!["jason".into(), "shared".into()])
    );
    assert!(!hex_missing(&stderr));
    let (_, stderr) = recorded::mix("test-missing-deps").streams();
    assert_eq!(
        missing_deps(&stderr),
        Some(vec!["jason".into(), "shared".into()])
    );
    let (stdout, stderr) = recorded::mix("compile-missing-hex").streams();
    assert_eq!(
        missing_deps(&format!("{stdout}\n{stderr}")),
        Some(vec!["jason".into()])
    );
    assert!(hex_missing(&stdout));
    let (stdout, stderr) = recorded::mix("compile-errors").streams();
    assert_eq!(missing_deps(&stdout), None);
    assert_eq!(missing_deps(&stderr), None);
}

fn parse_text(root: &Path, text: &str) -> Vec<Diagnostic> {
    parse_at(root, (text, ""))
}

#[test]
fn elixir_1_15_logged_errors_are_not_repeated_by_cannot_compile_module() {
    assert_eq!(
        parse_text(
            root(),
            &recorded::newer_mix("elixir-1.15-compile-error.txt")
        ),
        [
            error(
                "lib/theme_scanner/http.ex",
                12,
                "CompileError",
                "undefined variable \"url\""
            )
            .with_note("in ThemeScanner.Http.download_theme_assets/2"),
            warning(
                "lib/theme_scanner/http.ex",
                99,
                &format!("variable \"tag\" {UNUSED}"),
                Some("ThemeScanner.Http.do_collect_subresources/2")
            ),
        ]
    );
}

#[test]
fn elixir_1_15_cannot_compile_module_stands_in_for_errors_not_seen() {
    let text = "== Compilation error in file lib/x.ex ==\n\
                    ** (CompileError) lib/x.ex: cannot compile module X (errors have been logged)\n";
    let mut expected = error(
        "lib/x.ex",
        0,
        "CompileError",
        "cannot compile module X (errors have been logged)",
    );
    expected.line = None;
    assert_eq!(parse_text(root(), text), [expected]);
}

#[test]
fn elixir_1_16_warning_with_snippet_and_column() {
    assert_eq!(
        parse_text(root(), &recorded::newer_mix("elixir-1.16-warning.txt")),
        [at_column(
            warning(
                "lib/sbom.ex",
                21,
                "Mix.Dep.load_on_environment/1 is undefined or private",
                Some("SBoM.components_for_project/1")
            ),
            15
        )]
    );
}

#[test]
fn elixir_1_16_warnings_located_by_stack_frames_have_no_file() {
    let diagnostics = parse_text(
        root(),
        &recorded::newer_mix("elixir-1.16-warning-stacktrace.txt"),
    );
    let messages: Vec<(&Option<String>, &str)> = diagnostics
        .iter()
        .map(|d| (&d.file, d.message.as_str()))
        .collect();
    assert_eq!(
        messages,
        [
            (
                &None,
                "in order to compile .yrl files, you must add \"compilers: [:yecc] ++ Mix.compilers()\" to the \"def project\" section of erlex's mix.exs"
            ),
            (
                &None,
                "in order to compile .xrl files, you must add \"compilers: [:leex] ++ Mix.compilers()\" to the \"def project\" section of erlex's mix.exs"
            ),
        ]
    );
}

#[test]
fn elixir_1_17_logged_error_with_span() {
    assert_eq!(
            parse_text(root(), &recorded::newer_mix("elixir-1.17-compile-error.txt")),
            [at_column(
                error(
                    "lib/getting_started_ml/chapter01.ex",
                    47,
                    "CompileError",
                    "undefined function predict_by_rule/1 (expected GettingStartedMl.Chapter01 to define such a function or for it to be imported, but none are available)"
                ),
                32
            )
            .with_note("in GettingStartedMl.Chapter01.run/0")]
        );
}

#[test]
fn elixir_1_18_type_warnings_keep_their_traces_but_not_the_lead_in() {
    let diagnostics = parse_text(
        root(),
        &recorded::newer_mix("elixir-1.18-type-warnings.txt"),
    );
    let incompatible = "incompatible types given to User.drive/2:

    User.drive({:ok, %User{age: nil, car_choice: nil}}, car_choices)

given types:

    {:ok, %User{age: nil, car_choice: nil}}, empty_list()

but expected one of:

    dynamic(%User{age: term(), car_choice: term()}), dynamic()

where \"car_choices\" was given the type:

    # type: empty_list()
    # from: lib/foo.ex:21:17
    car_choices = []";
    let never = "the following clause will never match:

    :error

because it attempts to match on the result of:

    User.drive(user, car_choices)

which has type:

    dynamic({:ok, term()} or {:error, :no_choice} or {:error, :not_allowed})";
    assert_eq!(
        diagnostics,
        [
            at_column(
                warning("lib/foo.ex", 22, incompatible, Some("Example.run/0")),
                10
            ),
            warning("lib/foo.ex", 26, never, Some("Example.run/0")),
        ]
    );
}

#[test]
fn elixir_1_19_three_digit_gutter_and_compile_headers() {
    assert_eq!(
        parse_text(root(), &recorded::newer_mix("elixir-1.19-warning.txt")),
        [at_column(
            warning(
                "lib/regex.ex",
                601,
                ":re.import/1 is undefined or private",
                Some("Regex.maybe_import_pattern/1")
            ),
            13
        )]
    );
}

#[test]
fn elixir_main_warning_groups_and_multi_line_messages() {
    let unknown =
        "Unknown.bar/0 is undefined (module Unknown is not available or is yet to be defined)";
    let group = |line| {
        at_column(
            warning("lib/sample.ex", line, unknown, Some("Sample.a/0")),
            13,
        )
    };
    let mut unused_alias = at_column(warning("nofile", 2, "unused alias List", None), 3);
    unused_alias.file = None;
    let no_file = |line| Diagnostic {
        file: None,
        ..group(line)
    };
    assert_eq!(
        parse_text(root(), &recorded::newer_mix("main-warnings.txt")),
        [
            group(5),
            group(6),
            group(7),
            group(8),
            at_column(
                warning(
                    "lib/sample.ex",
                    4,
                    &format!("variable \"unused_param\" {UNUSED}"),
                    Some("Sample.foo/1")
                ),
                11
            ),
            at_column(
                warning(
                    "lib/sample.ex",
                    5,
                    "Unknown.bar/1 is undefined (module Unknown is not available or is yet to be defined)",
                    Some("Sample.a/0")
                ),
                53
            ),
            at_column(warning("lib/sample.ex", 1, "oops\nmulti\nline", None), 4),
            unused_alias,
            no_file(3),
            no_file(4),
        ]
    );
}

#[test]
fn elixir_main_logged_errors_then_cannot_compile_module() {
    assert_eq!(
        parse_text(root(), &recorded::newer_mix("main-errors.txt")),
        [
            at_column(
                error(
                    "lib/sample.ex",
                    5,
                    "CompileError",
                    "undefined variable \"unknown_var\""
                ),
                9
            )
            .with_note("in Sample.foo/1"),
            error(
                "lib/sample.ex",
                3,
                "CompileError",
                "function names should start with lowercase characters or underscore, invalid name CamelCase"
            ),
        ]
    );
}

#[test]
fn elixir_main_syntax_errors_with_snippets() {
    let cases = [
        (
            &recorded::newer_mix("main-syntax-error.txt"),
            "SyntaxError",
            1,
            17,
            "syntax error before: '*'",
        ),
        (
            &recorded::newer_mix("main-token-missing.txt"),
            "TokenMissingError",
            1,
            4,
            "syntax error: expression is incomplete",
        ),
        (
            &recorded::newer_mix("main-mismatched-delimiter.txt"),
            "MismatchedDelimiterError",
            2,
            9,
            "unexpected token: }",
        ),
    ];
    for (text, code, line, column, message) in cases {
        assert_eq!(
            parse_text(root(), text),
            [at_column(
                error("lib/sample.ex", line, code, message),
                column
            )],
            "{code}"
        );
    }
}

#[test]
fn absolute_paths_are_mapped_like_cargo_paths() {
    let text = "warning: unused alias B\n  /home/u/app/lib/a.ex:2\n\n\
                    warning: deprecated\n  /home/u/.hex/dep/lib/d.ex:9: Dep.f/0\n\n";
    let diagnostics = parse_text(Path::new("/home/u/app"), text);
    let files: Vec<_> = diagnostics.iter().map(|d| d.file.as_deref()).collect();
    assert_eq!(files, [Some("lib/a.ex"), Some("/home/u/.hex/dep/lib/d.ex")]);
}

#[test]
fn a_warning_on_stderr_is_not_cut_by_stdout_lines() {
    let mut parser = MixDiagnosticParser::new(root());
    parser.line(Stream::Stderr, "warning: variable \"x\" is unused");
    assert_eq!(
        parser.line(Stream::Stdout, "Compiling 2 files (.ex)\r\n"),
        Some(MixEvent::Compiling {
            files: 2,
            kind: ".ex".into()
        })
    );
    parser.line(Stream::Stderr, "  lib/a.ex:3: A.f/1");
    parser.line(Stream::Stderr, "");
    assert_eq!(
        parser.finish(),
        [warning(
            "lib/a.ex",
            3,
            "variable \"x\" is unused",
            Some("A.f/1")
        )]
    );
}

#[test]
fn repeated_warnings_are_reported_once() {
    let block = "warning: unused alias B\n  lib/a.ex:2\n\n";
    assert_eq!(
        parse_text(root(), &block.repeat(3)),
        [warning("lib/a.ex", 2, "unused alias B", None)]
    );
}

#[test]
fn garbage_and_truncated_output_never_panic() {
    let samples = [
        recorded::mix("compile-errors").stdout(),
        recorded::mix("compile-warnings").stderr(),
        recorded::mix("compile-syntax-error").stdout(),
        recorded::mix("compile-raise-in-body").stdout(),
        recorded::newer_mix("main-warnings.txt"),
        recorded::newer_mix("main-token-missing.txt"),
        recorded::newer_mix("elixir-1.17-compile-error.txt"),
    ];
    for sample in samples {
        let lines: Vec<&str> = sample.lines().collect();
        for end in 0..=lines.len() {
            parse_text(root(), &lines[..end].join("\n"));
            parse_at(root(), ("", &lines[..end].join("\n")));
        }
    }
    let garbage = "** (\n** (CompileError)\n** (SyntaxError) on :1:\n== Compilation error in file  ==\n\
                       └─\n└─ :::\n    │\nwarning:\nerror: \n  :0:\n==> \n\u{0}\u{1b}[31m\u{1b}[\n\
                       ** (X) lib/a.ex:99999999999999999999: big\nwarning: x\n  lib/a.ex:4294967296\n";
    let diagnostics = parse_text(root(), garbage);
    assert!(diagnostics.len() < 20, "{diagnostics:?}");
    let bytes: String = (0u8..=255).map(char::from).collect();
    parse_text(root(), &bytes);
    assert_eq!(missing_deps(&bytes), None);
}

impl Diagnostic {
    fn with_note(mut self, note: &str) -> Self {
        self.notes.push(note.into());
        self
    }
}
