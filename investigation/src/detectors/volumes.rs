//! Storage that does not come: a claim's volume that cannot be provisioned (a missing
//! StorageClass, a provisioner's error, from events), a PersistentVolume in phase Failed, a
//! claim stuck Pending or Lost (from their objects); each corroborated by the warning events
//! that name it. And storage that runs out: a volume the alert says is filling.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ProvisioningFailed`] | cause | a ProvisioningFailed event, or the named StorageClass does not exist |
//! | [`VolumeFailed`] | cause | the PersistentVolume's phase is Failed |
//! | [`ClaimPending`] | symptom; cause when Lost | the claim is Lost |
//! | [`VolumeFilling`] | symptom | the alert names the claim, a pod mounts it, and the kubelet's free-bytes series for it falls |
//!
//! A filling volume (the alert names its claim and a pod of the round mounts it) says how fast
//! it fills and when it is full at that rate, from the kubelet's free bytes over the recent
//! hours (a least-squares line through the last [`RECENT_HOURS`]); it leads to that series and,
//! when a pod that mounts it runs a database, to the database's own growth series (read by
//! `investigate/leads/stores.rs`), so what fills it can be named (`slots.rs`).
//!
//! What explains what: a provisioning failure explains its claim staying Pending; either
//! explains a pod unschedulable on an unbound claim; a failed volume explains its claim Lost
//! and the pods that cannot mount it.

use std::sync::LazyLock;

use firstline_model::text::prefix;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Lead;
use super::series::{self, Item, QuotedSeries, format_bytes};
use super::text::{cite_values, event_naming, matching_line, quote_line};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite,
};
use crate::evidence::{Capability, Evidence};
use crate::kube;

static STORAGE_CLASS_MISSING: LazyLock<Regex> =
    regex!(r#"storageclass\.storage\.k8s\.io \\?"([^"\\]+)\\?" not found"#);
static PROVISIONING: LazyLock<Regex> = regex!(
    r"(?i)\bProvisioningFailed\b|failed to provision volume|no persistent volumes available for this claim and no storage class is set|\bFailedBinding\b"
);

const STORAGE: &[Symptom] = &[Symptom::Storage, Symptom::Unavailable, Symptom::Restarts];

/// A claim's volume that cannot be provisioned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProvisioningFailed {
    pub claim: Option<String>,
    /// The StorageClass the claim names, when it does not exist.
    pub missing_class: Option<String>,
    /// What the provisioner reports, told once.
    pub reported: Option<String>,
}

impl Payload for ProvisioningFailed {
    const SPEC: KindSpec = KindSpec {
        name: "volume-provisioning",
        role: Role::Cause,
        verified_when: "a ProvisioningFailed event, or the claim's StorageClass does not exist",
        accounts_for: STORAGE,
    };

    fn example() -> Self {
        Self {
            claim: Some("data-0".into()),
            missing_class: Some("fast-ssd".into()),
            reported: None,
        }
    }

    fn title(&self) -> String {
        match &self.missing_class {
            Some(class) => {
                format!("StorageClass `{class}` does not exist: the claim cannot be provisioned")
            }
            None => "Volume provisioning failing".to_string(),
        }
    }

