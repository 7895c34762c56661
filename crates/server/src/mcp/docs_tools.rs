//! The docs tools as MCP tools.

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};
use serde::Serialize;

use super::DrydockServer;
use super::tools::{ProgressNotifier, respond, serve_call};
use crate::call::Call;
use crate::docs::reports::{IngestReport, LookupReport, ReadReport};
use crate::docs::requests::{IndexRequest, LookupRequest, ReadRequest};
use crate::render::Render;

#[tool_router(router = docs_tool_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(
        description = "Search the local documentation index (vectors + full text, fused) for the exact passage: Rust book, std, cargo, error codes, Elixir's stdlib, and every indexed crate or hex package at its version. Ask in words (\"how do I share a Vec between threads\") or by identifier (`E0502`, `Enum.chunk_every`, `--message-format`). With project_path, only that project's own docs, its dependencies at the versions its lock file pins and its language's toolchain docs. Returns the 30 best results (read them all: the answer is often not first) with library, version, file, heading, anchor and lines: the first 3 with their whole passage, the next 7 with the sentences that best match the question, the rest by their heading path; each has an id, and docs_read {id} gives that passage whole.",
        output_schema = schema_for_output::<LookupReport>()
    )]
    async fn docs_lookup(
        &self,
        Parameters(req): Parameters<LookupRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        unless_cancelled(&ctx, self.app.docs().lookup(req)).await
    }

    #[tool(
        description = "Read a passage docs_lookup found, by the id it gave: the passage whole (default), its whole section (`around: \"section\"`: every passage under the same heading) or its neighbours (`around: \"neighbours\"`: the passages before and after it in its file).",
        output_schema = schema_for_output::<ReadReport>()
    )]
    async fn docs_read(
        &self,
        Parameters(req): Parameters<ReadRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        unless_cancelled(&ctx, self.app.docs().read(req)).await
    }

    #[tool(
        description = "Add documentation to the local index, incrementally (unchanged files are skipped, changed ones replaced, deleted ones removed): `project_path` (a cargo or mix project: its own docs and its dependencies' READMEs and API docs at their locked versions; `transitive` for every locked package), `paths` (files or directories of Markdown, text, HTML, Rust or Elixir sources) and/or `toolchain_docs` (the Rust docs rustup installed and Elixir's standard library). Sends progress notifications; embedding runs at tens of passages per second (the whole toolchain docs, about 49k passages, take about 10 minutes on 2 cores), so a large corpus takes minutes. Cancelling keeps what was committed; the next call continues.",
        output_schema = schema_for_output::<IngestReport>()
    )]
    async fn docs_index(
        &self,
        Parameters(req): Parameters<IndexRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        serve_call!(self, ctx, |call| self.app.docs().index(req, &call))
    }
}

/// `work`'s result, or a "cancelled" error as soon as the client cancels the request.
async fn unless_cancelled<T: Serialize + Render, E: std::fmt::Display>(
    ctx: &RequestContext<RoleServer>,
    work: impl Future<Output = Result<T, E>>,
) -> Result<CallToolResult, McpError> {
    tokio::select! {
        result = work => respond(result),
        _ = ctx.ct.cancelled() => Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")])),
    }
}
