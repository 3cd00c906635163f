//! Structured answers against the scripted server: the schema sent, and every way an answer can
//! be unusable.

mod common;

use common::{question, scripted};
use firstline_llm::scripted::ScriptedReply;
use firstline_llm::{LlmError, parse_structured, strict_schema};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::json;

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Verdict {
    decision: String,
    questions: Vec<String>,
    confidence: f32,
    reason: Option<String>,
}

async fn ask(reply: ScriptedReply) -> (Result<Verdict, LlmError>, serde_json::Value) {
    let (server, client) = scripted(vec![reply]).await;
    let schema = strict_schema::<Verdict>().expect("strict");
    let request = question().with_schema("verdict", schema);
    let answer = client.chat(&request).await.expect("answered");
    let body = server.requests()[0].body.clone();
    (parse_structured::<Verdict>(&answer), body)
}

#[tokio::test]
async fn a_structured_answer_decodes_and_the_strict_schema_was_sent() {
    let (verdict, body) = ask(ScriptedReply::json(&json!({
        "decision": "post", "questions": [], "confidence": 0.8, "reason": null
    })))
    .await;
    assert_eq!(
        verdict.expect("decodes"),
        Verdict {
            decision: "post".into(),
            questions: vec![],
            confidence: 0.8,
            reason: None
        }
    );
    let format = &body["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "verdict");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["additionalProperties"],
        false
    );
}

#[tokio::test]
async fn a_fenced_answer_with_a_missing_optional_decodes() {
    let content =
        "```json\n{\"decision\":\"ask\",\"questions\":[\"which pod?\"],\"confidence\":0.3}\n```";
    let (verdict, _) = ask(ScriptedReply::text(content)).await;
    let verdict = verdict.expect("decodes");
    assert_eq!(verdict.questions, vec!["which pod?".to_string()]);
    assert_eq!(verdict.reason, None);
}

#[tokio::test]
async fn garbage_content_is_unparsable() {
    let (verdict, _) = ask(ScriptedReply::text("Sure! The decision is to post.")).await;
    assert_eq!(verdict.expect_err("garbage").reason(), "unparsable");
}

#[tokio::test]
async fn json_of_the_wrong_shape_is_schema_invalid() {
    let (verdict, _) = ask(ScriptedReply::json(&json!({"decision": 3}))).await;
    assert_eq!(verdict.expect_err("wrong shape").reason(), "schema_invalid");
}

#[tokio::test]
async fn a_cut_off_answer_is_length() {
    let (verdict, _) = ask(ScriptedReply::length("{\"decision\": \"po")).await;
    assert_eq!(verdict.expect_err("cut off"), LlmError::Length);
}

#[tokio::test]
async fn a_refusal_is_refusal() {
    let (verdict, _) = ask(ScriptedReply::refusal("I can't help with that.")).await;
    let error = verdict.expect_err("refused");
    assert_eq!(error.reason(), "refusal");
    assert!(error.to_string().contains("can't help"), "{error}");
}

#[tokio::test]
async fn tool_calls_instead_of_content_are_unparsable() {
    let (verdict, _) = ask(ScriptedReply::tool_call("pods_log", json!({}))).await;
    assert_eq!(verdict.expect_err("no content").reason(), "unparsable");
}
