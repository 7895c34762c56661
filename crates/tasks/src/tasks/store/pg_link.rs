//! A PostgreSQL connection on a thread of its own. The store's calls are synchronous (short
//! transactions, like SQLite's) and the `postgres` client may not block inside tokio's
//! runtime, so each call is run on this thread and waited for, up to the queue's call
//! deadline: a call whose caller stopped waiting before its turn came is never run (its
//! caller was told it failed). A broken connection is dropped and made again on the next
//! call: a database that went away fails the calls made meanwhile (as `Unavailable`), and
//! the first call after it is back works. The server cuts a statement (and a transaction left
//! idle) before the caller's deadline, so a call that waited on a lock fails for sure instead
//! of committing after its caller gave up; keepalives find a peer that vanished.
//!
//! The listener is a second connection that waits for `NOTIFY` on the queue's channel and
//! calls back; it reconnects with a capped backoff and calls back once after each
//! (re)connection, since notifications sent while it was away are gone.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::{Client, Config, NoTls};

use super::StoreError;
use super::handle::CALL_DEADLINE;

/// How long a connection attempt may take.
/// The channel hosts listen on: a task was queued, ended or changed, or the settings did.
pub(super) const CHANNEL: &str = "drydock_queue";

const CONNECT_TIMEOUT: Duration = Duration::from_secs(4);
/// Nothing drydock runs takes long: a statement (a lock waited for included) is cut within
/// the caller's deadline, and a transaction left open never pins the database's clean-up
/// (VACUUM) for long either.
const SESSION_OPTIONS: &str =
    "-c statement_timeout=4000 -c lock_timeout=4000 -c idle_in_transaction_session_timeout=10000";

type Job = Box<dyn FnOnce(&mut Slot) + Send>;

/// The connection the thread holds, made when a call needs one.
struct Slot {
    config: Config,
    client: Option<Client>,
    /// After a failed connection: no new attempt before then, and the error calls meanwhile
    /// get (a database that is down is not asked again by every call).
    retry: Option<(Instant, StoreError)>,
    backoff: Duration,
}

/// The first wait before connecting again after a failure; it doubles up to `MOST_BACKOFF`.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
const MOST_BACKOFF: Duration = Duration::from_secs(2);

/// Calls into one connection on its own thread.
pub(super) struct PgLink {
    jobs: Mutex<mpsc::Sender<Job>>,
    /// The URL without its password, for messages.
    shown: String,
}

impl PgLink {
    /// Starts the connection's thread and connects once, so a wrong URL is an error now.
    pub(super) fn connect(url: &str, shown: &str) -> Result<PgLink, StoreError> {
        let config = config_of(url, shown)?;
        let (jobs, inbox) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("drydock-postgres".into())
            .spawn(move || {
                let mut slot = Slot {
                    config,
                    client: None,
                    retry: None,
                    backoff: FIRST_BACKOFF,
                };
                for job in inbox {
                    job(&mut slot);
                }
            })
            .map_err(|e| StoreError::Open {
                path: shown.to_string(),
                message: e.to_string(),
            })?;
        let link = PgLink {
            jobs: Mutex::new(jobs),
            shown: shown.to_string(),
        };
        link.run(|_| Ok(()))?;
        Ok(link)
    }

    /// Runs `work` on the connection (connecting first if it has none) and returns what it
    /// returned. Errors of the connection itself are `Unavailable`, and drop it.
    pub(super) fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.run_within(CALL_DEADLINE, work)
    }

    /// [`Self::run`] for a call that may take up to `limit` (a whole queue imported).
    pub(super) fn run_within<T: Send + 'static>(
        &self,
        limit: Duration,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let shown = self.shown.clone();
        let deadline = Instant::now() + limit;
        let (answer, reply) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |slot: &mut Slot| {
            // Its caller gave up while the calls before it waited: it must not happen now.
            if Instant::now() >= deadline {
                return;
            }
            let _ = answer.send(slot.call(&shown, work));
        });
        let gone = StoreError::Unavailable {
            path: self.shown.clone(),
            message: "its connection's thread ended".into(),
        };
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .map_err(|_| gone)?;
        reply
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| StoreError::NotAnswering {
                path: self.shown.clone(),
                waited_s: limit.as_secs_f64(),
            })?
    }
}

