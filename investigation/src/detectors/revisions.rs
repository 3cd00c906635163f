//! "What did the last rollout change?" — a workload's newest revision beside the one before
//! it, field by field, read from its rollout history: a Deployment's ReplicaSets (each holding
//! the pod template of one revision under `deployment.kubernetes.io/revision`), a StatefulSet's
//! ControllerRevisions (`revision`, the template under `data.spec.template`).
//!
//! Per container (and init container): image, command, args, env (values and `valueFrom`
//! references), envFrom, ports, the readiness, liveness and startup probes, resources, volume
//! mounts and securityContext; per pod: volumes, securityContext, nodeSelector, tolerations and the service
//! account. Labels are not compared: the `pod-template-hash` differs between any two revisions
//! and says nothing about what changed.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`RevisionDiff`] | context | never a cause: a diff says what changed, not what broke |
//!
//! A diff is made only for a revision deployed inside the alert window (a
//! [`super::changes::Rollout`] of it is in the round), shown beside that deploy so the report
//! names what the rollout changed, for a revision whose pods the round shows failing (a
//! rollout stuck on new pods that never become ready, started before the window), or for one
//! whose pods an earlier part found a cause on (a trend that began with the revision: throttled
//! against the limit it set). What explains
//! what: nothing, so the diff never changes which cause heads the report.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::text::quote_line;
use super::{
    Citation, Confidence, Finding, Kind, KindSpec, ObjectKind, Payload, Role, Round, Scene,
    Subject, cite,
};
use crate::evidence::{Capability, Evidence};
use crate::kube;

/// What the newest revision of a Deployment changed in its pod template.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RevisionDiff {
    /// The workload (a Deployment's name, or a StatefulSet's).
    pub deployment: String,
    /// Its kind: `Deployment` or `StatefulSet`.
    #[serde(default = "deployment_kind")]
    pub workload_kind: String,
    pub revision: u64,
    pub previous: u64,
    /// The first container's image in each revision.
    pub image: Option<String>,
    pub previous_image: Option<String>,
    /// When the newest revision's ReplicaSet was created.
    pub at: Option<DateTime<Utc>>,
    pub changes: Vec<FieldChange>,
}

fn deployment_kind() -> String {
    "Deployment".to_string()
}

/// One field of the pod template that differs: `readinessProbe.httpGet.path`, its value in the
/// previous revision and in the newest (absent: `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FieldChange {
    pub field: String,
    pub old: Option<String>,
    pub new: Option<String>,
}

/// Longest value a change shows; a long command line or env value is cut.
const MAX_VALUE_CHARS: usize = 40;
/// Changes a title names before "and N more".
const TITLE_CHANGES: usize = 3;
/// Changes a detail names.
const DETAIL_CHANGES: usize = 12;
/// Citations one diff carries: both revisions, then the first changes' values.
const MAX_REFS: usize = 6;

const CONTAINER_FIELDS: &[&str] = &[
    "image",
    "command",
    "args",
    "env",
    "envFrom",
    "ports",
    "readinessProbe",
    "livenessProbe",
    "startupProbe",
    "resources",
    "volumeMounts",
    "securityContext",
];
const POD_FIELDS: &[&str] = &[
    "volumes",
    "securityContext",
    "nodeSelector",
    "tolerations",
    "serviceAccountName",
];

impl FieldChange {
    /// `image 2.4.0→2.4.1`, `env.DEBUG added: true`, `volumeMounts.cache removed`.
    fn describe(&self) -> String {
        let field = &self.field;
        match (self.old.as_deref(), self.new.as_deref()) {
            (Some(old), Some(new)) if field.ends_with("image") => {
                let (old, new) = versions(old, new);
                format!("{field} {old}→{new}")
            }
            (Some(old), Some(new)) => format!("{field} {}→{}", short(old), short(new)),
            // A keyed entry with nothing but its key (a port, an envFrom source) is its key.
            (None, Some(new)) if field.ends_with(new) => format!("{field} added"),
            (None, Some(new)) => format!("{field} added: {}", short(new)),
            (Some(old), None) if field.ends_with(old) => format!("{field} removed"),
            (Some(old), None) => format!("{field} removed (was {})", short(old)),
            (None, None) => field.clone(),
        }
    }
}

