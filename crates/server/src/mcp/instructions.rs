//! What every client's model reads first (the MCP `instructions`): what drydock is, then a
//! few lines for each toolset this server has switched on, naming its tools.

use crate::catalog::Toolset;

const OPENING: &str = "drydock is a developer toolbox on this machine: it runs tools for you in the directories it allows and returns structured results.";

const CLOSING: &str = "A failing build, test or command is a normal result whose status says so; isError means the call could not run (a path outside the allowed roots, a missing argument, an unknown session).";

/// The instructions for a server with `toolsets` switched on.
pub(super) fn instructions(toolsets: &[Toolset]) -> String {
    let mut parts = vec![OPENING];
    parts.extend(
        Toolset::ALL
            .into_iter()
            .filter(|set| toolsets.contains(set))
            .map(paragraph),
    );
    parts.push(CLOSING);
    parts.join("\n\n")
}

fn paragraph(toolset: Toolset) -> &'static str {
    match toolset {
        Toolset::Build => {
            "Build tools (cargo and mix, the same result shapes for Rust and Elixir; each takes project_path): start with project_info; type_check or compile give exact errors (file, line, column, code, message); test runs the tests (failures with file, line and left/right values); lint runs clippy or credo, format rustfmt or mix format, run the program or an allowed task. drydock remembers what these reported: an error seen and fixed before comes back in `seen_before` with the diff that fixed it, and history_search finds any error or failing test drydock saw (by its text, a code, or what goes wrong) with how it was fixed."
        }
        Toolset::Docs => {
            "Docs: docs_lookup finds the passage that answers a question (std, the Rust book, cargo, Elixir, and the project's dependencies at their locked versions) in a local index: thirty results, the first whole, the next as their best sentences, the rest by their heading path, each with an id that docs_read turns into the passage, its section or its neighbours (read them all: the answer is often among the later ones); docs_index adds a project's docs to it."
        }
        Toolset::Terminal => {
            "Terminals: terminal_create starts a shell session in an allowed directory (PTY, or tmux to outlive drydock); terminal_run runs a command there and returns its own output and exit code as soon as it finishes; terminal_send types text or keys, terminal_screen and terminal_scrollback read, terminal_wait waits for quiet or a regex, terminal_list and terminal_manage list, rename, resize and close sessions. The user's own tmux panes are addressed as tmux:SESSION:WINDOW.PANE."
        }
        Toolset::Agents => {
            "Agents: agent_list shows the coding agents running in terminals (Claude Code, Codex, ...) and whether each is working, idle or waiting at a prompt (with the question and its options); agent_wait waits until one needs input; agent_answer answers the prompt you saw, agent_send gives an agent a new prompt, agent_spawn starts one (a person consents), agent_kill stops one."
        }
        Toolset::Tasks => {
            "Tasks: task_add queues work for coding agents, which drydock runs a few at a time (queue_configure: manual or auto, a cap), each in its own tmux session and, on a git project, in its own worktree and branch; task_start starts one now, task_cancel stops one, task_retry queues a failed one again, queue_clear empties the queue; task_list and task_show follow them. A finished task's branch is a result to review (its diff and the project's checks), then task_merge or task_discard. An agent working on a task ends it with task_complete."
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ToolName;

    #[test]
    fn every_tool_of_a_switched_on_toolset_is_named_and_no_other() {
        let all = instructions(&Toolset::ALL);
        for tool in ToolName::ALL {
            assert!(all.contains(tool.name()), "{tool} is not mentioned");
        }
        let build = instructions(&[Toolset::Build]);
        for tool in ToolName::ALL {
            let named = build.contains(tool.name());
            assert_eq!(named, tool.toolset() == Toolset::Build, "{tool}");
        }
        assert!(build.starts_with(OPENING) && build.ends_with(CLOSING));
    }
}
