use std::time::Duration;

use super::*;
use crate::workspace::expand_home;

fn no_env(_: &str) -> Option<String> {
    None
}

fn resolve_with(file_text: &str, overrides: Overrides) -> Result<Config, ConfigError> {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("drydock.toml"), file_text).unwrap();
    Config::resolve(&overrides, &no_env, dir.path())
}

#[test]
fn counts_in_days_or_mib_too_large_for_their_unit_are_refused() {
    // Multiplied out, each overflowed a u64.
    for (text, key) in [
        (
            "[tasks]\nkeep_merged_days = 300000000000000\n",
            "tasks.keep_merged_days",
        ),
        (
            "[history]\nmax_age_days = 300000000000000\n",
            "history.max_age_days",
        ),
        ("[history]\nmax_mb = 30000000000000\n", "history.max_mb"),
        (
            "[tasks]\nwarm_start_limit_mb = 30000000000000\n",
            "tasks.warm_start_limit_mb",
        ),
    ] {
        let error = resolve_with(text, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(key) && error.contains("too large"),
            "{error}"
        );
    }
    let kept = resolve_with("[tasks]\nkeep_merged_days = 30\n", Overrides::default()).unwrap();
    assert_eq!(kept.tasks.keep_merged, Duration::from_secs(30 * 24 * 3600));
}

#[test]
fn landing_is_manual_by_default_and_its_checks_and_attempts_are_bounded() {
    let default = resolve_with("", Overrides::default())
        .unwrap()
        .tasks
        .landing;
    assert_eq!(default.mode, LandMode::Manual);
    assert_eq!(default.checks, vec![LandCheck::Compile, LandCheck::Test]);
    assert_eq!(default.attempts, 3);
    assert_eq!(default.check_timeout, Duration::from_secs(1200));
    assert_eq!(default.batch, DEFAULT_LAND_BATCH);
    assert_eq!(default.with, LandWith::Merge);

    let text = "[tasks]\nland = \"when_green\"\nland_checks = [\"compile\", \"lint\", \"test\", \"e2e\"]\nland_attempts = 5\nland_batch = 8\nland_with = \"rebase\"\n[tasks.land_commands]\ne2e = [\"./e2e.sh\", \"--quick\"]\n";
    let set = resolve_with(text, Overrides::default())
        .unwrap()
        .tasks
        .landing;
    assert_eq!(set.mode, LandMode::WhenGreen);
    assert_eq!(
        set.checks,
        vec![
            LandCheck::Compile,
            LandCheck::Lint,
            LandCheck::Test,
            LandCheck::Command {
                name: "e2e".into(),
                argv: vec!["./e2e.sh".into(), "--quick".into()]
            }
        ]
    );
    assert_eq!(set.attempts, 5);
    assert_eq!(set.batch, 8);
    assert_eq!(set.with, LandWith::Rebase);

    for (text, says) in [
        ("[tasks]\nland_checks = []\n", "tasks.land_checks"),
        ("[tasks]\nland_attempts = 0\n", "tasks.land_attempts"),
        ("[tasks]\nland_attempts = 101\n", "more than 100"),
        (
            "[tasks]\nland_check_timeout_s = 0\n",
            "tasks.land_check_timeout_s",
        ),
        ("[tasks]\nland_check_timeout_s = 86401\n", "a day"),
        ("[tasks]\nland = \"sometimes\"\n", "sometimes"),
        (
            "[tasks]\nland_checks = [\"deploy\"]\n",
            "\"deploy\" is neither",
        ),
        (
            "[tasks]\nland_checks = [\"deploy\"]\n[tasks.land_commands]\ne2e = [\"x\"]\n",
            "[tasks.land_commands] (e2e)",
        ),
        (
            "[tasks.land_commands]\ne2e = []\n",
            "tasks.land_commands.e2e",
        ),
        ("[tasks]\nland_batch = 0\n", "tasks.land_batch"),
        ("[tasks]\nland_batch = 33\n", "tasks.land_batch"),
        ("[tasks]\nland_with = \"squash\"\n", "squash"),
    ] {
        let error = resolve_with(text, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains(says), "{text}: {error}");
    }
}

