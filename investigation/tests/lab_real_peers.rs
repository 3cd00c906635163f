//! Real peers in the loop: scenarios investigated through the *real* servers an
//! operator runs, not the lab MCP server.
//!
//! - Kubernetes: the real `kubernetes-mcp-server` (npm 0.0.67, `--read-only --list-output
//!   yaml`) against the lab's fake Kubernetes API server.
//! - Metrics: the real Prometheus (Debian 2.42) with the scenario's series backfilled by
//!   `promtool`, through the real `prometheus-mcp-server` (PyPI 1.6.2).
//!
//! Firstline's tool layer is configured with the `kubernetes-mcp-server` and
//! `prometheus-mcp-server` profiles, as in production; the incident graph runs in-process with
//! no database. The servers come from `scripts/setup`: when one is missing these tests FAIL and
//! say to run it. Every child process is killed (with its process group) when its guard drops,
//! and every wait is bounded.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, build_incident_graph, render_markdown, run_round,
};
use firstline_lab::Scenario;
use firstline_lab::peers::{
    KubeApiHandle, McpPeer, PeerTools, PrometheusPeer, serve_kube_api, start_kubernetes_mcp,
    start_prometheus, start_prometheus_mcp,
};
use firstline_model::ThreadContext;

/// The whole round (servers up, graph run) must finish within this.
const ROUND_LIMIT: Duration = Duration::from_secs(180);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("investigation/ has a parent")
        .to_path_buf()
}

fn tools() -> PeerTools {
    PeerTools::locate(&repo_root()).unwrap_or_else(|e| panic!("{e}"))
}

fn server(name: &str, url: &str, profile: &str) -> McpServerSettings {
    McpServerSettings {
        name: name.into(),
        url: Some(url.into()),
        profile: Some(profile.into()),
        call_timeout_secs: Some(20),
        connect_timeout_secs: Some(20),
        ..Default::default()
    }
}

/// The real Kubernetes side: the fake API server and kubernetes-mcp-server in front of it.
struct Kube {
    api: KubeApiHandle,
    mcp: McpPeer,
}

async fn kube(tools: &PeerTools, scenario: &Scenario, dir: &Path) -> Kube {
    let api = serve_kube_api(scenario.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("fake Kubernetes API listens");
    let kubeconfig = dir.join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, "default")
        .expect("kubeconfig written");
    let mcp = start_kubernetes_mcp(tools, &kubeconfig, dir)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Kube { api, mcp }
}

/// The real metrics side: Prometheus with the series, and prometheus-mcp-server.
struct Prom {
    prometheus: PrometheusPeer,
    mcp: McpPeer,
}

async fn prom(tools: &PeerTools, scenario: &Scenario, dir: &Path) -> Prom {
    let prometheus = start_prometheus(tools, scenario, dir)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    let mcp = start_prometheus_mcp(tools, &prometheus.url(), dir)
        .await
        .unwrap_or_else(|e| panic!("{e}"));
    Prom { prometheus, mcp }
}

struct Outcome {
    state: IncidentState,
    text: String,
    posted: bool,
}

async fn investigate(scenario: &Scenario, servers: Vec<McpServerSettings>) -> Outcome {
    let settings = McpSettings {
        servers,
        ..Default::default()
    };
    let tools = McpTools::from_settings(&settings, None).expect("tool settings are valid");
    let round = tools.round(CallScope::adhoc(format!("real-peers-{}", scenario.name)));
    let graph = build_incident_graph(Arc::new(round), None, GraphOptions::default())
        .expect("the incident graph compiles");
    let input = IncidentState::new(
        AlertInput::parse(scenario.alert_text(), Some(scenario.alert_at)),
        ThreadContext::default(),
    );
    let state = run_round(&graph, input).await.expect("the round runs");
    tools.shutdown().await;
    let text = render_markdown(&state);
    let posted = state.grounded();
    Outcome {
        state,
        text,
        posted,
    }
}

fn assert_expected(scenario: &Scenario, outcome: &Outcome) {
    let causes: Vec<String> = match &outcome.state.report {
        Some(report) if outcome.posted => {
            report.causes.iter().map(|c| c.statement.clone()).collect()
        }
        _ => Vec::new(),
    };
    let check = scenario.spec.expect.check(&firstline_lab::Reply {
        text: &outcome.text,
        posted: outcome.posted,
        causes: &causes,
    });
    assert!(
        check.passed(),
        "{}: {check:?}\nposted: {}\n{}\nmissing: {:#?}",
        scenario.name,
        outcome.posted,
        outcome.text,
        outcome.state.missing
    );
}

