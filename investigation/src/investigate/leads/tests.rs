//! The work list's order, bounds and depth, and lead resolution over a source that answers by
//! request: host → Service → Endpoints → pods, cluster IP → Service, pod IP → pod, a taint →
//! the nodes carrying it.

use chrono::{DateTime, Utc};

use super::*;
use crate::evidence::MissingEvidence;
use crate::investigate::InvestigateOptions;
use crate::tools::{Fetched, ToolOutput};

fn proposed(lead: Lead, strength: u8, depth: u8, verified: bool) -> Proposed {
    Proposed {
        lead,
        by: "test".into(),
        strength,
        depth,
        verified,
    }
}

fn node(name: &str) -> Lead {
    Lead::Node { name: name.into() }
}

#[test]
fn strongest_first_then_in_the_order_proposed() {
    let mut work = WorkList::default();
    assert!(work.offer(proposed(node("a"), 1, 1, false)));
    assert!(work.offer(proposed(node("b"), 3, 1, true)));
    assert!(work.offer(proposed(node("c"), 1, 1, false)));
    assert!(work.offer(proposed(node("d"), 3, 1, true)));
    let order: Vec<Lead> = std::iter::from_fn(|| work.take_strongest().map(|p| p.lead)).collect();
    assert_eq!(order, [node("b"), node("d"), node("a"), node("c")]);
}

#[test]
fn a_lead_is_followed_once_however_often_it_is_proposed() {
    let mut work = WorkList::default();
    assert!(work.offer(proposed(node("a"), 1, 1, false)));
    assert!(!work.offer(proposed(node("a"), 3, 1, true)));
    assert!(work.take_strongest().is_some());
    assert!(!work.offer(proposed(node("a"), 1, 1, false)));
    assert!(work.take_strongest().is_none());
}

#[test]
fn unverified_leads_stop_two_links_from_the_alert() {
    let mut work = WorkList::default();
    assert!(work.offer(proposed(node("two"), 1, MAX_DEPTH, false)));
    assert!(!work.offer(proposed(node("three"), 1, MAX_DEPTH + 1, false)));
    assert!(work.offer(proposed(node("verified"), 2, MAX_DEPTH + 1, true)));
}

#[test]
fn at_most_max_leads_are_followed_and_the_rest_are_left() {
    let mut work = WorkList::default();
    for i in 0..MAX_LEADS + 3 {
        work.offer(proposed(node(&format!("n{i}")), 1, 1, false));
    }
    let followed = std::iter::from_fn(|| work.take_strongest()).count();
    assert_eq!(followed, MAX_LEADS);
    assert_eq!(work.left().len(), 3);
}

fn pod(name: &str, node: &str, status: &str, ready: bool) -> PodInfo {
    PodInfo {
        name: name.into(),
        status: status.into(),
        ready: Some(ready),
        node: Some(node.into()),
        ..PodInfo::default()
    }
}

#[test]
fn the_node_failing_pods_share_is_a_strong_lead_and_healthy_pods_propose_none() {
    let found = Found {
        pods: vec![
            pod("api-1", "worker-3", "Failed", false),
            pod("api-2", "worker-3", "Pending", false),
            pod("api-3", "worker-5", "Running", true),
        ],
        ..Found::default()
    };
    let leads = pod_leads(&found);
    let shared = leads
        .iter()
        .find(|p| p.by.contains("share"))
        .expect("a shared-node lead");
    assert_eq!(shared.lead, node("worker-3"));
    assert_eq!(shared.strength, 3);
    assert!(
        !leads.iter().any(|p| p.lead == node("worker-5")),
        "{leads:?}"
    );

    let healthy = Found {
        pods: vec![
            pod("api-1", "worker-3", "Running", true),
            pod("api-2", "worker-3", "Running", true),
        ],
        ..Found::default()
    };
    assert!(pod_leads(&healthy).is_empty());
}

/// Whether a route answers a request.
type Route = Box<dyn Fn(&CapabilityRequest) -> bool + Send + Sync>;

