//! The model API's key stays with drydock: the sandbox's environment has a placeholder in each
//! key variable, the agent reaches its API at a stand-in address of the proxy in plain HTTP,
//! and the proxy puts the key in place of the placeholder in the requests to that API alone
//! (see [`net_gate::KeyedOrigin`]). A prompt-injected agent has no key to leak.

use std::collections::BTreeMap;

use url::Url;

use crate::agents::profile::SandboxNeeds;
use crate::sandbox::net_gate::{self, KeyedOrigin};

/// What a sandbox gets of the keys drydock holds for its agent.
#[derive(Debug, Default)]
pub(super) struct HeldKeys {
    /// Set inside: each held key's variable and its placeholder.
    pub placeholders: Vec<(String, String)>,
    /// Never passed in: every key variable the profile and the config name, set or not.
    pub withheld: Vec<String>,
    pub origins: Vec<KeyedOrigin>,
    /// The profile's API, when it is not on loopback: reached at a stand-in port inside.
    pub stand_in: Option<StandIn>,
}

/// The profile's API at a loopback port inside the sandbox, tunnelled to its origin.
#[derive(Debug)]
pub(super) struct StandIn {
    /// The variable that points the agent at it.
    pub var: String,
    url: Url,
    /// `host:port` of the origin.
    pub destination: String,
}

impl StandIn {
    /// The API's URL at the stand-in `port`: plain HTTP on loopback, its path kept.
    pub(super) fn url_at(&self, port: u16) -> String {
        let mut url = self.url.clone();
        let _ = url.set_scheme("http");
        let _ = url.set_host(Some("127.0.0.1"));
        let _ = url.set_port(Some(port));
        let text = url.to_string();
        match url.path() {
            "/" if url.query().is_none() => text.trim_end_matches('/').to_string(),
            _ => text,
        }
    }
}

/// The placeholder the sandbox sees in `var`: not a part of another variable's placeholder
/// (variable names hold no `-`), and no secret.
pub(super) fn placeholder(var: &str) -> String {
    format!("drydock-holds-the-key-of-{var}-here")
}

/// A key's API that drydock cannot hold the key for.
#[derive(Debug, thiserror::Error)]
pub(super) enum KeyError {
    #[error("{var}={url} is not a URL: {source}")]
    NotAUrl {
        var: String,
        url: String,
        source: url::ParseError,
    },
    #[error("{var}={url}: {why}")]
    BaseUrl {
        var: String,
        url: String,
        why: String,
    },
    #[error("[tasks] sandbox_keys.{var}: {why}")]
    Configured { var: String, why: String },
}

/// The keys of `needs` (its API's, at its base URL variable's URL or its default) and of
/// `configured` (`[tasks] sandbox_keys`: a variable and its API's URL) that `env` holds.
pub(super) fn held(
    needs: &SandboxNeeds,
    configured: &BTreeMap<String, Url>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<HeldKeys, KeyError> {
    let mut held = HeldKeys {
        withheld: needs
            .keys
            .iter()
            .chain(configured.keys())
            .cloned()
            .collect(),
        ..HeldKeys::default()
    };
    fn set<'a>(
        env: &dyn Fn(&str) -> Option<String>,
        var: &'a String,
    ) -> Option<(&'a String, String)> {
        env(var).filter(|value| !value.is_empty()).map(|v| (var, v))
    }
    let named = needs
        .base_url_env
        .iter()
        .find_map(|var| env(var).filter(|url| !url.is_empty()).map(|url| (var, url)));
    let api = match named {
        Some((var, url)) => Some((var.clone(), url)),
        None => needs
            .base_url
            .clone()
            .zip(needs.base_url_env.first().cloned())
            .map(|(url, var)| (var, url)),
    };
    let keys: Vec<(&String, String)> = needs.keys.iter().filter_map(|var| set(env, var)).collect();
    if let (Some((var, url)), false) = (api, keys.is_empty()) {
        let url = Url::parse(&url).map_err(|source| KeyError::NotAUrl {
            var: var.clone(),
            url: url.clone(),
            source,
        })?;
        let origin = origin_of(&url).map_err(|why| KeyError::BaseUrl {
            var: var.clone(),
            url: url.to_string(),
            why,
        })?;
        if !is_loopback(&url) {
            held.stand_in = Some(StandIn {
                var,
                destination: net_gate::authority(&origin.host, origin.port),
                url,
            });
        }
        held.add(origin, keys);
    }
    for (var, url) in configured {
        if let Some(key) = set(env, var) {
            let origin = origin_of(url).map_err(|why| KeyError::Configured {
                var: var.clone(),
                why,
            })?;
            held.add(origin, vec![key]);
        }
    }
    Ok(held)
}

impl HeldKeys {
    fn add(&mut self, mut origin: KeyedOrigin, keys: Vec<(&String, String)>) {
        for (var, key) in keys {
            let placeholder = placeholder(var);
            self.placeholders.push((var.clone(), placeholder.clone()));
            origin.secrets.push((placeholder, key));
        }
        let same = |o: &&mut KeyedOrigin| {
            o.is(&origin.host, origin.port) && o.tls.is_some() == origin.tls.is_some()
        };
        match self.origins.iter_mut().find(same) {
            Some(known) => known.secrets.append(&mut origin.secrets),
            None => self.origins.push(origin),
        }
    }
}

