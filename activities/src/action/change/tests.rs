use super::*;
use firstline_model::WorkloadKind;

fn deployment(revision: &str, image: &str, resource_version: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "checkout", "namespace": "shop", "uid": "d-1", "generation": 9,
                     "resourceVersion": resource_version,
                     "annotations": {"deployment.kubernetes.io/revision": revision},
                     "managedFields": [{"manager": "kubectl"}]},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "checkout"}},
                 "template": {"metadata": {"labels": {"app": "checkout"}},
                              "spec": {"containers": [{"name": "app", "image": image}]}}},
        "status": {"readyReplicas": 1}
    })
}

fn replica_set(revision: &str, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": format!("checkout-{revision}"), "namespace": "shop",
                     "annotations": {"deployment.kubernetes.io/revision": revision},
                     "ownerReferences": [{"kind": "Deployment", "name": "checkout", "controller": true}]},
        "spec": {"template": {"metadata": {"labels": {"app": "checkout", "pod-template-hash": format!("h{revision}")}},
                              "spec": {"containers": [{"name": "app", "image": image}]}}}
    })
}

fn rollback() -> Action {
    Action::Rollback {
        namespace: "shop".into(),
        deployment: "checkout".into(),
        from_revision: 7,
        to_revision: 6,
    }
}

#[test]
fn a_rollback_writes_the_earlier_template_at_the_version_read_and_shows_the_diff() {
    let read = Read {
        object: deployment("7", "shop/checkout:1.9.0", "4711"),
        replica_sets: vec![
            replica_set("6", "shop/checkout:1.8.2"),
            replica_set("7", "shop/checkout:1.9.0"),
        ],
    };
    let change = plan(&rollback(), &read, "fl-3-1", "2026-12-04T10:00:00Z").expect("a change");
    assert_eq!(change.tool, "resources_create_or_update");
    assert_eq!(change.resource_version.as_deref(), Some("4711"));
    assert_eq!(change.selector.as_deref(), Some("app=checkout"));
    assert_eq!(
        change.fields[0],
        FieldChange {
            field: "spec.template.spec.containers[app].image".into(),
            before: "shop/checkout:1.9.0".into(),
            after: "shop/checkout:1.8.2".into(),
        }
    );
    let sent: Value = serde_json::from_str(
        change.arguments["resource"]
            .as_str()
            .expect("the resource is a string"),
    )
    .expect("JSON");
    assert_eq!(sent["metadata"]["resourceVersion"], "4711");
    assert_eq!(sent["metadata"]["annotations"][ACTION_ANNOTATION], "fl-3-1");
    assert_eq!(
        sent["spec"]["template"]["spec"]["containers"][0]["image"],
        "shop/checkout:1.8.2"
    );
    assert!(sent.get("status").is_none());
    assert!(sent["metadata"].get("managedFields").is_none());
    assert!(
        sent["spec"]["template"]["metadata"]["labels"]
            .get("pod-template-hash")
            .is_none()
    );
}

#[test]
fn a_rollback_is_refused_when_another_revision_runs_or_the_target_is_gone() {
    let moved = Read {
        object: deployment("8", "shop/checkout:2.0.0", "4800"),
        replica_sets: vec![replica_set("6", "shop/checkout:1.8.2")],
    };
    let err = plan(&rollback(), &moved, "k", "t").unwrap_err();
    assert!(matches!(err, ChangeError::Moved { .. }), "{err}");
    assert!(err.to_string().contains("runs revision 8, not 7"), "{err}");
    let gone = Read {
        object: deployment("7", "shop/checkout:1.9.0", "4711"),
        replica_sets: vec![replica_set("7", "shop/checkout:1.9.0")],
    };
    let err = plan(&rollback(), &gone, "k", "t").unwrap_err();
    assert!(
        err.to_string().contains("no ReplicaSet of revision 6"),
        "{err}"
    );
}

#[test]
fn the_hash_binds_the_exact_write_which_is_never_stored() {
    let read = Read {
        object: deployment("7", "shop/checkout:1.9.0", "4711"),
        replica_sets: vec![replica_set("6", "shop/checkout:1.8.2")],
    };
    let change = plan(&rollback(), &read, "fl-3-1", "t").expect("a change");
    assert_eq!(change.hash.len(), 64);
    let again = plan(&rollback(), &read, "fl-3-1", "t").expect("a change");
    assert_eq!(
        again.hash, change.hash,
        "the same read gives the same write"
    );
    let stored = serde_json::to_value(&change).expect("json");
    assert!(
        stored.get("arguments").is_none(),
        "the write itself is never stored"
    );
    let stored: Change = serde_json::from_value(stored).expect("back");
    assert_eq!(stored.hash, change.hash);
    let elsewhere = Read {
        object: deployment("7", "shop/checkout:1.9.0", "4712"),
        ..read
    };
    let other = plan(&rollback(), &elsewhere, "fl-3-1", "t").expect("a change");
    assert_ne!(other.hash, change.hash, "another resourceVersion");
}

