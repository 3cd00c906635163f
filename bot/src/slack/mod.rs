//! Talking to Slack: the Web API client the rest of the system posts through, Slack's size limits,
//! the per-channel pacer, and request signing (used by the stand-in and tests to sign like Slack).

pub mod client;
pub mod limits;
pub mod pacer;
pub mod signing;

pub use client::{OutgoingMessage, SlackApi, SlackApiError, ThreadReply};

use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;

/// An HTTPS connector that also speaks plain HTTP, so the Web API base URL can point at the
/// local stand-in (`http://127.0.0.1:P/api`). Uses the ring provider; call
/// [`install_crypto_provider`] once at start-up.
pub fn connector() -> HttpsConnector<HttpConnector> {
    install_crypto_provider();
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_webpki_roots()
        .https_or_http()
        .enable_http1()
        .build()
}

/// Installs rustls' ring provider as the process default (idempotent). Two providers linked
/// into one binary otherwise make rustls refuse to pick one.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
