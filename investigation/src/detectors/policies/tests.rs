//! Policies against a ready Service: a default-deny that admits only other namespaces is the
//! cause of a client's timeouts; a rule admitting the client, one that cannot be judged, or no
//! policy selecting the pods finds nothing.

use crate::detectors::testing::{detect, find, has, log_of, object, service_level};
use crate::detectors::{Finding, Kind};

const CLIENT: &str = "checkout-api-7d9f6c8b54-2lq8n";

fn world(policies: &str) -> Vec<crate::evidence::Evidence> {
    let service = "\
apiVersion: v1
kind: Service
metadata:
  name: inventory
  namespace: inventory
spec:
  clusterIP: 10.96.40.10
  selector:
    app: inventory
";
    let endpoints = "\
apiVersion: v1
kind: Endpoints
metadata:
  name: inventory
  namespace: inventory
subsets:
- addresses:
  - ip: 10.244.2.7
    targetRef:
      kind: Pod
      name: inventory-6c9f7d8b5-abcde
      namespace: inventory
";
    let client = format!(
        "\
apiVersion: v1
kind: Pod
metadata:
  name: {CLIENT}
  namespace: checkout
  labels:
    app: checkout-api
status:
  phase: Running
"
    );
    let line = "ERROR reserve failed: dial tcp 10.96.40.10:8080: i/o timeout";
    vec![
        object(1, "Service", service),
        object(2, "Endpoints", endpoints),
        object(3, "Pod", &client),
        log_of(4, CLIENT, &format!("{line}\n{line}\n")),
        object(5, "NetworkPolicy", policies),
    ]
}

fn findings(policies: &str) -> Vec<Finding> {
    detect(&world(policies), &service_level())
}

const DENY_ALL_BUT_INGRESS: &str = "\
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata:
    name: default-deny-ingress
    namespace: inventory
  spec:
    podSelector: {}
    policyTypes: [Ingress]
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata:
    name: allow-from-ingress-nginx
    namespace: inventory
  spec:
    podSelector: {}
    policyTypes: [Ingress]
    ingress:
    - from:
      - namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: ingress-nginx
";

#[test]
fn a_default_deny_that_admits_only_other_namespaces_explains_the_timeouts() {
    let findings = findings(DENY_ALL_BUT_INGRESS);
    let denies = find(&findings, Kind::PolicyDenies);
    assert!(denies.is_verified_cause(), "{denies:#?}");
    assert!(
        denies
            .title()
            .contains("`default-deny-ingress`, `allow-from-ingress-nginx`")
            && denies.title().contains("from `checkout`"),
        "{}",
        denies.title()
    );
    assert!(
        denies.detail().contains("namespace ingress-nginx"),
        "{}",
        denies.detail()
    );
    assert!(denies.explains(find(&findings, Kind::Dependency)));
}

#[test]
fn a_rule_admitting_the_client_or_one_that_cannot_be_judged_finds_nothing() {
    let admitted = format!(
        "{DENY_ALL_BUT_INGRESS}\
      - namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: checkout
        podSelector:
          matchLabels:
            app: checkout-api
"
    );
    assert!(!has(&findings(&admitted), Kind::PolicyDenies));
    let by_team =
        DENY_ALL_BUT_INGRESS.replace("kubernetes.io/metadata.name: ingress-nginx", "team: edge");
    assert!(
        !has(&findings(&by_team), Kind::PolicyDenies),
        "another label may match"
    );
    let blocks = format!("{DENY_ALL_BUT_INGRESS}      - ipBlock: {{cidr: 10.244.0.0/16}}\n");
    assert!(!has(&findings(&blocks), Kind::PolicyDenies));
    // A policy for other pods, or only for egress, selects nothing of the Service's.
    let others = DENY_ALL_BUT_INGRESS.replace(
        "podSelector: {}",
        "podSelector: {matchLabels: {app: reports}}",
    );
    assert!(!has(&findings(&others), Kind::PolicyDenies));
    let egress = DENY_ALL_BUT_INGRESS.replace("policyTypes: [Ingress]", "policyTypes: [Egress]");
    assert!(!has(&findings(&egress), Kind::PolicyDenies));
}

#[test]
fn rules_that_admit_everyone_or_a_peer_of_the_policys_own_namespace() {
    // A rule with only ports, or an empty rule, admits every source.
    let ports_only = format!("{DENY_ALL_BUT_INGRESS}    - ports:\n      - port: 8080\n");
    assert!(!has(&findings(&ports_only), Kind::PolicyDenies));
    let empty_rule = format!("{DENY_ALL_BUT_INGRESS}    - {{}}\n");
    assert!(!has(&findings(&empty_rule), Kind::PolicyDenies));
    // A pod selector alone admits pods of the policy's own namespace, not the client's.
    let own_namespace = format!(
        "{DENY_ALL_BUT_INGRESS}      - podSelector:\n          matchLabels:\n            app: checkout-api\n"
    );
    assert!(has(&findings(&own_namespace), Kind::PolicyDenies));
}

#[test]
fn with_no_pod_of_the_service_read_a_policy_on_other_labels_cannot_be_judged() {
    // The Service's pods were not read: an allow policy selecting `tier: api` may pick them.
    let world: Vec<crate::evidence::Evidence> = world(&format!(
        "{DENY_ALL_BUT_INGRESS}\
- apiVersion: networking.k8s.io/v1
  kind: NetworkPolicy
  metadata:
    name: allow-checkout
    namespace: inventory
  spec:
    podSelector:
      matchLabels:
        tier: api
    ingress:
    - from:
      - namespaceSelector:
          matchLabels:
            kubernetes.io/metadata.name: checkout
"
    ));
    assert!(!has(&detect(&world, &service_level()), Kind::PolicyDenies));
}

#[test]
fn a_refused_connection_was_answered_and_no_policy_is_blamed() {
    let mut world = world(DENY_ALL_BUT_INGRESS);
    let refused = "ERROR reserve failed: dial tcp 10.96.40.10:8080: connect: connection refused";
    world[3] = log_of(4, CLIENT, &format!("{refused}\n{refused}\n"));
    assert!(!has(&detect(&world, &service_level()), Kind::PolicyDenies));
}
