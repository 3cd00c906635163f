//! The client against the scripted server on a real socket: answers, tool calls, retries,
//! timeouts and errors.

mod common;

use common::{KEY, client_of, question, scripted};
use firstline_llm::scripted::{ScriptedReply, ScriptedServer};
use firstline_llm::{FinishReason, LlmError, Message, ToolSpec};
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_plain_answer_comes_back_with_its_usage() {
    let (server, client) = scripted(vec![
        ScriptedReply::text("The deploy broke it.").with_usage(120, 7),
    ])
    .await;
    let answer = client.chat(&question()).await.expect("answered");
    assert_eq!(answer.content.as_deref(), Some("The deploy broke it."));
    assert_eq!(answer.finish_reason, FinishReason::Stop);
    assert_eq!(answer.usage.prompt_tokens, 120);
    assert_eq!(answer.usage.completion_tokens, 7);
    assert!(answer.tool_calls.is_empty());
    assert!(!answer.cached);
    assert!(answer.latency > Duration::ZERO);

    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let body = &requests[0].body;
    assert_eq!(body["model"], "scripted-model");
    assert_eq!(body["temperature"], 0.0);
    assert_eq!(body["stream"], false);
    assert!(body.get("tools").is_none(), "no tools offered: {body}");
    assert!(body.get("response_format").is_none());
    assert_eq!(requests[0].messages()[0]["role"], "system");
    assert_eq!(
        requests[0].messages()[1]["content"],
        "Why is checkout failing?"
    );
    assert_eq!(
        requests[0].authorization.as_deref(),
        Some(format!("Bearer {KEY}").as_str())
    );
}

#[tokio::test]
async fn a_tool_call_is_decoded_and_its_result_goes_back() {
    let (server, client) = scripted(vec![
        ScriptedReply::tool_call(
            "pods_log",
            json!({"namespace": "shop", "pod": "checkout-1"}),
        ),
        ScriptedReply::text("OOMKilled."),
    ])
    .await;
    let tools = vec![ToolSpec {
        name: "pods_log".into(),
        description: "Read a pod's log".into(),
        parameters: json!({"type": "object", "properties": {"pod": {"type": "string"}}}),
    }];
    let request = question().with_tools(tools.clone());
    let first = client.chat(&request).await.expect("answered");
    assert_eq!(first.finish_reason, FinishReason::ToolCalls);
    assert_eq!(first.tool_calls.len(), 1);
    let call = &first.tool_calls[0];
    assert_eq!(call.id, "call_1");
    assert_eq!(call.name, "pods_log");
    let arguments: serde_json::Value = serde_json::from_str(&call.arguments).expect("JSON args");
    assert_eq!(arguments["pod"], "checkout-1");

    let mut follow_up = request.clone();
    follow_up.messages.push(Message::from_answer(&first));
    follow_up
        .messages
        .push(Message::tool(&call.id, "OOMKilled at 14:02"));
    // The last step offers no tools: the model must answer.
    follow_up.tools.clear();
    let second = client.chat(&follow_up).await.expect("answered");
    assert_eq!(second.content.as_deref(), Some("OOMKilled."));

    let requests = server.requests();
    assert_eq!(requests[0].tool_names(), vec!["pods_log".to_string()]);
    assert!(requests[1].tool_names().is_empty());
    let sent = requests[1].messages();
    assert_eq!(sent[2]["role"], "assistant");
    assert_eq!(sent[2]["tool_calls"][0]["id"], "call_1");
    assert_eq!(sent[2]["tool_calls"][0]["function"]["name"], "pods_log");
    assert_eq!(sent[3]["role"], "tool");
    assert_eq!(sent[3]["tool_call_id"], "call_1");
    assert_eq!(sent[3]["content"], "OOMKilled at 14:02");
}

#[tokio::test]
async fn a_429_is_retried_and_one_answer_comes_back() {
    let (server, client) = scripted(vec![
        ScriptedReply::raw(429, "Too Many Requests"),
        ScriptedReply::text("fine now"),
    ])
    .await;
    let answer = client
        .chat(&question())
        .await
        .expect("answered after a retry");
    assert_eq!(answer.content.as_deref(), Some("fine now"));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn a_retry_after_is_honoured_up_to_the_backoff_cap() {
    let (server, client) = scripted(vec![
        // 60 s asked; the policy caps any delay at 40 ms.
        ScriptedReply::status(429, "slow down").with_header("retry-after", "60"),
        ScriptedReply::text("ok"),
    ])
    .await;
    let started = Instant::now();
    client.chat(&question()).await.expect("answered");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.request_count(), 2);
}

