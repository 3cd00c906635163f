//! The cluster, closer to a real one: pod IPs (stated or derived from the name) in Pods and
//! Endpoints, Ingresses, NetworkPolicies, PodDisruptionBudgets with their computed status,
//! VolumeAttachments, and Node events as `kubectl describe node` and `events_list` show them.

use serde_json::{Value, json};

use super::{args, get, names, parse, yaml};
use crate::render::pod_ips::derived_ip;
use crate::render::*;
use crate::scenario::Scenario;

const WORLD: &str = r#"
alert: {text: "x", at: -2m}
deployments:
  - {name: web, namespace: shop, replicas: 4, revisions: [{image: "web:1", created: -1d}]}
statefulsets: [{name: db, namespace: shop, replicas: 3}]
pods:
  - {name: web-a, namespace: shop, node: n1, ip: 10.244.6.19, deployment: web, containers: [{name: web, image: "web:1"}]}
  - {name: web-b, namespace: shop, node: n2, deployment: web, containers: [{name: web, image: "web:1", ready: false, state: {waiting: {reason: CrashLoopBackOff}}}]}
  - {name: tool, namespace: shop, node: n2, labels: {app: tool}, containers: [{name: t, image: t}]}
services:
  - {name: web, namespace: shop, selector: {app: web}, ports: [{port: 80, targetPort: 8080}]}
nodes:
  - {name: n1, conditions: [{type: Ready, status: "False", reason: KubeletNotReady, at: -3m}]}
ingresses:
  - name: shop
    namespace: shop
    ingressClassName: nginx
    rules:
      - host: shop.example.com
        paths:
          - {path: /api, pathType: Exact, service: web, port: 80}
          - {service: ui, port: http}
    tls: [{hosts: [shop.example.com], secretName: shop-tls}]
  - {name: other, namespace: edge, rules: [{host: a.example.com, paths: [{service: a, port: 80}]}]}
networkpolicies:
  - {name: deny-all, namespace: shop}
  - {name: db, namespace: shop, podSelector: {app: db}, ingress: [{from: [{podSelector: {matchLabels: {app: web}}}], ports: [{port: 5432}]}], egress: [{}]}
poddisruptionbudgets:
  - {name: web-min, namespace: shop, selector: {app: web}, minAvailable: 3}
  - {name: web-half, namespace: shop, selector: {app: web}, minAvailable: "50%"}
  - {name: web-max, namespace: shop, selector: {app: web}, maxUnavailable: "25%"}
  - {name: db, namespace: shop, selector: {app: db}, maxUnavailable: 1}
  - {name: tool, namespace: shop, selector: {app: tool}, minAvailable: "100%"}
  - {name: ghost, namespace: shop, selector: {app: ghost}, minAvailable: 1}
  - {name: stated, namespace: shop, selector: {app: web}, minAvailable: 4, status: {disruptionsAllowed: 2}}
volumeattachments:
  - {attacher: ebs.csi.aws.com, node: n3, persistentVolume: pv-data, attached: false, attachError: {message: "rpc error: code = Internal desc = volume is in use", at: -5m}}
  - {name: csi-named, attacher: ebs.csi.aws.com, node: n1, persistentVolume: pv-logs}
events:
  - {type: Warning, reason: NodeNotReady, message: "Node n1 status is now: NodeNotReady", involvedObject: {kind: Node, name: n1}, at: -3m}
  - {type: Warning, reason: NodeHasDiskPressure, message: "Node n2 status is now: NodeHasDiskPressure", involvedObject: {kind: Node, name: n2, namespace: default}, namespace: default, at: -4m}
  - {type: Warning, reason: BackOff, message: "Back-off restarting failed container", involvedObject: {kind: Pod, name: web-b, namespace: shop}, at: -1m}
expect: {verdict: post}
"#;

fn world() -> Scenario {
    parse(WORLD)
}

fn list(s: &Scenario, query: Value) -> Value {
    yaml(&resources_list(s, &args(query)).unwrap())
}

#[test]
fn pod_ips_are_stated_or_derived_from_the_name_and_endpoints_use_them() {
    let s = world();
    let pod = |name: &str| {
        yaml(&pods_get(&s, &args(json!({"namespace": "shop", "name": name}))).unwrap())
    };
    let a = pod("web-a");
    assert_eq!(a["status"]["podIP"], "10.244.6.19");
    assert_eq!(a["status"]["podIPs"], json!([{"ip": "10.244.6.19"}]));
    let b = pod("web-b");
    let derived = derived_ip("web-b").to_string();
    assert_eq!(b["status"]["podIP"], derived.as_str());
    let node = get(&s, "v1", "Node", "", "n2");
    assert_eq!(
        b["status"]["hostIP"], node["status"]["addresses"][0]["address"],
        "hostIP is the node's InternalIP"
    );
    let endpoints = get(&s, "v1", "Endpoints", "shop", "web");
    let subset = &endpoints["subsets"][0];
    assert_eq!(subset["addresses"][0]["ip"], "10.244.6.19");
    assert_eq!(subset["notReadyAddresses"][0]["ip"], derived.as_str());
}

