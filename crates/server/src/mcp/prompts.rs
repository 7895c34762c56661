//! Prompts that teach the build, terminal and agent supervision workflows.

use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};
use schemars::JsonSchema;
use serde::Deserialize;

use super::DrydockServer;

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ProjectArgs {
    /// The project directory.
    pub project_path: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct FailingTestArgs {
    /// The project directory.
    pub project_path: String,
    /// Name (or part of the name) of the failing test.
    pub test: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct TerminalArgs {
    /// What the terminal is for, e.g. "run the dev server and check the home page loads".
    #[serde(default)]
    pub goal: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SuperviseArgs {
    /// What the agents are working on, or what to watch for.
    #[serde(default)]
    pub goal: Option<String>,
}

#[prompt_router(vis = "pub(crate)")]
impl DrydockServer {
    #[prompt(
        name = "fix_build",
        description = "Make a project build cleanly: read exact errors with type_check, fix them, repeat, then run the tests."
    )]
    async fn fix_build(&self, Parameters(args): Parameters<ProjectArgs>) -> Vec<PromptMessage> {
        let path = args.project_path;
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Make the project at `{path}` build without errors.\n\
                 1. Call `type_check` with project_path `{path}`. Its `errors` list each problem with file, line, column, code and message; `label` says what is wrong at that spot and `suggestions` are edits the compiler is sure of.\n\
                 2. Fix the errors in the order given (earlier errors often cause later ones). Apply machine-applicable suggestions as they are.\n\
                 3. Call `type_check` again; repeat until `status` is \"ok\". Then look at `warnings`.\n\
                 4. Call `test` with the same project_path and fix what fails (each failure has file, line, message and left/right values).\n\
                 5. Finish with `lint` and `format` (apply=true)."
            ),
        )]
    }

    #[prompt(
        name = "fix_failing_test",
        description = "Investigate and fix one failing test using test (with a filter) and the failure's location and values."
    )]
    async fn fix_failing_test(
        &self,
        Parameters(args): Parameters<FailingTestArgs>,
    ) -> Vec<PromptMessage> {
        let FailingTestArgs { project_path, test } = args;
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "The test `{test}` fails in `{project_path}`.\n\
                 1. Call `test` with project_path `{project_path}` and filter `{test}` to run only it (for a mix project add exact: true with ExUnit's full name, e.g. \"test adds numbers\", or give `path` as file:line).\n\
                 2. Read the failure: `file` and `line` point at the panic, `message` says why, `left`/`right` are the compared values, `stdout` is what the test printed.\n\
                 3. Decide whether the code or the test is wrong, fix it, and run the same call until it passes.\n\
                 4. Run `test` without a filter to check that nothing else broke."
            ),
        )]
    }

    #[prompt(
        name = "drive_terminal",
        description = "Work in a terminal: start a session, run commands and read exactly their output, drive REPLs and TUIs with send/wait/screen."
    )]
    async fn drive_terminal(
        &self,
        Parameters(args): Parameters<TerminalArgs>,
    ) -> Vec<PromptMessage> {
        let goal = args.goal.unwrap_or_else(|| "the task at hand".into());
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Use drydock's terminal tools for {goal}.\n\
                 - Start: `terminal_create` with `cwd` (and `backend: \"tmux\"` for something that must outlive this conversation, like a dev server; the user can watch it with the `attach` command it returns). `terminal_list` shows sessions and the user's own tmux panes (`tmux:SESSION:WINDOW.PANE`).\n\
                 - Shell commands: `terminal_run` returns the command's own output and exit code the moment it ends (method \"mark\"). If `completed` is false it is still running: read more with `terminal_wait`, or stop it with `terminal_manage` action interrupt.\n\
                 - Long-running programs: send the command with `terminal_send` (text, then keys [\"Enter\"]), then `terminal_wait` with a `pattern` that means ready (e.g. \"Listening on\") and `max_wait_ms`.\n\
                 - REPLs and TUIs: `terminal_send` text and keys (C-c, Escape, Up, Tab...), then `terminal_wait` with the prompt as `pattern` (e.g. \">>> $\") or `quiet_ms`, then `terminal_screen` to read. Pass the `generation` from one result as `after_generation` to the next wait so no change is missed. `terminal_run` with `pattern` works in a REPL too.\n\
                 - History: `terminal_scrollback` with a negative `offset` (-200 is the last 200 lines).\n\
                 - Finish: kill the sessions you no longer need (`terminal_manage` action kill); leave the user's own panes as they are."
            ),
        )]
    }

    #[prompt(
        name = "supervise_agents",
        description = "Supervise the coding agents in the user's terminals: wait for one to need input, read its question, answer it safely or give it its next task, and start new ones with consent."
    )]
    async fn supervise_agents(
        &self,
        Parameters(args): Parameters<SuperviseArgs>,
    ) -> Vec<PromptMessage> {
        let goal = args
            .goal
            .map(|g| format!(" The work: {g}."))
            .unwrap_or_default();
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Supervise the coding agents drydock can see (Claude Code, Codex, Gemini CLI in its sessions and the user's tmux panes).{goal}\n\
                 1. `agent_list` shows each agent: kind, state (starting, idle, working, waiting, exited), which signal decided it and, when waiting, the question, its options (number and label) and a `prompt_id`.\n\
                 2. Loop on `agent_wait` with states [\"waiting\", \"idle\", \"exited\"] (and `agents` to watch only some): it returns the moment one gets there, with its question. Do not read screens in a loop.\n\
                 3. Waiting: read the question and its context. Answer with `agent_answer` (approve, approve_always, deny, or choose with `option`), always passing `seen` = the prompt_id you read, so a prompt that changed meanwhile is refused instead of answered blindly. Deny what you would not run yourself (anything outside the project, destructive commands, secrets). If unsure, ask the user.\n\
                 4. Idle: the agent finished its turn. Check its work (the build tools: `type_check`, `test`), then give the next task with `agent_send`, or leave it.\n\
                 5. Exited: read its last screen with `terminal_screen` and tell the user how it ended.\n\
                 6. New work: `agent_spawn` (kind, prompt, cwd) asks the user's consent first; follow the new agent with `agent_wait`. `agent_kill` ends an agent and everything it started (a user's own pane only with force: ask first)."
            ),
        )]
    }
}