/// Answers each request by the first route whose test accepts it; records every request.
#[derive(Default)]
struct Routed {
    routes: Vec<(Route, String)>,
    asked: std::sync::Mutex<Vec<CapabilityRequest>>,
}

impl Routed {
    fn answer(
        mut self,
        when: impl Fn(&CapabilityRequest) -> bool + Send + Sync + 'static,
        text: &str,
    ) -> Self {
        self.routes.push((Box::new(when), text.to_string()));
        self
    }

    fn asked(&self) -> Vec<String> {
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .map(crate::plan::describe_request)
            .collect()
    }
}

impl EvidenceSource for Routed {
    fn supports(&self, _: &Capability) -> bool {
        true
    }

    async fn fetch(&self, request: CapabilityRequest) -> Fetched {
        self.asked
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(request.clone());
        let capability = request.capability();
        match self.routes.iter().find(|(when, _)| when(&request)) {
            Some((_, text)) => Fetched::Found(ToolOutput {
                capability,
                server: "routed".into(),
                tool: "t".into(),
                args: serde_json::Value::Null,
                text: text.clone(),
                fetched_at: DateTime::<Utc>::UNIX_EPOCH,
                cached: false,
            }),
            None => Fetched::Missing(MissingEvidence {
                capability,
                reason: "not found".into(),
            }),
        }
    }
}

fn get(kind: &'static str, name: &'static str) -> impl Fn(&CapabilityRequest) -> bool {
    move |r| matches!(r, CapabilityRequest::ObjectGet { kind: k, name: n, .. } if k == kind && n == name)
}

fn list(kind: &'static str) -> impl Fn(&CapabilityRequest) -> bool {
    move |r| matches!(r, CapabilityRequest::ObjectList { kind: k, .. } if k == kind)
}

fn pods(selector: Option<&'static str>) -> impl Fn(&CapabilityRequest) -> bool {
    move |r| matches!(r, CapabilityRequest::PodList { label_selector, .. } if label_selector.as_deref() == selector)
}

const SERVICE: &str = "
apiVersion: v1
kind: Service
metadata: {name: orders-db, namespace: shop}
spec:
  clusterIP: 10.96.14.7
  selector: {app: orders-db}
  ports: [{port: 5432, targetPort: 5432}]
";

const SERVICES: &str = "
- apiVersion: v1
  kind: Service
  metadata: {name: cache, namespace: shop}
  spec: {clusterIP: 10.96.0.20, selector: {app: cache}}
- apiVersion: v1
  kind: Service
  metadata: {name: orders-db, namespace: shop}
  spec: {clusterIP: 10.96.14.7, selector: {app: orders-db}}
";

const DB_PODS: &str = "
- apiVersion: v1
  kind: Pod
  metadata: {name: orders-db-0, namespace: shop, labels: {app: orders-db}}
  spec: {nodeName: worker-2}
  status: {phase: Running, podIP: 10.244.2.9}
- apiVersion: v1
  kind: Pod
  metadata: {name: orders-db-1, namespace: shop, labels: {app: orders-db}}
  spec: {nodeName: worker-4}
  status:
    phase: Running
    podIP: 10.244.4.3
    containerStatuses:
      - name: postgres
        ready: false
        restartCount: 6
        state: {waiting: {reason: CrashLoopBackOff}}
";

fn db_world() -> Routed {
    Routed::default()
        .answer(get("Service", "orders-db"), SERVICE)
        .answer(
            get("Endpoints", "orders-db"),
            "kind: Endpoints\nsubsets: []",
        )
        .answer(list("Service"), SERVICES)
        .answer(pods(Some("app=orders-db")), DB_PODS)
        .answer(pods(None), DB_PODS)
}

async fn follow_in(source: &Routed, lead: Lead) -> (Reached, Vec<String>) {
    let options = InvestigateOptions::default();
    let mut c = Collector::new(source, &options, 1);
    let reached = follow(&mut c, &lead, Some("shop"), 300).await;
    let skipped = c.missing.iter().map(|m| m.reason.clone()).collect();
    (reached, skipped)
}

