//! Next steps: what to do first, from the payloads of the findings that tell the story — the
//! chains' causes (each kind's `Payload::step`), or with no confirmed cause the strongest lead
//! and what else still stands — plus what to check by hand when evidence is missing.
//!
//! A step names only objects of its finding or the alert; it acts (a rollback, a new limit)
//! only for the verified headline ([`Scene::headline`]), and it never comes from a
//! finding that no longer stands (a FailedScheduling from before the pod was scheduled gets no
//! "add a toleration"). Used by `summarise`.

use crate::detectors::{Finding, Kind, Role, Scene, Standing};
use crate::evidence::Capability;
use crate::explain::Explanation;

use super::state::IncidentState;
use crate::missing::MissingKind;

/// Most next steps a report lists.
pub const MAX_NEXT_STEPS: usize = 5;
/// Findings outside a chain that get a step of their own when no cause is confirmed.
const MAX_LEAD_STEPS: usize = 3;

/// The next steps for a finished investigation, most important first, without duplicates.
pub fn next_steps(state: &IncidentState, story: &Explanation<'_>) -> Vec<String> {
    let mut steps: Vec<String> = Vec::new();
    let mut push = |step: String| {
        if !steps.contains(&step) {
            steps.push(step);
        }
    };
    // Only the headline's cause may act (roll back, scale); the other chains' look further.
    for (i, chain) in story.chains.iter().enumerate() {
        push(chain.cause.step(&scene(state, i == 0)));
    }
    if story.chains.is_empty() {
        let standing = story
            .rest
            .iter()
            .copied()
            .filter(|f| f.role() != Role::Context);
        let context = story
            .rest
            .iter()
            .copied()
            .filter(|f| f.standing == Standing::Current && f.role() == Role::Context);
        // What the alert saw has ended: that comes before any suspicion.
        let recovered = context.clone().filter(|f| f.kind() == Kind::Recovered);
        let mut leads: Vec<&Finding> = recovered.chain(story.lead).collect();
        for finding in standing.chain(context) {
            if !leads.iter().any(|l| std::ptr::eq(*l, finding)) {
                leads.push(finding);
            }
        }
        for finding in leads.into_iter().take(MAX_LEAD_STEPS) {
            push(finding.step(&scene(state, false)));
        }
    }
    let names = scene(state, false);
    let failed: Vec<&Capability> = state
        .missing
        .iter()
        .filter(|m| m.kind == MissingKind::Failed)
        .map(|m| &m.capability)
        .collect();
    if let Some(step) = cluster_by_hand(&failed, &names) {
        push(step);
    }
    for capability in failed {
        if let Some(step) = by_hand(capability, &names) {
            push(step);
        }
    }
    if state.findings.is_empty()
        && !state.evidence.is_empty()
        && let Some(expr) = &state.alert.target.expression
    {
        push(format!(
            "Nothing checked shows a fault: run the alert's expression `{expr}` in Prometheus to \
             see whether it still fires and for which series."
        ));
    }
    steps.truncate(MAX_NEXT_STEPS);
    steps
}

/// The names a step uses: the alert's objects; `headline` says the step is for the report's
/// verified headline.
pub fn scene(state: &IncidentState, headline: bool) -> Scene {
    let target = &state.alert.target;
    let kind = target
        .workload_kind
        .as_deref()
        .unwrap_or("deployment")
        .to_ascii_lowercase();
    Scene {
        namespace: target
            .namespace
            .clone()
            .unwrap_or_else(|| "<namespace>".to_string()),
        pod: target.pod.clone(),
        workload: target.workload.clone(),
        container: target.container.clone(),
        workload_ref: match &target.workload {
            Some(w) => format!("{kind}/{w}"),
            None => state
                .alert
                .subject()
                .map_or("the workload".to_string(), |s| format!("`{s}`")),
        },
        when: state.alert.around(),
        headline,
    }
}

/// One step for the pod's own views (description, logs, events) that could not be read.
fn cluster_by_hand(failed: &[&Capability], names: &Scene) -> Option<String> {
    let ns = &names.namespace;
    let pod = names.pod.as_deref().unwrap_or("<pod>");
    let mut commands = Vec::new();
    if failed.contains(&&Capability::PodDescribe) {
        commands.push(format!("`kubectl -n {ns} describe pod {pod}`"));
    }
    if failed.contains(&&Capability::PodLogsPrevious) {
        commands.push(format!("`{}`", names.previous_log_command(None, None)));
    } else if failed.contains(&&Capability::PodLogsCurrent) {
        commands.push(format!("`kubectl -n {ns} logs {pod}`"));
    }
    if failed.contains(&&Capability::Events) {
        let object = names
            .pod
            .as_deref()
            .or(names.workload.as_deref())
            .unwrap_or("<pod>");
        commands.push(format!(
            "`kubectl -n {ns} get events --field-selector involvedObject.name={object}`"
        ));
    }
    if commands.is_empty() {
        return None;
    }
    Some(format!(
        "Firstline could not read the pod; check by hand: {}.",
        commands.join(", ")
    ))
}

/// What to check by hand when a capability outside the pod's own views could not be read.
fn by_hand(capability: &Capability, names: &Scene) -> Option<String> {
    let ns = &names.namespace;
    Some(match capability {
        Capability::DeployHistory => format!(
            "Firstline could not read the deploy history: run `kubectl -n {ns} rollout history {}`.",
            names.workload_ref
        ),
        Capability::MetricRange => {
            "Firstline could not query the alert's metric: open the alert's graph link.".to_string()
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests;
