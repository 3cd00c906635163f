//! Every kind the lab serves: its apiVersion, kind, REST resource (plural), scope, and how to
//! build its objects from the world. `resources_list` / `resources_get` find kinds here by
//! apiVersion and kind, the fake Kubernetes API by group/version and resource, and discovery
//! lists them per group.

use serde_json::Value;

use super::autoscaling::hpa_object;
use super::batch::{cronjob_object, job_object};
use super::config::{config_map_object, quota_object};
use super::deployments::{deployment_object, replica_sets};
use super::disruption::budget_object;
use super::events::events;
use super::ingress::ingress_object;
use super::network::{endpoints_object, service_object};
use super::network_policy::network_policy_object;
use super::nodes::{namespace_object, nodes};
use super::pods::pod_object;
use super::revisions::controller_revisions;
use super::storage::{attachment_object, claim_object, storage_class_object, volume_object};
use super::workloads::{daemonset_object, statefulset_object};
use crate::render::world::World;

/// A served kind.
pub struct Kind {
    pub api_version: &'static str,
    pub kind: &'static str,
    /// The REST resource, e.g. `deployments`.
    pub plural: &'static str,
    pub namespaced: bool,
    /// Every object of the kind, in scenario order, as built from the world (see
    /// [`Kind::build`] for them as served).
    pub objects: fn(&World) -> Vec<Value>,
}

impl Kind {
    /// Every object of the kind as served: built, with its resourceVersion and the annotations
    /// clients applied (events keep their own).
    pub fn build(&self, world: &World) -> Vec<Value> {
        let mut objects = (self.objects)(world);
        if self.kind != "Event" {
            for object in &mut objects {
                super::stamp(world, self.kind, object);
            }
        }
        objects
    }

    /// The API group (`apps`; empty for the core group).
    pub fn group(&self) -> &'static str {
        self.api_version
            .split_once('/')
            .map_or("", |(group, _)| group)
    }

    /// `deployments.apps`, `pods`: how Kubernetes names the resource in errors.
    pub fn qualified(&self) -> String {
        match self.api_version.split_once('/') {
            Some((group, _)) => format!("{}.{group}", self.plural),
            None => self.plural.to_string(),
        }
    }
}

fn map<T>(items: &[T], build: impl Fn(&T) -> Value) -> Vec<Value> {
    items.iter().map(build).collect()
}

