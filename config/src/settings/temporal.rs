//! The `[temporal]` section: the Temporal cluster incident rounds run on, and how to reach it.
//!
//! An `http://` address is plain gRPC (the dev server, a self-hosted frontend inside the
//! cluster). An `https://` address is TLS: the server's certificate is checked against the
//! system's roots or `server_ca_file`; `client_cert_file` and `client_key_file` add a client
//! certificate (mTLS); `api_key` is sent as `authorization: Bearer …` (Temporal Cloud). Secrets
//! and credentials are only ever sent over TLS, so setting any of them with `http://` is an error.

use super::check;
use crate::{ConfigError, SecretString};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Temporal.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemporalSettings {
    /// Frontend gRPC address: `http://127.0.0.1:7233`, or `https://…` for TLS.
    pub address: String,
    /// Namespace the rounds run in (Temporal Cloud: `NAMESPACE.ACCOUNT`).
    pub namespace: String,
    /// Task queue of the incident-analysis workers.
    pub task_queue: String,
    /// API key, sent as a bearer token (Temporal Cloud); empty sends none. Needs `https://`.
    pub api_key: SecretString,
    /// PEM file of the CA that signed the server's certificate; empty: the system's roots.
    pub server_ca_file: PathBuf,
    /// Name to verify the server's certificate against; empty: the address's host.
    pub server_name: String,
    /// PEM file of this process's client certificate (mTLS); set with `client_key_file`.
    pub client_cert_file: PathBuf,
    /// PEM file of the client certificate's private key (mTLS).
    pub client_key_file: PathBuf,
}

impl Default for TemporalSettings {
    fn default() -> Self {
        Self {
            address: "http://127.0.0.1:7233".into(),
            namespace: "default".into(),
            task_queue: "incident-analysis".into(),
            api_key: SecretString::default(),
            server_ca_file: PathBuf::new(),
            server_name: String::new(),
            client_cert_file: PathBuf::new(),
            client_key_file: PathBuf::new(),
        }
    }
}

impl TemporalSettings {
    /// Whether the connection is TLS (`https://`).
    pub fn tls(&self) -> bool {
        self.address.trim_start().starts_with("https://")
    }

