//! The one hook for test fixtures. The official MCP conformance suite calls tools, prompts
//! and resources with fixed names; [`conformance`](super::conformance) serves them when
//! drydock is built with the test-only `conformance-fixtures` feature. In a normal build
//! every function here adds nothing.

#[cfg(feature = "conformance-fixtures")]
pub use super::conformance::{RequestStream, extend_routers, read, resource_templates, resources};
#[cfg(feature = "conformance-fixtures")]
pub use super::conformance_tasks::task_support;

#[cfg(not(feature = "conformance-fixtures"))]
pub use none::*;

#[cfg(not(feature = "conformance-fixtures"))]
mod none {
    use rmcp::ErrorData as McpError;
    use rmcp::handler::server::router::prompt::PromptRouter;
    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::model::{ReadResourceResult, Resource, ResourceTemplate};

    use crate::mcp::DrydockServer;

    pub fn extend_routers(
        _tools: &mut ToolRouter<DrydockServer>,
        _prompts: &mut PromptRouter<DrydockServer>,
    ) {
    }

    pub fn resources() -> Vec<Resource> {
        Vec::new()
    }

    /// Whether the fixture tool `name` may become an MCP task: none is served.
    pub fn task_support(_name: &str) -> crate::mcp::long_calls::TaskSupport {
        crate::mcp::long_calls::TaskSupport::Forbidden
    }

    pub fn resource_templates() -> Vec<ResourceTemplate> {
        Vec::new()
    }

    /// The fixture resource at `uri`, when it is one.
    pub fn read(_uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
        None
    }
}
