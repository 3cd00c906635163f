//! The HTTP side of a streamable-HTTP MCP server: TLS for `https://` (the system's roots, or the
//! CAs of `ca_file` instead), a bearer token read from `bearer_token_file` at each connection
//! (so a rotated Secret or projected token is picked up), and fixed headers. Values of the
//! token and the headers are never logged or shown in errors.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rustls_pki_types::CertificateDer;
use rustls_pki_types::pem::PemObject;

/// How to reach one HTTP server.
#[derive(Clone, PartialEq)]
pub(crate) struct HttpEndpoint {
    pub url: String,
    pub ca_file: Option<PathBuf>,
    pub bearer_token_file: Option<PathBuf>,
    /// May hold credentials: never logged.
    pub headers: BTreeMap<String, String>,
}

impl std::fmt::Debug for HttpEndpoint {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // A URL may carry credentials (`user:pass@`, a token in the query).
        write!(f, "http {}", firstline_redact::redact(&self.url).text)?;
        if let Some(ca) = &self.ca_file {
            write!(f, " ca_file={}", ca.display())?;
        }
        if let Some(token) = &self.bearer_token_file {
            write!(f, " bearer_token_file={}", token.display())?;
        }
        if !self.headers.is_empty() {
            write!(f, " headers={:?}", self.headers.keys().collect::<Vec<_>>())?;
        }
        Ok(())
    }
}

/// The transport for `endpoint`: its own client (TLS roots), credentials and headers.
pub(crate) fn transport(
    endpoint: &HttpEndpoint,
) -> Result<StreamableHttpClientTransport<reqwest::Client>, String> {
    let tls = endpoint.url.starts_with("https://");
    let client = client(tls, endpoint.ca_file.as_deref())?;
    let mut config = StreamableHttpClientTransportConfig::with_uri(endpoint.url.as_str());
    if let Some(path) = &endpoint.bearer_token_file {
        config = config.auth_header(bearer_token(path)?);
    }
    let mut headers = HashMap::new();
    for (name, value) in &endpoint.headers {
        let name = reqwest::header::HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header `{name}` is not a valid header name"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value)
            .map_err(|_| format!("header `{name}`: its value is not a valid header value"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(StreamableHttpClientTransport::with_client(
        client,
        config.custom_headers(headers),
    ))
}

/// The token in `path`, trimmed; an empty file is an error (a Secret mounted without its key).
fn bearer_token(path: &Path) -> Result<String, String> {
    let token = std::fs::read_to_string(path)
        .map_err(|e| format!("bearer_token_file {}: {e}", path.display()))?;
    let token = token.trim();
    if token.is_empty() {
        return Err(format!("bearer_token_file {} is empty", path.display()));
    }
    Ok(token.to_string())
}

/// A reqwest client with rustls on ring trusting `ca_file`'s CAs, or the system's roots; for
/// plain `http://`, no roots are read (a host without a CA bundle still reaches in-cluster MCP).
fn client(tls: bool, ca_file: Option<&Path>) -> Result<reqwest::Client, String> {
    let roots = match (tls, ca_file) {
        (false, _) => rustls::RootCertStore::empty(),
        (true, Some(path)) => file_roots(path)?,
        (true, None) => system_roots()?,
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS setup: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .map_err(|e| format!("HTTP client: {e}"))
}

/// The certificates of a PEM bundle; one that holds none is an error.
fn file_roots(path: &Path) -> Result<rustls::RootCertStore, String> {
    let shown = path.display();
    let certificates = CertificateDer::pem_file_iter(path)
        .map_err(|e| format!("ca_file {shown}: {e}"))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("ca_file {shown}: {e}"))?;
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(certificates);
    if added == 0 {
        return Err(format!("ca_file {shown} holds no CA certificate"));
    }
    Ok(roots)
}

/// The operating system's trusted roots (`/etc/ssl/certs` on Debian and in the image).
fn system_roots() -> Result<rustls::RootCertStore, String> {
    let found = rustls_native_certs::load_native_certs();
    let mut roots = rustls::RootCertStore::empty();
    let (added, _) = roots.add_parsable_certificates(found.certs);
    if added == 0 {
        let errors: Vec<String> = found.errors.iter().map(ToString::to_string).collect();
        return Err(format!(
            "no trusted roots found on this system ({}); set the server's ca_file",
            errors.join("; ")
        ));
    }
    Ok(roots)
}
