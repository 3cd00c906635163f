//! What a round may offer to do about its cause: at most one reversible action from the fixed
//! catalogue ([`firstline_model::Action`]), for a person to approve (issue 25, "act with
//! approval"). The worker decides whether it is shown (`actions.enabled`), turns it into the
//! exact change and executes it once approved; this module only says whether the round's cause
//! supports one, and which.
//!
//! A proposal comes from the report's **headline chain** only ([`Explanation::headline`]): a
//! current, detector-verified cause that explains the alert's symptom (ARCHITECTURE.md,
//! invariant 17). Never from a consequence, a symptom, context or an unverified lead (they
//! root no chain), from another chain than the headline's (its next step only looks further),
//! from a recovered or resolved alert (what it saw has ended: acting changes a system that is
//! well again), from a heartbeat (`summarise` answers one before any chain is read), or from
//! text: what a log line or the model says never reaches the rules, which read the cause's
//! typed payload and the arguments Firstline itself sent (invariant 12).
//!
//! `rule` is the one place that maps a cause's kind to its action; each arm's function says
//! why that cause supports that action. A kind without an arm proposes nothing: a wrong action
//! is worse than none. Every action a rule proposes is the one its kind's next step already
//! names for the headline (a rollback, a resume, a cordon), so the two never disagree.

use firstline_alert::{AlertStatus, AlertTarget};
use firstline_model::Action;
use firstline_model::text::clip;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::detectors::changes::Rollout;
use crate::detectors::cronjobs::CronJobSuspended;
use crate::detectors::kernel::{Fault, KernelFault};
use crate::detectors::revisions::{FieldChange, RevisionDiff};
use crate::detectors::siblings::{SharedByFailing, Sharing};
use crate::detectors::{Confidence, Fact, Finding, Kind, Standing};
use crate::evidence::{Evidence, EvidenceId};
use crate::explain::{Chain, Explanation};

/// Changes a rollback's `why` names before "N more" (the whole diff is in [`Proposal::diff`]).
const WHY_CHANGES: usize = 2;
/// Longest value a change shows in `why`.
const WHY_VALUE_CHARS: usize = 48;

/// One action a round proposes, with what in its headline chain supports it. Stored in the
/// round's result and its checkpoints.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub action: Action,
    /// The headline cause's title.
    pub cause: String,
    /// One line: what in the chain supports this action.
    pub why: String,
    /// The evidence ids the chain cites (`E7`), and for a rollback the revision diff's.
    pub evidence: Vec<String>,
    /// For a rollback: every field the broken revision changed, its value before and after.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diff: Vec<FieldChange>,
}

/// What a rule found: the action, why, and what else it rests on besides the chain.
struct Fit<'a> {
    action: Action,
    why: String,
    diff: Vec<FieldChange>,
    /// Findings outside the chain the action also rests on (a rollout's revision diff).
    also: Vec<&'a Finding>,
}

/// The proposal for a round whose findings read as `story`, if its headline cause supports
/// one. `findings` are the round's (what the chain's cause is compared with), `evidence` what
/// they cite, `alert` what fired.
pub fn propose(
    story: &Explanation<'_>,
    findings: &[Finding],
    evidence: &[Evidence],
    alert: &AlertTarget,
) -> Option<Proposal> {
    if alert.status == Some(AlertStatus::Resolved) || recovered(findings) {
        return None;
    }
    let chain = story.headline()?;
    // A chain whose weakest link is a guess is not enough to change a cluster.
    if !chain.cause.is_verified_cause() || chain.confidence == Confidence::Low {
        return None;
    }
    let fit = rule(chain, findings, evidence, alert)?;
    Some(Proposal {
        action: fit.action,
        cause: chain.cause.title(),
        why: fit.why,
        evidence: cited(chain.members().into_iter().chain(fit.also)),
        diff: fit.diff,
    })
}

