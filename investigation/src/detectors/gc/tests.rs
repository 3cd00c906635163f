//! A JVM in garbage collection most of the time: the cause of its clients' timeouts through a
//! Service that selects it; once, or a light overhead, is no verified cause.

use crate::detectors::testing::{detect, find, has, log_of, object, service_level};
use crate::detectors::{Finding, Kind};

const ES: &str = "search-es-data-0";

fn world(es_log: &str) -> Vec<Finding> {
    let service = "\
apiVersion: v1
kind: Service
metadata:
  name: search-es
  namespace: catalog
spec:
  clusterIP: 10.96.88.41
  selector:
    app: search-es
    role: data
";
    let pod = format!(
        "\
apiVersion: v1
kind: Pod
metadata:
  name: {ES}
  namespace: catalog
  labels:
    app: search-es
    role: data
status:
  phase: Running
"
    );
    let client = r#"{"level":"error","msg":"search failed","error":"perform request: Post \"http://search-es.catalog.svc:9200/products-v7/_search\": context deadline exceeded"}"#;
    detect(
        &[
            object(1, "Service", service),
            object(2, "Pod", &pod),
            log_of(3, ES, es_log),
            log_of(
                4,
                "search-api-7f9c6d5b48-4hxkp",
                &format!("{client}\n{client}\n"),
            ),
        ],
        &service_level(),
    )
}

#[test]
fn a_jvm_collecting_most_of_the_time_explains_its_clients_timeouts() {
    let log = "\
[2025-01-01T00:00:00,813][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-data-0] [gc][183204] overhead, spent [2.1s] collecting in the last [2.3s]
[2025-01-01T00:00:09,417][WARN ][o.e.m.j.JvmGcMonitorService] [search-es-data-0] [gc][183211] overhead, spent [7.9s] collecting in the last [8.4s]
";
    let findings = world(log);
    let gc = find(&findings, Kind::GcOverhead);
    assert!(gc.is_verified_cause(), "{gc:#?}");
    assert!(gc.title().contains("94%"), "{}", gc.title());
    assert!(
        gc.title()
            .contains("spent [7.9s] collecting in the last [8.4s]")
    );
    let slow = find(&findings, Kind::Dependency);
    assert!(
        slow.title().contains("time out waiting for an answer"),
        "{}",
        slow.title()
    );
    assert!(gc.explains(slow), "{gc:#?}\n{slow:#?}");
}

#[test]
fn once_or_lightly_is_no_verified_cause() {
    let once = "[gc][183204] overhead, spent [2.1s] collecting in the last [2.3s]\n";
    assert!(!find(&world(once), Kind::GcOverhead).verified);
    let light = "\
[gc][1] overhead, spent [300ms] collecting in the last [1s]
[gc][2] overhead, spent [250ms] collecting in the last [1s]
";
    assert!(!find(&world(light), Kind::GcOverhead).verified);
    assert!(!has(&world("INFO started\n"), Kind::GcOverhead));
}