#[test]
fn warm_starts_are_on_and_capped_unless_configured() {
    let default = resolve_with("", Overrides::default()).unwrap();
    assert!(default.tasks.warm_start);
    assert_eq!(default.tasks.warm_start_limit, 8192 * 1024 * 1024);
    let set = resolve_with(
        "[tasks]\nwarm_start = false\nwarm_start_limit_mb = 100\n",
        Overrides::default(),
    )
    .unwrap();
    assert!(!set.tasks.warm_start);
    assert_eq!(set.tasks.warm_start_limit, 100 * 1024 * 1024);
    assert!(matches!(
        resolve_with("[tasks]\nwarm_start_limit_mb = 0\n", Overrides::default()),
        Err(ConfigError::Zero("tasks.warm_start_limit_mb"))
    ));
}

#[test]
fn tasks_agents_run_nice_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    let defaults = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(defaults.tasks.nice, 10);
    let as_drydock = resolve_with("[tasks]\nnice = 0\n", Overrides::default()).unwrap();
    assert_eq!(as_drydock.tasks.nice, 0);
    let error = resolve_with("[tasks]\nnice = 20\n", Overrides::default())
        .unwrap_err()
        .to_string();
    assert!(error.contains("tasks.nice is 20"), "{error}");
    assert!(resolve_with("[tasks]\nnice = -1\n", Overrides::default()).is_err());
}

#[test]
fn no_wait_or_age_is_longer_than_ten_years() {
    for (text, key) in [
        ("[tasks]\nlease_s = 18446744073709551615\n", "tasks.lease_s"),
        ("[tasks]\ngrace_s = 400000000\n", "tasks.grace_s"),
        ("[tasks]\ntimeout_s = 4294967296\n", "tasks.timeout_s"),
        (
            "[agents]\nconsent_timeout_s = 400000000\n",
            "agents.consent_timeout_s",
        ),
        (
            "[limits]\nkill_grace_ms = 18446744073709551615\n",
            "limits.kill_grace_ms",
        ),
        ("[timeouts]\nmax_ms = 400000000000\n", "timeouts.max_ms"),
        ("[timeouts]\ntest_ms = 400000000000\n", "timeouts.<tool>_ms"),
        (
            "[terminal]\nidle_timeout_s = 400000000\n",
            "terminal.idle_timeout_s",
        ),
        (
            "[http]\nbody_read_timeout_s = 400000000\n",
            "http.body_read_timeout_s",
        ),
        ("[history]\nmax_age_days = 3661\n", "history.max_age_days"),
    ] {
        let error = resolve_with(text, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(key) && error.contains("ten years"),
            "{error}"
        );
    }
    let longest = resolve_with(
        "[tasks]\nlease_s = 315360000\ngrace_s = 0\n[history]\nmax_age_days = 3660\n",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(longest.tasks.host.lease, Duration::from_secs(315_360_000));
    assert_eq!(longest.tasks.grace, Duration::ZERO);
    assert_eq!(
        longest.history.max_age,
        Duration::from_secs(3660 * (24 * 3600))
    );
}

#[test]
fn defaults_to_loopback_and_the_working_directory() {
    let dir = tempfile::tempdir().unwrap();
    let config = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(config.bind.to_string(), DEFAULT_BIND);
    assert_eq!(
        config.allowed_roots,
        vec![dir.path().canonicalize().unwrap()]
    );
    assert!(config.roots_defaulted);
    assert!(config.token.is_none());
    assert!(config.tool_enabled(ToolName::Compile));
    assert!(config.env_remove.contains(&"DRYDOCK_TOKEN".to_string()));
}

#[test]
fn flags_beat_env_beat_file() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("drydock.toml"), "bind = \"127.0.0.1:1\"\n").unwrap();
    let env = |name: &str| (name == "DRYDOCK_BIND").then(|| "127.0.0.1:2".to_string());
    let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
    assert_eq!(from_env.bind.port(), 2);
    let flags = Overrides {
        bind: Some("localhost:3".into()),
        ..Default::default()
    };
    assert_eq!(
        Config::resolve(&flags, &env, dir.path())
            .unwrap()
            .bind
            .port(),
        3
    );
    let from_file = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(from_file.bind.port(), 1);
}

