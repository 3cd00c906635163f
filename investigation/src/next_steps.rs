//! Next steps: one concrete action per finding, by detector kind, naming the objects and
//! settings the evidence names (the deployment, the container, the missing key), plus what to
//! check by hand when evidence is missing. Used by `summarise`.

use crate::detectors::{DetectorKind, Finding};
use crate::evidence::Capability;

use super::state::{IncidentState, MissingKind};
use super::summarise::subject;

/// Most next steps a report lists.
pub const MAX_NEXT_STEPS: usize = 5;

/// The next steps for a finished investigation, most important first, without duplicates.
pub fn next_steps(state: &IncidentState) -> Vec<String> {
    let names = Names::of(state);
    let mut steps: Vec<String> = Vec::new();
    let mut push = |step: String| {
        if !steps.contains(&step) {
            steps.push(step);
        }
    };
    let any_verified = state.findings.iter().any(|f| f.verified);
    for finding in &state.findings {
        // With a verified cause, unverified suspicions are not acted on (see summarise).
        if any_verified && !finding.verified && finding.detector != DetectorKind::DeployInWindow {
            continue;
        }
        push(step_for(finding, &names, state));
    }
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

/// The names a step mentions, from the alert.
struct Names {
    namespace: String,
    pod: Option<String>,
    workload: Option<String>,
    container: Option<String>,
    /// `deployment/payments-api`, or `the workload`.
    workload_ref: String,
}

impl Names {
    fn of(state: &IncidentState) -> Self {
        let target = &state.alert.target;
        let kind = target
            .workload_kind
            .as_deref()
            .unwrap_or("deployment")
            .to_ascii_lowercase();
        Self {
            namespace: target
                .namespace
                .clone()
                .unwrap_or_else(|| "<namespace>".to_string()),
            pod: target.pod.clone(),
            workload: target.workload.clone(),
            container: target.container.clone(),
            workload_ref: match &target.workload {
                Some(w) => format!("{kind}/{w}"),
                None => subject(target).map_or("the workload".to_string(), |s| format!("`{s}`")),
            },
        }
    }

    fn previous_log_command(&self, container: Option<&str>) -> String {
        let container = container
            .or(self.container.as_deref())
            .map(|c| format!(" -c {c}"))
            .unwrap_or_default();
        match (&self.pod, self.workload_ref.strip_prefix("job/")) {
            // A Job's failed runs are pods of their own, not restarts: read their logs, not a
            // previous container's.
            (None, Some(_)) => format!(
                "kubectl -n {} logs {}{container}",
                self.namespace, self.workload_ref
            ),
            (pod, _) => format!(
                "kubectl -n {} logs {}{container} --previous",
                self.namespace,
                pod.as_deref().unwrap_or("<pod>")
            ),
        }
    }

    fn owner(&self) -> String {
        match &self.workload {
            Some(w) => format!("`{w}`"),
            None => "the workload".to_string(),
        }
    }
}

fn step_for(finding: &Finding, names: &Names, state: &IncidentState) -> String {
    let container = container_of(&finding.title);
    let ns = &names.namespace;
    match finding.detector {
        DetectorKind::ConfigError => {
            if let Some(key) = finding.title.strip_prefix("Missing configuration: ") {
                format!(
                    "Set `{key}` in {}'s env / ConfigMap and roll out \
                     (`kubectl -n {ns} rollout restart {}` after changing a ConfigMap).",
                    names.owner(),
                    names.workload_ref
                )
            } else if finding.title.starts_with("Volume mount failing") {
                format!(
                    "Create the Secret/ConfigMap or fix the volume the event names, then let \
                     {} retry (`kubectl -n {ns} rollout restart {}`).",
                    names.owner(),
                    names.workload_ref
                )
            } else {
                format!(
                    "Fix the configuration the error names in {}'s spec or ConfigMap and roll out.",
                    names.owner()
                )
            }
        }
        DetectorKind::OomKilled => {
            let limit = finding
                .detail
                .split("memory limit is ")
                .nth(1)
                .map(|rest| rest.trim_end_matches('.').to_string());
            let which = container.map_or("the container".to_string(), |c| format!("`{c}`"));
            let now = limit.map(|l| format!(" (now {l})")).unwrap_or_default();
            format!(
                "Raise the memory limit of {which}{now} in {}, or find what grew: check the \
                 pod's memory (`container_memory_working_set_bytes`) over the last hours first.",
                names.workload_ref
            )
        }
        DetectorKind::ExitCode | DetectorKind::CrashLoop => format!(
            "Read the crashed container's whole log: `{}`.",
            names.previous_log_command(container)
        ),
        DetectorKind::ImagePull => format!(
            "Check that the image exists in the registry with that tag and that the pod's \
             imagePullSecrets can read it; fix the image in {} and roll out.",
            names.workload_ref
        ),
        DetectorKind::Unschedulable => format!(
            "Make room for the pod: add node capacity or lower its requests, or fix the node \
             selector / tolerations the scheduler names (`kubectl -n {ns} describe pod {}`).",
            names.pod.as_deref().unwrap_or("<pod>")
        ),
        DetectorKind::CertificateError => "Renew the certificate the log names and restart what \
             loaded it; check when it was last rotated (cert-manager `Certificate` status)."
            .to_string(),
        DetectorKind::DependencyError => {
            let endpoint = finding
                .title
                .rsplit(' ')
                .next()
                .filter(|e| !e.is_empty())
                .unwrap_or("the dependency");
            format!(
                "Check that {endpoint} is up and reachable from namespace `{ns}` (its pods, \
                 Service endpoints, NetworkPolicies)."
            )
        }
        DetectorKind::DiskPressure => "Free space on the full volume or node (log rotation, old \
             data) or expand the PersistentVolumeClaim, then restart the pod."
            .to_string(),
        DetectorKind::ProbeFailure => format!(
            "Check the probe's path and port against what the app serves, and its start-up \
             time; if it is only slow, raise initialDelaySeconds / failureThreshold in {}.",
            names.workload_ref
        ),
        DetectorKind::DeployInWindow => format!(
            "Compare this revision with the previous one; if the change is the cause, roll back: \
             `kubectl -n {ns} rollout undo {}`.",
            names.workload_ref
        ),
        DetectorKind::MetricStepChange => format!(
            "Find what changed when the metric stepped (deploys, config, traffic, a \
             dependency) {}.",
            super::summarise::around(&state.alert)
        ),
        DetectorKind::JobFailed => format!(
            "Read the failed job's log (`kubectl -n {ns} logs job/{}`) and re-run it once \
             fixed.",
            finding
                .resource
                .as_deref()
                .or(names.workload.as_deref())
                .unwrap_or("<job>")
        ),
    }
}

/// One step for the pod's own views (description, logs, events) that could not be read.
fn cluster_by_hand(failed: &[&Capability], names: &Names) -> Option<String> {
    let ns = &names.namespace;
    let pod = names.pod.as_deref().unwrap_or("<pod>");
    let mut commands = Vec::new();
    if failed.contains(&&Capability::PodDescribe) {
        commands.push(format!("`kubectl -n {ns} describe pod {pod}`"));
    }
    if failed.contains(&&Capability::PodLogsPrevious) {
        commands.push(format!("`{}`", names.previous_log_command(None)));
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
fn by_hand(capability: &Capability, names: &Names) -> Option<String> {
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

/// The container a pod detector's title names: ``Container `api` OOMKilled`` → `api`.
fn container_of(title: &str) -> Option<&str> {
    let rest = title.strip_prefix("Container `")?;
    rest.split('`').next().filter(|name| !name.is_empty())
}
