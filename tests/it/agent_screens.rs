//! The real Claude Code and Codex TUIs, in tmux, against the fake model APIs of `agent_kit`:
//! each test drives one CLI through a few states and checks each screen for the strings that
//! identify the state (agent-lab.md §4, §9) and the fake for the requests the CLI made. With
//! `DRYDOCK_RECORD_AGENTS=1` the screens are also recorded as fixtures for the detector tests
//! (tests/fixtures/agents/recorded/, see `agent_kit::record`).
//!
//! The CLIs must be installed (scripts/agent-clis.sh); without them these tests fail.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Value, json};

use crate::agent_kit::agents::{
    Claude, Codex, STARTUP, STEP, answer, claude_idle, claude_working, codex_idle, codex_working,
};
use crate::agent_kit::fake_anthropic::{
    ASK_QUESTION, BASH_COMMAND, BASH_DESCRIPTION, EDIT_FILE, WRITE_CONTENT, WRITE_FILE,
};
use crate::agent_kit::fake_openai::{
    ASK_QUESTION as CODEX_ASK_QUESTION, SHELL_COMMAND, SHELL_JUSTIFICATION,
};
use crate::agent_kit::hooks::{log_claude_hooks, wait_logged_events};
use crate::agent_kit::menu::{labels, menu_after};
use crate::agent_kit::record::{Row, record_raw};

#[test]
fn claude_starts_asks_to_run_a_bash_command_runs_it_when_approved_and_exits() {
    let claude = Claude::start();
    let first = claude
        .tmux
        .wait_for("a first frame", STARTUP, |s| !s.trim().is_empty());
    claude.record("starting", &first, Row::state("starting"));

    let idle = claude.wait_idle();
    assert_contains(&idle, &["manual mode on", "? for shortcuts"]);
    let before_prompt = claude.fake.requests();
    assert!(
        before_prompt.is_empty(),
        "with the quiet env vars nothing is asked before the first prompt: {before_prompt:?}"
    );
    let title = claude.tmux.title();
    assert!(title.contains("Claude Code"), "title {title:?}");
    claude.record("idle", &idle, Row::state("idle"));

    claude.send("Run the lab command lab:bash");
    let prompt = claude.tmux.wait_for_text("Do you want to proceed?", STEP);
    assert_contains(
        &prompt,
        &[
            "Bash command",
            BASH_COMMAND,
            BASH_DESCRIPTION,
            "Esc to cancel",
        ],
    );
    let options = menu_after(&prompt, "Do you want to proceed?");
    assert_eq!(labels(&options).first(), Some(&"Yes"), "{options:?}");
    assert!(options[0].selected, "{options:?}");
    assert_eq!(labels(&options).last(), Some(&"No"), "{options:?}");
    assert!(!claude_idle(&prompt), "the prompt replaces the input box");
    claude.record(
        "bash_permission",
        &prompt,
        Row::waiting("permission", "Do you want to proceed?", options),
    );
    let ran = claude.home.project.join("lab-bash.txt");
    assert!(!ran.exists(), "the command ran before it was approved");

    answer(&claude.tmux, &["Enter"], "Do you want to proceed?");
    let done = claude.tmux.wait_for("the approved turn to end", STEP, |s| {
        claude_idle(s) && s.contains("LAB-DONE: Bash finished")
    });
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "hi\n");
    claude.record("after_approve", &done, Row::state("idle"));

    let turns = claude.fake.turns();
    assert_eq!(turns.len(), 2, "the tool call, then its result");
    assert_eq!(claude.fake.requests().len(), 2, "only the turns were asked");
    assert_claude_turn(&turns[0]);
    assert!(
        !tool_results(&turns[1].body).is_empty(),
        "the second turn carries the Bash result"
    );
    assert_eq!(claude.fake.prompts()[0], "Run the lab command lab:bash");

    claude.tmux.send_keys(&["C-c"]);
    let once = claude
        .tmux
        .wait_for_text("Press Ctrl-C again to exit", STEP);
    claude.record("exit_first_ctrl_c", &once, Row::state("idle"));
    claude.tmux.send_keys(&["C-c"]);
    let (code, exited) = claude.tmux.wait_exit(STEP);
    assert_eq!(code, 0, "{exited}");
    assert_contains(&exited, &["Resume this session with:", "claude --resume"]);
    claude.record("exited", &exited, Row::state("exited"));

    let raw = claude.tmux.raw();
    assert!(contains_bytes(&raw, b"\x1b]7501;?"), "the OSC 7501 probe");
    assert!(contains_bytes(&raw, b"\x1b]0;"), "a window title");
    record_raw(&claude.cli, "session", &raw);
}

