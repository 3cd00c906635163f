//! How Firstline's processes reach Temporal: the `[temporal]` settings made into a connected
//! client, the same way for the bot's relay, the round worker and `firstline doctor`.
//!
//! An `http://` address is plain gRPC. An `https://` address is TLS, verified against the
//! system's roots or `temporal.server_ca_file` under `temporal.server_name`; a client
//! certificate makes it mTLS; `temporal.api_key` travels as `authorization: Bearer …` (Temporal
//! Cloud's API keys). Credentials never travel over `http://`: the settings crate refuses them,
//! and so does this one, for callers that rewrote the address after validation. The files are
//! read and parsed here, at connect, so a missing file or one that holds no PEM stops the process
//! with its setting and path named. Connecting asks the frontend `GetSystemInfo`, so a refused key
//! or certificate fails here too, not at the first poll. Certificates are read once: a rotated one
//! takes effect when the process restarts.
//!
//! Every client carries the SDK's tracing plugin: a call made inside a trace (the relay's signal)
//! puts its W3C context in the `_tracer-data` header, and a worker built on the client runs each
//! activity in the context it received (one trace per alert; the global tracer exports, or, with
//! no exporter configured, records nothing).
//!
//! Never `{:?}` a `Client` or the SDK's `ConnectionOptions`: their derived `Debug` shows the key.

use firstline_config::TemporalSettings;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::time::Duration;
use temporalio_client::errors::ClientConnectError;
use temporalio_client::{
    Client, ClientOptions, ClientTlsOptions, ConnectionOptions, TlsOptions, Url,
};

/// Why no client could be made.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// `temporal.address` does not parse as a URL.
    #[error("temporal.address `{0}` is not a URL")]
    Address(String),
    /// A certificate or key file could not be read.
    #[error("{setting} `{}`: {source}", path.display())]
    Read {
        /// The setting naming the file.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// Why reading failed.
        source: std::io::Error,
    },
    /// A certificate or key file holds no usable PEM.
    #[error("{setting} `{}`: {reason}", path.display())]
    Pem {
        /// The setting naming the file.
        setting: &'static str,
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An API key with a plaintext address: it would travel in the clear.
    #[error("temporal.api_key is only sent over TLS, and temporal.address `{0}` is not https://")]
    KeyInTheClear(String),
    /// The frontend did not answer in time.
    #[error("connecting to Temporal at {address}: no answer within {after:?}")]
    Timeout {
        /// `temporal.address`.
        address: String,
        /// The deadline.
        after: Duration,
    },
    /// The connection, the TLS handshake or the first call failed.
    #[error("connecting to Temporal at {address}: {reason}")]
    Refused {
        /// `temporal.address`.
        address: String,
        /// The client's error and its causes, outermost first.
        reason: String,
    },
}

/// Connects to the frontend `settings` name and returns a client for its namespace. `identity`
/// names this process in Temporal's history (`firstline-worker@PID`); `timeout` bounds the TCP
/// connect, the TLS handshake and the first call together.
pub async fn connect(
    settings: &TemporalSettings,
    identity: impl Into<String>,
    timeout: Duration,
) -> Result<Client, ConnectError> {
    let options = connection_options(settings, identity.into(), timeout)?;
    let address = settings.address.clone();
    // The tracing plugin (global tracer, W3C Trace Context in the `_tracer-data` header): a
    // signal carries the caller's trace, and a worker built on this client runs each activity in
    // it. With no exporter configured the global tracer records nothing, and nothing is sent.
    let tracing = temporalio_sdk::opentelemetry::OpenTelemetryPlugin::builder().build();
    let connecting = Client::connect(
        options,
        ClientOptions::new(settings.namespace.clone())
            .plugin(tracing)
            .build(),
    );
    match tokio::time::timeout(timeout, connecting).await {
        Err(_) => Err(ConnectError::Timeout {
            address,
            after: timeout,
        }),
        Ok(Err(error)) => Err(ConnectError::Refused {
            address,
            reason: explain(&error, settings),
        }),
        Ok(Ok(client)) => Ok(client),
    }
}

