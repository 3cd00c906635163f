//! Storage: PersistentVolumeClaims, PersistentVolumes, StorageClasses and VolumeAttachments,
//! as listed (the lab provisions and attaches nothing: a Bound claim names its volume, which is
//! served only if listed too).

use chrono::Duration;
use serde_json::{Map, Value, json};

use super::{insert_some, rfc3339, uid};
use crate::render::world::World;
use crate::scenario::{
    PersistentVolumeClaimSpec, PersistentVolumeSpec, StorageClassSpec, VolumeAttachmentSpec,
    VolumeErrorSpec,
};

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

/// A VolumeAttachment's name: its own, else `csi-` and 64 hex digits made up from the volume,
/// attacher and node (the attach/detach controller names it by their SHA-256).
fn attachment_name(attachment: &VolumeAttachmentSpec) -> String {
    if let Some(name) = &attachment.name {
        return name.clone();
    }
    let seed = format!(
        "{}{}{}",
        attachment.persistent_volume, attachment.attacher, attachment.node
    );
    let hex: String = (0u8..4)
        .map(|round| {
            let h = seed
                .bytes()
                .chain([round])
                .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                    (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
                });
            format!("{h:016x}")
        })
        .collect();
    format!("csi-{hex}")
}

/// A `VolumeError` (`attachError`, `detachError`): its message and time (default: the alert).
fn volume_error(world: &World, error: &VolumeErrorSpec) -> Value {
    json!({
        "message": error.message,
        "time": rfc3339(world.time_or(error.at, Duration::zero())),
    })
}

/// The VolumeAttachment object: created when its pod was (an hour before the alert by
/// default), or by its attach error, whichever is earlier.
pub(crate) fn attachment_object(world: &World, attachment: &VolumeAttachmentSpec) -> Value {
    let name = attachment_name(attachment);
    let created = attachment
        .attach_error
        .as_ref()
        .map(|e| world.time_or(e.at, Duration::zero()))
        .into_iter()
        .chain([world.scenario.alert_at - Duration::hours(1)])
        .min()
        .unwrap_or(world.scenario.alert_at);
    let mut status = Map::new();
    status.insert("attached".into(), json!(attachment.attached));
    if let Some(error) = &attachment.attach_error {
        status.insert("attachError".into(), volume_error(world, error));
    }
    if let Some(error) = &attachment.detach_error {
        status.insert("detachError".into(), volume_error(world, error));
    }
    json!({
        "apiVersion": "storage.k8s.io/v1",
        "kind": "VolumeAttachment",
        "metadata": {
            "name": name,
            "uid": uid("VolumeAttachment", "", &name),
            "creationTimestamp": rfc3339(created),
        },
        "spec": {
            "attacher": attachment.attacher,
            "nodeName": attachment.node,
            "source": {"persistentVolumeName": attachment.persistent_volume},
        },
        "status": status,
    })
}