#[test]
fn claude_asks_to_write_a_file_and_a_deny_leaves_it_unwritten_with_no_stop_hook() {
    let mut hooks = PathBuf::new();
    let claude = Claude::start_with(&[], |home| {
        hooks = log_claude_hooks(home, &HOOK_EVENTS);
    });
    claude.wait_idle();
    claude.send("Write the lab file lab:write");
    let question = format!("Do you want to create {WRITE_FILE}?");
    let prompt = claude.tmux.wait_for_text(&question, STEP);
    assert_contains(
        &prompt,
        &[
            "Create file",
            WRITE_FILE,
            WRITE_CONTENT.trim(),
            "Esc to cancel",
        ],
    );
    let options = menu_after(&prompt, &question);
    assert_eq!(labels(&options).len(), 3, "{options:?}");
    assert_eq!(labels(&options)[0], "Yes");
    assert_eq!(labels(&options)[2], "No");
    claude.record(
        "write_permission",
        &prompt,
        Row::waiting("permission", &question, options),
    );

    answer(&claude.tmux, &["Escape"], &question);
    let denied = claude
        .tmux
        .wait_for("the denied prompt to close", STEP, |s| {
            claude_idle(s) && s.contains("Rejected")
        });
    assert!(!claude.home.project.join(WRITE_FILE).exists());
    assert_eq!(claude.fake.turns().len(), 1, "no model call after a deny");
    claude.record("after_deny", &denied, Row::state("idle"));
    // An Escape-deny fires no Stop (agent-lab.md §5.1): waiting on Stop would hang here.
    assert_eq!(
        wait_logged_events(&hooks, 4, STEP),
        [
            "SessionStart",
            "UserPromptSubmit",
            "PreToolUse",
            "PermissionRequest"
        ]
    );

    // The next prompt rides with the rejected tool's result; the fake must answer it.
    claude.send("hello again");
    claude
        .tmux
        .wait_for("the reply to the next prompt", STEP, |s| {
            claude_idle(s) && s.contains("LAB-REPLY to: hello again")
        });
    let last = claude.fake.turns().pop().unwrap();
    assert!(
        tool_results(&last.body)
            .iter()
            .any(|r| r.contains("doesn't want to proceed")),
        "the rejected tool's result is sent with the next prompt"
    );
    let events = wait_logged_events(&hooks, 6, STEP);
    assert_eq!(events[4..], ["UserPromptSubmit", "Stop"], "{events:?}");
}

const HOOK_EVENTS: [&str; 8] = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PermissionRequest",
    "PostToolUse",
    "Notification",
    "Stop",
    "SessionEnd",
];

#[test]
fn claude_asks_to_edit_a_file_after_reading_it_and_edits_it_when_approved() {
    let claude = Claude::start();
    let file = claude.home.project.join(EDIT_FILE);
    std::fs::write(&file, "alpha\n").unwrap();
    claude.wait_idle();
    claude.send("Edit the lab file lab:edit");
    let question = format!("Do you want to make this edit to {EDIT_FILE}?");
    // The diff is drawn a moment after the prompt (`…` until then).
    let prompt = claude
        .tmux
        .wait_for("the edit prompt with its diff", STEP, |s| {
            s.contains(&question) && s.contains("ALPHA-EDITED")
        });
    assert_contains(&prompt, &["Edit file", "alpha", "Esc to cancel"]);
    let options = menu_after(&prompt, &question);
    assert_eq!(options.len(), 3, "{options:?}");
    claude.record(
        "edit_permission",
        &prompt,
        Row::waiting("permission", &question, options),
    );

    answer(&claude.tmux, &["Enter"], &question);
    let done = claude
        .tmux
        .wait_for("the approved edit's turn to end", STEP, |s| {
            claude_idle(s) && s.contains("LAB-DONE: Edit finished")
        });
    assert_eq!(std::fs::read_to_string(&file).unwrap(), "ALPHA-EDITED\n");
    claude.record("after_edit", &done, Row::state("idle"));
    let tools: Vec<String> = claude
        .fake
        .turns()
        .iter()
        .flat_map(|t| tool_uses(&t.body))
        .collect();
    assert_eq!(tools.last().map(String::as_str), Some("Edit"), "{tools:?}");
    assert!(tools.contains(&"Read".to_string()), "{tools:?}");
}

