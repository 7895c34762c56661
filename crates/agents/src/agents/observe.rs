//! From what a terminal shows and reports to an [`Observation`] of the agent in it, on the
//! supervisor's clock (milliseconds since it started).

use std::time::Instant;

use super::detect::{HookEvent, Millis, Observation, ProcessStatus, Stamped};
use super::osc7501::StatusReport;
use crate::process::procfs::ProcStat;
use crate::terminal::core::{Life, Observed};

/// Clock ticks per second in `/proc/PID/stat` (USER_HZ, 100 on every Linux drydock runs on).
const TICKS_PER_SECOND: u64 = 100;

/// The supervisor's clock: every time in an observation is milliseconds since `start`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Clock {
    start: Instant,
}

impl Clock {
    pub(super) fn new() -> Clock {
        Clock {
            start: Instant::now(),
        }
    }

    pub(super) fn now(&self) -> Millis {
        self.at(Instant::now())
    }

    /// The instant `at` on this clock stands for.
    pub(super) fn instant(&self, at: Millis) -> Instant {
        self.start + std::time::Duration::from_millis(at)
    }

    /// `instant` on this clock (0 for anything before the clock started).
    pub(super) fn at(&self, instant: Instant) -> Millis {
        instant.saturating_duration_since(self.start).as_millis() as Millis
    }

    /// When `process` started, on this clock (0 if before the clock started).
    fn started(&self, process: &ProcStat) -> Millis {
        let Some(uptime_ms) = uptime_ms() else {
            return 0;
        };
        let age = uptime_ms.saturating_sub(process.start_time * 1000 / TICKS_PER_SECOND);
        self.now().saturating_sub(age)
    }
}

fn uptime_ms() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/uptime").ok()?;
    let seconds: f64 = text.split_whitespace().next()?.parse().ok()?;
    Some((seconds * 1000.0) as u64)
}

/// What an observation borrows: the terminal's rows and reports, converted once.
pub(super) struct Seen {
    rows: Vec<String>,
    title: String,
    osc: Vec<Stamped<StatusReport>>,
    hooks: Vec<Stamped<HookEvent>>,
    screen_at: Millis,
    process: ProcessStatus,
    now: Millis,
}

impl Seen {
    pub(super) fn new(
        clock: &Clock,
        observed: &Observed,
        process: &ProcStat,
        hooks: Vec<Stamped<HookEvent>>,
    ) -> Seen {
        let now = clock.now();
        let screen_at = clock.at(observed.last_output);
        Seen {
            rows: observed.rows.clone(),
            title: observed.title.clone(),
            osc: observed
                .program_status
                .iter()
                .map(|status| Stamped {
                    at: clock.at(status.at),
                    value: StatusReport::parse(&status.report),
                })
                .collect(),
            hooks,
            screen_at,
            process: match observed.life {
                Life::Running => ProcessStatus::Running {
                    started_at: clock.started(process),
                },
                Life::Exited(status) => ProcessStatus::Exited {
                    code: status.code(),
                    at: now,
                },
            },
            now,
        }
    }

    pub(super) fn now(&self) -> Millis {
        self.now
    }

    /// The observation, with `rows` borrowed as `&str`s from `lines`.
    pub(super) fn observation<'a>(&'a self, lines: &'a [&'a str]) -> Observation<'a> {
        Observation {
            now: self.now,
            process: self.process,
            screen: lines,
            screen_at: self.screen_at,
            title: (!self.title.is_empty()).then_some(Stamped {
                at: self.screen_at,
                value: self.title.as_str(),
            }),
            osc: &self.osc,
            hooks: &self.hooks,
            last_output_at: Some(self.screen_at),
        }
    }

    pub(super) fn lines(&self) -> Vec<&str> {
        self.rows.iter().map(String::as_str).collect()
    }

    /// The latest hook event's name, with its tool.
    pub(super) fn last_hook(&self) -> Option<String> {
        let last = &self.hooks.last()?.value;
        Some(match &last.tool_name {
            Some(tool) => format!("{} {tool}", last.name),
            None => last.name.clone(),
        })
    }

    pub(super) fn title(&self) -> &str {
        &self.title
    }
}
