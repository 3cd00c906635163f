//! The `ask` node: when the report is not grounded, up to three concrete questions for the
//! people in the thread — things only a human can answer or unblock.
//!
//! In order of what unblocks the next round most:
//!
//! 1. what the alert does not say (no target, no namespace, only a deployment and no pod);
//! 2. what could not be read, grouped by system and naming the failure ("The pod description
//!    and container logs could not be read (kubernetes: timed out): is the cluster API
//!    reachable from Firstline?");
//! 3. the judge's doubts about unverified suspicions;
//! 4. whether the most similar past incident (recall) is happening again, with its cause and
//!    fix, so the people who know can confirm or rule it out in one reply;
//! 5. when everything read looks healthy: whether the alert still fires and what changed that
//!    telemetry would not show.
//!
//! A question already asked in an earlier round of the thread is not asked again. Never
//! generic filler: every question names the object, the time or the failure it is about.
//!
//! Each question has a kind (which namespace, which workload, since when, is this hypothesis
//! right, free text) and, where the round discovered them, choices: the namespaces or workloads
//! its lists showed. An answer to the last round's question that could not be read against its
//! kind (`answers.rs`) is clarified first, once, with the candidates.
//!
//! With a model configured, a model verdict of "ask" adds its own questions to the judge's
//! doubts (`model_path`); the cap and the order above stay.

use tracing::Instrument;

use firstline_model::{Question, QuestionKind};

use crate::answers::Reading;
use crate::evidence::Capability;
use crate::kube;

use super::judge::MAX_QUESTIONS;
use super::state::{IncidentState, IncidentUpdate};
use crate::detectors::text::quote_line;
use crate::missing::MissingKind;
use crate::prior::memory;

/// The ask node's body.
pub async fn ask(state: &IncidentState) -> IncidentUpdate {
    let span = tracing::info_span!("incident.ask", questions = tracing::field::Empty);
    async {
        let questions = questions(state);
        tracing::Span::current().record("questions", questions.len());
        IncidentUpdate::default().questions(questions)
    }
    .instrument(span)
    .await
}

/// Most choices offered with one question (Slack shows up to 25 buttons in one block).
const MAX_CHOICES: usize = 25;

/// Up to [`MAX_QUESTIONS`] questions for a state the judge did not accept.
pub fn questions(state: &IncidentState) -> Vec<Question> {
    let mut candidates = clarifications(state);
    candidates.extend(about_the_alert(state));
    candidates.extend(about_failures(state));
    if let Some(verdict) = &state.verdict {
        candidates.extend(verdict.questions.iter().cloned());
    }
    candidates.extend(about_a_past_incident(state));
    if state.findings.is_empty() && !state.evidence.is_empty() {
        candidates.extend(about_a_healthy_target(state));
    }
    let asked_before: Vec<&str> = state
        .context
        .earlier_rounds
        .iter()
        .flat_map(|r| r.questions.iter())
        .chain(&state.context.open_questions)
        .map(|q| q.text.as_str())
        .collect();
    let mut out: Vec<Question> = Vec::new();
    for question in candidates {
        if !asked_before.contains(&question.text.as_str())
            && !out.iter().any(|q| q.text == question.text)
        {
            out.push(question);
        }
        if out.len() == MAX_QUESTIONS {
            break;
        }
    }
    out
}

/// One clarification per answer to a typed question that could not be read, naming what it
/// wants and the candidates — unless that question was itself a clarification.
fn clarifications(state: &IncidentState) -> Vec<Question> {
    let mut out: Vec<Question> = Vec::new();
    for answer in &state.answers {
        let Reading::Unread { candidates } = &answer.reading else {
            continue;
        };
        let asked = &answer.question;
        if asked.clarifies
            || asked.kind == QuestionKind::FreeText
            || out.iter().any(|q| q.kind == asked.kind)
        {
            continue;
        }
        let said = format!("\"{}\"", quote_line(&answer.said));
        let text = if candidates.is_empty() {
            format!(
                "I could not read {said} as {}. {}",
                asked.kind.wants(),
                asked.text
            )
        } else {
            let listed = candidates
                .iter()
                .take(MAX_CHOICES)
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ");
            format!(
                "I could not match {said} to {}: which of {listed} is it? Reply with its name.",
                asked.kind.wants()
            )
        };
        out.push(Question {
            kind: asked.kind,
            text,
            choices: candidates.clone(),
            clarifies: true,
        });
    }
    out
}