#[tokio::test]
async fn server_errors_until_the_cap_fail_as_http_5xx_after_exactly_cap_attempts() {
    let replies = (0..5).map(|_| ScriptedReply::status(500, "boom")).collect();
    let (server, client) = scripted(replies).await;
    let error = client.chat(&question()).await.expect_err("never answers");
    assert_eq!(error.reason(), "http_5xx", "{error}");
    assert!(
        matches!(
            error,
            LlmError::Server {
                status: 500,
                attempts: 3,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(server.request_count(), 3, "exactly the cap");
}

#[tokio::test]
async fn an_exhausted_script_is_a_server_error() {
    let (server, client) = scripted(vec![]).await;
    let error = client
        .chat(&question())
        .await
        .expect_err("nothing scripted");
    assert_eq!(error.reason(), "http_5xx");
    assert!(error.to_string().contains("script exhausted"), "{error}");
    assert_eq!(server.request_count(), 3);
}

#[tokio::test]
async fn a_400_is_not_retried() {
    let (server, client) = scripted(vec![
        ScriptedReply::status(400, "bad request: unknown field"),
        ScriptedReply::text("never sent"),
    ])
    .await;
    let error = client.chat(&question()).await.expect_err("refused");
    assert_eq!(error.reason(), "http_error");
    assert!(
        matches!(error, LlmError::Http { status: 400, .. }),
        "{error:?}"
    );
    assert_eq!(server.request_count(), 1);
    assert_eq!(server.remaining(), 1);
}

#[tokio::test]
async fn a_plain_text_4xx_keeps_its_status() {
    // async-openai alone reports this as a JSON decoding error and loses the 404.
    let (server, client) = scripted(vec![ScriptedReply::raw(404, "model not found")]).await;
    let error = client.chat(&question()).await.expect_err("refused");
    assert!(
        matches!(error, LlmError::Http { status: 404, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("model not found"), "{error}");
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn a_slow_reply_past_the_timeout_is_a_timeout_and_not_retried() {
    let server = ScriptedServer::start(vec![
        ScriptedReply::text("too late").with_delay(Duration::from_secs(3)),
        ScriptedReply::text("would be on time"),
    ])
    .await
    .expect("server starts");
    let client = client_of(&server.base_url(), Duration::from_millis(300));
    let started = Instant::now();
    let error = client.chat(&question()).await.expect_err("times out");
    assert_eq!(error.reason(), "timeout", "{error:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(server.request_count(), 1);
}

#[tokio::test]
async fn no_attempt_runs_past_the_deadline() {
    let (server, client) = scripted(vec![
        ScriptedReply::text("too late").with_delay(Duration::from_secs(3)),
    ])
    .await;
    let started = Instant::now();
    let deadline = started + Duration::from_millis(200);
    let error = client
        .chat_until(&question(), Some(deadline))
        .await
        .expect_err("deadline");
    assert_eq!(error.reason(), "timeout");
    assert!(started.elapsed() < Duration::from_secs(1));
    assert_eq!(server.request_count(), 1);

    let error = client
        .chat_until(&question(), Some(Instant::now()))
        .await
        .expect_err("already past");
    assert_eq!(error.reason(), "budget");
    assert_eq!(server.request_count(), 1, "nothing sent past the deadline");
}

#[tokio::test]
async fn an_unreachable_endpoint_is_a_connect_error_after_the_cap() {
    // A port that was free a moment ago: connecting is refused.
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        listener.local_addr().expect("addr").port()
    };
    let client = client_of(
        &format!("http://127.0.0.1:{port}/v1"),
        Duration::from_secs(2),
    );
    let error = client.chat(&question()).await.expect_err("refused");
    assert_eq!(error.reason(), "connect", "{error:?}");
    assert!(
        matches!(error, LlmError::Connect { attempts: 3, .. }),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_non_json_body_is_unparsable() {
    let (_server, client) = scripted(vec![ScriptedReply::raw(200, "<html>proxy</html>")]).await;
    let error = client.chat(&question()).await.expect_err("garbage");
    assert_eq!(error.reason(), "unparsable", "{error:?}");
}

#[tokio::test]
async fn the_api_key_never_appears_in_an_error() {
    let echo = format!("Incorrect API key provided: {KEY}");
    let (_server, client) = scripted(vec![
        ScriptedReply::status(401, &echo),
        ScriptedReply::raw(500, echo.clone()),
        ScriptedReply::raw(500, echo.clone()),
        ScriptedReply::raw(500, echo.clone()),
    ])
    .await;
    for _ in 0..2 {
        let error = client.chat(&question()).await.expect_err("fails");
        let shown = format!("{error} {error:?}");
        assert!(!shown.contains(KEY), "{shown}");
        assert!(shown.contains("***"), "{shown}");
    }
    assert!(!format!("{client:?}").contains(KEY));
}

#[tokio::test]
async fn an_https_client_builds_without_a_process_wide_crypto_provider() {
    // reqwest's `rustls-no-provider` would panic here; the client brings its own ring config.
    let mut options = firstline_llm::ClientOptions::new("https://models.example.com/v1", "m");
    options.api_key = Some(KEY.into());
    firstline_llm::Client::new(options).expect("builds");
}

#[tokio::test]
async fn bad_options_are_refused_before_any_request() {
    let mut options = firstline_llm::ClientOptions::new("127.0.0.1:1/v1", "m");
    assert_eq!(
        firstline_llm::Client::new(options.clone())
            .expect_err("no scheme")
            .reason(),
        "config"
    );
    options.base_url = "http://127.0.0.1:1/v1".into();
    options.model = " ".into();
    assert!(firstline_llm::Client::new(options.clone()).is_err());
    options.model = "m".into();
    options.api_key = Some("sk-bad\nkey".into());
    assert!(firstline_llm::Client::new(options).is_err());
}
