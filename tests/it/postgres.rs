//! A throwaway PostgreSQL for the tests, like their tmux servers: Debian's server binaries
//! (`/usr/lib/postgresql/N/bin`), a cluster made by `initdb` in a temporary directory and
//! started on a free port of 127.0.0.1 (no socket file), as `nobody` when the tests run as
//! root (PostgreSQL refuses root), `fsync` off. Stopped (immediately) on drop; `restart`
//! stops it and starts it again on the same port, as an administrator's restart would;
//! `pause` stops every process of it (SIGSTOP) until `resume`.

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

pub struct Postgres {
    dir: tempfile::TempDir,
    bin: PathBuf,
    pub port: u16,
    server: Option<Child>,
}

impl Postgres {
    /// A new cluster, running.
    pub fn start() -> Postgres {
        let bin = server_bin();
        let dir = tempfile::tempdir().unwrap();
        let mut postgres = Postgres {
            port: free_port(),
            bin,
            dir,
            server: None,
        };
        let data = postgres.data();
        std::fs::create_dir(&data).unwrap();
        postgres.give_to_server_user();
        let initdb = postgres
            .as_server_user(&postgres.bin.join("initdb"))
            .args(["-D", data.to_str().unwrap()])
            .args([
                "-U",
                "drydock",
                "-A",
                "trust",
                "-N",
                "--no-locale",
                "-E",
                "UTF8",
            ])
            .output()
            .expect("initdb runs");
        assert!(
            initdb.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&initdb.stderr)
        );
        postgres.run();
        postgres
    }

    /// `postgres://drydock@127.0.0.1:PORT/NAME`.
    pub fn url(&self, database: &str) -> String {
        format!("postgres://drydock@127.0.0.1:{}/{database}", self.port)
    }

    /// A new, empty database; its URL.
    pub fn database(&self, name: &str) -> String {
        self.psql(&format!("CREATE DATABASE {name}"));
        self.url(name)
    }

    /// Runs `sql` in database `postgres`; what it printed (unaligned, tuples only).
    pub fn psql(&self, sql: &str) -> String {
        self.psql_in("postgres", sql)
    }

    pub fn psql_in(&self, database: &str, sql: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args(["-X", "-A", "-t", "-v", "ON_ERROR_STOP=1"])
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "drydock", "-d", database, "-c", sql])
            .output()
            .expect("psql runs");
        assert!(
            output.status.success(),
            "psql {sql:?}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Stops the server at once (every connection cut), runs `meanwhile`, and starts it
    /// again on the same port once it was down for `down`.
    pub fn restart_with<T>(&mut self, down: Duration, meanwhile: impl FnOnce() -> T) -> T {
        self.stop();
        let stopped = Instant::now();
        let value = meanwhile();
        std::thread::sleep(down.saturating_sub(stopped.elapsed()));
        self.run();
        value
    }

    /// Stops every process of the server (SIGSTOP, the postmaster first so it starts no
    /// other): connections stay open and nothing answers, as a long lock, a failover or a
    /// network partition looks from outside. [`Postgres::resume`] lets them go on.
    pub fn pause(&self) {
        self.signal_all(Signal::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal_all(Signal::SIGCONT);
    }

    /// `signal` to the server and every process below it (one that ended meanwhile, a
    /// backend whose client left, is passed over).
    fn signal_all(&self, signal: Signal) {
        let Some(server) = &self.server else { return };
        let mut pids = vec![server.id()];
        pids.extend(descendants(server.id()));
        for pid in pids {
            match kill(Pid::from_raw(pid as i32), signal) {
                Ok(()) | Err(Errno::ESRCH) => {}
                Err(error) => panic!("{signal} to {pid}: {error}"),
            }
        }
    }

    fn run(&mut self) {
        let data = self.data();
        let log = std::fs::File::create(self.dir.path().join("server.log")).unwrap();
        let child = self
            .as_server_user(&self.bin.join("postgres"))
            .args(["-D", data.to_str().unwrap(), "-p", &self.port.to_string()])
            .args([
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "unix_socket_directories=",
            ])
            .args(["-c", "fsync=off", "-c", "max_connections=200"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("postgres starts");
        self.server = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.ready() {
            assert!(
                Instant::now() < deadline,
                "PostgreSQL did not start: {}",
                std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn ready(&self) -> bool {
        Command::new(self.bin.join("pg_isready"))
            .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string()])
            .status()
            .is_ok_and(|status| status.success())
    }

    /// Immediate shutdown (SIGQUIT): connections are cut, as when a server goes away.
    fn stop(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = Command::new("kill")
                .args(["-QUIT", &server.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while server.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = server.kill();
            let _ = server.wait();
        }
    }

    fn data(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// PostgreSQL runs as `nobody` when the tests run as root: it owns the cluster.
    fn give_to_server_user(&self) {
        if is_root() {
            let chown = Command::new("chown")
                .args(["-R", "nobody:nogroup"])
                .arg(self.dir.path())
                .status()
                .unwrap();
            assert!(chown.success());
        }
    }

    fn as_server_user(&self, program: &std::path::Path) -> Command {
        match is_root() {
            true => {
                let mut command = Command::new("setpriv");
                command
                    .args(["--reuid=nobody", "--regid=nogroup", "--clear-groups"])
                    .arg(program);
                command
            }
            false => Command::new(program),
        }
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        self.resume();
        self.stop();
    }
}

/// The processes below `pid`, its children first.
fn descendants(pid: u32) -> Vec<u32> {
    let parents: Vec<(u32, u32)> = std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let child: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // The parent is the second field after the command, which is in parentheses.
            let after = &stat[stat.rfind(')')? + 2..];
            let parent = after.split(' ').nth(1)?.parse().ok()?;
            Some((child, parent))
        })
        .collect();
    let mut found = Vec::new();
    let mut frontier = vec![pid];
    while let Some(next) = frontier.pop() {
        for (child, _) in parents.iter().filter(|(_, parent)| *parent == next) {
            found.push(*child);
            frontier.push(*child);
        }
    }
    found
}

/// The newest installed server's binaries.
fn server_bin() -> PathBuf {
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/ensure-deps.sh installs Debian's postgresql)")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| bin.join("initdb").exists())
        .collect();
    versions.sort();
    versions
        .pop()
        .map(|(_, bin)| bin)
        .expect("a PostgreSQL server under /usr/lib/postgresql/N/bin")
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc_geteuid() == 0 }
}

unsafe extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}