/// The SDK's connection options for `settings`, reading the certificate files.
fn connection_options(
    settings: &TemporalSettings,
    identity: String,
    timeout: Duration,
) -> Result<ConnectionOptions, ConnectError> {
    let url: Url = settings
        .address
        .trim()
        .parse()
        .map_err(|_| ConnectError::Address(settings.address.clone()))?;
    let api_key = settings
        .api_key
        .is_set()
        .then(|| settings.api_key.expose().trim().to_string());
    if api_key.is_some() && !settings.tls() {
        return Err(ConnectError::KeyInTheClear(settings.address.clone()));
    }
    Ok(ConnectionOptions::new(url)
        .identity(identity)
        .connect_timeout(timeout)
        .maybe_tls_options(tls_options(settings)?)
        .maybe_api_key(api_key)
        .build())
}

fn tls_options(settings: &TemporalSettings) -> Result<Option<TlsOptions>, ConnectError> {
    if !settings.tls() {
        return Ok(None);
    }
    let server_root_ca_cert = if settings.server_ca_file.as_os_str().is_empty() {
        None
    } else {
        Some(certificates(
            "temporal.server_ca_file",
            &settings.server_ca_file,
        )?)
    };
    let client_tls_options = if settings.client_certificate() {
        Some(
            ClientTlsOptions::builder()
                .client_cert(certificates(
                    "temporal.client_cert_file",
                    &settings.client_cert_file,
                )?)
                .client_private_key(private_key(
                    "temporal.client_key_file",
                    &settings.client_key_file,
                )?)
                .build(),
        )
    } else {
        None
    };
    let server_name = settings.server_name.trim();
    Ok(Some(
        TlsOptions::builder()
            .maybe_server_root_ca_cert(server_root_ca_cert)
            .maybe_domain((!server_name.is_empty()).then(|| server_name.to_string()))
            .maybe_client_tls_options(client_tls_options)
            .build(),
    ))
}

/// A PEM file's bytes, once it is known to hold at least one certificate and nothing
/// unreadable (tonic would skip what it cannot parse and fail later, without naming the file).
fn certificates(setting: &'static str, path: &Path) -> Result<Vec<u8>, ConnectError> {
    let pem = read(setting, path)?;
    let mut found = 0usize;
    for certificate in CertificateDer::pem_slice_iter(&pem) {
        certificate.map_err(|e| bad_pem(setting, path, format!("unreadable PEM: {e}")))?;
        found += 1;
    }
    if found == 0 {
        return Err(bad_pem(setting, path, "no PEM certificate in it".into()));
    }
    Ok(pem)
}

/// A PEM file's bytes, once it is known to hold a private key.
fn private_key(setting: &'static str, path: &Path) -> Result<Vec<u8>, ConnectError> {
    let pem = read(setting, path)?;
    PrivateKeyDer::from_pem_slice(&pem)
        .map_err(|e| bad_pem(setting, path, format!("no PEM private key in it ({e})")))?;
    Ok(pem)
}

fn bad_pem(setting: &'static str, path: &Path, reason: String) -> ConnectError {
    ConnectError::Pem {
        setting,
        path: path.to_path_buf(),
        reason,
    }
}

fn read(setting: &'static str, path: &Path) -> Result<Vec<u8>, ConnectError> {
    std::fs::read(path).map_err(|source| ConnectError::Read {
        setting,
        path: path.to_path_buf(),
        source,
    })
}

