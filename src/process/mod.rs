//! Run a child process: argv only (never a shell), in its own process group, with a timeout,
//! cancellation, line-by-line streaming and head + tail capped capture of stdout and stderr.
//!
//! Every process the run started is gone when it ends, however it ends ([`tree`] says how they
//! are found: the process group, descendants that left it with `setsid`, and orphans that
//! carry the run's tag in their environment): on timeout or cancel they get SIGTERM and, after
//! the grace period, SIGKILL; when the direct child exits, whatever is left gets SIGKILL; when
//! the `run` future is dropped, a guard sends SIGKILL.

use std::borrow::Cow;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, ChildStdin, Command};
use tokio::time::{Instant, sleep, sleep_until};
use tokio_util::sync::CancellationToken;

use crate::text_budget::{elision_marker, json_cost, prefix_within, suffix_within};

pub mod env_policy;
pub mod procfs;
mod tree;

use tree::RunTag;
pub use tree::{Escalation, ProcessTree, RUN_TAG_VAR};

/// Longest line handed to `on_line`. A longer line is cut here, ends with
/// `[... N bytes elided ...]`, and the rest of it is skipped. Deliberately independent of
/// `Limits::output_cap`: line consumers (cargo's JSON messages) need whole lines even when the
/// captured text is kept small, and memory stays bounded either way.
pub const MAX_LINE_BYTES: usize = 1024 * 1024;

const READ_CHUNK_BYTES: usize = 64 * 1024;
/// How long to keep reading once the group is dead, for pipes held open by a process that
/// left the group (e.g. with `setsid`).
const DRAIN_AFTER_EXIT: Duration = Duration::from_secs(1);

#[derive(Debug, Clone)]
pub struct CommandSpec {
    /// e.g. "cargo"; resolved on PATH by the OS.
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Added to (or overriding) the inherited environment; wins over `env_remove`.
    pub env_set: Vec<(String, String)>,
    /// Removed from the inherited environment (secrets); exact names. Drydock's token is
    /// always removed ([`env_policy::ALWAYS_REMOVED`]).
    pub env_remove: Vec<String>,
    /// Written to the child's stdin, which is then closed. `None`: stdin is /dev/null.
    pub stdin: Option<Vec<u8>>,
}

