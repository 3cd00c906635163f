//! Tests of the incident graph's nodes and wiring.
//!
//! `FakeSource` is an in-process [`EvidenceSource`] serving fixed text per capability — a unit
//! test of the node logic; the end-to-end path over real MCP servers is tested with the lab.

mod budgets;
mod fake;
mod graph_shape;
mod jobs;
mod judging;
mod model_path;
mod nodes;
mod outside;
mod proposals;
mod recall_db;
mod storms;
mod strongest;

use fake::FakeSource;

use super::*;
use crate::evidence::Capability;
use firstline_model::ThreadContext;
use std::sync::Arc;

const CRASH_ALERT: &str = "\
[FIRING:1] KubePodCrashLooping (default/payments-api-7d9f8c6b5-x2k4q)
*Alert:* Pod is crash looping. - `critical`
*Description:* Pod default/payments-api-7d9f8c6b5-x2k4q (api) is in waiting state (reason: \"CrashLoopBackOff\").
*Graph:* <http://prometheus:9090/graph?g0.expr=max_over_time%28kube_pod_container_status_waiting_reason%7Breason%3D%22CrashLoopBackOff%22%7D%5B5m%5D%29+%3E%3D+1&g0.tab=1|:chart_with_upwards_trend:>
*Details:*
  • *alertname:* `KubePodCrashLooping`
  • *container:* `api`
  • *job:* `kube-state-metrics`
  • *namespace:* `default`
  • *pod:* `payments-api-7d9f8c6b5-x2k4q`
  • *severity:* `critical`
  • *startsAt:* `2025-03-04T14:02:11.52Z`
";

const DESCRIBE_EXIT_78: &str = "\
Name:             payments-api-7d9f8c6b5-x2k4q
Namespace:        default
Containers:
  api:
    Image:          registry/payments:2.4.1
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       Error
      Exit Code:    78
    Ready:          False
    Restart Count:  5
";

const PREVIOUS_LOG_78: &str = "\
2025-03-04T14:02:01Z INFO starting payments-api 2.4.1
2025-03-04T14:02:01Z WARN deprecated flag --legacy-ledger ignored
2025-03-04T14:02:02Z INFO loading configuration from /etc/payments
2025-03-04T14:02:02Z ERROR config: required key PAYMENT_MODE is not set
2025-03-04T14:02:02Z INFO shutting down
";

const EVENTS_BACKOFF: &str = "\
LAST SEEN   TYPE      REASON    OBJECT                             MESSAGE
2m          Warning   BackOff   pod/payments-api-7d9f8c6b5-x2k4q   Back-off restarting failed container api in pod payments-api-7d9f8c6b5-x2k4q_default(abc)
";

const DEPLOY_HISTORY_OLD: &str = "\
deployment.apps/payments-api
REVISION  CHANGE-CAUSE
4         <none>
5         <none>
";

/// The crash-loop world: a config error only in the previous container's log, exit code 78.
fn crash_loop_world() -> FakeSource {
    FakeSource::new()
        .serve(Capability::PodDescribe, DESCRIBE_EXIT_78)
        .serve(Capability::PodLogsPrevious, PREVIOUS_LOG_78)
        .serve(Capability::PodLogsCurrent, "")
        .serve(Capability::Events, EVENTS_BACKOFF)
        .serve(Capability::DeployHistory, DEPLOY_HISTORY_OLD)
        .fail(
            Capability::MetricRange,
            "no tool configured for metric range queries",
        )
}

fn input(alert: &str) -> IncidentState {
    IncidentState::new(AlertInput::parse(alert, None), ThreadContext::default())
}

/// Runs the whole graph over `source` with no memory.
async fn run(source: &Arc<FakeSource>, alert: &str) -> IncidentState {
    let graph = build_incident_graph(Arc::clone(source), None, GraphOptions::default())
        .expect("graph compiles");
    run_round(&graph, input(alert)).await.expect("round runs")
}
