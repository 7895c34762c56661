//! A PostgreSQL connection on a thread of its own. The store's calls are synchronous (short
//! transactions, like SQLite's) and the `postgres` client may not block inside tokio's
//! runtime, so each call is run on this thread and waited for. A broken connection is
//! dropped and made again on the next call: a database that went away fails the calls made
//! meanwhile (as `Unavailable`), and the first call after it is back works.
//!
//! The listener is a second connection that waits for `NOTIFY` on the queue's channel and
//! calls back; it reconnects with a capped backoff and calls back once after each
//! (re)connection, since notifications sent while it was away are gone.

use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use ::postgres::fallible_iterator::FallibleIterator;
use ::postgres::{Client, Config, NoTls};

use super::StoreError;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a call waits for its answer (a statement is cut at `STATEMENT_TIMEOUT` first).
const CALL_LIMIT: Duration = Duration::from_secs(30);
/// Nothing drydock runs takes long; a transaction left open never pins the database's
/// clean-up (VACUUM) for long either.
const SESSION_OPTIONS: &str =
    "-c statement_timeout=15000 -c idle_in_transaction_session_timeout=20000";

type Job = Box<dyn FnOnce(&mut Slot) + Send>;

/// The connection the thread holds, made when a call needs one.
struct Slot {
    config: Config,
    client: Option<Client>,
}

/// Calls into one connection on its own thread.
pub struct PgLink {
    jobs: Mutex<mpsc::Sender<Job>>,
    /// The URL without its password, for messages.
    shown: String,
}

impl PgLink {
    /// Starts the connection's thread and connects once, so a wrong URL is an error now.
    pub fn connect(url: &str, shown: &str) -> Result<PgLink, StoreError> {
        let config = config_of(url, shown)?;
        let (jobs, inbox) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("drydock-postgres".into())
            .spawn(move || {
                let mut slot = Slot {
                    config,
                    client: None,
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
    pub fn run<T: Send + 'static>(
        &self,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let shown = self.shown.clone();
        let (answer, reply) = mpsc::sync_channel(1);
        let job: Job = Box::new(move |slot: &mut Slot| {
            let _ = answer.send(slot.call(&shown, work));
        });
        let unavailable = |message: &str| StoreError::Unavailable {
            path: self.shown.clone(),
            message: message.to_string(),
        };
        self.jobs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .send(job)
            .map_err(|_| unavailable("its connection's thread ended"))?;
        reply
            .recv_timeout(CALL_LIMIT)
            .map_err(|_| unavailable("no answer within 30 s"))?
    }
}

impl Slot {
    fn call<T>(
        &mut self,
        shown: &str,
        work: impl FnOnce(&mut Client) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        if self.client.as_ref().is_none_or(Client::is_closed) {
            self.client = None;
            let client = self.config.connect(NoTls).map_err(|e| error_of(shown, e))?;
            self.client = Some(client);
        }
        let client = self.client.as_mut().expect("connected above");
        let result = work(client);
        if client.is_closed() {
            self.client = None;
            if let Err(StoreError::Sql { path, message }) = result {
                return Err(StoreError::Unavailable { path, message });
            }
        }
        result
    }
}

/// Waits for notifications on `channel` at `url` on a thread of its own, calling `wake` for
/// each and once after every (re)connection, until `stop` is set.
pub fn listen(
    url: &str,
    shown: &str,
    channel: &'static str,
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
                match listen_once(&config, channel, &wake, &stop) {
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
        .keepalives_idle(Duration::from_secs(30))
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