#[test]
fn claude_offers_a_choice_menu_and_option_2_answers_it() {
    let claude = Claude::start();
    claude.wait_idle();
    claude.send("Ask me about colours lab:ask");
    let menu = claude.tmux.wait_for_text("Enter to select", STEP);
    assert_contains(&menu, &[ASK_QUESTION, "1. Red", "2. Blue", "Esc to cancel"]);
    assert!(!claude_idle(&menu), "the menu replaces the input box");
    let options = menu_after(&menu, ASK_QUESTION);
    assert_eq!(
        labels(&options),
        ["Red", "Blue", "Type something.", "Chat about this"]
    );
    claude.record(
        "choice_menu",
        &menu,
        Row::waiting("choice", ASK_QUESTION, options),
    );

    answer(&claude.tmux, &["2"], "Enter to select");
    let answered = claude.tmux.wait_for("the answered turn to end", STEP, |s| {
        claude_idle(s) && s.contains("LAB-DONE: AskUserQuestion finished")
    });
    assert_contains(&answered, &["→ Blue"]);
    claude.record("after_choice", &answered, Row::state("idle"));
    let last = claude.fake.turns().pop().unwrap();
    assert!(
        tool_results(&last.body).iter().any(|r| r.contains("Blue")),
        "the answer reaches the model"
    );
}

#[test]
fn claude_works_while_the_model_thinks_or_streams_and_escape_interrupts_it() {
    let claude = Claude::start();
    claude.wait_idle();
    claude.send("Think hard lab:think=30");
    claude.fake.wait_for_prompt("Think hard lab:think=30", STEP);
    let thinking = claude.tmux.wait_for("working", STEP, claude_working);
    claude.record("working", &thinking, Row::state("working"));
    assert_contains(&thinking, &["Think hard lab:think=30"]);
    // Interrupted before anything streamed, the prompt goes back into the input box.
    claude.tmux.send_keys(&["Escape"]);
    let restored = claude
        .tmux
        .wait_for("the prompt back in the box", STEP, |s| {
            !claude_working(s) && s.contains("❯\u{a0}Think hard lab:think=30")
        });
    claude.record("interrupted_thinking", &restored, Row::state("idle"));
    claude.tmux.send_keys(&["C-u"]);
    claude
        .tmux
        .wait_for("an empty input box", STEP, claude_idle);

    claude.send("Talk slowly lab:slow=30");
    let streaming = claude.tmux.wait_for("streamed words", STEP, |s| {
        claude_working(s) && s.contains("word3")
    });
    claude.record("working_streaming", &streaming, Row::state("working"));
    claude.tmux.send_keys(&["Escape"]);
    let interrupted = claude.tmux.wait_for("the interrupt", STEP, |s| {
        claude_idle(s) && s.contains("Interrupted")
    });
    claude.record("interrupted", &interrupted, Row::state("idle"));

    claude.send("Take your time lab:sleep=30");
    let question = "Do you want to proceed?";
    claude.tmux.wait_for_text(question, STEP);
    answer(&claude.tmux, &["Enter"], question);
    let running = claude
        .tmux
        .wait_for("the approved command running", STEP, |s| {
            claude_working(s) && s.contains("to run in background")
        });
    claude.record("working_tool", &running, Row::state("working"));
    claude.tmux.send_keys(&["Escape"]);
    claude.tmux.wait_for("the command interrupted", STEP, |s| {
        claude_idle(s) && s.matches("Interrupted").count() >= 2
    });
    assert!(!claude.home.project.join("lab-bash.txt").exists());
    assert_eq!(
        claude.fake.prompts(),
        [
            "Think hard lab:think=30",
            "Talk slowly lab:slow=30",
            "Take your time lab:sleep=30"
        ]
    );
}