    fn detail(&self) -> String {
        match &self.missing_class {
            Some(class) => format!(
                "The claim asks for StorageClass `{class}`, which does not exist, so no volume \
                 is provisioned and the pod that mounts it stays Pending."
            ),
            None => format!(
                "The volume provisioner reports a failure for the claim{}; the pod that mounts \
                 it stays Pending.",
                self.reported
                    .as_deref()
                    .map(|r| format!(": {r}"))
                    .unwrap_or_default()
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Claim, self.claim.as_deref())
    }

    fn step(&self, scene: &Scene) -> String {
        match &self.missing_class {
            Some(class) => format!(
                "Create StorageClass `{class}` or point the claim at an existing class \
                 (`kubectl get storageclass`); the pod starts once its claim binds. Adding nodes \
                 does not help."
            ),
            None => format!(
                "Read the provisioner's error (`kubectl -n {} describe pvc`) and fix the storage \
                 backend or class it names.",
                scene.namespace
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        let ours = |claim: &Option<String>| self.claim.is_some() && *claim == self.claim;
        match &effect.fact {
            Fact::ClaimPending(c) => ours(&c.claim),
            Fact::Unschedulable(u) => u.waits_for_claim(),
            Fact::WarningEvent(w) => w.reason == "ProvisioningFailed" && ours(&w.object),
            _ => false,
        }
    }
}

/// A PersistentVolume in phase Failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeFailed {
    pub volume: String,
    /// The claim bound to it.
    pub claim: Option<String>,
    /// Its status message.
    pub message: Option<String>,
    /// What the events naming it report, told once.
    pub reported: Option<String>,
}

impl VolumeFailed {
    /// Whether a message names this volume or its claim.
    fn named_in(&self, message: &str) -> bool {
        message.contains(&self.volume) || self.claim.as_deref().is_some_and(|c| message.contains(c))
    }
}

impl Payload for VolumeFailed {
    const SPEC: KindSpec = KindSpec {
        name: "volume-failed",
        role: Role::Cause,
        verified_when: "the PersistentVolume's phase is Failed",
        accounts_for: STORAGE,
    };

    fn example() -> Self {
        Self {
            volume: "pvc-2e9a6c4b".into(),
            claim: Some("data-feature-store-0".into()),
            message: None,
            reported: Some("volume vol-0c8f3e2b does not exist".into()),
        }
    }

    fn title(&self) -> String {
        let why = self
            .reported
            .as_deref()
            .or(self.message.as_deref())
            .map(|w| format!(": {}", prefix(w, 160)))
            .unwrap_or_default();
        format!("PersistentVolume `{}` has failed{why}", self.volume)
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "PersistentVolume `{}`{} is in phase Failed{}: pods cannot mount it.",
            self.volume,
            self.claim
                .as_deref()
                .map(|c| format!(" (bound to claim `{c}`)"))
                .unwrap_or_default(),
            self.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        );
        if let Some(reported) = &self.reported {
            detail.push_str(&format!(" Kubernetes reports: {reported}"));
        }
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(
            ObjectKind::Claim,
            self.claim.clone().unwrap_or_else(|| self.volume.clone()),
        ))
    }

    fn step(&self, _scene: &Scene) -> String {
        format!(
            "Restore the volume behind `{}` (the backing disk is gone or broken) from a \
             snapshot or backup, or recreate the claim; pods that mount it cannot start until \
             then.",
            self.claim.as_deref().unwrap_or(&self.volume)
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::ClaimPending(c) => self.claim.is_some() && c.claim == self.claim,
            Fact::WarningEvent(w) => {
                w.object.as_deref() == Some(self.volume.as_str())
                    || (matches!(w.reason.as_str(), "FailedMount" | "FailedAttachVolume")
                        && w.message.as_deref().is_some_and(|m| self.named_in(m)))
            }
            Fact::ConfigError(c) => match &c.problem {
                super::config::ConfigProblem::Mount { volume, says } => {
                    volume.as_deref() == Some(self.volume.as_str()) || self.named_in(says)
                }
                _ => false,
            },
            _ => false,
        }
    }
}

/// A claim stuck Pending (the provisioning events say why) or Lost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClaimPending {
    pub claim: Option<String>,
    /// `Pending` or `Lost`.
    pub phase: String,
    pub class: Option<String>,
}

impl Payload for ClaimPending {
    const SPEC: KindSpec = KindSpec {
        name: "volume-claim",
        role: Role::Symptom,
        verified_when: "the claim is Lost (Pending only shows that it does not bind)",
        accounts_for: STORAGE,
    };

    fn example() -> Self {
        Self {
            claim: Some("data-0".into()),
            phase: "Pending".into(),
            class: Some("standard".into()),
        }
    }

    fn title(&self) -> String {
        format!(
            "Volume claim `{}` is {}",
            self.claim.as_deref().unwrap_or("?"),
            self.phase
        )
    }

    fn detail(&self) -> String {
        format!(
            "PersistentVolumeClaim `{}` is {}{}: a pod that mounts it cannot start.",
            self.claim.as_deref().unwrap_or("?"),
            self.phase,
            self.class
                .as_deref()
                .map(|c| format!(" (storage class `{c}`)"))
                .unwrap_or_default()
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Claim, self.claim.as_deref())
    }

    fn role(&self) -> Role {
        if self.phase == "Lost" {
            Role::Cause
        } else {
            Role::Symptom
        }
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "See why the claim does not bind: `kubectl -n {} describe pvc {}` (its events name \
             the provisioner's error).",
            scene.namespace,
            self.claim.as_deref().unwrap_or("<claim>")
        )
    }

    fn explains(&self, effect: &Finding) -> bool {
        matches!(&effect.fact, Fact::Unschedulable(u) if u.waits_for_claim())
    }
}