impl CommandSpec {
    /// A spec with the inherited environment and stdin at /dev/null.
    pub fn new(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
        cwd: impl Into<PathBuf>,
    ) -> Self {
        Self {
            program: program.into(),
            args: args.into_iter().map(Into::into).collect(),
            cwd: cwd.into(),
            env_set: Vec::new(),
            env_remove: Vec::new(),
            stdin: None,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub timeout: Duration,
    /// Per stream: how large the kept text (head + tail) may be as a JSON string.
    pub output_cap: usize,
    /// SIGTERM -> wait this long -> SIGKILL.
    pub kill_grace: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Termination {
    /// The exit code; -1 if the status of the child could not be read.
    Exited(i32),
    /// Killed by a signal that did not come from us.
    Signaled(i32),
    TimedOut,
    Cancelled,
}

impl Termination {
    pub fn success(self) -> bool {
        self == Termination::Exited(0)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedOutput {
    /// Lossy UTF-8 of what was kept; when over the cap: head, then
    /// "\n[... N bytes elided ...]\n", then tail.
    pub text: String,
    /// Everything the child wrote to this stream.
    pub total_bytes: u64,
    /// 0 when nothing was cut.
    pub elided_bytes: u64,
}

#[derive(Debug, Clone)]
pub struct ProcessOutput {
    pub termination: Termination,
    pub stdout: CapturedOutput,
    pub stderr: CapturedOutput,
    pub duration: Duration,
    /// The direct child's pid, which is also its process group id.
    pub pid: u32,
}

/// Only for "could not run at all"; everything after a successful spawn is a `Termination`.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("`{program}` was not found on PATH")]
    NotFound { program: String },
    #[error("could not start `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
}

type OnLine<'a> = dyn FnMut(Stream, &str) + Send + 'a;

/// Runs `spec` to completion under `limits`, handing every output line to `on_line` as it
/// arrives (from within this future), and returns how it ended with the capped output.
pub async fn run(
    spec: &CommandSpec,
    limits: &Limits,
    cancel: &CancellationToken,
    on_line: &mut (dyn FnMut(Stream, &str) + Send),
) -> Result<ProcessOutput, RunError> {
    let started = Instant::now();
    let tag = RunTag::next();
    let mut child = spawn(spec, &tag)?;
    let pid = child
        .id()
        .expect("a child that was just spawned has not been reaped");
    let tree = ProcessTree::new(pid, &tag);
    tracing::debug!(program = %spec.program, pid, "spawned");

    let mut pump = Pump::new(&mut child, limits.output_cap);
    let stdin = write_stdin(child.stdin.take(), spec.stdin.as_deref());
    let outcome = wait_for_exit_or_stop(
        &mut child,
        &mut pump,
        stdin,
        limits.timeout,
        cancel,
        on_line,
    )
    .await;
    let termination = match outcome {
        Outcome::Exited(status) => termination_of(status),
        Outcome::Stopped(reason) => {
            terminate_gracefully(&tree, &mut child, &mut pump, limits.kill_grace, on_line).await;
            reason
        }
    };
    tree.kill_all_and_look_again();
    let _ = child.wait().await;
    pump.drain(DRAIN_AFTER_EXIT, on_line).await;
    let (stdout, stderr) = pump.finish(on_line);
    tracing::debug!(program = %spec.program, pid, ?termination, "finished");
    Ok(ProcessOutput {
        termination,
        stdout,
        stderr,
        duration: started.elapsed(),
        pid,
    })
}

/// Where `program` is: itself when it names a path, else the first executable of that
/// name on drydock's PATH.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |path: &Path| {
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.is_empty() {
        return None;
    }
    if program.contains('/') {
        let path = PathBuf::from(program);
        return executable(&path).then_some(path);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
}

/// What every run of one caller shares: its limits and the secrets its children never see.
#[derive(Debug, Clone)]
pub struct Policy {
    pub limits: Limits,
    /// Added to every spec's `env_remove` (the config's `env_remove`).
    pub env_remove: Vec<String>,
}

impl Policy {
    /// The same policy with a timeout no longer than `timeout`.
    pub fn within(&self, timeout: Duration) -> Policy {
        Policy {
            limits: Limits {
                timeout: timeout.min(self.limits.timeout),
                ..self.limits
            },
            env_remove: self.env_remove.clone(),
        }
    }

    /// [`run`] under this policy.
    pub async fn run(
        &self,
        mut spec: CommandSpec,
        cancel: &CancellationToken,
        on_line: &mut (dyn FnMut(Stream, &str) + Send),
    ) -> Result<ProcessOutput, RunError> {
        spec.env_remove.extend(self.env_remove.iter().cloned());
        run(&spec, &self.limits, cancel, on_line).await
    }

    /// [`Policy::run`] for blocking code: on a thread and a runtime of its own, so that it
    /// works on a blocking thread and on a runtime's worker alike.
    pub fn run_blocking(
        &self,
        spec: CommandSpec,
        cancel: &CancellationToken,
        on_line: &mut (dyn FnMut(Stream, &str) + Send),
    ) -> Result<ProcessOutput, RunError> {
        std::thread::scope(|scope| {
            let runner = scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|source| RunError::Spawn {
                        program: spec.program.clone(),
                        source,
                    })?;
                runtime.block_on(self.run(spec.clone(), cancel, on_line))
            });
            runner
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
        })
    }
}

fn spawn(spec: &CommandSpec, tag: &RunTag) -> Result<Child, RunError> {
    // A missing cwd also fails with ENOENT: tell it apart from a missing program up front.
    if !spec.cwd.is_dir() {
        let message = format!("working directory {} does not exist", spec.cwd.display());
        return Err(RunError::Spawn {
            program: spec.program.clone(),
            source: io::Error::new(io::ErrorKind::NotFound, message),
        });
    }
    let mut command = Command::new(&spec.program);
    command
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    env_policy::scrub(&mut command, &spec.env_remove);
    command.envs(spec.env_set.iter().map(|(name, value)| (name, value)));
    command.env(RUN_TAG_VAR, tag.value());
    command.spawn().map_err(|source| match source.kind() {
        io::ErrorKind::NotFound => RunError::NotFound {
            program: spec.program.clone(),
        },
        _ => RunError::Spawn {
            program: spec.program.clone(),
            source,
        },
    })
}

async fn write_stdin(pipe: Option<ChildStdin>, bytes: Option<&[u8]>) {
    let (Some(mut pipe), Some(bytes)) = (pipe, bytes) else {
        return;
    };
    if let Err(error) = pipe.write_all(bytes).await {
        tracing::debug!("the child did not read all of its stdin: {error}");
    }
    // Dropping `pipe` closes the child's stdin.
}

enum Outcome {
    Exited(io::Result<ExitStatus>),
    Stopped(Termination),
}

async fn wait_for_exit_or_stop(
    child: &mut Child,
    pump: &mut Pump,
    stdin: impl Future<Output = ()>,
    timeout: Duration,
    cancel: &CancellationToken,
    on_line: &mut OnLine<'_>,
) -> Outcome {
    let deadline = sleep_until(deadline_after(timeout));
    tokio::pin!(deadline, stdin);
    let mut stdin_written = false;
    loop {
        tokio::select! {
            status = child.wait() => return Outcome::Exited(status),
            () = &mut deadline => return Outcome::Stopped(Termination::TimedOut),
            () = cancel.cancelled() => return Outcome::Stopped(Termination::Cancelled),
            () = &mut stdin, if !stdin_written => stdin_written = true,
            () = pump.step(on_line), if pump.is_open() => {}
        }
    }
}

/// The run's escalation up to SIGKILL ([`ProcessTree::terminate`]), still reading output
/// meanwhile. The caller sends SIGKILL afterwards either way.
async fn terminate_gracefully(
    tree: &ProcessTree,
    child: &mut Child,
    pump: &mut Pump,
    grace: Duration,
    on_line: &mut OnLine<'_>,
) {
    let terminated = tree.terminate(Escalation::sigterm(grace));
    tokio::pin!(terminated);
    let mut leader_reaped = false;
    loop {
        tokio::select! {
            _ = &mut terminated => return,
            _ = child.wait(), if !leader_reaped => leader_reaped = true,
            () = pump.step(on_line), if pump.is_open() => {}
        }
    }
}

fn termination_of(status: io::Result<ExitStatus>) -> Termination {
    match status {
        Ok(status) => status
            .code()
            .map(Termination::Exited)
            .or(status.signal().map(Termination::Signaled))
            .unwrap_or(Termination::Exited(-1)),
        Err(error) => {
            tracing::error!("could not wait for the child: {error}");
            Termination::Exited(-1)
        }
    }
}

fn deadline_after(duration: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(duration)
        .unwrap_or_else(|| now + Duration::from_secs(100 * 365 * 24 * 3600))
}

/// Reads stdout and stderr as data arrives, feeding lines to the callback and the capture.
struct Pump {
    stdout: OutputReader,
    stderr: OutputReader,
}

impl Pump {
    fn new(child: &mut Child, output_cap: usize) -> Self {
        let stdout = child.stdout.take().map(|pipe| Box::new(pipe) as Pipe);
        let stderr = child.stderr.take().map(|pipe| Box::new(pipe) as Pipe);
        Self {
            stdout: OutputReader::new(Stream::Stdout, stdout, output_cap),
            stderr: OutputReader::new(Stream::Stderr, stderr, output_cap),
        }
    }

