//! Services with no ready endpoint: a selector that matches no pod (a cause), pods that are all
//! unready (a consequence their readiness explains), and a Service that has endpoints.

use serde_json::json;

use crate::detectors::testing::{ctx, detect, ev, find, object};
use crate::detectors::{Kind, Role};
use crate::evidence::Capability;

/// Service `checkout`'s Endpoints, before any subset.
const CHECKOUT_ENDPOINTS: &str = "\
apiVersion: v1
kind: Endpoints
metadata:
  name: checkout
  namespace: shop
";

#[test]
fn a_service_whose_selector_matches_no_pod_has_no_endpoints() {
    // `resources_get` of an Endpoints object with no subsets omits the key.
    let endpoints = "\
apiVersion: v1
kind: Endpoints
metadata:
  creationTimestamp: \"2025-03-01T09:00:00Z\"
  name: search-api-metrics
  namespace: search
";
    let findings = detect(&[object(1, "Endpoints", endpoints)], &ctx());
    let none = find(&findings, Kind::NoEndpoints);
    assert!(none.verified);
    assert_eq!(none.role(), Role::Cause);
    // Titles are computed now: with no pod behind it, the title says so.
    assert_eq!(
        none.title(),
        "Service `search-api-metrics` has no endpoints: its selector matches no pod"
    );
    assert_eq!(none.resource().as_deref(), Some("search-api-metrics"));
}

#[test]
fn unready_pods_behind_a_service_are_explained_by_their_readiness() {
    let endpoints = format!(
        "{CHECKOUT_ENDPOINTS}\
subsets:
- notReadyAddresses:
  - ip: 10.244.3.17
    nodeName: worker-eu-1a-2
    targetRef:
      kind: Pod
      name: checkout-6b8d7c5f9-h8r2m
      namespace: shop
  ports:
  - name: http
    port: 8080
    protocol: TCP
"
    );
    let description = "\
Name:  checkout-6b8d7c5f9-h8r2m
Events:
  Warning  Unhealthy  8s (x12 over 2m)  kubelet  Readiness probe failed: HTTP probe failed with statuscode: 503
";
    let pod = json!({"name": "checkout-6b8d7c5f9-h8r2m", "namespace": "shop"});
    let findings = detect(
        &[
            object(1, "Endpoints", &endpoints),
            ev(2, Capability::PodDescribe, pod.clone(), description),
        ],
        &ctx(),
    );
    let none = find(&findings, Kind::NoEndpoints);
    assert_eq!(none.title(), "Service `checkout` has no ready endpoint");
    assert_eq!(none.role(), Role::Consequence);
    assert_eq!(none.refs[0].quote, "- notReadyAddresses:");
    assert!(find(&findings, Kind::ProbeFailure).explains(none));

    // A pod failing its startup probe never becomes ready either.
    let starting = description.replace("Readiness probe", "Startup probe");
    let findings = detect(
        &[
            object(1, "Endpoints", &endpoints),
            ev(2, Capability::PodDescribe, pod, &starting),
        ],
        &ctx(),
    );
    assert!(find(&findings, Kind::ProbeFailure).explains(find(&findings, Kind::NoEndpoints)));
}

#[test]
fn a_service_with_a_ready_address_is_fine() {
    let endpoints = "\
apiVersion: v1
kind: Endpoints
metadata:
  name: cart
  namespace: shop
subsets:
- addresses:
  - ip: 10.244.3.18
    targetRef:
      kind: Pod
      name: cart-5b8c7d6f4-x2k4q
  notReadyAddresses:
  - ip: 10.244.3.17
  ports:
  - port: 8080
";
    let findings = detect(&[object(1, "Endpoints", endpoints)], &ctx());
    assert!(findings.is_empty(), "{findings:#?}");
}

#[test]
fn an_empty_service_whose_pods_fail_passes_their_failure_on() {
    let endpoints = CHECKOUT_ENDPOINTS;
    let description = "\
Name:  checkout-6b8d7c5f9-h8r2m
Containers:
  checkout:
    State:          Waiting
      Reason:       ImagePullBackOff
Events:
  Warning  Failed  10s  kubelet  Failed to pull image \"registry/checkout:2.4.2\": manifest unknown
";
    let pod = json!({"name": "checkout-6b8d7c5f9-h8r2m", "namespace": "shop"});
    let findings = detect(
        &[
            ev(1, Capability::PodDescribe, pod, description),
            object(2, "Endpoints", endpoints),
        ],
        &ctx(),
    );
    // Its pods are there but cannot run: the selector is not what broke.
    let none = find(&findings, Kind::NoEndpoints);
    assert_eq!(none.role(), Role::Consequence);
    assert_eq!(
        none.title(),
        "Service `checkout` has no endpoints: its pods are not running"
    );

    // A failing pod of another workload says nothing about this Service's selector.
    let description = description.replace("checkout-6b8d7c5f9", "cart-5b8c7d6f4");
    let pod = json!({"name": "cart-5b8c7d6f4-h8r2m", "namespace": "shop"});
    let findings = detect(
        &[
            ev(1, Capability::PodDescribe, pod, &description),
            object(2, "Endpoints", endpoints),
        ],
        &ctx(),
    );
    assert_eq!(find(&findings, Kind::NoEndpoints).role(), Role::Cause);
}