fn host(host: &str, port: Option<u16>) -> Lead {
    Lead::Host {
        host: host.into(),
        port,
        namespace: None,
    }
}

#[tokio::test]
async fn a_service_name_leads_to_its_endpoints_and_its_most_troubled_pod() {
    let source = db_world();
    let (reached, _) = follow_in(
        &source,
        host("orders-db.shop.svc.cluster.local", Some(5432)),
    )
    .await;
    assert_eq!(
        source.asked(),
        [
            "get Service shop/orders-db",
            "get Endpoints shop/orders-db",
            "list pods in shop (app=orders-db)",
        ]
    );
    assert_eq!(reached.names, ["orders-db"]);
    let names: Vec<&str> = reached.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["orders-db-1"], "the crash-looping pod first");
}

#[tokio::test]
async fn a_short_name_is_a_service_in_the_alerts_namespace() {
    let source = db_world();
    follow_in(&source, host("orders-db", None)).await;
    assert_eq!(source.asked()[0], "get Service shop/orders-db");
}

#[tokio::test]
async fn a_cluster_ip_leads_to_the_service_that_has_it() {
    let source = db_world();
    let (reached, _) = follow_in(&source, host("10.96.14.7", Some(5432))).await;
    assert_eq!(source.asked()[0], "list Service in shop");
    assert_eq!(source.asked()[1], "get Service shop/orders-db");
    assert_eq!(reached.names, ["orders-db"]);
}

#[tokio::test]
async fn a_pod_ip_leads_to_the_pod_that_has_it() {
    let source = db_world();
    let (reached, _) = follow_in(&source, host("10.244.2.9", None)).await;
    let names: Vec<&str> = reached.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["orders-db-0"]);
}

#[tokio::test]
async fn a_headless_services_pod_name_leads_to_that_pod() {
    let source = db_world();
    let (reached, _) = follow_in(
        &source,
        host(
            "orders-db-1.orders-db-headless.shop.svc.cluster.local",
            Some(5432),
        ),
    )
    .await;
    assert!(source.asked().is_empty(), "the name says which pod");
    assert_eq!(reached.pods[0].name, "orders-db-1");
    assert_eq!(reached.pods[0].namespace.as_deref(), Some("shop"));
    assert_eq!(reached.names, ["orders-db-headless"]);
}

#[tokio::test]
async fn a_public_host_no_ingress_routes_and_no_pod_serves_is_recorded_as_outside() {
    let source = db_world();
    let (reached, skipped) = follow_in(&source, host("api.fxprovider.example", Some(443))).await;
    assert_eq!(
        source.asked(),
        [
            "list Ingress in all namespaces",
            "list Pod in all namespaces"
        ],
        "who routes it, who serves it; nothing more"
    );
    assert!(reached.pods.is_empty());
    assert!(
        skipped
            .last()
            .is_some_and(|s| s.contains("outside the cluster")),
        "{skipped:?}"
    );
}

const INGRESSES: &str = "
- apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata: {name: orders-public, namespace: shop}
  spec:
    rules:
    - host: orders.shop.example.com
      http:
        paths:
        - {path: /, pathType: Prefix, backend: {service: {name: orders-db, port: {number: 5432}}}}
";

#[tokio::test]
async fn a_public_host_an_ingress_routes_leads_to_that_service_and_its_pods() {
    let source = db_world().answer(list("Ingress"), INGRESSES);
    let (reached, _) = follow_in(&source, host("orders.shop.example.com", None)).await;
    assert_eq!(
        source.asked(),
        [
            "list Ingress in all namespaces",
            "get Service shop/orders-db",
            "get Endpoints shop/orders-db",
            "list pods in shop (app=orders-db)",
        ]
    );
    assert_eq!(reached.names, ["orders-public", "orders-db"]);
    assert_eq!(reached.pods[0].name, "orders-db-1", "the troubled one");
}