/// Two images as the change reads best: their tags when only the tag differs.
fn versions<'a>(old: &'a str, new: &'a str) -> (String, String) {
    match (version(old), version(new)) {
        (Some((repo_a, a)), Some((repo_b, b))) if repo_a == repo_b => (short(a), short(b)),
        _ => (short(old), short(new)),
    }
}

/// An image's repository and tag (or digest): `registry/api:1.3` → (`registry/api`, `1.3`).
fn version(image: &str) -> Option<(&str, &str)> {
    if let Some((repo, digest)) = image.split_once('@') {
        return Some((repo, digest));
    }
    image.rsplit_once(':').filter(|(_, tag)| !tag.contains('/'))
}

fn short(value: &str) -> String {
    if value.chars().count() <= MAX_VALUE_CHARS {
        value.to_string()
    } else {
        let cut: String = value.chars().take(MAX_VALUE_CHARS - 1).collect();
        format!("{cut}…")
    }
}

impl RevisionDiff {
    fn changes_listed(&self, max: usize) -> String {
        let mut listed: Vec<String> = self
            .changes
            .iter()
            .take(max)
            .map(FieldChange::describe)
            .collect();
        if self.changes.len() > max {
            listed.push(format!("and {} more", self.changes.len() - max));
        }
        listed.join(", ")
    }
}

/// ` (`registry/api:1.3`)`, or nothing.
fn image_note(image: Option<&str>) -> String {
    image.map(|i| format!(" (`{i}`)")).unwrap_or_default()
}

impl Payload for RevisionDiff {
    const SPEC: KindSpec = KindSpec {
        name: "revision-diff",
        role: Role::Context,
        verified_when: "never a cause: a diff of two revisions says what changed, not what broke",
        accounts_for: &[],
    };

    fn example() -> Self {
        Self {
            deployment: "shipment-tracker".into(),
            workload_kind: deployment_kind(),
            revision: 2,
            previous: 1,
            image: Some("registry/shipment-tracker:3.5.0".into()),
            previous_image: Some("registry/shipment-tracker:3.4.2".into()),
            at: Some(DateTime::<Utc>::UNIX_EPOCH),
            changes: vec![
                FieldChange {
                    field: "image".into(),
                    old: Some("registry/shipment-tracker:3.4.2".into()),
                    new: Some("registry/shipment-tracker:3.5.0".into()),
                },
                FieldChange {
                    field: "readinessProbe.httpGet.path".into(),
                    old: Some("/manage/health".into()),
                    new: Some("/actuator/health/readiness".into()),
                },
            ],
        }
    }

    fn title(&self) -> String {
        format!(
            "Revision {} of `{}` changed from revision {}: {}",
            self.revision,
            self.deployment,
            self.previous,
            self.changes_listed(TITLE_CHANGES)
        )
    }

    fn detail(&self) -> String {
        let created = self
            .at
            .map(|at| format!(", created {} UTC,", at.format("%Y-%m-%d %H:%M")))
            .unwrap_or_default();
        format!(
            "Revision {}{} of `{}`{created} differs from revision {}{} in its pod template: {}. \
             A diff says what the rollout changed, not what broke.",
            self.revision,
            image_note(self.image.as_deref()),
            self.deployment,
            self.previous,
            image_note(self.previous_image.as_deref()),
            self.changes_listed(DETAIL_CHANGES)
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Workload, self.deployment.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.deployment == other.deployment && self.revision == other.revision
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Check whether what revision {} of `{}` changed ({}) fits the failure: `kubectl -n {} \
             rollout history {}/{} --revision={}` shows its whole template.",
            self.revision,
            self.deployment,
            self.changes_listed(2),
            scene.namespace,
            self.workload_kind.to_ascii_lowercase(),
            self.deployment,
            self.revision
        )
    }
}

/// One revision of a workload: a Deployment's ReplicaSet or a StatefulSet's ControllerRevision,
/// with its pod template and the text it was read from.
struct Revision<'a> {
    /// The workload it is a revision of.
    deployment: String,
    /// `Deployment` or `StatefulSet`.
    kind: &'static str,
    number: u64,
    template: &'a Value,
    /// The label its pods carry and its value: `pod-template-hash` (a ReplicaSet's), or
    /// `controller-revision-hash` (a ControllerRevision's name).
    pod_label: Option<(&'static str, &'a str)>,
    created: Option<DateTime<Utc>>,
    text: &'a str,
}

