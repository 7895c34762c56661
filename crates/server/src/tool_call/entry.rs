//! What the router knows of a tool: its description, its input and output schemas (its
//! request's and its report's types) and how it runs; and the [`tool!`] that writes one.

use futures::future::BoxFuture;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::CallError;
use crate::agents::AskClient;
use crate::app::App;
use crate::call::Call;
use crate::catalog::ToolName;
use crate::render::Render;
use crate::tasks::TaskScope;

/// One tool of the router.
pub struct Entry {
    pub tool: ToolName,
    /// What a client model reads of the tool.
    pub description: &'static str,
    /// JSON Schema 2020-12 of the arguments: what the request type accepts.
    pub input_schema: fn() -> Schema,
    /// JSON Schema 2020-12 of the structured result: what the report type writes.
    pub output_schema: fn() -> Schema,
    pub(super) run: Run,
}

type Run = for<'a> fn(&'a App, Value, Context<'a>) -> BoxFuture<'a, Result<ToolOutput, CallError>>;

/// What a tool's run gets besides the app and its request.
pub(super) struct Context<'a> {
    pub call: &'a Call<'a>,
    pub scope: Option<&'a TaskScope>,
    pub ask: Option<AskClient>,
}

/// A tool's structured result and its text rendering.
pub struct ToolOutput {
    pub structured: Value,
    pub text: String,
}

/// `tool!(Variant(Request) -> Report, "description", |app, request, context| future)`: the
/// entry of the catalog's `ToolName::Variant`, whose arguments read as `Request` and whose
/// future gives a `Result<Report, E>`.
macro_rules! tool {
    (
        $tool:ident($request:ty) -> $report:ty,
        $description:literal,
        |$app:ident, $req:ident, $context:ident| $run:expr $(,)?
    ) => {
        super::Entry {
            tool: $crate::catalog::ToolName::$tool,
            description: $description,
            input_schema: super::entry::input_schema::<$request>,
            output_schema: super::entry::output_schema::<$report>,
            run: |$app, arguments, $context| {
                Box::pin(async move {
                    // Not every tool reads its context.
                    let _ = &$context;
                    let tool = $crate::catalog::ToolName::$tool;
                    let $req: $request = super::entry::parse(tool, arguments)?;
                    super::entry::outcome::<$report, _>($run.await)
                })
            },
        }
    };
}

pub(super) use tool;

/// Every toolset's entries.
const TOOLSETS: [&[Entry]; 5] = [
    super::build_tools::TOOLS,
    super::terminal_tools::TOOLS,
    super::docs_tools::TOOLS,
    super::agent_tools::TOOLS,
    super::task_tools::TOOLS,
];

/// The entry of `tool` (every tool of the catalog has one: a test holds it).
pub fn entry(tool: ToolName) -> &'static Entry {
    TOOLSETS
        .iter()
        .flat_map(|entries| entries.iter())
        .find(|entry| entry.tool == tool)
        .unwrap_or_else(|| panic!("the tool `{tool}` has no entry in tool_call"))
}

pub(super) fn input_schema<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .into_generator()
        .into_root_schema_for::<T>()
}

pub(super) fn output_schema<T: JsonSchema>() -> Schema {
    SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>()
}

pub(super) fn parse<T: DeserializeOwned>(tool: ToolName, arguments: Value) -> Result<T, CallError> {
    serde_json::from_value(arguments).map_err(|e| CallError::InvalidArguments {
        tool,
        message: e.to_string(),
    })
}

pub(super) fn outcome<T: Serialize + Render, E: Into<CallError>>(
    result: Result<T, E>,
) -> Result<ToolOutput, CallError> {
    let report = result.map_err(Into::into)?;
    Ok(ToolOutput {
        structured: serde_json::to_value(&report).expect("reports serialize"),
        text: report.render(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Toolset;

    /// Each tool of the catalog has one entry, in its toolset's file.
    #[test]
    fn every_tool_has_one_entry_in_its_toolsets_file() {
        let files = [
            Toolset::Build,
            Toolset::Terminal,
            Toolset::Docs,
            Toolset::Agents,
            Toolset::Tasks,
        ];
        for (toolset, entries) in files.into_iter().zip(TOOLSETS) {
            for entry in entries {
                assert_eq!(entry.tool.toolset(), toolset, "{}", entry.tool);
            }
        }
        for tool in ToolName::ALL {
            let entries = TOOLSETS.iter().flat_map(|e| e.iter());
            assert_eq!(entries.filter(|e| e.tool == *tool).count(), 1, "{tool}");
            assert!(!entry(*tool).description.is_empty(), "{tool}");
        }
    }
}
