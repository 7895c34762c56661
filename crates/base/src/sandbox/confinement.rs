//! What one sandbox sees, as bubblewrap's arguments. Nothing of the host is there unless
//! named: the system read-only (`/usr`, the merged-`/usr` links, `/opt`, and the files of
//! `/etc` that programs read to run, resolve names and check certificates), a private `/tmp`,
//! `/proc` and `/dev` of its own, a private home at the person's home path, the work directory
//! writable, and whatever else the caller lists. Paths keep their names inside, so what the
//! agent reports (a file, its working directory) means the same outside.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// Every namespace a sandbox can have (user, mount, pid, network, IPC, UTS, cgroup), and its
/// end with drydock's: bubblewrap kills what it runs when the process that started it dies.
///
/// No `--new-session`: the agent is a TUI, and a new session would cut it off its terminal
/// (no job control, no window size changes). The one terminal it could push input into with
/// TIOCSTI is its own: nothing outside the sandbox reads from it.
pub const NAMESPACES: &[&str] = &["--unshare-all", "--die-with-parent"];

/// No user namespace made inside: a nested one would give the agent capabilities over mounts
/// of its own, a way to reach kernel code a sandbox otherwise keeps away from it.
pub const NO_NESTING: &[&str] = &["--unshare-user", "--disable-userns"];

/// Top-level names that are links into `/usr` on a merged-`/usr` system, or directories.
const SYSTEM_DIRS: &[&str] = &["bin", "sbin", "lib", "lib32", "lib64", "libx32"];

/// What programs read in `/etc` to start, find users, resolve names, check certificates and
/// draw in a terminal; never the rest (keys, shadow files, the system's git settings).
const ETC_FILES: &[&str] = &[
    "alternatives",
    "bash.bashrc",
    "ca-certificates",
    "ca-certificates.conf",
    "crypto-policies",
    "environment",
    "group",
    "host.conf",
    "hosts",
    "inputrc",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "locale.alias",
    "localtime",
    "mime.types",
    "nsswitch.conf",
    "os-release",
    "passwd",
    "pki",
    "profile",
    "profile.d",
    "resolv.conf",
    "ssl",
    "terminfo",
    "timezone",
];

/// drydock's variables a sandbox starts with, when set: where the toolchains are, the
/// locale, who the user is, the certificates to trust. A name ending in `*` is a prefix.
/// Nothing else of drydock's environment enters a sandbox (its callers add what they need).
pub const PASSED_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "RUSTUP_TOOLCHAIN",
    "MIX_HOME",
    "MIX_ARCHIVES",
    "HEX_HOME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "NODE_EXTRA_CA_CERTS",
    "NO_COLOR",
];

/// Toolchain files that hold the person's registry tokens: an empty file is shown in their
/// place, where they exist.
const TOOLCHAIN_SECRETS: &[(&str, &str, &str)] = &[
    ("CARGO_HOME", ".cargo", "credentials.toml"),
    ("CARGO_HOME", ".cargo", "credentials"),
    ("HEX_HOME", ".hex", "hex.config"),
];

/// Of drydock's environment, the variables named by [`PASSED_ENV`] or `more` (the same
/// patterns: the agent's own settings, the config's additions).
pub fn passed_env(more: &[String]) -> Vec<(String, String)> {
    passed_from(std::env::vars(), more)
}

fn passed_from(
    vars: impl Iterator<Item = (String, String)>,
    more: &[String],
) -> Vec<(String, String)> {
    let matches = |pattern: &str, name: &str| match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    };
    vars.filter(|(name, _)| {
        PASSED_ENV.iter().any(|p| matches(p, name)) || more.iter().any(|p| matches(p, name))
    })
    .collect()
}

/// The person's registry credentials of the toolchains a sandbox reads, where they exist.
pub fn toolchain_secrets() -> Vec<PathBuf> {
    TOOLCHAIN_SECRETS
        .iter()
        .filter_map(|(var, default, file)| Some(tool_home(var, default)?.join(file)))
        .filter(|file| file.exists())
        .collect()
}

/// The person's cargo config without what logs in to a registry (`token`, a credential
/// provider, which is a program to run): written to a file of `scratch` (a folder of
/// drydock's), to be shown read-only over the original. None when it holds none.
pub fn cargo_config_without_tokens(scratch: &Path) -> Option<Mount> {
    let cargo_home = tool_home("CARGO_HOME", ".cargo")?;
    let file = ["config.toml", "config"]
        .into_iter()
        .map(|name| cargo_home.join(name))
        .find(|file| file.is_file())?;
    let text = std::fs::read_to_string(&file).ok()?;
    let kept = without_tokens(&text)?;
    let copy = scratch.join(format!(
        "cargo-config-{}.toml",
        crate::digest::sha256_hex(kept.as_bytes())
    ));
    if !copy.is_file() {
        std::fs::create_dir_all(scratch).ok()?;
        crate::private::write_private(&copy, kept.as_bytes()).ok()?;
    }
    Some(Mount {
        source: copy,
        target: file,
    })
}

