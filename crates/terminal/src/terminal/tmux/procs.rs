//! The processes a pane ran, found in /proc, so that none outlives a kill.
//!
//! tmux starts each pane's process as the leader of a new terminal session (setsid), so
//! every process of the pane has that session id unless it left with `setsid` itself;
//! descendants are added too (by parent pid). They are listed before tmux kills the panes, so
//! that the ones reparented by then are still known ([`ProcessTree`]).

use std::time::Duration;

use crate::process::procfs::ProcStat;
use crate::process::{Escalation, ProcessTree};

/// tmux's kill only closes the ptys (SIGHUP to their foreground process groups): what is
/// left after this long gets SIGKILL.
pub(super) const AFTER_HANGUP: Escalation = Escalation {
    first: &[],
    grace: Duration::from_millis(300),
};

/// Every process in the terminal sessions led by `pane_pids`, and their descendants, listed
/// now. Dropping the tree leaves them alone.
pub(super) fn of_panes(pane_pids: impl IntoIterator<Item = u32>) -> ProcessTree {
    let leaders = pane_pids
        .into_iter()
        .filter_map(|pid| ProcStat::read(i32::try_from(pid).ok()?));
    let tree = ProcessTree::of_sessions(leaders);
    tree.members();
    tree
}
