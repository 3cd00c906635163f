//! Storage that does not come: a claim's volume that cannot be provisioned (a missing
//! StorageClass, a provisioner's error, from events), a PersistentVolume in phase Failed, a
//! claim stuck Pending or Lost (from their objects); each corroborated by the warning events
//! that name it.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ProvisioningFailed`] | cause | a ProvisioningFailed event, or the named StorageClass does not exist |
//! | [`VolumeFailed`] | cause | the PersistentVolume's phase is Failed |
//! | [`ClaimPending`] | symptom; cause when Lost | the claim is Lost |
//!
//! What explains what: a provisioning failure explains its claim staying Pending; either
//! explains a pod unschedulable on an unbound claim; a failed volume explains its claim Lost
//! and the pods that cannot mount it.

use std::sync::LazyLock;

use firstline_model::text::prefix;
use regex::Regex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

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
