//! The shipped scenarios load, and served by the lab they answer the investigation's fixed
//! steps through the real tool layer (HTTP here; `stdio.rs` covers the child-process transport).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use chrono::{Duration, Utc};
use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::tools::{
    CallScope, CapabilityRequest, EvidenceSource, Fetched, McpTools,
};
use firstline_lab::{Scenario, load_all, serve_http};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

fn scenarios_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/scenarios")
}

fn lab_settings(url: String) -> McpSettings {
    McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(url),
            profile: Some("lab".into()),
            // Short enough to cut the failing scenario's 60 s hang, long enough for a loaded machine.
            call_timeout_secs: Some(5),
            ..Default::default()
        }],
        ..Default::default()
    }
}

fn text(fetched: Fetched) -> String {
    match fetched {
        Fetched::Found(output) => output.text,
        Fetched::Missing(missing) => panic!("missing: {}", missing.reason),
    }
}

#[test]
fn every_shipped_scenario_loads() {
    let all = load_all(&scenarios_dir()).expect("scenarios load");
    let names: Vec<&str> = all.iter().map(|s| s.name.as_str()).collect();
    for required in ["crashloop-config-exit-78", "oomkilled", "tools-failing"] {
        assert!(names.contains(&required), "{names:?}");
    }
    let crashloop = all
        .iter()
        .find(|s| s.name == "crashloop-config-exit-78")
        .unwrap();
    assert!(
        crashloop.alert_text().contains("Starts at: 20"),
        "{}",
        crashloop.alert_text()
    );
}

#[tokio::test]
async fn crashloop_previous_log_holds_the_cause_and_calls_are_counted() {
    let scenario = Scenario::load(&scenarios_dir().join("crashloop-config-exit-78")).unwrap();
    let alert_at = scenario.alert_at;
    let lab = serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let tools = McpTools::from_settings(&lab_settings(lab.mcp_url()), None).unwrap();
    let round = tools.round(CallScope::adhoc("crashloop"));
    let pod = "payments-api-6d8f7b9c4-x2x7q".to_string();
    let logs = |previous| CapabilityRequest::PodLogs {
        namespace: "payments".into(),
        pod: pod.clone(),
        container: Some("api".into()),
        previous,
        tail_lines: 200,
    };

    let described = text(
        round
            .fetch(CapabilityRequest::PodDescribe {
                namespace: "payments".into(),
                pod: pod.clone(),
            })
            .await,
    );
    assert!(
        described.contains("exitCode: 78") && described.contains("restartCount: 6"),
        "{described}"
    );
    let previous = text(round.fetch(logs(true)).await);
    assert!(
        previous.contains("FATAL required setting PAYMENT_MODE is not set"),
        "{previous}"
    );
    let current = text(round.fetch(logs(false)).await);
    assert!(
        current.contains("has not logged any message yet"),
        "{current}"
    );
    let events = text(
        round
            .fetch(CapabilityRequest::Events {
                namespace: "payments".into(),
                object: Some(pod.clone()),
                warnings_only: false,
            })
            .await,
    );
    assert!(
        events.contains("Reason: BackOff") && !events.contains("ScalingReplicaSet"),
        "{events}"
    );
    let history = text(
        round
            .fetch(CapabilityRequest::DeployHistory {
                namespace: "payments".into(),
                workload: "payments-api".into(),
            })
            .await,
    );
    assert!(
        history.contains("payments-api:2.13.4") && history.contains("split PAYMENT_MODE"),
        "{history}"
    );
    let metric = text(round.fetch(CapabilityRequest::MetricRange {
        query: r#"sum(kube_pod_container_status_restarts_total{namespace="payments", pod="payments-api-6d8f7b9c4-x2x7q"})"#.into(),
        start: alert_at - Duration::minutes(30),
        end: alert_at,
        step_secs: 60,
    }).await);
    assert!(
        metric.starts_with(r#"{"result":[{"metric":{"namespace":"payments""#),
        "{metric}"
    );

    assert_eq!(lab.counts().get("pods_log"), 2);
    assert_eq!(lab.counts().total(), 6);
    // The same counts over HTTP, for a lab in another process.
    let mut stream = tokio::net::TcpStream::connect(lab.addr).await.unwrap();
    stream
        .write_all(b"GET /calls HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert!(response.ends_with(r#"{"events_list":1,"execute_range_query":1,"pods_get":1,"pods_log":2,"resources_list":1}"#), "{response}");
    lab.shutdown().await;
}

#[tokio::test]
async fn tools_failing_leaves_every_capability_missing() {
    let scenario = Scenario::load(&scenarios_dir().join("tools-failing")).unwrap();
    let at = scenario.alert_at;
    let lab = serve_http(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    let tools = McpTools::from_settings(&lab_settings(lab.mcp_url()), None).unwrap();
    let round = tools.round(CallScope::adhoc("failing"));
    let requests = [
        CapabilityRequest::PodDescribe {
            namespace: "shop".into(),
            pod: "checkout-7f9d8c6b5-lq4wz".into(),
        },
        CapabilityRequest::Events {
            namespace: "shop".into(),
            object: None,
            warnings_only: false,
        },
        CapabilityRequest::DeployHistory {
            namespace: "shop".into(),
            workload: "checkout".into(),
        },
        CapabilityRequest::MetricRange {
            query: "up".into(),
            start: at - Duration::minutes(30),
            end: at,
            step_secs: 60,
        },
        CapabilityRequest::LogQuery {
            query: r#"{app="checkout"}"#.into(),
            start: at - Duration::minutes(30),
            end: at,
            limit: 50,
        },
        CapabilityRequest::TraceSearch {
            service: "checkout".into(),
            start: at - Duration::minutes(30),
            end: at,
            limit: 20,
        },
    ];
    let started = Utc::now();
    for request in requests {
        match round.fetch(request.clone()).await {
            Fetched::Missing(missing) => assert!(!missing.reason.is_empty()),
            Fetched::Found(output) => panic!("{request:?} found: {}", output.text),
        }
    }
    assert!(
        Utc::now() - started < Duration::seconds(30),
        "the hanging query was cut at its timeout"
    );
    lab.shutdown().await;
}
