//! The per-round budgets hold: no request past the tool-call budget or the time budget, and
//! every step not sent says why in the plan and in the missing evidence.

use std::time::Duration;

use super::fake::FakeSource;
use super::*;
use crate::investigate::StepOutcome;

fn calls(update: &IncidentUpdate) -> u32 {
    update.usage.as_ref().map_or(0, |u| u.tool_calls)
}

fn crash_world() -> FakeSource {
    FakeSource::new()
        .serve(Capability::PodDescribe, DESCRIBE_EXIT_78)
        .serve(
            Capability::PodLogsPrevious,
            "2025-03-04T14:02:02Z ERROR config: required key PAYMENT_MODE is not set\n",
        )
        .serve(Capability::PodLogsCurrent, "starting\n")
        .serve(
            Capability::Events,
            "Warning BackOff pod/payments-api back-off restarting\n",
        )
        .serve(
            Capability::MetricRange,
            "{\"status\":\"success\",\"data\":{\"result\":[]}}",
        )
}

#[tokio::test]
async fn the_tool_call_budget_stops_the_plan_and_says_so() {
    let unbounded = crash_world();
    let options = InvestigateOptions::default();
    let full = investigate::investigate(&unbounded, &input(CRASH_ALERT), &options).await;
    assert!(
        calls(&full) > 2,
        "the world must need more than the budget below: {} calls",
        calls(&full)
    );

    let source = crash_world();
    let options = InvestigateOptions {
        max_tool_calls: 2,
        ..InvestigateOptions::default()
    };
    let update = investigate::investigate(&source, &input(CRASH_ALERT), &options).await;
    assert_eq!(source.requests().len(), 2);
    assert_eq!(calls(&update), 2);
    assert_eq!(
        update
            .plan
            .iter()
            .flatten()
            .filter(|s| s.outcome.called())
            .count(),
        2
    );
    assert!(
        update
            .plan
            .iter()
            .flatten()
            .any(|s| s.outcome == StepOutcome::OverBudget),
        "the steps not sent are in the plan as over budget"
    );
    assert!(
        update
            .missing
            .iter()
            .any(|m| m.reason.contains("tool-call budget (2 calls)")),
        "{:?}",
        update.missing
    );
}

#[tokio::test]
async fn a_spent_time_budget_sends_nothing_and_says_so() {
    let source = crash_world();
    let options = InvestigateOptions {
        time_budget: Duration::ZERO,
        ..InvestigateOptions::default()
    };
    let update = investigate::investigate(&source, &input(CRASH_ALERT), &options).await;
    assert!(source.requests().is_empty());
    assert_eq!(calls(&update), 0);
    let plan = update.plan.clone().unwrap_or_default();
    assert!(plan.iter().all(|s| !s.outcome.called()), "{plan:?}");
    assert!(
        plan.iter().any(|s| s.outcome == StepOutcome::OutOfTime),
        "{plan:?}"
    );
    assert!(
        update
            .missing
            .iter()
            .any(|m| m.reason.contains("time budget")),
        "{:?}",
        update.missing
    );
}

#[tokio::test]
async fn a_round_that_uses_its_whole_budget_exactly_says_so() {
    let unbounded = crash_world();
    let full = investigate::investigate(
        &unbounded,
        &input(CRASH_ALERT),
        &InvestigateOptions::default(),
    )
    .await;
    let exactly = calls(&full);
    let source = crash_world();
    let options = InvestigateOptions {
        max_tool_calls: exactly,
        ..InvestigateOptions::default()
    };
    let update = investigate::investigate(&source, &input(CRASH_ALERT), &options).await;
    assert_eq!(calls(&update), exactly, "nothing more was asked");
    assert!(
        update.missing.iter().any(|m| m
            .reason
            .contains(&format!("whole tool-call budget ({exactly} calls)"))),
        "{:?}",
        update.missing
    );
    // With a call to spare, nothing is said.
    let source = crash_world();
    let options = InvestigateOptions {
        max_tool_calls: exactly + 1,
        ..InvestigateOptions::default()
    };
    let update = investigate::investigate(&source, &input(CRASH_ALERT), &options).await;
    assert!(
        !update
            .missing
            .iter()
            .any(|m| m.reason.contains("tool-call budget"))
    );
}
