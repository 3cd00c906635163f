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
