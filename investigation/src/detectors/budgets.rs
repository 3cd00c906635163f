//! A budget that ran out: a series that counts something down — a burstable instance's CPU
//! credits (`CPUCreditBalance`), a volume's I/O burst balance (`BurstBalance`), a quota's
//! remaining allowance — falling from a reserve to nothing and staying there. Cloud exporters
//! (YACE, the CloudWatch exporter) write these for managed resources the cluster only calls;
//! once the budget is gone the resource is held to its baseline, so everything that uses it
//! slows or fails from that moment.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`BudgetExhausted`] | cause | the series (written by the provider, not an application) is at nothing since before the alert began, after holding a reserve |
//!
//! What explains what: nothing the round reads explains it beyond what drained it (the load
//! the step detectors show); it accounts for the alert's slowness, errors and saturation.

use std::sync::LazyLock;

use chrono::{DateTime, Duration, Utc};
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::series::{
    QuotedSeries, Unit, all_series, format_amount, is_dimension, items, quotes, short_name,
};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
};

/// Series names that count a budget down (CloudWatch metric names as exporters write them:
/// `aws_rds_cpucredit_balance_average`, `aws_ebs_burst_balance_average`).
static BUDGET: LazyLock<Regex> = regex!(
    r"(?i)(?:cpu_?credit_?balance|burst_?balance|credit_?balance|_remaining(?:_|$)|remaining_(?:quota|capacity|credits?))"
);
/// A budget this close to nothing, against the reserve it held, is spent.
const SPENT: f64 = 0.01;
/// Samples at nothing, at the end, that show it stayed spent.
const STAYED: usize = 2;
/// A budget spent this soon after the alert began still explains it (the alert's `for`).
const GRACE: Duration = Duration::minutes(5);

/// What kind of budget a series counts, for the reader.
fn what(name: &str) -> &'static str {
    let lower = name.to_ascii_lowercase();
    if lower.contains("cpucredit") || lower.contains("cpu_credit") {
        "CPU credit balance"
    } else if lower.contains("burst") {
        "I/O burst balance"
    } else {
        "remaining budget"
    }
}

/// A budget that ran out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BudgetExhausted {
    /// The resource the series is about (its CloudWatch dimension's value), or the series.
    pub resource: String,
    /// What the series counts: `CPU credit balance`.
    pub budget: String,
    pub series: String,
    /// The reserve it held before it began to drain.
    pub reserve: f64,
    /// When it reached nothing.
    pub spent_at: DateTime<Utc>,
}

impl Payload for BudgetExhausted {
    const SPEC: KindSpec = KindSpec {
        name: "budget-exhausted",
        role: Role::Cause,
        verified_when: "the provider's series is at nothing since before the alert began, after \
                        holding a reserve",
        accounts_for: &[
            Symptom::Latency,
            Symptom::Errors,
            Symptom::Saturation,
            Symptom::Unavailable,
        ],
    };

    fn example() -> Self {
        Self {
            resource: "claims-prod".into(),
            budget: "CPU credit balance".into(),
            series:
                "aws_rds_cpucredit_balance_average{dimension_DBInstanceIdentifier=\"claims-prod\"}"
                    .into(),
            reserve: 576.0,
            spent_at: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn title(&self) -> String {
        format!(
            "`{}` ran out of its {}: {} → 0 at {} UTC",
            self.resource,
            self.budget,
            format_amount(self.reserve, Unit::Plain),
            self.spent_at.format("%H:%M")
        )
    }

    fn detail(&self) -> String {
        let held = match self.budget.as_str() {
            "CPU credit balance" => {
                "a burstable instance with no credits left is held to its baseline CPU, so \
                 every query it serves waits longer"
            }
            "I/O burst balance" => {
                "a volume with no burst balance left is held to its baseline I/O, so every read \
                 and write waits longer"
            }
            _ => "with nothing left it is held to its baseline, so what uses it slows or fails",
        };
        format!(
            "`{}` held {} and drained to nothing at {} UTC, where it stays: {held}.",
            self.series,
            format_amount(self.reserve, Unit::Plain),
            self.spent_at.format("%Y-%m-%d %H:%M")
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Series, self.resource.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.resource == other.resource && self.budget == other.budget
    }

    fn step(&self, _scene: &Scene) -> String {
        match self.budget.as_str() {
            "CPU credit balance" => format!(
                "`{}` has no CPU credits left: switch it to unlimited credits or a \
                 non-burstable instance class, and find what drained them (its CPU above \
                 baseline for hours before).",
                self.resource
            ),
            "I/O burst balance" => format!(
                "`{}` has no I/O burst balance left: give it provisioned IOPS (gp3 with set \
                 IOPS, or a larger volume), and find what drained it.",
                self.resource
            ),
            _ => format!(
                "`{}` has used up its {}: raise it, or find what spends it.",
                self.resource, self.budget
            ),
        }
    }
}

/// The resource a series is about: a CloudWatch dimension's value, else the series' name.
fn resource_of(series: &QuotedSeries<'_>) -> String {
    let labels = &series.series.labels;
    labels
        .iter()
        .find(|(k, v)| is_dimension(k) && !v.is_empty())
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| short_name(labels))
}

/// The reserve it held, when it was spent, and the indices of both points.
fn exhausted(
    series: &QuotedSeries<'_>,
    alert: Option<DateTime<Utc>>,
) -> Option<(f64, f64, [usize; 2])> {
    let points = &series.series.points;
    let (peak_at, reserve) = points
        .iter()
        .enumerate()
        .map(|(i, (_, v))| (i, *v))
        .max_by(|a, b| a.1.total_cmp(&b.1))?;
    if reserve <= 0.0 {
        return None;
    }
    let spent = |v: f64| v <= reserve * SPENT;
    let first_spent = (peak_at..points.len()).find(|&i| spent(points[i].1))?;
    let stayed = points[first_spent..].iter().all(|(_, v)| spent(*v))
        && points.len() - first_spent >= STAYED;
    let at = points[first_spent].0;
    let before_alert = alert.is_none_or(|a| at <= (a + GRACE).timestamp() as f64);
    (stayed && before_alert).then_some((reserve, at, [peak_at, first_spent]))
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let all = items(round.evidence);
    all_series(&all)
        .filter(|(_, _, s)| {
            s.series
                .labels
                .get("__name__")
                .is_some_and(|n| BUDGET.is_match(n))
        })
        .filter_map(|(item, _, series)| {
            let (reserve, at, anchors) = exhausted(series, round.ctx.alert_start)?;
            let spent_at = DateTime::from_timestamp(at as i64, 0)?;
            let name = series.series.labels.get("__name__")?;
            Some(
                Finding::new(
                    BudgetExhausted {
                        resource: resource_of(series),
                        budget: what(name).to_string(),
                        series: short_name(&series.series.labels),
                        reserve,
                        spent_at,
                    },
                    Confidence::High,
                    true,
                )
                .dated(Some(spent_at))
                .citing(quotes(item.evidence, series, &anchors)),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests;