    /// Whether a client certificate is configured (mTLS).
    pub fn client_certificate(&self) -> bool {
        !self.client_cert_file.as_os_str().is_empty()
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        check::http_url("temporal.address", &self.address)?;
        if self.task_queue.trim().is_empty() {
            return Err(ConfigError::rejected(
                "temporal.task_queue",
                "must not be empty",
            ));
        }
        if self.namespace.trim().is_empty() {
            return Err(ConfigError::rejected(
                "temporal.namespace",
                "must not be empty",
            ));
        }
        let cert = self.client_certificate();
        let key = !self.client_key_file.as_os_str().is_empty();
        if cert != key {
            let (missing, given) = if cert {
                ("temporal.client_key_file", "temporal.client_cert_file")
            } else {
                ("temporal.client_cert_file", "temporal.client_key_file")
            };
            return Err(ConfigError::rejected(
                missing,
                format!("must be set with {given} (a client certificate needs its key)"),
            ));
        }
        if !self.tls() {
            let needs_tls = [
                ("temporal.api_key", self.api_key.is_set()),
                (
                    "temporal.server_ca_file",
                    !self.server_ca_file.as_os_str().is_empty(),
                ),
                ("temporal.server_name", !self.server_name.trim().is_empty()),
                ("temporal.client_cert_file", cert),
            ];
            if let Some((setting, _)) = needs_tls.iter().find(|(_, set)| *set) {
                return Err(ConfigError::rejected(
                    setting,
                    "is only used over TLS: make temporal.address an https:// URL",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TemporalSettings;
    use crate::{ConfigError, SecretString};

    fn rejected(settings: &TemporalSettings) -> (&'static str, String) {
        match settings.validate() {
            Err(ConfigError::Rejected {
                setting, reason, ..
            }) => (setting, reason),
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    fn cloud() -> TemporalSettings {
        TemporalSettings {
            address: "https://us-east-1.aws.api.temporal.io:7233".into(),
            namespace: "firstline.a1b2c".into(),
            api_key: SecretString::new("tmprl-key-secret"),
            ..TemporalSettings::default()
        }
    }

    #[test]
    fn plain_grpc_is_the_default_and_tls_follows_the_scheme() {
        let plain = TemporalSettings::default();
        plain.validate().expect("the default is valid");
        assert!(!plain.tls());
        cloud().validate().expect("an API key over https is valid");
        assert!(cloud().tls());
        let mtls = TemporalSettings {
            address: "https://temporal.example.internal:7233".into(),
            server_ca_file: "/etc/temporal/ca.pem".into(),
            server_name: "temporal.example.internal".into(),
            client_cert_file: "/etc/temporal/client.pem".into(),
            client_key_file: "/etc/temporal/client.key".into(),
            ..TemporalSettings::default()
        };
        mtls.validate().expect("mTLS over https is valid");
        assert!(mtls.client_certificate());
    }

    #[test]
    fn credentials_are_never_sent_in_the_clear() {
        let key_over_http = TemporalSettings {
            address: "http://temporal:7233".into(),
            ..cloud()
        };
        let (setting, reason) = rejected(&key_over_http);
        assert_eq!(setting, "temporal.api_key");
        assert!(reason.contains("https://"), "{reason}");
        let cert_over_http = TemporalSettings {
            client_cert_file: "client.pem".into(),
            client_key_file: "client.key".into(),
            ..TemporalSettings::default()
        };
        assert_eq!(rejected(&cert_over_http).0, "temporal.client_cert_file");
        let ca_over_http = TemporalSettings {
            server_ca_file: "ca.pem".into(),
            ..TemporalSettings::default()
        };
        assert_eq!(rejected(&ca_over_http).0, "temporal.server_ca_file");
    }

    #[test]
    fn a_client_certificate_needs_its_key_and_the_reverse() {
        let cert_only = TemporalSettings {
            client_cert_file: "client.pem".into(),
            ..cloud()
        };
        assert_eq!(rejected(&cert_only).0, "temporal.client_key_file");
        let key_only = TemporalSettings {
            client_key_file: "client.key".into(),
            ..cloud()
        };
        assert_eq!(rejected(&key_only).0, "temporal.client_cert_file");
    }

    #[test]
    fn the_api_key_never_appears_in_debug_output() {
        let shown = format!("{:?}", cloud());
        assert!(!shown.contains("tmprl-key-secret"), "{shown}");
        assert!(shown.contains("***"), "{shown}");
    }

    #[test]
    fn empty_names_are_refused() {
        let no_queue = TemporalSettings {
            task_queue: " ".into(),
            ..TemporalSettings::default()
        };
        assert_eq!(rejected(&no_queue).0, "temporal.task_queue");
        let no_namespace = TemporalSettings {
            namespace: String::new(),
            ..TemporalSettings::default()
        };
        assert_eq!(rejected(&no_namespace).0, "temporal.namespace");
    }

    #[test]
    // figment::Jail fixes the closure signature (Result<(), figment::Error>); the size is not ours.
    #[allow(clippy::result_large_err)]
    fn the_key_comes_from_the_environment_and_the_files_from_toml() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "firstline.toml",
                "[temporal]\naddress = \"https://temporal.example:7233\"\n\
                 client_cert_file = \"/certs/tls.crt\"\nclient_key_file = \"/certs/tls.key\"\n",
            )?;
            jail.set_env("FIRSTLINE_TEMPORAL__API_KEY", "from-env");
            let settings =
                crate::Settings::load(Some(std::path::Path::new("firstline.toml"))).expect("loads");
            assert_eq!(settings.temporal.api_key.expose(), "from-env");
            assert_eq!(
                settings.temporal.client_cert_file,
                std::path::PathBuf::from("/certs/tls.crt")
            );
            Ok(())
        });
    }
}
