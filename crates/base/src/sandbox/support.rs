//! Whether this host can confine: bubblewrap installed, and the kernel letting it make the
//! namespaces a sandbox needs (user namespaces can be turned off, and containers often lack
//! them). Found once, by starting a sandbox like the ones tasks get.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// What `bwrap` says of itself and of this kernel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Support {
    Ready {
        bwrap: PathBuf,
        version: String,
        /// bubblewrap can keep what runs inside from making user namespaces of its own
        /// (`--disable-userns`, bubblewrap 0.8), and does.
        no_nesting: bool,
    },
    Unavailable(String),
}

impl Support {
    pub fn bwrap(&self) -> Option<&Path> {
        match self {
            Support::Ready { bwrap, .. } => Some(bwrap),
            Support::Unavailable(_) => None,
        }
    }

    /// The arguments that keep a sandbox from nesting user namespaces, where this bubblewrap
    /// has them.
    pub fn no_nesting(&self) -> &'static [&'static str] {
        match self {
            Support::Ready {
                no_nesting: true, ..
            } => super::confinement::NO_NESTING,
            _ => &[],
        }
    }

    /// One line for `drydock doctor` and refusals.
    pub fn describe(&self) -> String {
        match self {
            Support::Ready {
                bwrap,
                version,
                no_nesting,
            } => {
                let nesting = match no_nesting {
                    true => "",
                    false => {
                        " (this bubblewrap cannot stop namespaces inside them: 0.8 or later can)"
                    }
                };
                format!(
                    "{version} at {} makes sandboxes here{nesting}",
                    bwrap.display()
                )
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
    let trial = |extra: &[&str]| {
        Command::new(&bwrap)
            .args(super::confinement::NAMESPACES)
            .args(extra)
            .args(super::confinement::system_args())
            .args(["--", "true"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
    };
    if trial(super::confinement::NO_NESTING).is_ok_and(|out| out.status.success()) {
        return Support::Ready {
            bwrap,
            version,
            no_nesting: true,
        };
    }
    match trial(&[]) {
        Ok(out) if out.status.success() => Support::Ready {
            bwrap,
            version,
            no_nesting: false,
        },
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
