//! The scenario's world indexed once per answer: who owns each pod, each deployment revision's
//! ReplicaSet hash, pod IPs (stated or derived from the name, unique: `pod_ips`), the nodes
//! and namespaces that exist. Every object builder reads the world through this, so the Pod,
//! its ReplicaSet, the Service's Endpoints and the fake Kubernetes API agree on names, hashes,
//! labels and addresses.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Duration, Utc};

use super::objects::k8s_hash;
use super::pod_ips;
use crate::reltime::RelTime;
use crate::scenario::{DeploymentSpec, PodSpec, Scenario, ScenarioSpec};

/// The controller that owns a pod.
#[derive(Debug, Clone, Copy)]
pub enum PodOwner<'a> {
    /// One revision's ReplicaSet of a Deployment (1-based revision).
    Revision {
        deployment: &'a DeploymentSpec,
        revision: usize,
    },
    /// A StatefulSet, DaemonSet, Job, or a ReplicaSet no deployment revision names.
    Controller { kind: &'a str, name: &'a str },
}

/// A scenario with what is derived from all of it at once.
pub struct World<'a> {
    pub scenario: &'a Scenario,
    pub spec: &'a ScenarioSpec,
    /// Pod index → its IP (scheduled pods only).
    pod_ips: BTreeMap<usize, String>,
}

impl<'a> World<'a> {
    pub fn new(scenario: &'a Scenario) -> Self {
        let pod_ips = pod_ips::assign(&scenario.spec.pods)
            .into_iter()
            .map(|(i, ip)| (i, ip.to_string()))
            .collect();
        Self {
            scenario,
            spec: &scenario.spec,
            pod_ips,
        }
    }

    /// A time of the world, relative to the alert.
    pub fn time(&self, at: RelTime) -> DateTime<Utc> {
        self.scenario.time(at)
    }

    /// A time, or the alert time offset by `default` when none is given.
    pub fn time_or(&self, at: Option<RelTime>, default: Duration) -> DateTime<Utc> {
        self.time(at.unwrap_or(RelTime::Offset(default)))
    }

    /// When a pod was created (default an hour before the alert).
    pub fn pod_created(&self, pod: &PodSpec) -> DateTime<Utc> {
        self.time_or(pod.created, Duration::hours(-1))
    }

    /// The pod's IP, if it is scheduled.
    pub fn pod_ip(&self, pod: &PodSpec) -> Option<&str> {
        let index = self.spec.pods.iter().position(|p| std::ptr::eq(p, pod))?;
        self.pod_ips.get(&index).map(String::as_str)
    }