fn number(value: &Value) -> Option<u64> {
    match value {
        Value::String(s) => s.trim().parse().ok(),
        Value::Number(n) => n.as_u64(),
        _ => None,
    }
}

impl<'a> Revision<'a> {
    fn read(text: &'a str, object: &'a Value) -> Option<Self> {
        let created = kube::str_at(object, "/metadata/creationTimestamp")
            .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
            .map(|t| t.with_timezone(&Utc));
        match kube::str_at(object, "/kind")? {
            "ReplicaSet" => {
                let revision =
                    object.pointer("/metadata/annotations/deployment.kubernetes.io~1revision")?;
                let deployment = kube::owner_of(object, "Deployment")
                    .map(str::to_string)
                    .or_else(|| {
                        kube::str_at(object, "/metadata/name").and_then(kube::deployment_of_name)
                    })?;
                Some(Self {
                    deployment,
                    kind: "Deployment",
                    number: number(revision)?,
                    template: object.pointer("/spec/template/spec")?,
                    pod_label: kube::str_at(object, "/metadata/labels/pod-template-hash")
                        .map(|hash| ("pod-template-hash", hash)),
                    created,
                    text,
                })
            }
            "ControllerRevision" => Some(Self {
                deployment: kube::owner_of(object, "StatefulSet")?.to_string(),
                kind: "StatefulSet",
                number: number(object.get("revision")?)?,
                template: object.pointer("/data/spec/template/spec")?,
                pod_label: kube::str_at(object, "/metadata/name")
                    .map(|name| ("controller-revision-hash", name)),
                created,
                text,
            }),
            _ => None,
        }
    }

    /// The first container's image.
    fn image(&self) -> Option<String> {
        kube::str_at(self.template, "/containers/0/image").map(str::to_string)
    }

    /// The line of its record that holds its revision number (a ReplicaSet's annotation, a
    /// ControllerRevision's `revision`).
    fn revision_line(&self) -> Option<&'a str> {
        let key = match self.kind {
            "Deployment" => "deployment.kubernetes.io/revision",
            _ => "revision",
        };
        self.text.lines().find(|l| {
            let Some((name, value)) = l.trim_start().trim_start_matches("- ").split_once(':')
            else {
                return false;
            };
            name.trim().trim_matches('"') == key
                && value.trim().trim_matches(|c| matches!(c, '"' | '\'' | ','))
                    == self.number.to_string()
        })
    }

    /// Whether `pod` runs this revision.
    fn runs(&self, pod: &Value) -> bool {
        self.pod_label.is_some_and(|(key, value)| {
            pod.pointer("/metadata/labels")
                .and_then(|labels| labels.get(key))
                .and_then(Value::as_str)
                == Some(value)
        })
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    let histories = round
        .of(Capability::DeployHistory)
        .chain(round.of(Capability::ObjectList));
    for item in histories {
        let records = records(&item.excerpt);
        let revisions: Vec<Revision<'_>> = records
            .iter()
            .filter_map(|(text, object)| Revision::read(text, object))
            .collect();
        let mut deployments: Vec<&str> = Vec::new();
        for r in &revisions {
            if !deployments.contains(&r.deployment.as_str()) {
                deployments.push(&r.deployment);
            }
        }
        for deployment in &deployments {
            let mut own: Vec<&Revision<'_>> = revisions
                .iter()
                .filter(|r| r.deployment == *deployment)
                .collect();
            own.sort_by_key(|r| std::cmp::Reverse(r.number));
            let [newest, previous, ..] = own.as_slice() else {
                continue;
            };
            if newest.number == previous.number
                || !(deployed(round, deployment, newest)
                    || failing(round, newest)
                    || cause_on(round, deployment, newest))
                || out.iter().any(|f| {
                    matches!(&f.fact, super::Fact::RevisionDiff(d)
                        if d.deployment == *deployment && d.revision == newest.number)
                })
            {
                continue;
            }
            let changes = diff(previous.template, newest.template);
            if changes.is_empty() {
                continue;
            }
            let refs = citations(item, newest, previous, &changes);
            if refs.is_empty() {
                continue;
            }
            let finding = RevisionDiff {
                deployment: deployment.to_string(),
                workload_kind: newest.kind.to_string(),
                revision: newest.number,
                previous: previous.number,
                image: newest.image(),
                previous_image: previous.image(),
                at: newest.created,
                changes,
            };
            // Never a cause, whatever it shows: what changed is for the reader to weigh. A new
            // image alone is what the deploy already names, so it ranks after the round's other
            // observations (a report lists few) instead of pushing one out.
            let image_only = finding.changes.iter().all(|c| c.field.ends_with("image"));
            let confidence = if image_only {
                Confidence::Low
            } else {
                Confidence::Medium
            };
            out.push(
                Finding::new(finding, confidence, false)
                    .dated(newest.created)
                    .citing(refs),
            );
        }
    }
    out
}