/// Names of the objects in the round's lists: of `kinds` (any when empty), in `namespace` when
/// given, in the order listed.
fn listed_names(state: &IncidentState, kinds: &[&str], namespace: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for evidence in state
        .evidence
        .iter()
        .filter(|e| e.capability == Capability::ObjectList)
    {
        for object in kube::objects(&evidence.excerpt) {
            let (kind, name, ns) = kube::identity(&object);
            let kind_fits = kinds.is_empty() || kind.is_some_and(|k| kinds.contains(&k));
            if let Some(name) = name
                && kind_fits
                && namespace.is_none_or(|want| ns == Some(want))
                && !out.iter().any(|n| n == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out.truncate(MAX_CHOICES);
    out
}

/// Names of the pods in the round's pod lists, in the order listed.
fn listed_pods(state: &IncidentState) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for evidence in state
        .evidence
        .iter()
        .filter(|e| e.capability == Capability::PodList)
    {
        for pod in kube::pods_in_list(&evidence.excerpt) {
            if !out.contains(&pod.name) {
                out.push(pod.name);
            }
        }
    }
    out.truncate(MAX_CHOICES);
    out
}

/// The namespaces an object named `name` was listed in; when none, every namespace the round's
/// cluster-wide lists showed.
fn namespace_choices(state: &IncidentState, name: &str) -> Vec<String> {
    let mut with_name: Vec<String> = Vec::new();
    let mut all: Vec<String> = Vec::new();
    for evidence in state
        .evidence
        .iter()
        .filter(|e| e.capability == Capability::ObjectList)
    {
        for object in kube::objects(&evidence.excerpt) {
            let (_, object_name, namespace) = kube::identity(&object);
            let Some(namespace) = namespace else { continue };
            if object_name == Some(name) && !with_name.iter().any(|n| n == namespace) {
                with_name.push(namespace.to_string());
            }
            if !all.iter().any(|n| n == namespace) {
                all.push(namespace.to_string());
            }
        }
    }
    let mut choices = if with_name.is_empty() { all } else { with_name };
    choices.sort();
    choices.truncate(MAX_CHOICES);
    choices
}

fn about_the_alert(state: &IncidentState) -> Vec<Question> {
    let target = &state.alert.target;
    let mut out = Vec::new();
    let name = target.alertname.as_deref().unwrap_or("this alert");
    // The round may have found its subject anyway (the claim's pods, a workload the alert's
    // words spell): then something was described, and asking which is noise.
    let described = state.evidence.iter().any(|e| {
        matches!(
            e.capability,
            crate::evidence::Capability::PodDescribe | crate::evidence::Capability::ObjectGet
        )
    });
    match (state.alert.subject(), &target.namespace) {
        (None, _) if described => {}
        (None, _) => out.push(
            Question::of(
                QuestionKind::Workload,
                format!(
                    "Which pod, deployment or service is `{name}` about? The alert names none, \
                     so nothing could be described or read."
                ),
            )
            .with_choices(listed_names(
                state,
                &[
                    "Deployment",
                    "StatefulSet",
                    "DaemonSet",
                    "CronJob",
                    "Service",
                ],
                target.namespace.as_deref(),
            )),
        ),
        (Some(subject), None) => out.push(
            Question::of(
                QuestionKind::Namespace,
                format!(
                    "Which namespace (environment) is `{subject}` in? The alert has no \
                     namespace, so nothing in the cluster could be looked up."
                ),
            )
            .with_choices(namespace_choices(state, subject)),
        ),
        (Some(_), Some(_)) => {}
    }
    // A Job's pods are discovered by the investigation; ask only when no container log was read.
    let logs_read = state
        .evidence
        .iter()
        .any(|e| e.capability.is_container_log());
    if target.pod.is_none()
        && target.namespace.is_some()
        && !logs_read
        && let Some(workload) = target.workload.as_deref().or(target.service.as_deref())
    {
        let pods = listed_pods(state)
            .into_iter()
            .filter(|pod| kube::is_generated_from(pod, workload));
        out.push(
            Question::of(
                QuestionKind::Workload,
                format!(
                    "Which pod of `{workload}` is failing? The alert names no pod, so no pod was \
                     described and no container log was read."
                ),
            )
            .with_choices(pods),
        );
    }
    out
}

/// One question per system that failed, naming what could not be read and why.
fn about_failures(state: &IncidentState) -> Vec<Question> {
    let failed: Vec<_> = state
        .missing
        .iter()
        .filter(|m| m.kind == MissingKind::Failed && m.capability != memory())
        .collect();
    let mut out = Vec::new();
    let cluster: Vec<_> = failed
        .iter()
        .filter(|m| {
            matches!(
                m.capability,
                Capability::PodDescribe
                    | Capability::PodLogsCurrent
                    | Capability::PodLogsPrevious
                    | Capability::Events
            )
        })
        .collect();
    if let Some(first) = cluster.first() {
        let what = join_labels(cluster.iter().map(|m| m.capability.label()));
        let target = &state.alert.target;
        let namespace = crate::detectors::text::namespace_flag(target.namespace.as_deref());
        let pod = target.pod.as_deref().unwrap_or("<pod>");
        out.push(Question::free(format!(
            "The {what} could not be read ({}): is the cluster API reachable from Firstline, and \
             what does `kubectl{namespace} describe pod {pod}` show?",
            first.reason
        )));
    }
    let when = state.alert.around();
    for missing in &failed {
        let question = match missing.capability {
            Capability::DeployHistory => format!(
                "The deploy history of `{}` could not be read ({}): was anything deployed or \
                 changed there {when}?",
                state
                    .alert
                    .target
                    .workload
                    .as_deref()
                    .unwrap_or("the workload"),
                missing.reason
            ),
            Capability::MetricRange => format!(
                "The alert's metric could not be queried ({}): is Prometheus reachable, and is \
                 the alert still firing?",
                missing.reason
            ),
            Capability::LogQuery => format!(
                "The log query failed ({}): is Loki reachable from Firstline?",
                missing.reason
            ),
            Capability::TraceSearch => format!(
                "The trace search failed ({}): is Tempo reachable from Firstline?",
                missing.reason
            ),
            _ => continue,
        };
        out.push(Question::free(question));
    }
    out
}

/// Whether the best-matching past incident is back, quoting its cause and fix.
fn about_a_past_incident(state: &IncidentState) -> Option<Question> {
    let prior = state.prior_incidents.first()?;
    let past = &prior.incident;
    let fix = if past.resolution.trim().is_empty() || past.resolution == past.root_cause {
        String::new()
    } else {
        format!(" It was fixed by: {}", quote_line(&past.resolution))
    };
    Some(Question::of(
        QuestionKind::Hypothesis,
        format!(
            "Is this \"{}\" again (resolved {}, similar by {})? Its cause was: {}{fix}",
            quote_line(&past.title),
            past.resolved_at.format("%Y-%m-%d"),
            join_labels(prior.matched_on.iter().map(String::as_str)),
            quote_line(&past.root_cause),
        ),
    ))
}

fn about_a_healthy_target(state: &IncidentState) -> Vec<Question> {
    let target = &state.alert.target;
    let when = state.alert.around();
    let checked = join_labels(state.evidence.iter().map(|e| e.capability.label()));
    let subject = state.alert.subject().unwrap_or("the target");
    vec![
        Question::free(format!(
            "Nothing wrong shows for `{subject}` in what was read ({checked}): is `{}` still \
             firing, and did anyone see user impact {when}?",
            target.alertname.as_deref().unwrap_or("the alert")
        )),
        Question::free(format!(
            "Did anything change {when} that the cluster would not show — a config or \
             feature-flag change, a dependency outside the cluster, a traffic spike?"
        )),
    ]
}

/// `a`, `a and b`, `a, b and c`, without repeats.
fn join_labels<'a>(labels: impl Iterator<Item = &'a str>) -> String {
    let mut unique: Vec<&str> = Vec::new();
    for label in labels {
        if !unique.contains(&label) {
            unique.push(label);
        }
    }
    match unique.split_last() {
        None => String::new(),
        Some((last, [])) => (*last).to_string(),
        Some((last, rest)) => format!("{} and {last}", rest.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::questions;
    use crate::prior::PriorIncident;
    use crate::state::{AlertInput, IncidentState};
    use firstline_model::ThreadContext;
    use firstline_store::incidents::PastIncident;

    #[test]
    fn the_most_similar_past_incident_is_asked_about_with_its_cause_and_fix() {
        let mut state = IncidentState::new(
            AlertInput::parse(
                "[FIRING:1] CheckoutCardPaymentsFailing\n*Details:*\n  • *alertname:* `CheckoutCardPaymentsFailing`\n  • *namespace:* `storefront`\n  • *service:* `checkout-web`\n",
                None,
            ),
            ThreadContext::for_team("T1"),
        );
        state.prior_incidents = vec![PriorIncident {
            incident: PastIncident {
                id: 7,
                title: "payments pods kept restarting".into(),
                summary: String::new(),
                root_cause: "PAYMENT_MODE was dropped from the ConfigMap".into(),
                resolution: "restored PAYMENT_MODE and redeployed".into(),
                permalink: None,
                alertname: Some("KubePodCrashLooping".into()),
                service: Some("payments".into()),
                namespace: Some("shop".into()),
                resolved_at: chrono::DateTime::from_timestamp(1_764_000_000, 0).expect("a time"),
                alert_count: 1,
            },
            score: 0.03,
            similarity: Some(0.52),
            matched_on: vec!["meaning".into(), "text".into()],
        }];
        let asked = questions(&state);
        let past = asked
            .iter()
            .find(|q| {
                q.text
                    .starts_with("Is this \"payments pods kept restarting\" again")
            })
            .unwrap_or_else(|| panic!("{asked:#?}"));
        assert!(
            past.text.contains("similar by meaning and text"),
            "{past:?}"
        );
        assert!(past.text.contains("PAYMENT_MODE was dropped"), "{past:?}");
        assert!(
            past.text.contains("fixed by: restored PAYMENT_MODE"),
            "{past:?}"
        );

        // Without a prior incident there is no such question.
        state.prior_incidents.clear();
        assert!(
            !questions(&state)
                .iter()
                .any(|q| q.text.starts_with("Is this"))
        );
    }

    #[test]
    fn which_pod_is_asked_only_when_nothing_could_be_described() {
        let mut state = IncidentState::new(
            AlertInput::parse("The check \"invoice-dunning (prod)\" is DOWN.", None),
            ThreadContext::for_team("T1"),
        );
        let which = |state: &IncidentState| {
            questions(state)
                .iter()
                .any(|q| q.text.starts_with("Which pod, deployment or service"))
        };
        assert!(which(&state));
        // The round found the CronJob its words spell and read it.
        state.evidence.push(crate::evidence::Evidence::new(
            crate::evidence::EvidenceId::new(1).expect("an id"),
            crate::evidence::Capability::ObjectGet,
            "kubernetes",
            "resources_get",
            serde_json::json!({"kind": "CronJob", "name": "invoice-dunning"}),
            "kind: CronJob".to_string(),
            chrono::DateTime::from_timestamp(1_764_000_000, 0).expect("a time"),
        ));
        assert!(!which(&state));
    }

    #[test]
    fn an_unread_answer_is_clarified_once_with_the_candidates_and_never_asked_again() {
        use crate::answers::{ReadAnswer, Reading};
        use firstline_model::{Question, QuestionKind};
        let asked = Question::of(
            QuestionKind::Namespace,
            "Which namespace (environment) is `checkout` in? The alert has no namespace, so \
             nothing in the cluster could be looked up.",
        )
        .with_choices(["payments".to_string(), "shop".to_string()]);
        let mut state = IncidentState::new(
            AlertInput::parse("[FIRING:1] CheckoutSlow\nservice=checkout", None),
            ThreadContext {
                open_questions: vec![asked.clone()],
                ..ThreadContext::for_team("T1")
            },
        );
        state.answers = vec![ReadAnswer {
            question: asked.clone(),
            user: "U1".into(),
            said: "the usual one".into(),
            reading: Reading::Unread {
                candidates: asked.choices.clone(),
            },
        }];
        let clarified = questions(&state);
        let first = clarified.first().expect("a clarification");
        assert!(first.clarifies);
        assert_eq!(first.kind, QuestionKind::Namespace);
        assert_eq!(first.choices, ["payments", "shop"]);
        assert!(
            first.text.contains("the usual one") && first.text.contains("`payments`, `shop`"),
            "{}",
            first.text
        );
        assert!(
            !clarified.iter().any(|q| q.text == asked.text),
            "the question itself is not asked again: {clarified:#?}"
        );

        // The answer to the clarification could not be read either: no second clarification.
        state.context.open_questions = vec![first.clone()];
        state.answers[0].question = first.clone();
        let again = questions(&state);
        assert!(!again.iter().any(|q| q.clarifies), "{again:#?}");
        assert!(!again.iter().any(|q| q.text == first.text));
    }
}
