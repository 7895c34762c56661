//! The MCP server: one `DrydockServer` per session (or per stateless request), all sharing
//! the same `App`.

mod agent_resources;
mod boundary;
#[cfg(feature = "conformance-fixtures")]
mod conformance;
#[cfg(feature = "conformance-fixtures")]
mod conformance_tasks;
mod elicitation;
pub mod fixtures;
#[doc(hidden)]
pub mod fuzzing;
mod instructions;
mod logging;
mod long_calls;
mod prompts;
pub mod request_params;
mod resources;
mod stdio;
mod task_resources;
mod terminal_resources;
mod tools;

use rmcp::handler::server::router::{prompt::PromptRouter, tool::ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;
#[allow(deprecated)]
use rmcp::model::SetLevelRequestParams;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, CompleteRequestParams,
    CompleteResult, CompletionInfo, CustomRequest, CustomResult, ErrorCode, GetTaskParams,
    GetTaskResult, Implementation, ListResourcesResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, Tool, UnsubscribeRequestParams, UpdateTaskParams,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler};
use tracing::Instrument;

use std::sync::Arc;

use crate::app::App;
use crate::call::Call;
use crate::catalog::{ToolName, Toolset};
use crate::telemetry;
use crate::tool_call::{self, Caller};
use logging::ClientLogging;
use long_calls::{Routed, TaskSupport};
pub use stdio::{StdioError, serve_stdio};

#[derive(Clone)]
pub struct DrydockServer {
    app: Arc<App>,
    subscriptions: Arc<Subscriptions>,
    logging: ClientLogging,
    /// The served tools as `tools/list` shows them; their calls go to `tool_call`.
    tools: Arc<[Tool]>,
    /// The conformance suite's fixture tools (none in a normal build).
    fixture_tools: ToolRouter<Self>,
    prompt_router: PromptRouter<Self>,
}

impl DrydockServer {
    pub fn new(app: Arc<App>) -> Self {
        let tools = tools::served(app.config()).into();
        let mut fixture_tools = ToolRouter::new();
        let mut prompt_router = Self::prompt_router();
        fixtures::extend_routers(&mut fixture_tools, &mut prompt_router);
        Self {
            app,
            subscriptions: Arc::default(),
            logging: ClientLogging::default(),
            tools,
            fixture_tools,
            prompt_router,
        }
    }

    /// A server for one more session, or one more stateless request (every 2026-07-28 call):
    /// this one's tools and routers, whose schemas are built once, and state of its own.
    pub fn for_session(&self) -> Self {
        Self {
            app: self.app.clone(),
            subscriptions: Arc::default(),
            logging: ClientLogging::default(),
            tools: self.tools.clone(),
            fixture_tools: self.fixture_tools.clone(),
            prompt_router: self.prompt_router.clone(),
        }
    }

    /// Every tool `tools/list` shows, by name: the served ones and the fixtures.
    fn listed(&self) -> impl Iterator<Item = Tool> {
        let mut tools: Vec<Tool> = self.tools.to_vec();
        tools.extend(self.fixture_tools.list_all());
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools.into_iter()
    }

    /// Runs a served tool through `tool_call` under `context.ct`: traced, with the request's
    /// progress notifications, its task's token and its client's elicitation.
    async fn run_tool(
        &self,
        tool: ToolName,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = serde_json::Value::Object(request.arguments.unwrap_or_default());
        let client = tools::client_name(&context);
        let caller_trace = telemetry::CallerTrace {
            traceparent: context.meta.get_traceparent(),
            tracestate: context.meta.get_tracestate(),
        };
        let span = telemetry::tool_call_span(tool.name(), client.as_deref(), caller_trace);
        let scope = boundary::scope_of(&context.extensions);
        let caller = Caller {
            client,
            scope: scope.as_ref(),
            ask: elicitation::asker(&context.peer),
            watch: context
                .extensions
                .get::<Arc<long_calls::CallWatch>>()
                .map(|watch| watch.as_ref()),
        };
        let notifier = tools::ProgressNotifier::for_request(self, &context);
        let call = Call::new(&notifier, context.ct.clone()).by(tools::client_of(&context));
        let result = tool_call::call_tool_by(&self.app, tool, arguments, &call, caller)
            .instrument(span.clone())
            .await;
        drop(call);
        notifier.flush().await;
        let ended = match &result {
            Ok(_) => "ok",
            Err(_) if context.ct.is_cancelled() => "cancelled",
            Err(_) => "error",
        };
        telemetry::end_tool_call(&span, ended);
        Ok(CallToolResponse::Complete(tools::respond(result)))
    }