#[test]
fn ingresses_route_hosts_and_paths_to_service_ports() {
    let s = world();
    let shop = get(&s, "networking.k8s.io/v1", "Ingress", "shop", "shop");
    assert_eq!(shop["spec"]["ingressClassName"], "nginx");
    let rule = &shop["spec"]["rules"][0];
    assert_eq!(rule["host"], "shop.example.com");
    assert_eq!(
        rule["http"]["paths"][0],
        json!({"path": "/api", "pathType": "Exact", "backend": {"service": {"name": "web", "port": {"number": 80}}}})
    );
    assert_eq!(
        rule["http"]["paths"][1],
        json!({"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "ui", "port": {"name": "http"}}}})
    );
    assert_eq!(
        shop["spec"]["tls"],
        json!([{"hosts": ["shop.example.com"], "secretName": "shop-tls"}])
    );
    assert!(
        shop["metadata"]["uid"].is_string() && shop["metadata"]["creationTimestamp"].is_string()
    );
    let every = list(
        &s,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress"}),
    );
    assert_eq!(names(&every), ["shop", "other"]);
    let nginx = list(
        &s,
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "fieldSelector": "spec.ingressClassName=nginx"}),
    );
    assert_eq!(names(&nginx), ["shop"]);
}

#[test]
fn network_policies_keep_their_rules_and_default_their_types() {
    let s = world();
    let deny = get(
        &s,
        "networking.k8s.io/v1",
        "NetworkPolicy",
        "shop",
        "deny-all",
    );
    assert_eq!(
        deny["spec"],
        json!({"podSelector": {}, "policyTypes": ["Ingress"]}),
        "no rules: nothing allowed in"
    );
    let db = get(&s, "networking.k8s.io/v1", "NetworkPolicy", "shop", "db");
    assert_eq!(db["spec"]["podSelector"]["matchLabels"]["app"], "db");
    assert_eq!(db["spec"]["policyTypes"], json!(["Ingress", "Egress"]));
    assert_eq!(
        db["spec"]["ingress"][0]["from"][0]["podSelector"]["matchLabels"]["app"],
        "web"
    );
    assert_eq!(db["spec"]["egress"], json!([{}]));
    assert!(db.get("status").is_none());
}

#[test]
fn disruption_budgets_compute_their_status_from_the_selected_pods() {
    let s = world();
    let status = |name: &str| {
        let budget = get(&s, "policy/v1", "PodDisruptionBudget", "shop", name);
        let st = &budget["status"];
        (
            st["currentHealthy"].as_u64(),
            st["desiredHealthy"].as_u64(),
            st["disruptionsAllowed"].as_u64(),
            st["expectedPods"].as_u64(),
        )
    };
    // web: 4 replicas, web-a ready, web-b crash-looping, 2 unlisted (healthy).
    assert_eq!(status("web-min"), (Some(3), Some(3), Some(0), Some(4)));
    assert_eq!(status("web-half"), (Some(3), Some(2), Some(1), Some(4)));
    assert_eq!(
        status("web-max"),
        (Some(3), Some(3), Some(0), Some(4)),
        "25% of 4 is 1 unavailable"
    );
    // db: no pod listed, its template labels are selected: 3 healthy pods.
    assert_eq!(status("db"), (Some(3), Some(2), Some(1), Some(3)));
    // A bare pod counts once.
    assert_eq!(status("tool"), (Some(1), Some(1), Some(0), Some(1)));
    assert_eq!(status("ghost"), (Some(0), Some(1), Some(0), Some(0)));
    assert_eq!(status("stated").2, Some(2), "a stated count wins");

    let min = get(&s, "policy/v1", "PodDisruptionBudget", "shop", "web-min");
    assert_eq!(min["spec"]["minAvailable"], 3);
    assert_eq!(min["spec"]["selector"]["matchLabels"]["app"], "web");
    let condition = &min["status"]["conditions"][0];
    assert_eq!(
        (
            &condition["type"],
            &condition["status"],
            &condition["reason"]
        ),
        (
            &json!("DisruptionAllowed"),
            &json!("False"),
            &json!("InsufficientPods")
        )
    );
    let half = get(&s, "policy/v1", "PodDisruptionBudget", "shop", "web-half");
    assert_eq!(half["spec"]["minAvailable"], "50%");
    assert_eq!(half["status"]["conditions"][0]["reason"], "SufficientPods");
    let blocked = list(
        &s,
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "namespace": "shop", "fieldSelector": "status.disruptionsAllowed=0"}),
    );
    assert_eq!(names(&blocked), ["web-min", "web-max", "tool", "ghost"]);
}

