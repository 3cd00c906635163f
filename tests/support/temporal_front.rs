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
use tokio::net::TcpListener;

use crate::accept_loop::AcceptLoop;
use crate::test_ca::{ClientCredentials, TestCa};

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
    _accept: AcceptLoop,
}

impl TemporalFront {
    /// Starts a front for the dev server at `upstream` (`http://host:port`).
    pub async fn start(upstream: &str, policy: FrontPolicy) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("firstline test CA");
        let ca_file = dir.path().join("ca.pem");
        ca.write_pem(&ca_file);
        let client = ca.client_credentials(dir.path(), "client");
        let stranger = TestCa::new("someone else's CA").client_credentials(dir.path(), "stranger");
        let config = ca.server_config(
            &[SERVER_NAME],
            policy.client_certificate.then_some(&ca),
            &[b"h2"],
        );
        let acceptor = tokio_rustls::TlsAcceptor::from(config);

        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = format!("https://{}", listener.local_addr().expect("addr"));
        let upstream = upstream.trim_end_matches('/').to_string();
        let upstream_client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new())
                .http2_only(true)
                .build_http();
        let counts = Arc::new(Counts::default());
        let authorization = policy.api_key.map(|key| format!("Bearer {key}"));
        let shared = Arc::clone(&counts);
        let accept = AcceptLoop::spawn(listener, move |tcp| {
            serve(
                tcp,
                acceptor.clone(),
                upstream_client.clone(),
                upstream.clone(),
                authorization.clone(),
                Arc::clone(&shared),
            )
        });
        Self {
            address,
            ca_file,
            client,
            stranger,
            counts,
            _dir: dir,
            _accept: accept,
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

/// One TLS connection: the handshake, then HTTP/2 requests, each checked and forwarded.
async fn serve(
    tcp: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    client: Client<HttpConnector, Incoming>,
    upstream: String,
    authorization: Option<String>,
    counts: Arc<Counts>,
) {
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
