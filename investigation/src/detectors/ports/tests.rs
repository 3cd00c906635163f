//! A Service's targetPort against its pods' declared ports: a mismatch is a verified cause that
//! explains its clients' refused connections; undeclared ports prove nothing.

use crate::detectors::Kind;
use crate::detectors::testing::{ctx, detect, find, has, log_of, object, service_level};

const SERVICE: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: rates-engine
  namespace: pricing
spec:
  clusterIP: 10.96.112.40
  ports:
  - name: http
    port: 8080
    targetPort: 8080
  selector:
    app: rates-engine
";

fn pods(container_ports: &str) -> String {
    format!(
        "\
- apiVersion: v1
  kind: Pod
  metadata:
    labels:
      app: rates-engine
    name: rates-engine-6d8f7b9c54-qz2lm
    namespace: pricing
  spec:
    containers:
    - image: registry/rates-engine:2.0.0
      name: engine
{container_ports}  status:
    phase: Running
"
    )
}

#[test]
fn a_target_port_no_pod_listens_on_is_a_verified_cause() {
    let listing = pods("      ports:\n      - containerPort: 9090\n        name: http\n");
    let findings = detect(
        &[object(1, "Service", SERVICE), object(2, "Pod", &listing)],
        &ctx(),
    );
    let mismatch = find(&findings, Kind::PortMismatch);
    assert!(mismatch.verified);
    assert!(
        mismatch.title().contains("targetPort 8080"),
        "{}",
        mismatch.title()
    );
    assert!(mismatch.title().contains("9090"), "{}", mismatch.title());
}

#[test]
fn it_explains_the_refused_connections_to_its_cluster_ip() {
    let listing = pods("      ports:\n      - containerPort: 9090\n");
    let client = "ERROR dial tcp 10.96.112.40:8080: connect: connection refused\nERROR dial tcp 10.96.112.40:8080: connect: connection refused\n";
    let findings = detect(
        &[
            object(1, "Service", SERVICE),
            object(2, "Pod", &listing),
            log_of(3, "settlement-7d9f6c8b54-2lq8n", client),
        ],
        &service_level(),
    );
    let mismatch = find(&findings, Kind::PortMismatch);
    let refused = find(&findings, Kind::Dependency);
    assert!(mismatch.fact.explains(refused), "{refused:#?}");
}

#[test]
fn a_declared_target_port_or_undeclared_ports_find_nothing() {
    let served = pods("      ports:\n      - containerPort: 8080\n");
    let silent = pods("");
    for listing in [served, silent] {
        let findings = detect(
            &[object(1, "Service", SERVICE), object(2, "Pod", &listing)],
            &ctx(),
        );
        assert!(!has(&findings, Kind::PortMismatch), "{findings:#?}");
    }
}

#[test]
fn a_headless_service_forwards_nothing_so_its_ports_are_no_mismatch() {
    let headless = SERVICE.replace("clusterIP: 10.96.112.40", "clusterIP: None");
    let listing = pods("      ports:\n      - containerPort: 9090\n        name: http\n");
    let findings = detect(
        &[object(1, "Service", &headless), object(2, "Pod", &listing)],
        &ctx(),
    );
    assert!(!has(&findings, Kind::PortMismatch));
}
