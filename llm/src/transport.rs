//! The HTTP layer under async-openai: a reqwest client with an explicit timeout and a ring-backed
//! rustls config, and a tower service that replaces async-openai's built-in retry layer.
//!
//! async-openai 0.43's default executor wraps every request in `OpenAIRetryLayer` (3 retries of
//! 429/5xx/connect, up to 8 s apart, longer if the server's `Retry-After` says so). Installing our
//! own service with `Client::with_http_service` removes that layer, so [`crate::Client`]'s policy
//! is the only one. The service also keeps the HTTP status of every non-success answer:
//! async-openai drops it when a 4xx body is not OpenAI's `{"error": {...}}` JSON (what llama.cpp,
//! vLLM or a proxy often send), which would make a plain-text 429 look like a parse error.

use crate::LlmError;
use async_openai::error::OpenAIError;
use async_openai::middleware::{HttpRequestFactory, ReqwestService};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

/// Longest connect phase, whatever the request timeout.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Bytes of an error body kept for the message.
const ERROR_BODY_CHARS: usize = 300;

/// A non-success HTTP answer, carried through async-openai as `OpenAIError::Boxed`.
#[derive(Debug, thiserror::Error)]
#[error("HTTP {status}: {body}")]
pub(crate) struct HttpStatus {
    pub(crate) status: u16,
    /// The server's `Retry-After`, when given in seconds.
    pub(crate) retry_after: Option<Duration>,
    /// The start of the body (not yet redacted).
    pub(crate) body: String,
}

/// A reqwest client with `timeout` per request and TLS through rustls with ring and the
/// webpki roots, so it works whether or not the process installed a default crypto provider.
pub(crate) fn http_client(timeout: Duration) -> Result<reqwest::Client, LlmError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| LlmError::Config(format!("TLS setup: {error}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(timeout)
        .connect_timeout(timeout.min(CONNECT_TIMEOUT))
        .build()
        .map_err(|error| LlmError::Config(format!("HTTP client: {error}")))
}

type ServiceFuture =
    Pin<Box<dyn Future<Output = Result<reqwest::Response, OpenAIError>> + Send + 'static>>;

/// Sends each request once and turns any non-success status into [`HttpStatus`].
#[derive(Clone, Debug)]
pub(crate) struct SendOnce {
    inner: ReqwestService,
}

impl SendOnce {
    pub(crate) fn new(client: reqwest::Client) -> Self {
        Self {
            inner: ReqwestService::new(client),
        }
    }
}

impl tower::Service<HttpRequestFactory> for SendOnce {
    type Response = reqwest::Response;
    type Error = OpenAIError;
    type Future = ServiceFuture;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: HttpRequestFactory) -> Self::Future {
        let sent = self.inner.call(request);
        Box::pin(async move {
            let response = sent.await?;
            if response.status().is_success() {
                return Ok(response);
            }
            let status = response.status().as_u16();
            let retry_after = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.trim().parse::<u64>().ok())
                .map(Duration::from_secs);
            // An unreadable error body still leaves the status, which is what matters.
            let body = response.text().await.unwrap_or_default();
            Err(OpenAIError::Boxed(Box::new(HttpStatus {
                status,
                retry_after,
                body: shorten(&body, ERROR_BODY_CHARS),
            })))
        })
    }
}

/// At most `chars` characters of `text`, marked when cut.
pub(crate) fn shorten(text: &str, chars: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(chars) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}
