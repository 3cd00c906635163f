//! `after_action`: once the write it selects has changed the world, its series take over from
//! that moment and the pods such a write creates log its lines.
//!
//! The series are written into the world's `metrics`: an entry of `metrics[]` with the same
//! `query`, `metric` and `labels` keeps its values before the action (as points at absolute
//! times) and continues with `after_action`'s, whose times count from the action; an entry no
//! series matches is added, with no value before the action. Range and instant queries then read
//! the change like any other series. The metrics switch once, at the first selected write.

use chrono::{DateTime, Duration, Utc};

use super::Target;
use crate::reltime::RelTime;
use crate::render::world::{PodOwner, World};
use crate::scenario::{AfterLogSpec, Change, LogSpec, MetricSpec, Scenario};

/// Points of a series, at absolute times, with `base` as the zero of relative ones; a constant
/// or the start of a step is placed at `since`.
fn points(
    metric: &MetricSpec,
    base: DateTime<Utc>,
    since: DateTime<Utc>,
) -> Vec<(DateTime<Utc>, f64)> {
    let mut out: Vec<(DateTime<Utc>, f64)> = if let Some(value) = metric.constant {
        vec![(since, value)]
    } else if let Some(step) = &metric.step {
        vec![(since, step.before), (step.at.at(base), step.after)]
    } else {
        metric
            .points
            .iter()
            .flatten()
            .map(|(at, v)| (at.at(base), *v))
            .collect()
    };
    out.sort_by_key(|(at, _)| *at);
    out
}

fn same_series(a: &MetricSpec, b: &MetricSpec) -> bool {
    a.query == b.query && a.metric == b.metric && a.labels == b.labels
}

/// Switches the world's series to `after`'s from `now` on.
fn switch_metrics(world: &mut Scenario, after: &[MetricSpec], now: DateTime<Utc>) {
    // A series' values from long before the alert hold as they did.
    let long_ago = world.alert_at - Duration::days(365);
    let alert_at = world.alert_at;
    for entry in after {
        let from_now = points(entry, now, now);
        let mut matched = false;
        for metric in world
            .spec
            .metrics
            .iter_mut()
            .filter(|m| same_series(m, entry))
        {
            let mut kept: Vec<(DateTime<Utc>, f64)> = points(metric, alert_at, long_ago)
                .into_iter()
                .filter(|(at, _)| *at < now)
                .collect();
            kept.extend(from_now.iter().copied());
            metric.points = Some(absolute(kept));
            metric.step = None;
            metric.constant = None;
            matched = true;
        }
        if !matched {
            let mut added = entry.clone();
            added.points = Some(absolute(from_now));
            added.step = None;
            added.constant = None;
            world.spec.metrics.push(added);
        }
    }
}

fn absolute(points: Vec<(DateTime<Utc>, f64)>) -> Vec<(RelTime, f64)> {
    points
        .into_iter()
        .map(|(at, v)| (RelTime::Absolute(at), v))
        .collect()
}

/// The workload a pod belongs to: its Deployment, else its controller.
fn workload_of(world: &Scenario, namespace: &str, pod: &str) -> Option<String> {
    let view = World::new(world);
    let pod = world
        .spec
        .pods
        .iter()
        .find(|p| p.namespace == namespace && p.name == pod)?;
    match view.owner(pod)? {
        PodOwner::Revision { deployment, .. } => Some(deployment.name.clone()),
        PodOwner::Controller { name, .. } => Some(name.to_string()),
    }
}

/// The after-action log for a new pod of `workload` in `namespace`.
fn log_for<'a>(
    logs: &'a [AfterLogSpec],
    namespace: &str,
    workload: &str,
) -> Option<&'a AfterLogSpec> {
    logs.iter()
        .find(|l| l.workload == workload && l.namespace.as_deref().is_none_or(|ns| ns == namespace))
}

/// Applies `after_action` for a write of `change` to `target` that created `created` pods.
pub(super) fn apply(
    world: &mut Scenario,
    target: &Target,
    change: Change,
    created: &[String],
    now: DateTime<Utc>,
) {
    let Some(after) = world.spec.after_action.clone() else {
        return;
    };
    let selected = after.when.as_ref().is_none_or(|when| {
        when.selects(
            &target.kind,
            target.namespace.as_deref(),
            &target.name,
            change,
        )
    });
    if !selected {
        return;
    }
    if world.spec.live.acted_at.is_none() {
        world.spec.live.acted_at = Some(now);
        switch_metrics(world, &after.metrics, now);
    }
    let namespace = target.namespace.clone().unwrap_or_default();
    for pod in created {
        let Some(workload) = workload_of(world, &namespace, pod) else {
            continue;
        };
        if let Some(log) = log_for(&after.logs, &namespace, &workload) {
            world.spec.logs.push(LogSpec {
                pod: pod.clone(),
                container: log.container.clone(),
                current: Some(log.current.clone()),
                previous: None,
            });
        }
    }
}
