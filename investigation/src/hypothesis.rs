//! The reply's first line when a person's mention asked a hypothesis (`steer.rs`): "Is it the
//! deploy? Yes: …", "… Probably not: … explains the failure", "… No: nothing was rolled out …
//! (E9)", or not decidable and why — read from the round's typed findings, evidence and
//! missing evidence, never from text it rendered.

use chrono::Duration;

use crate::detectors::changes::revisions_in;
use crate::detectors::{Citation, Fact, Finding, Kind, ObjectKind, Role, Standing};
use crate::evidence::{Capability, Evidence};
use crate::missing::MissingKind;
use crate::state::IncidentState;
use crate::steer::Hypothesis;

/// A deploy older than this before the alert is not the change that broke it.
const OLD_DEPLOY: Duration = Duration::hours(6);

/// Whether the deploy did it, from the rollout finding, else the rollout history itself.
fn deploy(
    state: &IncidentState,
    cause: Option<&Finding>,
    cite: &dyn Fn(&[Citation]) -> String,
) -> String {
    let of_subject = state
        .alert
        .target
        .workload
        .as_deref()
        .or(state.alert.subject())
        .map_or(String::new(), |s| format!(" of `{s}`"));
    let rollout = state
        .findings
        .iter()
        .find(|f| f.standing == Standing::Current && f.kind() == Kind::Rollout);
    if let Some(r) = rollout.filter(|r| r.verified) {
        return format!("Yes: {}{}", r.title(), cite(&r.refs));
    }
    // The cause began with a revision, not necessarily the newest (a leak since 5.2.0).
    if let Some(began) = state
        .findings
        .iter()
        .find(|f| f.standing == Standing::Current && f.verified && began_with_a_revision(f))
    {
        return format!("Yes, a deploy: {}{}", began.title(), cite(&began.refs));
    }
    let histories: Vec<&Evidence> = state
        .evidence
        .iter()
        .filter(|e| e.capability == Capability::DeployHistory)
        .collect();
    let newest = revisions_in(histories.iter().copied()).pop();
    let Some(newest) = newest else {
        let failed = state
            .missing
            .iter()
            .find(|m| m.capability == Capability::DeployHistory && m.kind == MissingKind::Failed);
        return match failed {
            Some(m) => format!(
                "Not decidable: the rollout history{of_subject} could not be read ({})",
                m.reason
            ),
            None => format!("Not decidable: no rollout history{of_subject} was read"),
        };
    };
    let revision = newest.revision.as_deref().map_or_else(
        || "its newest revision".to_string(),
        |r| format!("revision {r}"),
    );
    let shown = format!("{}: \"{}\"", newest.evidence.id, newest.time_line.trim());
    let Some(fired) = state.alert.anchor() else {
        return format!(
            "Not decidable: the alert has no start time to compare {revision} with ({shown})"
        );
    };
    let before = fired - newest.at;
    if before < Duration::zero() {
        return format!(
            "No: {revision}{of_subject} rolled out {} after the alert fired ({shown})",
            span(-before)
        );
    }
    let cut = histories.iter().any(|e| e.excerpt.contains(" omitted] …"));
    if before > OLD_DEPLOY && !cut {
        return format!(
            "No: the newest rollout{of_subject}, {revision}, was {} before the alert ({shown})",
            span(before)
        );
    }
    let when = format!(
        "{revision}{of_subject} rolled out {} before the alert",
        span(before)
    );
    match cause {
        // A cause outside the workload's own pods (a node, a dependency, a volume) explains
        // the failure whatever was deployed.
        Some(cause) if !on_the_workload(cause) => format!(
            "Probably not: {when}, but {} explains the failure{}",
            cause.title(),
            cite(&cause.refs)
        ),
        // The deployed pods themselves fail: whether the new version brought the cause (a
        // setting it now requires, a changed limit) is what its changes show.
        Some(cause) => format!(
            "Possibly: {when}, and its pods fail with {} — whether the new version brought \
             that is in what the revision changed{}",
            cause.title(),
            cite(&cause.refs)
        ),
        None => {
            format!("Not decidable yet: {when}, but nothing read ties it to the failure ({shown})")
        }
    }
}

/// `14 min`, `3 h`, `2 d`.
fn span(d: Duration) -> String {
    match d.num_minutes() {
        m if m < 120 => format!("{m} min"),
        m if m < 48 * 60 => format!("{} h", m / 60),
        m => format!("{} d", m / (24 * 60)),
    }
}

/// Whether a cause names the revision it began with.
fn began_with_a_revision(finding: &Finding) -> bool {
    match &finding.fact {
        Fact::MemoryGrowth(growth) => growth.began_with.is_some(),
        Fact::RevisionDiff(_) => finding.verified,
        _ => false,
    }
}

/// Whether a finding is about the workload's own pods or containers, which a deploy replaces.
fn on_the_workload(finding: &Finding) -> bool {
    finding.subject().is_none_or(|s| {
        matches!(
            s.kind,
            ObjectKind::Pod | ObjectKind::Workload | ObjectKind::Job
        )
    })
}

/// The reply's first line for a mention's hypothesis: confirmed, ruled out with the evidence, or
/// not decidable and why. `None` without a hypothesis.
pub fn answer(state: &IncidentState) -> Option<String> {
    let steering = state.steering.as_ref()?;
    let hypothesis = steering.hypothesis.as_ref()?;
    let current = || {
        state
            .findings
            .iter()
            .filter(|f| f.standing == Standing::Current)
    };
    let cite = |refs: &[Citation]| {
        refs.first()
            .map(|c| {
                format!(
                    " ({}: \"{}\")",
                    c.evidence,
                    crate::detectors::text::quote_line(&c.quote)
                )
            })
            .unwrap_or_default()
    };
    let headline_cause = current().find(|f| f.verified && f.role() == Role::Cause);
    match hypothesis {
        Hypothesis::Deploy => Some(format!(
            "Is it the deploy? {}",
            deploy(state, headline_cause, &cite)
        )),
        Hypothesis::Object(name) => {
            let about = |f: &&Finding| {
                f.subject().is_some_and(|s| s.name.contains(name.as_str()))
                    || f.title().contains(&format!("`{name}"))
            };
            let read_it = state.plan.iter().any(|step| {
                step.outcome.called()
                    && crate::plan::describe_request(&step.request).contains(name.as_str())
            });
            match (
                current().filter(about).find(|f| f.verified),
                current().find(about),
            ) {
                (Some(f), _) if matches!(f.fact, Fact::Recovered(_)) => Some(format!(
                    "Is it `{name}`? Not any more: {}{}",
                    f.title(),
                    cite(&f.refs)
                )),
                (Some(f), _) => Some(format!(
                    "Is it `{name}`? Yes: {}{}",
                    f.title(),
                    cite(&f.refs)
                )),
                (None, Some(f)) => Some(format!(
                    "Is it `{name}`? Not decidable yet: {}, unverified{}",
                    f.title(),
                    cite(&f.refs)
                )),
                (None, None) if read_it => Some(format!(
                    "Is it `{name}`? Nothing read about `{name}` shows a failure (see its \
                     evidence below)"
                )),
                (None, None) => Some(format!(
                    "Is it `{name}`? Not decidable: nothing about `{name}` could be read"
                )),
            }
        }
    }
}
