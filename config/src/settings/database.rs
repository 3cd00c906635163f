//! The `[database]` section: the PostgreSQL that is Firstline's source of truth.

use super::check;
use crate::{ConfigError, DatabaseUrl};
use serde::{Deserialize, Serialize};

/// PostgreSQL (with the pgvector extension).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DatabaseSettings {
    /// `postgres://user:password@host:port/database`.
    pub url: DatabaseUrl,
    /// Connections in each process's pool.
    pub max_connections: u32,
    /// Seconds to wait for a connection before giving up.
    pub connect_timeout_secs: u64,
}

impl Default for DatabaseSettings {
    fn default() -> Self {
        Self {
            url: DatabaseUrl::new("postgres://firstline:firstline@127.0.0.1:55432/firstline"),
            max_connections: 10,
            connect_timeout_secs: 5,
        }
    }
}

impl DatabaseSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let url = self.url.expose();
        if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) {
            return Err(ConfigError::rejected(
                "database.url",
                "must start with postgres:// or postgresql://",
            ));
        }
        check::at_least_one(&[("database.max_connections", u64::from(self.max_connections))])
    }
}