/// The evidence tools, as `server/tool`.
fn evidence_tools(outcome: &Outcome) -> Vec<String> {
    outcome
        .state
        .evidence
        .iter()
        .map(|e| format!("{}/{}", e.server, e.tool))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crashloop_through_the_real_kubernetes_mcp_server() {
    let tools = tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = Scenario::load(&repo_root().join("lab/scenarios/crashloop-config-exit-78"))
        .expect("the crash-loop scenario loads");
    let work = async {
        let kube = kube(&tools, &scenario, dir.path()).await;
        let outcome = investigate(
            &scenario,
            vec![server("k8s", &kube.mcp.url, "kubernetes-mcp-server")],
        )
        .await;
        (kube, outcome)
    };
    let (kube, outcome) = tokio::time::timeout(ROUND_LIMIT, work)
        .await
        .expect("the round finished in time");
    let requests = kube.api.requests();
    eprintln!(
        "{}\n--- Kubernetes API requests ---\n{}",
        outcome.text,
        requests.join("\n")
    );
    for e in &outcome.state.evidence {
        let head: String = e.excerpt.chars().take(700).collect();
        eprintln!(
            "--- {} {}/{} {} ---\n{head}",
            e.id, e.server, e.tool, e.args
        );
    }

    assert_expected(&scenario, &outcome);
    let used = evidence_tools(&outcome);
    for tool in ["k8s/pods_get", "k8s/pods_log", "k8s/events_list"] {
        assert!(used.iter().any(|u| u == tool), "{tool} not in {used:?}");
    }
    // The real server asked the fake API for exactly this world.
    let pod = "/api/v1/namespaces/payments/pods/payments-api-6d8f7b9c4-x2x7q";
    assert!(
        requests.iter().any(|r| r == &format!("GET {pod}")),
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with(&format!("GET {pod}/log?")) && r.contains("previous=true")),
        "{requests:#?}"
    );
    assert!(
        requests
            .iter()
            .any(|r| r.starts_with("GET /api/v1/namespaces/payments/events?")
                && r.contains("involvedObject.name")),
        "{requests:#?}"
    );
    let previous = outcome
        .state
        .evidence
        .iter()
        .find(|e| e.tool == "pods_log" && e.args["previous"] == true)
        .expect("the previous log is evidence");
    assert!(
        previous.excerpt.contains("PAYMENT_MODE is not set"),
        "{}",
        previous.excerpt
    );
    kube.api.shutdown().await;
    drop(kube.mcp);
}

/// A metric-driven incident: a rollout inside the alert window and the 5xx ratio stepping up
/// two minutes later. The alert carries its expression (Alertmanager's Graph link); the series
/// is a recording-rule gauge so Prometheus answers it from the backfilled values as they are.
const ERROR_RATE_SCENARIO: &str = r#"
description: checkout 5.3.0 rolls out and the 5xx ratio steps from 0.2% to 9%.
alert:
  integration: alertmanager
  at: -2m
  text: |
    [FIRING:1] CheckoutHighErrorRate (checkout shop critical)
    *Alert:* checkout 5xx ratio above 5% for 5 minutes - `critical`
    *Graph:* <http://prometheus.monitoring:9090/graph?g0.expr=service%3Ahttp_5xx_ratio%3Arate5m%7Bnamespace%3D%22shop%22%2Cservice%3D%22checkout%22%7D&g0.tab=1|:chart_with_upwards_trend:>
    *Details:*
      • *alertname:* `CheckoutHighErrorRate`
      • *deployment:* `checkout`
      • *namespace:* `shop`
      • *service:* `checkout`
      • *severity:* `critical`
    Starts at: {{at}}
pods:
  - name: checkout-6c9f7d8b5-8kq2w
    namespace: shop
    node: worker-eu-1a-2
    deployment: checkout
    created: -11m
    containers:
      - {name: checkout, image: "registry.example.com/shop/checkout:5.3.0", state: {running: {startedAt: -11m}}}
deployments:
  - name: checkout
    namespace: shop
    replicas: 2
    revisions:
      - image: registry.example.com/shop/checkout:5.2.1
        created: -6d
      - image: registry.example.com/shop/checkout:5.3.0
        created: -11m
        change_cause: "deploy checkout 5.3.0 (new tax-rate client)"
events:
  - reason: ScalingReplicaSet
    message: Scaled up replica set checkout-6c9f7d8b5 to 2 from 1
    involvedObject: {kind: Deployment, name: checkout, namespace: shop}
    at: -10m
