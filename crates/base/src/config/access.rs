//! Who may reach drydock and what it serves: the bind address, the token, the toolsets and
//! the tools switched off.

use std::net::SocketAddr;

use super::{ConfigError, EnvLookup, Overrides, ToolName, Toolset};

pub const DEFAULT_BIND: &str = "127.0.0.1:7878";

fn parse_bind(text: &str) -> Result<SocketAddr, ConfigError> {
    let text = text.trim();
    if let Ok(addr) = text.parse() {
        return Ok(addr);
    }
    // `localhost:7878` is what people type.
    match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|p| SocketAddr::from(([127, 0, 0, 1], p)))
            .map_err(|_| ConfigError::Bind(text.to_string())),
        None => Err(ConfigError::Bind(text.to_string())),
    }
}

pub(super) fn resolve_bind(
    overrides: &Overrides,
    file: Option<String>,
    env: EnvLookup,
) -> Result<SocketAddr, ConfigError> {
    let text = overrides
        .bind
        .clone()
        .or_else(|| env("DRYDOCK_BIND"))
        .or(file)
        .unwrap_or_else(|| DEFAULT_BIND.to_string());
    parse_bind(&text)
}

pub(super) fn resolve_token(
    overrides: &Overrides,
    file: Option<String>,
    env: EnvLookup,
) -> Option<String> {
    overrides
        .token
        .clone()
        .or_else(|| env("DRYDOCK_TOKEN"))
        .or(file)
        .filter(|t| !t.is_empty())
}

pub(super) fn resolve_tools(
    toolsets: Option<Vec<String>>,
    disabled: Option<Vec<String>>,
) -> Result<(Vec<Toolset>, Vec<ToolName>), ConfigError> {
    let toolsets = match toolsets {
        Some(names) => names
            .iter()
            .map(|n| Toolset::parse(n).ok_or_else(|| ConfigError::UnknownToolset(n.clone())))
            .collect::<Result<Vec<_>, _>>()?,
        None => Toolset::ALL.to_vec(),
    };
    let disabled = disabled
        .unwrap_or_default()
        .iter()
        .map(|n| ToolName::parse(n).ok_or_else(|| ConfigError::UnknownTool(n.clone())))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((toolsets, disabled))
}
