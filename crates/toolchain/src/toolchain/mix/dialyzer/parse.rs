//! Dialyzer's warnings as diagnostics, from the output of Erlang's `dialyzer` command and of
//! dialyxir's `mix dialyzer`.
//!
//! The formats, one warning each:
//! - dialyzer (also dialyxir `--format dialyzer`): `lib/x.ex:12: Function f/0 has no local
//!   return`, with `lib/x.ex:12:5:` when the beam has columns (Erlang does, Elixir 1.14 not).
//!   Without `--no_indentation` types go on indented lines of their own; the message runs
//!   on until a line that is not indented.
//! - dialyxir `--format short`: `lib/x.ex:12:no_return Function f/0 has no local return.`
//! - dialyxir's default: `lib/x.ex:12:no_return` alone, the message on the following
//!   (unindented, sometimes blank) lines, closed by a rule of 80 underscores.
//!
//! Everything else is progress or trailer (`Proceeding with analysis...`, `--statistics`
//! phase lines, the `Unknown functions:` list, `done (warnings were emitted)`,
//! dialyxir's `Total errors: ...`) and is skipped.

use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::toolchain::endings::strip_ansi;
use crate::toolchain::paths::PathMapper;
use crate::toolchain::results::{Diagnostic, Severity};

/// Where the file names in dialyzer's warnings lead. Elixir records a module's source
/// relative to the directory it was compiled in: the project root, or in an umbrella the
/// child app's own directory (`lib/child.ex`, not `apps/child/lib/child.ex`); absolute when
/// the source lies outside it.
#[derive(Debug, Clone)]
pub struct SourceRoots {
    project_root: PathBuf,
    app_roots: Vec<PathBuf>,
}

impl SourceRoots {
    /// A project whose apps were compiled in `app_roots` (an umbrella's children).
    pub fn new(project_root: &Path, app_roots: impl IntoIterator<Item = PathBuf>) -> Self {
        Self {
            project_root: project_root.to_path_buf(),
            app_roots: app_roots.into_iter().collect(),
        }
    }

    /// A project that is a single app.
    pub fn project(project_root: &Path) -> Self {
        Self::new(project_root, [project_root.to_path_buf()])
    }

    /// The file relative to the project root, or absolute when outside it. A relative name
    /// belongs to the first app root that has such a file: two umbrella children with the
    /// same relative file name cannot be told apart from dialyzer's output.
    fn map(&self, file: &str) -> String {
        let compiled_in = self
            .app_roots
            .iter()
            .find(|root| root.join(file).is_file())
            .unwrap_or(&self.project_root);
        PathMapper::new(compiled_in, &self.project_root).map(file)
    }
}

/// Parses dialyzer's or dialyxir's whole output; relative file names are taken to be
/// relative to the project root (for an umbrella, use `DialyzerParser` with its app roots).
pub fn parse_dialyzer_output(text: &str, project_root: &Path) -> Vec<Diagnostic> {
    let roots = SourceRoots::project(project_root);
    let mut parser = DialyzerParser::new(&roots);
    for line in text.lines() {
        parser.feed_line(line);
    }
    parser.finish()
}

/// Turns dialyzer's output, fed line by line as it arrives, into diagnostics.
pub struct DialyzerParser<'r> {
    roots: &'r SourceRoots,
    state: State,
    diagnostics: Vec<Diagnostic>,
}

enum State {
    Outside,
    /// dialyzer's format and dialyxir's short one: indented lines continue the message.
    Indented(Pending),
    /// dialyxir's default format: every line up to the rule belongs to the message.
    Ruled(Pending),
    /// dialyzer's `Unknown functions:` / `Unknown types:` list: not warnings.
    UnknownList,
}

struct Pending {
    file: String,
    line: u32,
    column: Option<u32>,
    code: Option<String>,
    lines: Vec<String>,
}

static HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^(?P<file>\S.*?):(?P<line>\d+)(?::(?P<column>\d+))?:(?: (?P<message>.*)|(?P<tag>[a-z][a-z_]*)(?: (?P<short>.*))?)$",
    )
    .expect("valid regex")
});

static RULE: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"^_{20,}$").expect("valid regex"));

static UNKNOWN_LIST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^Unknown (?:functions|types|behaviours):$").expect("valid regex")
});

impl<'r> DialyzerParser<'r> {
    pub fn new(roots: &'r SourceRoots) -> Self {
        Self {
            roots,
            state: State::Outside,
            diagnostics: Vec::new(),
        }
    }

