//! The MCP server: one `DrydockServer` per session (or per stateless request), all sharing
//! the same `BuildTools`.

mod docs_tools;
mod logging;
mod prompts;
pub(crate) mod request_params;
mod resources;
mod terminal_resources;
mod terminal_tools;
mod tools;

use rmcp::handler::server::router::{prompt::PromptRouter, tool::ToolRouter};
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CompleteRequestParams, CompleteResult, CompletionInfo, CustomRequest, CustomResult, ErrorCode,
    Implementation, ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams,
    ReadResourceResponse, Reference, ServerCapabilities, ServerConfig, SubscribeRequestParams,
    UnsubscribeRequestParams,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, prompt_handler, tool_handler};

use std::sync::Arc;

use crate::build::BuildTools;
use crate::docs::service::Docs;
use crate::terminal::registry::Terminals;
use logging::ClientLogging;

const INSTRUCTIONS: &str = "drydock runs cargo and mix for you in allowed project directories and returns structured results, the same shapes for Rust and Elixir. \
Start with project_info, use type_check or compile to get exact errors (file, line, column, code, message), \
test to run tests (failures with file, line and left/right values), lint for clippy or credo, format for rustfmt or mix format, run to execute the program or an allowed task. \
docs_lookup finds the exact documentation passage (std, the Rust book, cargo, Elixir, and the project's dependencies at their locked versions) in a local index; docs_index adds a project's docs to it. \
Build tools take project_path. A failing build or test is a normal result whose status says so; isError means the call could not run (e.g. a path outside the allowed roots).";

#[derive(Clone)]
pub struct DrydockServer {
    tools: BuildTools,
    terminals: Arc<Terminals>,
    docs: Arc<Docs>,
    subscriptions: Arc<Subscriptions>,
    logging: ClientLogging,
    tool_router: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl DrydockServer {
    pub fn new(tools: BuildTools, terminals: Arc<Terminals>, docs: Arc<Docs>) -> Self {
        let mut tool_router = Self::tool_router();
        tool_router.merge(Self::terminal_tool_router());
        tool_router.merge(Self::docs_tool_router());
        for route in tool_router.list_all() {
            if !tools.config().tool_enabled(&route.name) {
                tool_router.remove_route(&route.name);
            }
        }
        #[cfg(feature = "conformance-fixtures")]
        tool_router.merge(Self::fixture_tool_router());
        #[allow(unused_mut)]
        let mut prompt_router = Self::prompt_router();
        #[cfg(feature = "conformance-fixtures")]
        prompt_router.merge(Self::fixture_prompt_router());
        Self {
            tools,
            terminals,
            docs,
            subscriptions: Arc::default(),
            logging: ClientLogging::default(),
            tool_router,
            prompt_router,
        }
    }
}

/// The session resources one MCP session watches; their watchers stop with it.
#[derive(Default)]
struct Subscriptions(std::sync::Mutex<std::collections::HashMap<String, tokio::task::AbortHandle>>);

impl Subscriptions {
    fn add(&self, uri: String, watcher: tokio::task::AbortHandle) {
        let replaced = self
            .0
            .lock()
            .expect("subscriptions lock")
            .insert(uri, watcher);
        if let Some(previous) = replaced {
            previous.abort();
        }
    }

    fn remove(&self, uri: &str) -> bool {
        let removed = self.0.lock().expect("subscriptions lock").remove(uri);
        removed.map(|watcher| watcher.abort()).is_some()
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        for watcher in self.0.get_mut().expect("subscriptions lock").values() {
            watcher.abort();
        }
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for DrydockServer {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("drydock", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let mut all = resources::list();
        all.extend(terminal_resources::list(&self.terminals));
        Ok(ListResourcesResult::with_all_items(all))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        #[allow(unused_mut)]
        let mut templates = terminal_resources::templates();
        #[cfg(feature = "conformance-fixtures")]
        templates.extend(crate::conformance::fixture_resource_templates());
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            templates,
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if let Some(result) = terminal_resources::read(&self.terminals, &request.uri).await {
            return result.map(Into::into);
        }
        if request.uri == resources::DOCS_URI {
            return resources::read_docs(&self.docs).await.map(Into::into);
        }
        resources::read(&self.tools, &request.uri).map(Into::into)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        let Some(name) = terminal_resources::session_of(&request.uri) else {
            return resources::check_known(&self.tools, &request.uri);
        };
        let core = self
            .terminals
            .core_of(name)
            .await
            .map_err(|e| McpError::resource_not_found(e.to_string(), None))?;
        let watcher = tokio::spawn(terminal_resources::watch(
            core,
            ctx.peer.clone(),
            request.uri.clone(),
        ));
        self.subscriptions.add(request.uri, watcher.abort_handle());
        Ok(())
    }

    #[allow(deprecated)]
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        if self.subscriptions.remove(&request.uri) {
            return Ok(());
        }
        resources::check_known(&self.tools, &request.uri)
    }

    #[allow(deprecated)]
    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.logging.set_level(request.level);
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(_), "project_path") => {
                resources::project_paths_starting_with(&self.tools, &request.argument.value)
            }
            _ => Vec::new(),
        };
        let total = values.len();
        let shown: Vec<String> = values
            .into_iter()
            .take(CompletionInfo::MAX_VALUES)
            .collect();
        let mut info = CompletionInfo::new(shown).map_err(|e| McpError::internal_error(e, None))?;
        info.total = u32::try_from(total).ok();
        info.has_more = Some(total > CompletionInfo::MAX_VALUES);
        Ok(CompleteResult::new(info))
    }

    /// rmcp hands over known methods whose params it could not read as custom requests:
    /// those are invalid params, not unknown methods.
    async fn on_custom_request(
        &self,
        request: CustomRequest,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<CustomResult, McpError> {
        match request_params::explain(&request.method, request.params.as_ref()) {
            Some(problem) => Err(McpError::invalid_params(
                format!("Invalid params: {problem}"),
                None,
            )),
            None => Err(McpError::new(
                ErrorCode::METHOD_NOT_FOUND,
                format!("Method not found: {}", request.method),
                None,
            )),
        }
    }
}