#[tokio::test]
async fn with_no_ingress_the_pod_configured_with_the_host_leads_to_its_service() {
    let serving = "
- apiVersion: v1
  kind: Pod
  metadata: {name: orders-db-0, namespace: shop, labels: {app: orders-db}}
  spec:
    containers:
    - name: api
      env: [{name: PUBLIC_URL, value: 'https://orders.shop.example.com'}]
- apiVersion: v1
  kind: Pod
  metadata: {name: portal-1, namespace: web, labels: {app: portal}}
  spec:
    containers:
    - name: web
      env: [{name: ORDERS_URL, value: 'https://orders.shop.example.com/api'}]
";
    let source = db_world().answer(list("Ingress"), "items: []").answer(
        |r| matches!(r, CapabilityRequest::ObjectList { kind, .. } if kind == "Pod"),
        serving,
    );
    let options = InvestigateOptions::default();
    let mut c = Collector::new(&source, &options, 1);
    // The client is in `web`: its own config names the host too, and is not the server.
    let reached = follow(
        &mut c,
        &host("orders.shop.example.com", None),
        Some("web"),
        300,
    )
    .await;
    assert_eq!(
        source.asked()[..3],
        [
            "list Ingress in all namespaces",
            "list Pod in all namespaces",
            "list Service in shop",
        ]
    );
    assert_eq!(reached.names, ["orders-db"]);
}

#[tokio::test]
async fn an_address_nothing_has_is_recorded() {
    let source = db_world();
    let (reached, skipped) = follow_in(&source, host("10.1.2.3", None)).await;
    assert!(reached.pods.is_empty());
    assert!(skipped[0].contains("10.1.2.3"), "{skipped:?}");
}

#[tokio::test]
async fn a_lost_nodes_taint_leads_to_the_nodes_that_carry_it() {
    let nodes = "
- kind: Node
  metadata: {name: worker-1}
  spec: {}
- kind: Node
  metadata: {name: worker-ci-3}
  spec: {taints: [{key: node.kubernetes.io/not-ready, effect: NoSchedule}]}
";
    let source = Routed::default().answer(list("Node"), nodes);
    let (reached, _) = follow_in(
        &source,
        Lead::NodesTainted {
            key: "node.kubernetes.io/not-ready".into(),
        },
    )
    .await;
    assert_eq!(reached.nodes, ["worker-ci-3"]);
}

const INDEXER_PODS: &str = "
- apiVersion: v1
  kind: Pod
  metadata:
    name: indexer-6b8d-8hmxk
    namespace: search
    ownerReferences: [{kind: ReplicaSet, name: indexer-6b8d}]
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: indexer-6b8d-tq2wz
    namespace: search
    ownerReferences: [{kind: ReplicaSet, name: indexer-6b8d}]
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata:
    name: frontend-59d7-2xvlp
    namespace: search
    ownerReferences: [{kind: ReplicaSet, name: frontend-59d7}]
  status: {phase: Running}
";

#[test]
fn a_failure_one_pods_log_shows_once_leads_to_a_sibling_of_the_same_owner() {
    use crate::detectors::testing::{ev, log_of, service_level};
    let refused = "ERROR bulk failed: cluster_block_exception index read-only-allow-delete block\n";
    let mut evidence = vec![
        ev(
            1,
            Capability::PodList,
            serde_json::json!({"namespace": "search"}),
            INDEXER_PODS,
        ),
        log_of(2, "indexer-6b8d-8hmxk", refused),
    ];
    let read = Found {
        pods: vec![PodInfo {
            name: "indexer-6b8d-8hmxk".into(),
            ..PodInfo::default()
        }],
        ..Found::default()
    };
    let findings = crate::detectors::run_detectors(&evidence, &service_level());
    let leads = sibling_leads(&evidence, &findings, &read);
    assert_eq!(
        leads.iter().map(|p| p.lead.clone()).collect::<Vec<_>>(),
        [Lead::Pod {
            namespace: "search".into(),
            name: "indexer-6b8d-tq2wz".into(),
        }],
        "the same ReplicaSet's other pod, never another owner's"
    );
    assert!(!leads[0].verified && leads[0].strength == 1);

    // Once the sibling's log repeats it, the class is verified and proposes nothing more.
    evidence.push(log_of(3, "indexer-6b8d-tq2wz", refused));
    let findings = crate::detectors::run_detectors(&evidence, &service_level());
    assert!(sibling_leads(&evidence, &findings, &read).is_empty());
}

