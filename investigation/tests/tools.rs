//! The MCP tool layer over the wire: the lab MCP server runs in-process on a random port
//! (streamable HTTP), and the layer talks real MCP to it. The lab counts every `tools/call`
//! it receives, so "nothing was sent" is checked on the server side.

use std::net::SocketAddr;
use std::path::Path;

use chrono::Utc;
use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::evidence::Capability;
use firstline_investigation::tools::{
    CallScope, CapabilityRequest, EvidenceSource, Fetched, McpTools, ToolOutput,
};
use firstline_lab::scenario::RawToolResult;
use firstline_lab::{LabHandle, Scenario, serve_http};
use serde_json::{Map, Value, json};
use sqlx::PgPool;

const WORLD: &str = r#"
alert: {text: "KubePodCrashLooping payments/api-7c9-x2x7q"}
pods:
  - name: api-7c9-x2x7q
    namespace: payments
    node: worker-2
    containers:
      - name: api
        image: registry/api:1.8.3
        ready: false
        restartCount: 7
        state: {waiting: {reason: CrashLoopBackOff}}
        lastState: {terminated: {exitCode: 78, finishedAt: -1m}}
logs:
  - pod: api-7c9-x2x7q
    previous: "FATAL: required setting PAYMENT_MODE is not set\n"
raw_tool_results:
  - {tool: pods_get, args: {name: slow-pod}, delay_ms: 5000}
  - {tool: pods_get, args: {name: broken-pod}, error: "failed to get pod broken-pod: etcdserver: request timed out"}
  - {tool: pods_get, args: {name: leaky-pod}, text: "env: DB_PASSWORD=hunter2 url=postgres://app:s3cr3t@db:5432/x Authorization: Bearer abcdefghijklmnopqrstuvwxyz SLACK xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp"}
expect: {verdict: post}
"#;

async fn lab(extra: Vec<RawToolResult>) -> LabHandle {
    let mut scenario = Scenario::parse("t", Path::new("tools.rs"), WORLD, Utc::now())
        .expect("test scenario parses");
    scenario.spec.raw_tool_results.extend(extra);
    serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("lab server starts")
}

