//! Storage: PersistentVolumeClaims, PersistentVolumes and StorageClasses, as listed (the lab
//! provisions nothing: a Bound claim names its volume, which is served only if listed too).

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{insert_some, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{PersistentVolumeClaimSpec, PersistentVolumeSpec, StorageClassSpec};

fn created(world: &World) -> String {
    rfc3339(world.scenario.alert_at - Duration::days(30))
}

/// The PersistentVolumeClaim object.
pub(crate) fn claim_object(world: &World, claim: &PersistentVolumeClaimSpec) -> Value {
    let uid = uid("PersistentVolumeClaim", &claim.namespace, &claim.name);
    let phase = claim.phase.as_deref().unwrap_or("Bound");
    let modes = if claim.access_modes.is_empty() {
        vec!["ReadWriteOnce".to_string()]
    } else {
        claim.access_modes.clone()
    };
    let mut spec = Map::new();
    spec.insert("accessModes".into(), json!(modes));
    spec.insert("volumeMode".into(), json!("Filesystem"));
    insert_some(&mut spec, "storageClassName", claim.storage_class.as_ref());
    if let Some(size) = &claim.requested {
        spec.insert("resources".into(), json!({"requests": {"storage": size}}));
    }
    let mut status = Map::new();
    status.insert("phase".into(), json!(phase));
    if phase == "Bound" {
        let volume = claim.volume.clone().unwrap_or_else(|| format!("pvc-{uid}"));
        spec.insert("volumeName".into(), json!(volume));
        status.insert("accessModes".into(), json!(modes));
        if let Some(size) = claim.capacity.as_ref().or(claim.requested.as_ref()) {
            status.insert("capacity".into(), json!({"storage": size}));
        }
    } else {
        insert_some(&mut spec, "volumeName", claim.volume.as_ref());
    }
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {
            "name": claim.name,
            "namespace": claim.namespace,
            "uid": uid,
            "creationTimestamp": created(world),
        },
        "spec": spec,
        "status": status,
    })
}

/// The PersistentVolume object.
pub(crate) fn volume_object(world: &World, volume: &PersistentVolumeSpec) -> Value {
    let mut spec = Map::new();
    spec.insert("accessModes".into(), json!(["ReadWriteOnce"]));
    spec.insert("persistentVolumeReclaimPolicy".into(), json!("Delete"));
    spec.insert("volumeMode".into(), json!("Filesystem"));
    insert_some(&mut spec, "storageClassName", volume.storage_class.as_ref());
    if let Some(size) = &volume.capacity {
        spec.insert("capacity".into(), json!({"storage": size}));
    }
    if let Some(claim) = &volume.claim {
        spec.insert(
            "claimRef".into(),
            json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "namespace": claim.namespace, "name": claim.name,
                "uid": uid("PersistentVolumeClaim", &claim.namespace, &claim.name),
            }),
        );
    }
    let phase = volume.phase.clone().unwrap_or_else(|| {
        if volume.claim.is_some() {
            "Bound"
        } else {
            "Available"
        }
        .into()
    });
    let mut status = Map::new();
    status.insert("phase".into(), json!(phase));
    insert_some(&mut status, "reason", volume.reason.as_ref());
    insert_some(&mut status, "message", volume.message.as_ref());
    json!({
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": volume.name,
            "uid": uid("PersistentVolume", "", &volume.name),
            "creationTimestamp": created(world),
        },
        "spec": spec,
        "status": status,
    })
}

/// The StorageClass object.
pub(crate) fn storage_class_object(world: &World, class: &StorageClassSpec) -> Value {
    let mut metadata = json!({
        "name": class.name,
        "uid": uid("StorageClass", "", &class.name),
        "creationTimestamp": created(world),
    });
    if class.default {
        metadata["annotations"] = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    }
    let mut object = json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": metadata,
        "provisioner": class.provisioner,
        "reclaimPolicy": "Delete",
        "volumeBindingMode": class.volume_binding_mode.as_deref().unwrap_or("Immediate"),
    });
    if class.allow_volume_expansion {
        object["allowVolumeExpansion"] = json!(true);
    }
    object
}