/// What went wrong, in the frontend's words where it answered, with the setting to look at when
/// the error points at one.
fn explain(error: &ClientConnectError, settings: &TemporalSettings) -> String {
    let text = match error {
        ClientConnectError::SystemInfoCallError(status) => {
            let mut text = format!("{:?}: {}", status.code(), status.message());
            if let Some(source) = std::error::Error::source(status) {
                text.push_str(": ");
                text.push_str(&with_causes(source));
            }
            text
        }
        // Its own text is a Debug dump; the causes say it in words.
        ClientConnectError::TonicTransportError(transport) => with_causes(transport),
        other => with_causes(other),
    };
    let lower = text.to_lowercase();
    let hint = if text.starts_with("Unauthenticated") || text.starts_with("PermissionDenied") {
        Some("check temporal.api_key (or the client certificate) and temporal.namespace")
    } else if text.contains("UnknownIssuer") {
        Some("check temporal.server_ca_file: the CA that signed the server's certificate")
    } else if text.contains("not valid for name") {
        Some("check temporal.server_name: a name on the server's certificate")
    } else if settings.tls()
        && [
            "fatal alert",
            "connection closed",
            "connection was not ready",
            "broken pipe",
            "connection reset",
            "unexpected end of file",
            "unexpected eof",
            "peer closed",
        ]
        .iter()
        .any(|sign| lower.contains(sign))
    {
        // TLS 1.3 checks the client's certificate after the client thinks the handshake is
        // done, so a refusal arrives as an alert or as the connection closing, racing the call.
        Some(
            "the server ended the TLS session: it may want a client certificate \
             (temporal.client_cert_file) it did not get or does not trust",
        )
    } else {
        None
    };
    match hint {
        Some(hint) => format!("{text} ({hint})"),
        None => text,
    }
}

