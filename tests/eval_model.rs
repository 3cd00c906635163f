//! `firstline eval --model` and `firstline investigate --model` against a scripted
//! OpenAI-compatible server on a real socket, over one lab scenario: the model columns and JSON
//! are filled beside the no-model result, a failing model is reported as a fallback with its
//! reason while the case still passes on the deterministic text, a model that turns a passing
//! case into a failing one is a regression that fails the run, and without `--model` nothing
//! changes.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::process::Command;

use firstline_llm::scripted::{ScriptedReply, ScriptedServer};

const CRASHLOOP: &str = "crashloop-config-exit-78";

fn scenario() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("lab/scenarios")
        .join(CRASHLOOP)
}

/// `firstline ARGS…` with no `FIRSTLINE_*` from the environment, and the model at `server`
/// when there is one.
async fn firstline(args: &[&str], server: Option<&ScriptedServer>) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    for (key, _) in std::env::vars() {
        if key.starts_with("FIRSTLINE_") {
            command.env_remove(key);
        }
    }
    if let Some(server) = server {
        command
            .env("FIRSTLINE_LLM__BASE_URL", server.base_url())
            .env("FIRSTLINE_LLM__MODEL", "scripted-model")
            .env("FIRSTLINE_LLM__REQUEST_TIMEOUT_SECS", "5")
            .env("FIRSTLINE_LLM__BUDGET_SECS", "20");
    }
    command
        .env("RUST_LOG", "error")
        .args(args)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    tokio::time::timeout(Duration::from_secs(120), command.output())
        .await
        .expect("firstline finished within 2 minutes")
        .expect("firstline ran")
}

async fn eval(extra: &[&str], server: Option<&ScriptedServer>) -> Output {
    let dir = scenario();
    let mut args = vec!["eval", dir.to_str().expect("utf-8 path"), "--no-db"];
    args.extend(extra);
    firstline(&args, server).await
}

fn shown(output: &Output) -> String {
    format!(
        "{}\n--- stderr ---\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn json_of(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", shown(output)))
}

/// The one case's row of the table, split into cells.
fn row(output: &Output) -> Vec<String> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find(|l| l.starts_with(CRASHLOOP))
        .unwrap_or_else(|| panic!("no row for {CRASHLOOP}:\n{}", shown(output)))
        .split_whitespace()
        .map(String::from)
        .collect()
}

