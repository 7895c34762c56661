use super::*;

const CLAUDE: &str =
    include_str!("../../../../../tests/fixtures/agents/usage/claude-2.1.330-transcript.jsonl");
const CODEX: &str =
    include_str!("../../../../../tests/fixtures/agents/usage/codex-0.169.0-rollout.jsonl");

fn tokens(input: u64, output: u64, cache_read: u64, cache_write: u64) -> Tokens {
    Tokens {
        input,
        output,
        cache_read,
        cache_write,
    }
}

#[test]
fn claude_codes_transcript_counts_each_message_once_as_claude_code_totals_it() {
    let spent = claude_transcript(CLAUDE, Path::new("/tmp/exp/proj two"), 0);
    assert_eq!(
        spent,
        ByModel::from([("claude-opus-5-5".to_string(), tokens(300, 37, 30, 3))])
    );
}

#[test]
fn claude_records_of_another_folder_or_before_the_run_are_not_its() {
    assert!(claude_transcript(CLAUDE, Path::new("/tmp/exp/proj"), 0).is_empty());
    assert!(claude_transcript(CLAUDE, Path::new("/tmp/exp/proj two/sub"), 0).is_empty());
    let later = chrono::DateTime::parse_from_rfc3339("2026-11-30T00:00:00Z").unwrap();
    let later = later.timestamp_millis() as u64;
    assert!(claude_transcript(CLAUDE, Path::new("/tmp"), later).is_empty());
}

#[test]
fn codexs_rollout_counts_cached_input_apart_under_the_turns_model() {
    let spent = codex_rollout(CODEX, Path::new("/tmp/exp/oproj"), 0);
    assert_eq!(
        spent,
        ByModel::from([("gpt-lab".to_string(), tokens(300, 54, 21, 0))])
    );
    assert!(codex_rollout(CODEX, Path::new("/tmp/exp/elsewhere"), 0).is_empty());
}

#[test]
fn damaged_lines_are_skipped_and_the_rest_is_counted() {
    let damaged = format!(
        "{{not json\n\u{0}\n{}\n{{\"type\":\"assistant\"}}\n",
        CLAUDE.replace('\n', "\n\n")
    );
    let spent = claude_transcript(&damaged, Path::new("/tmp/exp/proj two"), 0);
    assert_eq!(spent["claude-opus-5-5"], tokens(300, 37, 30, 3));
}

#[test]
fn a_runs_files_are_found_in_its_home_as_drydock_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let private = dir.path().join("task/home");
    let sessions = private.join(".codex/sessions/2026/11/29");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join("rollout-1.jsonl"), CODEX).unwrap();
    // A link the agent planted is not followed.
    std::os::unix::fs::symlink("/etc/passwd", sessions.join("planted.jsonl")).unwrap();
    let source = UsageSource {
        reader: Reader::CodexRollout,
        dirs: vec!["$CODEX_HOME/sessions".into(), ".codex/sessions".into()],
    };
    let run = Run {
        home: &private,
        home_inside: Path::new("/home/person"),
        cwd: Path::new("/tmp/exp/oproj"),
        since_ms: 0,
    };
    let env = |name: &str| (name == "CODEX_HOME").then(|| "/home/person/.codex".to_string());
    let spent = spent(&source, &run, &env).unwrap();
    assert_eq!(spent["gpt-lab"], tokens(300, 54, 21, 0));
    let unset = |_: &str| None;
    assert_eq!(
        super::spent(&source, &run, &unset).unwrap()["gpt-lab"].output,
        54
    );
}
