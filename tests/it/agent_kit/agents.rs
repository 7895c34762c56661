//! One real agent CLI in tmux against its fake model API, in a throwaway HOME, and what is
//! known of its screens (agent-lab.md §4 and §9): the strings that say which state it is in,
//! and how long to wait before keys reach it.

use std::time::Duration;

use super::fake_anthropic::FakeAnthropic;
use super::fake_openai::FakeOpenAi;
use super::home::{AgentHome, Cli};
use super::record::{Row, record_screen};
use super::tmux::Tmux;

/// Claude Code submits text typed as a separate write from its Enter (≥100 ms apart).
pub const CLAUDE_GAP: Duration = Duration::from_millis(150);
/// Codex takes an Enter sent sooner than ~100 ms after the text as part of the draft.
pub const CODEX_GAP: Duration = Duration::from_millis(300);
/// Codex's composer can drop a key sent as it first shows (agent-lab.md §11.5 waited 0.5 s).
pub const CODEX_SETTLE: Duration = Duration::from_millis(500);
/// A prompt ignores keys for its first 100-150 ms on screen (agent-lab.md §8.2).
pub const PROMPT_SETTLE: Duration = Duration::from_millis(400);
/// Start-up, a model turn, a screen change: generous, the machine is shared.
pub const STARTUP: Duration = Duration::from_secs(40);
pub const STEP: Duration = Duration::from_secs(20);

/// Answers the prompt that shows `question` (a string only the prompt shows) with `keys`:
/// after the prompt has settled, and once more if it is still there 3 s later (a key can be
/// lost to a freshly drawn prompt, agent-lab.md §8.2; a retry is reported on stderr, so a
/// flaky run shows in the log).
pub fn answer(tmux: &Tmux, keys: &[&str], question: &str) {
    std::thread::sleep(PROMPT_SETTLE);
    tmux.send_keys(keys);
    let closed = |screen: &str| !screen.contains(question);
    if tmux.poll_until(Duration::from_secs(3), closed).is_err() {
        eprintln!("agent_kit: {keys:?} did not close {question:?} within 3 s; sent again");
        tmux.send_keys(keys);
    }
}

/// Claude Code in tmux. Fields drop in order: the terminal first, the HOME (and every
/// process left with it) last.
pub struct Claude {
    pub tmux: Tmux,
    pub fake: FakeAnthropic,
    pub cli: Cli,
    pub home: AgentHome,
}

impl Claude {
    /// Records `screen` as `<scenario>.txt` with its expected row, when recording.
    pub fn record(&self, scenario: &str, screen: &str, row: Row) {
        record_screen(&self.cli, &self.tmux, scenario, screen, row);
    }

    /// Starts Claude Code in its project directory; does not wait for anything.
    pub fn start() -> Claude {
        Claude::start_with(&[], |_| {})
    }

    /// Starts Claude Code with `args`, after `setup` has had its say on the prepared HOME
    /// (hooks in its settings, more environment…).
    pub fn start_with(args: &[&str], setup: impl FnOnce(&mut AgentHome)) -> Claude {
        let cli = Cli::claude();
        let mut home = AgentHome::new("claude");
        let fake = FakeAnthropic::start(&home.project);
        home.prepare_claude(fake.url());
        setup(&mut home);
        let tmux = Tmux::start(&home.launch(&cli, args), &home.scratch());
        Claude {
            tmux,
            fake,
            cli,
            home,
        }
    }

    /// Waits for the idle input box, and returns that screen.
    pub fn wait_idle(&self) -> String {
        self.tmux.wait_for("Claude Code idle", STARTUP, claude_idle)
    }

    /// Types a prompt and submits it.
    pub fn send(&self, prompt: &str) {
        self.tmux.send_text(prompt, CLAUDE_GAP);
    }
}

/// Idle: the footer offers shortcuts and nothing is running.
pub fn claude_idle(screen: &str) -> bool {
    let footer = footer(screen, 3);
    footer.contains("? for shortcuts") && !footer.contains("esc to interrupt")
}

/// Working: the footer says a turn can be interrupted.
pub fn claude_working(screen: &str) -> bool {
    footer(screen, 3).contains("esc to interrupt")
}

/// The last `lines` non-blank lines of a screen.
pub fn footer(screen: &str, lines: usize) -> String {
    let mut tail: Vec<&str> = screen
        .lines()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(lines)
        .collect();
    tail.reverse();
    tail.join("\n")
}

/// Codex in tmux; its app-server daemon dies with the HOME.
pub struct Codex {
    pub tmux: Tmux,
    pub fake: FakeOpenAi,
    pub cli: Cli,
    pub home: AgentHome,
}

impl Codex {
    /// Records `screen` as `<scenario>.txt` with its expected row, when recording.
    pub fn record(&self, scenario: &str, screen: &str, row: Row) {
        record_screen(&self.cli, &self.tmux, scenario, screen, row);
    }

    pub fn start() -> Codex {
        Codex::start_with(&[], |_| {})
    }

    /// Starts Codex with `args`, after `setup` has had its say on the prepared HOME.
    pub fn start_with(args: &[&str], setup: impl FnOnce(&mut AgentHome)) -> Codex {
        let cli = Cli::codex();
        let mut home = AgentHome::new("codex");
        let fake = FakeOpenAi::start();
        home.prepare_codex(&fake.base_url());
        setup(&mut home);
        let tmux = Tmux::start(&home.launch(&cli, args), &home.scratch());
        Codex {
            tmux,
            fake,
            cli,
            home,
        }
    }

    /// Waits for the idle composer after the splash (keys typed during it are dropped), and
    /// then a moment more: a key sent as the composer first shows can still be lost.
    pub fn wait_idle(&self) -> String {
        let idle = self.tmux.wait_for("Codex idle", STARTUP, codex_idle);
        std::thread::sleep(CODEX_SETTLE);
        idle
    }

    pub fn send(&self, prompt: &str) {
        self.tmux.send_text(prompt, CODEX_GAP);
    }
}

/// Idle: the composer's footer with `← for agents`, which the splash does not show, and no
/// `Working (… • esc to interrupt)` line (the composer stays on screen while Codex works).
pub fn codex_idle(screen: &str) -> bool {
    footer(screen, 3).contains("for agents") && !codex_working(screen)
}

pub fn codex_working(screen: &str) -> bool {
    screen.contains("esc to interrupt")
}
