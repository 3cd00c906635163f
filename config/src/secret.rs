//! A database URL whose password never reaches a log line.
//!
//! Settings are logged at start-up and printed by `firstline doctor`; the URL is the one setting
//! that carries a password, so it is wrapped instead of being a plain `String`.

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