/// Hours of the free-bytes series the current rate is read over.
pub const RECENT_HOURS: f64 = 6.0;
/// The kubelet's free bytes of a volume, per claim.
pub const FREE_BYTES: &str = "kubelet_volume_stats_available_bytes";

/// A volume the alert says is filling, with how fast it fills once its free bytes are read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolumeFilling {
    pub claim: String,
    pub namespace: Option<String>,
    /// The pods of the round that mount it.
    pub pods: Vec<String>,
    /// A pod that mounts it and runs a database (its image, or its exporter's series).
    pub database_pod: Option<String>,
    /// Free bytes at the last point of the kubelet's series.
    pub free_bytes: Option<f64>,
    /// Bytes lost per hour over the last [`RECENT_HOURS`] (a least-squares line).
    pub loss_per_hour: Option<f64>,
    /// Hours until the line reaches zero free bytes, when it falls.
    pub hours_to_full: Option<f64>,
    /// When the alert started: the growth its lead reads is read up to then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<chrono::DateTime<chrono::Utc>>,
}

impl VolumeFilling {
    /// "full in about 14 hours at the current rate (2.1 GB/h)", when it falls.
    pub fn full_in(&self) -> Option<String> {
        let hours = self.hours_to_full?;
        let rate = self.loss_per_hour?;
        let when = if hours < 1.5 {
            format!("{:.0} minutes", (hours * 60.0).max(1.0))
        } else {
            format!("{:.0} hours", hours)
        };
        Some(format!(
            "full in about {when} at the current rate ({}/h)",
            format_bytes(rate)
        ))
    }
}

impl Payload for VolumeFilling {
    const SPEC: KindSpec = KindSpec {
        name: "volume-filling",
        role: Role::Symptom,
        verified_when: "the alert names the claim, a pod mounts it, and the kubelet's free bytes \
                        for it fall",
        accounts_for: &[Symptom::Storage],
    };

    fn example() -> Self {
        Self {
            claim: "data-orders-db-0".into(),
            namespace: Some("orders".into()),
            pods: vec!["orders-db-0".into()],
            database_pod: Some("orders-db-0".into()),
            free_bytes: Some(29.3e9),
            loss_per_hour: Some(2.06e9),
            hours_to_full: Some(14.2),
            at: None,
        }
    }

    fn title(&self) -> String {
        match (self.full_in(), self.free_bytes) {
            (Some(full_in), Some(free)) => format!(
                "Volume `{}` is filling: {} free, {full_in}",
                self.claim,
                format_bytes(free)
            ),
            _ => format!("Volume `{}` is filling", self.claim),
        }
    }

    fn detail(&self) -> String {
        let mounted = match self.pods.as_slice() {
            [] => String::new(),
            pods => format!(
                " Mounted by pod {}.",
                pods.iter()
                    .map(|p| format!("`{p}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        match self.full_in() {
            Some(full_in) => format!(
                "Claim `{}` loses free space steadily: at its rate over the last {RECENT_HOURS:.0} \
                 hours it is {full_in}.{mounted}",
                self.claim
            ),
            None => format!(
                "The alert says claim `{}` is filling; how fast is read from the kubelet's free \
                 bytes.{mounted}",
                self.claim
            ),
        }
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Claim, self.claim.clone()))
    }

    fn merge_from(&mut self, other: &Self) {
        for pod in &other.pods {
            if !self.pods.contains(pod) {
                self.pods.push(pod.clone());
            }
        }
        self.database_pod = self.database_pod.take().or(other.database_pod.clone());
        if self.hours_to_full.is_none() {
            self.free_bytes = other.free_bytes;
            self.loss_per_hour = other.loss_per_hour;
            self.hours_to_full = other.hours_to_full;
        }
    }

    fn step(&self, _scene: &Scene) -> String {
        let ns = super::text::namespace_flag(self.namespace.as_deref());
        let look = match self.pods.first() {
            Some(pod) => format!(" (`kubectl exec{ns} {pod} -- df -h` shows where it grows)"),
            None => String::new(),
        };
        format!(
            "Find what grows on claim `{}`{look}, and expand the claim if it must hold more{}.",
            self.claim,
            self.full_in()
                .map(|f| format!(" before it is {f}"))
                .unwrap_or_default()
        )
    }

    fn leads(&self) -> Vec<Lead> {
        match &self.namespace {
            Some(namespace) => vec![Lead::VolumeGrowth {
                namespace: namespace.clone(),
                claim: self.claim.clone(),
                database_pod: self.database_pod.clone(),
                at: self.at,
            }],
            None => Vec::new(),
        }
    }
}

/// The kubelet's free-bytes series of `claim` (in `namespace`, when it says), with its item.
pub fn free_series<'a>(
    items: &'a [Item<'a>],
    namespace: Option<&str>,
    claim: &str,
) -> Option<(&'a Evidence, &'a QuotedSeries<'a>)> {
    series::all_series(items)
        .filter(|(item, _, s)| {
            let labels = &s.series.labels;
            let named = match labels.get("__name__") {
                Some(name) => name == FREE_BYTES,
                None => item
                    .evidence
                    .string_arg(&["query", "expr", "promql"])
                    .is_some_and(|q| q.trim_start().starts_with(FREE_BYTES)),
            };
            named
                && labels.get("persistentvolumeclaim").map(String::as_str) == Some(claim)
                && namespace
                    .is_none_or(|ns| labels.get("namespace").is_none_or(|n| n.as_str() == ns))
        })
        .max_by_key(|(_, _, s)| s.series.points.len())
        .map(|(item, _, s)| (item.evidence, s))
}

