//! A TLS front for the test stack's Temporal dev server: what Temporal Cloud or a frontend
//! behind mTLS looks like to a client, on a real socket, in front of the real server (the dev
//! server has no TLS of its own, and Cloud cannot run here).
//!
//! It terminates TLS with a certificate for [`SERVER_NAME`] signed by a CA of its own, can
//! require a client certificate signed by that CA, can require `authorization: Bearer <key>`
//! (answering a gRPC `UNAUTHENTICATED` otherwise, as Cloud does), and forwards every accepted
//! HTTP/2 request, streamed both ways with its trailers, to the dev server. It counts what it
//! accepted and refused, so a test can tell that traffic went through it and was authenticated.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::{BodyExt, Empty, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rcgen::{BasicConstraints, CertificateParams, CertifiedIssuer, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

/// The name on the front's certificate (not its IP address: a client must be told the name).
pub const SERVER_NAME: &str = "temporal.firstline.test";

/// What the front demands of a client.
#[derive(Debug, Clone, Default)]
pub struct FrontPolicy {
    /// Refuse the TLS handshake without a client certificate from the front's CA (mTLS).
    pub client_certificate: bool,
    /// Refuse every call without `authorization: Bearer <key>`.
    pub api_key: Option<String>,
}

/// What the front saw.
#[derive(Debug, Default)]
struct Counts {
    forwarded: AtomicU64,
    unauthenticated: AtomicU64,
    handshakes_refused: AtomicU64,
}

/// Credentials a client may present, as PEM files.
pub struct ClientCredentials {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

/// A running front; stops when dropped.
pub struct TemporalFront {
    /// `https://127.0.0.1:PORT`.
    pub address: String,
    /// The PEM of the CA that signed the front's certificate and the good client certificate.
    pub ca_file: PathBuf,
    /// A client certificate the front accepts.
    pub client: ClientCredentials,
    /// A client certificate from another CA, which the front refuses.
    pub stranger: ClientCredentials,
    counts: Arc<Counts>,
    _dir: tempfile::TempDir,
    accept: tokio::task::JoinHandle<()>,
}

impl TemporalFront {
    /// Starts a front for the dev server at `upstream` (`http://host:port`).
    pub async fn start(upstream: &str, policy: FrontPolicy) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let (ca, ca_pem) = issuer("firstline test CA");
        let (stranger_ca, _) = issuer("someone else's CA");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, ca_pem).expect("writing the CA");
        let client = credentials(&dir, "client", &ca);
        let stranger = credentials(&dir, "stranger", &stranger_ca);

        let server_key = KeyPair::generate().expect("key");
        let server_cert = CertificateParams::new(vec![SERVER_NAME.to_string()])
            .expect("params")
            .signed_by(&server_key, &ca)
            .expect("server certificate");
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions");
        let builder = if policy.client_certificate {
            let mut roots = rustls::RootCertStore::empty();
            roots.add(ca.der().clone()).expect("the CA is a root");
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .expect("client verifier");
            builder.with_client_cert_verifier(verifier)
        } else {
            builder.with_no_client_auth()
        };
        let mut config = builder
            .with_single_cert(
                vec![CertificateDer::from(server_cert.der().to_vec())],
                PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(server_key.serialize_der())),
            )
            .expect("server TLS config");
        config.alpn_protocols = vec![b"h2".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = format!("https://{}", listener.local_addr().expect("addr"));
        let upstream = upstream.trim_end_matches('/').to_string();
        let upstream_client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new())
                .http2_only(true)
                .build_http();
        let counts = Arc::new(Counts::default());
        let accept = tokio::spawn(serve(
            listener,
            acceptor,
            upstream_client,
            upstream,
            policy.api_key.map(|key| format!("Bearer {key}")),
            Arc::clone(&counts),
        ));
        Self {
            address,
            ca_file,
            client,
            stranger,
            counts,
            _dir: dir,
            accept,
        }
    }

    /// Requests it forwarded to the dev server.
    pub fn forwarded(&self) -> u64 {
        self.counts.forwarded.load(Ordering::SeqCst)
    }

    /// Requests it answered UNAUTHENTICATED (no key, or the wrong one).
    pub fn unauthenticated(&self) -> u64 {
        self.counts.unauthenticated.load(Ordering::SeqCst)
    }

    /// TLS handshakes it refused (no client certificate, a stranger's, an untrusted front).
    pub fn handshakes_refused(&self) -> u64 {
        self.counts.handshakes_refused.load(Ordering::SeqCst)
    }
}