    /// A fixture tool's call, or "tool not found".
    async fn call_fixture(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let call = ToolCallContext::new(self, request, context);
        self.fixture_tools.call(call).await
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

impl ServerHandler for DrydockServer {
    fn get_info(&self) -> ServerConfig {
        #[allow(deprecated)]
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_resources()
            .enable_resources_subscribe()
            .enable_logging()
            .enable_completions();
        // The tasks extension where this drydock keeps tasks (`serve` and `mcp`).
        let capabilities = match self.app.long_calls() {
            Some(_) => capabilities.enable_tasks().build(),
            None => capabilities.build(),
        };
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("drydock", env!("CARGO_PKG_VERSION")))
            .with_instructions(instructions::instructions(&self.app.config().toolsets))
    }

    /// Every call of a served tool runs with a cancellation that shutdown also triggers, and
    /// is published on the event feed when it starts and when it ends.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        mut context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let served = ToolName::parse(&request.name).filter(|t| self.app.config().tool_enabled(*t));
        let Some(tool) = served else {
            // Not a tool of the catalog: the router answers (a fixture, or "tool not found").
            let support = fixtures::task_support(&request.name);
            if long_calls::as_task(support, &self.app, &context)? {
                return self.call_as_task(Routed::Fixture, request, context).await;
            }
            return self.call_fixture(request, context).await;
        };
        if long_calls::as_task(TaskSupport::of(tool), &self.app, &context)? {
            return self
                .call_as_task(Routed::Catalog(tool), request, context)
                .await;
        }
        let (cancel, _tracked) = self.app.call_token(&context.ct);
        context.ct = cancel;
        self.run_tool(tool, request, context).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        self.get_long_call(&request.task_id, &context).await
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.cancel_long_call(&request.task_id, &context).await
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        self.update_long_call(&request.task_id, request.input_responses, &context)
            .await
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.listed().find(|tool| tool.name == name)
    }