metrics:
  - query: 'service:http_5xx_ratio:rate5m{namespace="shop",service="checkout"}'
    step: {before: 0.002, after: 0.09, at: -9m}
expect:
  verdict: post
  must_mention: [["5.3.0"], ["deploy"]]
  must_not_mention: ["OOMKilled", "crash-looping"]
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn error_rate_step_through_real_prometheus_and_prometheus_mcp_server() {
    let tools = tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("error-rate-step.yaml");
    std::fs::write(&file, ERROR_RATE_SCENARIO).expect("scenario written");
    let scenario = Scenario::load(&file).expect("the error-rate scenario loads");
    let work = async {
        let kube = kube(&tools, &scenario, dir.path()).await;
        let prom = prom(&tools, &scenario, dir.path()).await;
        let outcome = investigate(
            &scenario,
            vec![
                server("k8s", &kube.mcp.url, "kubernetes-mcp-server"),
                server("prom", &prom.mcp.url, "prometheus-mcp-server"),
            ],
        )
        .await;
        (kube, prom, outcome)
    };
    let (kube, prom, outcome) = tokio::time::timeout(ROUND_LIMIT, work)
        .await
        .expect("the round finished in time");
    eprintln!(
        "{}\n--- promtool ---\n{}\n--- Kubernetes API requests ---\n{}",
        outcome.text,
        prom.prometheus.backfill_output,
        kube.api.requests().join("\n")
    );

    assert_expected(&scenario, &outcome);
    let used = evidence_tools(&outcome);
    assert!(
        used.iter().any(|u| u == "prom/execute_range_query"),
        "{used:?}"
    );
    let metric = outcome
        .state
        .evidence
        .iter()
        .find(|e| e.tool == "execute_range_query")
        .expect("the metric is evidence");
    // Real Prometheus' answer, relayed by the real server: the backfilled step, as strings.
    assert!(
        metric.excerpt.contains("\"0.002\"") && metric.excerpt.contains("\"0.09\""),
        "{}",
        metric.excerpt
    );
    assert!(
        outcome
            .state
            .findings
            .iter()
            .any(|f| f.kind() == firstline_investigation::detectors::Kind::MetricStep),
        "{:#?}",
        outcome.state.findings
    );
    kube.api.shutdown().await;
    drop((kube.mcp, prom));
}

/// The same real server as an MCP stdio child of the tool layer (the production `command`
/// form), answering the previous-log capability from the fake API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubernetes_mcp_server_as_a_stdio_child() {
    use firstline_investigation::tools::{CapabilityRequest, EvidenceSource, Fetched};
    let tools = tools();
    let dir = tempfile::tempdir().expect("temp dir");
    let scenario = Scenario::load(&repo_root().join("lab/scenarios/crashloop-config-exit-78"))
        .expect("the crash-loop scenario loads");
    let api = serve_kube_api(scenario, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("fake Kubernetes API listens");
    let kubeconfig = dir.path().join("kubeconfig");
    api.write_kubeconfig(&kubeconfig, "default")
        .expect("kubeconfig written");
    let settings = McpSettings {
        servers: vec![McpServerSettings {
            name: "k8s".into(),
            command: Some(tools.kubernetes_mcp_server.display().to_string()),
            args: firstline_lab::peers::kubernetes_mcp_stdio_args(&kubeconfig),
            profile: Some("kubernetes-mcp-server".into()),
            call_timeout_secs: Some(20),
            connect_timeout_secs: Some(20),
            ..Default::default()
        }],
        ..Default::default()
    };
    let layer = McpTools::from_settings(&settings, None).expect("tool settings are valid");
    let round = layer.round(CallScope::adhoc("real-peers-stdio"));
    let fetched = tokio::time::timeout(
        Duration::from_secs(60),
        round.fetch(CapabilityRequest::PodLogs {
            namespace: "payments".into(),
            pod: "payments-api-6d8f7b9c4-x2x7q".into(),
            container: Some("api".into()),
            previous: true,
            tail_lines: 50,
        }),
    )
    .await
    .expect("the call finished in time");
    layer.shutdown().await;
    match fetched {
        Fetched::Found(output) => {
            assert_eq!(output.tool, "pods_log");
            assert!(
                output.text.contains("PAYMENT_MODE is not set"),
                "{}",
                output.text
            );
        }
        Fetched::Missing(missing) => panic!("missing: {}", missing.reason),
    }
    assert!(
        api.requests().iter().any(|r| r.contains("/log?")
            && r.contains("previous=true")
            && r.contains("tailLines=50")),
        "{:#?}",
        api.requests()
    );
    api.shutdown().await;
}