#[test]
fn serving_a_non_loopback_bind_needs_a_token() {
    // The config itself is valid: `drydock index` or `call` with it must work.
    let open = resolve_with("bind = \"0.0.0.0:7878\"", Overrides::default()).unwrap();
    assert!(matches!(
        open.check_servable(),
        Err(ConfigError::NonLoopbackWithoutToken(_))
    ));
    let guarded = resolve_with(
        "bind = \"0.0.0.0:7878\"\ntoken = \"s3cret\"",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(guarded.token.as_deref(), Some("s3cret"));
    assert!(guarded.check_servable().is_ok());
    let local = resolve_with("", Overrides::default()).unwrap();
    assert!(local.check_servable().is_ok());
}

#[test]
fn an_output_cap_too_large_for_one_result_is_refused() {
    let error =
        resolve_with("[limits]\noutput_cap_bytes = 1048576", Overrides::default()).unwrap_err();

    assert!(matches!(error, ConfigError::OutputCapTooLarge(1_048_576)));
    assert!(error.to_string().contains("393216"), "{error}");
    let largest = format!("[limits]\noutput_cap_bytes = {MAX_OUTPUT_CAP}");
    assert!(resolve_with(&largest, Overrides::default()).is_ok());
}

#[test]
fn unknown_keys_toolsets_and_tools_are_refused() {
    assert!(matches!(
        resolve_with("bnd = \"x\"", Overrides::default()),
        Err(ConfigError::UnknownKey(key)) if key == "bnd"
    ));
    let error = resolve_with("[cargo]\ntask = [\"doc\"]", Overrides::default()).unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("invalid [cargo] in the config file: unknown field `task`"),
        "{error}"
    );
    let sections = resolve_with("[crago]\ntasks = []", Overrides::default()).unwrap();
    assert_eq!(sections.toolchain.sections().collect::<Vec<_>>(), ["crago"]);
    assert!(matches!(
        resolve_with("toolsets = [\"bild\"]", Overrides::default()),
        Err(ConfigError::UnknownToolset(_))
    ));
    assert!(matches!(
        resolve_with("disabled_tools = [\"compil\"]", Overrides::default()),
        Err(ConfigError::UnknownTool(_))
    ));
    for bad in ["[timeouts]\ncompil_ms = 5", "[timeouts]\ncompile = 5"] {
        assert!(matches!(
            resolve_with(bad, Overrides::default()),
            Err(ConfigError::UnknownTool(_))
        ));
    }
}

#[test]
fn disabled_tools_and_toolsets_switch_tools_off() {
    let config = resolve_with("disabled_tools = [\"run\"]", Overrides::default()).unwrap();
    assert!(!config.tool_enabled(ToolName::Run));
    assert!(config.tool_enabled(ToolName::Test));
    let none = resolve_with("toolsets = []", Overrides::default()).unwrap();
    assert!(!none.tool_enabled(ToolName::Compile));
}

#[test]
fn timeouts_clamp_to_the_ceiling() {
    let config = resolve_with(
        "[timeouts]\ndefault_ms = 1000\nmax_ms = 5000\ntest_ms = 3000",
        Overrides::default(),
    )
    .unwrap();
    let t = &config.timeouts;
    assert_eq!(
        t.for_call(ToolName::Compile, None),
        Duration::from_millis(1000)
    );
    assert_eq!(
        t.for_call(ToolName::Test, None),
        Duration::from_millis(3000)
    );
    assert_eq!(
        t.for_call(ToolName::Test, Some(9000)),
        Duration::from_millis(5000)
    );
    assert_eq!(
        t.for_call(ToolName::Run, Some(200)),
        Duration::from_millis(200)
    );
}

