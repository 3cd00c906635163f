//! Restarts over a window, from the restart counter
//! (`kube_pod_container_status_restarts_total`): how many, and whether at a steady period
//! (something that builds up until the container dies) or at the pace of the kubelet's
//! crash-loop back-off.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`RestartTrend`] | symptom | never: restarts show that a container dies, not why |

use serde::{Deserialize, Serialize};

use super::series::shape::{describe_restarts, restarts};
use super::series::{
    QuotedSeries, SeriesKind, all_series, format_duration, items, quotes, resource, short_name,
    shown, subject,
};
use crate::evidence::Evidence;

use super::{
    Confidence, DetectionContext, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, Symptom,
};

/// A container restarting, over a window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestartTrend {
    pub who: String,
    pub series: String,
    pub pod: Option<String>,
    pub count: u32,
    pub window_secs: i64,
    /// The regular interval between restarts, when there is one.
    pub period_secs: Option<i64>,
    /// The restarts in words, for the detail.
    pub words: String,
    pub shown: String,
}

impl Payload for RestartTrend {
    const SPEC: KindSpec = KindSpec {
        name: "restart-trend",
        role: Role::Symptom,
        verified_when: "never: restarts show that a container dies, not why",
        accounts_for: &[Symptom::Restarts],
    };

    fn example() -> Self {
        Self {
            who: "Container `api`".into(),
            series: "kube_pod_container_status_restarts_total{container=\"api\"}".into(),
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            count: 9,
            window_secs: 6 * 3600,
            period_secs: Some(40 * 60),
            words: "restarted 9 times in 6.0 h".into(),
            shown: "03-04 08:00 UTC to 03-04 14:00 UTC".into(),
        }
    }

    fn title(&self) -> String {
        let every = self.period_secs.map_or_else(String::new, |p| {
            format!(", every ~{}", format_duration(chrono::Duration::seconds(p)))
        });
        format!(
            "{} restarted {} in {}{every}",
            self.who,
            if self.count == 1 {
                "once".to_string()
            } else {
                format!("{} times", self.count)
            },
            format_duration(chrono::Duration::seconds(self.window_secs))
        )
    }

    fn detail(&self) -> String {
        format!(
            "`{}` {} (data shown {}).",
            self.series, self.words, self.shown
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.series == other.series
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Read why it restarts: the last termination's reason (`kubectl -n {} describe pod \
             {}`) and the crashed container's log (`{}`).",
            scene.namespace,
            self.pod
                .as_deref()
                .or(scene.pod.as_deref())
                .unwrap_or("<pod>"),
            scene.previous_log_command(self.pod.as_deref(), None)
        )
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let all = items(round.evidence);
    all_series(&all)
        .filter(|(_, kind, _)| *kind == SeriesKind::Restarts)
        .filter_map(|(item, _, series)| restart_trend(item.evidence, series, round.ctx))
        .collect()
}

/// The restarts a restart counter counts, if it moved.
fn restart_trend(
    evidence: &Evidence,
    series: &QuotedSeries<'_>,
    ctx: &DetectionContext,
) -> Option<Finding> {
    let (r, anchors) = restarts(&series.series.points)?;
    Some(
        Finding::new(
            RestartTrend {
                who: subject(series),
                series: short_name(&series.series.labels),
                pod: resource(series, ctx),
                count: r.count,
                window_secs: r.window.num_seconds(),
                period_secs: r.period.map(|p| p.num_seconds()),
                words: describe_restarts(&r),
                shown: shown(series),
            },
            // The counter is unambiguous; a few restarts or a period make the trend clear.
            if r.count >= 3 || r.period.is_some() {
                Confidence::High
            } else {
                Confidence::Medium
            },
            false,
        )
        .dated(Some(r.first))
        .citing(quotes(evidence, series, &anchors)),
    )
}

#[cfg(test)]
mod tests;
