//! What only the tests ask of a tmux server: its state (options, pane sizes, the cursor),
//! typing by tmux key name, and stopping a private server.

use std::path::PathBuf;

use super::{DRYDOCK_SESSION_OPTION, Result, Tmux, TmuxError, cmd, session_target};

impl Tmux {
    /// The config file the server reads when drydock starts it (`-f`); e.g. `/dev/null` for
    /// a server unaffected by the user's `~/.tmux.conf`.
    pub(crate) fn with_config_file(mut self, path: impl Into<PathBuf>) -> Self {
        self.config_file = Some(path.into());
        self
    }

    /// Whether a server is running on this socket.
    pub(crate) async fn server_running(&self) -> Result<bool> {
        match self
            .run(cmd(["list-sessions", "-F", "#{session_id}"]))
            .await
        {
            Ok(_) => Ok(true),
            Err(TmuxError::NoServer { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Reads an option's value; `None` when it is not set.
    pub(crate) async fn show_option(
        &self,
        target: Option<&str>,
        scope: OptionScope,
        name: &str,
    ) -> Result<Option<String>> {
        let mut args = cmd(["show-options", "-q", "-v"]);
        args.extend(scope.flags());
        if let Some(target) = target {
            args.extend(cmd(["-t", target]));
        }
        args.push(name.to_string());
        let out = self.run(args).await?;
        let value = out.strip_suffix('\n').unwrap_or(&out);
        Ok((!out.is_empty()).then(|| value.to_string()))
    }

    /// Whether `session` carries `@drydock OWNER`, i.e. a drydock created it.
    pub(crate) async fn is_drydock_session(&self, session: &str) -> Result<bool> {
        let value = self
            .show_option(
                Some(&session_target(session)),
                OptionScope::Session,
                DRYDOCK_SESSION_OPTION,
            )
            .await?;
        Ok(value.is_some_and(|owner| !owner.is_empty()))
    }

    /// Types `text` literally (`send-keys -l`): "C-c" in it is the three characters.
    pub(crate) async fn send_text(&self, target: &str, text: &str) -> Result<()> {
        if text.is_empty() {
            return Ok(());
        }
        self.run(cmd(["send-keys", "-l", "-t", target, "--", text]))
            .await
            .map(drop)
    }

    /// Presses keys by name (`C-c`, `Enter`, `Escape`, `Up`, `Tab`, `BSpace`, `F5`, ...);
    /// every name is checked first, so a typo is an error rather than typed text.
    pub(crate) async fn send_keys(&self, target: &str, names: &[String]) -> Result<()> {
        for name in names {
            validate_key_name(name)?;
        }
        if names.is_empty() {
            return Ok(());
        }
        let mut args = cmd(["send-keys", "-t", target, "--"]);
        args.extend(names.iter().cloned());
        self.run(args).await.map(drop)
    }

    /// (rows, cols) of the pane.
    pub(crate) async fn pane_size(&self, target: &str) -> Result<(u16, u16)> {
        let (w, h) = self
            .display_pair(target, "#{pane_width},#{pane_height}")
            .await?;
        Ok((h, w))
    }

    /// Cursor position as (x, y), 0-based from the top left of the visible screen.
    pub(crate) async fn cursor(&self, target: &str) -> Result<(u16, u16)> {
        self.display_pair(target, "#{cursor_x},#{cursor_y}").await
    }

    async fn display_pair(&self, target: &str, format: &str) -> Result<(u16, u16)> {
        let out = self.display(target, format).await?;
        let unexpected = || TmuxError::UnexpectedOutput {
            command: "display-message".into(),
            output: out.clone(),
        };
        let (a, b) = out.trim().split_once(',').ok_or_else(unexpected)?;
        Ok((
            a.parse().map_err(|_| unexpected())?,
            b.parse().map_err(|_| unexpected())?,
        ))
    }

    /// Stops the whole server (only ever meant for drydock's own socket).
    pub(crate) async fn kill_server(&self) -> Result<()> {
        if !self.socket.is_owned() {
            return Err(TmuxError::InvalidArgument(
                "refusing to kill the user's tmux server".into(),
            ));
        }
        match self.run(cmd(["kill-server"])).await {
            Ok(_) | Err(TmuxError::NoServer { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

/// Which kind of option `show_option` reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OptionScope {
    Session,
    GlobalSession,
}

impl OptionScope {
    fn flags(self) -> Vec<String> {
        let flags: &[&str] = match self {
            OptionScope::Session => &[],
            OptionScope::GlobalSession => &["-g"],
        };
        flags.iter().map(|s| s.to_string()).collect()
    }
}

/// Key names `send_keys` accepts: what tmux's `key_string_lookup_string` knows, with optional
/// `C-`, `M-`, `S-` modifiers. tmux types an unknown name as literal text, so it is refused
/// here instead.
pub(super) fn validate_key_name(name: &str) -> Result<()> {
    const NAMED: &[&str] = &[
        "Enter", "Escape", "Tab", "BTab", "BSpace", "Space", "Up", "Down", "Left", "Right", "Home",
        "End", "PageUp", "PgUp", "PPage", "PageDown", "PgDn", "NPage", "IC", "Insert", "DC",
        "Delete", "KP/", "KP*", "KP-", "KP7", "KP8", "KP9", "KP+", "KP4", "KP5", "KP6", "KP1",
        "KP2", "KP3", "KPEnter", "KP0", "KP.", "Any",
    ];
    let invalid = || TmuxError::InvalidKey(name.to_string());
    let mut base = name;
    loop {
        match base.get(..2) {
            Some("C-" | "M-" | "S-" | "c-" | "m-" | "s-") if base.len() > 2 => base = &base[2..],
            _ => break,
        }
    }
    if let Some(rest) = base.strip_prefix('^')
        && rest.chars().count() == 1
    {
        return Ok(());
    }
    if base.chars().count() == 1 {
        return Ok(());
    }
    if NAMED.iter().any(|k| k.eq_ignore_ascii_case(base)) {
        return Ok(());
    }
    if let Some(n) = base.strip_prefix(['F', 'f'])
        && let Ok(n) = n.parse::<u8>()
        && (1..=12).contains(&n)
    {
        return Ok(());
    }
    Err(invalid())
}
