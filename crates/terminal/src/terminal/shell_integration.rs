//! Shell integration without touching a dotfile: drydock writes its own rc files into a
//! directory it owns and starts bash or zsh on them. Each first sources the user's own rc
//! (so aliases, PATH and prompt are theirs), then emits OSC 133 marks around every
//! command: `D;<exit status>` and `A` before the prompt, `B` at the end of the prompt, `C`
//! just before the command runs (bash: `PS0`, bash >= 4.4; zsh: `preexec`).
//!
//! Also set, for predictable output when an agent types:
//! - `TERM=xterm-256color`, `PAGER=cat`, `GIT_PAGER=cat` (a pager would wait for keys);
//! - bracketed paste off (fewer escape sequences around each command line);
//! - history expansion off (`!` in `echo "hi!"` is not an event designator);
//! - `HISTFILE` in drydock's directory, so agents' commands do not end up in the user's
//!   shell history (and the user's history is still readable with `history -r ~/.bash_history`).

use std::io;
use std::path::{Path, PathBuf};

use crate::process::shell_quote::single_quoted;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shell {
    Bash,
    Zsh,
    /// Any other program: started as given, without marks.
    Other(String),
}

impl Shell {
    /// Detected from the program's file name (`/usr/bin/zsh`, `bash`, `/bin/fish`).
    pub fn detect(program: &str) -> Shell {
        let name = Path::new(program)
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or(program);
        match name.trim_start_matches('-') {
            "bash" => Shell::Bash,
            "zsh" => Shell::Zsh,
            _ => Shell::Other(program.to_string()),
        }
    }

    /// True when drydock can install marks for this shell.
    pub fn has_integration(&self) -> bool {
        !matches!(self, Shell::Other(_))
    }
}

/// How to start a shell: the argv and the environment to add.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShellLaunch {
    pub shell: Shell,
    pub argv: Vec<String>,
    pub env: Vec<(String, String)>,
    /// The shell will emit OSC 133 marks.
    pub marks: bool,
}

/// The user's login shell: `$SHELL`, else `/bin/bash`.
pub fn user_shell() -> String {
    std::env::var("SHELL")
        .ok()
        .filter(|shell| !shell.is_empty())
        .unwrap_or_else(|| "/bin/bash".to_string())
}

/// Where drydock keeps its rc files when the caller has no better place:
/// `<cache dir>/drydock/shell-integration`.
pub fn default_dir() -> PathBuf {
    dirs::cache_dir()
        .unwrap_or_else(std::env::temp_dir)
        .join("drydock")
        .join("shell-integration")
}

/// Writes the rc files for bash and zsh into `dir` (created if needed; rewritten each
/// time, so an upgrade of drydock takes effect).
pub fn install(dir: &Path) -> io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let quoted_dir = single_quoted(&dir.to_string_lossy());
    write_if_changed(
        &dir.join(BASH_RC),
        &BASH_RC_TEXT.replace("@DIR@", &quoted_dir),
    )?;
    write_if_changed(
        &dir.join(".zshenv"),
        &ZSHENV_TEXT.replace("@DIR@", &quoted_dir),
    )?;
    write_if_changed(
        &dir.join(".zshrc"),
        &ZSHRC_TEXT.replace("@DIR@", &quoted_dir),
    )?;
    Ok(())
}

/// How to start `program` with shell integration from `dir` (installed there first).
/// Bash: `bash --rcfile DIR/drydock.bashrc -i`; zsh: `ZDOTDIR=DIR zsh -i`; anything else
/// is started as given, without marks.
pub fn launch(program: &str, dir: &Path) -> io::Result<ShellLaunch> {
    let shell = Shell::detect(program);
    let mut env = vec![
        ("TERM".to_string(), "xterm-256color".to_string()),
        ("PAGER".to_string(), "cat".to_string()),
        ("GIT_PAGER".to_string(), "cat".to_string()),
        ("DRYDOCK_TERMINAL".to_string(), "1".to_string()),
    ];
    let argv = match &shell {
        Shell::Bash => {
            install(dir)?;
            vec![
                program.to_string(),
                "--rcfile".to_string(),
                dir.join(BASH_RC).to_string_lossy().into_owned(),
                "-i".to_string(),
            ]
        }
        Shell::Zsh => {
            install(dir)?;
            if let Ok(user_zdotdir) = std::env::var("ZDOTDIR") {
                env.push(("DRYDOCK_USER_ZDOTDIR".to_string(), user_zdotdir));
            }
            env.push(("ZDOTDIR".to_string(), dir.to_string_lossy().into_owned()));
            vec![program.to_string(), "-i".to_string()]
        }
        Shell::Other(_) => vec![program.to_string()],
    };
    Ok(ShellLaunch {
        marks: shell.has_integration(),
        shell,
        argv,
        env,
    })
}

const BASH_RC: &str = "drydock.bashrc";

const BASH_RC_TEXT: &str = r#"# Written by drydock; rewritten at every start. Your own ~/.bashrc is sourced first.
# (/etc/bash.bashrc, where the system has one, was already read by bash itself.)
if [ -f "$HOME/.bashrc" ]; then . "$HOME/.bashrc"; fi

__drydock_dir=@DIR@
HISTFILE="$__drydock_dir/bash_history"
set +H
bind 'set enable-bracketed-paste off' 2>/dev/null

