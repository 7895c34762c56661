use super::*;

const CARGO: Toolchain = crate::toolchain::cargo::TOOLCHAIN;
const MIX: Toolchain = crate::toolchain::mix::TOOLCHAIN;

struct Fixture {
    _dir: tempfile::TempDir,
    project: std::path::PathBuf,
    outside: std::path::PathBuf,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().canonicalize().unwrap();
    let project = base.join("project");
    let outside = base.join("outside");
    std::fs::create_dir_all(project.join("lib")).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    for file in ["script.exs", "lib/a.ex", "config.exs"] {
        std::fs::write(project.join(file), "").unwrap();
    }
    for file in ["Cargo.toml", "evil.exs", "evil.ex"] {
        std::fs::write(outside.join(file), "").unwrap();
    }
    Fixture {
        _dir: dir,
        project,
        outside,
    }
}

fn argv(tool: Toolchain, task: &str, args: &[&str], project: &Path) -> Vec<String> {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    task_argv(tool, task, &args, project).unwrap_or_else(|e| panic!("{task} {args:?} refused: {e}"))
}

fn refusal(tool: Toolchain, task: &str, args: &[&str], project: &Path) -> TaskArgError {
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    match task_argv(tool, task, &args, project) {
        Ok(argv) => panic!("{task} {args:?} was accepted as {argv:?}"),
        Err(error) => error,
    }
}

#[test]
fn cargo_tasks_accept_their_options_in_one_form() {
    let f = fixture();
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("doc", &[], &["doc"]),
        (
            "doc",
            &["--no-deps", "-p", "ws-core", "--features", "a,b", "--lib"],
            &[
                "doc",
                "--no-deps",
                "--package=ws-core",
                "--features=a,b",
                "--lib",
            ],
        ),
        (
            "doc",
            &[
                "--package=serde@1.0.200",
                "-F",
                "x y",
                "--document-private-items",
            ],
            &[
                "doc",
                "--package=serde@1.0.200",
                "--features=x,y",
                "--document-private-items",
            ],
        ),
        (
            "doc",
            &["-vv", "-q"],
            &["doc", "--verbose", "--verbose", "--quiet"],
        ),
        ("doc", &["-p"], &["doc", "--package"]),
        ("doc", &["--jobs=-1"], &["doc", "--jobs=-1"]),
        (
            "tree",
            &[
                "-e", "normal", "-i", "serde", "--depth", "1", "--prefix", "none", "-d",
            ],
            &[
                "tree",
                "--edges=normal",
                "--invert=serde",
                "--depth=1",
                "--prefix=none",
                "--duplicates",
            ],
        ),
        (
            "tree",
            &["--format", "{p} {f}", "--charset=ascii", "--invert"],
            &["tree", "--format={p} {f}", "--charset=ascii", "--invert"],
        ),
        (
            "metadata",
            &["--format-version", "1", "--no-deps"],
            &["metadata", "--format-version=1", "--no-deps"],
        ),
        (
            "bench",
            &["--bench", "parse", "--no-run", "fast"],
            &["bench", "--bench=parse", "--no-run", "fast"],
        ),
        ("bench", &["--", "fast"], &["bench", "fast"]),
        ("version", &[], &["version"]),
    ];
    for (task, args, expected) in cases {
        assert_eq!(
            argv(CARGO, task, args, &f.project),
            *expected,
            "{task} {args:?}"
        );
    }
    // A value that starts with `-` is taken only in the `=` form.
    let error = refusal(CARGO, "doc", &["-j", "-1"], &f.project);
    assert_eq!(
        error.to_string(),
        "`--jobs` of `cargo doc` needs a value; write it as `--jobs=VALUE`"
    );
}

