//! What agents do with a session once it exists: type into it, read it, wait on it, run
//! commands in it.

use std::time::Duration;

use futures::FutureExt;
use futures::future::BoxFuture;
use regex::Regex;

use super::budget::{fit_lines, last_lines_within, text_bytes};
use super::core::{Fallback, WaitFor, WaitMethod};
use super::keys::Key;
use super::reports::{
    CommandReport, ElidedLines, ScreenReport, ScrollbackReport, SendReport, WaitReport,
};
use super::requests::{
    CommandRequest, OutputBytes, ScreenFormat, ScreenRequest, ScrollbackRequest, SendRequest,
    TextEncoding, WaitMs, WaitRequest,
};
use super::session::Session;
use super::{Result, TerminalError, Terminals};
use crate::call::Call;

const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(30);
const DEFAULT_MAX_WAIT: Duration = Duration::from_secs(30);
const SCREEN_TAIL_LINES: usize = 10;
/// After keys are sent: how long the screen gets to react, and how often Enter is resent.
const REACTION_WAIT: Duration = Duration::from_millis(1000);
const ENTER_RETRIES: u32 = 2;

impl Terminals {
    /// Types text and keys into a session, and waits (a few seconds at most) for the screen
    /// to react, sending an unanswered Enter again; the waits end when the call is cancelled.
    pub fn send<'a>(
        &'a self,
        req: SendRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<SendReport>> {
        async move {
            let session = self.session(&req.session).await?;
            let keys: Vec<Key> = req
                .keys
                .iter()
                .map(|name| Key::parse(name))
                .collect::<std::result::Result<_, _>>()?;
            let text = match (req.text.as_deref(), req.encoding) {
                (None, _) => Vec::new(),
                (Some(text), TextEncoding::Utf8) => text.as_bytes().to_vec(),
                (Some(text), TextEncoding::Hex) => decode_hex(text).ok_or_else(|| {
                    TerminalError::InvalidArgument(format!(
                        "text is not hexadecimal bytes: {text:?}"
                    ))
                })?,
            };
            if text.is_empty() && keys.is_empty() {
                return Err(TerminalError::InvalidArgument(
                    "nothing to send: give text and/or keys".into(),
                ));
            }
            let mut bytes = text.len();
            let before = session.core.generation();
            if !text.is_empty() {
                session.write(&text)?;
                if !keys.is_empty() {
                    // Let the program take the text before the keys, so an Enter is not swallowed
                    // by a TUI still busy with the paste.
                    changed_since(&session, before, REACTION_WAIT / 2, call).await?;
                }
            }
            let mut retries = 0;
            let mut screen_changed = session.core.generation() > before;
            if !keys.is_empty() {
                let application_cursor = session.core.application_cursor();
                let key_bytes: Vec<u8> = keys
                    .iter()
                    .flat_map(|k| k.bytes_for(application_cursor))
                    .collect();
                let after_text = session.core.generation();
                session.write(&key_bytes)?;
                bytes += key_bytes.len();
                screen_changed = changed_since(&session, after_text, REACTION_WAIT, call).await?;
                let ends_with_enter = keys.last().is_some_and(|k| k.bytes() == b"\r");
                while !screen_changed && ends_with_enter && retries < ENTER_RETRIES {
                    retries += 1;
                    session.write(b"\r")?;
                    screen_changed =
                        changed_since(&session, after_text, REACTION_WAIT, call).await?;
                }
            }
            Ok(SendReport {
                session: req.session,
                bytes,
                screen_changed,
                retries,
                generation: session.core.generation(),
            })
        }
        .boxed()
    }