#[test]
fn codex_asks_to_run_a_command_runs_it_when_approved_and_exits() {
    let codex = Codex::start();
    let first = codex
        .tmux
        .wait_for("a first frame", STARTUP, |s| !s.trim().is_empty());
    codex.record("starting", &first, Row::state("starting"));
    // The splash: the composer without its `← for agents` footer, ignoring keys.
    let splash = |s: &str| s.contains("Ask Codex to do anything") && !s.contains("for agents");
    let early = codex
        .tmux
        .poll_until(STARTUP, |s| splash(s) || codex_idle(s));
    if let Some(screen) = early.ok().filter(|s| splash(s)) {
        codex.record("starting_splash", &screen, Row::state("starting"));
    }
    let idle = codex.wait_idle();
    assert_contains(&idle, &["gpt-lab", "? for shortcuts"]);
    codex.record("idle", &idle, Row::state("idle"));

    codex.send("Run the lab command lab:shell");
    let question = "Would you like to run the following command?";
    let prompt = codex.tmux.wait_for_text(question, STEP);
    assert_contains(
        &prompt,
        &[SHELL_COMMAND, SHELL_JUSTIFICATION, "1. Yes, proceed"],
    );
    let options = menu_after(&prompt, question);
    assert_eq!(labels(&options).len(), 3, "{options:?}");
    assert_eq!(labels(&options)[0], "Yes, proceed (y)");
    codex.record(
        "approval",
        &prompt,
        Row::waiting("permission", question, options),
    );
    let ran = codex.home.project.join("lab-codex.txt");
    assert!(!ran.exists(), "the command ran before it was approved");

    answer(&codex.tmux, &["Enter"], question);
    let done = codex.tmux.wait_for("the approved turn to end", STEP, |s| {
        codex_idle(s) && s.contains("LAB-DONE: exec_command finished") && s.contains("Worked for")
    });
    assert_contains(
        &done,
        &["You approved codex", "Ran echo hi > lab-codex.txt"],
    );
    assert_eq!(std::fs::read_to_string(&ran).unwrap(), "hi\n");
    codex.record("after_approve", &done, Row::state("idle"));
    assert_eq!(codex.fake.prompts()[0], "Run the lab command lab:shell");
    let turns = codex.fake.turns();
    assert_eq!(turns.len(), 2, "the command call, then its output");
    assert_eq!(turns[0].header("authorization"), Some("Bearer lab-key"));
    assert_eq!(turns[0].body["stream"], true);
    assert!(
        tool_names(&turns[0].body).contains(&"exec_command".to_string()),
        "exec_command is offered"
    );
    assert!(
        turns[1].body["input"]
            .as_array()
            .unwrap()
            .iter()
            .any(|item| item["type"] == "function_call_output"),
        "the command's output goes back to the model"
    );
    for request in codex.fake.requests() {
        assert_eq!(
            (request.method.as_str(), request.path.as_str()),
            ("POST", "/v1/responses")
        );
    }

    // For a few seconds after a command's turn has ended on screen, Codex still counts a
    // task as running, and Ctrl-C asks what to do with it instead of exiting.
    codex.tmux.send_keys(&["C-c"]);
    let asked = "Choose what happens to the current task.";
    let exiting = codex.tmux.wait_for("an exit or a question", STEP, |s| {
        s.contains("EXIT:") || s.contains(asked)
    });
    if exiting.contains(asked) {
        let options = menu_after(&exiting, asked);
        assert_eq!(labels(&options).last(), Some(&"Exit"), "{options:?}");
        codex.record(
            "exit_task_running",
            &exiting,
            Row::waiting("dialog", asked, options),
        );
        answer(&codex.tmux, &["3"], asked);
    }
    let (code, exited) = codex.tmux.wait_exit(STEP);
    assert_eq!(code, 0, "{exited}");
    assert_contains(&exited, &["To reconnect, run:", "codex resume"]);
    codex.record("exited", &exited, Row::state("exited"));

    let raw = codex.tmux.raw();
    for state in [
        "state=working",
        "state=blocked",
        "kind=permission",
        "app=codex",
    ] {
        assert!(contains_bytes(&raw, state.as_bytes()), "OSC 7501 {state}");
    }
    record_raw(&codex.cli, "session", &raw);
}

