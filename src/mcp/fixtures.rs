//! The one hook for test fixtures. The official MCP conformance suite calls tools, prompts
//! and resources with fixed names; [`conformance`](super::conformance) serves them when
//! drydock is built with the test-only `conformance-fixtures` feature. In a normal build
//! every function here adds nothing.

#[cfg(feature = "conformance-fixtures")]
pub(crate) use super::conformance::{
    RequestStream, extend_routers, read, resource_templates, resources,
};

#[cfg(not(feature = "conformance-fixtures"))]
pub(crate) use none::*;

#[cfg(not(feature = "conformance-fixtures"))]
mod none {
    use rmcp::ErrorData as McpError;
    use rmcp::handler::server::router::prompt::PromptRouter;
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::model::{ReadResourceResult, Resource, ResourceTemplate};

    use crate::mcp::DrydockServer;

    pub(crate) fn extend_routers(
        _tools: &mut ToolRouter<DrydockServer>,
        _prompts: &mut PromptRouter<DrydockServer>,
    ) {
    }

    pub(crate) fn resources() -> Vec<Resource> {
        Vec::new()
    }

    pub(crate) fn resource_templates() -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// The fixture resource at `uri`, when it is one.
    pub(crate) fn read(_uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
        None
    }
}
