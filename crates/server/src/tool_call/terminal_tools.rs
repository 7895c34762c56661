//! The terminal tools. Those that wait (create, send, wait, run) take the call: cancelling
//! it ends the wait with a cancelled error.

use super::Entry;
use super::entry::tool;
use crate::terminal::reports::{
    CommandReport, CreateReport, ListReport, ManageReport, ScreenReport, ScrollbackReport,
    SendReport, WaitReport,
};
use crate::terminal::requests::{
    CommandRequest, CreateRequest, ListRequest, ManageRequest, ScreenRequest, ScrollbackRequest,
    SendRequest, WaitRequest,
};

pub(super) const TOOLS: &[Entry] = &[
    tool!(
        TerminalCreate(CreateRequest) -> CreateReport,
        "Start a terminal session: the user's shell (bash or zsh, with shell integration so terminal_run knows exactly when a command ends) in `cwd`, optionally sent `command` (e.g. a dev server or a REPL). backend \"pty\" (default) ends with the server; \"tmux\" survives a restart and the user can watch it with `tmux -L drydock attach`. Returns the session's name and first screen.",
        |app, request, context| app.terminals().create(request, context.call),
    ),
    tool!(
        TerminalList(ListRequest) -> ListReport,
        "List terminal sessions: drydock's own (pty, tmux) and every pane of the user's tmux server (addressable as tmux:SESSION:WINDOW.PANE), with command, cwd, pid, size and whether commands in it are tracked by shell marks; plus the environment (inside tmux or not, tmux version, shell).",
        |app, request, context| app.terminals().list(request),
    ),
    tool!(
        TerminalManage(ManageRequest) -> ManageReport,
        "Manage a session: kill (it and every process in it), rename (new_name), resize (rows, cols) or interrupt (Ctrl-C as a key). The user's own tmux panes can only be interrupted.",
        |app, request, context| app.terminals().manage(request),
    ),
    tool!(
        TerminalSend(SendRequest) -> SendReport,
        "Type into a session: `text` (literal), then `keys` (e.g. [\"Enter\"], [\"C-c\"], [\"Escape\", \"Up\"]). Keys are sent after the program took the text, and an Enter the screen does not react to is sent again (at most twice), so TUIs do not swallow it. To run a shell command and get its output, prefer terminal_run.",
        |app, request, context| app.terminals().send(request, context.call),
    ),
    tool!(
        TerminalScreen(ScreenRequest) -> ScreenReport,
        "The session's visible screen as text (or styled with ANSI), with cursor position, size and a generation number for terminal_wait. `lines`: only the last N lines. A screen larger than `max_output_bytes` (default 64 KiB of JSON) keeps its first and last lines around a line saying which terminal_scrollback lines were left out.",
        |app, request, context| app.terminals().screen(request),
    ),
    tool!(
        TerminalScrollback(ScrollbackRequest) -> ScrollbackReport,
        "Lines of the session's history (scrollback and screen), `limit` of them from line `offset`. Lines are numbered from the first line the session showed and keep their numbers (terminal_run's `scrollback.offset` is where a command's output starts); `oldest` is the oldest still kept. A negative offset counts back from the newest: -100 is the last 100. Lines beyond `max_output_bytes` (default 64 KiB of JSON) are left out of the middle, and `elided` says which.",
        |app, request, context| app.terminals().scrollback(request),
    ),
    tool!(
        TerminalWait(WaitRequest) -> WaitReport,
        "Wait until the screen matches `pattern` (regex), or there was no output for `quiet_ms`, or (with neither) the screen changes after `after_generation`; at most `max_wait_ms`. Returns which method decided, the generation to pass next time, and the last lines of the screen.",
        |app, request, context| app.terminals().wait(request, context.call),
    ),
    tool!(
        TerminalRun(CommandRequest) -> CommandReport,
        "Run a command in a session's shell and return only that command's output and its exit code, the moment it finishes (shell-integration marks: no quiet-period guessing). Without marks (a REPL, a pane drydock did not start) it ends on `pattern` or after `quiet_ms` of silence, and says so in `method`. At timeout_ms it returns what was printed so far with completed=false; the command keeps running (terminal_manage interrupt stops it). Output over `max_output_bytes` (default 64 KiB of JSON) keeps its head and tail around a line saying how many bytes and lines were left out; `scrollback` gives the output's lines for terminal_scrollback.",
        |app, request, context| app.terminals().run(request, context.call),
    ),
];