    fn is_open(&self) -> bool {
        self.stdout.is_open() || self.stderr.is_open()
    }

    /// Reads from whichever stream is ready first and processes what was read. Cancel-safe:
    /// nothing is lost if dropped while waiting. Never completes when both streams are closed.
    async fn step(&mut self, on_line: &mut OnLine<'_>) {
        let (reader, result) = tokio::select! {
            result = self.stdout.read() => (&mut self.stdout, result),
            result = self.stderr.read() => (&mut self.stderr, result),
        };
        match result {
            Ok(0) => reader.close(on_line),
            Ok(len) => reader.consume(len, on_line),
            Err(error) => {
                tracing::warn!(stream = ?reader.stream, "could not read the child's output: {error}");
                reader.close(on_line);
            }
        }
    }

    /// Reads until both streams are closed or `limit` has passed.
    async fn drain(&mut self, limit: Duration, on_line: &mut OnLine<'_>) {
        let give_up = sleep(limit);
        tokio::pin!(give_up);
        while self.is_open() {
            tokio::select! {
                () = &mut give_up => return,
                () = self.step(on_line) => {}
            }
        }
    }

    fn finish(self, on_line: &mut OnLine<'_>) -> (CapturedOutput, CapturedOutput) {
        (self.stdout.finish(on_line), self.stderr.finish(on_line))
    }
}

type Pipe = Box<dyn AsyncRead + Unpin + Send>;

struct OutputReader {
    stream: Stream,
    pipe: Option<Pipe>,
    buf: Vec<u8>,
    lines: LineSplitter,
    capture: Capture,
}

impl OutputReader {
    fn new(stream: Stream, pipe: Option<Pipe>, output_cap: usize) -> Self {
        Self {
            stream,
            pipe,
            buf: vec![0; READ_CHUNK_BYTES],
            lines: LineSplitter::new(MAX_LINE_BYTES),
            capture: Capture::new(output_cap),
        }
    }

    fn is_open(&self) -> bool {
        self.pipe.is_some()
    }

    async fn read(&mut self) -> io::Result<usize> {
        match &mut self.pipe {
            Some(pipe) => pipe.read(&mut self.buf).await,
            None => std::future::pending().await,
        }
    }

    fn consume(&mut self, len: usize, on_line: &mut OnLine<'_>) {
        let data = &self.buf[..len];
        let stream = self.stream;
        self.capture.push(data);
        self.lines.feed(data, &mut |line| on_line(stream, line));
    }

    fn close(&mut self, on_line: &mut OnLine<'_>) {
        self.pipe = None;
        let stream = self.stream;
        self.lines.finish(&mut |line| on_line(stream, line));
    }

    fn finish(mut self, on_line: &mut OnLine<'_>) -> CapturedOutput {
        self.close(on_line);
        self.capture.finish()
    }
}

/// Splits a byte stream into lines without a trailing `\n` or `\r\n`; a line longer than
/// `max_line` bytes is cut there and ends with the elision marker.
struct LineSplitter {
    pending: Vec<u8>,
    overflow: u64,
    max_line: usize,
}

impl LineSplitter {
    fn new(max_line: usize) -> Self {
        Self {
            pending: Vec::new(),
            overflow: 0,
            max_line,
        }
    }

    fn feed(&mut self, mut data: &[u8], emit: &mut dyn FnMut(&str)) {
        while let Some(newline) = data.iter().position(|&b| b == b'\n') {
            self.append(&data[..newline]);
            self.emit_pending(emit);
            data = &data[newline + 1..];
        }
        self.append(data);
    }

    /// Emits the last line if the stream did not end with a newline.
    fn finish(&mut self, emit: &mut dyn FnMut(&str)) {
        if !self.pending.is_empty() || self.overflow > 0 {
            self.emit_pending(emit);
        }
    }

    fn append(&mut self, bytes: &[u8]) {
        let room = self.max_line - self.pending.len();
        let kept = bytes.len().min(room);
        self.pending.extend_from_slice(&bytes[..kept]);
        self.overflow += (bytes.len() - kept) as u64;
    }

