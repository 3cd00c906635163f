//! A TLS front for an MCP server on plain HTTP (the lab): what an MCP endpoint behind an ingress
//! with TLS and token authentication looks like to a client, on a real socket, in front of the
//! real server.
//!
//! It terminates TLS with a certificate for [`SERVER_NAME`] signed by a CA of its own, answers
//! 401 to any request without every header it was told to demand (`authorization: Bearer …`, a
//! tenant header), and forwards the rest, streamed both ways, to the server. It counts what it
//! forwarded and refused, so a test can tell that traffic went through it and was authenticated.

use std::convert::Infallible;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

use crate::accept_loop::AcceptLoop;
use crate::test_ca::TestCa;

/// The name on the front's certificate.
pub const SERVER_NAME: &str = "localhost";

#[derive(Debug, Default)]
struct Counts {
    forwarded: AtomicU64,
    unauthenticated: AtomicU64,
    handshakes_refused: AtomicU64,
}

/// A running front; stops when dropped.
pub struct McpFront {
    /// `https://localhost:PORT/mcp`.
    pub url: String,
    /// The PEM of the CA that signed the front's certificate.
    pub ca_file: PathBuf,
    counts: Arc<Counts>,
    _dir: tempfile::TempDir,
    _accept: AcceptLoop,
}

impl McpFront {
    /// Starts a front for the server at `upstream` (`http://host:port`) that demands each of
    /// `required` headers (name, exact value).
    pub async fn start(upstream: &str, required: Vec<(String, String)>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("firstline test CA");
        let ca_file = dir.path().join("ca.pem");
        ca.write_pem(&ca_file);
        let acceptor =
            tokio_rustls::TlsAcceptor::from(ca.server_config(&[SERVER_NAME], None, &[b"http/1.1"]));
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let upstream = upstream.trim_end_matches('/').to_string();
        let client: Client<HttpConnector, Incoming> =
            Client::builder(TokioExecutor::new()).build_http();
        let counts = Arc::new(Counts::default());
        let shared = Arc::clone(&counts);
        let required = Arc::new(required);
        let accept = AcceptLoop::spawn(listener, move |tcp| {
            serve(
                tcp,
                acceptor.clone(),
                client.clone(),
                upstream.clone(),
                Arc::clone(&required),
                Arc::clone(&shared),
            )
        });
        Self {
            url: format!("https://{SERVER_NAME}:{port}/mcp"),
            ca_file,
            counts,
            _dir: dir,
            _accept: accept,
        }
    }

    /// Requests it forwarded to the server.
    pub fn forwarded(&self) -> u64 {
        self.counts.forwarded.load(Ordering::SeqCst)
    }

    /// Requests it answered 401 (a demanded header missing or wrong).
    pub fn unauthenticated(&self) -> u64 {
        self.counts.unauthenticated.load(Ordering::SeqCst)
    }

    /// TLS handshakes that failed (a client that does not trust the front's CA).
    pub fn handshakes_refused(&self) -> u64 {
        self.counts.handshakes_refused.load(Ordering::SeqCst)
    }
}

async fn serve(
    tcp: tokio::net::TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    client: Client<HttpConnector, Incoming>,
    upstream: String,
    required: Arc<Vec<(String, String)>>,
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
            Arc::clone(&required),
            Arc::clone(&counts),
        )
    });
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(tls), service)
        .await;
}

type Body = BoxBody<Bytes, hyper::Error>;

async fn forward(
    request: Request<Incoming>,
    client: Client<HttpConnector, Incoming>,
    upstream: String,
    required: Arc<Vec<(String, String)>>,
    counts: Arc<Counts>,
) -> Result<Response<Body>, Infallible> {
    let authenticated = required.iter().all(|(name, value)| {
        request
            .headers()
            .get(name.as_str())
            .and_then(|v| v.to_str().ok())
            == Some(value.as_str())
    });
    if !authenticated {
        counts.unauthenticated.fetch_add(1, Ordering::SeqCst);
        return Ok(plain(401, "unauthorized"));
    }
    let (mut parts, body) = request.into_parts();
    let path = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| "/".into());
    parts.uri = match format!("{upstream}{path}").parse() {
        Ok(uri) => uri,
        Err(_) => return Ok(plain(400, "bad path")),
    };
    counts.forwarded.fetch_add(1, Ordering::SeqCst);
    match client.request(Request::from_parts(parts, body)).await {
        Ok(response) => Ok(response.map(BodyExt::boxed)),
        Err(e) => Ok(plain(502, &format!("upstream: {e}"))),
    }
}

fn plain(status: u16, text: &str) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .body(
            Full::new(Bytes::from(text.to_string()))
                .map_err(|never| match never {})
                .boxed(),
        )
        .expect("a valid response")
}