impl Drop for TemporalFront {
    fn drop(&mut self) {
        // Dropping the accept loop drops its JoinSet, which aborts every connection.
        self.accept.abort();
    }
}

async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    client: Client<HttpConnector, Incoming>,
    upstream: String,
    authorization: Option<String>,
    counts: Arc<Counts>,
) {
    let mut connections = JoinSet::new();
    loop {
        let tcp = match listener.accept().await {
            Ok((tcp, _)) => tcp,
            // Out of descriptors, say: wait for connections to close rather than spin.
            Err(_) => {
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        // Reap finished connections so the set stays as small as the open ones.
        while connections.try_join_next().is_some() {}
        let acceptor = acceptor.clone();
        let client = client.clone();
        let upstream = upstream.clone();
        let authorization = authorization.clone();
        let counts = Arc::clone(&counts);
        connections.spawn(async move {
            let tls = match acceptor.accept(tcp).await {
                Ok(tls) => tls,
                Err(_) => {
                    counts.handshakes_refused.fetch_add(1, Ordering::SeqCst);
                    return;
                }
            };
            let service = hyper::service::service_fn(move |request| {
                forward(
                    request,
                    client.clone(),
                    upstream.clone(),
                    authorization.clone(),
                    Arc::clone(&counts),
                )
            });
            let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                .serve_connection(TokioIo::new(tls), service)
                .await;
        });
    }
}

type Body = BoxBody<Bytes, hyper::Error>;

async fn forward(
    request: Request<Incoming>,
    client: Client<HttpConnector, Incoming>,
    upstream: String,
    authorization: Option<String>,
    counts: Arc<Counts>,
) -> Result<Response<Body>, Infallible> {
    if let Some(expected) = &authorization {
        let given = request
            .headers()
            .get("authorization")
            .and_then(|v| v.to_str().ok());
        if given != Some(expected.as_str()) {
            counts.unauthenticated.fetch_add(1, Ordering::SeqCst);
            return Ok(grpc_status(16, "Request unauthorized."));
        }
    }
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.uri = match format!("{upstream}{path}").parse() {
        Ok(uri) => uri,
        Err(_) => return Ok(grpc_status(13, "bad path")),
    };
    counts.forwarded.fetch_add(1, Ordering::SeqCst);
    match client.request(Request::from_parts(parts, body)).await {
        Ok(response) => Ok(response.map(BodyExt::boxed)),
        Err(e) => Ok(grpc_status(14, &format!("upstream: {e}"))),
    }
}

/// A trailers-only gRPC answer with `status`.
fn grpc_status(status: u16, message: &str) -> Response<Body> {
    Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .header("grpc-status", status.to_string())
        .header("grpc-message", message.replace(['\r', '\n'], " "))
        .body(Empty::new().map_err(|never| match never {}).boxed())
        .expect("a valid response")
}

fn issuer(name: &str) -> (CertifiedIssuer<'static, KeyPair>, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, name);
    let issuer = CertifiedIssuer::self_signed(params, KeyPair::generate().expect("key"))
        .expect("CA certificate");
    let pem = issuer.pem();
    (issuer, pem)
}

fn credentials(
    dir: &tempfile::TempDir,
    name: &str,
    ca: &CertifiedIssuer<'static, KeyPair>,
) -> ClientCredentials {
    let key = KeyPair::generate().expect("key");
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, format!("firstline-{name}"));
    params
        .extended_key_usages
        .push(rcgen::ExtendedKeyUsagePurpose::ClientAuth);
    let cert = params.signed_by(&key, ca).expect("client certificate");
    let cert_file = dir.path().join(format!("{name}.pem"));
    let key_file = dir.path().join(format!("{name}.key"));
    std::fs::write(&cert_file, cert.pem()).expect("writing the certificate");
    std::fs::write(&key_file, key.serialize_pem()).expect("writing the key");
    ClientCredentials {
        cert_file,
        key_file,
    }
}