#[test]
fn the_queue_is_this_machines_unless_a_postgres_url_names_a_shared_one() {
    let dir = tempfile::tempdir().unwrap();
    let default = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(default.tasks.store, QueueStore::Sqlite);
    assert!(!default.tasks.host.name.is_empty(), "the machine's name");
    assert_eq!(default.tasks.host.cap, None);
    assert_eq!(default.tasks.host.lease, Duration::from_secs(30));
    assert!(default.tasks.host.requeue_lost);

    let file = resolve_with(
        "[tasks]\nstore = \"postgres://team@db:5432/q\"\nhost = \"gpu-1\"\nhost_cap = 3\nhost_url = \"http://gpu-1:7878\"\nlease_s = 10\nrequeue_lost = false\n",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        file.tasks.store,
        QueueStore::Postgres("postgres://team@db:5432/q".into())
    );
    assert_eq!(
        file.tasks.host,
        HostConfig {
            name: "gpu-1".into(),
            cap: Some(3),
            url: Some("http://gpu-1:7878".into()),
            lease: Duration::from_secs(10),
            requeue_lost: false,
        }
    );
    let env =
        |name: &str| (name == "DRYDOCK_TASKS_STORE").then(|| "postgresql://other/q".to_string());
    let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
    assert_eq!(
        from_env.tasks.store,
        QueueStore::Postgres("postgresql://other/q".into())
    );

    let mistyped = "[tasks]\nstore = \"postgress://q:secret@db/q\"\n";
    let error = resolve_with(mistyped, Overrides::default()).unwrap_err();
    assert!(!error.to_string().contains("secret"), "{error}");
    for (text, says) in [
        (
            "[tasks]\nstore = \"mysql://x\"\n",
            "neither \"sqlite\" nor a postgres:// URL",
        ),
        ("[tasks]\nhost = \" \"\n", "tasks.host"),
        ("[tasks]\nhost_cap = 0\n", "tasks.host_cap"),
        ("[tasks]\nlease_s = 0\n", "tasks.lease_s"),
    ] {
        let error = resolve_with(text, Overrides::default()).unwrap_err();
        assert!(error.to_string().contains(says), "{text}: {error}");
    }
}

#[test]
fn roots_must_exist() {
    let flags = Overrides {
        allow_roots: vec![PathBuf::from("/definitely/not/here")],
        ..Default::default()
    };
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(
        Config::resolve(&flags, &no_env, dir.path()),
        Err(ConfigError::Root { .. })
    ));
}