    fn emit_pending(&mut self, emit: &mut dyn FnMut(&str)) {
        emit(&render_line(&self.pending, self.overflow));
        self.pending.clear();
        self.overflow = 0;
    }
}

fn render_line(bytes: &[u8], overflow: u64) -> Cow<'_, str> {
    if overflow == 0 {
        let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
        return String::from_utf8_lossy(bytes);
    }
    let kept = without_partial_char_at_end(bytes);
    let elided = overflow + (bytes.len() - kept.len()) as u64;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(kept),
        elision_marker(elided)
    );
    Cow::Owned(text)
}

/// Keeps the first `cap / 2` and the last `cap - cap / 2` bytes of a stream.
struct Capture {
    head: Vec<u8>,
    tail: Vec<u8>,
    head_cap: usize,
    tail_cap: usize,
    total: u64,
}

impl Capture {
    fn new(cap: usize) -> Self {
        let head_cap = cap / 2;
        Self {
            head: Vec::new(),
            tail: Vec::new(),
            head_cap,
            tail_cap: cap - head_cap,
            total: 0,
        }
    }

    fn push(&mut self, data: &[u8]) {
        self.total += data.len() as u64;
        let into_head = data.len().min(self.head_cap - self.head.len());
        self.head.extend_from_slice(&data[..into_head]);
        self.push_tail(&data[into_head..]);
    }

    fn push_tail(&mut self, data: &[u8]) {
        let data = &data[data.len().saturating_sub(self.tail_cap)..];
        self.tail.extend_from_slice(data);
        // Trimming only at twice the cap moves each byte a bounded number of times.
        if self.tail.len() > self.tail_cap.saturating_mul(2) {
            let excess = self.tail.len() - self.tail_cap;
            self.tail.drain(..excess);
        }
    }

    /// The kept text, within the cap counted as JSON (a control character costs up to six
    /// bytes there), cut between characters.
    fn finish(self) -> CapturedOutput {
        let tail = &self.tail[self.tail.len().saturating_sub(self.tail_cap)..];
        if (self.head.len() + tail.len()) as u64 == self.total {
            let whole = [self.head.as_slice(), tail].concat();
            if json_cost(&whole) <= self.head_cap + self.tail_cap {
                return CapturedOutput {
                    text: String::from_utf8_lossy(&whole).into_owned(),
                    total_bytes: self.total,
                    elided_bytes: 0,
                };
            }
        }
        let head = prefix_within(without_partial_char_at_end(&self.head), self.head_cap);
        let tail = suffix_within(without_partial_char_at_start(tail), self.tail_cap);
        let elided = self.total - (head.len() + tail.len()) as u64;
        CapturedOutput {
            text: format!(
                "{}\n{}\n{}",
                String::from_utf8_lossy(head),
                elision_marker(elided),
                String::from_utf8_lossy(tail)
            ),
            total_bytes: self.total,
            elided_bytes: elided,
        }
    }
}

/// Drops a UTF-8 sequence cut short at the end.
fn without_partial_char_at_end(bytes: &[u8]) -> &[u8] {
    let last_three = bytes.len().saturating_sub(3)..bytes.len();
    for start in last_three.rev() {
        match utf8_sequence_len(bytes[start]) {
            None => continue,
            Some(len) if start + len > bytes.len() => return &bytes[..start],
            Some(_) => return bytes,
        }
    }
    bytes
}

/// Drops continuation bytes whose lead byte was cut off at the start.
fn without_partial_char_at_start(bytes: &[u8]) -> &[u8] {
    let orphans = bytes
        .iter()
        .take(3)
        .take_while(|&&b| utf8_sequence_len(b).is_none())
        .count();
    &bytes[orphans..]
}

/// The length of the UTF-8 sequence a byte starts, or `None` for a continuation byte.
fn utf8_sequence_len(byte: u8) -> Option<usize> {
    match byte {
        0x80..=0xBF => None,
        0xC0..=0xDF => Some(2),
        0xE0..=0xEF => Some(3),
        0xF0..=0xF7 => Some(4),
        _ => Some(1),
    }
}

/// `word` as one word for a POSIX shell: itself when it has nothing the shell treats
/// specially, else [`single_quoted`].
pub fn shell_word(word: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c);
    match !word.is_empty() && word.chars().all(plain) {
        true => word.to_string(),
        false => single_quoted(word),
    }
}