    /// Every served tool; for a task's agent, only those its token may call.
    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListToolsResult, McpError> {
        let scoped = boundary::scope_of(&context.extensions).is_some();
        let tools = self
            .listed()
            .filter(|tool| {
                !scoped || ToolName::parse(&tool.name).is_some_and(ToolName::for_task_agents)
            })
            .collect();
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let scope = match scoped {
            true => rmcp::model::CacheScope::Private,
            false => rmcp::model::CacheScope::Public,
        };
        Ok(rmcp::model::ListToolsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            tools,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(scope),
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let scope = boundary::scope_of(&ctx.extensions);
        let shown = boundary::resources_shown(scope.as_ref(), resources::list(&self.app));
        Ok(ListResourcesResult::with_all_items(shown))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListResourceTemplatesResult, McpError> {
        let mut templates = resources::docs_templates();
        templates.extend(terminal_resources::templates());
        templates.extend(agent_resources::templates());
        templates.extend(task_resources::templates());
        templates.extend(fixtures::resource_templates());
        let scope = boundary::scope_of(&ctx.extensions);
        Ok(rmcp::model::ListResourceTemplatesResult::with_all_items(
            boundary::templates_shown(scope.as_ref(), templates),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        boundary::check_resource(boundary::scope_of(&ctx.extensions).as_ref(), &request.uri)?;
        resources::read(&self.app, &request.uri)
            .await
            .map(Into::into)
    }

    #[allow(deprecated)]
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        boundary::check_resource(boundary::scope_of(&ctx.extensions).as_ref(), &request.uri)?;
        if agent_resources::is_agent_uri(&request.uri) {
            let agents = self.app.agents().clone();
            let watcher = tokio::spawn(agent_resources::watch(
                agents,
                ctx.peer.clone(),
                request.uri.clone(),
            ));
            self.subscriptions.add(request.uri, watcher.abort_handle());
            return Ok(());
        }
        if task_resources::is_task_uri(&request.uri) {
            let feed = self.app.events().subscribe();
            let watcher = tokio::spawn(task_resources::watch(
                feed,
                ctx.peer.clone(),
                request.uri.clone(),
            ));
            self.subscriptions.add(request.uri, watcher.abort_handle());
            return Ok(());
        }
        let Some(name) = terminal_resources::session_of(&request.uri) else {
            return resources::check_known(&request.uri);
        };
        let core = self
            .app
            .terminals()
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
        resources::check_known(&request.uri)
    }

    /// From the handshake on, the client hears (as a warning log message) whenever an agent
    /// starts waiting.
    async fn on_initialized(&self, ctx: NotificationContext<RoleServer>) {
        let scope = boundary::scope_of(&ctx.extensions);
        if !self.app.config().toolsets.contains(&Toolset::Agents)
            || !boundary::hears_agents(scope.as_ref())
        {
            return;
        }
        let announcer = tokio::spawn(agent_resources::announce_waiting(
            self.app.events().subscribe(),
            self.logging.clone(),
            ctx.peer,
        ));
        self.subscriptions
            .add("log:agents-waiting".into(), announcer.abort_handle());
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
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let values = match (&request.r#ref, request.argument.name.as_str()) {
            (Reference::Prompt(_), "project_path") => {
                let workspace = self.app.toolchains().workspace();
                let all =
                    resources::project_paths_starting_with(workspace, &request.argument.value)
                        .await;
                boundary::projects_shown(boundary::scope_of(&ctx.extensions).as_ref(), all)
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

    /// The prompts; under a task's token those for what its tools can do.
    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::ListPromptsResult, McpError> {
        let scope = boundary::scope_of(&context.extensions);
        let prompts = self
            .prompt_router
            .list_all()
            .into_iter()
            .filter(|prompt| boundary::prompt_shown(scope.as_ref(), &prompt.name))
            .collect();
        let cache_hints = context
            .protocol_version()
            .is_some_and(|version| version >= rmcp::model::ProtocolVersion::V_2026_07_28);
        let cache_scope = match scope {
            Some(_) => rmcp::model::CacheScope::Private,
            None => rmcp::model::CacheScope::Public,
        };
        Ok(rmcp::model::ListPromptsResult {
            result_type: Some(rmcp::model::ResultType::COMPLETE),
            prompts,
            meta: None,
            next_cursor: None,
            ttl_ms: cache_hints.then_some(0),
            cache_scope: cache_hints.then_some(cache_scope),
        })
    }

    async fn get_prompt(
        &self,
        request: rmcp::model::GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<rmcp::model::GetPromptResponse, McpError> {
        boundary::check_prompt(
            boundary::scope_of(&context.extensions).as_ref(),
            &request.name,
        )?;
        let prompt = rmcp::handler::server::prompt::PromptContext::new(
            self,
            request.name,
            request.arguments,
            context,
        );
        self.prompt_router.get_prompt(prompt).await
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::Mode;
    use crate::config::{Config, Overrides};
    use crate::events::CallStatus;

    fn names(tools: Vec<Tool>) -> Vec<String> {
        let mut names: Vec<String> = tools.into_iter().map(|t| t.name.to_string()).collect();
        names.sort();
        names
    }

    /// Every tool of the catalog is served, once, with the annotations the catalog gives it.
    #[test]
    fn the_served_tools_are_the_catalog_with_its_annotations() {
        let all = every_tool();
        let mut catalog: Vec<String> = ToolName::ALL.iter().map(|t| t.to_string()).collect();
        catalog.sort();
        assert_eq!(names(all.clone()), catalog);
        for tool in all {
            let name = ToolName::parse(&tool.name).unwrap();
            assert_eq!(tool, tools::described(name), "{name}");
            assert!(
                tool.annotations.is_some() && tool.output_schema.is_some(),
                "{name}"
            );
        }
    }

    fn every_tool() -> Vec<Tool> {
        let mut tools: Vec<_> = ToolName::ALL.iter().map(|t| tools::described(*t)).collect();
        tools.sort_by(|a, b| a.name.cmp(&b.name));
        tools
    }

    /// Every type name a client sees in tools/list names one shape across the catalog.
    /// rmcp strips the top-level title of a tool's input and output schema; the names left
    /// are those of the types they are made of, in `$defs`. Two different types of one name
    /// would read as one to a client that gathers the definitions of every tool.
    #[test]
    fn every_type_name_in_the_tool_list_names_one_shape() {
        let mut shapes: std::collections::HashMap<String, (String, serde_json::Value)> =
            std::collections::HashMap::new();
        for tool in every_tool() {
            let input = ("input", Some(tool.input_schema.clone()));
            for (kind, schema) in [input, ("output", tool.output_schema.clone())] {
                let place = format!("{}'s {kind}", tool.name);
                let definitions = schema
                    .as_ref()
                    .and_then(|schema| schema.get("$defs")?.as_object().cloned())
                    .unwrap_or_default();
                for (name, shape) in definitions {
                    match shapes.get(&name) {
                        Some((first, seen)) => {
                            assert_eq!(seen, &shape, "{name} in {first} and in {place}")
                        }
                        None => {
                            shapes.insert(name, (place.clone(), shape));
                        }
                    }
                }
            }
        }
        assert!(shapes.contains_key("WaitMethod"), "{:?}", shapes.keys());
    }

    #[tokio::test]
    async fn switched_off_tools_are_not_served() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("drydock.toml"),
            "toolsets = [\"build\", \"docs\"]\ndisabled_tools = [\"run\"]\n",
        )
        .unwrap();
        let config = Config::resolve(&Overrides::default(), &|_| None, dir.path()).unwrap();
        let app = App::start(Arc::new(config), Mode::OneCall(ToolName::Compile)).await;
        let server = DrydockServer::new(app);
        let expected: Vec<ToolName> = ToolName::ALL
            .iter()
            .copied()
            .filter(|t| {
                use crate::catalog::Toolset::{Build, Docs};
                matches!(t.toolset(), Build | Docs) && *t != ToolName::Run
            })
            .collect();
        let mut expected: Vec<String> = expected.iter().map(|t| t.to_string()).collect();
        expected.sort();
        assert_eq!(names(server.tools.to_vec()), expected);
    }

    /// A client of a server of `app` in this process.
    async fn connected(app: &Arc<App>) -> rmcp::service::RunningService<rmcp::RoleClient, ()> {
        use rmcp::ServiceExt;
        let (server_io, client_io) = tokio::io::duplex(1 << 20);
        let server = DrydockServer::new(app.clone());
        tokio::spawn(async move {
            let running = server.serve(server_io).await.expect("server handshake");
            let _ = running.waiting().await;
        });
        ().serve(client_io).await.unwrap()
    }

    /// A terminal call's cancellation reaches the terminal: the wait ends at once, and the
    /// call goes on the event feed as cancelled.
    #[tokio::test]
    async fn a_cancelled_terminal_wait_ends_at_once() {
        use crate::events::{EventKind, Received};
        use rmcp::model::{ClientRequest, Request};
        let home = tempfile::tempdir().unwrap();
        let toml = format!(
            "[terminal]\nshell = \"bash\"\ntmux_socket = \"drydock-test-{}\"\n",
            std::process::id()
        );
        std::fs::write(home.path().join("drydock.toml"), toml).unwrap();
        let overrides = Overrides {
            allow_roots: vec![home.path().to_path_buf()],
            ..Default::default()
        };
        let config = Config::resolve(&overrides, &|_| None, home.path()).unwrap();
        let app = App::start(Arc::new(config), Mode::Stdio).await;
        let client = connected(&app).await;
        let call = |tool: &'static str, arguments: serde_json::Value| {
            CallToolRequestParams::new(tool).with_arguments(arguments.as_object().unwrap().clone())
        };
        let home_dir = home.path().to_str().unwrap();
        let create = serde_json::json!({"name": "w", "cwd": home_dir, "env": {"HOME": home_dir}});
        let created = client
            .call_tool(call("terminal_create", create))
            .await
            .unwrap();
        assert_ne!(created.is_error, Some(true), "{created:?}");

        let mut feed = app.events().subscribe();
        let never =
            serde_json::json!({"session": "w", "pattern": "never shown", "max_wait_ms": 60000});
        let wait = ClientRequest::CallToolRequest(Request::new(call("terminal_wait", never)));
        let handle = client
            .send_cancellable_request(wait, Default::default())
            .await
            .unwrap();
        let mut next_event = async || match feed.recv().await {
            Some(Received::Event(event)) => event.kind,
            other => panic!("{other:?}"),
        };
        assert!(matches!(next_event().await, EventKind::ToolCallStarted(_)));
        let cancelled = std::time::Instant::now();
        handle.cancel(Some("test".into())).await.unwrap();
        let finished = tokio::time::timeout(std::time::Duration::from_secs(2), next_event())
            .await
            .expect("the wait ends at once");
        let EventKind::ToolCallFinished { status, .. } = finished else {
            panic!("{finished:?}");
        };
        assert_eq!(
            status,
            CallStatus::Cancelled,
            "after {:?}",
            cancelled.elapsed()
        );
        client.cancel().await.unwrap();
        app.shutdown().await;
    }

    #[tokio::test]
    async fn every_tool_call_is_published_on_the_event_feed() {
        use crate::events::{EventKind, Received};
        let projects = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
            .join("test-projects");
        let overrides = Overrides {
            allow_roots: vec![projects.clone()],
            ..Default::default()
        };
        let config = Config::resolve(&overrides, &|_| None, &projects).unwrap();
        let app = App::start(Arc::new(config), Mode::Stdio).await;
        let mut feed = app.events().subscribe();
        let client = connected(&app).await;
        let call = |arguments: serde_json::Value| {
            CallToolRequestParams::new("project_info")
                .with_arguments(arguments.as_object().unwrap().clone())
        };
        let clean = projects.join("cargo-clean").canonicalize().unwrap();
        let clean = clean.to_str().unwrap();
        client
            .call_tool(call(serde_json::json!({ "project_path": clean })))
            .await
            .unwrap();
        client
            .call_tool(call(serde_json::json!({ "project_path": "/" })))
            .await
            .unwrap();
        let mut seen = Vec::new();
        while seen.len() < 4 {
            match feed.recv().await {
                Some(Received::Event(event)) => seen.push(event),
                other => panic!("{other:?}"),
            }
        }
        let EventKind::ToolCallStarted(first) = &seen[0].kind else {
            panic!("{:?}", seen[0]);
        };
        assert_eq!(first.tool, ToolName::ProjectInfo);
        assert_eq!(first.project.as_deref(), Some(clean));
        let EventKind::ToolCallFinished { call, status, .. } = &seen[1].kind else {
            panic!("{:?}", seen[1]);
        };
        assert_eq!(call, first);
        assert_eq!(status, &CallStatus::Completed { status: None });
        let EventKind::ToolCallFinished { status, .. } = &seen[3].kind else {
            panic!("{:?}", seen[3]);
        };
        let CallStatus::Error { message } = status else {
            panic!("{status:?}");
        };
        assert!(message.contains("outside the allowed roots"), "{message}");
        assert!(seen.windows(2).all(|pair| pair[1].seq == pair[0].seq + 1));
        client.cancel().await.unwrap();
        app.shutdown().await;
    }
}