#[test]
fn budgets_and_prices_are_checked_where_they_are_read() {
    let read = resolve_with(
        "[tasks]\nbudget = { tokens = 2000000 }\nbudget_max = { tokens = 9000000, usd = 50.0 }\n\
         [prices.gpt-lab]\ninput = 1.0\noutput = 2.0\ncache_read = 0.5\ncache_write = 0.0\n",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(read.tasks.budget.unwrap().tokens, Some(2_000_000));
    assert_eq!(read.prices.price("gpt-lab").unwrap().output, 2.0);
    assert!(read.prices.price("claude-opus-5-5").is_some());
    for (file, needle) in [
        (
            "[tasks]\nbudget = { tokens = -1 }\n",
            "tasks.budget.tokens is -1",
        ),
        ("[tasks]\nbudget = {}\n", "name tokens, usd, or both"),
        (
            "[tasks]\nbudget = { tokens = 10 }\nbudget_max = { tokens = 5 }\n",
            "is over tasks.budget_max",
        ),
        (
            "[prices.x]\ninput = -1.0\noutput = 1.0\ncache_read = 1.0\ncache_write = 1.0\n",
            "prices.x.input is -1",
        ),
        ("[prices.x]\ninput = 1.0\n", "missing field"),
    ] {
        let error = resolve_with(file, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains(needle), "{file}: {error}");
    }
}

#[test]
fn a_held_key_names_a_variable_and_the_http_url_of_its_api() {
    let held = resolve_with(
        "[tasks.sandbox_keys]\nLAB_KEY = \"http://127.0.0.1:4000/v1\"\n",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        held.tasks.sandbox_keys["LAB_KEY"].as_str(),
        "http://127.0.0.1:4000/v1"
    );
    for (file, needle) in [
        (
            "[tasks.sandbox_keys]\n\"LAB-KEY\" = \"https://a.example\"\n",
            "not a variable's name",
        ),
        (
            "[tasks.sandbox_keys]\nLAB_KEY = \"ftp://a.example\"\n",
            "tasks.sandbox_keys.LAB_KEY",
        ),
        (
            "[tasks.sandbox_keys]\nLAB_KEY = \"a.example\"\n",
            "http:// or https://",
        ),
    ] {
        let error = resolve_with(file, Overrides::default())
            .unwrap_err()
            .to_string();
        assert!(error.contains(needle), "{file}: {error}");
    }
}

#[test]
fn the_example_config_is_valid_and_matches_the_defaults() {
    let example = resolve_with(
        include_str!("../../../../drydock.example.toml"),
        Overrides::default(),
    )
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let defaults = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(example.bind, defaults.bind);
    assert_eq!(example.env_remove, defaults.env_remove);
    assert_eq!(example.limits.output_cap, defaults.limits.output_cap);
    assert_eq!(example.timeouts.default, defaults.timeouts.default);
    assert_eq!(example.toolsets, defaults.toolsets);
    assert_eq!(example.docs.max_file_bytes, defaults.docs.max_file_bytes);
    assert_eq!(
        example.docs.rerank_candidates,
        defaults.docs.rerank_candidates
    );
    assert_eq!(example.http, defaults.http);
    assert_eq!(example.tasks.nice, defaults.tasks.nice);
    assert_eq!(example.terminal.output_cap, defaults.terminal.output_cap);
    for bad in [0, 1023, 262_145] {
        let file = format!("[terminal]\noutput_cap_bytes = {bad}");
        assert!(
            matches!(resolve_with(&file, Overrides::default()), Err(ConfigError::TerminalOutputCap(n)) if n == bad),
            "{bad}"
        );
    }
}

#[test]
fn the_docs_model_and_reranker_are_a_catalogue_name_or_a_directory() {
    let defaults = resolve_with("", Overrides::default()).unwrap();
    assert_eq!((defaults.docs.model, defaults.docs.reranker), (None, None));
    assert_eq!(defaults.docs.rerank_candidates, 30);
    let named = resolve_with(
        "[docs]\nmodel = \"bge-small-en-v1.5\"\nreranker = \"./models/tiny\"\nrerank_candidates = 12",
        Overrides::default(),
    )
    .unwrap();
    assert_eq!(
        named.docs.model,
        Some(ModelRef::Named("bge-small-en-v1.5".into()))
    );
    let Some(ModelRef::Dir(dir)) = &named.docs.reranker else {
        panic!("{:?}", named.docs.reranker)
    };
    assert!(dir.is_absolute() && dir.ends_with("models/tiny"), "{dir:?}");
    assert_eq!(named.docs.rerank_candidates, 12);
    let old = resolve_with("[docs]\nmodel_dir = \"/opt/m\"", Overrides::default()).unwrap();
    assert_eq!(old.docs.model, Some(ModelRef::Dir("/opt/m".into())));
    let both = resolve_with(
        "[docs]\nmodel = \"/a\"\nmodel_dir = \"/b\"",
        Overrides::default(),
    );
    assert!(matches!(both, Err(ConfigError::Invalid(m)) if m.contains("keep one")));
    let none = resolve_with("[docs]\nrerank_candidates = 0", Overrides::default());
    assert!(matches!(
        none,
        Err(ConfigError::Zero("docs.rerank_candidates"))
    ));
}

#[test]
fn the_docs_index_dir_comes_from_flag_env_or_file_relative_to_the_working_dir() {
    let dir = tempfile::tempdir().unwrap();
    let default = Config::resolve(&Overrides::default(), &no_env, dir.path()).unwrap();
    assert_eq!(default.docs.index_dir, dir.path().join("index"));
    let file = resolve_with("[docs]\nindex_dir = \"idx\"\n", Overrides::default()).unwrap();
    assert!(file.docs.index_dir.ends_with("idx") && file.docs.index_dir.is_absolute());
    let env = |name: &str| (name == "DRYDOCK_INDEX").then(|| "/var/idx".to_string());
    let from_env = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
    assert_eq!(from_env.docs.index_dir, PathBuf::from("/var/idx"));
    let flag = Overrides {
        index_dir: Some("/flag/idx".into()),
        ..Overrides::default()
    };
    let from_flag = Config::resolve(&flag, &env, dir.path()).unwrap();
    assert_eq!(from_flag.docs.index_dir, PathBuf::from("/flag/idx"));
    assert!(matches!(
        resolve_with("[docs]\nexclude = [\"a[\"]\n", Overrides::default()),
        Err(ConfigError::Glob { .. })
    ));
    assert!(matches!(
        resolve_with("[docs]\nindex = \"x\"\n", Overrides::default()),
        Err(ConfigError::Parse { .. })
    ));
}

#[test]
fn http_limits_are_read_and_zero_is_refused() {
    let config = resolve_with(
        "[http]\nsession_idle_timeout_s = 3\nmax_sessions = 2\nheader_read_timeout_s = 1\nbody_read_timeout_s = 4\n",
        Overrides::default(),
    )
    .unwrap();
    let http = config.http;
    assert_eq!(http.session_idle_timeout, Duration::from_secs(3));
    assert_eq!(http.max_sessions, 2);
    assert_eq!(http.header_read_timeout, Duration::from_secs(1));
    assert_eq!(http.body_read_timeout, Duration::from_secs(4));
    assert!(matches!(
        resolve_with("[http]\nmax_sessions = 0\n", Overrides::default()),
        Err(ConfigError::Zero("http.max_sessions"))
    ));
    assert!(matches!(
        resolve_with("[http]\nidle = 3\n", Overrides::default()),
        Err(ConfigError::Parse { .. })
    ));
}

#[test]
fn history_off_paths_expand_tilde_and_secrets_are_read_before_they_are_removed() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join("secret")).unwrap();
    let text = "[history]\noff = [\"~/secret\"]\n[env]\nremove = [\"MY_TOKEN\", \"AWS_*\"]\n";
    std::fs::write(dir.path().join("drydock.toml"), text).unwrap();
    let home_text = home.display().to_string();
    let env = |name: &str| match name {
        "HOME" => Some(home_text.clone()),
        "MY_TOKEN" => Some("tok-123456".to_string()),
        "DRYDOCK_TASKS_STORE" => Some("postgres://q:pw-123456@db/q".to_string()),
        _ => None,
    };
    let config = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();

    let secret = home.canonicalize().unwrap().join("secret");
    assert!(!config.history.records(&secret.join("app")));
    assert!(config.history.records(&dir.path().join("app")));
    assert_eq!(
        config.secret_values.values(),
        ["tok-123456", "postgres://q:pw-123456@db/q"]
    );
    let shown = format!("{config:?}");
    assert!(!shown.contains("tok-123456") && !shown.contains("pw-123456"));
}

