//! What the alert saw has ended: a container that restarted but has run ready and unrestarted
//! for a while since around the alert, or (for a replica alert) a workload whose every replica
//! is updated, ready and available again after a recent change.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Recovered`] | context | never a cause: it says the trouble is over, not why it happened |
//!
//! A recovery supersedes the restart counts it follows (`standing.rs`): old restarts are
//! history, not a crash loop. With nothing else found, the report says it recovered and asks.

use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::cite_values;
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
};
use crate::evidence::{Capability, Evidence};
use crate::kube;

/// How long a container must have run cleanly since its last restart to count as recovered.
const STABLE_FOR: Duration = Duration::minutes(30);

/// What recovered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "what", rename_all = "snake_case")]
pub enum Recovery {
    /// A container of a pod: restarted before, running and ready since.
    Container {
        pod: String,
        container: String,
        restarts: u64,
        /// Minutes it has run since.
        running_minutes: i64,
    },
    /// A workload: all desired replicas updated, ready and available.
    Workload {
        kind: String,
        name: String,
        replicas: u64,
    },
}

/// Something the alert saw that has ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Recovered {
    pub recovery: Recovery,
    /// Since when.
    pub since: DateTime<Utc>,
}

impl Payload for Recovered {
    const SPEC: KindSpec = KindSpec {
        name: "recovered",
        role: Role::Context,
        verified_when: "never a cause: a recovery says the trouble ended, not why",
        accounts_for: &[Symptom::Any],
    };