/// `text` (a cargo config) without its registries' tokens and credential providers; None
/// when it has none. A config that does not parse is shown as nothing at all.
fn without_tokens(text: &str) -> Option<String> {
    let Ok(mut config) = text.parse::<toml::Table>() else {
        return Some(String::new());
    };
    let secret = |key: &str| {
        matches!(
            key,
            "token"
                | "credential-provider"
                | "global-credential-providers"
                | "secret-key"
                | "secret-key-subject"
        )
    };
    let mut removed = false;
    let mut strip = |table: &mut toml::Table| {
        let before = table.len();
        table.retain(|key, _| !secret(key));
        removed |= table.len() != before;
    };
    for section in ["registry", "registries"] {
        match config.get_mut(section) {
            Some(toml::Value::Table(table)) if section == "registry" => strip(table),
            Some(toml::Value::Table(registries)) => {
                for (_, registry) in registries.iter_mut() {
                    if let toml::Value::Table(registry) = registry {
                        strip(registry);
                    }
                }
            }
            _ => {}
        }
    }
    removed.then(|| toml::to_string(&config).unwrap_or_default())
}

/// A path of the host shown at a path inside (most often the same).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    pub source: PathBuf,
    pub target: PathBuf,
}

impl Mount {
    pub fn same(path: impl Into<PathBuf>) -> Mount {
        let path = path.into();
        Mount {
            source: path.clone(),
            target: path,
        }
    }
}

/// One sandbox: what it sees, what it may change, and its environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Writable (unless `work_read_only`), and the working directory.
    pub work: PathBuf,
    /// The working directory is seen and not changed (a checkout a tool only reads).
    pub work_read_only: bool,
    /// A private directory shown at the person's home path (`HOME` inside).
    pub home: Option<Mount>,
    /// Seen and not changed: toolchains, caches, the agent's CLI, drydock itself. A missing
    /// one is left out.
    pub readable: Vec<Mount>,
    /// Changed too: the private git directories, the cargo target directory.
    pub writable: Vec<Mount>,
    /// Read-only over what the lists above made writable (a file the agent must not
    /// rewrite inside a directory it may change); mounted last.
    pub protected: Vec<Mount>,
    /// Shown empty: files of readable folders that hold secrets (registry tokens).
    pub blanked: Vec<PathBuf>,
    /// What bubblewrap starts with: its whole environment, seen by everything inside (by
    /// `/proc/1/environ` too); see [`passed_env`].
    pub passed: Vec<(String, String)>,
    /// Set inside, over what was passed.
    pub env: Vec<(String, String)>,
    /// Removed inside.
    pub unset_env: Vec<String>,
}

impl Confinement {
    /// The words that run `argv` in this sandbox with bubblewrap at `bwrap`, started by
    /// `env -i` with the passed variables alone: bubblewrap's own process is seen inside.
    pub fn command(&self, bwrap: &Path, argv: impl IntoIterator<Item = String>) -> Vec<String> {
        let env = crate::process::find_program("env")
            .map(|path| path.display().to_string())
            .unwrap_or_else(|| "/usr/bin/env".into());
        let mut words = vec![env, "-i".into()];
        words.extend(
            self.passed
                .iter()
                .map(|(name, value)| format!("{name}={value}")),
        );
        words.push(bwrap.display().to_string());
        words.extend(
            self.args()
                .into_iter()
                .map(|arg| arg.to_string_lossy().into_owned()),
        );
        words.push("--".into());
        words.extend(argv);
        words
    }

    /// Keeps the person's registry credentials out: the toolchains' credential files shown
    /// empty, and cargo's config without its tokens (a copy kept in `scratch`, a folder of
    /// drydock's).
    pub fn hide_credentials(&mut self, scratch: &Path) {
        self.blanked = toolchain_secrets();
        self.protected.extend(cargo_config_without_tokens(scratch));
    }

    /// bubblewrap's arguments for this sandbox, up to (not including) `--` and the command.
    pub fn args(&self) -> Vec<OsString> {
        let mut args: Vec<OsString> = NAMESPACES.iter().map(OsString::from).collect();
        args.extend(
            super::support::host()
                .no_nesting()
                .iter()
                .map(OsString::from),
        );
        args.extend(system_args().into_iter().map(OsString::from));
        if let Some(home) = &self.home {
            args.extend(mount("--bind", home));
        }
        for readable in &self.readable {
            args.extend(mount("--ro-bind-try", readable));
        }
        for writable in &self.writable {
            args.extend(mount("--bind", writable));
        }
        let work_flag = match self.work_read_only {
            true => "--ro-bind",
            false => "--bind",
        };
        args.extend(mount(work_flag, &Mount::same(&self.work)));
        for protected in &self.protected {
            args.extend(mount("--ro-bind", protected));
        }
        for secret in &self.blanked {
            args.extend(["--ro-bind-try".into(), "/dev/null".into(), secret.into()]);
        }
        // The root is bubblewrap's tmpfs, with the mount points made for the paths above:
        // read-only, nothing is written there as if it were the host's.
        args.extend(["--remount-ro", "/"].map(OsString::from));
        args.push("--chdir".into());
        args.push(self.work.clone().into());
        for name in &self.unset_env {
            args.extend(["--unsetenv".into(), OsString::from(name)]);
        }
        if let Some(home) = &self.home {
            args.extend(["--setenv".into(), "HOME".into(), home.target.clone().into()]);
        }
        args.extend(["--setenv", "TMPDIR", "/tmp"].map(OsString::from));
        for (name, value) in &self.env {
            args.extend(["--setenv".into(), name.into(), value.into()]);
        }
        args
    }
}