#[test]
fn an_empty_service_explains_its_clients_calls_by_name_or_cluster_ip_and_a_crash_loop_explains_it()
{
    let endpoints = format!(
        "{CHECKOUT_ENDPOINTS}\
subsets:
- notReadyAddresses:
  - ip: 10.244.3.17
    targetRef:
      kind: Pod
      name: checkout-6b8d7c5f9-h8r2m
      namespace: shop
"
    );
    let service = "\
apiVersion: v1
kind: Service
metadata:
  name: checkout
  namespace: shop
spec:
  clusterIP: 10.96.207.31
";
    let crashing = "\
Name:  checkout-6b8d7c5f9-h8r2m
Containers:
  api:
    State:          Waiting
      Reason:       CrashLoopBackOff
    Restart Count:  6
";
    let client = "ERROR dial tcp 10.96.207.31:8080: connect: connection refused\n";
    let findings = detect(
        &[
            object(1, "Endpoints", &endpoints),
            object(2, "Service", service),
            ev(
                3,
                Capability::PodDescribe,
                json!({"name": "checkout-6b8d7c5f9-h8r2m", "namespace": "shop"}),
                crashing,
            ),
            crate::detectors::testing::log_of(4, "web-5d8f7b9c4-q2w3e", client),
        ],
        &ctx(),
    );
    let none = find(&findings, Kind::NoEndpoints);
    let call = find(&findings, Kind::Dependency);
    assert!(none.explains(call), "{none:#?}\n{call:#?}");
    assert!(find(&findings, Kind::CrashLoop).explains(none));
}

/// A client answered 503 for `https://auth.acme-corp.net/…`, twice.
fn unanswered_client() -> crate::evidence::Evidence {
    let line = r#"ERROR token exchange failed: expected 200 OK, got: 503 Service Temporarily Unavailable (issuer https://auth.acme-corp.net/realms/partners)"#;
    crate::detectors::testing::log_of(9, "portal-5d7c9b8f46-8kqzt", &format!("{line}\n{line}\n"))
}

const KEYCLOAK_ENDPOINTS: &str = "\
apiVersion: v1
kind: Endpoints
metadata:
  name: keycloak
  namespace: identity
subsets:
- notReadyAddresses:
  - ip: 10.244.19.50
    targetRef:
      kind: Pod
      name: keycloak-0
      namespace: identity
";

#[test]
fn an_empty_service_explains_a_public_host_an_ingress_routes_to_it() {
    let ingresses = "\
- apiVersion: networking.k8s.io/v1
  kind: Ingress
  metadata:
    name: auth
    namespace: identity
  spec:
    rules:
    - host: '*.acme-corp.net'
      http:
        paths:
        - path: /
          pathType: Prefix
          backend:
            service:
              name: keycloak
              port:
                number: 8080
";
    let findings = detect(
        &[
            object(1, "Endpoints", KEYCLOAK_ENDPOINTS),
            object(2, "Ingress", ingresses),
            unanswered_client(),
        ],
        &crate::detectors::testing::service_level(),
    );
    let none = find(&findings, Kind::NoEndpoints);
    let unanswered = find(&findings, Kind::Refusal);
    assert!(none.explains(unanswered), "{none:#?}\n{unanswered:#?}");

    // Routed to another Service, it explains nothing of the client's.
    let elsewhere = ingresses.replace("name: keycloak", "name: sso");
    let findings = detect(
        &[
            object(1, "Endpoints", KEYCLOAK_ENDPOINTS),
            object(2, "Ingress", &elsewhere),
            unanswered_client(),
        ],
        &crate::detectors::testing::service_level(),
    );
    assert!(!find(&findings, Kind::NoEndpoints).explains(find(&findings, Kind::Refusal)));
}

#[test]
fn with_no_ingress_a_pod_configured_with_the_host_as_its_own_links_it() {
    let pod = |hostname: &str| {
        format!(
            "\
apiVersion: v1
kind: Pod
metadata:
  name: keycloak-0
  namespace: identity
spec:
  containers:
  - name: keycloak
    env:
    - name: KC_HOSTNAME
      value: {hostname}
"
        )
    };
    let linked = |pod: &str| {
        let findings = detect(
            &[
                object(1, "Endpoints", KEYCLOAK_ENDPOINTS),
                object(2, "Pod", pod),
                unanswered_client(),
            ],
            &crate::detectors::testing::service_level(),
        );
        find(&findings, Kind::NoEndpoints).explains(find(&findings, Kind::Refusal))
    };
    assert!(linked(&pod("https://auth.acme-corp.net")));
    assert!(!linked(&pod("https://login.other-corp.net")));
}
