//! Shared by the integration tests: a client of a scripted server with fast retries.

#![allow(dead_code)]

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use firstline_llm::{ChatRequest, Client, ClientOptions, Message, RetryPolicy};
use std::time::Duration;

/// The key the tests configure; no error message may contain it.
pub const KEY: &str = "sk-test-0123456789abcdef";

/// A scripted server with `replies`, and a client of it (3 attempts, 10–40 ms backoff, 2 s timeout).
pub async fn scripted(replies: Vec<ScriptedReply>) -> (ScriptedServer, Client) {
    let server = ScriptedServer::start(replies).await.expect("server starts");
    let client = client_of(&server.base_url(), Duration::from_secs(2));
    (server, client)
}

pub fn client_of(base_url: &str, timeout: Duration) -> Client {
    let mut options = ClientOptions::new(base_url, "scripted-model");
    options.api_key = Some(KEY.to_string());
    options.timeout = timeout;
    options.retry = RetryPolicy {
        attempts: 3,
        initial_backoff: Duration::from_millis(10),
        max_backoff: Duration::from_millis(40),
    };
    Client::new(options).expect("client builds")
}

pub fn question() -> ChatRequest {
    ChatRequest::new(vec![
        Message::system("You are an incident investigator."),
        Message::user("Why is checkout failing?"),
    ])
}
