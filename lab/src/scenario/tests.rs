//! Loading scenarios: alert placement, error messages naming file and field, the new kinds and
//! their cross-references, and the expectation check.

use std::path::Path;

use chrono::{DateTime, TimeZone, Utc};
use serde_json::json;

use super::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap()
}

fn parse(text: &str) -> Result<Scenario, ScenarioError> {
    Scenario::parse("t", Path::new("t/scenario.yaml"), text, now())
}

fn error(text: &str) -> String {
    parse(text).unwrap_err().to_string()
}

const MINIMAL: &str = "alert:\n  text: 'FIRING at {{at}}'\n  at: -10m\nexpect:\n  verdict: ask\n";

#[test]
fn a_minimal_scenario_loads_and_places_the_alert() {
    let scenario = parse(MINIMAL).unwrap();
    assert_eq!(scenario.alert_at, now() - chrono::Duration::minutes(10));
    assert_eq!(scenario.alert_text(), "FIRING at 2025-03-01T11:50:00Z");
    assert_eq!(scenario.spec.expect.verdict, ExpectedVerdict::Ask);
}

#[test]
fn errors_name_the_file_and_the_field() {
    let typo = error(&format!("{MINIMAL}podz: []\n"));
    assert!(typo.starts_with("t/scenario.yaml: "), "{typo}");
    assert!(typo.contains("podz"), "{typo}");

    let bad_time = error("alert:\n  text: x\n  at: yesterday\nexpect:\n  verdict: post\n");
    assert!(
        bad_time.contains("yesterday") && bad_time.contains("alert"),
        "{bad_time}"
    );

    let orphan_log = error(&format!(
        "{MINIMAL}logs:\n  - pod: ghost\n    current: hi\n"
    ));
    assert!(orphan_log.contains("`logs[0].pod`"), "{orphan_log}");

    let two_states = error(&format!(
        "{MINIMAL}pods:\n  - name: p\n    namespace: n\n    containers:\n      - name: c\n        image: i\n        state: {{running: {{}}, waiting: {{reason: X}}}}\n"
    ));
    assert!(
        two_states.contains("pods[0].containers[0].state"),
        "{two_states}"
    );
}

#[test]
fn unknown_keys_of_new_kinds_name_their_line() {
    let typo = error(&format!(
        "{MINIMAL}services:\n  - name: s\n    namespace: n\n    selctor: {{app: x}}\n"
    ));
    assert!(
        typo.contains("selctor") && typo.contains("line 9"),
        "{typo}"
    );
}

#[test]
fn every_new_kind_loads() {
    let text = format!(
        r#"{MINIMAL}
pods:
  - name: web-0
    namespace: shop
    node: n1
    owner: {{kind: StatefulSet, name: web}}
    reason: Evicted
    message: "The node was low on resource: memory."
    qosClass: BestEffort
    initContainers: [{{name: init, image: i}}]
    containers: [{{name: web, image: i}}]
statefulsets:
  - {{name: web, namespace: shop, replicas: 2, volumeClaimTemplates: [{{name: data, storageClass: gp3, size: 1Gi}}]}}
daemonsets: [{{name: agent, namespace: shop, desired: 3, status: {{numberReady: 2}}}}]
cronjobs: [{{name: nightly, namespace: shop, schedule: "0 2 * * *"}}]
jobs: [{{name: nightly-1, namespace: shop, owner: {{kind: CronJob, name: nightly}}, status: {{failed: 4}}}}]
services: [{{name: web, namespace: shop, selector: {{app: web}}, ports: [{{port: 80, targetPort: http}}], clusterIP: 10.96.0.9}}]
nodes: [{{name: n1, capacity: {{cpu: 4, memory: 16Gi}}, taints: [{{key: k, effect: NoSchedule}}]}}]
persistentvolumeclaims: [{{name: data-web-0, namespace: shop, phase: Pending, requested: 1Gi}}]
persistentvolumes: [{{name: pv1, capacity: 1Gi, claim: {{namespace: shop, name: data-web-0}}}}]
storageclasses: [{{name: gp3, provisioner: ebs.csi.aws.com, default: true}}]
horizontalpodautoscalers: [{{name: web, namespace: shop, target: {{kind: StatefulSet, name: web}}, maxReplicas: 4}}]
resourcequotas: [{{name: q, namespace: shop, hard: {{pods: 10}}, used: {{pods: 9}}}}]
configmaps: [{{name: c, namespace: shop, data: {{enabled: true}}}}]
metrics: [{{metric: up, labels: {{job: x}}, constant: 1}}]
log_streams: [{{labels: {{app: web}}, lines: [{{at: -1m, line: hi}}]}}]
traces:
  - {{service: web, trace_id: t1, root_name: GET /, start: -1m, duration_ms: 900, spans: [{{name: GET /, duration_ms: 900}}, {{name: db, parent: GET /, duration_ms: 800, status: error}}]}}
raw_tool_results: [{{tool: "*", namespace: shop, error: boom}}]
"#
    );
    let scenario = parse(&text).unwrap();
    let spec = &scenario.spec;
    assert_eq!(spec.nodes[0].capacity["cpu"], "4");
    assert_eq!(spec.configmaps[0].data["enabled"], "true");
    assert_eq!(spec.traces[0].status(), TraceStatus::Error);
    assert_eq!(spec.raw_tool_results[0].args["namespace"], json!("shop"));
    assert_eq!(spec.pods[0].init_containers[0].name, "init");
}

