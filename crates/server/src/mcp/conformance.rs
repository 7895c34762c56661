//! Fixtures for the official MCP conformance suite (`scripts/conformance.sh`): tools, prompts
//! and resources with the fixed names its scenarios call, plus a session manager that lets
//! `test_reconnection` close its own SSE stream.
//!
//! Test-only: compiled with the `conformance-fixtures` feature, never in a default build;
//! reached through [`fixtures`](super::fixtures) only.
#![allow(deprecated)] // logging and sampling are deprecated (SEP-2577), yet the suite tests them.

use std::sync::Arc;
use std::time::Duration;

use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ContentBlock, CreateMessageRequestParams, ElicitRequestParams, JsonObject,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, PromptMessage,
    ReadResourceResult, Resource, ResourceContents, ResourceTemplate, Role, SamplingMessage,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionHandle;
use rmcp::{ErrorData as McpError, RoleServer, prompt, prompt_router, tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use crate::mcp::DrydockServer;

/// A 1x1 red PNG.
const PNG_BASE64: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==";
/// A WAV file with one silent sample.
const WAV_BASE64: &str = "UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=";

const STATIC_TEXT_URI: &str = "test://static-text";
const STATIC_BINARY_URI: &str = "test://static-binary";
const WATCHED_URI: &str = "test://watched-resource";
const TEMPLATE_URI: &str = "test://template/{id}/data";

/// Pause between the notifications of the logging and progress tools.
const STEP: Duration = Duration::from_millis(50);
/// The `retry` a client is given when `test_reconnection` closes its stream.
const RECONNECT_RETRY: Duration = Duration::from_millis(500);

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct SamplingArgs {
    /// The prompt to send to the LLM.
    pub prompt: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct ElicitationArgs {
    /// The message to show the user.
    pub message: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct PromptArgs {
    /// First test argument.
    pub arg1: String,
    /// Second test argument.
    pub arg2: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
pub(super) struct EmbeddedResourceArgs {
    /// URI of the resource to embed.
    #[serde(rename = "resourceUri")]
    pub resource_uri: String,
}

#[tool_router(router = fixture_tool_router, vis = "pub(crate)")]
impl DrydockServer {
    #[tool(description = "Conformance fixture: returns simple text content")]
    async fn test_simple_text(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text(
            "This is a simple text response for testing.",
        )])
    }

    #[tool(description = "Conformance fixture: returns a PNG image")]
    async fn test_image_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::image(PNG_BASE64, "image/png")])
    }

    #[tool(description = "Conformance fixture: returns WAV audio")]
    async fn test_audio_content(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::audio(WAV_BASE64, "audio/wav")])
    }

    #[tool(description = "Conformance fixture: returns an embedded text resource")]
    async fn test_embedded_resource(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::resource(
            ResourceContents::text(
                "This is an embedded resource content.",
                "test://embedded-resource",
            )
            .with_mime_type("text/plain"),
        )])
    }

    #[tool(description = "Conformance fixture: returns text, an image and an embedded resource")]
    async fn test_multiple_content_types(&self) -> CallToolResult {
        CallToolResult::success(vec![
            ContentBlock::text("Multiple content types test:"),
            ContentBlock::image(PNG_BASE64, "image/png"),
            ContentBlock::resource(
                ResourceContents::text(
                    json!({ "test": "data", "value": 123 }).to_string(),
                    "test://mixed-content-resource",
                )
                .with_mime_type("application/json"),
            ),
        ])
    }

    #[tool(description = "Conformance fixture: always fails with isError")]
    async fn test_error_handling(&self) -> CallToolResult {
        CallToolResult::error(vec![ContentBlock::text(
            "This tool intentionally returns an error for testing",
        )])
    }

    #[tool(description = "Conformance fixture: sends three info log messages 50 ms apart")]
    async fn test_tool_with_logging(&self, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let messages = [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed",
        ];
        for (i, message) in messages.into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            let param = LoggingMessageNotificationParam::new(LoggingLevel::Info, json!(message))
                .with_logger("conformance");
            let _ = ctx.peer.notify_logging_message(param).await;
        }
        CallToolResult::success(vec![ContentBlock::text(
            "Tool with logging executed successfully",
        )])
    }

    #[tool(description = "Conformance fixture: reports progress 0, 50 and 100 of 100")]
    async fn test_tool_with_progress(&self, ctx: RequestContext<RoleServer>) -> CallToolResult {
        let token = ctx.meta.get_progress_token();
        for (i, progress) in [0.0, 50.0, 100.0].into_iter().enumerate() {
            if i > 0 {
                tokio::time::sleep(STEP).await;
            }
            if let Some(token) = &token {
                let param = ProgressNotificationParam::new(token.clone(), progress)
                    .with_total(100.0)
                    .with_message(format!("Completed step {progress} of 100"));
                let _ = ctx.peer.notify_progress(param).await;
            }
        }
        CallToolResult::success(vec![ContentBlock::text("Tool with progress completed")])
    }

    #[tool(description = "Conformance fixture: asks the client's LLM (sampling/createMessage)")]
    async fn test_sampling(
        &self,
        Parameters(args): Parameters<SamplingArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(args.prompt)], 100);
        match ctx.peer.create_message(params).await {
            Ok(result) => {
                let text = result
                    .message
                    .content
                    .first()
                    .and_then(|block| block.as_text())
                    .map_or("No response", |t| t.text.as_str());
                CallToolResult::success(vec![ContentBlock::text(format!("LLM response: {text}"))])
            }
            Err(e) => {
                CallToolResult::error(vec![ContentBlock::text(format!("sampling failed: {e}"))])
            }
        }
    }

    #[tool(description = "Conformance fixture: asks the user for a username and email")]
    async fn test_elicitation(
        &self,
        Parameters(args): Parameters<ElicitationArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "username": { "type": "string", "description": "User's response" },
                "email": { "type": "string", "description": "User's email address" }
            },
            "required": ["username", "email"]
        });
        elicit(&ctx, &args.message, schema, "User response").await
    }

    #[tool(
        description = "Conformance fixture: elicitation with defaults for every primitive type (SEP-1034)"
    )]
    async fn test_elicitation_sep1034_defaults(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": { "type": "string", "description": "User name", "default": "John Doe" },
                "age": { "type": "integer", "description": "User age", "default": 30 },
                "score": { "type": "number", "description": "User score", "default": 95.5 },
                "status": {
                    "type": "string",
                    "description": "User status",
                    "enum": ["active", "inactive", "pending"],
                    "default": "active"
                },
                "verified": { "type": "boolean", "description": "Verification status", "default": true }
            },
            "required": []
        });
        let message = "Please review and update the form fields with defaults";
        elicit(&ctx, message, schema, "Elicitation completed").await
    }

    #[tool(
        description = "Conformance fixture: elicitation with the five enum schema shapes (SEP-1330)"
    )]
    async fn test_elicitation_sep1330_enums(
        &self,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResult, McpError> {
        let schema = json!({
            "type": "object",
            "properties": {
                "untitledSingle": {
                    "type": "string",
                    "description": "Select one option",
                    "enum": ["option1", "option2", "option3"]
                },
                "titledSingle": {
                    "type": "string",
                    "description": "Select one option with titles",
                    "oneOf": [
                        { "const": "value1", "title": "First Option" },
                        { "const": "value2", "title": "Second Option" },
                        { "const": "value3", "title": "Third Option" }
                    ]
                },
                "legacyEnum": {
                    "type": "string",
                    "description": "Select one option (legacy)",
                    "enum": ["opt1", "opt2", "opt3"],
                    "enumNames": ["Option One", "Option Two", "Option Three"]
                },
                "untitledMulti": {
                    "type": "array",
                    "description": "Select multiple options",
                    "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
                },
                "titledMulti": {
                    "type": "array",
                    "description": "Select multiple options with titles",
                    "items": {
                        "anyOf": [
                            { "const": "value1", "title": "First Choice" },
                            { "const": "value2", "title": "Second Choice" },
                            { "const": "value3", "title": "Third Choice" }
                        ]
                    }
                }
            },
            "required": []
        });
        let message = "Please select options from the enum fields";
        elicit(&ctx, message, schema, "Elicitation completed").await
    }

    #[tool(
        description = "Conformance fixture: a hand-written JSON Schema 2020-12 inputSchema ($schema, $defs, additionalProperties)",
        input_schema = json_schema_2020_12()
    )]
    async fn json_schema_2020_12_tool(&self) -> CallToolResult {
        CallToolResult::success(vec![ContentBlock::text("JSON Schema 2020-12 tool called")])
    }

    #[tool(
        description = "Conformance fixture: closes its SSE stream mid-call; the result arrives after the client reconnects with Last-Event-ID (SEP-1699)"
    )]
    async fn test_reconnection(&self, ctx: RequestContext<RoleServer>) -> CallToolResult {
        // Like the suite's reference server: without a stream to close (stdio, or HTTP without
        // `FixtureSessions`), answer on the open stream.
        let Some(stream) = ctx.extensions.get::<RequestStream>() else {
            return CallToolResult::success(vec![ContentBlock::text(
                "Reconnection test completed without closing a stream: this transport has no SSE stream to close.",
            )]);
        };
        if let Err(e) = stream
            .session
            .close_sse_stream(stream.http_request_id, Some(RECONNECT_RETRY))
            .await
        {
            return CallToolResult::error(vec![ContentBlock::text(format!(
                "could not close the SSE stream: {e}"
            ))]);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        CallToolResult::success(vec![ContentBlock::text(
            "Reconnection test completed successfully. If you received this, the client properly reconnected after stream closure.",
        )])
    }
}

