use super::*;
use crate::agents::profile::Profiles;

const RULE: &str = "────────────────────────────────────────";
const IDLE: [&str; 4] = [
    RULE,
    "❯\u{a0}",
    RULE,
    "  ⏸ manual mode on · ? for shortcuts",
];
const BUSY: [&str; 5] = [
    "✻ Befuddling…",
    RULE,
    "❯\u{a0}",
    RULE,
    "  ⏸ manual mode on · esc to interrupt",
];
const PROMPT: [&str; 8] = [
    RULE,
    " Bash command",
    " echo hi > x",
    " Do you want to proceed?",
    " ❯ 1. Yes",
    "   2. No",
    "",
    " Esc to cancel · Tab to amend",
];

fn report(state: ReportedState, kind: Option<&str>) -> StatusReport {
    StatusReport {
        state,
        app: None,
        kind: kind.map(str::to_string),
        message: None,
        other: Vec::new(),
    }
}

fn hook(at: Millis, name: &str, tool: Option<&str>) -> Stamped<HookEvent> {
    Stamped {
        at,
        value: HookEvent {
            name: name.to_string(),
            tool_name: tool.map(str::to_string),
        },
    }
}

fn observe<'a>(now: Millis, screen: &'a [&'a str], screen_at: Millis) -> Observation<'a> {
    Observation {
        now,
        process: ProcessStatus::Running { started_at: 0 },
        screen,
        screen_at,
        title: None,
        osc: &[],
        hooks: &[],
        last_output_at: Some(screen_at),
    }
}

fn claude() -> Profile {
    Profiles::embedded().get("claude").unwrap().clone()
}

#[test]
fn an_exited_process_is_exited_whatever_the_screen_says() {
    let observation = Observation {
        process: ProcessStatus::Exited {
            code: Some(3),
            at: 700,
        },
        ..observe(1000, &PROMPT, 500)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(detection.state, AgentState::Exited { code: Some(3) });
    assert_eq!((detection.signal, detection.since), (Signal::Process, 700));
}

#[test]
fn a_fresh_event_holds_against_a_lagging_screen_until_it_is_stale() {
    // Enter sent: OSC `working` arrives before the busy footer is drawn.
    let osc = [Stamped {
        at: 1000,
        value: report(ReportedState::Working, None),
    }];
    let soon = Observation {
        osc: &osc,
        ..observe(1200, &IDLE, 1100)
    };
    let detection = detect(&claude(), &soon);
    assert_eq!(detection.state, AgentState::Working);
    assert_eq!(detection.signal, Signal::Osc7501);
    assert_eq!(detection.recheck_at, Some(1600));
    // Escape-interrupt: no new event; the idle screen wins once the event is stale.
    let later = Observation { now: 1600, ..soon };
    let detection = detect(&claude(), &later);
    assert_eq!(detection.state, AgentState::Idle);
    assert_eq!(detection.signal, Signal::Screen("claude-idle".into()));
    assert_eq!((detection.since, detection.recheck_at), (1100, None));
}

#[test]
fn staleness_counts_from_the_latest_event_of_the_run() {
    // A long turn: `working` at 1000, again with a message at 9000; a frame at 9100
    // still looks idle. The refreshed event holds.
    let osc = [
        Stamped {
            at: 1000,
            value: report(ReportedState::Working, None),
        },
        Stamped {
            at: 9000,
            value: report(ReportedState::Working, None),
        },
    ];
    let observation = Observation {
        osc: &osc,
        ..observe(9200, &IDLE, 9100)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(
        (detection.state, detection.since),
        (AgentState::Working, 1000)
    );
    assert_eq!(detection.recheck_at, Some(9600));
}

#[test]
fn an_event_newer_than_the_screen_wins() {
    // The Stop hook comes 0.1–0.27 s before the idle frame (agent-lab §5.3).
    let hooks = [
        hook(1000, "UserPromptSubmit", None),
        hook(5000, "Stop", None),
    ];
    let observation = Observation {
        hooks: &hooks,
        ..observe(9000, &BUSY, 4900)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(detection.state, AgentState::Idle);
    assert_eq!(detection.signal, Signal::Hook("Stop".into()));
}

#[test]
fn a_prompt_on_screen_wins_at_once_and_keeps_the_agents_message() {
    let osc = [
        Stamped {
            at: 1000,
            value: report(ReportedState::Working, None),
        },
        Stamped {
            at: 1200,
            value: StatusReport {
                message: Some("approve Bash: echo hi > x".into()),
                ..report(ReportedState::Blocked, Some("permission"))
            },
        },
    ];
    // The prompt is drawn 50 ms after `blocked`, and read the same instant.
    let observation = Observation {
        osc: &osc,
        ..observe(1250, &PROMPT, 1250)
    };
    let detection = detect(&claude(), &observation);
    let AgentState::Waiting(Waiting::OnScreen(prompt)) = &detection.state else {
        panic!("{detection:?}")
    };
    assert_eq!(prompt.context, ["Bash command", "echo hi > x"]);
    assert_eq!((detection.signal, detection.since), (Signal::Osc7501, 1200));
    assert_eq!(
        detection.message.as_deref(),
        Some("approve Bash: echo hi > x")
    );
    // Hooks only, the last one `working`: the prompt still decides at once.
    let hooks = [hook(1000, "PreToolUse", Some("Bash"))];
    let observation = Observation {
        hooks: &hooks,
        ..observe(1100, &PROMPT, 1050)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(detection.state.name(), "waiting");
    assert_eq!(detection.signal, Signal::Screen("claude-permission".into()));
}

#[test]
fn the_earliest_agreeing_channel_dates_the_state() {
    let osc = [Stamped {
        at: 1100,
        value: report(ReportedState::Blocked, Some("permission")),
    }];
    let hooks = [hook(1000, "PermissionRequest", Some("Bash"))];
    let observation = Observation {
        osc: &osc,
        hooks: &hooks,
        ..observe(1300, &PROMPT, 1200)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(detection.state.name(), "waiting");
    let decided = (detection.signal, detection.since);
    assert_eq!(decided, (Signal::Hook("PermissionRequest".into()), 1000));
}

#[test]
fn a_moved_highlight_or_a_prompt_drawn_late_continues_the_wait() {
    let osc = [Stamped {
        at: 1000,
        value: report(ReportedState::Blocked, Some("permission")),
    }];
    let signalled = detect(
        &claude(),
        &Observation {
            osc: &osc,
            ..observe(1050, &BUSY, 990)
        },
    );
    let drawn = detect(
        &claude(),
        &Observation {
            osc: &osc,
            ..observe(1100, &PROMPT, 1080)
        },
    );
    let moved_screen = PROMPT.map(|l| match l.trim() {
        "❯ 1. Yes" => "   1. Yes",
        "2. No" => " ❯ 2. No",
        _ => l,
    });
    let moved = detect(
        &claude(),
        &Observation {
            osc: &osc,
            ..observe(1200, &moved_screen, 1150)
        },
    );
    assert!(drawn.state.continues(&signalled.state));
    assert!(moved.state.continues(&drawn.state));
    assert_ne!(moved.state, drawn.state, "the highlight moved");
    let other = PROMPT.map(|l| if l.contains("echo") { " rm -rf x" } else { l });
    let other = detect(
        &claude(),
        &Observation {
            osc: &osc,
            ..observe(1300, &other, 1250)
        },
    );
    assert!(!other.state.continues(&drawn.state));
    assert!(!signalled.state.continues(&drawn.state));
}

#[test]
fn waiting_signalled_before_the_prompt_is_drawn_has_no_prompt_to_answer() {
    let osc = [Stamped {
        at: 1000,
        value: report(ReportedState::Blocked, Some("permission")),
    }];
    let observation = Observation {
        osc: &osc,
        ..observe(1050, &BUSY, 990)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(
        detection.state,
        AgentState::Waiting(Waiting::Signalled {
            kind: WaitKind::Permission
        })
    );
}

#[test]
fn a_blocked_report_whose_prompt_left_the_screen_goes_stale() {
    let osc = [Stamped {
        at: 1000,
        value: report(ReportedState::Blocked, Some("permission")),
    }];
    let observation = Observation {
        osc: &osc,
        ..observe(3000, &BUSY, 2000)
    };
    assert_eq!(detect(&claude(), &observation).state, AgentState::Working);
}

#[test]
fn ask_user_question_asks_through_permission_request_as_a_choice() {
    let hooks = [hook(1000, "PermissionRequest", Some("AskUserQuestion"))];
    let observation = Observation {
        hooks: &hooks,
        ..observe(1100, &BUSY, 900)
    };
    let detection = detect(&claude(), &observation);
    assert_eq!(
        detection.state,
        AgentState::Waiting(Waiting::Signalled {
            kind: WaitKind::Choice
        })
    );
}

#[test]
fn osc_clear_withdraws_the_reports_before_it() {
    let osc = [
        Stamped {
            at: 1000,
            value: report(ReportedState::Working, None),
        },
        Stamped {
            at: 1100,
            value: report(ReportedState::Clear, None),
        },
    ];
    let codex = Profiles::embedded().get("codex").unwrap().clone();
    let screen = [
        "› Ask Codex to do anything",
        "  ← for agents · ? for shortcuts",
    ];
    let observation = Observation {
        osc: &osc,
        ..observe(1200, &screen, 1150)
    };
    let detection = detect(&codex, &observation);
    assert_eq!(detection.state, AgentState::Idle);
    assert_eq!(detection.signal, Signal::Screen("codex-idle".into()));
}

#[test]
fn osc_is_ignored_for_a_profile_that_does_not_speak_it() {
    let gemini = Profiles::embedded().get("gemini").unwrap().clone();
    let osc = [Stamped {
        at: 1000,
        value: report(ReportedState::Working, None),
    }];
    let observation = Observation {
        osc: &osc,
        ..observe(1100, &[], 0)
    };
    assert_eq!(detect(&gemini, &observation).state, AgentState::Starting);
}

#[test]
fn without_signals_an_agent_is_starting_then_unknown() {
    let starting = detect(&claude(), &observe(2000, &["$ claude"], 100));
    assert_eq!(starting.state, AgentState::Starting);
    assert_eq!(starting.recheck_at, Some(10_000));
    let unknown = detect(&claude(), &observe(10_000, &["$ claude"], 100));
    assert_eq!(
        (unknown.state, unknown.since),
        (AgentState::Unknown, 10_000)
    );
}

#[test]
fn the_generic_profile_goes_by_quiet_time() {
    let generic = Profiles::embedded().generic("aider");
    let busy = detect(&generic, &observe(2000, &["> thinking"], 1000));
    assert_eq!(
        (busy.state, busy.signal),
        (AgentState::Working, Signal::Quiet)
    );
    assert_eq!(busy.recheck_at, Some(2500));
    let idle = detect(&generic, &observe(2500, &["> done"], 1000));
    assert_eq!((idle.state, idle.since), (AgentState::Idle, 2500));
}

#[test]
fn a_redraw_in_the_same_state_keeps_the_start() {
    let first = detect(&claude(), &observe(12_000, &BUSY, 11_000));
    let redraw = detect(&claude(), &observe(13_000, &BUSY, 12_900));
    assert_eq!(redraw.since, 12_900);
    assert_eq!(redraw.clone().continuing(&first).since, 11_000);
    let idle = detect(&claude(), &observe(14_000, &IDLE, 13_500));
    assert_eq!(idle.continuing(&first).since, 13_500);
}