#[test]
fn codex_works_while_the_model_thinks_asks_before_exiting_and_escape_interrupts_or_denies() {
    let codex = Codex::start();
    codex.wait_idle();
    codex.send("Think hard lab:think=30");
    codex.fake.wait_for_prompt("Think hard lab:think=30", STEP);
    let working = codex.tmux.wait_for("working", STEP, codex_working);
    assert_contains(&working, &["Working"]);
    codex.record("working", &working, Row::state("working"));

    // Ctrl-C while a task runs asks what to do with it; Esc goes back to the running task.
    codex.tmux.send_keys(&["C-c"]);
    let asked = "Choose what happens to the current task.";
    let dialog = codex.tmux.wait_for_text(asked, STEP);
    assert_contains(
        &dialog,
        &["Task is still running", "enter select · esc back"],
    );
    let options = menu_after(&dialog, asked);
    assert_eq!(
        labels(&options),
        ["Cancel task", "Run in background", "Exit"],
        "{dialog}"
    );
    codex.record(
        "exit_task_running",
        &dialog,
        Row::waiting("dialog", asked, options),
    );
    answer(&codex.tmux, &["Escape"], asked);
    codex.tmux.wait_for("working again", STEP, codex_working);

    codex.tmux.send_keys(&["Escape"]);
    let interrupted = codex.tmux.wait_for("the interrupt", STEP, |s| {
        codex_idle(s) && s.contains("Conversation interrupted")
    });
    codex.record("interrupted", &interrupted, Row::state("idle"));

    codex.send("Run the lab command lab:shell");
    codex
        .tmux
        .wait_for_text("Would you like to run the following command?", STEP);
    answer(
        &codex.tmux,
        &["Escape"],
        "Would you like to run the following command?",
    );
    let denied = codex
        .tmux
        .wait_for("the denied prompt to close", STEP, |s| {
            codex_idle(s) && s.contains("You canceled the request")
        });
    assert!(!codex.home.project.join("lab-codex.txt").exists());
    codex.record("after_deny", &denied, Row::state("idle"));
    assert_eq!(
        codex.fake.prompts(),
        ["Think hard lab:think=30", "Run the lab command lab:shell"],
        "a deny ends the turn without asking the model again"
    );
}

/// A model turn as Claude Code 2.1.330 asks for it (agent-lab.md §3).
fn assert_claude_turn(turn: &crate::agent_kit::fake_http::LoggedRequest) {
    assert_eq!(turn.path, "/v1/messages?beta=true");
    assert_eq!(turn.body["stream"], true);
    assert_eq!(turn.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(turn.header("x-app"), Some("cli"));
    assert_eq!(turn.header("authorization"), Some("Bearer lab-token"));
    let agent = turn.header("user-agent").unwrap_or_default();
    assert!(agent.starts_with("claude-cli/2.1.330"), "{agent}");
    let tools = tool_names(&turn.body);
    for tool in ["Bash", "Write", "Edit", "Read", "AskUserQuestion"] {
        assert!(tools.contains(&tool.to_string()), "{tool} not in {tools:?}");
    }
}

/// The names of the tools a request offers.
fn tool_names(body: &Value) -> Vec<String> {
    body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|tool| tool["name"].as_str().map(String::from))
        .collect()
}

fn assert_contains(screen: &str, needles: &[&str]) {
    for needle in needles {
        assert!(
            screen.contains(needle),
            "{needle:?} not on screen:\n{screen}"
        );
    }
}

