//! Ports for the embedded stack: a configured port must be free, and 0 means "pick one".

use crate::StackError;
use std::net::{Ipv4Addr, TcpListener};

/// A port request: the configured value and how to name it in an error.
#[derive(Debug, Clone, Copy)]
pub struct PortSetting {
    /// Configured port; 0 asks for any free port.
    pub port: u16,
    /// What the port is for, e.g. "PostgreSQL".
    pub purpose: &'static str,
    /// The setting that sets it (`dev.postgres_port`); errors name it and its variable.
    pub setting: &'static str,
}

/// Returns a port that was free a moment ago on 127.0.0.1.
///
/// A free port can still be taken between this check and the service binding it; the service's
/// own bind error then surfaces through its readiness check.
pub fn resolve(request: PortSetting) -> Result<u16, StackError> {
    match TcpListener::bind((Ipv4Addr::LOCALHOST, request.port)) {
        Ok(listener) => listener
            .local_addr()
            .map(|address| address.port())
            .map_err(StackError::io("reading a bound port")),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(StackError::PortInUse {
            port: request.port,
            purpose: request.purpose,
            setting: request.setting,
        }),
        Err(e) => Err(StackError::Io {
            context: format!("binding 127.0.0.1:{}", request.port),
            source: e,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_picks_a_free_port() {
        let port = resolve(PortSetting {
            port: 0,
            purpose: "test",
            setting: "X",
        })
        .unwrap();
        assert_ne!(port, 0);
    }

    #[test]
    fn an_occupied_port_is_named_with_its_setting() {
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let port = held.local_addr().unwrap().port();
        let error = resolve(PortSetting {
            port,
            purpose: "PostgreSQL",
            setting: "dev.postgres_port",
        })
        .unwrap_err()
        .to_string();
        assert!(error.contains(&port.to_string()), "{error}");
        assert!(error.contains("dev.postgres_port"), "{error}");
        assert!(error.contains("FIRSTLINE_DEV__POSTGRES_PORT"), "{error}");
    }
}