/// A model that reads the namespace's warnings, then summarises nothing new and says post.
fn reading_model() -> Vec<ScriptedReply> {
    vec![
        ScriptedReply::tool_call(
            "events",
            json!({"namespace": "payments", "object": null, "warnings_only": true}),
        )
        .with_usage(1500, 30),
        ScriptedReply::text("The previous log already names the missing key.").with_usage(1800, 15),
        ScriptedReply::json(&json!({"causes": [], "observations": []})).with_usage(1900, 20),
        ScriptedReply::json(&json!({
            "decision": "post", "questions": [], "confidence": "high",
            "reason": "the log names the key"
        }))
        .with_usage(1200, 20),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_used_model_fills_the_model_json_beside_the_no_model_result() {
    let server = ScriptedServer::start(reading_model()).await.expect("model");
    let output = eval(&["--model", "--json"], Some(&server)).await;
    assert!(output.status.success(), "{}", shown(&output));
    let report = json_of(&output);
    let case = &report["cases"][0];
    assert_eq!(case["case"], CRASHLOOP);
    assert_eq!(case["result"], "pass", "{case:#}");
    let model = &case["model"];
    assert_eq!(model["result"], "pass", "{model:#}");
    assert_eq!(model["grounded"], true);
    assert_eq!(model["fallback"], Value::Null);
    assert_eq!(model["model"], "scripted-model");
    assert_eq!(model["model_calls"], 4);
    assert_eq!(model["tool_calls"], 1);
    assert_eq!(model["prompt_tokens"], 1500 + 1800 + 1900 + 1200);
    assert_eq!(model["completion_tokens"], 30 + 15 + 20 + 20);
    assert!(model["latency_ms"].is_u64(), "{model:#}");
    assert_eq!(model["dropped_claims"], 0);
    assert!(
        model["text"]
            .as_str()
            .is_some_and(|t| t.contains("Reviewed by scripted-model")),
        "{model:#}"
    );
    assert!(
        case["text"]
            .as_str()
            .is_some_and(|t| !t.contains("scripted-model")),
        "the no-model text is the deterministic round's"
    );

    let totals = &report["model"];
    assert_eq!(totals["cases"], 1, "{totals:#}");
    assert_eq!(totals["passed"], 1);
    assert_eq!(totals["regressed"], 0);
    assert_eq!(totals["used"], 1);
    assert_eq!(totals["model_calls"], 4);
    assert_eq!(totals["tool_calls"], 1);
    assert_eq!(totals["prompt_tokens"], 6400);
    assert_eq!(server.request_count(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_model_is_a_fallback_and_the_case_passes_on_the_deterministic_text() {
    // An empty script answers every request with HTTP 500.
    let server = ScriptedServer::start([]).await.expect("model");

    let output = eval(&["--model"], Some(&server)).await;
    assert!(output.status.success(), "{}", shown(&output));
    let text = shown(&output);
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header[..10],
        [
            "case",
            "format",
            "result",
            "model",
            "grounded",
            "fallback",
            "m.calls",
            "m.tools",
            "tokens",
            "m.latency"
        ],
        "{text}"
    );
    let cells = row(&output);
    assert_eq!(cells[2], "pass", "{text}");
    assert_eq!(
        cells[3], "pass",
        "the model result is the unchanged text: {text}"
    );
    assert_eq!(cells[4], "yes", "{text}");
    assert_eq!(cells[5], "http_5xx", "{text}");
    assert!(
        text.contains(&format!("{CRASHLOOP}: model fell back (http_5xx)")),
        "{text}"
    );
    assert!(text.contains("fell back on 1 (http_5xx: 1)"), "{text}");
    assert!(text.contains("0 regressed"), "{text}");

    let output = eval(&["--model", "--json"], Some(&server)).await;
    assert!(output.status.success(), "{}", shown(&output));
    let report = json_of(&output);
    let case = &report["cases"][0];
    assert_eq!(case["result"], "pass", "{case:#}");
    let model = &case["model"];
    assert_eq!(model["result"], "pass", "{model:#}");
    assert_eq!(model["fallback"], "http_5xx");
    assert_eq!(model["grounded"], true);
    assert_eq!(model["tool_calls"], 0);
    assert_eq!(model["completion_tokens"], 0);
    assert!(
        model["text"]
            .as_str()
            .is_some_and(|t| t.contains("The model (scripted-model) was not used")),
        "{model:#}"
    );
    assert_eq!(report["model"]["fallbacks"], json!({"http_5xx": 1}));
    assert_eq!(report["model"]["used"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_that_fails_a_case_the_deterministic_round_passed_is_a_regression() {
    // The model reads nothing more, adds nothing, and asks instead of posting: the scenario
    // expects a post.
    let server = ScriptedServer::start([
        ScriptedReply::text("Nothing more to read."),
        ScriptedReply::json(&json!({"causes": [], "observations": []})),
        ScriptedReply::json(&json!({
            "decision": "ask", "questions": ["Which config change went out?"],
            "confidence": "low", "reason": "unsure"
        })),
    ])
    .await
    .expect("model");
    let output = eval(&["--model"], Some(&server)).await;
    let text = shown(&output);
    assert!(
        !output.status.success(),
        "a regression fails the run:\n{text}"
    );
    let cells = row(&output);
    assert_eq!(cells[2], "pass", "{text}");
    assert_eq!(cells[3], "REGRESSED", "{text}");
    assert_eq!(cells[4], "no", "{text}");
    assert_eq!(cells[5], "used", "{text}");
    assert_eq!(cells[6], "3", "{text}");
    assert!(text.contains("1 regressed"), "{text}");
    assert!(
        text.contains(&format!("{CRASHLOOP}: model REGRESSED: actual ask")),
        "{text}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn without_model_nothing_changes_and_model_needs_an_endpoint() {
    let output = eval(&[], None).await;
    assert!(output.status.success(), "{}", shown(&output));
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let header: Vec<&str> = text
        .lines()
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(
        header,
        [
            "case",
            "format",
            "result",
            "expected",
            "actual",
            "headline",
            "missing",
            "forbidden",
            "tools",
            "wall"
        ]
    );
    assert!(!text.contains("model"), "{text}");

    let report = json_of(&eval(&["--json"], None).await);
    assert!(report.get("model").is_none(), "{report:#}");
    assert!(report["cases"][0].get("model").is_none(), "{report:#}");

    let output = eval(&["--model"], None).await;
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("FIRSTLINE_LLM__BASE_URL"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread")]
async fn investigate_with_model_prints_the_refined_result() {
    let server = ScriptedServer::start(reading_model()).await.expect("model");
    let dir = scenario();
    let output = firstline(
        &[
            "investigate",
            "--scenario",
            dir.to_str().expect("utf-8 path"),
            "--no-db",
            "--model",
            "--json",
        ],
        Some(&server),
    )
    .await;
    assert!(output.status.success(), "{}", shown(&output));
    let result = json_of(&output);
    let model = &result["model"];
    assert_eq!(model["model"], "scripted-model", "{result:#}");
    assert_eq!(model["fallback"], Value::Null);
    assert_eq!(model["model_calls"], 4);
    assert_eq!(model["tool_calls"], 1);
    assert_eq!(result["usage"]["model_calls"], 4);
    assert_eq!(result["grounded"], true);
    assert!(
        result["text"]
            .as_str()
            .is_some_and(|t| t.contains("Reviewed by scripted-model")),
        "{result:#}"
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("model scripted-model: used; 4 model calls, 1 tool calls"),
        "{stderr}"
    );
}