#[test]
fn cargo_tasks_refuse_what_picks_another_manifest_config_target_or_toolchain() {
    let f = fixture();
    let manifest = f.outside.join("Cargo.toml");
    let manifest = manifest.to_str().unwrap();
    let manifest_eq = format!("--manifest-path={manifest}");
    let refused: &[&[&str]] = &[
        &["--manifest-path", manifest],
        &[&manifest_eq],
        &["--config", "build.target-dir=\"/tmp/x\""],
        &["--config=build.rustc-wrapper=\"/tmp/x\""],
        &["-Z", "unstable-options"],
        &["-Zunstable-options"],
        &["--target-dir", "/tmp/x"],
        &["--target-dir=/tmp/x"],
        &["--out-dir=/tmp/x"],
        &["--artifact-dir", "/tmp/x"],
        &["+nightly"],
        &["--path", "/tmp/x"],
        &["--git=https://example.com/x"],
        &["--registry", "evil"],
        &["--index=sparse+https://example.com/"],
        &["-C", "/tmp"],
        &["--lockfile-path=/tmp/Cargo.lock"],
        &["--target", "/tmp/spec.json"],
        &["--open"],
        &["-pfoo"],
        &["-vZ"],
        &["--no-deps=yes"],
        &["--package=--manifest-path=/tmp/x"],
        &["--features=-Zx"],
        &["--color", "--manifest-path=/tmp/x"],
    ];
    for task in ["doc", "tree", "metadata", "bench", "version"] {
        for args in refused {
            if task == "bench" && args == &["+nightly"] {
                continue;
            }
            refusal(CARGO, task, args, &f.project);
        }
    }
    // `+name` picks a toolchain only as cargo's first argument; after the task name it
    // is a plain value, here a bench filter.
    assert_eq!(
        argv(CARGO, "bench", &["+nightly"], &f.project),
        ["bench", "+nightly"]
    );
}

#[test]
fn a_refusal_names_the_argument_the_task_and_what_it_accepts() {
    let f = fixture();
    let error = refusal(CARGO, "doc", &["--manifest-path=/x/Cargo.toml"], &f.project).to_string();
    assert!(
        error.starts_with(
            "`--manifest-path=/x/Cargo.toml` is not accepted by `cargo doc`; it accepts --no-deps, "
        ),
        "{error}"
    );
    assert!(error.contains("-p/--package[=SPEC]"), "{error}");
    assert!(error.contains("-F/--features=FEATURES"), "{error}");
    assert!(error.ends_with("no positional arguments"), "{error}");

    let plus = refusal(CARGO, "metadata", &["+nightly"], &f.project);
    assert!(
        plus.to_string()
            .starts_with("`+nightly` is one argument too many for `cargo metadata`; it accepts"),
        "{plus}"
    );
    let version = refusal(CARGO, "version", &["-v"], &f.project);
    assert!(
        version.to_string().ends_with("it takes no arguments"),
        "{version}"
    );
}

#[test]
fn task_names_cannot_be_flags_or_toolchains() {
    let f = fixture();
    for task in ["+nightly", "-Zx", "--config", "", "a b", "doc/x"] {
        assert!(
            matches!(
                refusal(CARGO, task, &[], &f.project),
                TaskArgError::TaskName(_)
            ),
            "{task:?}"
        );
    }
}

#[test]
fn tasks_without_a_table_take_only_plain_positional_values() {
    let f = fixture();
    assert_eq!(
        argv(CARGO, "outdated", &["serde", "x"], &f.project),
        ["outdated", "serde", "x"]
    );
    let error = refusal(MIX, "hex.info", &["--config", "x"], &f.project);
    assert!(
        error
            .to_string()
            .contains("has no argument allowlist in drydock"),
        "{error}"
    );
    refusal(CARGO, "outdated", &["--", "-x"], &f.project);
}