    /// The deployment a pod names, in its namespace.
    pub fn deployment(&self, namespace: &str, name: &str) -> Option<&'a DeploymentSpec> {
        self.spec
            .deployments
            .iter()
            .find(|d| d.name == name && d.namespace == namespace)
    }

    /// The pod's controller: its deployment's revision, or its `owner`.
    pub fn owner(&self, pod: &'a PodSpec) -> Option<PodOwner<'a>> {
        if let Some(deployment) = pod
            .deployment
            .as_deref()
            .and_then(|name| self.deployment(&pod.namespace, name))
        {
            return Some(PodOwner::Revision {
                deployment,
                revision: pod.revision.unwrap_or(deployment.revisions.len()),
            });
        }
        let owner = pod.owner.as_ref()?;
        if owner.kind == "ReplicaSet" {
            // A ReplicaSet named like a deployment's revision is that revision.
            for deployment in self
                .spec
                .deployments
                .iter()
                .filter(|d| d.namespace == pod.namespace)
            {
                for revision in 1..=deployment.revisions.len() {
                    if self.replica_set_name(deployment, revision) == owner.name {
                        return Some(PodOwner::Revision {
                            deployment,
                            revision,
                        });
                    }
                }
            }
        }
        Some(PodOwner::Controller {
            kind: &owner.kind,
            name: &owner.name,
        })
    }

    /// A revision's `pod-template-hash`: the one a write fixed, else the one its pods' labels
    /// give, else made up from the deployment's name and the revision.
    pub fn template_hash(&self, deployment: &DeploymentSpec, revision: usize) -> String {
        if let Some(hash) = revision
            .checked_sub(1)
            .and_then(|i| deployment.revisions.get(i))
            .and_then(|r| r.hash.clone())
        {
            return hash;
        }
        let latest = deployment.revisions.len();
        self.spec
            .pods
            .iter()
            .filter(|p| {
                p.namespace == deployment.namespace
                    && p.deployment.as_deref() == Some(deployment.name.as_str())
                    && p.revision.unwrap_or(latest) == revision
            })
            .find_map(|p| p.labels.get("pod-template-hash").cloned())
            .unwrap_or_else(|| k8s_hash(&format!("{}/{}", deployment.name, revision), 10))
    }

    /// `<deployment>-<pod-template-hash>`.
    pub fn replica_set_name(&self, deployment: &DeploymentSpec, revision: usize) -> String {
        format!(
            "{}-{}",
            deployment.name,
            self.template_hash(deployment, revision)
        )
    }

    /// The pods owned by a controller (`Deployment` means any of its revisions).
    pub fn pods_of(&self, kind: &str, namespace: &str, name: &str) -> Vec<&'a PodSpec> {
        self.spec
            .pods
            .iter()
            .filter(|p| p.namespace == namespace)
            .filter(|p| match self.owner(p) {
                Some(PodOwner::Revision { deployment, .. }) => {
                    kind == "Deployment" && deployment.name == name
                }
                Some(PodOwner::Controller { kind: k, name: n }) => k == kind && n == name,
                None => false,
            })
            .collect()
    }

    /// The pods of one deployment revision.
    pub fn pods_of_revision(
        &self,
        deployment: &DeploymentSpec,
        revision: usize,
    ) -> Vec<&'a PodSpec> {
        self.pods_of("Deployment", &deployment.namespace, &deployment.name)
            .into_iter()
            .filter(|p| {
                matches!(self.owner(p), Some(PodOwner::Revision { revision: r, .. }) if r == revision)
            })
            .collect()
    }

    /// Listed nodes, then nodes only pods or VolumeAttachments name, each once.
    pub fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.spec.nodes.iter().map(|n| n.name.clone()).collect();
        let named = self.spec.pods.iter().filter_map(|p| p.node.as_ref());
        for node in named.chain(self.spec.volumeattachments.iter().map(|v| &v.node)) {
            if !names.contains(node) {
                names.push(node.clone());
            }
        }
        names
    }

    /// Every namespace something lives in, plus `default` and `kube-system`, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let spec = self.spec;
        let mut all: BTreeSet<String> = ["default", "kube-system"].map(String::from).into();
        let named = spec
            .pods
            .iter()
            .map(|p| &p.namespace)
            .chain(spec.deployments.iter().map(|d| &d.namespace))
            .chain(spec.statefulsets.iter().map(|s| &s.namespace))
            .chain(spec.daemonsets.iter().map(|d| &d.namespace))
            .chain(spec.jobs.iter().map(|j| &j.namespace))
            .chain(spec.cronjobs.iter().map(|c| &c.namespace))
            .chain(spec.services.iter().map(|s| &s.namespace))
            .chain(spec.persistentvolumeclaims.iter().map(|c| &c.namespace))
            .chain(spec.horizontalpodautoscalers.iter().map(|h| &h.namespace))
            .chain(spec.resourcequotas.iter().map(|q| &q.namespace))
            .chain(spec.configmaps.iter().map(|c| &c.namespace))
            .chain(spec.ingresses.iter().map(|i| &i.namespace))
            .chain(spec.networkpolicies.iter().map(|p| &p.namespace))
            .chain(spec.poddisruptionbudgets.iter().map(|b| &b.namespace));
        all.extend(named.cloned());
        all.extend(spec.events.iter().map(|e| e.namespace()));
        all.into_iter().collect()
    }
}