/// `spec` run in the sandbox `confinement` by bubblewrap at `bwrap`: the same command, with
/// the passed variables and its own, its working directory the sandbox's.
pub fn confine(
    spec: crate::process::CommandSpec,
    bwrap: &Path,
    confinement: &Confinement,
) -> crate::process::CommandSpec {
    let argv = std::iter::once(spec.program.clone()).chain(spec.args.iter().cloned());
    let mut args: Vec<String> = confinement
        .args()
        .into_iter()
        .map(|arg| arg.to_string_lossy().into_owned())
        .collect();
    args.push("--".into());
    args.extend(argv);
    // bubblewrap starts from the passed variables and the call's own, nothing else.
    let mut env_set = confinement.passed.clone();
    env_set.extend(spec.env_set.iter().cloned());
    crate::process::CommandSpec {
        program: bwrap.display().to_string(),
        args,
        env_set,
        clear_env: true,
        ..spec
    }
}

/// Where the person's toolchains and their caches are (cargo, rustup, mix, hex, rebar3),
/// and the directories of `PATH`: what a sandbox reads to build (see [`readable`]).
pub fn toolchain_dirs() -> Vec<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut dirs: Vec<PathBuf> = [
        tool_home("CARGO_HOME", ".cargo"),
        tool_home("RUSTUP_HOME", ".rustup"),
        tool_home("MIX_HOME", ".mix"),
        tool_home("HEX_HOME", ".hex"),
        home.as_ref().map(|h| h.join(".cache/rebar3")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let Some(path) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&path));
    }
    dirs
}

/// Where a toolchain keeps its files: the variable `name` when set, else `default` in `HOME`.
fn tool_home(name: &str, default: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|value| !value.is_empty())
        .map(PathBuf::from)
        .or_else(|| Some(PathBuf::from(std::env::var_os("HOME")?).join(default)))
}

/// Of `dirs`, those a sandbox may read: absolute, existing, each once, never `/`, nothing
/// that holds the person's `home`, and nothing that holds or lies in one of `hidden`
/// (drydock's data, the project).
pub fn readable(
    dirs: impl IntoIterator<Item = PathBuf>,
    home: Option<&Path>,
    hidden: &[&Path],
) -> Vec<Mount> {
    let too_wide = |dir: &Path| {
        dir == Path::new("/")
            || home.is_some_and(|home| home.starts_with(dir))
            || hidden
                .iter()
                .any(|hidden| hidden.starts_with(dir) || dir.starts_with(hidden))
    };
    let mut seen = std::collections::BTreeSet::new();
    dirs.into_iter()
        .filter(|dir| dir.is_absolute() && !too_wide(dir) && dir.exists())
        .filter(|dir| seen.insert(dir.clone()))
        .map(Mount::same)
        .collect()
}

fn mount(flag: &str, mount: &Mount) -> [OsString; 3] {
    [
        flag.into(),
        mount.source.clone().into(),
        mount.target.clone().into(),
    ]
}

/// The system, read-only, and a `/proc`, `/dev` and `/tmp` of the sandbox's own.
pub fn system_args() -> Vec<String> {
    system_args_of(Path::new("/"))
}

fn system_args_of(root: &Path) -> Vec<String> {
    let mut args = vec!["--ro-bind".into(), "/usr".into(), "/usr".into()];
    for name in SYSTEM_DIRS {
        let host = root.join(name);
        let inside = format!("/{name}");
        match std::fs::read_link(&host) {
            Ok(target) => args.extend(["--symlink".into(), target.display().to_string(), inside]),
            Err(_) if host.is_dir() => args.extend(["--ro-bind".into(), inside.clone(), inside]),
            Err(_) => {}
        }
    }
    args.extend(["--ro-bind-try", "/opt", "/opt"].map(String::from));
    for name in ETC_FILES {
        let path = format!("/etc/{name}");
        args.extend(["--ro-bind-try".into(), path.clone(), path]);
    }
    args.extend(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"].map(String::from));
    args
}

#[cfg(test)]
mod tests;