#[test]
fn the_readme_example_loads() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("### An example\n\n```yaml\n")
        .expect("the README has an example");
    let body = &readme[start..];
    let body = &body[body
        .find("deployments:")
        .expect("it starts with deployments")..];
    let example = &body[..body.find("```").expect("the block ends")];
    let scenario = parse(&format!("{MINIMAL}{example}")).unwrap();
    assert_eq!(scenario.spec.services[0].name, "cart");
}

#[test]
fn the_readme_after_action_example_loads_and_after_action_is_checked() {
    let readme = include_str!("../../README.md");
    let start = readme
        .find("```yaml\nafter_action:")
        .expect("the README has an after_action example");
    let body = &readme[start + "```yaml\n".len()..];
    let example = &body[..body.find("```").expect("the block ends")];
    let scenario = parse(&format!("{MINIMAL}{example}")).unwrap();
    let after = scenario.spec.after_action.expect("after_action");
    assert_eq!(after.when.and_then(|w| w.change), Some(Change::Rollback));
    assert_eq!(after.metrics.len(), 1);
    assert_eq!(after.logs[0].workload, "checkout");
    assert!(!scenario.spec.writes.forbidden);
    assert_eq!(scenario.spec.writes.user(), DEFAULT_WRITER);

    let two = error(&format!(
        "{MINIMAL}after_action:\n  metrics: [{{metric: m, constant: 1, points: [[0, 1]]}}]\n"
    ));
    assert!(two.contains("`after_action.metrics[0]`"), "{two}");
    let nameless = error(&format!(
        "{MINIMAL}after_action:\n  logs: [{{workload: ' ', current: x}}]\n"
    ));
    assert!(
        nameless.contains("`after_action.logs[0].workload`"),
        "{nameless}"
    );
    let typo = error(&format!(
        "{MINIMAL}after_action:\n  when: {{change: rollout}}\n"
    ));
    assert!(typo.contains("rollout"), "{typo}");
    let writes = parse(&format!("{MINIMAL}writes: {{forbidden: true}}\n")).unwrap();
    assert!(writes.spec.writes.forbidden);
}

