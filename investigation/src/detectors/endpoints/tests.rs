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
            ev(2, Capability::PodDescribe, pod, description),
        ],
        &ctx(),
    );
    let none = find(&findings, Kind::NoEndpoints);
    assert_eq!(none.title(), "Service `checkout` has no ready endpoint");
    assert_eq!(none.role(), Role::Consequence);
    assert_eq!(none.refs[0].quote, "- notReadyAddresses:");
    assert!(find(&findings, Kind::ProbeFailure).explains(none));
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