/// `error: cause: cause`, because the SDK's outer error ("transport error") rarely says why.
fn with_causes(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut cause = error.source();
    // A cycle-free chain is the norm; the cap keeps a pathological one from looping.
    for _ in 0..8 {
        let Some(next) = cause else { break };
        let line = next.to_string();
        if !text.contains(&line) {
            text.push_str(": ");
            text.push_str(&line);
        }
        cause = next.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use firstline_config::SecretString;

    #[test]
    fn plain_grpc_has_no_tls_and_no_key() {
        let options = connection_options(
            &TemporalSettings::default(),
            "test".into(),
            Duration::from_secs(1),
        )
        .expect("options");
        assert!(options.tls_options.is_none());
        assert!(options.api_key.is_none());
        assert_eq!(options.connect_timeout, Some(Duration::from_secs(1)));
    }

    #[test]
    fn an_api_key_over_https_turns_on_tls_with_the_system_roots() {
        let settings = TemporalSettings {
            address: "https://us-east-1.aws.api.temporal.io:7233".into(),
            api_key: SecretString::new(" tmprl-key \n"),
            ..TemporalSettings::default()
        };
        let options =
            connection_options(&settings, "test".into(), Duration::from_secs(1)).expect("options");
        let tls = options.tls_options.expect("TLS");
        assert!(tls.server_root_ca_cert.is_none() && tls.client_tls_options.is_none());
        assert_eq!(options.api_key.as_deref(), Some("tmprl-key"));
    }

    #[test]
    fn a_key_is_never_put_on_a_plaintext_connection() {
        // As a caller that rewrote the address after the settings were validated would.
        let settings = TemporalSettings {
            address: "http://127.0.0.1:7233".into(),
            api_key: SecretString::new("tmprl-key"),
            ..TemporalSettings::default()
        };
        let error = connection_options(&settings, "test".into(), Duration::from_secs(1))
            .expect_err("refused");
        assert!(matches!(error, ConnectError::KeyInTheClear(_)), "{error}");
        assert!(!error.to_string().contains("tmprl-key"), "{error}");
    }

    fn tls_with(files: &[(&str, &str)]) -> (tempfile::TempDir, TemporalSettings) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut settings = TemporalSettings {
            address: "https://temporal.example:7233".into(),
            ..TemporalSettings::default()
        };
        for (setting, contents) in files {
            let path = dir.path().join(setting);
            std::fs::write(&path, contents).expect("write");
            match *setting {
                "ca" => settings.server_ca_file = path,
                "cert" => settings.client_cert_file = path,
                "key" => settings.client_key_file = path,
                other => panic!("unknown file {other}"),
            }
        }
        (dir, settings)
    }

    fn pem_error(settings: &TemporalSettings) -> String {
        match connection_options(settings, "test".into(), Duration::from_secs(1)) {
            Err(error @ ConnectError::Pem { .. }) => error.to_string(),
            Err(other) => panic!("expected a PEM error, got {other}"),
            Ok(_) => panic!("expected a PEM error, got options"),
        }
    }

    // A throwaway self-signed P-256 pair made for these tests (openssl req -x509 -newkey ec).
    const CERTIFICATE: &str = include_str!("testdata/certificate.pem");
    const KEY: &str = include_str!("testdata/key.pem");

    #[test]
    fn files_without_usable_pem_are_named_with_their_setting() {
        let (_dir, good) = tls_with(&[("ca", CERTIFICATE), ("cert", CERTIFICATE), ("key", KEY)]);
        connection_options(&good, "test".into(), Duration::from_secs(1))
            .expect("a certificate and its key are accepted");

        let (_dir, empty_ca) = tls_with(&[("ca", "not a certificate\n")]);
        let text = pem_error(&empty_ca);
        assert!(text.starts_with("temporal.server_ca_file"), "{text}");
        assert!(text.contains("no PEM certificate"), "{text}");

        let (_dir, key_as_cert) = tls_with(&[("cert", KEY), ("key", KEY)]);
        assert!(
            pem_error(&key_as_cert).starts_with("temporal.client_cert_file"),
            "a key is no certificate"
        );

        let (_dir, cert_as_key) = tls_with(&[("cert", CERTIFICATE), ("key", CERTIFICATE)]);
        let text = pem_error(&cert_as_key);
        assert!(text.starts_with("temporal.client_key_file"), "{text}");
        assert!(text.contains("no PEM private key"), "{text}");
    }

    #[test]
    fn a_refusal_points_at_the_setting_to_check() {
        use temporalio_client::tonic::Status;
        let tls = TemporalSettings {
            address: "https://temporal.example:7233".into(),
            ..TemporalSettings::default()
        };
        let refused = |status: Status, settings: &TemporalSettings| {
            explain(&ClientConnectError::SystemInfoCallError(status), settings)
        };
        let text = refused(Status::unauthenticated("Request unauthorized."), &tls);
        assert!(
            text.starts_with("Unauthenticated: Request unauthorized."),
            "{text}"
        );
        assert!(text.contains("check temporal.api_key"), "{text}");
        let text = refused(Status::permission_denied("wrong namespace"), &tls);
        assert!(text.contains("temporal.namespace"), "{text}");
        let text = refused(Status::cancelled("connection closed"), &tls);
        assert!(text.contains("temporal.client_cert_file"), "{text}");
        // Over plaintext a closed connection says nothing about certificates.
        let text = refused(
            Status::cancelled("connection closed"),
            &TemporalSettings::default(),
        );
        assert_eq!(text, "Cancelled: connection closed");
    }

    #[test]
    fn a_missing_certificate_file_is_named_with_its_setting() {
        let settings = TemporalSettings {
            address: "https://temporal.example:7233".into(),
            client_cert_file: "/nonexistent/client.pem".into(),
            client_key_file: "/nonexistent/client.key".into(),
            ..TemporalSettings::default()
        };
        let error = connection_options(&settings, "test".into(), Duration::from_secs(1))
            .expect_err("the file is missing");
        let text = error.to_string();
        assert!(
            text.starts_with("temporal.client_cert_file `/nonexistent/client.pem`"),
            "{text}"
        );
    }

    #[test]
    fn an_address_that_is_no_url_is_refused() {
        let settings = TemporalSettings {
            address: "http://".into(),
            ..TemporalSettings::default()
        };
        let error = connection_options(&settings, "test".into(), Duration::from_secs(1))
            .expect_err("no host");
        assert!(matches!(error, ConnectError::Address(_)), "{error}");
    }
}