/// The kinds, core first, then by group.
pub const KINDS: &[Kind] = &[
    Kind {
        api_version: "v1",
        kind: "Pod",
        plural: "pods",
        namespaced: true,
        objects: |w| map(&w.spec.pods, |p| pod_object(w, p)),
    },
    Kind {
        api_version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        objects: events,
    },
    Kind {
        api_version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
        objects: |w| w.namespaces().iter().map(|n| namespace_object(n)).collect(),
    },
    Kind {
        api_version: "v1",
        kind: "Node",
        plural: "nodes",
        namespaced: false,
        objects: nodes,
    },
    Kind {
        api_version: "v1",
        kind: "Service",
        plural: "services",
        namespaced: true,
        objects: |w| map(&w.spec.services, |s| service_object(w, s)),
    },
    Kind {
        api_version: "v1",
        kind: "Endpoints",
        plural: "endpoints",
        namespaced: true,
        objects: |w| {
            w.spec
                .services
                .iter()
                .filter_map(|s| endpoints_object(w, s))
                .collect()
        },
    },
    Kind {
        api_version: "v1",
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        namespaced: true,
        objects: |w| map(&w.spec.persistentvolumeclaims, |c| claim_object(w, c)),
    },
    Kind {
        api_version: "v1",
        kind: "PersistentVolume",
        plural: "persistentvolumes",
        namespaced: false,
        objects: |w| map(&w.spec.persistentvolumes, |v| volume_object(w, v)),
    },
    Kind {
        api_version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
        objects: |w| map(&w.spec.configmaps, |c| config_map_object(w, c)),
    },
    Kind {
        api_version: "v1",
        kind: "ResourceQuota",
        plural: "resourcequotas",
        namespaced: true,
        objects: |w| map(&w.spec.resourcequotas, |q| quota_object(w, q)),
    },
    Kind {
        api_version: "apps/v1",
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
        objects: |w| map(&w.spec.deployments, |d| deployment_object(w, d)),
    },
    Kind {
        api_version: "apps/v1",
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
        objects: |w| {
            w.spec
                .deployments
                .iter()
                .flat_map(|d| replica_sets(w, d))
                .collect()
        },
    },
    Kind {
        api_version: "apps/v1",
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
        objects: |w| map(&w.spec.statefulsets, |s| statefulset_object(w, s)),
    },
    Kind {
        api_version: "apps/v1",
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        namespaced: true,
        objects: |w| {
            w.spec
                .statefulsets
                .iter()
                .flat_map(|s| controller_revisions(w, s))
                .collect()
        },
    },
    Kind {
        api_version: "apps/v1",
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
        objects: |w| map(&w.spec.daemonsets, |d| daemonset_object(w, d)),
    },
    Kind {
        api_version: "batch/v1",
        kind: "Job",
        plural: "jobs",
        namespaced: true,
        objects: |w| map(&w.spec.jobs, |j| job_object(w, j)),
    },
    Kind {
        api_version: "batch/v1",
        kind: "CronJob",
        plural: "cronjobs",
        namespaced: true,
        objects: |w| map(&w.spec.cronjobs, |c| cronjob_object(w, c)),
    },
    Kind {
        api_version: "autoscaling/v2",
        kind: "HorizontalPodAutoscaler",
        plural: "horizontalpodautoscalers",
        namespaced: true,
        objects: |w| map(&w.spec.horizontalpodautoscalers, |h| hpa_object(w, h)),
    },
    Kind {
        api_version: "networking.k8s.io/v1",
        kind: "Ingress",
        plural: "ingresses",
        namespaced: true,
        objects: |w| map(&w.spec.ingresses, |i| ingress_object(w, i)),
    },
    Kind {
        api_version: "networking.k8s.io/v1",
        kind: "NetworkPolicy",
        plural: "networkpolicies",
        namespaced: true,
        objects: |w| map(&w.spec.networkpolicies, |p| network_policy_object(w, p)),
    },
    Kind {
        api_version: "policy/v1",
        kind: "PodDisruptionBudget",
        plural: "poddisruptionbudgets",
        namespaced: true,
        objects: |w| map(&w.spec.poddisruptionbudgets, |b| budget_object(w, b)),
    },
    Kind {
        api_version: "storage.k8s.io/v1",
        kind: "StorageClass",
        plural: "storageclasses",
        namespaced: false,
        objects: |w| map(&w.spec.storageclasses, |c| storage_class_object(w, c)),
    },
    Kind {
        api_version: "storage.k8s.io/v1",
        kind: "VolumeAttachment",
        plural: "volumeattachments",
        namespaced: false,
        objects: |w| map(&w.spec.volumeattachments, |a| attachment_object(w, a)),
    },
];

/// The kind served under `apiVersion` and `kind` (as `resources_get` names it).
pub fn by_kind(api_version: &str, kind: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.api_version == api_version && k.kind == kind)
}

/// The kind served at `/api[s]/<group/version>/<plural>`.
pub fn by_resource(group_version: &str, plural: &str) -> Option<&'static Kind> {
    KINDS
        .iter()
        .find(|k| k.api_version == group_version && k.plural == plural)
}

/// The served group/versions other than core `v1`, in discovery order.
pub fn group_versions() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for kind in KINDS.iter().filter(|k| k.api_version.contains('/')) {
        if !out.contains(&kind.api_version) {
            out.push(kind.api_version);
        }
    }
    out
}