#[prompt_router(router = "fixture_prompt_router", vis = "pub(crate)")]
impl DrydockServer {
    #[prompt(
        name = "test_simple_prompt",
        description = "Conformance fixture: a prompt without arguments"
    )]
    async fn test_simple_prompt(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )]
    }

    #[prompt(
        name = "test_prompt_with_arguments",
        description = "Conformance fixture: a prompt that substitutes arg1 and arg2"
    )]
    async fn test_prompt_with_arguments(
        &self,
        Parameters(args): Parameters<PromptArgs>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!(
                "Prompt with arguments: arg1='{}', arg2='{}'",
                args.arg1, args.arg2
            ),
        )]
    }

    #[prompt(
        name = "test_prompt_with_embedded_resource",
        description = "Conformance fixture: a prompt embedding the resource resourceUri"
    )]
    async fn test_prompt_with_embedded_resource(
        &self,
        Parameters(args): Parameters<EmbeddedResourceArgs>,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::resource(
                    ResourceContents::text(
                        "Embedded resource content for testing.",
                        args.resource_uri,
                    )
                    .with_mime_type("text/plain"),
                ),
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    #[prompt(
        name = "test_prompt_with_image",
        description = "Conformance fixture: a prompt with a PNG image"
    )]
    async fn test_prompt_with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(Role::User, ContentBlock::image(PNG_BASE64, "image/png")),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }
}