__drydock_prompt() {
  local drydock_status=$?
  printf '\033]133;D;%s\007\033]133;A\007' "$drydock_status"
  case "$PS1" in
    *'133;B'*) ;;
    *) PS1="$PS1"'\[\033]133;B\007\]' ;;
  esac
  return $drydock_status
}

if [[ "$(declare -p PROMPT_COMMAND 2>/dev/null)" == "declare -a"* ]]; then
  PROMPT_COMMAND=(__drydock_prompt "${PROMPT_COMMAND[@]}")
else
  PROMPT_COMMAND="__drydock_prompt${PROMPT_COMMAND:+; $PROMPT_COMMAND}"
fi
PS0="${PS0}"'\033]133;C\007'
"#;

const ZSHENV_TEXT: &str = r#"# Written by drydock; rewritten at every start. Reads your own .zshenv, then lets zsh
# read drydock's .zshrc (which reads your own .zshrc first).
__drydock_dir=@DIR@
ZDOTDIR="${DRYDOCK_USER_ZDOTDIR:-$HOME}"
[[ -f "$ZDOTDIR/.zshenv" ]] && source "$ZDOTDIR/.zshenv"
__drydock_user_zdotdir="$ZDOTDIR"
ZDOTDIR="$__drydock_dir"
"#;

const ZSHRC_TEXT: &str = r#"# Written by drydock; rewritten at every start. Your own .zshrc is sourced first.
__drydock_dir=@DIR@
ZDOTDIR="$__drydock_user_zdotdir"
[[ -f "$ZDOTDIR/.zshrc" ]] && source "$ZDOTDIR/.zshrc"
# Programs started from this shell see the user's own ZDOTDIR again.
if [[ -n "$DRYDOCK_USER_ZDOTDIR" ]]; then export ZDOTDIR="$DRYDOCK_USER_ZDOTDIR"; else unset ZDOTDIR; fi
unset DRYDOCK_USER_ZDOTDIR

HISTFILE="$__drydock_dir/zsh_history"
unsetopt BANG_HIST
unset zle_bracketed_paste

# zsh prints PROMPT_SP's end-of-line mark before precmd runs, so it would land inside
# the command's output (before the D mark): drydock prints it itself, after D.
__drydock_prompt_sp=0
if [[ -o PROMPT_SP && -o PROMPT_CR ]]; then __drydock_prompt_sp=1; unsetopt PROMPT_SP; fi

__drydock_precmd() {
  local drydock_status=$?
  print -rn -- $'\e]133;D;'"$drydock_status"$'\a'
  if (( __drydock_prompt_sp )); then
    local drydock_eol="${(%)${PROMPT_EOL_MARK-%B%S%#%s%b}}"
    local drydock_width=1
    [[ -n "${PROMPT_EOL_MARK+set}" ]] && drydock_width=${#${(%)PROMPT_EOL_MARK}}
    print -rn -- "$drydock_eol${(l:COLUMNS-drydock_width:: :)}"$'\r'"${(l:drydock_width:: :)}"$'\r'
  fi
  print -rn -- $'\e]133;A\a'
  [[ "$PS1" == *'133;B'* ]] || PS1="$PS1"$'%{\e]133;B\a%}'
  return $drydock_status
}
__drydock_preexec() {
  print -rn -- $'\e]133;C\a'
}
precmd_functions=(__drydock_precmd ${precmd_functions[@]})
preexec_functions+=(__drydock_preexec)
"#;

fn write_if_changed(path: &Path, text: &str) -> io::Result<()> {
    if std::fs::read_to_string(path).is_ok_and(|old| old == text) {
        return Ok(());
    }
    // Write then rename, so a shell starting concurrently never reads half a file.
    let temporary = path.with_extension(format!("tmp{}", std::process::id()));
    std::fs::write(&temporary, text)?;
    std::fs::rename(&temporary, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_shells_from_paths() {
        assert_eq!(Shell::detect("/usr/bin/bash"), Shell::Bash);
        assert_eq!(Shell::detect("zsh"), Shell::Zsh);
        assert_eq!(Shell::detect("-zsh"), Shell::Zsh);
        assert_eq!(
            Shell::detect("/usr/bin/fish"),
            Shell::Other("/usr/bin/fish".into())
        );
    }

    #[test]
    fn launch_writes_rc_files_and_builds_argv() {
        let dir = tempfile::tempdir().unwrap();
        let bash = launch("/bin/bash", dir.path()).unwrap();
        assert!(bash.marks);
        assert_eq!(bash.argv[1], "--rcfile");
        let rc = std::fs::read_to_string(&bash.argv[2]).unwrap();
        assert!(rc.contains(r#". "$HOME/.bashrc""#));
        assert!(bash.env.contains(&("TERM".into(), "xterm-256color".into())));

        let zsh = launch("zsh", dir.path()).unwrap();
        assert_eq!(zsh.argv, vec!["zsh", "-i"]);
        let zdotdir = zsh.env.iter().find(|(k, _)| k == "ZDOTDIR").unwrap();
        assert_eq!(zdotdir.1, dir.path().to_string_lossy());
        assert!(dir.path().join(".zshrc").exists());
        assert!(dir.path().join(".zshenv").exists());

        let python = launch("python3", dir.path()).unwrap();
        assert!(!python.marks);
        assert_eq!(python.argv, vec!["python3"]);
    }
}
