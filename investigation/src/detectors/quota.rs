//! Namespaces out of quota: "exceeded quota: compute-quota, requested: …" refusals in events.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`QuotaExceeded`] | cause | the controller reports the refusal |
//!
//! A refused pod is never created, so nothing downstream of it is seen: the quota accounts for
//! missing replicas and Jobs that never ran directly.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::text::{looks_like_injection, quote_line};
use super::{
    Confidence, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom, cite,
};
use crate::evidence::Capability;

static QUOTA: LazyLock<Regex> = regex!(
    r"(?i)exceeded quota:\s*([A-Za-z0-9.-]+)(?:,\s*requested:\s*([^,]+(?:,[^,]+?)*?),\s*used:)?"
);

/// A ResourceQuota that refuses new pods.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuotaExceeded {
    pub quota: Option<String>,
    /// What the refused pod asked for (`limits.memory=512Mi`).
    pub requested: Option<String>,
    /// The object whose pods are refused (the event's).
    pub refused: Option<String>,
}

impl Payload for QuotaExceeded {
    const SPEC: KindSpec = KindSpec {
        name: "quota-exceeded",
        role: Role::Cause,
        verified_when: "the controller reports `exceeded quota` creating a pod",
        accounts_for: &[Symptom::Unavailable, Symptom::JobFailed],
    };

    fn example() -> Self {
        Self {
            quota: Some("compute-quota".into()),
            requested: Some("limits.memory=512Mi".into()),
            refused: Some("api-7d9f8c6b5".into()),
        }
    }

    fn title(&self) -> String {
        format!(
            "ResourceQuota `{}` exceeded: new pods are refused",
            self.quota.as_deref().unwrap_or("?")
        )
    }

    fn detail(&self) -> String {
        format!(
            "The namespace's ResourceQuota `{}` is used up{}: the controller cannot create the \
             pods it needs, so replicas stay missing.",
            self.quota.as_deref().unwrap_or("?"),
            self.requested
                .as_deref()
                .map(|r| format!(" (a new pod requests {r})"))
                .unwrap_or_default()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Quota, self.quota.as_deref())
    }

    fn step(&self, scene: &Scene) -> String {
        let quota = self.quota.as_deref().unwrap_or("<quota>");
        let ns = &scene.namespace;
        format!(
            "Raise ResourceQuota `{quota}` in `{ns}` or lower the requests/limits of {} \
             (`kubectl -n {ns} describe quota {quota}` shows used vs hard).",
            scene.workload_of(self.refused.as_deref())
        )
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        if evidence.capability != Capability::Events {
            continue;
        }
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        let Some(line) = lines
            .iter()
            .find(|l| QUOTA.is_match(l) && !looks_like_injection(l))
        else {
            continue;
        };
        let caps = QUOTA.captures(line);
        out.push(
            Finding::new(
                QuotaExceeded {
                    quota: caps
                        .as_ref()
                        .and_then(|c| c.get(1))
                        .map(|m| m.as_str().to_string()),
                    requested: caps
                        .as_ref()
                        .and_then(|c| c.get(2))
                        .map(|m| m.as_str().trim().to_string()),
                    refused: ctx.default_resource.clone(),
                },
                Confidence::High,
                true,
            )
            .citing(vec![cite(evidence, quote_line(line))]),
        );
    }
    out
}

#[cfg(test)]
mod tests;
