//! The kinds added to the format: workloads with owners, labels and computed status, init
//! containers, Services with computed Endpoints, Nodes, storage, autoscalers, quotas,
//! ConfigMaps; served by `resources_get` / `resources_list` / the pod tools, with selectors.

use serde_json::{Value, json};

use super::{args, get, names, parse, yaml};
use crate::render::*;
use crate::scenario::Scenario;

const WORLD: &str = r#"
alert: {text: "x", at: -2m}
deployments:
  - name: web
    namespace: shop
    replicas: 3
    selector: {app.kubernetes.io/name: web}
    revisions:
      - {image: "web:1", created: -3d}
      - {image: "web:2", created: -20m}
pods:
  - {name: web-new-a, namespace: shop, node: n1, deployment: web, created: -20m, labels: {pod-template-hash: 6b8c9d7f5}, containers: [{name: web, image: "web:2", ready: false, state: {waiting: {reason: CreateContainerConfigError}}}]}
  - {name: web-old-a, namespace: shop, node: n2, deployment: web, revision: 1, containers: [{name: web, image: "web:1"}]}
  - {name: web-old-b, namespace: shop, node: n1, deployment: web, revision: 1, containers: [{name: web, image: "web:1"}]}
  - name: db-0
    namespace: shop
    node: n1
    owner: {kind: StatefulSet, name: db}
    initContainers: [{name: migrate, image: "db:1", ready: false, restartCount: 4, state: {waiting: {reason: CrashLoopBackOff}}}]
    containers: [{name: db, image: "db:1"}]
  - {name: export-x, namespace: batch, node: n2, owner: {kind: Job, name: export-1}, phase: Failed, containers: [{name: export, image: "e:1", ready: false, state: {terminated: {exitCode: 1}}}]}
  - {name: agent-a, namespace: logging, node: n3, owner: {kind: DaemonSet, name: agent}, containers: [{name: agent, image: "a:1"}]}
  - {name: evicted, namespace: shop, node: n3, phase: Failed, reason: Evicted, message: "The node was low on resource: memory.", containers: [{name: c, image: i, ready: false}]}
logs:
  - {pod: db-0, container: migrate, previous: "ERROR: must be owner of table accounts"}
statefulsets: [{name: db, namespace: shop, replicas: 2, volumeClaimTemplates: [{name: data, storageClass: fast, size: 10Gi}]}]
daemonsets: [{name: agent, namespace: logging, desired: 3}]
cronjobs: [{name: export, namespace: batch, schedule: "0 2 * * *", lastScheduleTime: -1h}]
jobs: [{name: export-1, namespace: batch, owner: {kind: CronJob, name: export}, backoffLimit: 0}]
services:
  - {name: web, namespace: shop, selector: {app.kubernetes.io/name: web}, ports: [{port: 80, targetPort: 8080, name: http}]}
  - {name: external, namespace: shop, ports: [{port: 5432}]}
  - {name: pinned, namespace: shop, selector: {app: nothing}, endpoints: {addresses: [10.1.2.3]}}
nodes:
  - {name: n1, conditions: [{type: DiskPressure, status: "True", reason: KubeletHasDiskPressure, at: -5m}], taints: [{key: node.kubernetes.io/disk-pressure, effect: NoSchedule}]}
persistentvolumeclaims: [{name: data-db-1, namespace: shop, storageClass: fast, phase: Pending, requested: 10Gi}]
persistentvolumes: [{name: pv-1, capacity: 10Gi, claim: {namespace: shop, name: data-db-0}}]
storageclasses: [{name: standard, provisioner: ebs.csi.aws.com, default: true}]
horizontalpodautoscalers: [{name: web, namespace: shop, target: {kind: Deployment, name: web}, maxReplicas: 3, conditions: [{type: ScalingLimited, status: "True", reason: TooManyReplicas}]}]
resourcequotas: [{name: q, namespace: shop, hard: {pods: 10}, used: {pods: 9}}]
configmaps: [{name: settings, namespace: shop, data: {MODE: fast}}]
events:
  - {type: Warning, reason: BackOff, message: m1, involvedObject: {kind: Pod, name: db-0, namespace: shop}, at: -1m}
  - {reason: Pulled, message: m2, involvedObject: {kind: Pod, name: db-0, namespace: shop}, at: -2m}
  - {type: Warning, reason: BackoffLimitExceeded, message: m3, involvedObject: {kind: Job, name: export-1, namespace: batch}, at: -3m}
