//! Settings that carry credentials, wrapped so they never reach a log line.
//!
//! Settings are logged at start-up and printed by `firstline doctor`; the database URL (with its
//! password) and the Slack tokens are therefore wrapped instead of being plain `String`s.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A `postgres://user:password@host:port/db` URL.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct DatabaseUrl(String);

impl DatabaseUrl {
    /// Wraps a URL.
    pub fn new(url: impl Into<String>) -> Self {
        Self(url.into())
    }

    /// The URL with its password, for connecting. Never log this.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The URL with the password replaced by `***`, safe to print.
    pub fn redacted(&self) -> String {
        let url = &self.0;
        let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
            return url.clone();
        };
        let authority_end = url[scheme_end..]
            .find(['/', '?'])
            .map_or(url.len(), |i| scheme_end + i);
        let authority = &url[scheme_end..authority_end];
        match (authority.rfind('@'), authority.find(':')) {
            (Some(at), Some(colon)) if colon < at => format!(
                "{}{}:***{}",
                &url[..scheme_end],
                &authority[..colon],
                &url[scheme_end + at..]
            ),
            _ => url.clone(),
        }
    }

    /// `host:port` of the URL, for messages such as "cannot reach 127.0.0.1:5432".
    pub fn host_port(&self) -> String {
        let url = &self.0;
        let rest = url.find("://").map_or(url.as_str(), |i| &url[i + 3..]);
        let authority = rest.split(['/', '?']).next().unwrap_or(rest);
        let host = authority.rsplit('@').next().unwrap_or(authority);
        if host.contains(':') {
            host.to_string()
        } else {
            format!("{host}:5432")
        }
    }
}

impl fmt::Debug for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DatabaseUrl({})", self.redacted())
    }
}

impl fmt::Display for DatabaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// A secret (token, signing secret): never printed by `Debug`/`Display`, empty when unset.
#[derive(Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SecretString(String);

impl SecretString {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Self(secret.into())
    }

    /// The secret itself, for signing or authenticating. Never log this.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// Whether a value was configured.
    pub fn is_set(&self) -> bool {
        !self.0.trim().is_empty()
    }
}

impl fmt::Debug for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.is_set() { "\"***\"" } else { "\"\"" })
    }
}

impl fmt::Display for SecretString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}