#[test]
fn cross_references_are_checked() {
    let pod = |extra: &str| {
        format!(
            "{MINIMAL}deployments: [{{name: d, namespace: n, revisions: [{{image: i, created: -1d}}]}}]\npods:\n  - {{name: p, namespace: n, containers: [{{name: c, image: i}}], {extra}}}\n"
        )
    };
    for (extra, field) in [
        ("deployment: d, revision: 2", "pods[0].revision"),
        ("revision: 1", "pods[0].revision"),
        ("owner: {kind: Job, name: ghost}", "pods[0].owner.name"),
        ("owner: {kind: Deployment, name: d}", "pods[0].owner.kind"),
        (
            "deployment: d, owner: {kind: ReplicaSet, name: x}",
            "pods[0].owner",
        ),
        (
            "initContainers: [{name: c, image: i}]",
            "pods[0].containers[0].name",
        ),
    ] {
        let message = error(&pod(extra));
        assert!(
            message.contains(&format!("`{field}`")),
            "{extra}: {message}"
        );
    }
    assert!(parse(&pod("deployment: d, revision: 1")).is_ok());

    let job = error(&format!(
        "{MINIMAL}jobs: [{{name: j, namespace: n, owner: {{kind: CronJob, name: ghost}}}}]\n"
    ));
    assert!(job.contains("`jobs[0].owner.name`"), "{job}");
    let stream = error(&format!("{MINIMAL}log_streams: [{{lines: []}}]\n"));
    assert!(stream.contains("`log_streams[0]`"), "{stream}");
    let metric = error(&format!("{MINIMAL}metrics: [{{constant: 1}}]\n"));
    assert!(metric.contains("`metrics[0]`"), "{metric}");
    let span = error(&format!(
        "{MINIMAL}traces: [{{service: s, trace_id: t, root_name: r, start: 0, duration_ms: 1, spans: [{{name: a, parent: b, duration_ms: 1}}]}}]\n"
    ));
    assert!(span.contains("`traces[0].spans[0].parent`"), "{span}");
    let raw = error(&format!(
        "{MINIMAL}raw_tool_results: [{{tool: x, namespace: a, args: {{namespace: b}}, text: t}}]\n"
    ));
    assert!(raw.contains("disagrees"), "{raw}");
}

#[test]
fn expectations_match_case_insensitively() {
    let expect = Expect {
        verdict: ExpectedVerdict::Post,
        must_mention: vec![
            vec!["OOMKilled".into(), "out of memory".into()],
            vec!["analytics-exporter".into()],
        ],
        must_not_mention: vec!["DEPLOY_ENV".into()],
        headline: Vec::new(),
    };
    let reply = |text, posted| Reply {
        text,
        posted,
        causes: &[],
    };
    let ok = expect.check(&reply(
        "Container was oomkilled in Analytics-Exporter",
        true,
    ));
    assert!(ok.passed(), "{ok:?}");
    let bad = expect.check(&reply("deploy_env changed", false));
    assert!(!bad.verdict_ok);
    assert_eq!(bad.missing.len(), 2);
    assert_eq!(bad.forbidden, vec!["DEPLOY_ENV".to_string()]);
}

#[test]
fn pod_ips_are_ipv4_addresses_of_scheduled_pods_and_unique() {
    let pods = |a: &str, b: &str| {
        format!(
            "{MINIMAL}pods:\n  - {{name: a, namespace: n, node: w1, containers: [{{name: c, image: i}}], {a}}}\n  - {{name: b, namespace: n, node: w1, containers: [{{name: c, image: i}}], {b}}}\n"
        )
    };
    let scenario = parse(&pods("ip: 10.244.3.17", "ip: 10.244.3.18")).unwrap();
    assert_eq!(
        scenario.spec.pods[0].ip,
        Some(std::net::Ipv4Addr::new(10, 244, 3, 17))
    );
    let bad = error(&pods("ip: 10.244.3.300", ""));
    assert!(
        bad.contains("pods[0].ip") && bad.contains("line 7"),
        "{bad}"
    );
    let twice = error(&pods("ip: 10.244.3.17", "ip: 10.244.3.17"));
    assert!(
        twice.contains("`pods[1].ip`") && twice.contains("pods[0] (a)"),
        "{twice}"
    );
    let pending = error(&format!(
        "{MINIMAL}pods: [{{name: a, namespace: n, ip: 10.244.3.17, containers: [{{name: c, image: i}}]}}]\n"
    ));
    assert!(
        pending.contains("`pods[0].ip`") && pending.contains("not scheduled"),
        "{pending}"
    );
}

