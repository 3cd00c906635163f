//! firstline-slack: talking to Slack, for the bot (reactions, `auth.test`) and the worker (the
//! round's reply).
//!
//! - [`client`]: the Web API client ([`SlackApi`]): `chat.postMessage` with Block Kit and
//!   metadata, `chat.update`, `chat.postEphemeral`, reactions, `conversations.replies`,
//!   `usergroups.users.list`, `auth.test`; Slack's errors
//!   typed, 429 `Retry-After` honoured, every call with a timeout.
//! - [`limits`]: Slack's size limits (blocks, section characters) and fitting text into them.
//! - [`pacer`]: at most one post per second per channel, as Slack asks.
//! - [`signing`]: the `v0=` request signature, to sign like Slack (the stand-in, the tests).
//! - [`standin`] (feature `standin`): a Slack stand-in on a real socket for `firstline dev` and
//!   the tests.
//!
//! It knows nothing of incidents, rounds or the database.

pub mod client;
pub mod limits;
pub mod pacer;
pub mod signing;
#[cfg(feature = "standin")]
pub mod standin;

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
