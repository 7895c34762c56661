//! Whether this host can confine: bubblewrap installed, and the kernel letting it make the
//! namespaces a sandbox needs (user namespaces can be turned off, and containers often lack
//! them). Found once, by starting a sandbox like the ones tasks get.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What `bwrap` says of itself and of this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Ready { bwrap: PathBuf, version: String },
    Unavailable(String),
}

impl Support {
    pub fn bwrap(&self) -> Option<&Path> {
        match self {
            Support::Ready { bwrap, .. } => Some(bwrap),
            Support::Unavailable(_) => None,
        }
    }

    /// One line for `drydock doctor` and refusals.
    pub fn describe(&self) -> String {
        match self {
            Support::Ready { bwrap, version } => {
                format!("{version} at {} makes sandboxes here", bwrap.display())
            }
            Support::Unavailable(why) => why.clone(),
        }
    }
}

/// This host's support, probed on first use (a blocking call of some milliseconds).
pub fn host() -> &'static Support {
    static PROBED: OnceLock<Support> = OnceLock::new();
    PROBED.get_or_init(probe)
}

fn probe() -> Support {
    let Some(bwrap) = crate::process::find_program("bwrap") else {
        return Support::Unavailable(
            "bubblewrap is not installed (`bwrap` is not on PATH): install it (Debian: apt install bubblewrap)"
                .into(),
        );
    };
    let version = Command::new(&bwrap)
        .arg("--version")
        .output()
        .ok()
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_string())
        .filter(|text| !text.is_empty())
        .unwrap_or_else(|| "bubblewrap".into());
    let mut trial = Command::new(&bwrap);
    trial
        .args(super::confinement::NAMESPACES)
        .args(super::confinement::system_args())
        .args(["--", "true"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    match trial.output() {
        Ok(out) if out.status.success() => Support::Ready { bwrap, version },
        Ok(out) => Support::Unavailable(format!(
            "{version} at {} cannot make a sandbox on this host: {}",
            bwrap.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )),
        Err(error) => Support::Unavailable(format!("{} cannot run: {error}", bwrap.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_host_makes_sandboxes() {
        // The CI machine installs bubblewrap (scripts/ensure-deps.sh) and allows user
        // namespaces: a host that cannot is reported, never silently passed over.
        let support = host();
        assert!(
            matches!(support, Support::Ready { .. }),
            "{}",
            support.describe()
        );
        assert!(support.describe().contains("bubblewrap"));
    }
}