/// Whether the newest revision is a deploy inside the alert window (`changes` runs first and
/// dates a deploy by its ReplicaSet's creation): a diff is told beside that deploy, never on its
/// own — a history that changed nothing in the window is no news.
fn deployed(round: &Round<'_>, deployment: &str, newest: &Revision<'_>) -> bool {
    round.found_of(Kind::Rollout).any(|f| match &f.fact {
        super::Fact::Rollout(r) => {
            Some(r.at) == newest.created && r.deployment.as_deref().is_none_or(|d| d == deployment)
        }
        _ => false,
    })
}

/// Whether a pod the round describes runs this revision and fails (crash loop, not ready, an
/// OOM kill in the last hours, …).
fn failing(round: &Round<'_>, revision: &Revision<'_>) -> bool {
    round.pods().into_iter().any(|(evidence, pod)| {
        let now = round.ctx.alert_start.unwrap_or(evidence.fetched_at);
        revision.runs(pod)
            && kube::pod_from_object(pod)
                .is_some_and(|info| super::siblings::failing_now(&info, Some(pod), now).is_some())
    })
}

/// Whether an earlier part found a cause on a pod of this revision (a container throttled
/// against the limit the revision set, memory growing since it started): a trend that began
/// with a revision, deployed before the window, names what that revision changed. A pod is the
/// revision's by its label when the round read it, or (a Deployment's) by its name.
fn cause_on(round: &Round<'_>, deployment: &str, revision: &Revision<'_>) -> bool {
    let prefix = revision
        .pod_label
        .filter(|(key, _)| *key == "pod-template-hash")
        .map(|(_, hash)| format!("{deployment}-{hash}-"));
    let labelled: Vec<&str> = round
        .pods()
        .into_iter()
        .filter(|(_, pod)| revision.runs(pod))
        .filter_map(|(_, pod)| kube::str_at(pod, "/metadata/name"))
        .collect();
    round.found.iter().any(|f| {
        f.role() == Role::Cause
            && f.subject().is_some_and(|s| {
                s.kind == ObjectKind::Pod
                    && (labelled.contains(&s.name.as_str())
                        || prefix.as_deref().is_some_and(|p| s.name.starts_with(p)))
            })
    })
}

/// The revisions' annotation lines, then for the first changes the lines holding their new and
/// old values, each from its own revision's record.
fn citations(
    item: &Evidence,
    newest: &Revision<'_>,
    previous: &Revision<'_>,
    changes: &[FieldChange],
) -> Vec<Citation> {
    let mut quotes: Vec<String> = [newest.revision_line(), previous.revision_line()]
        .into_iter()
        .flatten()
        .map(quote_line)
        .collect();
    for change in changes {
        for (value, revision) in [(&change.new, newest), (&change.old, previous)] {
            let line = value
                .as_deref()
                .and_then(|v| value_line(revision.text, &change.field, v));
            if let Some(quote) = line.map(quote_line)
                && !quote.is_empty()
                && !quotes.contains(&quote)
            {
                quotes.push(quote);
            }
        }
    }
    quotes.truncate(MAX_REFS);
    quotes.into_iter().map(|q| cite(item, q)).collect()
}

/// The line of `text` holding a field's scalar value, preferring one that names the field's
/// last key (`path: /health` over another line holding `/health`). Compound values (a list
/// rendered whole) are not looked for: no single line holds them.
fn value_line<'a>(text: &'a str, field: &str, value: &str) -> Option<&'a str> {
    if value.is_empty() || value.starts_with(['[', '{']) {
        return None;
    }
    let key = field.rsplit(['.', ' ']).next().unwrap_or(field);
    let holding = || text.lines().filter(|l| l.contains(value));
    holding()
        .find(|l| l.contains(key))
        .or_else(|| holding().next())
}