    pub fn feed_line(&mut self, line: &str) {
        let line = strip_ansi(line.trim_end());
        let line = line.as_ref();
        if RULE.is_match(line) {
            self.close(State::Outside);
        } else if let Some(next) = header(line) {
            self.close(next);
        } else {
            match &mut self.state {
                State::Ruled(pending) => pending.lines.push(line.to_string()),
                State::Indented(pending) if is_indented(line) => {
                    pending.lines.push(line.to_string())
                }
                State::UnknownList if is_indented(line) => {}
                _ if UNKNOWN_LIST.is_match(line) => self.close(State::UnknownList),
                _ => self.close(State::Outside),
            }
        }
    }

    /// The diagnostics in the order dialyzer printed them (sorted by file and line).
    pub fn finish(mut self) -> Vec<Diagnostic> {
        self.close(State::Outside);
        self.diagnostics
    }

    /// Ends the warning being read, if any, and moves on to `next`.
    fn close(&mut self, next: State) {
        match std::mem::replace(&mut self.state, next) {
            State::Indented(pending) | State::Ruled(pending) => {
                let diagnostic = self.diagnostic(pending);
                self.diagnostics.push(diagnostic);
            }
            State::Outside | State::UnknownList => {}
        }
    }

    fn diagnostic(&self, pending: Pending) -> Diagnostic {
        let message = pending.lines.join("\n").trim().to_string();
        let code = pending
            .code
            .or_else(|| warning_kind(&message).map(String::from));
        Diagnostic {
            file: Some(self.roots.map(&pending.file)),
            line: Some(pending.line),
            column: pending.column,
            end_line: None,
            end_column: None,
            severity: Severity::Warning,
            code,
            message,
            label: None,
            notes: Vec::new(),
            suggestions: Vec::new(),
            rendered: None,
        }
    }
}

/// The state a warning's first line opens, if `line` is one.
fn header(line: &str) -> Option<State> {
    let caps = HEADER.captures(line)?;
    let number = |name| caps.name(name).and_then(|m| m.as_str().parse::<u32>().ok());
    let text = caps.name("message").or(caps.name("short"));
    let pending = Pending {
        file: caps["file"].to_string(),
        line: number("line")?,
        column: number("column"),
        code: caps.name("tag").map(|m| m.as_str().to_string()),
        lines: text.map(|m| m.as_str().to_string()).into_iter().collect(),
    };
    Some(if pending.code.is_some() && text.is_none() {
        State::Ruled(pending)
    } else {
        State::Indented(pending)
    })
}

fn is_indented(line: &str) -> bool {
    line.starts_with([' ', '\t']) && !line.trim().is_empty()
}