fn settings(url: String, allow: &[&str]) -> McpSettings {
    McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(url),
            profile: Some("lab".into()),
            allow: allow.iter().map(|s| s.to_string()).collect(),
            call_timeout_secs: Some(10),
            connect_timeout_secs: Some(5),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn describe(pod: &str) -> CapabilityRequest {
    CapabilityRequest::PodDescribe {
        namespace: "payments".into(),
        pod: pod.into(),
    }
}

fn found(fetched: Fetched) -> ToolOutput {
    match fetched {
        Fetched::Found(output) => output,
        Fetched::Missing(missing) => panic!("expected a result, got missing: {}", missing.reason),
    }
}

fn missing_reason(fetched: Fetched) -> String {
    match fetched {
        Fetched::Missing(missing) => missing.reason,
        Fetched::Found(output) => panic!("expected missing evidence, got: {}", output.text),
    }
}

async fn audit_rows(pool: &PgPool) -> Vec<(String, String, String, Option<i32>, Value)> {
    sqlx::query_as("SELECT action, target, outcome, duration_ms, detail FROM audit ORDER BY id")
        .fetch_all(pool)
        .await
        .expect("audit rows")
}

#[tokio::test]
async fn tools_allowlist_refuses_audits_and_sends_nothing() {
    let db = firstline_testkit::test_db().await;
    let lab = lab(vec![]).await;
    // Only pods_get is allowed: the previous log (pods_log) must be refused.
    let tools = McpTools::from_settings(
        &settings(lab.mcp_url(), &["pods_get"]),
        Some(db.pool.clone()),
    )
    .expect("valid settings");
    let round = tools.round(CallScope::adhoc("allowlist"));

    let reason = missing_reason(
        round
            .fetch(CapabilityRequest::PodLogs {
                namespace: "payments".into(),
                pod: "api-7c9-x2x7q".into(),
                container: None,
                previous: true,
                tail_lines: 100,
            })
            .await,
    );
    assert!(reason.contains("not on its allowlist"), "{reason}");
    // The same goes for a direct call, as a model's tool call would make it.
    let reason = missing_reason(
        round
            .call(
                Capability::Other("model".into()),
                "lab",
                "pods_log",
                Map::new(),
            )
            .await,
    );
    assert!(reason.contains("`pods_log`"), "{reason}");
    assert_eq!(lab.counts().total(), 0, "nothing reached the server");
    assert_eq!(round.calls_made(), 0);

    let rows = audit_rows(&db.pool).await;
    assert_eq!(rows.len(), 2, "{rows:?}");
    for (action, target, outcome, _, _) in &rows {
        assert_eq!(
            (action.as_str(), target.as_str(), outcome.as_str()),
            ("tool_refused", "lab/pods_log", "refused")
        );
    }

    // An allowed tool still works.
    let output = found(round.fetch(describe("api-7c9-x2x7q")).await);
    assert!(output.text.contains("exitCode: 78"), "{}", output.text);
    assert_eq!(lab.counts().get("pods_get"), 1);
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_timeout_becomes_missing_evidence_and_is_audited() {
    let db = firstline_testkit::test_db().await;
    let lab = lab(vec![]).await;
    let mut settings = settings(lab.mcp_url(), &[]);
    settings.servers[0].call_timeout_secs = Some(1);
    let tools = McpTools::from_settings(&settings, Some(db.pool.clone())).unwrap();
    let round = tools.round(CallScope::adhoc("timeout"));
    let started = std::time::Instant::now();
    let reason = missing_reason(round.fetch(describe("slow-pod")).await);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(4),
        "the 1 s limit held"
    );
    assert!(reason.contains("did not answer within 1 s"), "{reason}");
    assert_eq!(lab.counts().get("pods_get"), 1, "the call was made");
    let rows = audit_rows(&db.pool).await;
    let (action, _, outcome, duration, detail) = rows.last().expect("an audit row");
    assert_eq!(
        (action.as_str(), outcome.as_str()),
        ("tool_call", "timeout")
    );
    assert!(duration.is_some_and(|ms| ms >= 1000), "{duration:?}");
    assert_eq!(detail["args"]["name"], "slow-pod");
    // A timeout is not cached in the database: nothing to serve a retry with.
    let cached: i64 = sqlx::query_scalar("SELECT count(*) FROM tool_cache")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(cached, 0);
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_oversized_result_is_truncated_to_the_cap_and_marked() {
    let big = "x".repeat(200_000);
    let lab = lab(vec![RawToolResult {
        tool: "pods_get".into(),
        args: [("name".to_string(), json!("huge-pod"))].into(),
        text: Some(format!("BEGIN {big} END")),
        error: None,
        delay_ms: None,
    }])
    .await;
    let mut config = settings(lab.mcp_url(), &[]);
    config.servers[0].max_result_bytes = Some(4096);
    // No database: the layer works without one.
    let tools = McpTools::from_settings(&config, None).unwrap();
    let output = found(
        tools
            .round(CallScope::adhoc("big"))
            .fetch(describe("huge-pod"))
            .await,
    );
    assert!(output.text.len() <= 4096, "{}", output.text.len());
    assert!(output.text.starts_with("BEGIN xxx"));
    assert!(!output.text.contains("END"));
    assert!(
        output
            .text
            .contains("[truncated: the result was 200010 bytes"),
        "{}",
        &output.text[output.text.len() - 200..]
    );
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_secrets_never_reach_the_output_nor_the_cache() {
    let db = firstline_testkit::test_db().await;
    let lab = lab(vec![]).await;
    let tools =
        McpTools::from_settings(&settings(lab.mcp_url(), &[]), Some(db.pool.clone())).unwrap();
    let output = found(
        tools
            .round(CallScope::adhoc("secrets"))
            .fetch(describe("leaky-pod"))
            .await,
    );
    let stored: Vec<String> = sqlx::query_scalar("SELECT result FROM tool_cache")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(stored.len(), 1);
    let audit = format!("{:?}", audit_rows(&db.pool).await);
    for secret in [
        "hunter2",
        "s3cr3t",
        "abcdefghijklmnopqrstuvwxyz",
        "xoxb-1234567890",
    ] {
        assert!(
            !output.text.contains(secret),
            "{secret} in output: {}",
            output.text
        );
        assert!(
            !stored[0].contains(secret),
            "{secret} in tool_cache: {}",
            stored[0]
        );
        assert!(!audit.contains(secret), "{secret} in audit");
    }
    assert!(
        output.text.contains("DB_PASSWORD=[REDACTED]"),
        "{}",
        output.text
    );
    assert!(output.text.contains("postgres://app:[REDACTED]@db:5432/x"));
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_cache_hit_makes_no_second_call() {
    let db = firstline_testkit::test_db().await;
    let lab = lab(vec![]).await;
    let tools =
        McpTools::from_settings(&settings(lab.mcp_url(), &[]), Some(db.pool.clone())).unwrap();
    let scope = CallScope::round("T1-C1-1700000000.000100", None, 1);

    let round = tools.round(scope.clone());
    let first = found(round.fetch(describe("api-7c9-x2x7q")).await);
    assert!(!first.cached);
    // Same round, same call: from memory.
    let second = found(round.fetch(describe("api-7c9-x2x7q")).await);
    assert!(second.cached);
    assert_eq!(second.text, first.text);
    // A retried activity builds a new round view with the same scope: from tool_cache.
    let retried = found(tools.round(scope).fetch(describe("api-7c9-x2x7q")).await);
    assert!(retried.cached);
    assert_eq!(retried.text, first.text);
    assert_eq!(
        lab.counts().get("pods_get"),
        1,
        "one call reached the server"
    );
    assert_eq!(round.calls_made(), 1);

    // The next round is a new scope: it asks again.
    let next = found(
        tools
            .round(CallScope::round("T1-C1-1700000000.000100", None, 2))
            .fetch(describe("api-7c9-x2x7q"))
            .await,
    );
    assert!(!next.cached);
    assert_eq!(lab.counts().get("pods_get"), 2);

    let outcomes: Vec<String> = audit_rows(&db.pool)
        .await
        .into_iter()
        .map(|r| r.2)
        .collect();
    assert_eq!(outcomes, ["ok", "cached", "cached", "ok"]);
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_tool_errors_become_missing_evidence_with_the_error_text() {
    let db = firstline_testkit::test_db().await;
    let lab = lab(vec![]).await;
    let tools =
        McpTools::from_settings(&settings(lab.mcp_url(), &[]), Some(db.pool.clone())).unwrap();
    let round = tools.round(CallScope::adhoc("errors"));

    let injected = missing_reason(round.fetch(describe("broken-pod")).await);
    assert!(
        injected.contains("etcdserver: request timed out"),
        "{injected}"
    );
    assert!(
        injected.contains("`pods_get` on MCP server `lab` returned an error"),
        "{injected}"
    );

    let not_found = missing_reason(round.fetch(describe("ghost")).await);
    assert!(
        not_found.contains("pods \"ghost\" not found"),
        "{not_found}"
    );

    // A tool the server does not offer (allowlisted by mistake) is caught before the call.
    let mut config = settings(lab.mcp_url(), &["pods_get", "pods_delete"]);
    config.servers[0].name = "lab2".into();
    let other = McpTools::from_settings(&config, None).unwrap();
    let reason = missing_reason(
        other
            .round(CallScope::adhoc("x"))
            .call(
                Capability::Other("m".into()),
                "lab2",
                "pods_delete",
                Map::new(),
            )
            .await,
    );
    assert!(
        reason.contains("does not offer tool `pods_delete`"),
        "{reason}"
    );

    let outcomes: Vec<String> = audit_rows(&db.pool)
        .await
        .into_iter()
        .map(|r| r.2)
        .collect();
    assert_eq!(outcomes, ["error", "error"]);
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_unreachable_server_is_missing_evidence_quickly() {
    // Bind and drop a listener: nothing answers on that port.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let tools =
        McpTools::from_settings(&settings(format!("http://127.0.0.1:{port}/mcp"), &[]), None)
            .unwrap();
    let round = tools.round(CallScope::adhoc("down"));
    let reason = missing_reason(round.fetch(describe("api-7c9-x2x7q")).await);
    assert!(
        reason.contains("MCP server `lab`") && reason.contains("unavailable"),
        "{reason}"
    );
    // The failure is remembered: the next capability does not wait for another connect.
    let started = std::time::Instant::now();
    let again = missing_reason(round.fetch(describe("other")).await);
    assert!(started.elapsed() < std::time::Duration::from_millis(500));
    assert!(again.contains("unavailable"), "{again}");
}

#[tokio::test]
async fn tools_unconfigured_capability_says_what_to_configure() {
    let tools = McpTools::from_settings(&McpSettings::default(), None).unwrap();
    let reason = missing_reason(
        tools
            .round(CallScope::adhoc("none"))
            .fetch(CapabilityRequest::TraceSearch {
                service: "checkout".into(),
                start: Utc::now(),
                end: Utc::now(),
                limit: 5,
            })
            .await,
    );
    assert!(reason.contains("mcp.capabilities.trace_search"), "{reason}");
}