/// Sends a form elicitation and reports the client's answer as `"{label}: action=.., content=.."`.
async fn elicit(
    ctx: &RequestContext<RoleServer>,
    message: &str,
    schema: Value,
    label: &str,
) -> Result<CallToolResult, McpError> {
    let params: ElicitRequestParams = serde_json::from_value(json!({
        "mode": "form",
        "message": message,
        "requestedSchema": schema,
    }))
    .map_err(|e| McpError::internal_error(format!("bad elicitation fixture: {e}"), None))?;
    Ok(match ctx.peer.create_elicitation(params).await {
        Ok(result) => {
            let action = serde_json::to_value(&result.action).unwrap_or(Value::Null);
            let content = result.content.unwrap_or_else(|| json!({}));
            CallToolResult::success(vec![ContentBlock::text(format!(
                "{label}: action={}, content={content}",
                action.as_str().unwrap_or("unknown"),
            ))])
        }
        Err(e) => {
            CallToolResult::error(vec![ContentBlock::text(format!("elicitation failed: {e}"))])
        }
    })
}

/// The inputSchema of `json_schema_2020_12_tool`, served verbatim.
fn json_schema_2020_12() -> Arc<JsonObject> {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "type": "object",
                "properties": {
                    "street": { "type": "string" },
                    "city": { "type": "string" }
                }
            }
        },
        "properties": {
            "name": { "type": "string" },
            "address": { "$ref": "#/$defs/address" }
        },
        "additionalProperties": false
    });
    match schema {
        Value::Object(object) => Arc::new(object),
        _ => unreachable!("the schema literal is an object"),
    }
}