fn contains_bytes(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

/// The text of every tool_result block in the request's messages.
fn tool_results(body: &Value) -> Vec<String> {
    blocks(body)
        .filter(|b| b["type"] == "tool_result")
        .map(|b| b["content"].to_string())
        .collect()
}

/// The names of the tool_use blocks of the request's assistant messages.
fn tool_uses(body: &Value) -> Vec<String> {
    blocks(body)
        .filter(|b| b["type"] == "tool_use")
        .filter_map(|b| b["name"].as_str().map(String::from))
        .collect()
}

fn blocks(body: &Value) -> impl Iterator<Item = &Value> {
    body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| m["content"].as_array())
        .flatten()
}

#[test]
fn codex_asks_a_question_in_plan_mode_and_option_2_answers_it() {
    let codex = Codex::start();
    codex.wait_idle();
    codex.tmux.send_keys(&["BTab"]);
    let plan_mode = "Plan mode (shift+tab to cycle)";
    if codex
        .tmux
        .poll_until(Duration::from_secs(3), |s| s.contains(plan_mode))
        .is_err()
    {
        eprintln!("agent_screens: shift+tab did not reach Codex; sent again");
        codex.tmux.send_keys(&["BTab"]);
        codex.tmux.wait_for_text(plan_mode, STEP);
    }
    codex.send("Ask me about colours lab:ask");
    let question = codex.tmux.wait_for_text("Question 1/1", STEP);
    assert_contains(&question, &[CODEX_ASK_QUESTION, "enter to submit answer"]);
    let options = menu_after(&question, CODEX_ASK_QUESTION);
    assert_eq!(
        labels(&options),
        ["Red", "Blue", "None of the above"],
        "{question}"
    );
    codex.record(
        "choice_menu",
        &question,
        Row::waiting("choice", CODEX_ASK_QUESTION, options),
    );

    answer(&codex.tmux, &["2"], "enter to submit answer");
    let answered = codex.tmux.wait_for("the answered turn to end", STEP, |s| {
        codex_idle(s) && s.contains("LAB-DONE: request_user_input finished")
    });
    codex.record("after_choice", &answered, Row::state("idle"));
    let last = codex.fake.turns().pop().unwrap();
    let output = last.body["input"]
        .as_array()
        .unwrap()
        .iter()
        .find(|item| item["type"] == "function_call_output")
        .map(|item| item["output"].to_string())
        .unwrap_or_default();
    assert!(
        output.contains("Blue"),
        "the answer reaches the model: {output}"
    );
}

#[test]
fn claude_asks_to_trust_a_folder_not_trusted_yet_and_starts_once_trusted() {
    let claude = Claude::start_with(&[], |home| {
        let fresh = json!({"hasCompletedOnboarding": true, "hasSeenAutoDefaultNudge": true});
        std::fs::write(home.home.join(".claude.json"), fresh.to_string()).unwrap();
    });
    let question = "Quick safety check: Is this a project you created or one you trust?";
    let dialog = claude.tmux.wait_for_text(question, STARTUP);
    // The choices carry no numbers (no menu to read); the cursor starts on "No, exit".
    assert_contains(
        &dialog,
        &[
            "Accessing workspace:",
            "❯ No, exit",
            "Yes, I trust this folder",
            "Enter to confirm · Esc to cancel",
        ],
    );
    claude.record("trust_dialog", &dialog, Row::waiting_unread("dialog"));

    answer(&claude.tmux, &["Down", "Enter"], question);
    claude.wait_idle();
    let config = std::fs::read_to_string(claude.home.home.join(".claude.json")).unwrap();
    let config: Value = serde_json::from_str(&config).unwrap();
    let project = claude.home.project.display().to_string();
    assert_eq!(
        config["projects"][&project]["hasTrustDialogAccepted"], true,
        "{config}"
    );
}

// The fakes on their own (no CLI): they follow the conversation they are sent.

