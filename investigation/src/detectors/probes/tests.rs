//! Probes the kubelet reports failing, and a readiness probe answered with a server error
//! while the service's requests fail (a symptom, not a cause).

use crate::detectors::testing::{
    all_of, assert_ends_with, ctx, describe, detect, events, find, has, service_level,
};
use crate::detectors::{Confidence, DetectionContext, Finding, Kind, rank_findings};

#[test]
fn probe_failures() {
    let description = "\
Name:  payments-api-7d9f8c6b5-x2k4q
Events:
  Warning  Unhealthy  5s (x9 over 2m)  kubelet  Readiness probe failed: HTTP probe failed with statuscode: 503
  Warning  Unhealthy  5s (x3 over 1m)  kubelet  Liveness probe failed: Get \"http://10.0.0.5:8080/healthz\": context deadline exceeded
";
    let findings = detect(&[describe(1, description)], &ctx());
    let probes = all_of(&findings, Kind::ProbeFailure);
    assert_eq!(probes.len(), 2, "{findings:#?}");
    assert!(probes.iter().any(|f| f.title().contains("statuscode: 503")));
    assert!(
        probes
            .iter()
            .any(|f| f.detail().contains("restarts the container"))
    );

    let yaml = "- message: 'Readiness probe failed: dial tcp 10.0.0.5:8080: connect: connection refused'\n  reason: Unhealthy\n  type: Warning\n";
    let findings = detect(&[events(1, yaml)], &ctx());
    assert!(
        find(&findings, Kind::ProbeFailure)
            .title()
            .starts_with("Readiness"),
        "{findings:#?}"
    );
    assert!(
        !has(&findings, Kind::Dependency),
        "a probe's refused connection is not an application dependency error"
    );
}

#[test]
fn a_readiness_probe_answered_with_5xx_is_a_symptom_under_a_service_level_alert() {
    let readiness_503 = "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 503'\n  reason: Unhealthy\n  type: Warning\n";
    let probe = |context: &DetectionContext, text: &str| {
        find(&detect(&[events(1, text)], context), Kind::ProbeFailure).clone()
    };
    let symptom = probe(&service_level(), readiness_503);
    assert!(!symptom.verified, "{symptom:#?}");
    assert!(
        symptom
            .detail()
            .contains("the application reports itself unable to serve")
            && symptom
                .detail()
                .ends_with("Why it cannot serve is in its log."),
        "{}",
        symptom.detail()
    );

    // Not about the service's requests (a not-ready alert): the explanation, as before.
    let cause = probe(&ctx(), readiness_503);
    assert!(cause.verified);
    assert_eq!(cause.confidence, Confidence::Medium);
    assert_ends_with(
        &cause.detail(),
        "the pod is taken out of service endpoints.",
    );

    // Under a service-level alert, other probe failures keep their weight.
    let refused = "- message: 'Readiness probe failed: dial tcp 10.0.0.5:8080: connect: connection refused'\n  reason: Unhealthy\n  type: Warning\n";
    assert!(probe(&service_level(), refused).verified);
    let liveness_500 = "- message: 'Liveness probe failed: HTTP probe failed with statuscode: 500'\n  reason: Unhealthy\n  type: Warning\n";
    assert!(probe(&service_level(), liveness_500).verified);
}

#[test]
fn ranking_puts_verified_causes_first() {
    let mut findings = vec![
        Finding::new(Kind::CrashLoop.example(), Confidence::High, false),
        Finding::new(Kind::ProbeFailure.example(), Confidence::Medium, true),
    ];
    rank_findings(&mut findings);
    assert_eq!(findings[0].kind(), Kind::ProbeFailure);
}

#[test]
fn a_probe_output_over_several_lines_is_read_whole() {
    let listed = "\
- InvolvedObject:
    Kind: Pod
    Name: vault-0
  Message: |-
    Readiness probe failed: Key                Value
    ---                -----
    Initialized        true
    Sealed             true
  Namespace: vault
  Reason: Unhealthy
  Type: Warning
";
    let findings = detect(&[events(1, listed)], &ctx());
    let probe = find(&findings, Kind::ProbeFailure);
    assert!(probe.title().contains("Sealed true"), "{}", probe.title());
    assert!(!probe.title().contains("Namespace"), "{}", probe.title());
}

#[test]
fn an_http_probes_failure_says_what_the_probe_asks_for() {
    let pod = "\
apiVersion: v1
kind: Pod
metadata:
  name: shipment-tracker-6f9b8c7d54-k2m8q
  namespace: fulfilment
spec:
  containers:
  - name: app
    readinessProbe:
      httpGet:
        path: /actuator/health/readiness
        port: 8080
status:
  phase: Running
";
    let events = crate::detectors::testing::ev(
        2,
        crate::evidence::Capability::Events,
        serde_json::json!({"namespace": "fulfilment", "fieldSelector": "involvedObject.name=shipment-tracker-6f9b8c7d54-k2m8q"}),
        "- message: 'Readiness probe failed: HTTP probe failed with statuscode: 404'\n  reason: Unhealthy\n  type: Warning\n  involvedObject:\n    kind: Pod\n    name: shipment-tracker-6f9b8c7d54-k2m8q\n",
    );
    let findings = detect(&[describe(1, pod), events], &ctx());
    let probe = find(&findings, Kind::ProbeFailure);
    assert_eq!(
        probe.title(),
        "Readiness probe failing: HTTP probe failed with statuscode: 404 (`GET \
         :8080/actuator/health/readiness`)"
    );
    assert!(
        crate::detectors::testing::quotes(probe).contains(&"path: /actuator/health/readiness"),
        "{probe:#?}"
    );
}

#[test]
fn a_probe_refused_where_the_container_does_not_listen_names_the_port_it_does() {
    let description = "\
Name:  node-exporter-b7q2n
Events:
  Warning  Unhealthy  5s (x24 over 4m)  kubelet  Liveness probe failed: Get \"http://10.244.200.110:9100/\": dial tcp 10.244.200.110:9100: connect: connection refused
";
    let log = crate::detectors::testing::log_of(
        2,
        crate::detectors::testing::POD,
        "ts=2025-01-01T00:00:00.121Z caller=tls_config.go:313 level=info msg=\"Listening on\" address=[::]:9110\n",
    );
    let findings = detect(&[describe(1, description), log], &ctx());
    let probe = find(&findings, Kind::ProbeFailure);
    assert_eq!(
        probe.title(),
        "Liveness probe refused: it probes a port the container does not listen on (the \
         container listens on 9110)"
    );
    // Listening on the port it is probed on says nothing of the kind.
    let same = crate::detectors::testing::log_of(
        2,
        crate::detectors::testing::POD,
        "level=info msg=\"Listening on\" address=[::]:9100\n",
    );
    let findings = detect(&[describe(1, description), same], &ctx());
    assert!(
        find(&findings, Kind::ProbeFailure)
            .title()
            .starts_with("Liveness probe failing")
    );
}
