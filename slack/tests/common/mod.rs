//! Helpers shared by the slack crate's integration tests: a stand-in on a free port, and a tiny
//! HTTP client (hyper, no extra dependencies) for the endpoints the Web API client does not call.

use firstline_slack::standin::{StandIn, StandInConfig};
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub const SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";

/// A stand-in on a free port, delivering events to `events_url` when given.
pub async fn standin(cancel: &CancellationToken, events_url: Option<String>) -> StandIn {
    StandIn::start(
        StandInConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            signing_secret: SECRET.into(),
            events_url,
            retry_delay: Duration::from_millis(200),
        },
        cancel.clone(),
    )
    .await
    .expect("stand-in")
}

/// One HTTP/1.1 request; `(status, body)`.
pub async fn request(
    method: hyper::Method,
    url: &str,
    headers: &[(&str, &str)],
    body: String,
) -> (u16, String) {
    let client = Client::builder(TokioExecutor::new()).build_http::<Full<bytes::Bytes>>();
    let mut builder = hyper::Request::builder().method(method).uri(url);
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let request = builder.body(Full::new(bytes::Bytes::from(body))).unwrap();
    let response = tokio::time::timeout(Duration::from_secs(30), client.request(request))
        .await
        .expect("HTTP request timed out")
        .expect("HTTP request failed");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8_lossy(&body).into_owned())
}