/// The rules: the headline cause's payload → the one action it supports. One arm per rule.
fn rule<'a>(
    chain: &Chain<'_>,
    findings: &'a [Finding],
    evidence: &[Evidence],
    alert: &AlertTarget,
) -> Option<Fit<'a>> {
    match &chain.cause.fact {
        Fact::Rollout(rollout) => rollback(chain.cause, rollout, findings, evidence),
        Fact::CronJobSuspended(cronjob) => resume(chain.cause, cronjob, evidence),
        Fact::KernelFault(fault) => cordon_faulty(chain, fault, alert),
        Fact::SharedByFailing(shared) => cordon_shared(shared),
        // A lost node already carries the `not-ready` / `unreachable` NoSchedule taints, and a
        // node under pressure the `*-pressure` ones, for as long as the condition lasts:
        // cordoning adds nothing the scheduler does not already do, and their steps are to
        // bring the node back or to relieve it, which no catalogue action does.
        Fact::NodeNotReady(_) | Fact::NodePressure(_) => None,
        // Anything else: a restart, a new scale or a deleted pod would hide a fault (an OOM
        // kill, a leak, a bad setting) rather than fix it, and suspending the CronJob behind a
        // running batch Job leaves that Job running. Nothing is proposed.
        _ => None,
    }
}

/// **Rollback** when the headline is a deploy that a step in the alert's metric followed (the
/// deploy explains the step, which is the symptom): the Deployment goes back to the revision
/// before it. Only with the revision diff of that very revision in the round — the newest of
/// its Deployment's history, so the one running now (a Deployment's rollback re-numbers the
/// old template as the newest revision) — which names both revisions and what changed. Never
/// for a StatefulSet (its ControllerRevisions are not in the catalogue), never for a deploy
/// whose Deployment or revision the history does not name.
///
/// The diff itself never roots or joins a chain (it is context that explains nothing, by
/// design: what changed is not what broke), so the deploy is the only link that ties the
/// symptom to a revision; and a verified deploy of a Deployment the walk did not reach from
/// the alert is already context (`investigate` demotes it), so it never heads the chain.
fn rollback<'a>(
    cause: &Finding,
    rollout: &Rollout,
    findings: &'a [Finding],
    evidence: &[Evidence],
) -> Option<Fit<'a>> {
    let deployment = rollout.deployment.as_deref()?;
    let revision: u64 = rollout.revision.as_deref()?.parse().ok()?;
    let step = rollout.followed_by.as_ref()?;
    let (finding, diff) = findings.iter().find_map(|f| match &f.fact {
        Fact::RevisionDiff(d)
            if f.standing == Standing::Current
                && d.workload_kind == "Deployment"
                && d.deployment == deployment
                && d.revision == revision =>
        {
            Some((f, d))
        }
        _ => None,
    })?;
    let namespace = asked_namespace(&[cause, finding], evidence)?;
    let why = format!(
        "revision {revision} of `{deployment}` rolled out at {} UTC and `{}` stepped {} min \
         later; it changed {}",
        rollout.at.format("%H:%M"),
        step.series,
        step.lag_minutes,
        changed(diff)
    );
    Some(Fit {
        action: Action::Rollback {
            namespace,
            deployment: deployment.to_string(),
            from_revision: diff.revision,
            to_revision: diff.previous,
        },
        why,
        diff: diff.changes.clone(),
        also: vec![finding],
    })
}

/// `image a:1 → a:2, env.DEBUG (none) → true, 3 more`.
fn changed(diff: &RevisionDiff) -> String {
    let value = |v: &Option<String>| {
        v.as_deref()
            .map_or("(none)".to_string(), |v| clip(v, WHY_VALUE_CHARS, "…"))
    };
    let mut listed: Vec<String> = diff
        .changes
        .iter()
        .take(WHY_CHANGES)
        .map(|c| format!("{} {} → {}", c.field, value(&c.old), value(&c.new)))
        .collect();
    if diff.changes.len() > WHY_CHANGES {
        listed.push(format!("{} more", diff.changes.len() - WHY_CHANGES));
    }
    listed.join(", ")
}

/// **Resume a CronJob** when the headline is its own `spec.suspend: true`, read on its own:
/// the controller starts none of its runs, and setting `suspend: false` is exactly what the
/// step says to do if it should run (suspending it again undoes it).
fn resume<'a>(
    cause: &Finding,
    cronjob: &CronJobSuspended,
    evidence: &[Evidence],
) -> Option<Fit<'a>> {
    let namespace = asked_namespace(&[cause], evidence)?;
    let schedule = cronjob
        .schedule
        .as_deref()
        .map_or(String::new(), |s| format!(" (schedule `{s}`)"));
    Some(Fit {
        action: Action::SuspendCronJob {
            namespace,
            name: cronjob.cronjob.clone(),
            suspend: false,
        },
        why: format!(
            "CronJob `{}`{schedule} has `spec.suspend: true`, so the controller starts none of \
             its runs",
            cronjob.cronjob
        ),
        diff: Vec::new(),
        also: Vec::new(),
    })
}

