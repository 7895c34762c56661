//! How a profile starts its agent for one run: the command, the first prompt, and drydock's
//! hooks and MCP config through the CLI's own flags.

use serde::{Deserialize, Deserializer, de};

use super::profile::Profile;

/// How to start the agent for one run. Each list is argv templates; placeholders are
/// `{prompt}`, `{drydock}` (drydock's own executable), `{hooks_file}` (a settings file
/// drydock writes with its hooks), `{mcp_file}` (an MCP client config naming drydock) and
/// `{mcp_url}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Launch {
    pub command: Vec<ArgTemplate>,
    /// Appended last, when there is a first prompt.
    #[serde(default)]
    pub prompt: Vec<ArgTemplate>,
    /// Hooks for this run only, through the CLI's own flags (never the user's files).
    #[serde(default)]
    pub hooks: Vec<ArgTemplate>,
    #[serde(default)]
    pub mcp: Vec<ArgTemplate>,
}

const PLACEHOLDERS: [&str; 5] = ["prompt", "drydock", "hooks_file", "mcp_file", "mcp_url"];

#[derive(Debug, Clone)]
pub struct ArgTemplate(String);

impl<'de> Deserialize<'de> for ArgTemplate {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        for name in placeholders(&text) {
            if !PLACEHOLDERS.contains(&name) {
                return Err(de::Error::custom(format!(
                    "unknown placeholder {{{name}}}: expected one of {PLACEHOLDERS:?}"
                )));
            }
        }
        Ok(ArgTemplate(text))
    }
}

fn placeholders(text: &str) -> impl Iterator<Item = &str> {
    text.split('{')
        .skip(1)
        .filter_map(|rest| rest.split_once('}').map(|(name, _)| name))
}

/// What a launch fills in; a part (hooks, MCP) is added only when asked for.
#[derive(Debug, Clone, Default)]
pub struct LaunchVars<'a> {
    pub prompt: Option<&'a str>,
    pub with_hooks: bool,
    pub with_mcp: bool,
    pub drydock: Option<&'a str>,
    pub hooks_file: Option<&'a str>,
    pub mcp_file: Option<&'a str>,
    pub mcp_url: Option<&'a str>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LaunchError {
    #[error("the {profile} profile cannot pass {part} for one run")]
    Unsupported { profile: String, part: &'static str },
    #[error("launching {profile} needs a value for {{{placeholder}}}")]
    Missing {
        profile: String,
        placeholder: String,
    },
}

impl Profile {
    /// The argv that starts this agent with `vars`.
    pub fn launch_argv(&self, vars: &LaunchVars<'_>) -> Result<Vec<String>, LaunchError> {
        let unsupported = |part| LaunchError::Unsupported {
            profile: self.name.clone(),
            part,
        };
        let launch = self.launch.as_ref().ok_or(unsupported("a launch"))?;
        let mut parts: Vec<&[ArgTemplate]> = vec![&launch.command];
        for (wanted, templates, part) in [
            (vars.with_hooks, &launch.hooks, "hooks"),
            (vars.with_mcp, &launch.mcp, "an MCP config"),
        ] {
            if wanted && templates.is_empty() {
                return Err(unsupported(part));
            }
            if wanted {
                parts.push(templates);
            }
        }
        if vars.prompt.is_some() {
            if launch.prompt.is_empty() {
                return Err(unsupported("a first prompt"));
            }
            parts.push(&launch.prompt);
        }
        parts
            .into_iter()
            .flatten()
            .map(|template| self.fill(template, vars))
            .collect()
    }

    fn fill(&self, template: &ArgTemplate, vars: &LaunchVars<'_>) -> Result<String, LaunchError> {
        let mut out = template.0.clone();
        for name in placeholders(&template.0) {
            let value = match name {
                "prompt" => vars.prompt,
                "drydock" => vars.drydock,
                "hooks_file" => vars.hooks_file,
                "mcp_file" => vars.mcp_file,
                _ => vars.mcp_url,
            };
            let value = value.ok_or_else(|| LaunchError::Missing {
                profile: self.name.clone(),
                placeholder: name.to_string(),
            })?;
            out = out.replace(&format!("{{{name}}}"), value);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::profile::Profiles;

    fn argv(words: &[&str]) -> Vec<String> {
        words.iter().map(|w| w.to_string()).collect()
    }

    #[test]
    fn launch_argv_passes_hooks_and_mcp_for_one_run() {
        let profiles = Profiles::embedded();
        let vars = LaunchVars {
            prompt: Some("fix it"),
            with_hooks: true,
            with_mcp: true,
            drydock: Some("/bin/drydock"),
            hooks_file: Some("/run/h.json"),
            mcp_file: Some("/run/m.json"),
            mcp_url: Some("http://127.0.0.1:7878/mcp"),
        };
        let claude = profiles.get("claude").unwrap().launch_argv(&vars).unwrap();
        assert_eq!(
            claude,
            argv(&[
                "claude",
                "--settings",
                "/run/h.json",
                "--mcp-config",
                "/run/m.json",
                "--",
                "fix it"
            ])
        );
        let codex = profiles.get("codex").unwrap().launch_argv(&vars).unwrap();
        assert_eq!(codex[0], "codex");
        assert!(codex.contains(&r#"notify=["/bin/drydock", "hook", "--agent", "codex"]"#.into()));
        assert!(codex.contains(&r#"mcp_servers.drydock.url="http://127.0.0.1:7878/mcp""#.into()));
        assert_eq!(codex.last().unwrap(), "fix it");

        let gemini = profiles.get("gemini").unwrap();
        assert!(matches!(
            gemini.launch_argv(&vars),
            Err(LaunchError::Unsupported { part: "hooks", .. })
        ));
        let missing = LaunchVars {
            with_hooks: true,
            ..LaunchVars::default()
        };
        assert_eq!(
            profiles.get("claude").unwrap().launch_argv(&missing),
            Err(LaunchError::Missing {
                profile: "claude".into(),
                placeholder: "hooks_file".into()
            })
        );
    }
}
