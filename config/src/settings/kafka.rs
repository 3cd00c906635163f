//! The `[kafka]` section: the Kafka-protocol broker every recorded message is published to, and
//! how to reach it (plaintext, TLS, SASL PLAIN or SCRAM, as managed Kafka services ask).

use crate::{ConfigError, SecretString};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// How the clients talk to the brokers (librdkafka's `security.protocol`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KafkaSecurity {
    #[default]
    Plaintext,
    Ssl,
    SaslPlaintext,
    SaslSsl,
}

impl KafkaSecurity {
    /// librdkafka's name for it, which is also the setting's value.
    pub fn protocol(self) -> &'static str {
        match self {
            KafkaSecurity::Plaintext => "plaintext",
            KafkaSecurity::Ssl => "ssl",
            KafkaSecurity::SaslPlaintext => "sasl_plaintext",
            KafkaSecurity::SaslSsl => "sasl_ssl",
        }
    }

    /// Whether the connection is TLS.
    pub fn tls(self) -> bool {
        matches!(self, KafkaSecurity::Ssl | KafkaSecurity::SaslSsl)
    }

    /// Whether the client logs in with SASL.
    pub fn sasl(self) -> bool {
        matches!(self, KafkaSecurity::SaslPlaintext | KafkaSecurity::SaslSsl)
    }
}

/// The SASL mechanisms the clients offer.
pub const SASL_MECHANISMS: &[&str] = &["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

/// Kafka (any Kafka-protocol broker).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaSettings {
    /// Bootstrap servers, comma-separated `host:port`.
    pub brokers: String,
    /// Topic every recorded Slack message is published to.
    pub topic: String,
    /// `plaintext`, `ssl`, `sasl_plaintext` or `sasl_ssl`.
    pub security: KafkaSecurity,
    /// With TLS: a PEM bundle of the CAs to trust instead of the system's.
    pub ca_file: Option<PathBuf>,
    /// With SASL: `PLAIN`, `SCRAM-SHA-256` or `SCRAM-SHA-512`.
    pub sasl_mechanism: String,
    /// With SASL: the user name.
    pub sasl_username: String,
    /// With SASL: the password (a secret: from the environment, never logged).
    pub sasl_password: SecretString,
}

impl Default for KafkaSettings {
    fn default() -> Self {
        Self {
            brokers: "127.0.0.1:9092".into(),
            topic: "firstline.messages".into(),
            security: KafkaSecurity::Plaintext,
            ca_file: None,
            sasl_mechanism: String::new(),
            sasl_username: String::new(),
            sasl_password: SecretString::default(),
        }
    }
}