/// The message templates of OTP 25's dialyzer (`message_to_string` in dialyzer.erl), most
/// specific first, named by the warning tag dialyzer uses internally and dialyxir prints.
const WARNING_KINDS: &[(&str, &str)] = &[
    (
        "no_return",
        r"^(?:Function \S+/\d+|The created fun) (?:has no local return|has no clauses that will ever match|only terminates with explicit exception)",
    ),
    ("unused_fun", r"^Function \S+/\d+ will never be called"),
    (
        "call_to_missing",
        r"^Call to missing or unexported function ",
    ),
    (
        "opaque_call",
        r"^The call .* breaks the opacity of the term ",
    ),
    (
        "app_call",
        r"^The call .* requires that .* is of type .* not ",
    ),
    ("call_without_opaque", r"^The call .* does not have "),
    ("call_with_opaque", r"^The call .* contains .* when "),
    (
        "call",
        r"^The call .* (?:will never return since|breaks the contract)",
    ),
    (
        "fun_app_args",
        r"^Fun application with arguments .* will fail since the function has type",
    ),
    (
        "apply",
        r"^Fun application with arguments .* (?:will never return since|breaks the contract)",
    ),
    ("fun_app_no_fun", r"^Fun application will fail since "),
    ("exact_eq", r"^The test .* can never evaluate to 'true'"),
    ("neg_guard_fail", r"^Guard test not\(.*\) can never succeed"),
    (
        "guard_fail",
        r"^(?:Guard test .* can never succeed|Clause guard cannot succeed\.$)",
    ),
    (
        "guard_fail_pat",
        r"^Clause guard cannot succeed\. The .* was matched against",
    ),
    (
        "opaque_guard",
        r"^Guard test .* (?:contains |breaks the opacity of its argument)",
    ),
    (
        "map_update",
        r"^A key of type .* cannot exist in a map of type ",
    ),
    (
        "improper_list_constr",
        r"^Cons will produce an improper list",
    ),
    ("bin_construction", r"^Binary construction will fail since "),
    (
        "record_constr",
        r"^Record construction .*violates the declared type",
    ),
    (
        "record_match",
        r"^Matching of .* tagged with a record name violates ",
    ),
    (
        "pattern_match_cov",
        r"^The .* can never match since previous clauses completely covered the type ",
    ),
    ("pattern_match", r"^The .* can never match the type "),
    (
        "record_matching",
        r"^The .* violates the declared type for #",
    ),
    (
        "opaque_match",
        r"^The attempt to match a term of type .* breaks the opacity ",
    ),
    (
        "opaque_eq",
        r"^Attempt to test for equality between .* opaque type ",
    ),
    (
        "opaque_neq",
        r"^Attempt to test for inequality between .* opaque type ",
    ),
    (
        "opaque_type_test",
        r"^The type test .* breaks the opacity of the term ",
    ),
    ("opaque_size", r"^The size .* breaks the opacity of "),
    (
        "unmatched_return",
        r"^Expression produces a value of type .* but this value is unmatched",
    ),
    (
        "contract_diff",
        r"^Type specification .* is not equal to the success typing",
    ),
    (
        "contract_subtype",
        r"^Type specification .* is a subtype of the success typing",
    ),
    (
        "contract_supertype",
        r"^Type specification .* is a supertype of the success typing",
    ),
    (
        "contract_range",
        r"^The contract .* cannot be right because the inferred return ",
    ),
    (
        "invalid_contract",
        r"^Invalid type specification for function ",
    ),
    (
        "contract_with_opaque",
        r"^The specification for .* has an opaque subtype ",
    ),
    (
        "extra_range",
        r"^The specification for .* states that the function might also return ",
    ),
    (
        "missing_range",
        r"^The success typing for .* implies that the function might also return ",
    ),
    (
        "overlapping_contract",
        r"^Overloaded contract for .* has overlapping domains",
    ),
    (
        "spec_missing_fun",
        r"^Contract for function that does not exist: ",
    ),
    (
        "callback_type_mismatch",
        r"^The inferred return type of .* the expected return type for the callback of ",
    ),
    (
        "callback_arg_type_mismatch",
        r"^The inferred type for the \S+ argument of .* in the callback of ",
    ),
    (
        "callback_spec_type_mismatch",
        r"^The return type .* in the specification of .* the expected return type for the callback of ",
    ),
    (
        "callback_spec_arg_type_mismatch",
        r"^The specified type for the \S+ argument of .* in the callback of ",
    ),
    ("callback_missing", r"^Undefined callback function "),
    (
        "callback_not_exported",
        r"^Callback function .* exists but is not exported ",
    ),
    (
        "callback_info_missing",
        r"^Callback info about the .* behaviour is not available",
    ),
    ("unknown_type", r"^Unknown type "),
    ("unknown_function", r"^Unknown function "),
    ("unknown_behaviour", r"^Unknown behaviour "),
];