/// Bytes lost per hour over the last `hours` of a free-bytes series (a least-squares line),
/// and the index where that span starts. `None` with fewer than two points in it.
pub fn loss_per_hour(points: &[(f64, f64)], hours: f64) -> Option<(f64, usize)> {
    let &(last, _) = points.last()?;
    let from = points
        .iter()
        .position(|(t, _)| *t >= last - hours * 3600.0)?;
    let span = &points[from..];
    if span.len() < 2 {
        return None;
    }
    let n = span.len() as f64;
    let mean_t = span.iter().map(|(t, _)| t).sum::<f64>() / n;
    let mean_v = span.iter().map(|(_, v)| v).sum::<f64>() / n;
    let (mut num, mut den) = (0.0, 0.0);
    for (t, v) in span {
        num += (t - mean_t) * (v - mean_v);
        den += (t - mean_t) * (t - mean_t);
    }
    if den <= 0.0 {
        return None;
    }
    Some((-(num / den) * 3600.0, from))
}

/// Whether a pod runs a database whose growth can be read: a Postgres image (not its
/// exporter's), or postgres_exporter series naming the pod.
pub fn runs_database(pod: &Value, name: &str, items: &[Item<'_>]) -> bool {
    let image = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| kube::str_at(c, "/image"))
        .any(kube::is_postgres_image);
    image
        || series::all_series(items).any(|(_, _, s)| {
            let labels = &s.series.labels;
            labels.get("pod").map(String::as_str) == Some(name)
                && labels.get("__name__").is_some_and(|n| n.starts_with("pg_"))
        })
}

/// The volume the alert says is filling, as the pods that mount it and the kubelet's free bytes
/// show it.
fn filling(round: &Round<'_>) -> Option<Finding> {
    let claim = round.ctx.alert_claim.as_deref()?;
    if round.ctx.symptom != Symptom::Storage {
        return None;
    }
    let items = series::items(round.evidence);
    let mut pods: Vec<String> = Vec::new();
    let mut database_pod: Option<String> = None;
    let mut namespace: Option<String> = None;
    let mut refs = Vec::new();
    for (evidence, pod) in round.pods() {
        let Some(name) = kube::str_at(pod, "/metadata/name") else {
            continue;
        };
        let elsewhere = round.ctx.alert_namespace.as_deref().is_some_and(|ns| {
            kube::str_at(pod, "/metadata/namespace").is_some_and(|pod_ns| pod_ns != ns)
        });
        if elsewhere {
            continue;
        }
        let mounts = kube::claims_of(pod).contains(&claim);
        if !mounts
            || pods.iter().any(|p| p == name)
            || matches!(
                kube::str_at(pod, "/status/phase"),
                Some("Failed" | "Succeeded")
            )
        {
            continue;
        }
        pods.push(name.to_string());
        namespace = namespace.or(kube::str_at(pod, "/metadata/namespace").map(str::to_string));
        if database_pod.is_none() && runs_database(pod, name, &items) {
            database_pod = Some(name.to_string());
        }
        if refs.is_empty()
            && let Some(quote) = super::text::line_with(evidence, &format!("claimName: {claim}"))
        {
            refs.push(cite(evidence, quote));
        }
    }
    if pods.is_empty() || refs.is_empty() {
        return None;
    }
    let mut payload = VolumeFilling {
        claim: claim.to_string(),
        namespace: namespace.clone(),
        pods,
        database_pod,
        free_bytes: None,
        loss_per_hour: None,
        hours_to_full: None,
        at: round.ctx.alert_start,
    };
    let mut verified = false;
    if let Some((evidence, free)) = free_series(&items, namespace.as_deref(), claim)
        && let Some(&(_, last)) = free.series.points.last()
        && let Some((loss, from)) = loss_per_hour(&free.series.points, RECENT_HOURS)
        && loss > 0.0
    {
        payload.free_bytes = Some(last);
        payload.loss_per_hour = Some(loss);
        payload.hours_to_full = Some(last / loss);
        verified = true;
        refs.extend(series::quotes(
            evidence,
            free,
            &[from, free.series.points.len() - 1],
        ));
    }
    Some(Finding::new(payload, Confidence::Medium, verified).citing(refs))
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let claims = round.objects("PersistentVolumeClaim");
    let volumes = round.objects("PersistentVolume");
    let mut out: Vec<Finding> = claims
        .iter()
        .filter_map(|(evidence, object)| claim(evidence, object))
        .chain(
            volumes
                .iter()
                .filter_map(|(evidence, object)| volume(round, evidence, object)),
        )
        .collect();
    for (evidence, ctx) in round.structural() {
        if evidence.capability == Capability::Events {
            out.extend(provisioning(evidence, ctx.default_resource.as_deref()));
        }
    }
    out.extend(filling(round));
    out
}