pub fn resources() -> Vec<Resource> {
    vec![
        Resource::new(STATIC_TEXT_URI, "static-text")
            .with_description("Conformance fixture: a static text resource")
            .with_mime_type("text/plain"),
        Resource::new(STATIC_BINARY_URI, "static-binary")
            .with_description("Conformance fixture: a static binary resource (PNG)")
            .with_mime_type("image/png"),
        Resource::new(WATCHED_URI, "watched-resource")
            .with_description("Conformance fixture: a resource to subscribe to")
            .with_mime_type("text/plain"),
    ]
}

pub fn resource_templates() -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(TEMPLATE_URI, "template-data")
            .with_description("Conformance fixture: JSON data for the id in the URI")
            .with_mime_type("application/json"),
    ]
}

/// The fixture resource at `uri`: every `test://` URI belongs to the fixtures (unknown ones
/// read as not found).
pub fn read(uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
    uri.starts_with("test://").then(|| read_fixture(uri))
}

/// The conformance suite's tools and prompts, beside drydock's own.
pub fn extend_routers(
    tools: &mut ToolRouter<DrydockServer>,
    prompts: &mut PromptRouter<DrydockServer>,
) {
    tools.merge(DrydockServer::fixture_tool_router());
    super::conformance_tasks::extend(tools);
    prompts.merge(DrydockServer::fixture_prompt_router());
}

fn read_fixture(uri: &str) -> Result<ReadResourceResult, McpError> {
    let contents = match uri {
        STATIC_TEXT_URI => {
            ResourceContents::text("This is the content of the static text resource.", uri)
                .with_mime_type("text/plain")
        }
        STATIC_BINARY_URI => ResourceContents::blob(PNG_BASE64, uri).with_mime_type("image/png"),
        WATCHED_URI => {
            ResourceContents::text("Watched resource content", uri).with_mime_type("text/plain")
        }
        _ => match template_id(uri) {
            Some(id) => {
                let data =
                    json!({ "id": id, "templateTest": true, "data": format!("Data for ID: {id}") });
                ResourceContents::text(data.to_string(), uri).with_mime_type("application/json")
            }
            None => {
                return Err(McpError::resource_not_found(
                    format!("unknown fixture resource `{uri}`"),
                    None,
                ));
            }
        },
    };
    Ok(ReadResourceResult::new(vec![contents]))
}

/// The `{id}` of `test://template/{id}/data`.
fn template_id(uri: &str) -> Option<&str> {
    let id = uri
        .strip_prefix("test://template/")?
        .strip_suffix("/data")?;
    (!id.is_empty() && !id.contains('/')).then_some(id)
}

/// Where a request's SSE stream lives: put into each request's extensions by
/// the HTTP layer's fixture session manager, so `test_reconnection` can close its own stream.
#[derive(Clone)]
pub struct RequestStream {
    pub session: LocalSessionHandle,
    pub http_request_id: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_ids_are_parsed() {
        assert_eq!(template_id("test://template/123/data"), Some("123"));
        assert_eq!(template_id("test://template//data"), None);
        assert_eq!(template_id("test://template/1/2/data"), None);
        assert_eq!(template_id("test://static-text"), None);
    }

    #[test]
    fn template_resource_reflects_the_id() {
        let result = read("test://template/123/data").unwrap().unwrap();
        let ResourceContents::TextResourceContents { text, .. } = &result.contents[0] else {
            panic!("text expected");
        };
        let value: Value = serde_json::from_str(text.as_str()).unwrap();
        assert_eq!(
            value,
            json!({ "id": "123", "templateTest": true, "data": "Data for ID: 123" })
        );
    }

    #[test]
    fn unknown_fixture_uris_are_not_found() {
        assert!(matches!(read("test://nope"), Some(Err(_))));
        assert!(read("drydock://server").is_none());
    }

    #[test]
    fn json_schema_fixture_keeps_2020_12_keywords() {
        let schema = json_schema_2020_12();
        assert!(schema.contains_key("$schema"));
        assert!(schema.contains_key("$defs"));
        assert_eq!(schema["additionalProperties"], json!(false));
    }
}