impl KafkaSettings {
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if self.brokers.trim().is_empty() {
            return Err(ConfigError::rejected(
                "kafka.brokers",
                "must list at least one host:port",
            ));
        }
        if self.ca_file.is_some() && !self.security.tls() {
            return Err(ConfigError::rejected(
                "kafka.ca_file",
                "is for TLS: set kafka.security to ssl or sasl_ssl",
            ));
        }
        if self.security.sasl() {
            if !SASL_MECHANISMS.contains(&self.sasl_mechanism.as_str()) {
                return Err(ConfigError::rejected(
                    "kafka.sasl_mechanism",
                    format!(
                        "`{}` is not one of {}",
                        self.sasl_mechanism,
                        SASL_MECHANISMS.join(", ")
                    ),
                ));
            }
        } else if !self.sasl_mechanism.is_empty() {
            return Err(ConfigError::rejected(
                "kafka.sasl_mechanism",
                "is for SASL: set kafka.security to sasl_plaintext or sasl_ssl",
            ));
        }
        Ok(())
    }

    /// The librdkafka properties every client (producer, consumer, admin) sets from this
    /// section: the brokers and the security settings. The password is in it: never log them.
    /// A SASL login without a user or password is refused here, not at load: both come from a
    /// Secret in the environment, and the settings file alone must load.
    pub fn client_properties(&self) -> Result<Vec<(&'static str, String)>, ConfigError> {
        if self.security.sasl() && self.sasl_username.trim().is_empty() {
            return Err(ConfigError::rejected(
                "kafka.sasl_username",
                "SASL needs the user (from the Secret's kafka-sasl-username)",
            ));
        }
        if self.security.sasl() && self.sasl_password.expose().is_empty() {
            return Err(ConfigError::rejected(
                "kafka.sasl_password",
                "SASL needs the password (from the Secret's kafka-sasl-password)",
            ));
        }
        let mut properties = vec![
            ("bootstrap.servers", self.brokers.clone()),
            ("security.protocol", self.security.protocol().to_string()),
        ];
        if let Some(ca) = &self.ca_file {
            properties.push(("ssl.ca.location", ca.display().to_string()));
        }
        if self.security.sasl() {
            properties.push(("sasl.mechanism", self.sasl_mechanism.clone()));
            properties.push(("sasl.username", self.sasl_username.clone()));
            properties.push(("sasl.password", self.sasl_password.expose().to_string()));
        }
        Ok(properties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejected(settings: &KafkaSettings) -> &'static str {
        match settings.validate() {
            Err(ConfigError::Rejected { setting, .. }) => setting,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn plaintext_by_default_and_sasl_over_tls_sets_every_property() {
        let plain = KafkaSettings::default();
        plain.validate().expect("valid");
        assert_eq!(
            plain.client_properties().expect("properties"),
            [
                ("bootstrap.servers", "127.0.0.1:9092".to_string()),
                ("security.protocol", "plaintext".to_string())
            ]
        );
        let managed = KafkaSettings {
            brokers: "b-1.kafka.example:9096".into(),
            security: KafkaSecurity::SaslSsl,
            ca_file: Some("/etc/firstline/kafka-ca.pem".into()),
            sasl_mechanism: "SCRAM-SHA-512".into(),
            sasl_username: "firstline".into(),
            sasl_password: SecretString::new("s3cret-Pw"),
            ..KafkaSettings::default()
        };
        managed.validate().expect("valid");
        let properties = managed.client_properties().expect("properties");
        for wanted in [
            ("security.protocol", "sasl_ssl"),
            ("ssl.ca.location", "/etc/firstline/kafka-ca.pem"),
            ("sasl.mechanism", "SCRAM-SHA-512"),
            ("sasl.username", "firstline"),
            ("sasl.password", "s3cret-Pw"),
        ] {
            assert!(
                properties.iter().any(|(k, v)| (*k, v.as_str()) == wanted),
                "{wanted:?} in {:?}",
                properties.iter().map(|(k, _)| k).collect::<Vec<_>>()
            );
        }
        assert!(!format!("{managed:?}").contains("s3cret-Pw"));
    }

    #[test]
    fn mismatched_security_settings_name_the_setting() {
        let ca_without_tls = KafkaSettings {
            ca_file: Some("/ca.pem".into()),
            ..KafkaSettings::default()
        };
        assert_eq!(rejected(&ca_without_tls), "kafka.ca_file");
        let unknown_mechanism = KafkaSettings {
            security: KafkaSecurity::SaslPlaintext,
            sasl_mechanism: "GSSAPI".into(),
            sasl_username: "u".into(),
            sasl_password: SecretString::new("p"),
            ..KafkaSettings::default()
        };
        assert_eq!(rejected(&unknown_mechanism), "kafka.sasl_mechanism");
        // The login comes from the environment: the file loads, a client without it is refused.
        let no_user = KafkaSettings {
            security: KafkaSecurity::SaslSsl,
            sasl_mechanism: "PLAIN".into(),
            ..KafkaSettings::default()
        };
        no_user.validate().expect("loads without the Secret");
        let no_password = KafkaSettings {
            sasl_username: "u".into(),
            ..no_user.clone()
        };
        for (settings, missing) in [
            (no_user, "kafka.sasl_username"),
            (no_password, "kafka.sasl_password"),
        ] {
            match settings.client_properties() {
                Err(ConfigError::Rejected { setting, .. }) => assert_eq!(setting, missing),
                other => panic!("a client without {missing}: {other:?}"),
            }
        }
        let sasl_without_security = KafkaSettings {
            sasl_mechanism: "PLAIN".into(),
            ..KafkaSettings::default()
        };
        assert_eq!(rejected(&sasl_without_security), "kafka.sasl_mechanism");
    }
}
