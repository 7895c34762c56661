//! The kit the agent suites drive real coding-agent CLIs with: fake model APIs on loopback
//! (`fake_anthropic`, `fake_openai`, on `fake_http`), a throwaway HOME per agent (`home`),
//! Claude Code hooks that log their payloads (`hooks`), a prompt's menu read off the screen
//! (`menu`), a tmux driver (`tmux`), one agent
//! wired up of these (`agents`), and the fixture recorder (`record`). The CLIs are the pinned
//! ones scripts/agent-clis.sh installs; without them the tests that use the kit fail.
//!
//! ```text
//! let claude = Claude::start();                 // fake API, HOME, tmux session, the CLI
//! claude.wait_idle();
//! claude.send("Run the lab command lab:bash");  // lab: tokens script the fake's reply
//! claude.tmux.wait_for_text("Do you want to proceed?", STEP);
//! answer(&claude.tmux, &["Enter"], "Do you want to proceed?");
//! assert_eq!(claude.fake.prompts(), ["Run the lab command lab:bash"]);
//! ```
//!
//! To run a CLI somewhere else (a drydock PTY session), prepare an `AgentHome` and a fake,
//! and run `home.launch(&cli, &[]).shell_command(&[])` there.

// A kit: each suite uses the part it needs.
#![allow(dead_code)]

pub mod agents;
pub mod fake_anthropic;
pub mod fake_http;
pub mod fake_openai;
pub mod home;
pub mod hooks;
pub mod lab_crate;
pub mod menu;
pub mod record;
pub mod tmux;
