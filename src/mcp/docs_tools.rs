//! The docs tools as MCP tools.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::common::schema_for_output;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, ProgressNotificationParam};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, tool, tool_router};

use super::DrydockServer;
use super::tools::respond;
use crate::docs::ingest::{IngestProgress, IngestReport};
use crate::docs::service::{IndexRequest, LookupReport, LookupRequest};

/// How often a running docs_index reports its progress.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

#[tool_router(router = docs_tool_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(
        description = "Search the local documentation index (vectors + full text, fused) for the exact passage: Rust book, std, cargo, error codes, Elixir's stdlib, and every indexed crate or hex package at its version. Ask in words (\"how do I share a Vec between threads\") or by identifier (`E0502`, `Enum.chunk_every`, `--message-format`). With project_path, only that project's own docs, its dependencies at the versions its lock file pins and its language's toolchain docs. Returns ranked passages with library, version, file, heading, anchor and lines.",
        output_schema = schema_for_output::<LookupReport>()
    )]
    async fn docs_lookup(
        &self,
        Parameters(req): Parameters<LookupRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        tokio::select! {
            result = self.app.docs().lookup(req) => respond(result),
            _ = ctx.ct.cancelled() => Ok(CallToolResult::error(vec![ContentBlock::text("cancelled")])),
        }
    }

    #[tool(
        description = "Add documentation to the local index, incrementally (unchanged files are skipped, changed ones replaced, deleted ones removed): `project_path` (a cargo or mix project: its own docs and its dependencies' READMEs and API docs at their locked versions; `transitive` for every locked package), `paths` (files or directories of Markdown, text, HTML, Rust or Elixir sources) and/or `toolchain_docs` (the Rust docs rustup installed and Elixir's standard library). Sends progress notifications; embedding runs at ~40 passages/s, so a large corpus takes minutes. Cancelling keeps what was committed; the next call continues.",
        output_schema = schema_for_output::<IngestReport>()
    )]
    async fn docs_index(
        &self,
        Parameters(req): Parameters<IndexRequest>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let progress = Arc::new(IngestProgress::default());
        let reporter = tokio::spawn(report_progress(Arc::clone(&progress), ctx.clone()));
        let result = self.app.docs().index(req, progress, &ctx.ct).await;
        reporter.abort();
        respond(result)
    }
}

/// Progress notifications (when the client asked for them) and log messages, every second.
async fn report_progress(progress: Arc<IngestProgress>, ctx: RequestContext<RoleServer>) {
    let token = ctx.meta.get_progress_token();
    let mut ticker = tokio::time::interval(PROGRESS_EVERY);
    ticker.tick().await;
    loop {
        ticker.tick().await;
        let snapshot = progress.snapshot();
        if let Some(token) = &token {
            let done = snapshot.chunks_embedded + snapshot.chunks_reused;
            let param = ProgressNotificationParam::new(token.clone(), done as f64)
                .with_total(snapshot.chunks_expected().max(done) as f64)
                .with_message(snapshot.line());
            let _ = ctx.peer.notify_progress(param).await;
        }
    }
}
