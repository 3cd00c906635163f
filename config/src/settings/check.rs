//! Checks several sections share, each rejecting the setting by name.

use crate::ConfigError;

/// Rejects the first zero in `values`: each is a count, size or duration, and zero would stall or
/// switch off what it bounds.
pub(super) fn at_least_one(values: &[(&'static str, u64)]) -> Result<(), ConfigError> {
    match values.iter().find(|(_, value)| *value == 0) {
        Some((setting, _)) => Err(ConfigError::rejected(setting, "must be at least 1")),
        None => Ok(()),
    }
}

/// Rejects `value` unless it is an `ip:port` a process can bind to.
pub(super) fn socket_addr(setting: &'static str, value: &str) -> Result<(), ConfigError> {
    match value.parse::<std::net::SocketAddr>() {
        Ok(_) => Ok(()),
        Err(_) => Err(ConfigError::rejected(
            setting,
            format!("`{value}` is not an ip:port address"),
        )),
    }
}

/// Rejects `value` unless it is an http(s) URL, so a typo fails at start-up rather than on the
/// first call.
pub(super) fn http_url(setting: &'static str, value: &str) -> Result<(), ConfigError> {
    if value.starts_with("http://") || value.starts_with("https://") {
        Ok(())
    } else {
        Err(ConfigError::rejected(
            setting,
            "must be an http:// or https:// URL",
        ))
    }
}
