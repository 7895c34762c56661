//! Hands a terminal's output to its [`TerminalCore`] on a thread of its own.
//!
//! The program's output is read as fast as it comes (a PTY's reader thread, tmux's control
//! client) while the core parses it: during a flood, what arrives while one batch is parsed
//! gathers into the next, and large batches are what lets the screen count lines that
//! scroll away unseen instead of laying each one out (`Screen::feed`). At most
//! [`MAX_PENDING`] bytes wait; a producer with more waits too, so a program printing faster
//! than drydock parses is slowed down rather than buffered without bound.

use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use super::core::TerminalCore;

/// Bytes waiting for the core at most, before a producer waits.
pub(super) const MAX_PENDING: usize = 4 * 1024 * 1024;

pub(super) struct Pump {
    shared: Arc<Shared>,
    feeder: Option<JoinHandle<()>>,
}

#[derive(Default)]
struct Shared {
    pending: Mutex<Pending>,
    /// Bytes arrived or the pump closed (for the feeder); bytes were taken (for producers).
    changed: Condvar,
}

#[derive(Default)]
struct Pending {
    bytes: Vec<u8>,
    closed: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn wait<'a>(&self, guard: MutexGuard<'a, Pending>) -> MutexGuard<'a, Pending> {
        self.changed
            .wait(guard)
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl Pump {
    /// Starts the thread (named `name`) that feeds `core`.
    pub(super) fn start(core: Arc<TerminalCore>, name: String) -> io::Result<Pump> {
        let shared = Arc::new(Shared::default());
        let feeder_shared = shared.clone();
        let feeder = std::thread::Builder::new()
            .name(name)
            .spawn(move || feed_until_closed(&feeder_shared, &core))?;
        Ok(Pump {
            shared,
            feeder: Some(feeder),
        })
    }

    /// Queues output for the core, after waiting while [`MAX_PENDING`] bytes are waiting.
    pub(super) fn push(&self, bytes: &[u8]) {
        let mut pending = self.shared.lock();
        while pending.bytes.len() >= MAX_PENDING && !pending.closed {
            pending = self.shared.wait(pending);
        }
        pending.bytes.extend_from_slice(bytes);
        self.shared.changed.notify_all();
    }

    /// Returns once every byte pushed is in the core, and the feeder has stopped.
    pub(super) fn finish(mut self) {
        self.close();
        if let Some(feeder) = self.feeder.take() {
            let _ = feeder.join();
        }
    }

    fn close(&self) {
        self.shared.lock().closed = true;
        self.shared.changed.notify_all();
    }
}

impl Drop for Pump {
    /// The feeder still feeds what is pending, then stops; nothing waits for it.
    fn drop(&mut self) {
        self.close();
    }
}

fn feed_until_closed(shared: &Shared, core: &TerminalCore) {
    let mut batch = Vec::new();
    loop {
        {
            let mut pending = shared.lock();
            while pending.bytes.is_empty() && !pending.closed {
                pending = shared.wait(pending);
            }
            if pending.bytes.is_empty() {
                return;
            }
            std::mem::swap(&mut batch, &mut pending.bytes);
            shared.changed.notify_all();
        }
        core.feed(&batch);
        batch.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_reaches_the_core_in_order() {
        let core = TerminalCore::new(5, 40, 100_000);
        let pump = Pump::start(core.clone(), "test-feeder".into()).unwrap();
        let producer = std::thread::spawn(move || {
            for n in 0..50_000 {
                pump.push(format!("line {n}\r\n").as_bytes());
            }
            pump.finish();
        });
        producer.join().unwrap();
        let lines = core.lines(0, usize::MAX);
        assert_eq!(lines.total, 50_000);
        assert_eq!(lines.lines[0], "line 0");
        assert_eq!(lines.lines[49_999], "line 49999");
    }

    #[test]
    fn a_producer_waits_while_too_much_is_pending() {
        let shared = Arc::new(Shared::default());
        let pump = Pump {
            shared: shared.clone(),
            feeder: None,
        };
        pump.push(&vec![b'x'; MAX_PENDING]);
        let blocked = std::thread::spawn(move || pump.push(b"more"));
        std::thread::sleep(std::time::Duration::from_millis(100));
        assert!(!blocked.is_finished(), "the second push waits for room");
        shared.lock().bytes.clear();
        shared.changed.notify_all();
        blocked.join().unwrap();
        assert_eq!(shared.lock().bytes, b"more");
    }
}