impl Slot {
    fn call<T>(
        &mut self,
        shown: &str,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let client = match self.client.take().filter(|c| !c.is_closed()) {
            Some(client) => self.client.insert(client),
            None => self.connect(shown)?,
        };
        let result = work(client);
        if client.is_closed() {
            self.client = None;
            if let Err(StoreError::Sql { path, message }) = result {
                return Err(StoreError::Unavailable { path, message });
            }
        }
        result
    }

    /// A new connection, unless the last attempt failed too recently.
    fn connect(&mut self, shown: &str) -> Result<&mut Client, StoreError> {
        if let Some((at, error)) = &self.retry
            && Instant::now() < *at
        {
            return Err(error.clone());
        }
        match self.config.connect(NoTls) {
            Ok(client) => {
                self.retry = None;
                self.backoff = FIRST_BACKOFF;
                Ok(self.client.insert(client))
            }
            Err(error) => {
                let error = error_of(shown, error);
                self.retry = Some((Instant::now() + self.backoff, error.clone()));
                self.backoff = (self.backoff * 2).min(MOST_BACKOFF);
                Err(error)
            }
        }
    }
}

/// Waits for the queue's change notifications ([`CHANNEL`]) at `url` on a thread of its own,
/// calling `wake` for each and once after every (re)connection, until `stop` is set.
pub fn listen(
    url: &str,
    shown: &str,
    wake: impl Fn() + Send + 'static,
    stop: Arc<AtomicBool>,
) -> Result<(), StoreError> {
    let config = config_of(url, shown)?;
    let shown = shown.to_string();
    std::thread::Builder::new()
        .name("drydock-listen".into())
        .spawn(move || {
            let mut backoff = Duration::from_millis(100);
            while !stop.load(Ordering::Relaxed) {
                match listen_once(&config, CHANNEL, &wake, &stop) {
                    Ok(()) => return,
                    Err(error) => {
                        tracing::debug!("listening on {shown}: {error}; again in {backoff:?}");
                        std::thread::sleep(backoff);
                        backoff = (backoff * 2).min(Duration::from_secs(5));
                    }
                }
            }
        })
        .map_err(|e| StoreError::Open {
            path: shown_of(url),
            message: e.to_string(),
        })?;
    Ok(())
}

fn listen_once(
    config: &Config,
    channel: &str,
    wake: &impl Fn(),
    stop: &AtomicBool,
) -> Result<(), ::postgres::Error> {
    let mut client = config.connect(NoTls)?;
    client.batch_execute(&format!("LISTEN {channel}"))?;
    wake();
    while !stop.load(Ordering::Relaxed) {
        let first = client
            .notifications()
            .timeout_iter(Duration::from_secs(1))
            .next()?;
        if first.is_some() {
            // Those already here with it are the same wake-up.
            client.notifications().iter().count()?;
            wake();
        }
        if client.is_closed() {
            client.check_connection()?;
        }
    }
    Ok(())
}

fn config_of(url: &str, shown: &str) -> Result<Config, StoreError> {
    let mut config = Config::from_str(url).map_err(|e| StoreError::Open {
        path: shown.to_string(),
        message: format!("not a PostgreSQL URL drydock can use: {e}"),
    })?;
    config
        .connect_timeout(CONNECT_TIMEOUT)
        .keepalives(true)
        .keepalives_idle(Duration::from_secs(10))
        .keepalives_interval(Duration::from_secs(5))
        .keepalives_retries(3)
        .options(SESSION_OPTIONS)
        .application_name("drydock");
    Ok(config)
}

fn shown_of(url: &str) -> String {
    super::postgres::redacted(url)
}

/// `error`, met on the database `shown`: the server's own refusals are `Sql`; no connection,
/// a connection cut or a server shutting down or starting is `Unavailable`.
pub(super) fn error_of(shown: &str, error: ::postgres::Error) -> StoreError {
    let path = shown.to_string();
    match error.as_db_error() {
        // Class 08 (connection exceptions) and 57 (the server shutting down or still
        // starting: "the database system is not yet accepting connections") pass.
        Some(db) if ["08", "57"].contains(&&db.code().code()[..2]) => StoreError::Unavailable {
            path,
            message: db.message().to_string(),
        },
        Some(db) => StoreError::Sql {
            path,
            message: db.message().to_string(),
        },
        None => StoreError::Unavailable {
            path,
            message: error.to_string(),
        },
    }
}