/// The fields of two pod templates that differ, containers first (in the newest revision's
/// order, then those it dropped), then the pod's own fields.
fn diff(old: &Value, new: &Value) -> Vec<FieldChange> {
    let mut changes = Vec::new();
    for (list, label) in [
        ("initContainers", "init container"),
        ("containers", "container"),
    ] {
        let old_containers = named(old.get(list));
        let new_containers = named(new.get(list));
        // With one container there is nothing to tell apart: its fields go unprefixed.
        let prefixed =
            list == "initContainers" || old_containers.len().max(new_containers.len()) > 1;
        let mut names: Vec<&str> = new_containers.iter().map(|(n, _)| *n).collect();
        names.extend(
            old_containers
                .iter()
                .map(|(n, _)| *n)
                .filter(|n| !new_containers.iter().any(|(m, _)| m == n)),
        );
        for name in names {
            let (before, after) = (
                container(&old_containers, name),
                container(&new_containers, name),
            );
            let prefix = if prefixed {
                format!("{label} `{name}` ")
            } else {
                String::new()
            };
            match (before, after) {
                (Some(before), Some(after)) => {
                    for field in CONTAINER_FIELDS {
                        compare(
                            &format!("{prefix}{field}"),
                            before.get(*field),
                            after.get(*field),
                            &mut changes,
                        );
                    }
                }
                (before, after) => changes.push(FieldChange {
                    field: format!("{label} `{name}`"),
                    old: before.map(|c| kube::str_at(c, "/image").unwrap_or("present").to_string()),
                    new: after.map(|c| kube::str_at(c, "/image").unwrap_or("present").to_string()),
                }),
            }
        }
    }
    for field in POD_FIELDS {
        compare(field, old.get(*field), new.get(*field), &mut changes);
    }
    changes
}

/// The containers of a list, by name.
fn named(list: Option<&Value>) -> Vec<(&str, &Value)> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| Some((kube::str_at(c, "/name")?, c)))
        .collect()
}

fn container<'a>(set: &[(&str, &'a Value)], name: &str) -> Option<&'a Value> {
    set.iter().find(|(n, _)| *n == name).map(|(_, c)| *c)
}

/// The leaves of one field in both revisions, compared: each that differs is a change.
fn compare(field: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<FieldChange>) {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    if let Some(old) = old {
        leaves(field, old, &mut before);
    }
    if let Some(new) = new {
        leaves(field, new, &mut after);
    }
    let value = |set: &[(String, String)], path: &str| {
        set.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone())
    };
    let mut paths: Vec<&String> = after.iter().map(|(p, _)| p).collect();
    paths.extend(
        before
            .iter()
            .map(|(p, _)| p)
            .filter(|p| !after.iter().any(|(q, _)| q == *p)),
    );
    for path in paths {
        let (old, new) = (value(&before, path), value(&after, path));
        if old != new {
            out.push(FieldChange {
                field: path.clone(),
                old,
                new,
            });
        }
    }
}

/// A value as `(path, scalar)` leaves. A list of entries with a key of their own (env vars and
/// volumes by name, tolerations by key, ports by name or number) is keyed by it, so a reordered
/// list is no change and one changed entry is one change; another list is one leaf.
fn leaves(path: &str, value: &Value, out: &mut Vec<(String, String)>) {
    match value {
        Value::Null => {}
        Value::Object(map) => {
            for (key, v) in map {
                leaves(&format!("{path}.{key}"), v, out);
            }
        }
        Value::Array(items) if items.is_empty() => {}
        Value::Array(items) => match keyed(items) {
            Some(entries) => {
                for (key, rest) in entries {
                    let at = format!("{path}.{key}");
                    let before = out.len();
                    leaves(&at, &rest, out);
                    if out.len() == before {
                        out.push((at, key));
                    }
                }
            }
            None => out.push((path.to_string(), compact(value))),
        },
        scalar => out.push((path.to_string(), compact(scalar))),
    }
}