    pub fn screen(&self, req: ScreenRequest) -> BoxFuture<'_, Result<ScreenReport>> {
        async move {
            let cap = self.output_cap(req.max_output_bytes);
            let session = self.session(&req.session).await?;
            let core = &session.core;
            let (text, top_line) = core.screen_and_top_line(req.format == ScreenFormat::Styled);
            let lines = req.lines.map(|n| n.get() as usize);
            let text = last_lines_within(&text, top_line, lines, cap);
            let (rows, cols) = core.size();
            let (cursor_row, cursor_col) = core.cursor();
            Ok(ScreenReport {
                session: req.session,
                text,
                rows,
                cols,
                cursor_row,
                cursor_col,
                generation: core.generation(),
                title: core.title(),
                alternate_screen: core.alternate_screen(),
            })
        }
        .boxed()
    }

    pub fn scrollback(&self, req: ScrollbackRequest) -> BoxFuture<'_, Result<ScrollbackReport>> {
        async move {
            if req.format == ScreenFormat::Styled {
                return Err(TerminalError::InvalidArgument(
                    "scrollback is kept as plain text: use format \"text\" (terminal_screen has styled)".into(),
                ));
            }
            let cap = self.output_cap(req.max_output_bytes);
            let session = self.session(&req.session).await?;
            let limit = req.limit.map_or(200, |n| n.get() as usize);
            let offset = match req.offset.map_or(0, |n| n.get()) {
                back if back < 0 => session
                    .core
                    .lines(0, 0)
                    .total
                    .saturating_sub(back.unsigned_abs()),
                from_first => from_first as u64,
            };
            let page = session.core.lines(offset, limit);
            let fit = fit_lines(&page.lines, cap);
            let (elided_at, elided) = fit.elided(page.lines.len());
            let elided = (elided > 0).then(|| ElidedLines {
                offset: page.offset + elided_at as u64,
                lines: elided,
                bytes: text_bytes(&page.lines[elided_at..elided_at + elided]),
            });
            let mut lines = page.lines;
            lines.drain(elided_at..elided_at + elided.map_or(0, |e| e.lines));
            Ok(ScrollbackReport {
                session: req.session,
                lines,
                offset: page.offset,
                oldest: page.oldest,
                total: page.total,
                elided,
            })
    }
        .boxed()
    }

    /// Waits for the screen to match, go quiet or change; ends when the call is cancelled.
    pub fn wait<'a>(
        &'a self,
        req: WaitRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<WaitReport>> {
        async move {
            let cap = self.output_cap(req.max_output_bytes);
            let session = self.session(&req.session).await?;
            let wait_for = WaitFor {
                after_generation: req.after_generation.map(|g| g.get()),
                quiet_ms: req.quiet_ms.map(WaitMs::get),
                pattern: compile(req.pattern.as_deref())?,
                max_wait: duration(req.max_wait_ms, DEFAULT_MAX_WAIT),
            };
            let outcome = session.core.wait(wait_for, &call.cancel).await?;
            session.touch();
            let (screen, top_line) = session.core.screen_and_top_line(false);
            Ok(WaitReport {
                session: req.session,
                screen_tail: last_lines_within(&screen, top_line, Some(SCREEN_TAIL_LINES), cap),
                outcome,
            })
        }
        .boxed()
    }

    /// Runs a command in a session's shell and returns its output once it is done.
    /// Cancelled, it returns at once and leaves the command running.
    pub fn run<'a>(
        &'a self,
        req: CommandRequest,
        call: &'a Call<'a>,
    ) -> BoxFuture<'a, Result<CommandReport>> {
        async move {
            let cap = self.output_cap(req.max_output_bytes);
            let session = self.session(&req.session).await?;
            if !session.alive() {
                return Err(TerminalError::Exited);
            }
            let fallback = Fallback {
                quiet_ms: req.quiet_ms.map(WaitMs::get),
                pattern: compile(req.pattern.as_deref())?,
            };
            let input = |bytes: &[u8]| session.write(bytes);
            let outcome = session
                .core
                .run(
                    &input,
                    &req.command,
                    duration(req.timeout_ms, DEFAULT_RUN_TIMEOUT),
                    fallback,
                    cap,
                    &call.cancel,
                )
                .await?;
            session.touch();
            Ok(CommandReport {
                session: req.session,
                outcome,
            })
        }
        .boxed()
    }

    /// The output budget of a call: the `max_output_bytes` it asked for, else the configured
    /// one.
    fn output_cap(&self, asked: Option<OutputBytes>) -> usize {
        asked.map_or(self.config.terminal.output_cap, |cap| cap.get() as usize)
    }
}

/// Whether the screen changed after `generation`, within `limit`.
async fn changed_since(
    session: &Session,
    generation: u64,
    limit: Duration,
    call: &Call<'_>,
) -> Result<bool> {
    let change = WaitFor {
        after_generation: Some(generation),
        max_wait: limit,
        ..Default::default()
    };
    let outcome = session.core.wait(change, &call.cancel).await?;
    Ok(outcome.method == WaitMethod::Changed || outcome.generation > generation)
}

fn compile(pattern: Option<&str>) -> Result<Option<Regex>> {
    pattern
        .map(|p| {
            Regex::new(&format!("(?m){p}"))
                .map_err(|e| TerminalError::InvalidArgument(format!("bad pattern {p:?}: {e}")))
        })
        .transpose()
}

fn duration(ms: Option<WaitMs>, default: Duration) -> Duration {
    ms.map_or(default, |ms| Duration::from_millis(ms.get()))
}

fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    let hex: String = hex.chars().filter(|c| !c.is_whitespace()).collect();
    if !hex.is_ascii() || !hex.len().is_multiple_of(2) {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_is_decoded() {
        assert_eq!(decode_hex("1b 5b41"), Some(vec![0x1b, 0x5b, 0x41]));
        assert_eq!(decode_hex("1b5"), None);
        assert_eq!(decode_hex("zz"), None);
        assert_eq!(decode_hex("éa"), None);
    }
}