/// A dependency a client's log names, and where following it should end.
struct DependencyLead {
    scenario: &'static str,
    /// The host as the lead names it (`host `…:port``).
    host: &'static str,
    namespace: &'static str,
    /// The Service read on the way (host → Service → Endpoints → pods by selector), when the
    /// host's shape goes through one; `None` for a headless Service's pod name, which names the
    /// pod itself.
    service: Option<&'static str>,
    /// The dependency's pod the lead ends at.
    pod: &'static str,
    /// Text only that pod's description or log holds.
    pod_says: &'static str,
    /// Whether the dependency is the incident's cause: then the headline names it and the
    /// scenario's `expect` is met with Kubernetes alone. (catalog-db is up and answers the
    /// healthy pods; the cause is the client node's conntrack table, in its kernel journal,
    /// which needs a log store this run has not.)
    is_cause: bool,
}

const DEPENDENCY_LEADS: &[DependencyLead] = &[
    // `READONLY …` from `session-redis-0.session-redis-headless.shop.svc.cluster.local:6379`:
    // one pod of a headless Service, read directly.
    DependencyLead {
        scenario: "unrelated-deploy-redis-failover-readonly",
        host: "session-redis-0.session-redis-headless.shop.svc.cluster.local:6379",
        namespace: "shop",
        service: None,
        pod: "session-redis-0",
        pod_says: "MASTER <-> REPLICA sync",
        is_cause: true,
    },
    // `dial tcp 10.96.44.12:5432: i/o timeout`: Service catalog-db's cluster IP, so the
    // Services are listed, then catalog-db, its Endpoints and its pods by selector.
    DependencyLead {
        scenario: "node-conntrack-table-full-shared-node-timeouts",
        host: "10.96.44.12:5432",
        namespace: "catalog",
        service: Some("catalog-db"),
        pod: "catalog-db-0",
        pod_says: "password authentication failed for user \"metabase\"",
        is_cause: false,
    },
];