/// Dialyzer's command line prints no warning tag: it is recognised from the message.
/// `None` for a message no OTP 25 template produces.
pub(super) fn warning_kind(message: &str) -> Option<&'static str> {
    static KINDS: LazyLock<Vec<(&str, Regex)>> = LazyLock::new(|| {
        WARNING_KINDS
            .iter()
            .map(|(kind, pattern)| (*kind, Regex::new(pattern).expect("valid regex")))
            .collect()
    });
    static SPACES: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\s+").expect("valid regex"));
    // Indented output breaks a message anywhere a type starts.
    let flat = SPACES.replace_all(message, " ");
    KINDS
        .iter()
        .find(|(_, pattern)| pattern.is_match(&flat))
        .map(|(kind, _)| *kind)
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::toolchain::recorded;

    fn parse_fixture(case: &str) -> Vec<Diagnostic> {
        let root = recorded::dialyzer(case).root();
        parse_dialyzer_output(&recorded::dialyzer(case).stdout(), &root)
    }

    /// `file:line:column code message`, one per diagnostic.
    pub(crate) fn summaries(diagnostics: &[Diagnostic]) -> Vec<String> {
        diagnostics
            .iter()
            .map(|d| {
                assert_eq!(d.severity, Severity::Warning);
                format!(
                    "{}:{}:{} {} {}",
                    d.file.as_deref().unwrap_or("-"),
                    d.line.unwrap_or(0),
                    d.column.unwrap_or(0),
                    d.code.as_deref().unwrap_or("-"),
                    d.message,
                )
            })
            .collect()
    }

    /// test-projects/mix-dialyzer/EXPECTED.md
    pub(crate) const MIX_DIALYZER_SUMMARIES: [&str; 6] = [
        "lib/mix_dialyzer/warnings.ex:5:0 no_return Function no_local_return/0 has no local return",
        "lib/mix_dialyzer/warnings.ex:6:0 call The call lists:reverse('not_a_list') will never return since it differs in the 1st argument from the success typing arguments: ([any()])",
        "lib/mix_dialyzer/warnings.ex:12:0 guard_fail Guard test is_binary(_m@1::integer()) can never succeed",
        "lib/mix_dialyzer/warnings.ex:18:0 no_return Function wrong_local_call/0 has no local return",
        "lib/mix_dialyzer/warnings.ex:19:0 call The call 'Elixir.MixDialyzer.Warnings':double('not_a_number') will never return since the success typing is (integer()) -> integer() and the contract is (integer()) -> integer()",
        "lib/mix_dialyzer/warnings.ex:28:0 pattern_match The pattern {'error', _reason@1} can never match the type 42",
    ];

    #[test]
    fn drydock_s_own_flags_give_one_line_per_warning() {
        assert_eq!(summaries(&parse_fixture("analyze")), MIX_DIALYZER_SUMMARIES);
    }

    #[test]
    fn indented_warnings_keep_their_continuation_lines() {
        let diagnostics = parse_fixture("analyze-indented-erts-plt");
        let codes: Vec<_> = diagnostics.iter().map(|d| d.code.as_deref()).collect();
        let expected_codes = ["no_return", "call", "guard_fail", "no_return", "call"];
        assert_eq!(codes[..5], expected_codes.map(Some));
        assert_eq!(codes[5], Some("pattern_match"));
        assert_eq!(
            diagnostics[4].message,
            "The call 'Elixir.MixDialyzer.Warnings':double\n         ('not_a_number') will never return since the success typing is\n         (integer()) ->\n          integer() and the contract is\n          (integer()) -> integer()"
        );
        assert_eq!(
            diagnostics[5].message,
            "The pattern\n          {'error', _reason@1} can never match the type\n          42"
        );
        // The `Unknown types:` list and the `done` lines are not part of the last warning.
        assert_eq!(diagnostics.len(), 6);
        assert_eq!(diagnostics[5].line, Some(28));
    }

    #[test]
    fn progress_and_failures_are_not_warnings() {
        assert!(parse_fixture("build-plt-erts").is_empty());
        assert!(parse_fixture("error-no-debug-info").is_empty());
    }

    #[test]
    fn erlang_beams_give_columns() {
        let text = "src/my_mod.erl:12:5: Function f/0 has no local return\n";
        let diagnostics = parse_dialyzer_output(text, Path::new("/p"));
        assert_eq!(
            summaries(&diagnostics),
            ["src/my_mod.erl:12:5 no_return Function f/0 has no local return"]
        );
    }

    #[test]
    fn absolute_paths_inside_the_project_become_relative() {
        let text = "/p/lib/a.ex:3: Function f/0 will never be called\n\
                    /elsewhere/b.ex:4: Function g/0 will never be called\n";
        let files: Vec<_> = parse_dialyzer_output(text, Path::new("/p"))
            .into_iter()
            .map(|d| d.file.unwrap())
            .collect();
        assert_eq!(files, ["lib/a.ex", "/elsewhere/b.ex"]);
    }

    #[test]
    fn umbrella_children_own_the_files_compiled_in_them() {
        let project = tempfile::tempdir().unwrap();
        let child = project.path().join("apps/child");
        std::fs::create_dir_all(child.join("lib")).unwrap();
        std::fs::write(child.join("lib/child.ex"), "").unwrap();
        let roots = SourceRoots::new(project.path(), [project.path().join("apps/other"), child]);
        let mut parser = DialyzerParser::new(&roots);
        parser.feed_line("lib/child.ex:2: Function broken/0 has no local return");
        parser.feed_line("lib/gone.ex:3: Function gone/0 has no local return");
        let files: Vec<_> = parser
            .finish()
            .into_iter()
            .map(|d| d.file.unwrap())
            .collect();
        assert_eq!(files, ["apps/child/lib/child.ex", "lib/gone.ex"]);
    }

    /// dialyxir's formats, written after its formatters (`Dialyxir.Formatter.Short` and
    /// `.Dialyxir`) since hex.pm (hence dialyxir) is out of reach here: not recorded output.
    #[test]
    fn dialyxir_short_format_carries_the_tag() {
        let text = "Finding suitable PLTs\n\
                    Total errors: 2, Skipped: 0, Unnecessary Skips: 0\n\
                    done in 0m1.52s\n\
                    lib/x.ex:12:no_return Function f/0 has no local return.\n\
                    lib/x.ex:20:7:pattern_match The pattern can never match the type.\n\
                    done (warnings were emitted)\n\
                    Halting VM with exit status 2\n";
        assert_eq!(
            summaries(&parse_dialyzer_output(text, Path::new("/p"))),
            [
                "lib/x.ex:12:0 no_return Function f/0 has no local return.",
                "lib/x.ex:20:7 pattern_match The pattern can never match the type.",
            ]
        );
    }

    #[test]
    fn dialyxir_default_format_runs_up_to_the_rule() {
        let rule = "_".repeat(80);
        let text = format!(
            "Starting Dialyzer\n\
             [\n  check_plt: false,\n  init_plt: '/p/_build/dev/dialyxir.plt'\n]\n\
             Total errors: 2, Skipped: 0, Unnecessary Skips: 0\n\
             done in 0m0.9s\n\
             \x1b[31mlib/x.ex:6:call\n\
             The function call will not succeed.\n\
             \n\
             :lists.reverse(:not_a_list)\n\
             \n\
             will never return since the 1st arguments differ\n\
             from the success typing arguments:\n\
             \n\
             ([any()])\n\
             {rule}\x1b[0m\n\
             lib/x.ex:5:no_return\n\
             Function no_local_return/0 has no local return.\n\
             {rule}\n\
             done (warnings were emitted)\n"
        );
        let diagnostics = parse_dialyzer_output(&text, Path::new("/p"));
        assert_eq!(
            summaries(&diagnostics)[1],
            "lib/x.ex:5:0 no_return Function no_local_return/0 has no local return."
        );
        assert_eq!(diagnostics[0].code.as_deref(), Some("call"));
        assert_eq!(
            diagnostics[0].message,
            "The function call will not succeed.\n\n:lists.reverse(:not_a_list)\n\n\
             will never return since the 1st arguments differ\nfrom the success typing arguments:\n\n([any()])"
        );
    }

    #[test]
    fn warning_kinds_follow_the_message_templates() {
        for (message, kind) in [
            ("Function f/0 will never be called", Some("unused_fun")),
            ("The created fun has no local return", Some("no_return")),
            (
                "Function f/1 has no clauses that will ever match",
                Some("no_return"),
            ),
            (
                "Guard test not(is_atom(X::integer())) can never succeed",
                Some("neg_guard_fail"),
            ),
            ("Clause guard cannot succeed.", Some("guard_fail")),
            (
                "The pattern 'ok' can never match since previous clauses completely covered the type 'error'",
                Some("pattern_match_cov"),
            ),
            (
                "Expression produces a value of type {'ok', _}, but this value is unmatched",
                Some("unmatched_return"),
            ),
            (
                "Invalid type specification for function 'Elixir.A':f/0. The success typing is () -> 'ok'",
                Some("invalid_contract"),
            ),
            (
                "The call 'Elixir.A':f(1) breaks the contract (atom()) -> 'ok'",
                Some("call"),
            ),
            (
                "Call to missing or unexported function 'Elixir.B':g/0",
                Some("call_to_missing"),
            ),
            (
                "The test integer() =:= atom() can never evaluate to 'true'",
                Some("exact_eq"),
            ),
            (
                "Undefined callback function init/1 (behaviour gen_server)",
                Some("callback_missing"),
            ),
            (
                "Unknown function 'Elixir.Dep':f/0",
                Some("unknown_function"),
            ),
            ("Something dialyzer 30 might say", None),
        ] {
            assert_eq!(warning_kind(message), kind, "{message}");
        }
    }
}