#[test]
fn the_networking_policy_and_attachment_kinds_and_journals_load() {
    let text = format!(
        r#"{MINIMAL}
ingresses:
  - name: shop
    namespace: web
    ingressClassName: nginx
    rules: [{{host: shop.example.com, paths: [{{path: /api, pathType: Exact, service: api, port: 8080}}, {{service: ui, port: http}}]}}]
    tls: [{{hosts: [shop.example.com], secretName: shop-tls}}]
networkpolicies:
  - {{name: db, namespace: web, podSelector: {{app: db}}, ingress: [{{from: [{{podSelector: {{matchLabels: {{app: api}}}}}}]}}], egress: [{{}}]}}
poddisruptionbudgets:
  - {{name: db, namespace: web, selector: {{app: db}}, minAvailable: "50%"}}
  - {{name: api, namespace: web, maxUnavailable: 1, status: {{disruptionsAllowed: 0}}}}
volumeattachments:
  - {{attacher: ebs.csi.aws.com, node: w1, persistentVolume: pv-1, attachError: {{message: boom, at: -5m}}}}
nodes:
  - name: w1
    journal:
      - {{at: -3m, line: "PLEG is not healthy"}}
      - {{at: -2m, unit: containerd, line: "shim disconnected"}}
"#
    );
    let spec = parse(&text).unwrap().spec;
    assert_eq!(
        spec.ingresses[0].rules[0].paths[1].port,
        PortRef::Name("http".into())
    );
    assert_eq!(
        spec.ingresses[0].rules[0].paths[0].port,
        PortRef::Number(8080)
    );
    assert_eq!(
        spec.networkpolicies[0].policy_types(),
        ["Ingress", "Egress"]
    );
    assert_eq!(
        spec.poddisruptionbudgets[0]
            .min_available
            .as_ref()
            .and_then(IntOrPercent::percent),
        Some(50)
    );
    assert!(spec.volumeattachments[0].attached, "attached by default");
    assert_eq!(spec.nodes[0].journal[0].unit(), "kubelet");
    assert_eq!(spec.nodes[0].journal[1].unit(), "containerd");
}

#[test]
fn the_networking_policy_and_journal_keys_are_checked() {
    for (yaml, field) in [
        ("ingresses: [{name: i, namespace: n}]", "ingresses[0].rules"),
        (
            "ingresses: [{name: i, namespace: n, rules: [{paths: [{path: api, service: s, port: 80}]}]}]",
            "ingresses[0].rules[0].paths[0].path",
        ),
        (
            "ingresses: [{name: i, namespace: n, rules: [{paths: [{pathType: Regex, service: s, port: 80}]}]}]",
            "ingresses[0].rules[0].paths[0].pathType",
        ),
        (
            "ingresses: [{name: i, namespace: n, rules: [{paths: [{service: s, port: HTTP_PORT}]}]}]",
            "ingresses[0].rules[0].paths[0].port",
        ),
        (
            "networkpolicies: [{name: p, namespace: n, policyTypes: [Inbound]}]",
            "networkpolicies[0].policyTypes[0]",
        ),
        (
            "networkpolicies: [{name: p, namespace: n, egress: [allow-all]}]",
            "networkpolicies[0].egress[0]",
        ),
        (
            "poddisruptionbudgets: [{name: b, namespace: n, minAvailable: 1, maxUnavailable: 1}]",
            "poddisruptionbudgets[0]",
        ),
        (
            "poddisruptionbudgets: [{name: b, namespace: n}]",
            "poddisruptionbudgets[0]",
        ),
        (
            "poddisruptionbudgets: [{name: b, namespace: n, maxUnavailable: \"150%\"}]",
            "poddisruptionbudgets[0].maxUnavailable",
        ),
        (
            "nodes: [{name: w, journal: [{at: -1m, line: x, unit: \"\"}]}]",
            "nodes[0].journal[0].unit",
        ),
    ] {
        let message = error(&format!("{MINIMAL}{yaml}\n"));
        assert!(message.contains(&format!("`{field}`")), "{yaml}: {message}");
    }
    let typo = error(&format!(
        "{MINIMAL}volumeattachments: [{{attacher: a, node: w, persistentVolume: p, atached: false}}]\n"
    ));
    assert!(typo.contains("atached"), "{typo}");
    let port = error(&format!(
        "{MINIMAL}ingresses: [{{name: i, namespace: n, rules: [{{paths: [{{service: s, port: 70000}}]}}]}}]\n"
    ));
    assert!(
        port.contains("a port number (1-65535) or a port name"),
        "{port}"
    );
}
