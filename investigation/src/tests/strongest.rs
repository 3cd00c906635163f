//! With no verified cause, the report still shows the strongest evidence: an error line no
//! detector explains is cited verbatim as an observation, and the report never says nothing
//! is wrong.

use super::fake::FakeSource;
use super::*;

const LATENCY_ALERT: &str = "\
[FIRING:1] PaymentsLatencyHigh (payments/payments-api-7d9f8c6b5-x2k4q)
*Alert:* p99 latency above 500ms. - `warning`
*Details:*
  • *alertname:* `PaymentsLatencyHigh`
  • *namespace:* `payments`
  • *pod:* `payments-api-7d9f8c6b5-x2k4q`
  • *startsAt:* `2025-03-04T14:02:00Z`
";

const RUNNING_POD: &str = "\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        payments
Status:           Running
Containers:
  api:
    State:          Running
    Ready:          True
    Restart Count:  0
";

const ERROR_LINE: &str = "ERROR ledger client: upstream returned status 503 for /v2/entries";

#[tokio::test]
async fn an_unexplained_error_line_is_cited_and_nothing_wrong_is_never_said() {
    let log = format!(
        "2025-03-04T14:00:00Z INFO GET /pay 200 12ms\n2025-03-04T14:01:30Z {ERROR_LINE}\n\
         2025-03-04T14:01:31Z INFO GET /pay 200 480ms\n"
    );
    let source = Arc::new(
        FakeSource::new()
            .serve(Capability::PodDescribe, RUNNING_POD)
            .serve(Capability::PodLogsCurrent, &log)
            .serve(
                Capability::Events,
                "No resources found in payments namespace.",
            ),
    );
    let done = run(&source, LATENCY_ALERT).await;

    assert!(!done.grounded(), "one error line verifies no cause");
    let report = done.report.as_ref().expect("report");
    assert!(
        report.causes.iter().all(|c| !c.confirmed),
        "{:#?}",
        report.causes
    );
    let cited = report
        .claims()
        .any(|claim| claim.quote.contains(ERROR_LINE));
    assert!(
        cited,
        "the error line is quoted: {:#?}\n{}",
        report.causes,
        render_markdown(&done)
    );
    let text = render_markdown(&done);
    assert!(!text.to_lowercase().contains("nothing wrong"), "{text}");
    assert!(!done.questions.is_empty(), "it asks");
}
