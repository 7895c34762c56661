//! The kit the agent suites drive real coding-agent CLIs with: fake model APIs on loopback
//! (`fake_anthropic`, `fake_openai`, on `fake_http`), a throwaway HOME per agent (`home`),
//! Claude Code hooks that log their payloads (`hooks`), a tmux driver (`tmux`), one agent
//! wired up of these (`agents`), and the fixture recorder (`record`). The CLIs are the pinned
//! ones scripts/agent-clis.sh installs.

// A kit: each suite uses the part it needs.
#![allow(dead_code)]

pub mod agents;
pub mod fake_anthropic;
pub mod fake_http;
pub mod fake_openai;
pub mod home;
pub mod hooks;
pub mod record;
pub mod tmux;