#[test]
fn mix_run_passes_the_script_and_program_arguments_after_dashes() {
    let f = fixture();
    let cases: &[(&[&str], &[&str])] = &[
        (&["-e", "IO.puts 1"], &["run", "--eval=IO.puts 1"]),
        (&["--eval=-1"], &["run", "--eval=-1"]),
        (
            &["-e", "IO.inspect System.argv", "--", "a", "--b"],
            &["run", "--eval=IO.inspect System.argv", "--", "a", "--b"],
        ),
        (
            &["script.exs", "--erl-config", "/x/evil.config"],
            &["run", "--", "script.exs", "--erl-config", "/x/evil.config"],
        ),
        (
            &["--no-halt", "--", "script.exs", "a"],
            &["run", "--no-halt", "--", "script.exs", "a"],
        ),
        (
            &[
                "-r",
                "lib/a.ex",
                "-c",
                "config.exs",
                "-p",
                "--no-start",
                "-e",
                "1",
            ],
            &[
                "run",
                "--require=lib/a.ex",
                "--config=config.exs",
                "--parallel",
                "--no-start",
                "--eval=1",
            ],
        ),
    ];
    for (args, expected) in cases {
        assert_eq!(argv(MIX, "run", args, &f.project), *expected, "{args:?}");
    }
}

#[test]
fn mix_run_refuses_files_outside_the_project() {
    let f = fixture();
    let evil = f.outside.join("evil.exs");
    let evil = evil.to_str().unwrap();
    let require_eq = format!("--require={evil}");
    let config_eq = format!("--config={evil}");
    let refused: &[&[&str]] = &[
        &[evil],
        &["--", evil],
        &["-r", evil],
        &[&require_eq],
        &["--parallel-require", evil],
        &["-c", evil],
        &[&config_eq],
        &["-r", "../outside/evil.exs"],
        &["-r", "lib/*.ex"],
        &["-e", "1", "--erl-config", "/x"],
        &["--erl-config=/x"],
        &["--mix-exs"],
        &["-e"],
        &["-e", "--config"],
    ];
    for args in refused {
        let error = refusal(MIX, "run", args, &f.project);
        if args.first() == Some(&evil) {
            assert!(error.to_string().contains("outside the project"), "{error}");
        }
    }
}

#[test]
fn other_mix_tasks_take_their_own_options() {
    let f = fixture();
    let mix = |task, args: &[&str]| argv(MIX, task, args, &f.project);
    assert_eq!(
        mix("deps.tree", &["--format", "plain", "jason"]),
        ["deps.tree", "--format=plain", "--", "jason"]
    );
    assert_eq!(
        mix("app.tree", &["--exclude", "logger"]),
        ["app.tree", "--exclude=logger"]
    );
    assert_eq!(
        mix("xref", &["callers", "MixClean", "--label", "compile"]),
        ["xref", "--label=compile", "--", "callers", "MixClean"]
    );
    assert_eq!(
        mix("xref", &["trace", "lib/a.ex"]),
        ["xref", "--", "trace", "lib/a.ex"]
    );
    assert_eq!(
        mix("xref", &["graph", "--format", "stats"]),
        ["xref", "--format=stats", "--", "graph"]
    );
    assert_eq!(mix("help", &["deps.tree"]), ["help", "deps.tree"]);
    assert_eq!(
        mix("help", &["--search", "deps"]),
        ["help", "--search", "deps"]
    );
    assert_eq!(
        mix("docs", &["-o", "doc/new", "-f", "html"]),
        ["docs", "--output=doc/new", "--formatter=html"]
    );

    let evil = f.outside.join("evil.ex");
    let evil = evil.to_str().unwrap();
    let outside_output = format!("--output={}", f.outside.display());
    let refused: &[(&str, &[&str])] = &[
        ("xref", &["trace", evil]),
        ("xref", &["trace"]),
        ("xref", &["delete"]),
        ("xref", &["graph", "extra"]),
        ("xref", &["--output", "x"]),
        ("deps.tree", &["a", "b"]),
        ("deps.tree", &["--", "-x"]),
        ("help", &["--search", "-x"]),
        ("help", &["--search"]),
        ("docs", &["--open"]),
        ("docs", &[&outside_output]),
        ("docs", &["-o", "../x"]),
        ("docs", &["--formatter=pdf"]),
        ("app.tree", &["--format", "svg"]),
    ];
    for (task, args) in refused {
        refusal(MIX, task, args, &f.project);
    }
}