#[tokio::test]
async fn a_certificate_failure_reads_every_event_of_the_namespace_once() {
    let source = Routed::default().answer(
        |r| {
            matches!(
                r,
                CapabilityRequest::Events {
                    object: None,
                    warnings_only: false,
                    ..
                }
            )
        },
        "# No events found",
    );
    let (reached, skipped) = follow_in(&source, Lead::CertificatesIssued).await;
    assert_eq!(source.asked(), ["events in shop"]);
    assert!(reached.pods.is_empty() && skipped.is_empty());

    // Without the alert's namespace there is nowhere to look: said, not guessed.
    let options = InvestigateOptions::default();
    let mut c = Collector::new(&source, &options, 1);
    follow(&mut c, &Lead::CertificatesIssued, None, 300).await;
    assert!(
        c.missing[0].reason.contains("no namespace"),
        "{:?}",
        c.missing
    );
}

#[tokio::test]
async fn a_located_failure_reads_failing_and_healthy_siblings_current_logs() {
    let source = Routed::default().answer(
        |r| {
            matches!(
                r,
                CapabilityRequest::PodLogs {
                    previous: false,
                    ..
                }
            )
        },
        "INFO maxHeap=1434 MiB",
    );
    let lead = Lead::CompareLogs {
        failing: vec!["api-1".into(), "api-2".into()],
        healthy: "api-5".into(),
    };
    let (reached, skipped) = follow_in(&source, lead).await;
    assert_eq!(
        source.asked(),
        [
            "current log of shop/api-1",
            "current log of shop/api-2",
            "current log of shop/api-5"
        ]
    );
    assert!(reached.pods.is_empty() && skipped.is_empty());
}

#[tokio::test]
async fn a_rise_reads_the_jobs_of_every_namespace_once() {
    let source = Routed::default().answer(list("Job"), "[]");
    let (reached, skipped) = follow_in(&source, Lead::JobsStarted).await;
    assert_eq!(source.asked(), ["list Job in all namespaces"]);
    assert!(reached.pods.is_empty() && skipped.is_empty());
}

#[tokio::test]
async fn a_filling_volume_reads_its_free_bytes_and_its_databases_growth_by_pod() {
    let source = Routed::default();
    let lead = |database_pod: Option<&str>| Lead::VolumeGrowth {
        namespace: "orders".into(),
        claim: "data-orders-db-0".into(),
        database_pod: database_pod.map(str::to_string),
        at: None,
    };
    follow_in(&source, lead(Some("orders-db-0"))).await;
    let asked = source.asked();
    assert_eq!(asked.len(), 4, "{asked:?}");
    assert!(
        asked[0].contains("kubelet_volume_stats_available_bytes"),
        "{asked:?}"
    );
    assert!(
        asked[0].contains("persistentvolumeclaim=\"data-orders-db-0\""),
        "{asked:?}"
    );
    for (asked, metric) in asked[1..].iter().zip([
        "pg_replication_slots_pg_wal_lsn_diff",
        "pg_replication_slot_slot_is_active",
        "pg_database_size_bytes",
    ]) {
        assert!(
            asked.contains(metric) && asked.contains("pod=\"orders-db-0\""),
            "{asked}"
        );
    }
    // A volume no database writes: only its free bytes.
    let source = Routed::default();
    follow_in(&source, lead(None)).await;
    assert_eq!(source.asked().len(), 1);
}