expect: {verdict: post}
"#;

fn world() -> Scenario {
    parse(WORLD)
}

fn pod(s: &Scenario, namespace: &str, name: &str) -> Value {
    yaml(&pods_get(s, &args(json!({"namespace": namespace, "name": name}))).unwrap())
}

#[test]
fn pods_carry_their_controllers_labels_and_owner_references() {
    let s = world();
    let new = pod(&s, "shop", "web-new-a");
    assert_eq!(new["metadata"]["labels"]["app.kubernetes.io/name"], "web");
    assert_eq!(new["metadata"]["labels"]["pod-template-hash"], "6b8c9d7f5");
    assert_eq!(
        new["metadata"]["ownerReferences"][0]["name"],
        "web-6b8c9d7f5"
    );
    let old = pod(&s, "shop", "web-old-a");
    let old_rs = old["metadata"]["ownerReferences"][0]["name"]
        .as_str()
        .unwrap();
    assert!(
        old_rs.starts_with("web-") && old_rs != "web-6b8c9d7f5",
        "{old_rs}"
    );

    let db = pod(&s, "shop", "db-0");
    assert_eq!(db["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
    assert_eq!(db["metadata"]["labels"]["app"], "db");
    assert_eq!(
        db["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
        "db-0"
    );
    let job = pod(&s, "batch", "export-x");
    let labels = &job["metadata"]["labels"];
    assert_eq!(labels["job-name"], "export-1");
    assert_eq!(
        labels["controller-uid"],
        job["metadata"]["ownerReferences"][0]["uid"]
    );
    assert_eq!(job["spec"]["restartPolicy"], "Never");
    assert_eq!(
        pod(&s, "logging", "agent-a")["metadata"]["labels"]["app"],
        "agent"
    );

    let evicted = pod(&s, "shop", "evicted");
    assert_eq!(evicted["status"]["reason"], "Evicted");
    assert_eq!(
        evicted["status"]["message"],
        "The node was low on resource: memory."
    );
    assert!(evicted["metadata"]["ownerReferences"].is_null());
}

#[test]
fn an_unfinished_init_container_keeps_the_pod_pending() {
    let s = world();
    let db = pod(&s, "shop", "db-0");
    assert_eq!(db["status"]["phase"], "Pending");
    assert_eq!(db["spec"]["initContainers"][0]["name"], "migrate");
    let init = &db["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["waiting"]["reason"], "CrashLoopBackOff");
    assert_eq!(init["restartCount"], 4);
    let main = &db["status"]["containerStatuses"][0];
    assert_eq!(main["state"]["waiting"]["reason"], "PodInitializing");
    assert_eq!(main["ready"], false);
    let initialized = &db["status"]["conditions"][1];
    assert_eq!(initialized["type"], "Initialized");
    assert_eq!(initialized["reason"], "ContainersNotInitialized");
    assert_eq!(
        initialized["message"],
        "containers with incomplete status: [migrate]"
    );

    let log = |extra: Value| {
        let mut a = json!({"namespace": "shop", "name": "db-0"});
        a.as_object_mut()
            .unwrap()
            .extend(extra.as_object().cloned().unwrap());
        pods_log(&s, &args(a))
    };
    let previous = log(json!({"container": "migrate", "previous": true})).unwrap();
    assert!(previous.contains("must be owner"), "{previous}");
    let waiting = log(json!({})).unwrap_err();
    assert!(
        waiting.contains("is waiting to start: PodInitializing"),
        "{waiting}"
    );
}

#[test]
fn deployment_status_counts_listed_pods_and_revisions() {
    let s = world();
    let web = get(&s, "apps/v1", "Deployment", "shop", "web");
    let status = &web["status"];
    // Three pods listed: one new (not ready), two old (ready); none unlisted.
    assert_eq!(status["replicas"], 3);
    assert_eq!(status["readyReplicas"], 2);
    assert_eq!(status["updatedReplicas"], 1);
    assert_eq!(status["conditions"][0]["type"], "Available");
    assert_eq!(status["conditions"][0]["status"], "False");
    assert_eq!(
        web["spec"]["selector"]["matchLabels"]["app.kubernetes.io/name"],
        "web"
    );

    let sets = yaml(
        &resources_list(
            &s,
            &args(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "labelSelector": "app.kubernetes.io/name=web"})),
        )
        .unwrap(),
    );
    let replicas: Vec<&Value> = sets
        .as_array()
        .unwrap()
        .iter()
        .map(|rs| &rs["spec"]["replicas"])
        .collect();
    assert_eq!(
        replicas,
        [&json!(2), &json!(1)],
        "old revision keeps its two pods"
    );
    assert_eq!(sets[1]["metadata"]["name"], "web-6b8c9d7f5");
    assert_eq!(
        sets[1]["metadata"]["ownerReferences"][0]["uid"],
        web["metadata"]["uid"]
    );
}

#[test]
fn workloads_jobs_and_autoscalers_render_with_their_status() {
    let s = world();
    let db = get(&s, "apps/v1", "StatefulSet", "shop", "db");
    assert_eq!(db["status"]["replicas"], 2);
    assert_eq!(
        db["status"]["readyReplicas"], 1,
        "db-0 is not ready, the unlisted one is"
    );
    assert_eq!(
        db["spec"]["volumeClaimTemplates"][0]["spec"]["storageClassName"],
        "fast"
    );
    let agent = get(&s, "apps/v1", "DaemonSet", "logging", "agent");
    assert_eq!(agent["status"]["desiredNumberScheduled"], 3);
    assert_eq!(agent["status"]["numberReady"], 3);
    let job = get(&s, "batch/v1", "Job", "batch", "export-1");
    assert_eq!(job["status"]["failed"], 1);
    assert_eq!(
        job["status"]["conditions"][0]["reason"],
        "BackoffLimitExceeded"
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    let cron = get(&s, "batch/v1", "CronJob", "batch", "export");
    assert_eq!(
        cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["image"],
        "e:1"
    );
    let hpa = get(
        &s,
        "autoscaling/v2",
        "HorizontalPodAutoscaler",
        "shop",
        "web",
    );
    assert_eq!(hpa["status"]["currentReplicas"], 3, "the target's replicas");
    assert_eq!(hpa["status"]["conditions"][0]["reason"], "TooManyReplicas");
    assert_eq!(hpa["spec"]["scaleTargetRef"]["apiVersion"], "apps/v1");
}

#[test]
fn endpoints_split_ready_and_not_ready_pods() {
    let s = world();
    let web = get(&s, "v1", "Endpoints", "shop", "web");
    let subset = &web["subsets"][0];
    let ready: Vec<&str> = subset["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["targetRef"]["name"].as_str())
        .collect();
    assert_eq!(ready, ["web-old-a", "web-old-b"]);
    assert_eq!(
        subset["notReadyAddresses"][0]["targetRef"]["name"],
        "web-new-a"
    );
    assert_eq!(subset["ports"][0]["port"], 8080);
    let ips: Vec<&Value> = subset["addresses"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| &a["ip"])
        .collect();
    assert_ne!(ips[0], ips[1], "pod IPs are unique");
    assert_eq!(
        get(&s, "v1", "Endpoints", "shop", "pinned")["subsets"][0]["addresses"][0]["ip"],
        "10.1.2.3"
    );
    let error = resources_get(&s, &args(json!({"apiVersion": "v1", "kind": "Endpoints", "namespace": "shop", "name": "external"}))).unwrap_err();
    assert_eq!(
        error,
        "failed to get resource: endpoints \"external\" not found"
    );
    assert_eq!(
        get(&s, "v1", "Service", "shop", "web")["spec"]["type"],
        "ClusterIP"
    );
}

#[test]
fn nodes_default_to_healthy_and_pods_name_unlisted_ones() {
    let s = world();
    let all =
        yaml(&resources_list(&s, &args(json!({"apiVersion": "v1", "kind": "Node"}))).unwrap());
    assert_eq!(names(&all), ["n1", "n2", "n3"]);
    let n1 = &all[0];
    let status = |kind: &str| {
        n1["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == kind)
            .map(|c| c["status"].clone())
    };
    assert_eq!(status("DiskPressure"), Some(json!("True")));
    assert_eq!(status("Ready"), Some(json!("True")));
    assert_eq!(status("MemoryPressure"), Some(json!("False")));
    assert_eq!(n1["spec"]["taints"][0]["effect"], "NoSchedule");
    assert_eq!(all[2]["status"]["conditions"][3]["type"], "Ready");
}

#[test]
fn storage_quotas_and_config_maps_are_served() {
    let s = world();
    let pending = yaml(
        &resources_list(&s, &args(json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "fieldSelector": "status.phase=Pending"}))).unwrap(),
    );
    assert_eq!(names(&pending), ["data-db-1"]);
    assert_eq!(
        get(&s, "v1", "PersistentVolume", "", "pv-1")["spec"]["claimRef"]["name"],
        "data-db-0"
    );
    let class = get(&s, "storage.k8s.io/v1", "StorageClass", "", "standard");
    assert_eq!(
        class["metadata"]["annotations"]["storageclass.kubernetes.io/is-default-class"],
        "true"
    );
    assert_eq!(
        get(&s, "v1", "ResourceQuota", "shop", "q")["status"]["used"]["pods"],
        "9"
    );
    assert_eq!(
        get(&s, "v1", "ConfigMap", "shop", "settings")["data"]["MODE"],
        "fast"
    );
    let secret = resources_list(&s, &args(json!({"apiVersion": "v1", "kind": "Secret"}))).unwrap();
    assert_eq!(secret, "[]\n", "secrets are never served");
}

#[test]
fn every_kind_answers_not_found_like_the_real_server() {
    let s = world();
    for (api_version, kind, qualified) in [
        ("v1", "Pod", "pods"),
        ("v1", "Service", "services"),
        ("v1", "Node", "nodes"),
        ("v1", "PersistentVolumeClaim", "persistentvolumeclaims"),
        ("apps/v1", "StatefulSet", "statefulsets.apps"),
        ("apps/v1", "DaemonSet", "daemonsets.apps"),
        ("batch/v1", "Job", "jobs.batch"),
        ("batch/v1", "CronJob", "cronjobs.batch"),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "horizontalpodautoscalers.autoscaling",
        ),
        (
            "storage.k8s.io/v1",
            "StorageClass",
            "storageclasses.storage.k8s.io",
        ),
    ] {
        let error = resources_get(&s, &args(json!({"apiVersion": api_version, "kind": kind, "namespace": "shop", "name": "ghost"}))).unwrap_err();
        assert_eq!(
            error,
            format!("failed to get resource: {qualified} \"ghost\" not found")
        );
    }
    let unknown =
        resources_list(&s, &args(json!({"apiVersion": "x/v1", "kind": "Y"}))).unwrap_err();
    assert!(unknown.contains("no matches for kind \"Y\""), "{unknown}");
}

#[test]
fn pod_lists_take_label_and_field_selectors() {
    let s = world();
    let everywhere =
        yaml(&pods_list(&s, &args(json!({"labelSelector": "app in (db, agent)"}))).unwrap());
    assert_eq!(names(&everywhere), ["db-0", "agent-a"]);
    let on_n1 = yaml(&pods_list(&s, &args(json!({"fieldSelector": "spec.nodeName=n1"}))).unwrap());
    assert_eq!(names(&on_n1), ["web-new-a", "web-old-b", "db-0"]);
    let failed = yaml(
        &pods_list_in_namespace(
            &s,
            &args(json!({"namespace": "shop", "fieldSelector": "status.phase=Failed"})),
        )
        .unwrap(),
    );
    assert_eq!(names(&failed), ["evicted"]);
    let spaces = yaml(&namespaces_list(&s, &args(json!({}))).unwrap());
    assert_eq!(
        names(&spaces),
        ["batch", "default", "kube-system", "logging", "shop"]
    );
}

#[test]
fn events_combine_field_selectors_across_namespaces() {
    let s = world();
    let list = |selector: &str| events_list(&s, &args(json!({"fieldSelector": selector}))).unwrap();
    let warnings = list("type=Warning");
    assert!(
        warnings.contains("Reason: BackOff") && warnings.contains("BackoffLimitExceeded"),
        "{warnings}"
    );
    assert!(!warnings.contains("Pulled"), "{warnings}");
    let pod = list("involvedObject.kind=Pod,involvedObject.name=db-0,type=Warning");
    assert!(
        pod.contains("BackOff") && !pod.contains("Pulled") && !pod.contains("Backoff"),
        "{pod}"
    );
    let job = list("reason=BackoffLimitExceeded");
    assert!(
        job.contains("apiVersion: batch/v1") && job.contains("Namespace: batch"),
        "{job}"
    );
    assert_eq!(list("type=Warning,reason=Nope"), "# No events found");
}

#[test]
fn a_controllers_template_carries_its_pods_spec_and_readiness_dates_from_the_last_start() {
    let s = parse(
        r#"
alert: {text: "x", at: -2m}
pods:
  - name: agent-a
    namespace: logging
    node: n3
    owner: {kind: DaemonSet, name: agent}
    created: -17m
    specExtra:
      tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
      hostNetwork: true
    containers:
      - {name: agent, image: "a:1", state: {running: {startedAt: +1m}}}
      - {name: reloader, image: "r:1", state: {running: {startedAt: -16m}}}
daemonsets: [{name: agent, namespace: logging, desired: 1}]
expect: {verdict: post}
"#,
    );
    let set = get(&s, "apps/v1", "DaemonSet", "logging", "agent");
    let template = &set["spec"]["template"]["spec"];
    assert_eq!(template["tolerations"][0]["key"], "dedicated");
    assert_eq!(template["hostNetwork"], true);
    assert_eq!(template["containers"][0]["name"], "agent");
    // Ready since its last container started (a minute after the alert), not since creation.
    let agent = pod(&s, "logging", "agent-a");
    let ready = agent["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Ready"))
        .expect("a Ready condition");
    let started = agent["status"]["containerStatuses"][0]["state"]["running"]["startedAt"].clone();
    assert_eq!(ready["lastTransitionTime"], started);
    assert_ne!(
        ready["lastTransitionTime"],
        agent["metadata"]["creationTimestamp"]
    );
}

/// A StatefulSet mid-update: its ControllerRevisions are its pods' templates, oldest first, each
/// owned by the set and labelled with its hash; a pod's own claim is not the template's.
#[test]
fn a_statefulsets_revisions_are_its_pods_templates() {
    let s = parse(
        r#"
alert: {text: "x", at: "2025-03-01T12:00:00Z"}
statefulsets:
  - name: zk
    namespace: streaming
    replicas: 2
    status: {currentRevision: zk-7b9c, updateRevision: zk-5d8f}
    volumeClaimTemplates: [{name: data, size: 20Gi}]
pods:
  - name: zk-1
    namespace: streaming
    owner: {kind: StatefulSet, name: zk}
    labels: {controller-revision-hash: zk-5d8f}
    created: -24m
    specExtra:
      volumes: [{name: data, persistentVolumeClaim: {claimName: data-zk-1}}]
    containers:
      - {name: zk, image: "zk:3.9", state: {running: {}}, specExtra: {securityContext: {runAsUser: 10001}}}
  - name: zk-0
    namespace: streaming
    owner: {kind: StatefulSet, name: zk}
    labels: {controller-revision-hash: zk-7b9c}
    created: -47d
    specExtra:
      securityContext: {fsGroup: 1001}
      volumes: [{name: data, persistentVolumeClaim: {claimName: data-zk-0}}]
    containers:
      - {name: zk, image: "zk:3.9", state: {running: {}}, specExtra: {securityContext: {runAsUser: 1001}}}
expect: {verdict: post}
"#,
    );
    let listed = yaml(
        &resources_list(
            &s,
            &args(json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "namespace": "streaming", "labelSelector": "app=zk"})),
        )
        .unwrap(),
    );
    let revisions = listed.as_array().unwrap();
    let names: Vec<&Value> = revisions.iter().map(|r| &r["metadata"]["name"]).collect();
    assert_eq!(
        names,
        [&json!("zk-7b9c"), &json!("zk-5d8f")],
        "current, then update"
    );
    assert_eq!(revisions[1]["revision"], 2);
    assert_eq!(
        revisions[1]["metadata"]["ownerReferences"][0]["kind"],
        "StatefulSet"
    );
    assert_eq!(
        revisions[1]["metadata"]["labels"]["controller.kubernetes.io/hash"],
        "5d8f"
    );
    let template = |i: usize| &revisions[i]["data"]["spec"]["template"]["spec"];
    assert_eq!(
        template(0)["containers"][0]["securityContext"]["runAsUser"],
        1001
    );
    assert_eq!(
        template(1)["containers"][0]["securityContext"]["runAsUser"],
        10001
    );
    assert_eq!(template(0)["securityContext"]["fsGroup"], 1001);
    assert_eq!(
        template(1)["securityContext"]["fsGroup"],
        1001,
        "a field the newer pod leaves out is the older one's"
    );
    assert_eq!(
        template(1)["volumes"],
        json!([]),
        "a pod's own claim is not in the template"
    );
}