/// **Cordon a node** whose kernel reports a fault no pod can fix — a GPU the driver lost, disk
/// I/O errors, a lockup, a hardware error (the faults whose step is to cordon) — when the
/// chain ties the alert to that node: the alert names it, or the failing pods the fault
/// explains all share it. A full conntrack table is answered by raising its limit, a node out
/// of memory by finding what used it: no cordon.
fn cordon_faulty<'a>(
    chain: &Chain<'_>,
    fault: &KernelFault,
    alert: &AlertTarget,
) -> Option<Fit<'a>> {
    if !matches!(
        fault.fault,
        Fault::GpuXid | Fault::DiskIo | Fault::Lockup | Fault::Hardware
    ) {
        return None;
    }
    let node = fault.node.as_str();
    let sharing = chain.explained.iter().find_map(|f| match &f.fact {
        Fact::SharedByFailing(s) if s.located && s.on_node(node) => Some(s),
        _ => None,
    });
    let tie = match sharing {
        Some(s) => format!(
            ", and the {} failing pods of `{}` all run there",
            s.failing.len(),
            s.workload
        ),
        None if alert.node.as_deref() == Some(node) => ", the node the alert is about".to_string(),
        None => return None,
    };
    let times = match fault.lines {
        1 => "once".to_string(),
        n => format!("{n} times"),
    };
    Some(cordon(
        node,
        format!(
            "node `{node}`'s kernel journal reports the fault {times}{tie}; cordoned, no new pod \
             is placed on it"
        ),
    ))
}

/// **Cordon a node** that three or more failing pods of one workload share while healthy pods
/// of the same revision run elsewhere (a located failure): the place, not the code, fails, and
/// cordoning it is what the step suggests to see whether pods recover elsewhere. Not for a
/// DaemonSet (its pods tolerate a cordon), nor for a zone or node generation (many nodes, not
/// one action).
fn cordon_shared<'a>(shared: &SharedByFailing) -> Option<Fit<'a>> {
    let place = shared.shared.first()?;
    if !shared.located
        || !shared.healthy_baseline
        || place.sharing != Sharing::Node
        || shared.workload_kind == "DaemonSet"
    {
        return None;
    }
    let node = place.value.as_str();
    Some(cordon(
        node,
        format!(
            "{} failing pods of `{}` all run on node `{node}` while its {} healthy pods run \
             elsewhere; cordoned, no new pod is placed on it",
            shared.failing.len(),
            shared.workload,
            shared.baseline.len()
        ),
    ))
}

fn cordon<'a>(node: &str, why: String) -> Fit<'a> {
    Fit {
        action: Action::Cordon {
            node: node.to_string(),
            cordon: true,
        },
        why,
        diff: Vec::new(),
        also: Vec::new(),
    }
}

/// Whether what the alert saw has ended: a verified recovery still stands.
fn recovered(findings: &[Finding]) -> bool {
    findings
        .iter()
        .any(|f| f.kind() == Kind::Recovered && f.verified && f.standing == Standing::Current)
}

/// The namespace Firstline asked the evidence `findings` cite from: the `namespace` argument of
/// the calls that read it — what Firstline sent, never what an object or a log line says. Every
/// cited call must name the same one; a call that names none (a custom binding's own argument
/// names) proposes nothing.
fn asked_namespace(findings: &[&Finding], evidence: &[Evidence]) -> Option<String> {
    let mut asked = findings.iter().flat_map(|f| &f.refs).map(|citation| {
        evidence
            .iter()
            .find(|e| e.id == citation.evidence)
            .and_then(|e| e.args.get("namespace"))
            .and_then(Value::as_str)
            .filter(|ns| !ns.is_empty())
    });
    let first = asked.next()??;
    asked.all(|ns| ns == Some(first)).then(|| first.to_string())
}

/// The evidence ids `findings` cite, each once, in order.
fn cited<'f>(findings: impl Iterator<Item = &'f Finding>) -> Vec<String> {
    let mut ids: Vec<EvidenceId> = Vec::new();
    for citation in findings.flat_map(|f| &f.refs) {
        if !ids.contains(&citation.evidence) {
            ids.push(citation.evidence);
        }
    }
    ids.iter().map(EvidenceId::to_string).collect()
}

#[cfg(test)]
mod tests;