#[test]
fn execution_tells_applied_from_moved_on() {
    let read = Read {
        object: deployment("7", "shop/checkout:1.9.0", "4711"),
        replica_sets: vec![replica_set("6", "shop/checkout:1.8.2")],
    };
    let change = plan(&rollback(), &read, "fl-3-1", "t").expect("a change");
    let unchanged = deployment("7", "shop/checkout:1.9.0", "4711");
    assert!(!already_applied(&change, &rollback(), Some(&unchanged)));
    assert_eq!(moved_on(&change, Some(&unchanged)), None);

    let mut applied = deployment("8", "shop/checkout:1.8.2", "4790");
    applied["metadata"]["annotations"][ACTION_ANNOTATION] = json!("fl-3-1");
    assert!(already_applied(&change, &rollback(), Some(&applied)));

    let someone_else = deployment("8", "shop/checkout:2.0.0", "4790");
    assert!(!already_applied(&change, &rollback(), Some(&someone_else)));
    let why = moved_on(&change, Some(&someone_else)).expect("moved on");
    assert!(why.contains("resourceVersion 4711 → 4790"), "{why}");
    assert!(
        moved_on(&change, None)
            .expect("gone")
            .contains("no longer exists")
    );
}

#[test]
fn scale_cronjob_cordon_and_pod_deletion() {
    let scale = Action::Scale {
        namespace: "shop".into(),
        kind: WorkloadKind::Deployment,
        name: "checkout".into(),
        from: 3,
        to: 6,
    };
    let read = Read {
        object: deployment("7", "i", "1"),
        ..Read::default()
    };
    let change = plan(&scale, &read, "k", "t").expect("scale");
    assert_eq!(change.tool, "resources_scale");
    assert_eq!(change.arguments["scale"], 6);
    // As execution reads it back from the row: without its arguments.
    let change: Change =
        serde_json::from_value(serde_json::to_value(&change).expect("json")).expect("back");
    let mut scaled = deployment("7", "i", "2");
    scaled["spec"]["replicas"] = json!(6);
    assert!(already_applied(&change, &scale, Some(&scaled)));
    let mut other = deployment("7", "i", "2");
    other["spec"]["replicas"] = json!(1);
    assert!(
        moved_on(&change, Some(&other))
            .expect("moved")
            .contains("1 replicas now")
    );

    let resume = Action::SuspendCronJob {
        namespace: "shop".into(),
        name: "export".into(),
        suspend: false,
    };
    let cronjob = json!({"apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": "export", "namespace": "shop", "resourceVersion": "5"},
        "spec": {"suspend": true, "schedule": "*/5 * * * *"}});
    let change = plan(
        &resume,
        &Read {
            object: cronjob.clone(),
            ..Read::default()
        },
        "k",
        "t",
    )
    .expect("resume");
    assert_eq!(change.fields[0].field, "spec.suspend");
    let mut running = cronjob;
    running["spec"]["suspend"] = json!(false);
    let err = plan(
        &resume,
        &Read {
            object: running,
            ..Read::default()
        },
        "k",
        "t",
    )
    .unwrap_err();
    assert!(err.to_string().contains("already false"), "{err}");

    let cordon = Action::Cordon {
        node: "worker-3".into(),
        cordon: true,
    };
    let node = json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "worker-3", "resourceVersion": "77"}, "spec": {}});
    let change = plan(
        &cordon,
        &Read {
            object: node,
            ..Read::default()
        },
        "k",
        "t",
    )
    .expect("cordon");
    assert!(
        change.arguments["resource"]
            .as_str()
            .is_some_and(|r| r.contains("\"unschedulable\":true"))
    );

    let delete = Action::DeletePod {
        namespace: "shop".into(),
        name: "checkout-7-abc".into(),
    };
    let orphan = json!({"metadata": {"name": "checkout-7-abc", "uid": "p1"}});
    let err = plan(
        &delete,
        &Read {
            object: orphan,
            ..Read::default()
        },
        "k",
        "t",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains("nothing would replace it"),
        "{err}"
    );
    let owned = json!({"metadata": {"name": "checkout-7-abc", "uid": "p1",
        "ownerReferences": [{"kind": "ReplicaSet", "name": "checkout-7", "controller": true}]},
        "status": {"phase": "Running"}});
    let change = plan(
        &delete,
        &Read {
            object: owned.clone(),
            ..Read::default()
        },
        "k",
        "t",
    )
    .expect("delete");
    assert!(!already_applied(&change, &delete, Some(&owned)));
    assert!(already_applied(&change, &delete, None), "gone");
    let replaced = json!({"metadata": {"name": "checkout-7-abc", "uid": "p2"}});
    assert!(
        already_applied(&change, &delete, Some(&replaced)),
        "another pod"
    );
}