/// Whether `url` is an API on this machine's loopback, which the sandbox's loopback stands in
/// for at the same port.
pub(super) fn is_loopback(url: &Url) -> bool {
    url.scheme() == "http" && matches!(url.host_str(), Some("127.0.0.1" | "localhost" | "[::1]"))
}

fn origin_of(url: &Url) -> Result<KeyedOrigin, String> {
    let tls = match url.scheme() {
        "https" => Some(net_gate::public_tls()),
        "http" => None,
        other => return Err(format!("an API is reached over http or https, not {other}")),
    };
    let (Some(host), Some(port)) = (url.host_str(), url.port_or_known_default()) else {
        return Err("a URL without a host".into());
    };
    let host = match host {
        "localhost" => "127.0.0.1",
        other => other.trim_start_matches('[').trim_end_matches(']'),
    };
    Ok(KeyedOrigin {
        host: host.to_ascii_lowercase(),
        port,
        tls,
        secrets: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude() -> SandboxNeeds {
        SandboxNeeds {
            base_url_env: vec!["ANTHROPIC_BASE_URL".into()],
            base_url: Some("https://api.anthropic.com".into()),
            keys: vec!["ANTHROPIC_API_KEY".into(), "ANTHROPIC_AUTH_TOKEN".into()],
            ..SandboxNeeds::default()
        }
    }

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.clone())
        }
    }

    #[test]
    fn a_key_for_the_default_api_is_held_and_the_api_stands_in_on_loopback() {
        let held = held(
            &claude(),
            &BTreeMap::new(),
            &env(&[
                ("ANTHROPIC_API_KEY", "sk-ant-real"),
                ("ANTHROPIC_AUTH_TOKEN", ""),
            ]),
        )
        .unwrap();
        assert_eq!(
            held.placeholders,
            [(
                "ANTHROPIC_API_KEY".to_string(),
                placeholder("ANTHROPIC_API_KEY")
            )]
        );
        assert_eq!(held.withheld, ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"]);
        let [origin] = &held.origins[..] else {
            panic!("{:?}", held.origins)
        };
        assert_eq!(
            (origin.host.as_str(), origin.port),
            ("api.anthropic.com", 443)
        );
        assert!(origin.tls.is_some());
        assert_eq!(origin.secrets[0].1, "sk-ant-real");
        let stand_in = held.stand_in.unwrap();
        assert_eq!(stand_in.var, "ANTHROPIC_BASE_URL");
        assert_eq!(stand_in.destination, "api.anthropic.com:443");
        assert_eq!(stand_in.url_at(3129), "http://127.0.0.1:3129");
    }

    #[test]
    fn a_base_url_of_the_person_is_the_keyed_origin_and_keeps_its_path() {
        let codex = SandboxNeeds {
            base_url_env: vec!["OPENAI_BASE_URL".into()],
            base_url: Some("https://api.openai.com/v1".into()),
            keys: vec!["OPENAI_API_KEY".into()],
            ..SandboxNeeds::default()
        };
        let held = held(
            &codex,
            &BTreeMap::new(),
            &env(&[
                ("OPENAI_API_KEY", "sk-real"),
                ("OPENAI_BASE_URL", "https://gateway.example:8443/openai/v1"),
            ]),
        )
        .unwrap();
        assert_eq!(held.origins[0].host, "gateway.example");
        assert_eq!(held.origins[0].port, 8443);
        assert_eq!(
            held.stand_in.unwrap().url_at(3130),
            "http://127.0.0.1:3130/openai/v1"
        );
    }

    #[test]
    fn a_loopback_api_is_keyed_where_it_is_and_config_keys_join_their_origin() {
        let configured = BTreeMap::from([(
            "LAB_KEY".to_string(),
            Url::parse("http://localhost:4000/v1").unwrap(),
        )]);
        let held = held(
            &claude(),
            &configured,
            &env(&[
                ("ANTHROPIC_AUTH_TOKEN", "lab-token"),
                ("ANTHROPIC_BASE_URL", "http://127.0.0.1:4000"),
                ("LAB_KEY", "lab-key"),
            ]),
        )
        .unwrap();
        assert!(held.stand_in.is_none());
        let [origin] = &held.origins[..] else {
            panic!("{:?}", held.origins)
        };
        assert_eq!((origin.host.as_str(), origin.port), ("127.0.0.1", 4000));
        assert!(origin.tls.is_none());
        assert_eq!(origin.secrets.len(), 2);
        assert_eq!(
            held.withheld,
            ["ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "LAB_KEY"]
        );
    }

    #[test]
    fn without_a_key_in_the_environment_nothing_is_held_but_the_names_are_withheld() {
        let held = held(&claude(), &BTreeMap::new(), &env(&[])).unwrap();
        assert!(held.origins.is_empty() && held.placeholders.is_empty());
        assert!(held.stand_in.is_none());
        assert_eq!(held.withheld.len(), 2);
    }

    #[test]
    fn placeholders_are_no_part_of_one_another() {
        let (a, b) = (
            placeholder("OPENAI_API_KEY"),
            placeholder("OPENAI_API_KEY_2"),
        );
        assert!(!a.contains(&b) && !b.contains(&a));
    }
}