/// `text` in single quotes, as a POSIX shell reads it back whatever it holds.
pub fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_reach_the_shell_as_they_are() {
        assert_eq!(single_quoted("/a b/c'd"), r"'/a b/c'\''d'");
        assert_eq!(
            shell_word("/opt/models/bge-small@v1.5"),
            "/opt/models/bge-small@v1.5"
        );
        for quoted in ["", "a b", "it's", "$HOME", "a%b", "*"] {
            assert_eq!(shell_word(quoted), single_quoted(quoted), "{quoted:?}");
        }
    }

    const GENEROUS: Duration = Duration::from_secs(20);
    const WATCHDOG: Duration = Duration::from_secs(180);

    fn spec(program: &str, args: &[&str]) -> CommandSpec {
        CommandSpec::new(program, args.iter().copied(), std::env::temp_dir())
    }

    fn sh(script: &str) -> CommandSpec {
        spec("sh", &["-c", script])
    }

    fn limits(timeout: Duration) -> Limits {
        Limits {
            timeout,
            output_cap: 64 * 1024,
            kill_grace: Duration::from_secs(1),
        }
    }

    #[derive(Default)]
    struct Lines {
        stdout: Vec<String>,
        stderr: Vec<String>,
    }

    async fn run_collecting(spec: &CommandSpec, limits: &Limits) -> (ProcessOutput, Lines) {
        run_cancellable(spec, limits, &CancellationToken::new()).await
    }

    async fn run_cancellable(
        spec: &CommandSpec,
        limits: &Limits,
        cancel: &CancellationToken,
    ) -> (ProcessOutput, Lines) {
        let mut lines = Lines::default();
        let mut on_line = |stream: Stream, line: &str| match stream {
            Stream::Stdout => lines.stdout.push(line.to_owned()),
            Stream::Stderr => lines.stderr.push(line.to_owned()),
        };
        // A watchdog, so that a regression that hangs fails instead of blocking the suite.
        let output = tokio::time::timeout(WATCHDOG, run(spec, limits, cancel, &mut on_line))
            .await
            .expect("run hung")
            .expect("the child starts");
        (output, lines)
    }

    fn pgid_of(output: &ProcessOutput) -> i32 {
        output.pid as i32
    }

    /// Waits (generously) until no process of the group is running any more.
    async fn assert_group_gone(pgid: i32) {
        let running = || {
            procfs::all_processes()
                .into_iter()
                .any(|p| p.pgrp == pgid && !p.is_gone())
        };
        wait_until_not(
            running,
            &format!("process group {pgid} still has running members"),
        )
        .await;
    }

    /// Waits (generously) until `pid` is not running any more.
    async fn assert_process_gone(pid: i32) {
        let running = || procfs::ProcStat::read(pid).is_some_and(|p| !p.is_gone());
        wait_until_not(running, &format!("process {pid} is still running")).await;
    }

    async fn wait_until_not(condition: impl Fn() -> bool, failure: &str) {
        let give_up = Instant::now() + Duration::from_secs(10);
        while condition() {
            if Instant::now() >= give_up {
                let _ = std::process::Command::new("ps")
                    .args(["-eo", "pid,ppid,pgid,sid,stat,args"])
                    .status();
                panic!("{failure}");
            }
            sleep(Duration::from_millis(50)).await;
        }
    }

    // --- the process group dies with the run ---

    #[tokio::test]
    async fn timeout_kills_the_whole_group() {
        let (output, _) = run_collecting(
            &sh("sleep 1000 & sleep 1000"),
            &limits(Duration::from_secs(2)),
        )
        .await;

        assert_eq!(output.termination, Termination::TimedOut);
        assert!(output.duration >= Duration::from_secs(2));
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn a_group_that_ignores_sigterm_is_killed_after_the_grace_period() {
        let limits = Limits {
            timeout: Duration::from_secs(1),
            kill_grace: Duration::from_secs(2),
            ..limits(Duration::ZERO)
        };
        let (output, _) =
            run_collecting(&sh("trap '' TERM; sleep 1000 & sleep 1000"), &limits).await;

        assert_eq!(output.termination, Termination::TimedOut);
        assert!(
            output.duration >= Duration::from_secs(3),
            "took {:?}",
            output.duration
        );
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn a_group_that_obeys_sigterm_does_not_wait_for_the_grace_period() {
        let limits = Limits {
            timeout: Duration::from_millis(500),
            kill_grace: Duration::from_secs(60),
            ..limits(Duration::ZERO)
        };
        let (output, _) = run_collecting(&sh("sleep 1000 & sleep 1000"), &limits).await;

        assert_eq!(output.termination, Termination::TimedOut);
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn cancelling_kills_the_whole_group() {
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            sleep(Duration::from_millis(300)).await;
            trigger.cancel();
        });
        let (output, _) = run_cancellable(
            &sh("sleep 1000 & sleep 1000"),
            &limits(Duration::from_secs(600)),
            &cancel,
        )
        .await;

        assert_eq!(output.termination, Termination::Cancelled);
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn dropping_the_future_kills_the_whole_group() {
        let spec = sh("echo $$; sleep 1000 & sleep 1000");
        let limits = limits(Duration::from_secs(600));
        let cancel = CancellationToken::new();
        let mut pgid = None;
        let mut on_line = |_: Stream, line: &str| {
            pgid.get_or_insert_with(|| line.parse::<i32>().expect("sh prints its pid"));
        };

        let dropped = tokio::time::timeout(
            Duration::from_secs(3),
            run(&spec, &limits, &cancel, &mut on_line),
        )
        .await;

        assert!(dropped.is_err(), "the run should still have been going");
        assert_group_gone(pgid.expect("the child printed its pid")).await;
    }

    #[tokio::test]
    async fn a_grandchild_holding_stdout_after_a_normal_exit_is_killed() {
        let (output, lines) = run_collecting(
            &sh("sleep 1000 & echo done"),
            &limits(Duration::from_secs(600)),
        )
        .await;

        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(lines.stdout, ["done"]);
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn a_daemon_left_behind_by_a_normal_exit_is_killed_and_does_not_hold_the_run_open() {
        let (output, lines) = run_collecting(
            &sh("setsid sleep 60 & echo $!"),
            &limits(Duration::from_secs(600)),
        )
        .await;
        let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

        assert_eq!(output.termination, Termination::Exited(0));
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_process_gone(escaped).await;
    }

    #[tokio::test]
    async fn a_setsid_grandchild_that_ignores_sigterm_dies_at_the_timeout() {
        let script = "setsid sh -c 'trap \"\" TERM; exec sleep 1000' & echo $!; sleep 1000";
        let limits = Limits {
            timeout: Duration::from_secs(1),
            kill_grace: Duration::from_secs(1),
            ..limits(Duration::ZERO)
        };
        let (output, lines) = run_collecting(&sh(script), &limits).await;
        let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

        assert_eq!(output.termination, Termination::TimedOut);
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
        assert_process_gone(escaped).await;
        assert_group_gone(pgid_of(&output)).await;
    }

    #[tokio::test]
    async fn an_orphan_in_a_session_of_its_own_dies_when_the_run_is_cancelled() {
        // The middle shell exits at once, so the setsid grandchild is reparented and only the
        // run's tag in its environment still ties it to the run.
        let middle = "setsid sh -c 'trap \"\" TERM; exec sleep 1000' & echo $!";
        let spec = spec("sh", &["-c", "sh -c \"$0\"; sleep 1000", middle]);
        let cancel = CancellationToken::new();
        let trigger = cancel.clone();
        tokio::spawn(async move {
            sleep(Duration::from_millis(500)).await;
            trigger.cancel();
        });
        let (output, lines) =
            run_cancellable(&spec, &limits(Duration::from_secs(600)), &cancel).await;
        let escaped: i32 = lines.stdout[0].parse().expect("sh prints the pid");

        assert_eq!(output.termination, Termination::Cancelled);
        assert_process_gone(escaped).await;
    }

    #[tokio::test]
    async fn every_child_carries_the_run_tag() {
        let (first, lines) = run_collecting(&spec("env", &[]), &limits(GENEROUS)).await;
        let (_, again) = run_collecting(&spec("env", &[]), &limits(GENEROUS)).await;
        let tag = |lines: &Lines| {
            lines
                .stdout
                .iter()
                .find_map(|line| {
                    line.strip_prefix(&format!("{RUN_TAG_VAR}="))
                        .map(str::to_owned)
                })
                .expect("the tag is in the environment")
        };

        assert_eq!(first.termination, Termination::Exited(0));
        assert_ne!(tag(&lines), tag(&again), "each run has its own tag");
    }

    // --- termination ---

    #[tokio::test]
    async fn exit_codes_are_reported_exactly() {
        let limits = limits(Duration::from_secs(600));
        let (ok, _) = run_collecting(&spec("true", &[]), &limits).await;
        let (three, _) = run_collecting(&sh("exit 3"), &limits).await;

        assert_eq!(ok.termination, Termination::Exited(0));
        assert!(ok.termination.success());
        assert_eq!(three.termination, Termination::Exited(3));
        assert!(!three.termination.success());
    }

    #[tokio::test]
    async fn a_signal_not_from_us_is_reported_as_signaled() {
        let (output, _) =
            run_collecting(&sh("kill -KILL $$"), &limits(Duration::from_secs(600))).await;

        assert_eq!(output.termination, Termination::Signaled(9));
    }

    #[tokio::test]
    async fn a_missing_program_is_not_found() {
        let spec = spec("drydock-no-such-program-xyz", &[]);
        let error = run(
            &spec,
            &limits(GENEROUS),
            &CancellationToken::new(),
            &mut |_, _| {},
        )
        .await
        .unwrap_err();

        assert!(
            matches!(&error, RunError::NotFound { program } if program == "drydock-no-such-program-xyz")
        );
        assert_eq!(
            error.to_string(),
            "`drydock-no-such-program-xyz` was not found on PATH"
        );
    }

    #[tokio::test]
    async fn a_missing_working_directory_is_a_spawn_error() {
        let spec = CommandSpec::new("true", [""; 0], "/nonexistent/drydock/dir");
        let error = run(
            &spec,
            &limits(GENEROUS),
            &CancellationToken::new(),
            &mut |_, _| {},
        )
        .await
        .unwrap_err();

        assert!(matches!(error, RunError::Spawn { .. }), "{error:?}");
        assert!(
            error.to_string().contains("/nonexistent/drydock/dir"),
            "{error}"
        );
    }

    #[test]
    fn the_run_future_is_send() {
        fn assert_send(_: impl Send) {}
        let spec = spec("true", &[]);
        let limits = limits(GENEROUS);
        let cancel = CancellationToken::new();
        assert_send(run(&spec, &limits, &cancel, &mut |_, _| {}));
    }

    // --- lines ---

    #[tokio::test]
    async fn lines_arrive_in_order_per_stream_with_the_partial_last_line() {
        let script = "echo out1; echo err1 >&2; echo out2; echo err2 >&2; printf partial";
        let (output, lines) = run_collecting(&sh(script), &limits(Duration::from_secs(600))).await;

        assert_eq!(lines.stdout, ["out1", "out2", "partial"]);
        assert_eq!(lines.stderr, ["err1", "err2"]);
        assert_eq!(output.stdout.text, "out1\nout2\npartial");
        assert_eq!(output.stderr.text, "err1\nerr2\n");
    }

    #[tokio::test]
    async fn many_lines_all_arrive_in_order() {
        let (output, lines) = run_collecting(
            &spec("seq", &["1", "200000"]),
            &limits(Duration::from_secs(600)),
        )
        .await;

        let expected: Vec<String> = (1..=200_000).map(|n| n.to_string()).collect();
        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(lines.stdout, expected);
    }

    #[tokio::test]
    async fn crlf_line_endings_are_stripped() {
        let (_, lines) =
            run_collecting(&spec("printf", &["a\\r\\nb\\r\\nc\\r"]), &limits(GENEROUS)).await;

        assert_eq!(lines.stdout, ["a", "b", "c"]);
    }

    #[tokio::test]
    async fn invalid_utf8_is_converted_lossily() {
        let (output, lines) =
            run_collecting(&spec("printf", &["ok\\377\\376x\\n"]), &limits(GENEROUS)).await;

        assert_eq!(lines.stdout, ["ok\u{FFFD}\u{FFFD}x"]);
        assert_eq!(output.stdout.text, "ok\u{FFFD}\u{FFFD}x\n");
        assert_eq!(output.stdout.total_bytes, 6);
    }

    #[tokio::test]
    async fn a_huge_line_is_delivered_truncated_and_reading_goes_on() {
        let script = "head -c 3000000 /dev/zero | tr '\\0' a; echo; echo after";
        let (output, lines) = run_collecting(&sh(script), &limits(Duration::from_secs(600))).await;

        let truncated = format!(
            "{}[... {} bytes elided ...]",
            "a".repeat(MAX_LINE_BYTES),
            3_000_000 - MAX_LINE_BYTES
        );
        assert_eq!(lines.stdout.len(), 2);
        assert!(
            lines.stdout[0] == truncated,
            "the long line was not cut as expected"
        );
        assert_eq!(lines.stdout[1], "after");
        assert_eq!(
            output.stdout.total_bytes,
            3_000_000 + "\nafter\n".len() as u64
        );
    }

    // --- capture ---

    #[tokio::test]
    async fn output_over_the_cap_keeps_head_and_tail_with_an_exact_marker() {
        let limits = Limits {
            output_cap: 100,
            ..limits(Duration::from_secs(600))
        };
        let (output, lines) = run_collecting(&spec("seq", &["1", "1000"]), &limits).await;

        let full: String = (1..=1000).map(|n| format!("{n}\n")).collect();
        // A newline costs two bytes as JSON: 49 and 50 of the 50 bytes each half may take.
        let head = "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15";
        let tail = "91\n992\n993\n994\n995\n996\n997\n998\n999\n1000\n";
        let elided = full.len() - head.len() - tail.len();
        let expected = format!("{head}\n[... {elided} bytes elided ...]\n{tail}");
        assert_eq!(output.stdout.text, expected);
        assert_eq!(output.stdout.total_bytes, full.len() as u64);
        assert_eq!(output.stdout.elided_bytes, elided as u64);
        assert_eq!(lines.stdout.len(), 1000, "lines are not capped");
    }

    #[tokio::test]
    async fn output_under_the_cap_is_kept_whole() {
        let (output, _) = run_collecting(&spec("seq", &["1", "10"]), &limits(GENEROUS)).await;

        assert_eq!(output.stdout.text, "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n");
        assert_eq!(output.stdout.total_bytes, 21);
        assert_eq!(output.stdout.elided_bytes, 0);
        assert_eq!(
            output.stderr,
            CapturedOutput {
                text: String::new(),
                total_bytes: 0,
                elided_bytes: 0
            }
        );
    }

    /// Peak memory is a whole-process figure: measured in a test process of its own, so the
    /// other tests running alongside do not count.
    #[tokio::test]
    async fn two_hundred_megabytes_are_counted_exactly_in_bounded_memory() {
        const ALONE: &str = "DRYDOCK_TEST_ALONE";
        if std::env::var_os(ALONE).is_none() {
            let status = std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "process::tests::two_hundred_megabytes_are_counted_exactly_in_bounded_memory",
                    "--test-threads=1",
                ])
                .env(ALONE, "1")
                .status()
                .unwrap();
            assert!(status.success(), "the measuring test process failed");
            return;
        }
        let cap = 1024 * 1024;
        let limits = Limits {
            output_cap: cap,
            ..limits(Duration::from_secs(600))
        };
        let total = 200_000_000u64;
        let (output, lines) = run_collecting(
            &spec("head", &["-c", &total.to_string(), "/dev/zero"]),
            &limits,
        )
        .await;

        // A NUL byte costs six bytes as JSON.
        let half = "\0".repeat(cap / 2 / 6);
        let elided = total - 2 * half.len() as u64;
        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(output.stdout.total_bytes, total);
        assert_eq!(output.stdout.elided_bytes, elided);
        assert!(output.stdout.text == format!("{half}\n[... {elided} bytes elided ...]\n{half}"));
        assert_eq!(lines.stdout.len(), 1);
        assert!(lines.stdout[0].len() < MAX_LINE_BYTES + 100);
        assert!(
            peak_memory_bytes() < 150_000_000,
            "peak memory {}",
            peak_memory_bytes()
        );
    }

    /// The process's peak resident set size.
    fn peak_memory_bytes() -> u64 {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let line = status.lines().find(|l| l.starts_with("VmHWM:")).unwrap();
        let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kib * 1024
    }

    #[test]
    fn the_cut_does_not_split_utf8_characters() {
        let mut capture = Capture::new(5);
        capture.push("aéééé".as_bytes());

        let output = capture.finish();
        assert_eq!(output.text, "a\n[... 6 bytes elided ...]\né");
        assert_eq!(output.total_bytes, 9);
        assert_eq!(output.elided_bytes, 6);
    }

    #[test]
    fn the_tail_follows_many_small_pushes() {
        let mut capture = Capture::new(4);
        for byte in b"0123456789" {
            capture.push(&[*byte]);
        }

        let output = capture.finish();
        assert_eq!(output.text, "01\n[... 6 bytes elided ...]\n89");
        assert!(capture_tail_bounded(4));
    }

    fn capture_tail_bounded(cap: usize) -> bool {
        let mut capture = Capture::new(cap);
        (0..10_000).all(|_| {
            capture.push(b"xyz");
            capture.tail.len() <= 2 * cap
        })
    }

    #[test]
    fn a_zero_cap_keeps_only_the_marker() {
        let mut capture = Capture::new(0);
        capture.push(b"hello");

        let output = capture.finish();
        assert_eq!(output.text, "\n[... 5 bytes elided ...]\n");
        assert_eq!(output.elided_bytes, 5);
    }

    #[test]
    fn lines_split_across_chunks_are_joined() {
        let mut splitter = LineSplitter::new(100);
        let mut lines = Vec::new();
        for chunk in [&b"ab"[..], b"c\nd", b"e\r", b"\n", b"\nlast"] {
            splitter.feed(chunk, &mut |line| lines.push(line.to_owned()));
        }
        splitter.finish(&mut |line| lines.push(line.to_owned()));

        assert_eq!(lines, ["abc", "de", "", "last"]);
    }

    #[test]
    fn long_lines_are_cut_on_a_character_boundary() {
        let mut splitter = LineSplitter::new(4);
        let mut lines = Vec::new();
        splitter.feed("abcé-rest\nok\n".as_bytes(), &mut |line| {
            lines.push(line.to_owned())
        });

        assert_eq!(lines, ["abc[... 7 bytes elided ...]", "ok"]);
    }

    // --- stdin and environment ---

    #[tokio::test]
    async fn stdin_bytes_are_delivered_and_closed() {
        let spec = CommandSpec {
            stdin: Some(b"hello\nworld".to_vec()),
            ..spec("cat", &[])
        };
        let (output, lines) = run_collecting(&spec, &limits(Duration::from_secs(600))).await;

        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(output.stdout.text, "hello\nworld");
        assert_eq!(lines.stdout, ["hello", "world"]);
    }

    #[tokio::test]
    async fn stdin_is_written_while_output_is_read() {
        let size = 5_000_000;
        let spec = CommandSpec {
            stdin: Some(vec![b'x'; size]),
            ..spec("cat", &[])
        };
        let (output, _) = run_collecting(&spec, &limits(Duration::from_secs(120))).await;

        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(output.stdout.total_bytes, size as u64);
    }

    #[tokio::test]
    async fn a_child_that_never_reads_stdin_does_not_block_the_timeout() {
        let spec = CommandSpec {
            stdin: Some(vec![b'x'; 10_000_000]),
            ..spec("sleep", &["1000"])
        };
        let (output, _) = run_collecting(&spec, &limits(Duration::from_secs(1))).await;

        assert_eq!(output.termination, Termination::TimedOut);
        assert!(output.duration < GENEROUS, "took {:?}", output.duration);
    }

    #[tokio::test]
    async fn without_stdin_the_child_reads_end_of_file() {
        let (output, _) =
            run_collecting(&spec("cat", &[]), &limits(Duration::from_secs(600))).await;

        assert_eq!(output.termination, Termination::Exited(0));
        assert_eq!(output.stdout.total_bytes, 0);
    }

    #[tokio::test]
    async fn the_environment_is_inherited_minus_removed_plus_set() {
        let inherited = std::env::vars()
            .find(|(name, value)| name != "PATH" && !value.contains('\n'))
            .map(|(name, value)| format!("{name}={value}"));
        let spec = CommandSpec {
            env_set: vec![
                ("DRYDOCK_SET".into(), "hello".into()),
                ("DRYDOCK_BOTH".into(), "set wins".into()),
            ],
            env_remove: vec!["PATH".into(), "DRYDOCK_BOTH".into()],
            ..spec("/usr/bin/env", &[])
        };
        let (_, lines) = run_collecting(&spec, &limits(GENEROUS)).await;

        assert!(lines.stdout.contains(&"DRYDOCK_SET=hello".to_owned()));
        assert!(lines.stdout.contains(&"DRYDOCK_BOTH=set wins".to_owned()));
        assert!(!lines.stdout.iter().any(|line| line.starts_with("PATH=")));
        if let Some(inherited) = inherited {
            assert!(
                lines.stdout.contains(&inherited),
                "{inherited} not inherited"
            );
        }
    }
}