#[test]
fn volume_attachments_are_cluster_scoped_with_their_errors() {
    let s = world();
    let all = list(
        &s,
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "namespace": "shop"}),
    );
    let listed = names(&all);
    assert_eq!(listed.len(), 2, "cluster-scoped: the namespace is ignored");
    assert!(
        listed[0].starts_with("csi-") && listed[0].len() == 4 + 64,
        "{}",
        listed[0]
    );
    assert_eq!(listed[1], "csi-named");
    let failing = get(&s, "storage.k8s.io/v1", "VolumeAttachment", "", listed[0]);
    assert_eq!(
        failing["spec"],
        json!({"attacher": "ebs.csi.aws.com", "nodeName": "n3", "source": {"persistentVolumeName": "pv-data"}})
    );
    assert_eq!(failing["status"]["attached"], false);
    assert_eq!(
        failing["status"]["attachError"]["message"],
        "rpc error: code = Internal desc = volume is in use"
    );
    assert!(failing["status"]["attachError"]["time"].is_string());
    let named = get(&s, "storage.k8s.io/v1", "VolumeAttachment", "", "csi-named");
    assert_eq!(named["status"], json!({"attached": true}));
    let nodes = list(&s, json!({"apiVersion": "v1", "kind": "Node"}));
    assert!(
        names(&nodes).contains(&"n3"),
        "a node an attachment names exists"
    );
}

#[test]
fn the_new_kinds_answer_not_found_like_the_real_server() {
    let s = world();
    for (api_version, kind, qualified) in [
        (
            "networking.k8s.io/v1",
            "Ingress",
            "ingresses.networking.k8s.io",
        ),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            "networkpolicies.networking.k8s.io",
        ),
        (
            "policy/v1",
            "PodDisruptionBudget",
            "poddisruptionbudgets.policy",
        ),
        (
            "storage.k8s.io/v1",
            "VolumeAttachment",
            "volumeattachments.storage.k8s.io",
        ),
    ] {
        let error = resources_get(&s, &args(json!({"apiVersion": api_version, "kind": kind, "namespace": "shop", "name": "nope"}))).unwrap_err();
        assert_eq!(
            error,
            format!("failed to get resource: {qualified} \"nope\" not found")
        );
    }
    let spaces = yaml(&namespaces_list(&s, &args(json!({}))).unwrap());
    assert!(
        names(&spaces).contains(&"edge"),
        "an Ingress's namespace exists"
    );
}

#[test]
fn node_events_live_in_default_without_an_object_namespace() {
    let s = world();
    let events = |query: Value| events_list(&s, &args(query)).unwrap();
    let n1 = events(json!({"namespace": "default", "fieldSelector": "involvedObject.name=n1"}));
    assert!(
        n1.contains("Reason: NodeNotReady")
            && n1.contains("Namespace: default")
            && n1.contains("Kind: Node"),
        "{n1}"
    );
    let everywhere = events(json!({"fieldSelector": "involvedObject.kind=Node"}));
    assert!(
        everywhere.contains("NodeNotReady")
            && everywhere.contains("NodeHasDiskPressure")
            && !everywhere.contains("BackOff"),
        "{everywhere}"
    );
    // `kubectl describe node n2`'s selector, even though the scenario wrote a namespace.
    let described = events(
        json!({"fieldSelector": "involvedObject.kind=Node,involvedObject.name=n2,involvedObject.namespace=,involvedObject.uid=n2"}),
    );
    assert!(described.contains("NodeHasDiskPressure"), "{described}");
    assert_eq!(
        events(json!({"namespace": "shop", "fieldSelector": "involvedObject.name=n1"})),
        "# No events found"
    );

    let objects = list(
        &s,
        json!({"apiVersion": "v1", "kind": "Event", "namespace": "default"}),
    );
    let node_event = &objects[0];
    assert_eq!(
        node_event["involvedObject"],
        json!({"apiVersion": "v1", "kind": "Node", "name": "n2", "uid": "n2"})
    );
    assert_eq!(
        node_event["source"],
        json!({"component": "kubelet", "host": "n2"})
    );
    let pod_events = list(
        &s,
        json!({"apiVersion": "v1", "kind": "Event", "namespace": "shop"}),
    );
    let pod = yaml(&pods_get(&s, &args(json!({"namespace": "shop", "name": "web-b"}))).unwrap());
    assert_eq!(pod_events[0]["involvedObject"]["namespace"], "shop");
    assert_eq!(
        pod_events[0]["involvedObject"]["uid"], pod["metadata"]["uid"],
        "`kubectl describe pod` selects by the pod's uid"
    );
    assert_eq!(pod_events[0]["source"]["host"], "n2");
}