#[tokio::test]
async fn the_anthropic_fake_reads_the_step_from_the_conversation() {
    let project = tempfile::tempdir().unwrap();
    let fake = crate::agent_kit::fake_anthropic::FakeAnthropic::start(project.path());
    let prompt = json!({"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>context</system-reminder>"},
        {"type": "text", "text": "Edit it lab:edit"}]});
    let read = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t1", "name": "Read", "input": {}}]});
    let read_result = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "alpha"}]});
    let edit = json!({"role": "assistant", "content": [
        {"type": "tool_use", "id": "t2", "name": "Edit", "input": {}}]});
    let denied_then_asked = json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t2", "is_error": true, "content": "The user doesn't want to proceed"},
        {"type": "text", "text": "[Request interrupted by user for tool use]"},
        {"type": "text", "text": "hello"}]});

    let turn = |messages: Vec<Value>| anthropic_turn(fake.url(), messages);
    assert_eq!(turn(vec![prompt.clone()]).await, "tool_use Read");
    let after_read = vec![prompt.clone(), read.clone(), read_result.clone()];
    assert_eq!(turn(after_read.clone()).await, "tool_use Edit");
    let mut denied = after_read.clone();
    denied.extend([edit.clone(), denied_then_asked]);
    assert_eq!(turn(denied).await, "text LAB-REPLY to: hello");
    let mut approved = after_read;
    approved.extend([
        edit,
        json!({"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t2", "content": "ok"}]}),
    ]);
    assert_eq!(turn(approved).await, "text LAB-DONE: Edit finished");
    assert_eq!(fake.turns().len(), 4);
}

#[tokio::test]
async fn the_openai_fake_asks_for_a_command_once_and_answers_the_title_request() {
    let fake = crate::agent_kit::fake_openai::FakeOpenAi::start();
    let prompt = json!({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>cwd</environment_context>"},
        {"type": "input_text", "text": "Run it lab:shell"}]});
    let call = json!({"type": "function_call", "name": "exec_command", "call_id": "c1", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "c1", "output": "ok"});
    let turn = |body: Value| openai_turn(fake.base_url(), body);
    assert_eq!(
        turn(json!({"stream": true, "input": [prompt.clone()]})).await,
        "function_call exec_command"
    );
    assert_eq!(
        turn(json!({"stream": true, "input": [prompt, call, output]})).await,
        "message LAB-DONE: exec_command finished"
    );
    let title = json!({"stream": true, "input": [], "text": {"format": {"type": "json_schema"}}});
    assert_eq!(turn(title).await, r#"message {"title":"Lab session"}"#);
    assert_eq!(fake.turns().len(), 2, "the title request is not a turn");
}

/// One streamed Messages turn, summed up as `tool_use NAME` or `text TEXT`.
async fn anthropic_turn(url: &str, messages: Vec<Value>) -> String {
    let body = json!({"model": "m", "max_tokens": 10, "stream": true, "messages": messages});
    let events = sse_events(&format!("{url}/v1/messages?beta=true"), body).await;
    let start = events
        .iter()
        .find(|e| e["type"] == "content_block_start")
        .expect("a content block");
    let text: String = events
        .iter()
        .filter_map(|e| e["delta"]["text"].as_str())
        .collect();
    assert_eq!(events.last().unwrap()["type"], "message_stop");
    match start["content_block"]["type"].as_str() {
        Some("tool_use") => format!(
            "tool_use {}",
            start["content_block"]["name"].as_str().unwrap()
        ),
        _ => format!("text {text}"),
    }
}

/// One streamed Responses turn, summed up as `function_call NAME` or `message TEXT`.
async fn openai_turn(base_url: String, body: Value) -> String {
    let events = sse_events(&format!("{base_url}/responses"), body).await;
    let done = events
        .iter()
        .find(|e| e["type"] == "response.output_item.done")
        .expect("an output item");
    assert_eq!(events.last().unwrap()["type"], "response.completed");
    let item = &done["item"];
    match item["type"].as_str() {
        Some("function_call") => format!("function_call {}", item["name"].as_str().unwrap()),
        _ => format!("message {}", item["content"][0]["text"].as_str().unwrap()),
    }
}

async fn sse_events(url: &str, body: Value) -> Vec<Value> {
    let response = reqwest::Client::new()
        .post(url)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    let text = response.text().await.unwrap();
    text.lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .map(|data| serde_json::from_str(data).unwrap())
        .collect()
}
