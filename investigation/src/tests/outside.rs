//! An alert about a resource outside the cluster (a queue known only by its CloudWatch
//! dimension): its metrics by its labels, its clients by the log lines that name it, and the
//! client's pod read like any pod.

use super::*;
use crate::tools::CapabilityRequest;

const QUEUE_ALERT: &str = "\
[FIRING:1] SQSOldestMessageAgeHigh (prod-eu-1 order-events warning)
*Alert:* Oldest message in SQS queue order-events is 45m old - `warning`
*Details:*
  • *alertname:* `SQSOldestMessageAgeHigh`
  • *dimension_QueueName:* `order-events`
  • *region:* `eu-west-1`
  • *startsAt:* `2025-03-04T14:02:11.52Z`
";

const CLIENT_LINES: &str = r#"[
  {"timestamp": "2025-03-04T14:01:00Z", "line": "ERROR receive from order-events failed: AccessDenied", "labels": {"namespace": "fulfilment", "pod": "order-consumer-5c8f7d9b64-2kq7x"}},
  {"timestamp": "2025-03-04T14:01:30Z", "line": "ERROR receive from order-events failed: AccessDenied", "labels": {"namespace": "fulfilment", "pod": "order-consumer-5c8f7d9b64-2kq7x"}}
]"#;

#[tokio::test]
async fn a_managed_resource_is_read_by_its_labels_and_its_clients_by_their_logs() {
    let source = Arc::new(
        FakeSource::new()
            .serve(
                Capability::MetricRange,
                r#"{"resultType":"matrix","result":[]}"#,
            )
            .serve(Capability::LogQuery, CLIENT_LINES)
            .serve(
                Capability::PodDescribe,
                "kind: Pod\nmetadata:\n  name: order-consumer-5c8f7d9b64-2kq7x\n",
            ),
    );
    run(&source, QUEUE_ALERT).await;
    let requests = source.requests();
    assert!(
        matches!(&requests[0], CapabilityRequest::MetricRange { query, .. }
            if query == r#"{dimension_QueueName="order-events"}"#),
        "{requests:#?}"
    );
    assert!(
        matches!(&requests[1], CapabilityRequest::LogQuery { query, .. }
            if query == r#"{namespace=~".+"} |= "order-events""#),
        "{requests:#?}"
    );
    assert!(
        requests.iter().any(
            |r| matches!(r, CapabilityRequest::PodDescribe { namespace, pod }
            if namespace == "fulfilment" && pod == "order-consumer-5c8f7d9b64-2kq7x")
        ),
        "the client that logs about the queue is read: {requests:#?}"
    );
}

#[tokio::test]
async fn with_no_client_logging_about_it_nothing_else_is_guessed() {
    let source = Arc::new(
        FakeSource::new()
            .serve(
                Capability::MetricRange,
                r#"{"resultType":"matrix","result":[]}"#,
            )
            .serve(Capability::LogQuery, "[]"),
    );
    let done = run(&source, QUEUE_ALERT).await;
    assert_eq!(source.requests().len(), 2, "{:#?}", source.requests());
    assert!(!done.grounded());
}