/// A client's failing calls name a dependency; the lead is followed end to end through the real
/// kubernetes-mcp-server: the plan's lead steps, the fake API's requests for the dependency's
/// Service and pod, its description and log in the evidence, and the same headline as through
/// the lab's own MCP server (with the same Kubernetes tools, so only the server differs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependency_lead_followed_through_the_real_kubernetes_mcp_server() {
    use firstline_investigation::plan::{StepOutcome, describe_request, render_plan};
    use firstline_investigation::tools::CapabilityRequest;
    let tools = tools();
    for case in DEPENDENCY_LEADS {
        let dir = tempfile::tempdir().expect("temp dir");
        let scenario = Scenario::load(&repo_root().join("lab/scenarios").join(case.scenario))
            .unwrap_or_else(|e| panic!("{}: {e}", case.scenario));
        let work = async {
            let lab =
                firstline_lab::serve_http(scenario.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
                    .await
                    .expect("the lab MCP server listens");
            let via_lab = investigate(
                &scenario,
                vec![server("k8s", &lab.mcp_url(), "kubernetes-mcp-server")],
            )
            .await;
            lab.shutdown().await;
            let kube = kube(&tools, &scenario, dir.path()).await;
            let outcome = investigate(
                &scenario,
                vec![server("k8s", &kube.mcp.url, "kubernetes-mcp-server")],
            )
            .await;
            (kube, via_lab, outcome)
        };
        let (kube, via_lab, outcome) = tokio::time::timeout(ROUND_LIMIT, work)
            .await
            .expect("the rounds finished in time");
        let requests = kube.api.requests();
        let plan = &outcome.state.plan;
        eprintln!(
            "=== {} ===\n{}\n--- plan ---\n{}--- Kubernetes API requests ---\n{}",
            case.scenario,
            outcome.text,
            render_plan(plan),
            requests.join("\n")
        );

        // (a) The plan follows a lead naming the dependency, and every step of it was sent (or
        // had been, earlier in the round).
        let named = format!("host `{}`", case.host);
        let lead_steps: Vec<_> = plan
            .iter()
            .filter(|s| s.lead.as_deref().is_some_and(|l| l.starts_with(&named)))
            .collect();
        let asked: Vec<String> = lead_steps
            .iter()
            .map(|s| describe_request(&s.request))
            .collect();
        assert!(
            lead_steps
                .iter()
                .all(|s| s.outcome.called() || s.outcome == StepOutcome::Repeated),
            "{}: {named}: {:#?}",
            case.scenario,
            lead_steps
        );
        let ns = case.namespace;
        let pod = case.pod;
        let mut wanted = vec![format!("describe pod {ns}/{pod}")];
        if let Some(service) = case.service {
            wanted.extend([
                format!("get Service {ns}/{service}"),
                format!("get Endpoints {ns}/{service}"),
            ]);
        }
        for want in &wanted {
            assert!(
                asked.contains(want),
                "{}: `{want}` not among the steps for {named}: {asked:#?}",
                case.scenario
            );
        }
        assert!(
            lead_steps.iter().any(|s| matches!(
                &s.request,
                CapabilityRequest::PodLogs { namespace, pod: p, .. } if namespace == ns && p == pod
            )),
            "{}: no log of {pod} for {named}: {asked:#?}",
            case.scenario
        );
        if case.service.is_some() {
            assert!(
                lead_steps.iter().any(|s| matches!(
                    &s.request,
                    CapabilityRequest::PodList { namespace, label_selector: Some(_) } if namespace == ns
                )),
                "{}: the Service's pods were not listed by its selector: {asked:#?}",
                case.scenario
            );
        }

        // (b) Those steps reached the real server: it asked the fake API for the dependency.
        let pod_path = format!("/api/v1/namespaces/{ns}/pods/{pod}");
        assert!(
            requests.iter().any(|r| r == &format!("GET {pod_path}")),
            "{}: {requests:#?}",
            case.scenario
        );
        assert!(
            requests
                .iter()
                .any(|r| r.starts_with(&format!("GET {pod_path}/log?"))),
            "{}: {requests:#?}",
            case.scenario
        );
        if let Some(service) = case.service {
            for path in [
                format!("GET /api/v1/namespaces/{ns}/services/{service}"),
                format!("GET /api/v1/namespaces/{ns}/endpoints/{service}"),
            ] {
                assert!(
                    requests.contains(&path),
                    "{}: {path} not requested: {requests:#?}",
                    case.scenario
                );
            }
            assert!(
                requests.iter().any(|r| r
                    .starts_with(&format!("GET /api/v1/namespaces/{ns}/pods?labelSelector="))
                    && r.contains(&format!("app%3D{service}"))),
                "{}: {requests:#?}",
                case.scenario
            );
        }

        // (c) The dependency pod's description and log, from the real server, are evidence
        // read for the lead.
        let lead_evidence: Vec<_> = lead_steps
            .iter()
            .filter_map(|s| match s.outcome {
                StepOutcome::Evidence(id) => outcome.state.evidence.iter().find(|e| e.id == id),
                _ => None,
            })
            .filter(|e| e.server == "k8s" && e.args["name"] == pod)
            .collect();
        for tool in ["pods_get", "pods_log"] {
            assert!(
                lead_evidence.iter().any(|e| e.tool == tool),
                "{}: no {tool} of {pod} among the lead's evidence",
                case.scenario
            );
        }
        assert!(
            lead_evidence
                .iter()
                .any(|e| e.excerpt.contains(case.pod_says)),
            "{}: no evidence of {pod} says `{}`:\n{}",
            case.scenario,
            case.pod_says,
            lead_evidence
                .iter()
                .map(|e| format!("--- {} {} ---\n{}", e.id, e.tool, e.excerpt))
                .collect::<Vec<_>>()
                .join("\n")
        );

        // (d) The headline is the lab's, and names the dependency when it is the cause.
        let first = outcome.text.lines().next().unwrap_or_default();
        let lab_first = via_lab.text.lines().next().unwrap_or_default();
        assert_eq!(
            first, lab_first,
            "{}: real server vs lab MCP server",
            case.scenario
        );
        if case.is_cause {
            assert!(first.contains(case.host), "{}: {first}", case.scenario);
        }
        // The lab followed the same lead with the same requests.
        let lab_asked: Vec<String> = via_lab
            .state
            .plan
            .iter()
            .filter(|s| s.lead.as_deref().is_some_and(|l| l.starts_with(&named)))
            .map(|s| describe_request(&s.request))
            .collect();
        assert_eq!(
            asked, lab_asked,
            "{}: real vs lab lead steps",
            case.scenario
        );
        if case.is_cause {
            assert_expected(&scenario, &outcome);
        }
        kube.api.shutdown().await;
        drop(kube.mcp);
    }
}
