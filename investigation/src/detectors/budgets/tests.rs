//! Budgets that ran out: a burstable instance's CPU credits drained to nothing before the alert
//! is a verified cause named by its resource; a balance that dipped and recovered, one spent only
//! after the alert, and a series that counts nothing down are not.

use serde_json::json;

use crate::detectors::Kind;
use crate::detectors::testing::{
    Style, alert_at, all_of, detect, find, matrix, metric, minutely, utc,
};

fn credits(values: &[f64]) -> crate::evidence::Evidence {
    let labels = json!({
        "__name__": "aws_rds_cpucredit_balance_average",
        "dimension_DBInstanceIdentifier": "claims-prod",
        "region": "eu-central-1",
    });
    let start = utc("2025-03-04T13:30:00Z").timestamp() as f64;
    metric(
        1,
        "{dimension_DBInstanceIdentifier=\"claims-prod\"}",
        &matrix(&[(labels, minutely(values, start))], true, Style::Compact),
    )
}

#[test]
fn credits_drained_to_nothing_before_the_alert_are_the_cause() {
    // 13:30 .. 13:39 at one-minute steps; spent at 13:35, the alert at 13:40.
    let evidence = [credits(&[
        576.0, 400.0, 200.0, 62.0, 18.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    ])];
    let findings = detect(&evidence, &alert_at("2025-03-04T13:40:00Z"));
    let spent = find(&findings, Kind::BudgetExhausted);
    assert!(spent.is_verified_cause(), "{spent:#?}");
    assert_eq!(
        spent.title(),
        "`claims-prod` ran out of its CPU credit balance: 576 → 0 at 13:35 UTC"
    );
    assert!(
        spent
            .step(&crate::detectors::Scene {
                namespace: "claims".into(),
                pod: None,
                workload: None,
                container: None,
                workload_ref: "the workload".into(),
                when: "around 13:40 UTC".into(),
                headline: true,
            })
            .contains("non-burstable")
    );
}

#[test]
fn a_balance_that_recovered_was_spent_after_the_alert_or_counts_nothing_down_is_not() {
    let alert = alert_at("2025-03-04T13:40:00Z");
    let recovered = [credits(&[
        576.0, 10.0, 0.0, 0.0, 40.0, 120.0, 200.0, 260.0, 300.0, 320.0,
    ])];
    assert!(all_of(&detect(&recovered, &alert), Kind::BudgetExhausted).is_empty());

    let early_alert = alert_at("2025-03-04T13:20:00Z");
    let later = [credits(&[
        576.0, 400.0, 200.0, 62.0, 18.0, 0.0, 0.0, 0.0, 0.0, 0.0,
    ])];
    assert!(all_of(&detect(&later, &early_alert), Kind::BudgetExhausted).is_empty());

    let labels = json!({"__name__": "aws_rds_cpuutilization_average", "dimension_DBInstanceIdentifier": "claims-prod"});
    let start = utc("2025-03-04T13:30:00Z").timestamp() as f64;
    let utilisation = [metric(
        1,
        "",
        &matrix(
            &[(labels, minutely(&[48.0, 47.0, 30.0, 0.0, 0.0, 0.0], start))],
            true,
            Style::Compact,
        ),
    )];
    assert!(all_of(&detect(&utilisation, &alert), Kind::BudgetExhausted).is_empty());
}
