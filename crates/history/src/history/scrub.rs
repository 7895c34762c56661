//! What the project memory never keeps: the values of the environment's secrets (as the
//! config read them, before drydock took them out of its own environment), drydock's token,
//! the task store's URL, and text shaped like a common credential: GitHub, AWS, Anthropic and
//! OpenAI keys, a `password=` value and a URL's password.

use std::sync::LazyLock;

use regex::Regex;

use crate::config::{Config, QueueStore};

/// Shorter values are not scrubbed: they would blank out ordinary words.
const SHORTEST_SECRET: usize = 6;
const HIDDEN: &str = "***";

/// Credential formats, each with what replaces a match.
static FORMATS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", HIDDEN),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", HIDDEN),
        (r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b", HIDDEN),
        // Anthropic's sk-ant-… and OpenAI's sk-… and sk-proj-….
        (r"\bsk-[A-Za-z0-9_-]{20,}", HIDDEN),
        (
            r"(?i)\b(password|passwd)(\s*[=:]\s*)[^\s&;,'`]+",
            "${1}${2}***",
        ),
        (r"(://[^/\s:@]+:)[^@\s/]+@", "${1}***@"),
        // A `.env` line of a key, token, secret or password, as `cat .env` prints it.
        (
            r"(?m)^(\s*(?:export\s+)?[A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?|AUTH)[A-Z0-9_]*\s*=\s*)[^\s#]+",
            "${1}***",
        ),
    ]
    .into_iter()
    .map(|(pattern, with)| (Regex::new(pattern).expect("a valid pattern"), with))
    .collect()
});

/// The secrets of one drydock, to take out of what its memory records.
pub(super) struct Secrets {
    /// Longest first, so a secret holding another is replaced whole.
    values: Vec<String>,
}

impl Secrets {
    pub(super) fn of(config: &Config) -> Secrets {
        let store = match &config.tasks.store {
            QueueStore::Postgres(url) => Some(url.clone()),
            QueueStore::Sqlite => None,
        };
        let mut values: Vec<String> = config
            .secret_values
            .values()
            .iter()
            .cloned()
            .chain(config.token.clone())
            .chain(store)
            .filter(|value| value.len() >= SHORTEST_SECRET)
            .collect();
        values.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Secrets { values }
    }

    /// `text` without the secrets' values and without credential-shaped text.
    pub(super) fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        for secret in &self.values {
            if text.contains(secret.as_str()) {
                text = text.replace(secret.as_str(), HIDDEN);
            }
        }
        for (format, with) in FORMATS.iter() {
            if format.is_match(&text) {
                text = format.replace_all(&text, *with).into_owned();
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Overrides;

    #[test]
    fn the_environments_secrets_are_scrubbed_though_drydock_removed_them() {
        let dir = tempfile::tempdir().unwrap();
        let env = |name: &str| match name {
            "GITHUB_TOKEN" => Some("plain-value-1234".to_string()),
            "DRYDOCK_TASKS_STORE" => Some("postgres://q:pw-98765@db/q".to_string()),
            _ => None,
        };
        let config = Config::resolve(&Overrides::default(), &env, dir.path()).unwrap();
        // This process's environment holds neither value, as a drydock's once it took its
        // secrets out of it: they come from what the config read.
        let secrets = Secrets::of(&config);
        let text = "pushing with plain-value-1234 to postgres://q:pw-98765@db/q done";
        assert_eq!(secrets.scrub(text), "pushing with *** to *** done");
    }

    #[test]
    fn credential_formats_are_scrubbed_and_ordinary_text_is_kept() {
        let secrets = Secrets { values: Vec::new() };
        for (text, kept) in [
            (
                "token ghp_abcdefghijklmnopqrstuvwxyz0123456789 used",
                "token *** used",
            ),
            ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "***"),
            ("key AKIAIOSFODNN7EXAMPLE here", "key *** here"),
            (
                "ANTHROPIC_API_KEY=sk-ant-api03-abcdefghijklmnopqrstuvwx",
                "ANTHROPIC_API_KEY=***",
            ),
            ("sk-proj-abcdefghijklmnopqrstuvwxyz", "***"),
            (
                "db?user=q&password=hunter2&ssl=1",
                "db?user=q&password=***&ssl=1",
            ),
            ("PASSWORD: hunter2", "PASSWORD: ***"),
            (
                "https://me:hunter2@example.com/x",
                "https://me:***@example.com/x",
            ),
            (
                "error[E0502]: cannot borrow `v` as mutable; see password_hash",
                "error[E0502]: cannot borrow `v` as mutable; see password_hash",
            ),
            ("ask-me-later and sk-short", "ask-me-later and sk-short"),
            (
                "STRIPE_SECRET_KEY=rk_live_51abc\nexport GH_AUTH=xyz123\nPORT=4000\n",
                "STRIPE_SECRET_KEY=***\nexport GH_AUTH=***\nPORT=4000\n",
            ),
            (
                "keyboard = 3\n  api_key = fetch()",
                "keyboard = 3\n  api_key = fetch()",
            ),
        ] {
            assert_eq!(secrets.scrub(text), kept, "{text}");
        }
    }
}