fn claim(evidence: &Evidence, object: &Value) -> Option<Finding> {
    let name = kube::str_at(object, "/metadata/name");
    let phase = kube::str_at(object, "/status/phase").unwrap_or("");
    if !matches!(phase, "Pending" | "Lost") {
        return None;
    }
    let class = kube::str_at(object, "/spec/storageClassName");
    let mut f = Finding::new(
        ClaimPending {
            claim: name.map(str::to_string),
            phase: phase.to_string(),
            class: class.map(str::to_string),
        },
        Confidence::Medium,
        phase == "Lost",
    );
    cite_values(&mut f, evidence, &[&format!("phase: {phase}"), phase]);
    if let Some(class) = class {
        cite_values(&mut f, evidence, &[class]);
    }
    (!f.refs.is_empty()).then_some(f)
}

fn volume(round: &Round<'_>, evidence: &Evidence, object: &Value) -> Option<Finding> {
    let name = kube::str_at(object, "/metadata/name")?;
    if kube::str_at(object, "/status/phase") != Some("Failed") {
        return None;
    }
    let message = kube::str_at(object, "/status/message");
    let claim = kube::str_at(object, "/spec/claimRef/name");
    let names: Vec<&str> = [Some(name), claim].into_iter().flatten().collect();
    let reported = event_naming(round.evidence, &names);
    let mut f = Finding::new(
        VolumeFailed {
            volume: name.to_string(),
            claim: claim.map(str::to_string),
            message: message.map(str::to_string),
            reported: reported.as_ref().map(|(_, _, gist)| gist.clone()),
        },
        Confidence::High,
        true,
    );
    cite_values(
        &mut f,
        evidence,
        &[message.unwrap_or(""), "phase: Failed", "Failed"],
    );
    if let Some((event, line, _)) = reported {
        let citation = cite(event, quote_line(line));
        if !f.refs.contains(&citation) {
            f.refs.insert(1.min(f.refs.len()), citation);
        }
    }
    (!f.refs.is_empty()).then_some(f)
}

/// Volume provisioning failures in events: a missing StorageClass, a provisioner error.
fn provisioning(evidence: &Evidence, claim: Option<&str>) -> Option<Finding> {
    let lines: Vec<&str> = evidence.excerpt.lines().collect();
    let index = matching_line(&lines, &STORAGE_CLASS_MISSING)
        .or_else(|| matching_line(&lines, &PROVISIONING))?;
    let line = lines[index];
    let missing_class = STORAGE_CLASS_MISSING
        .captures(line)
        .map(|c| c[1].to_string());
    let verified = missing_class.is_some() || line.contains("ProvisioningFailed");
    let reported = missing_class
        .is_none()
        .then(|| super::text::error_chain_gist(line.trim()));
    Some(
        Finding::new(
            ProvisioningFailed {
                claim: claim.map(str::to_string),
                missing_class,
                reported,
            },
            Confidence::High,
            verified,
        )
        .citing(vec![cite(evidence, quote_line(line))]),
    )
}

#[cfg(test)]
mod tests;