    fn example() -> Self {
        Self {
            recovery: Recovery::Container {
                pod: "api-7d9f8c6b5-x2k4q".into(),
                container: "api".into(),
                restarts: 4,
                running_minutes: 42,
            },
            since: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn title(&self) -> String {
        let since = self.since.format("%H:%M");
        match &self.recovery {
            Recovery::Container { container, .. } => {
                format!("Container `{container}` recovered: running and ready since {since} UTC")
            }
            Recovery::Workload {
                kind,
                name,
                replicas,
            } => format!(
                "{kind} `{name}` recovered: all {replicas} of {replicas} replicas updated, ready \
                 and available since {since} UTC"
            ),
        }
    }

    fn detail(&self) -> String {
        let since = self.since.format("%H:%M");
        match &self.recovery {
            Recovery::Container {
                pod,
                container,
                restarts,
                running_minutes,
            } => format!(
                "Container `{container}` of `{pod}` restarted {restarts} times, but has been \
                 running and ready since {since} UTC ({running_minutes} min, no restart since): \
                 what the alert saw is not happening now."
            ),
            Recovery::Workload {
                kind,
                name,
                replicas,
            } => format!(
                "{kind} `{name}` has all {replicas} of {replicas} desired replicas updated, \
                 ready and available, and its rollout settled at {since} UTC: the replica \
                 shortfall the alert saw is no longer there."
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Some(match &self.recovery {
            Recovery::Container { pod, .. } => Subject::new(ObjectKind::Pod, pod.clone()),
            Recovery::Workload { name, .. } => Subject::new(ObjectKind::Workload, name.clone()),
        })
    }

    fn step(&self, scene: &Scene) -> String {
        match &self.recovery {
            Recovery::Workload { .. } => format!(
                "{} is fully available again: confirm the alert resolves, and if the rollout \
                 was slow, look at what held each new replica back (readiness, \
                 `minReadySeconds`).",
                scene.workload_ref
            ),
            Recovery::Container { pod, container, .. } => format!(
                "It has recovered for now: check whether the alert has resolved and what the \
                 restarts {} had in common (`{}`) before closing the thread.",
                scene.when,
                scene.previous_log_command(Some(pod), Some(container))
            ),
        }
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let ctx = round.ctx;
    let mut out = Vec::new();
    for (evidence, object) in round.parsed_objects() {
        match evidence.capability {
            Capability::PodDescribe => out.extend(container(evidence, object, ctx.alert_start)),
            Capability::ObjectGet | Capability::ObjectList | Capability::Other(_)
                if ctx.about_replicas
                    && matches!(
                        kube::str_at(object, "/kind"),
                        Some("Deployment" | "StatefulSet" | "DaemonSet")
                    ) =>
            {
                out.extend(workload(evidence, object, ctx.alert_start));
            }
            _ => {}
        }
    }
    out
}

/// Containers that restarted before but have run ready and unrestarted for a while since
/// around the alert.
fn container(evidence: &Evidence, pod: &Value, alert: Option<DateTime<Utc>>) -> Vec<Finding> {
    let Some(name) = kube::str_at(pod, "/metadata/name") else {
        return Vec::new();
    };
    let statuses = pod
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut out = Vec::new();
    for status in &statuses {
        let restarts = status
            .get("restartCount")
            .and_then(Value::as_u64)
            .unwrap_or(0);
        let ready = status.get("ready").and_then(Value::as_bool) == Some(true);
        let Some(started) = kube::str_at(status, "/state/running/startedAt") else {
            continue;
        };
        let Ok(started_at) = DateTime::parse_from_rfc3339(started) else {
            continue;
        };
        let started_at = started_at.with_timezone(&Utc);
        let running_for = evidence.fetched_at - started_at;
        // Only an instance that came back around or after the alert ended what the alert saw;
        // one running since long before it says nothing about the alert.
        let came_back = alert.is_some_and(|alert| started_at >= alert - Duration::minutes(10));
        if restarts == 0 || !ready || running_for < STABLE_FOR || !came_back {
            continue;
        }
        let mut f = Finding::new(
            Recovered {
                recovery: Recovery::Container {
                    pod: name.to_string(),
                    container: kube::str_at(status, "/name").unwrap_or("?").to_string(),
                    restarts,
                    running_minutes: running_for.num_minutes(),
                },
                since: started_at,
            },
            Confidence::High,
            false,
        )
        .dated(Some(started_at));
        cite_values(
            &mut f,
            evidence,
            &[&format!("startedAt: {started}"), started],
        );
        if !f.refs.is_empty() {
            out.push(f);
        }
    }
    out
}

/// A workload whose every desired replica is updated, ready and available again, with a
/// condition that changed since shortly before the alert (its rollout finished).
fn workload(evidence: &Evidence, object: &Value, alert: Option<DateTime<Utc>>) -> Option<Finding> {
    let (Some(kind), Some(name), _) = kube::identity(object) else {
        return None;
    };
    let count = |path: &str| object.pointer(path).and_then(Value::as_u64);
    let (desired, counts) = if kind == "DaemonSet" {
        (
            count("/status/desiredNumberScheduled"),
            [
                count("/status/numberReady"),
                count("/status/numberAvailable"),
                count("/status/updatedNumberScheduled"),
            ],
        )
    } else {
        (
            count("/spec/replicas"),
            [
                count("/status/readyReplicas"),
                count("/status/availableReplicas"),
                count("/status/updatedReplicas"),
            ],
        )
    };
    let desired = desired.filter(|d| *d > 0)?;
    let settled = count("/status/observedGeneration")
        .zip(count("/metadata/generation"))
        .is_none_or(|(observed, generation)| observed >= generation);
    if !settled || counts.iter().any(|c| *c != Some(desired)) {
        return None;
    }
    let changed = object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|c| kube::str_at(c, "/status") == Some("True"))
        .filter_map(|c| {
            kube::str_at(c, "/lastUpdateTime").or_else(|| kube::str_at(c, "/lastTransitionTime"))
        })
        .filter_map(|at| DateTime::parse_from_rfc3339(at).ok())
        .map(|at| at.with_timezone(&Utc))
        .max()?;
    if alert.is_none_or(|alert| changed < alert - Duration::minutes(10)) {
        return None;
    }
    let mut f = Finding::new(
        Recovered {
            recovery: Recovery::Workload {
                kind: kind.to_string(),
                name: name.to_string(),
                replicas: desired,
            },
            since: changed,
        },
        Confidence::High,
        false,
    )
    .dated(Some(changed));
    let ready_key = if kind == "DaemonSet" {
        "numberReady:"
    } else {
        "readyReplicas:"
    };
    cite_values(&mut f, evidence, &[ready_key, "NewReplicaSetAvailable"]);
    (!f.refs.is_empty()).then_some(f)
}

#[cfg(test)]
mod tests;