/// Entries keyed by the first of `name`, `key`, `mountPath`, `containerPort` every entry has
/// (unique), each without its key; an env var's `{value: …}` is its value. An entry that is
/// one reference (`envFrom: [{secretRef: {name: s}}]`) is keyed by it (`secretRef:s`).
fn keyed(items: &[Value]) -> Option<Vec<(String, Value)>> {
    let objects: Vec<&serde_json::Map<String, Value>> =
        items.iter().map(Value::as_object).collect::<Option<_>>()?;
    let reference = |o: &serde_json::Map<String, Value>| {
        let (kind, inner) = o.iter().next().filter(|_| o.len() == 1)?;
        Some(format!("{kind}:{}", kube::str_at(inner, "/name")?))
    };
    let entries: Vec<(String, Value)> = ["name", "key", "mountPath", "containerPort"]
        .iter()
        .find_map(|k| {
            objects
                .iter()
                .map(|o| {
                    let key = o.get(*k).filter(|v| !v.is_object() && !v.is_array())?;
                    let mut rest = (*o).clone();
                    rest.remove(*k);
                    let rest = match rest.get("value") {
                        Some(v) if rest.len() == 1 => v.clone(),
                        _ => Value::Object(rest),
                    };
                    Some((compact(key), rest))
                })
                .collect::<Option<Vec<_>>>()
        })
        .or_else(|| {
            objects
                .iter()
                .map(|o| Some((reference(o)?, Value::Null)))
                .collect()
        })?;
    let mut keys: Vec<&String> = entries.iter().map(|(k, _)| k).collect();
    keys.sort();
    keys.dedup();
    (keys.len() == entries.len()).then_some(entries)
}

/// A value in one short line: scalars as they read, lists `[a, b]`, maps `{k: v}`.
fn compact(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Array(items) => format!(
            "[{}]",
            items.iter().map(compact).collect::<Vec<_>>().join(", ")
        ),
        Value::Object(map) => format!(
            "{{{}}}",
            map.iter()
                .map(|(k, v)| format!("{k}: {}", compact(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The objects of a tool's answer, each with the slice of the answer it was read from: the
/// items of its outermost YAML list and its `---` documents one by one, so an item the excerpt
/// elided (`… [14 lines omitted] …`) is dropped while the intact ones are still read; otherwise
/// (JSON, one object) every object with the whole text. `siblings` reads pod lists with it.
pub(super) fn records(text: &str) -> Vec<(&str, Value)> {
    let indent = |l: &str| l.len() - l.trim_start().len();
    let elided = |l: &str| l.contains("… [") && l.contains(" omitted]");
    let lines: Vec<&str> = text.lines().collect();
    // The outermost list: its first item is preceded by nothing deeper (a nested list, such as
    // one object's `containers`, is not split).
    let item_indent = lines
        .iter()
        .position(|l| l.trim_start().starts_with("- "))
        .map(|first| (first, indent(lines[first])))
        .filter(|&(first, depth)| {
            lines[..first].iter().all(|l| {
                l.trim().is_empty() || l.trim_start().starts_with('#') || indent(l) < depth
            })
        })
        .map(|(_, depth)| depth);
    let documents = lines.iter().any(|l| l.trim() == "---");
    // Each item runs until the next, a separator, or a line as shallow that is neither (a
    // list's trailer such as `kind: List`); an elision marker stays inside the item it cut.
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut open = (item_indent.is_none() && documents).then_some(0);
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let separator = body.trim() == "---";
        let item =
            item_indent.is_some_and(|i| indent(body) == i && body.trim_start().starts_with("- "));
        let shallow = item_indent
            .is_some_and(|i| !body.trim().is_empty() && indent(body) <= i && !elided(body));
        if (separator || item || shallow)
            && let Some(start) = open.take()
        {
            spans.push((start, offset));
        }
        if item {
            open = Some(offset);
        } else if separator {
            open = Some(offset + line.len());
        }
        offset += line.len();
    }
    if let Some(start) = open {
        spans.push((start, text.len()));
    }
    let items: Vec<(&str, Value)> = spans
        .into_iter()
        .map(|(start, end)| &text[start..end])
        // An item cut mid-way is skipped, unless the cut is a YAML comment (an object
        // excerpt keeps the lines that open what it keeps, so the item still parses).
        .filter(|item| {
            !item
                .lines()
                .any(|l| elided(l) && !l.trim_start().starts_with('#'))
        })
        .flat_map(|item| kube::objects(item).into_iter().map(move |o| (item, o)))
        .collect();
    if !items.is_empty() {
        return items;
    }
    kube::objects(text).into_iter().map(|o| (text, o)).collect()
}

#[cfg(test)]
mod tests;
