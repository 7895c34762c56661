//! The one list of drydock's tools: each tool's name, its toolset and its MCP annotations.
//! Config validation, the one tool router (`tool_call`, which every face, MCP included, calls
//! through) and the toolset switches all read it; no tool name is typed anywhere else.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Groups of tools a client can be given or denied as a whole.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Toolset {
    Build,
    Terminal,
    Docs,
    Agents,
    Tasks,
}

impl Toolset {
    pub const ALL: [Toolset; 5] = [
        Toolset::Build,
        Toolset::Terminal,
        Toolset::Docs,
        Toolset::Agents,
        Toolset::Tasks,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Toolset::Build => "build",
            Toolset::Terminal => "terminal",
            Toolset::Docs => "docs",
            Toolset::Agents => "agents",
            Toolset::Tasks => "tasks",
        }
    }

    pub fn parse(name: &str) -> Option<Toolset> {
        Self::ALL.into_iter().find(|set| set.name() == name)
    }

    /// "build, terminal, docs, agents", for error messages.
    pub fn known() -> String {
        Self::ALL.map(Toolset::name).join(", ")
    }
}

/// What a tool does to the world, as MCP annotations describe it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Effects {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    /// It reaches beyond the project (runs the user's program, a shell, the network).
    pub open_world: bool,
}

const READS: Effects = Effects {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};
/// Builds: writes only the project's build output, and the same call gives the same result.
const BUILDS: Effects = Effects {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};
const RUNS_ANYTHING: Effects = Effects {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: true,
};

/// Changes drydock's own task queue (which may start agents when it runs in auto mode).
const QUEUES: Effects = Effects {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: false,
};

macro_rules! catalog {
    ($($variant:ident => $name:literal, $toolset:ident, $effects:expr;)*) => {
        /// Every tool drydock can serve.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(rename_all = "snake_case")]
        pub enum ToolName {
            $($variant,)*
        }

        impl ToolName {
            pub const ALL: &'static [ToolName] = &[$(ToolName::$variant,)*];

            pub fn name(self) -> &'static str {
                match self {
                    $(ToolName::$variant => $name,)*
                }
            }

            pub fn toolset(self) -> Toolset {
                match self {
                    $(ToolName::$variant => Toolset::$toolset,)*
                }
            }

            pub fn effects(self) -> Effects {
                match self {
                    $(ToolName::$variant => $effects,)*
                }
            }
        }
    };
}

catalog! {
    ProjectInfo => "project_info", Build, READS;
    Compile => "compile", Build, BUILDS;
    TypeCheck => "type_check", Build, BUILDS;
    Test => "test", Build, BUILDS;
    Run => "run", Build, RUNS_ANYTHING;
    Format => "format", Build, Effects { destructive: true, ..BUILDS };
    Lint => "lint", Build, BUILDS;
    HistorySearch => "history_search", Build, READS;
    TerminalCreate => "terminal_create", Terminal, Effects { destructive: false, ..RUNS_ANYTHING };
    TerminalList => "terminal_list", Terminal, READS;
    TerminalManage => "terminal_manage", Terminal, Effects { open_world: false, ..RUNS_ANYTHING };
    TerminalSend => "terminal_send", Terminal, RUNS_ANYTHING;
    TerminalScreen => "terminal_screen", Terminal, READS;
    TerminalScrollback => "terminal_scrollback", Terminal, READS;
    TerminalWait => "terminal_wait", Terminal, READS;
    TerminalRun => "terminal_run", Terminal, RUNS_ANYTHING;
    DocsLookup => "docs_lookup", Docs, READS;
    DocsRead => "docs_read", Docs, READS;
    DocsIndex => "docs_index", Docs, BUILDS;
    AgentList => "agent_list", Agents, READS;
    AgentWait => "agent_wait", Agents, READS;
    AgentAnswer => "agent_answer", Agents, RUNS_ANYTHING;
    AgentSend => "agent_send", Agents, RUNS_ANYTHING;
    AgentSpawn => "agent_spawn", Agents, RUNS_ANYTHING;
    AgentKill => "agent_kill", Agents, Effects { open_world: false, ..RUNS_ANYTHING };
    TaskAdd => "task_add", Tasks, QUEUES;
    TaskList => "task_list", Tasks, READS;
    TaskShow => "task_show", Tasks, READS;
    TaskStart => "task_start", Tasks, Effects { idempotent: false, ..RUNS_ANYTHING };
    TaskCancel => "task_cancel", Tasks, Effects { open_world: false, ..RUNS_ANYTHING };
    TaskRetry => "task_retry", Tasks, QUEUES;
    TaskComplete => "task_complete", Tasks, QUEUES;
    TaskMerge => "task_merge", Tasks, Effects { destructive: false, idempotent: true, ..QUEUES };
    TaskDiscard => "task_discard", Tasks, Effects { destructive: true, idempotent: true, ..QUEUES };
    QueueConfigure => "queue_configure", Tasks, Effects { idempotent: true, ..RUNS_ANYTHING };
    QueueClear => "queue_clear", Tasks, Effects { open_world: false, ..RUNS_ANYTHING };
}

impl ToolName {
    pub fn parse(name: &str) -> Option<ToolName> {
        Self::ALL.iter().copied().find(|tool| tool.name() == name)
    }

    /// Every tool name, comma separated, for error messages.
    pub fn known() -> String {
        Self::ALL
            .iter()
            .map(|tool| tool.name())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// What the token of a task's agent may call: the build tools and the docs (in the
    /// task's own directory), and its own task.
    pub fn for_task_agents(self) -> bool {
        self.toolset() == Toolset::Build
            || matches!(
                self,
                ToolName::DocsLookup
                    | ToolName::DocsRead
                    | ToolName::TaskComplete
                    | ToolName::TaskShow
            )
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_back_and_are_unique() {
        for tool in ToolName::ALL {
            assert_eq!(ToolName::parse(tool.name()), Some(*tool));
            assert_eq!(
                serde_json::to_value(tool).unwrap(),
                serde_json::json!(tool.name())
            );
        }
        let mut names: Vec<&str> = ToolName::ALL.iter().map(|t| t.name()).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), ToolName::ALL.len());
        assert_eq!(ToolName::parse("nope"), None);
    }

    #[test]
    fn read_only_tools_are_never_destructive() {
        for tool in ToolName::ALL {
            let effects = tool.effects();
            assert!(!(effects.read_only && effects.destructive), "{tool}");
        }
    }

    #[test]
    fn a_task_agent_gets_the_build_tools_docs_and_its_own_task() {
        let allowed: Vec<&str> = ToolName::ALL
            .iter()
            .filter(|t| t.for_task_agents())
            .map(|t| t.name())
            .collect();
        assert_eq!(
            allowed,
            [
                "project_info",
                "compile",
                "type_check",
                "test",
                "run",
                "format",
                "lint",
                "history_search",
                "docs_lookup",
                "docs_read",
                "task_show",
                "task_complete"
            ]
        );
    }

    #[test]
    fn toolsets_parse_by_name() {
        for set in Toolset::ALL {
            assert_eq!(Toolset::parse(set.name()), Some(set));
        }
        assert_eq!(Toolset::parse("shell"), None);
        assert_eq!(Toolset::known(), "build, terminal, docs, agents, tasks");
    }
}
