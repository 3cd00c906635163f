//! A TLS front for the test stack's PostgreSQL, whose embedded build has no SSL: what a managed
//! PostgreSQL that requires TLS looks like to a client, on a real socket, before the real server.
//!
//! It speaks PostgreSQL's own opening: the client's SSLRequest is answered `S` and the TLS
//! handshake follows (with a certificate for `localhost` from a CA of the test's own, and, when
//! asked, a required client certificate). A client that starts in plain text gets the FATAL
//! error a `hostssl`-only pg_hba.conf gives. Inside TLS it relays bytes to the real server, so
//! everything after the handshake (authentication, queries, pgvector) is PostgreSQL's own.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::accept_loop::AcceptLoop;
use crate::test_ca::{ClientCredentials, TestCa};

/// The name on the front's certificate; URLs through the front use it as their host.
pub const SERVER_NAME: &str = "localhost";

/// PostgreSQL's SSLRequest code (protocol 1234.5679).
const SSL_REQUEST: u32 = 80_877_103;
/// GSSENCRequest (1234.5680): declined, as a server without GSSAPI does.
const GSS_REQUEST: u32 = 80_877_104;

#[derive(Debug, Default)]
struct Counts {
    tls_sessions: AtomicU64,
    plaintext_refused: AtomicU64,
    handshakes_refused: AtomicU64,
}

/// A running front; stops when dropped.
pub struct PostgresFront {
    /// `localhost:PORT`.
    pub host_port: String,
    /// The PEM of the CA that signed the front's certificate (`sslrootcert`).
    pub ca_file: PathBuf,
    /// A client certificate the front accepts (`sslcert`, `sslkey`).
    pub client: ClientCredentials,
    counts: Arc<Counts>,
    _dir: tempfile::TempDir,
    _accept: AcceptLoop,
}

impl PostgresFront {
    /// Starts a front for the server at `upstream` (`host:port`).
    pub async fn start(upstream: &str, client_certificate: bool) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let ca = TestCa::new("firstline test database CA");
        let ca_file = dir.path().join("root.crt");
        ca.write_pem(&ca_file);
        let client = ca.client_credentials(dir.path(), "firstline");
        let config = ca.server_config(&[SERVER_NAME], client_certificate.then_some(&ca), &[]);
        let acceptor = tokio_rustls::TlsAcceptor::from(config);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let counts = Arc::new(Counts::default());
        let upstream = upstream.to_string();
        let shared = Arc::clone(&counts);
        let accept = AcceptLoop::spawn(listener, move |tcp| {
            let (acceptor, upstream, counts) =
                (acceptor.clone(), upstream.clone(), Arc::clone(&shared));
            async move {
                let _ = relay(tcp, acceptor, &upstream, &counts).await;
            }
        });
        Self {
            host_port: format!("{SERVER_NAME}:{port}"),
            ca_file,
            client,
            counts,
            _dir: dir,
            _accept: accept,
        }
    }

    /// `url` with its host and port replaced by the front's and `query` (`sslmode=…&…`) added.
    pub fn url(&self, url: &firstline_config::DatabaseUrl, query: &str) -> String {
        let original = url.expose();
        let through = original.replacen(&url.host_port(), &self.host_port, 1);
        let separator = if through.contains('?') { '&' } else { '?' };
        format!("{through}{separator}{query}")
    }

    /// Connections that completed the TLS handshake.
    pub fn tls_sessions(&self) -> u64 {
        self.counts.tls_sessions.load(Ordering::SeqCst)
    }

    /// Connections that started without TLS and were refused.
    pub fn plaintext_refused(&self) -> u64 {
        self.counts.plaintext_refused.load(Ordering::SeqCst)
    }

    /// TLS handshakes the front refused or the client abandoned.
    pub fn handshakes_refused(&self) -> u64 {
        self.counts.handshakes_refused.load(Ordering::SeqCst)
    }
}

async fn relay(
    mut tcp: TcpStream,
    acceptor: tokio_rustls::TlsAcceptor,
    upstream: &str,
    counts: &Counts,
) -> std::io::Result<()> {
    // At most two requests before the startup message: GSSENCRequest, then SSLRequest.
    for _ in 0..2 {
        let mut opening = [0u8; 8];
        tcp.read_exact(&mut opening).await?;
        let length = u32::from_be_bytes([opening[0], opening[1], opening[2], opening[3]]);
        let code = u32::from_be_bytes([opening[4], opening[5], opening[6], opening[7]]);
        match (length, code) {
            (8, GSS_REQUEST) => tcp.write_all(b"N").await?,
            (8, SSL_REQUEST) => {
                tcp.write_all(b"S").await?;
                let mut tls = match acceptor.accept(tcp).await {
                    Ok(tls) => tls,
                    Err(e) => {
                        counts.handshakes_refused.fetch_add(1, Ordering::SeqCst);
                        return Err(e);
                    }
                };
                counts.tls_sessions.fetch_add(1, Ordering::SeqCst);
                let mut server = TcpStream::connect(upstream).await?;
                tokio::io::copy_bidirectional(&mut tls, &mut server).await?;
                return Ok(());
            }
            _ => break,
        }
    }
    // A startup message in plain text: refused as `hostssl` would.
    counts.plaintext_refused.fetch_add(1, Ordering::SeqCst);
    tcp.write_all(&fatal(
        "28000",
        "no pg_hba.conf entry for host \"127.0.0.1\", no encryption",
    ))
    .await?;
    tcp.shutdown().await
}

/// An ErrorResponse message, severity FATAL.
fn fatal(code: &str, message: &str) -> Vec<u8> {
    let mut fields = Vec::new();
    for (tag, value) in [
        (b'S', "FATAL"),
        (b'V', "FATAL"),
        (b'C', code),
        (b'M', message),
    ] {
        fields.push(tag);
        fields.extend_from_slice(value.as_bytes());
        fields.push(0);
    }
    fields.push(0);
    let mut out = vec![b'E'];
    let length = u32::try_from(fields.len() + 4).expect("a short message");
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(&fields);
    out
}
