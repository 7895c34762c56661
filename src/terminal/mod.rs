//! Terminals agents can drive: drydock's own PTY sessions and tmux panes, each with a
//! screen model, and commands whose end is known from shell-integration marks.
//!
//! Output flows one way whatever the backend: bytes arrive (a PTY reader thread, tmux's
//! `%output` events) and are fed to a `TerminalCore`, which keeps the screen, the
//! scrollback, the marks and a generation counter that waiters watch.

mod budget;
mod capture;
pub mod core;
pub mod keys;
pub mod marks;
pub mod pty;
pub mod pump;
pub mod registry;
pub mod requests;
pub mod screen;
pub mod shell_integration;
pub mod tmux;
