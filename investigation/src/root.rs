//! The root a round found, in the form incident groups compare (issue 26, "storms"): two alerts
//! whose rounds name the same root — the same node, workload, Job, volume, Service, dependency —
//! are one incident, answered once. Only the headline chain's cause roots a group, and only when
//! it is verified, still stands and is not a guess: grouping must never hide a second incident
//! behind a first one's suspicion. An application object (a workload, Job, Service, certificate,
//! quota) roots with its cause's kind — a pod roots its workload that way, each replica failing
//! the same way; a node, volume, claim or dependency roots by itself; a metric series, a span or
//! an autoscaler roots nothing.

use firstline_alert::AlertTarget;
use serde::{Deserialize, Serialize};

use crate::detectors::{Confidence, ObjectKind, Subject, same_resource};
use crate::explain::Explanation;
use crate::sharing::{Sharing, sharing};

/// A round's root, as groups compare it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// What identifies it: kind, cluster, namespace (for namespaced objects) and name.
    pub key: String,
    /// The headline cause's title.
    pub title: String,
    /// The headline cause's evidence, as the member's one line quotes it.
    pub evidence: String,
    /// How later alerts may be shown to share it without rounds of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sharing: Option<Sharing>,
}

/// The root of the round whose findings read as `story` about `alert`; `cited` is the report's
/// quote for the headline cause, else its title stands for it.
pub fn root(story: &Explanation<'_>, alert: &AlertTarget, cited: Option<String>) -> Option<Root> {
    let chain = story.headline()?;
    if !chain.cause.is_verified_cause() || chain.confidence == Confidence::Low {
        return None;
    }
    let mut subject = chain.cause.subject()?;
    // A pod's cause is its workload's when every replica shares it (a setting the revision
    // lacks, a limit it sets): the same kind of cause on the alert's own workload.
    if subject.kind == ObjectKind::Pod {
        let workload = alert.workload.as_deref()?;
        if !same_resource(Some(&subject.name), Some(workload)) {
            return None;
        }
        subject = Subject::new(ObjectKind::Workload, workload);
    }
    // What an application object has, it can have twice at once (a stuck rollout beside a full
    // quota): its cause's kind is part of the key. Whatever fails in a node, a volume or a
    // dependency is one incident for everything on it.
    let (namespaced, with_kind) = match subject.kind {
        ObjectKind::Node | ObjectKind::Volume | ObjectKind::Endpoint => (false, false),
        ObjectKind::Claim => (true, false),
        ObjectKind::Workload
        | ObjectKind::Job
        | ObjectKind::Service
        | ObjectKind::Certificate
        | ObjectKind::Quota => (true, true),
        ObjectKind::Pod | ObjectKind::Series | ObjectKind::Span | ObjectKind::Autoscaler => {
            return None;
        }
    };
    let cause_kind = match with_kind {
        true => format!("|{:?}", chain.cause.kind()),
        false => String::new(),
    };
    let namespace = match namespaced {
        true => alert.namespace.as_deref()?,
        false => "",
    };
    let kind = serde_json::to_value(subject.kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))?;
    let cluster = alert.cluster.as_deref().unwrap_or_default();
    let evidence = cited.unwrap_or_else(|| chain.cause.title());
    Some(Root {
        key: format!("{kind}|{cluster}|{namespace}|{}{cause_kind}", subject.name),
        title: chain.cause.title(),
        evidence,
        sharing: sharing(chain, alert),
    })
}