#[test]
fn tilde_expands_to_home() {
    let env = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
    assert_eq!(
        expand_home(Path::new("~/code"), &env),
        PathBuf::from("/home/ada/code")
    );
    assert_eq!(expand_home(Path::new("/x/~"), &env), PathBuf::from("/x/~"));
}

#[test]
fn the_data_dir_comes_from_flag_env_file_or_the_users_data_dir() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path();
    std::fs::write(cwd.join("drydock.toml"), "data_dir = \"from-file\"\n").unwrap();
    let env = |name: &str| (name == "DRYDOCK_DATA_DIR").then(|| "/from/env".to_string());
    let flag = Overrides {
        data_dir: Some("/from/flag".into()),
        ..Default::default()
    };
    let resolve = |overrides: &Overrides, env: EnvLookup| {
        Config::resolve(overrides, env, cwd).unwrap().data_dir
    };
    assert_eq!(resolve(&flag, &env), Path::new("/from/flag"));
    assert_eq!(resolve(&Overrides::default(), &env), Path::new("/from/env"));
    assert_eq!(
        resolve(&Overrides::default(), &no_env),
        cwd.join("from-file")
    );
    std::fs::remove_file(cwd.join("drydock.toml")).unwrap();
    let home = |name: &str| (name == "HOME").then(|| "/home/ada".to_string());
    assert_eq!(
        resolve(&Overrides::default(), &home),
        Path::new("/home/ada/.local/share/drydock")
    );
    let xdg = |name: &str| match name {
        "XDG_DATA_HOME" => Some("/xdg/data".to_string()),
        "HOME" => Some("/home/ada".to_string()),
        _ => None,
    };
    assert_eq!(
        resolve(&Overrides::default(), &xdg),
        Path::new("/xdg/data/drydock")
    );
    // Without an environment (a test's), nothing of the machine's user is read.
    assert_eq!(
        resolve(&Overrides::default(), &no_env),
        cwd.join(".drydock")
    );
}

#[test]
fn the_users_config_file_is_found_through_the_environment_given() {
    let dir = tempfile::tempdir().unwrap();
    let config_home = dir.path().join("config");
    std::fs::create_dir_all(config_home.join("drydock")).unwrap();
    std::fs::write(
        config_home.join("drydock/drydock.toml"),
        "bind = \"127.0.0.1:1\"\n",
    )
    .unwrap();
    let cwd = dir.path().join("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    let xdg = config_home.display().to_string();
    let env = |name: &str| (name == "XDG_CONFIG_HOME").then(|| xdg.clone());
    let found = Config::resolve(&Overrides::default(), &env, &cwd).unwrap();
    assert_eq!(found.bind.port(), 1);
    assert_eq!(
        found.agents.profile_dir,
        Some(config_home.join("drydock/agents"))
    );
    let none = Config::resolve(&Overrides::default(), &no_env, &cwd).unwrap();
    assert_eq!((none.source, none.agents.profile_dir), (None, None));
}
