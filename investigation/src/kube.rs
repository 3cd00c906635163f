//! Reading Kubernetes objects out of tool output. Servers answer in different shapes —
//! kubernetes-mcp-server YAML (one object, or a list), the API's JSON, `kubectl get` tables and
//! `kubectl describe` text (recorded investigations) — so every reader accepts all of them and
//! treats what it cannot read as absent, never as an error.
//!
//! The walk over the object graph only needs a few facts per object: a workload's or Service's
//! selector, a pod's state, node, claims and owner, a PVC's storage class, an HPA's target, a
//! Job's owner. [`objects`] parses structured output into JSON values; [`PodInfo`] and the
//! `*_of` functions pick the facts out.

use std::collections::BTreeMap;

use serde_json::Value;

/// The objects in a tool's answer: one object, the items of a list, or a YAML/JSON sequence.
/// Empty when the text is not structured (a table or describe text).
pub fn objects(text: &str) -> Vec<Value> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Vec::new();
    }
    let parsed: Option<Value> = serde_json::from_str(trimmed)
        .ok()
        .or_else(|| serde_norway::from_str::<Value>(trimmed).ok());
    let Some(value) = parsed else {
        return yaml_documents(trimmed);
    };
    flatten(value)
}

/// Several `---`-separated YAML documents.
fn yaml_documents(text: &str) -> Vec<Value> {
    if !text.contains("\n---") {
        return Vec::new();
    }
    text.split("\n---")
        .filter_map(|doc| serde_norway::from_str::<Value>(doc.trim()).ok())
        .flat_map(flatten)
        .collect()
}

/// The API objects in a parsed value. `kubectl describe` text often parses as a YAML mapping
/// too; only mappings with `kind`, `metadata` or `spec` are objects.
fn flatten(value: Value) -> Vec<Value> {
    let is_object = |v: &Value| {
        v.as_object().is_some_and(|m| {
            m.contains_key("kind") || m.contains_key("metadata") || m.contains_key("spec")
        })
    };
    match value {
        Value::Array(items) => items.into_iter().filter(is_object).collect(),
        Value::Object(ref map) if map.get("items").is_some_and(Value::is_array) => map
            .get("items")
            .and_then(Value::as_array)
            .map(|items| items.iter().filter(|i| is_object(i)).cloned().collect())
            .unwrap_or_default(),
        Value::Object(_) if is_object(&value) => vec![value],
        _ => Vec::new(),
    }
}

/// The string at a `/`-separated path.
pub fn str_at<'a>(value: &'a Value, path: &str) -> Option<&'a str> {
    value
        .pointer(path)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

/// The object's kind (`Deployment`), name and namespace.
pub fn identity(object: &Value) -> (Option<&str>, Option<&str>, Option<&str>) {
    (
        str_at(object, "/kind"),
        str_at(object, "/metadata/name"),
        str_at(object, "/metadata/namespace"),
    )
}

/// A Service an Ingress routes a host to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    pub ingress: String,
    pub namespace: String,
    pub service: String,
}

/// Whether an Ingress rule's host (`auth.example.com`, `*.example.com`) serves `host`.
fn host_matches(rule: &str, host: &str) -> bool {
    let (rule, host) = (rule.to_ascii_lowercase(), host.to_ascii_lowercase());
    match rule.strip_prefix("*.") {
        // A wildcard covers exactly one more label.
        Some(domain) => host
            .split_once('.')
            .is_some_and(|(label, rest)| !label.is_empty() && rest == domain),
        None => rule == host,
    }
}

/// The Services the Ingresses in a list route `host` to: each rule for that host, each of its
/// paths' backend Service, in the order written.
pub fn ingress_routes(text: &str, host: &str) -> Vec<Route> {
    routes_of(&objects(text), host)
}

/// [`ingress_routes`] over parsed Ingress objects.
pub fn routes_of<'a>(ingresses: impl IntoIterator<Item = &'a Value>, host: &str) -> Vec<Route> {
    let mut routes: Vec<Route> = Vec::new();
    for ingress in ingresses {
        let (Some(name), Some(namespace)) = (
            str_at(ingress, "/metadata/name"),
            str_at(ingress, "/metadata/namespace"),
        ) else {
            continue;
        };
        let rules = ingress
            .pointer("/spec/rules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|rule| str_at(rule, "/host").is_some_and(|h| host_matches(h, host)));
        let services = rules
            .flat_map(|rule| {
                rule.pointer("/http/paths")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .filter_map(|path| str_at(path, "/backend/service/name"));
        for service in services {
            let route = Route {
                ingress: name.to_string(),
                namespace: namespace.to_string(),
                service: service.to_string(),
            };
            if !routes.contains(&route) {
                routes.push(route);
            }
        }
    }
    routes
}

/// Whether a pod's containers hold `value` in an env value, their command or their arguments:
/// what the pod is configured with, a URL it calls or the host it serves.
pub fn spec_holds(pod: &Value, value: &str) -> bool {
    containers_of(pod).any(|container| {
        env_of(container)
            .filter_map(|e| e.get("value").and_then(Value::as_str))
            .any(|v| v.contains(value))
            || args_of(container).iter().any(|a| a.contains(value))
    })
}

/// An image's name without registry, path, tag or digest, lowercased
/// (`docker.io/library/postgres:16.3` → `postgres`).
pub fn image_name(image: &str) -> String {
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split([':', '@'])
        .next()
        .unwrap_or(last)
        .to_ascii_lowercase()
}

/// Postgres as its images are named (the server, with its extensions and HA packaging).
const POSTGRES_IMAGES: [&str; 5] = ["postgres", "postgresql", "postgis", "timescaledb", "spilo"];

/// Whether an image runs a Postgres server (not its exporter).
pub fn is_postgres_image(image: &str) -> bool {
    let name = image_name(image);
    !name.contains("exporter")
        && !name.contains("operator")
        && POSTGRES_IMAGES
            .iter()
            .any(|p| name == *p || name.starts_with(&format!("{p}-")))
}

/// The host of a URL or `host[:port]` value (`https://auth.example.com/realms/x` →
/// `auth.example.com`), lowercased.
fn host_of(value: &str) -> String {
    let rest = value.split_once("://").map_or(value, |(_, rest)| rest);
    let end = rest.find(['/', ':', '?', '#']).unwrap_or(rest.len());
    rest[..end].to_ascii_lowercase()
}

/// Env names that say which host a process serves as its own, as the servers that read them
/// name them — never a suffix a client's setting may end in too (`DB_HOSTNAME`,
/// `KEYCLOAK_EXTERNAL_URL`).
const SERVING_ENV: [&str; 10] = [
    "KC_HOSTNAME",
    "KC_HOSTNAME_URL",
    "GF_SERVER_ROOT_URL",
    "GF_SERVER_DOMAIN",
    "PUBLIC_URL",
    "EXTERNAL_URL",
    "ROOT_URL",
    "SERVER_NAME",
    "SITE_URL",
    "VIRTUAL_HOST",
];

/// Whether a pod is configured to serve `host` as its own: an env value under a serving name
/// (`KC_HOSTNAME=https://auth.example.com`), or a `--hostname`, `--public-url`,
/// `--external-url` or `--server-name` argument, whose host is exactly `host`.
pub fn serves_host(pod: &Value, host: &str) -> bool {
    let host = host.to_ascii_lowercase();
    let serving_env = |name: &str| SERVING_ENV.contains(&name.to_ascii_uppercase().as_str());
    let serving_flag = |flag: &str| {
        [
            "--hostname",
            "--public-url",
            "--external-url",
            "--server-name",
        ]
        .contains(&flag)
    };
    containers_of(pod).any(|container| {
        let env = env_of(container).any(|e| {
            str_at(e, "/name").is_some_and(serving_env)
                && str_at(e, "/value").is_some_and(|v| host_of(v) == host)
        });
        let args = args_of(container);
        let flagged = args
            .iter()
            .enumerate()
            .any(|(i, arg)| match arg.split_once('=') {
                Some((flag, value)) => serving_flag(flag) && host_of(value) == host,
                None => serving_flag(arg) && args.get(i + 1).is_some_and(|v| host_of(v) == host),
            });
        env || flagged
    })
}

/// Whether a Service's or policy's `matchLabels`-style selector picks an object with `labels`:
/// every key equal; an empty selector picks nothing here (a Service without one is managed by
/// hand).
pub fn selects(
    selector: &serde_json::Map<String, Value>,
    labels: &BTreeMap<String, String>,
) -> bool {
    !selector.is_empty()
        && selector.iter().all(|(k, v)| {
            v.as_str()
                .is_some_and(|v| labels.get(k).map(String::as_str) == Some(v))
        })
}

/// An object's `metadata.labels`.
pub fn labels_of(object: &Value) -> BTreeMap<String, String> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
        .collect()
}

/// The claims a pod object's volumes name.
pub fn claims_of(pod: &Value) -> Vec<&str> {
    pod.pointer("/spec/volumes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|v| str_at(v, "/persistentVolumeClaim/claimName"))
        .collect()
}

/// A pod object's containers.
fn containers_of(pod: &Value) -> impl Iterator<Item = &Value> {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A container's env entries.
fn env_of(container: &Value) -> impl Iterator<Item = &Value> {
    container
        .get("env")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
}

/// A container's command, then its arguments.
fn args_of(container: &Value) -> Vec<&str> {
    ["command", "args"]
        .iter()
        .filter_map(|k| container.get(*k).and_then(Value::as_array))
        .flatten()
        .filter_map(Value::as_str)
        .collect()
}

/// A `matchLabels`-style map as a label selector string `a=b,c=d`, in key order.
pub fn selector_string(labels: &BTreeMap<String, String>) -> Option<String> {
    (!labels.is_empty()).then(|| {
        labels
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(",")
    })
}

fn string_map(value: Option<&Value>) -> BTreeMap<String, String> {
    value
        .and_then(Value::as_object)
        .map(|map| {
            map.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default()
}

/// The label selector a workload or Service uses for its pods: `spec.selector.matchLabels`
/// (workloads), `spec.selector` (Services), or a describe text's `Selector:` line.
pub fn selector_of(text: &str) -> Option<String> {
    if let Some(object) = objects(text).into_iter().next() {
        let spec_selector = object.pointer("/spec/selector");
        let labels = match spec_selector.and_then(|s| s.get("matchLabels")) {
            Some(match_labels) => string_map(Some(match_labels)),
            None => string_map(spec_selector),
        };
        if let Some(selector) = selector_string(&labels) {
            return Some(selector);
        }
        // A Job selects its pods by `job-name` (its generated selector is a controller uid).
        if let (Some("Job"), Some(name), _) = identity(&object) {
            return Some(format!("job-name={name}"));
        }
        return None;
    }
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        (key.trim() == "Selector" && !value.is_empty() && value != "<none>")
            .then(|| value.replace(' ', ""))
    })
}

/// A container's writable volume mount: (container, volume name, mount path).
pub struct WritableMount<'a> {
    pub container: &'a str,
    pub volume: &'a str,
    pub mount_path: &'a str,
}

/// Every volume mount of `pod`'s (a Pod object's) containers that is not read-only.
pub fn writable_mounts(pod: &Value) -> Vec<WritableMount<'_>> {
    let mut out = Vec::new();
    for container in pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = str_at(container, "/name") else {
            continue;
        };
        for mount in container
            .get("volumeMounts")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|m| m.get("readOnly").and_then(Value::as_bool) != Some(true))
        {
            if let (Some(volume), Some(mount_path)) =
                (str_at(mount, "/name"), str_at(mount, "/mountPath"))
            {
                out.push(WritableMount {
                    container: name,
                    volume,
                    mount_path,
                });
            }
        }
    }
    out
}

/// A Node or pod condition's facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Condition {
    pub kind: String,
    pub status: String,
    pub reason: Option<String>,
    pub message: Option<String>,
    /// Its `lastTransitionTime` (RFC 3339), when given.
    pub since: Option<String>,
}

/// The `status.conditions` of an object.
pub fn conditions_of(object: &Value) -> Vec<Condition> {
    object
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            Some(Condition {
                kind: str_at(c, "/type")?.to_string(),
                status: str_at(c, "/status").unwrap_or("Unknown").to_string(),
                reason: str_at(c, "/reason").map(str::to_string),
                message: str_at(c, "/message").map(str::to_string),
                since: str_at(c, "/lastTransitionTime").map(str::to_string),
            })
        })
        .collect()
}

/// What a PVC says: its storage class and phase.
pub fn claim_of(text: &str) -> (Option<String>, Option<String>) {
    match objects(text).into_iter().next() {
        Some(pvc) => (
            str_at(&pvc, "/spec/storageClassName").map(str::to_string),
            str_at(&pvc, "/status/phase").map(str::to_string),
        ),
        None => (
            describe_field(text, "StorageClass"),
            describe_field(text, "Status"),
        ),
    }
}

/// The claim a PersistentVolume is bound to: (namespace, name).
pub fn claim_ref_of(text: &str) -> Option<(String, String)> {
    match objects(text).into_iter().next() {
        Some(pv) => Some((
            str_at(&pv, "/spec/claimRef/namespace")?.to_string(),
            str_at(&pv, "/spec/claimRef/name")?.to_string(),
        )),
        // `Claim:  feature-store/data-feature-store-0`
        None => {
            let claim = describe_field(text, "Claim")?;
            let (namespace, name) = claim.split_once('/')?;
            Some((namespace.trim().to_string(), name.trim().to_string()))
        }
    }
}

/// The workload an HPA scales: (kind, name).
pub fn scale_target_of(text: &str) -> Option<(String, String)> {
    match objects(text).into_iter().next() {
        Some(hpa) => Some((
            str_at(&hpa, "/spec/scaleTargetRef/kind")?.to_string(),
            str_at(&hpa, "/spec/scaleTargetRef/name")?.to_string(),
        )),
        None => {
            // `Reference:  Deployment/api`
            let reference = describe_field(text, "Reference")?;
            let (kind, name) = reference.split_once('/')?;
            Some((kind.trim().to_string(), name.trim().to_string()))
        }
    }
}

/// The name of an object's owner of `kind` (its `ownerReferences`).
pub fn owner_of<'v>(object: &'v Value, kind: &str) -> Option<&'v str> {
    object
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|o| str_at(o, "/kind") == Some(kind))
        .and_then(|o| str_at(o, "/name"))
}

/// The Jobs a CronJob created, newest first, from a Job list.
pub fn jobs_of_cronjob(text: &str, cronjob: &str) -> Vec<String> {
    let mut jobs: Vec<(String, String)> = objects(text)
        .iter()
        .filter(|job| {
            let owned = owner_of(job, "CronJob") == Some(cronjob);
            owned || str_at(job, "/metadata/name").is_some_and(|n| is_generated_from(n, cronjob))
        })
        .filter_map(|job| {
            Some((
                str_at(job, "/metadata/creationTimestamp")
                    .unwrap_or("")
                    .to_string(),
                str_at(job, "/metadata/name")?.to_string(),
            ))
        })
        .collect();
    jobs.sort_by(|a, b| b.cmp(a));
    jobs.into_iter().map(|(_, name)| name).collect()
}

/// Whether `name` is `<owner>-<generated suffix>`.
pub fn is_generated_from(name: &str, owner: &str) -> bool {
    name.strip_prefix(owner)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|suffix| !suffix.is_empty() && !suffix.contains('.'))
}

/// A `Key:  value` line of `kubectl describe` text (first match, top level or nested).
pub fn describe_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        let v = v.trim();
        (k.trim() == key && !v.is_empty() && v != "<none>" && v != "<unset>").then(|| v.to_string())
    })
}

/// One container of a pod, as far as the status says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContainerInfo {
    pub name: String,
    pub init: bool,
    pub ready: bool,
    pub restarts: u32,
    /// `CrashLoopBackOff`, `ImagePullBackOff`, `CreateContainerConfigError`, …
    pub waiting: Option<String>,
    /// The current state's termination reason and exit code (a finished or failed container).
    pub terminated: Option<(String, i64)>,
    /// The previous instance's termination, when it restarted.
    pub last_terminated: Option<(String, i64)>,
}

impl ContainerInfo {
    /// Whether the container is in trouble: waiting for a bad reason, restarting, or (for an
    /// init container) not finished successfully.
    pub fn failing(&self) -> bool {
        let bad_wait = self
            .waiting
            .as_deref()
            .is_some_and(|r| !matches!(r, "ContainerCreating" | "PodInitializing"));
        let bad_exit = self
            .terminated
            .as_ref()
            .is_some_and(|(reason, code)| *code != 0 || reason == "OOMKilled");
        bad_wait || bad_exit || self.restarts > 0 || self.last_terminated.is_some()
    }

    /// Whether a previous instance's log exists to read.
    pub fn restarted(&self) -> bool {
        self.restarts > 0 || self.last_terminated.is_some()
    }
}

/// A pod, as far as a list or a description says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodInfo {
    pub name: String,
    pub namespace: Option<String>,
    /// `Running`, `Pending`, `Failed`, …, or a table's STATUS (`CrashLoopBackOff`).
    pub status: String,
    /// The pod-level reason (`Evicted`).
    pub reason: Option<String>,
    pub ready: Option<bool>,
    /// Why the pod is not ready, when its Ready condition says (`ContainersNotReady` for a
    /// failing readiness probe, `NodeNotReady` when its node was lost).
    pub ready_reason: Option<String>,
    /// The controller that owns it: (kind, name), e.g. (`ReplicaSet`, `api-7d9f8c6b5`).
    pub owner: Option<(String, String)>,
    pub restarts: u32,
    pub node: Option<String>,
    /// Its IP (`status.podIP`), when known: a client's log may name the pod by it.
    pub ip: Option<String>,
    /// Creation time (RFC 3339) when known; newer sorts later.
    pub created: Option<String>,
    /// Age in seconds (a table's AGE) when known.
    pub age_secs: Option<u64>,
    pub labels: BTreeMap<String, String>,
    pub containers: Vec<ContainerInfo>,
    /// PersistentVolumeClaims its volumes use.
    pub claims: Vec<String>,
}

impl PodInfo {
    /// How much trouble the pod is in (higher first): failed or evicted, crash-looping or a
    /// failing init container, pending, not ready, restarted, fine.
    pub fn trouble(&self) -> u8 {
        let status = self.status.as_str();
        let failing_container = self.containers.iter().any(ContainerInfo::failing);
        if status == "Failed"
            || status == "Evicted"
            || self.reason.as_deref() == Some("Evicted")
            || status.contains("Error")
            || status.contains("BackOff")
            || status.starts_with("Init:")
            || status == "OOMKilled"
        {
            5
        } else if failing_container && self.containers.iter().any(|c| c.waiting.is_some()) {
            4
        } else if status == "Pending" || status == "ContainerCreating" {
            3
        } else if self.ready == Some(false) || failing_container {
            2
        } else if self.restarts > 0 {
            1
        } else {
            0
        }
    }
}

/// The pods in a pod list (YAML, JSON or a `kubectl get pods` table).
pub fn pods_in_list(text: &str) -> Vec<PodInfo> {
    let structured = objects(text);
    if !structured.is_empty() {
        return structured
            .iter()
            .filter(|o| str_at(o, "/kind").is_none_or(|k| k == "Pod"))
            .filter_map(pod_from_object)
            .collect();
    }
    pods_in_table(text)
}

/// The pod in a description (YAML, JSON, or `kubectl describe` text).
pub fn pod_of(text: &str, name: &str) -> Option<PodInfo> {
    if let Some(object) = objects(text).into_iter().next() {
        return pod_from_object(&object);
    }
    describe_pod(text, name)
}

/// A pod object's facts (a parsed `pods_get` / list item), as [`pods_in_list`] reads each.
pub fn pod_from_object(pod: &Value) -> Option<PodInfo> {
    let name = str_at(pod, "/metadata/name")?.to_string();
    let statuses = |key: &str, init: bool| -> Vec<ContainerInfo> {
        pod.pointer(&format!("/status/{key}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| ContainerInfo {
                name: str_at(s, "/name").unwrap_or_default().to_string(),
                init,
                ready: s.get("ready").and_then(Value::as_bool).unwrap_or(false),
                restarts: s
                    .get("restartCount")
                    .and_then(Value::as_u64)
                    .and_then(|n| u32::try_from(n).ok())
                    .unwrap_or(0),
                waiting: str_at(s, "/state/waiting/reason").map(str::to_string),
                terminated: terminated_at(s, "/state/terminated"),
                last_terminated: terminated_at(s, "/lastState/terminated"),
            })
            .collect()
    };
    let mut containers = statuses("initContainerStatuses", true);
    containers.extend(statuses("containerStatuses", false));
    let claims = claims_of(pod).into_iter().map(str::to_string).collect();
    let ready_condition = conditions_of(pod).into_iter().find(|c| c.kind == "Ready");
    // Without its Ready condition (an excerpt may keep only the containers'), a pod is ready
    // when every app container is.
    let app_containers: Vec<&ContainerInfo> = containers.iter().filter(|c| !c.init).collect();
    let ready = ready_condition
        .as_ref()
        .map(|c| c.status == "True")
        .or_else(|| {
            (!app_containers.is_empty() && pod.pointer("/status/containerStatuses").is_some())
                .then(|| app_containers.iter().all(|c| c.ready))
        });
    let ready_reason = ready_condition.and_then(|c| c.reason);
    let owner = pod
        .pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .and_then(|owners| {
            owners
                .iter()
                .find(|o| o.get("controller").and_then(Value::as_bool) != Some(false))
        })
        .and_then(|o| {
            Some((
                str_at(o, "/kind")?.to_string(),
                str_at(o, "/name")?.to_string(),
            ))
        });
    let restarts = containers.iter().map(|c| c.restarts).sum();
    Some(PodInfo {
        name,
        namespace: str_at(pod, "/metadata/namespace").map(str::to_string),
        status: str_at(pod, "/status/phase")
            .unwrap_or("Unknown")
            .to_string(),
        reason: str_at(pod, "/status/reason").map(str::to_string),
        ready,
        ready_reason,
        owner,
        restarts,
        node: str_at(pod, "/spec/nodeName").map(str::to_string),
        ip: str_at(pod, "/status/podIP").map(str::to_string),
        created: str_at(pod, "/metadata/creationTimestamp").map(str::to_string),
        age_secs: None,
        labels: string_map(pod.pointer("/metadata/labels")),
        containers,
        claims,
    })
}

fn terminated_at(status: &Value, path: &str) -> Option<(String, i64)> {
    let terminated = status.pointer(path)?;
    Some((
        str_at(terminated, "/reason")
            .unwrap_or("Terminated")
            .to_string(),
        terminated
            .get("exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0),
    ))
}

/// A `kubectl get pods` table: NAME, READY, STATUS, RESTARTS, AGE (and NODE, LABELS when shown).
fn pods_in_table(text: &str) -> Vec<PodInfo> {
    let mut lines = text
        .lines()
        .skip_while(|l| l.split_whitespace().next() != Some("NAME"));
    let Some(header) = lines.next() else {
        return Vec::new();
    };
    let mut columns: Vec<(&str, usize)> = Vec::new();
    let mut offset = 0;
    for word in header.split_whitespace() {
        let start = header[offset..].find(word).map_or(offset, |i| offset + i);
        columns.push((word, start));
        offset = start + word.len();
    }
    let cell = |row: &str, name: &str| -> Option<String> {
        let i = columns.iter().position(|(c, _)| *c == name)?;
        let start = columns[i].1;
        let end = columns.get(i + 1).map_or(row.len(), |c| c.1).min(row.len());
        row.get(start.min(end)..end)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    lines
        .take(2000)
        .filter_map(|row| {
            let name = row.split_whitespace().next()?.to_string();
            let ready = cell(row, "READY").and_then(|r| {
                let (a, b) = r.split_once('/')?;
                Some(a == b && a != "0")
            });
            let restarts = cell(row, "RESTARTS")
                .and_then(|r| r.split_whitespace().next()?.parse().ok())
                .unwrap_or(0);
            let labels = cell(row, "LABELS")
                .map(|l| {
                    l.split(',')
                        .filter_map(|kv| {
                            let (k, v) = kv.split_once('=')?;
                            Some((k.to_string(), v.to_string()))
                        })
                        .collect()
                })
                .unwrap_or_default();
            Some(PodInfo {
                name,
                status: cell(row, "STATUS").unwrap_or_default(),
                ready,
                restarts,
                node: cell(row, "NODE").filter(|n| n != "<none>"),
                ip: cell(row, "IP").filter(|n| n != "<none>"),
                age_secs: cell(row, "AGE").and_then(|a| age_secs(&a)),
                labels,
                ..PodInfo::default()
            })
        })
        .collect()
}

/// `5m`, `2d3h`, `45s` → seconds.
pub fn age_secs(age: &str) -> Option<u64> {
    let mut total = 0u64;
    let mut number = String::new();
    for c in age.chars() {
        if c.is_ascii_digit() {
            number.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3_600,
            'd' => 86_400,
            'y' => 31_536_000,
            _ => return None,
        };
        total = total.saturating_add(number.parse::<u64>().ok()?.saturating_mul(unit));
        number.clear();
    }
    number.is_empty().then_some(total)
}

/// What a `kubectl describe pod` text says.
fn describe_pod(text: &str, name: &str) -> Option<PodInfo> {
    if describe_field(text, "Name").is_none_or(|n| n != name) {
        return None;
    }
    let node = describe_field(text, "Node").map(|n| n.split('/').next().unwrap_or(&n).to_string());
    let restarts = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "Restart Count").then(|| v.trim().parse::<u32>().ok())?
        })
        .sum();
    let claims = text
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "ClaimName").then(|| v.trim().to_string())
        })
        .collect();
    let waiting = text
        .contains("CrashLoopBackOff")
        .then(|| "CrashLoopBackOff".to_string());
    Some(PodInfo {
        name: name.to_string(),
        namespace: describe_field(text, "Namespace"),
        status: describe_field(text, "Status").unwrap_or_default(),
        reason: describe_field(text, "Reason"),
        owner: describe_field(text, "Controlled By").and_then(|by| {
            let (kind, name) = by.split_once('/')?;
            Some((kind.trim().to_string(), name.trim().to_string()))
        }),
        node,
        ip: describe_field(text, "IP"),
        restarts,
        claims,
        containers: vec![ContainerInfo {
            restarts,
            waiting,
            ..ContainerInfo::default()
        }],
        ..PodInfo::default()
    })
}

/// The Deployment that owns a pod, through its ReplicaSet (`api-7d9f8c6b5` → `api`): from the
/// pod's owner reference, else from a name of the form `<deployment>-<hash>-<suffix>`.
pub fn deployment_of(pod: &PodInfo) -> Option<String> {
    match &pod.owner {
        Some((kind, name)) if kind == "ReplicaSet" => deployment_of_replica_set(name),
        Some(_) => None,
        None => deployment_of_name(&pod.name),
    }
}

/// The Deployment a pod or ReplicaSet name says owns it (`api-7d9f8c6b5-x2k4q` or
/// `api-7d9f8c6b5` → `api`), when the name has that form.
pub fn deployment_of_name(name: &str) -> Option<String> {
    deployment_of_replica_set(name).or_else(|| {
        let (replica_set, suffix) = name.rsplit_once('-')?;
        (suffix.len() == 5 && suffix.chars().all(|c| c.is_ascii_alphanumeric()))
            .then(|| deployment_of_replica_set(replica_set))?
    })
}

/// `api-7d9f8c6b5` → `api`, when the last part is a pod-template-hash.
fn deployment_of_replica_set(replica_set: &str) -> Option<String> {
    let (deployment, hash) = replica_set.rsplit_once('-')?;
    // A pod-template-hash is written in Kubernetes' safe alphabet (no vowels, no 0, 1 or 3), so
    // a CronJob's Job named for its scheduled minute (`report-28911840`) is not taken for one.
    const SAFE: &str = "bcdfghjklmnpqrstvwxz2456789";
    let hashlike = (6..=10).contains(&hash.len())
        && hash.chars().all(|c| SAFE.contains(c))
        && hash.chars().any(|c| c.is_ascii_digit());
    (hashlike && !deployment.is_empty()).then(|| deployment.to_string())
}

/// `pods` ordered for reading: most trouble first, then newest, then by name.
pub fn rank_pods(pods: &mut [PodInfo]) {
    pods.sort_by(|a, b| {
        b.trouble()
            .cmp(&a.trouble())
            .then_with(|| b.created.cmp(&a.created))
            .then_with(|| a.age_secs.cmp(&b.age_secs))
            .then_with(|| a.name.cmp(&b.name))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ingress_routes_its_hosts_and_a_wildcard_one_more_label() {
        let list = r#"
items:
- kind: Ingress
  metadata: {name: auth, namespace: identity}
  spec:
    rules:
    - host: auth.acme-corp.net
      http:
        paths:
        - {path: /, pathType: Prefix, backend: {service: {name: keycloak, port: {number: 8080}}}}
        - {path: /admin, pathType: Prefix, backend: {service: {name: keycloak-admin, port: {name: http}}}}
- kind: Ingress
  metadata: {name: tenants, namespace: edge}
  spec:
    rules:
    - host: '*.tenants.example.com'
      http:
        paths:
        - {path: /, pathType: Prefix, backend: {service: {name: tenant-router, port: {number: 80}}}}
"#;
        let services = |host: &str| -> Vec<String> {
            ingress_routes(list, host)
                .into_iter()
                .map(|r| format!("{}/{} ({})", r.namespace, r.service, r.ingress))
                .collect()
        };
        assert_eq!(
            services("AUTH.acme-corp.net"),
            ["identity/keycloak (auth)", "identity/keycloak-admin (auth)"]
        );
        assert_eq!(
            services("acme.tenants.example.com"),
            ["edge/tenant-router (tenants)"]
        );
        assert!(services("a.b.tenants.example.com").is_empty());
        assert!(services("tenants.example.com").is_empty());
        assert!(services("api.example.com").is_empty());
    }

    #[test]
    fn a_pod_serves_the_host_its_serving_settings_name_and_not_one_it_calls() {
        let pod = |env: &str, args: &str| -> Value {
            serde_norway::from_str(&format!(
                "spec:\n  containers:\n  - name: a\n    env: {env}\n    args: {args}\n"
            ))
            .expect("yaml")
        };
        let keycloak = pod(
            "[{name: KC_HOSTNAME, value: 'https://auth.acme-corp.net'}]",
            "[start]",
        );
        assert!(serves_host(&keycloak, "AUTH.acme-corp.net"));
        assert!(!serves_host(&keycloak, "acme-corp.net"));
        let flagged = pod("[]", "[start, --hostname, auth.acme-corp.net:8443]");
        assert!(serves_host(&flagged, "auth.acme-corp.net"));
        let equals = pod("[]", "['--external-url=https://grafana.example.com/']");
        assert!(serves_host(&equals, "grafana.example.com"));
        // A client configured to call it does not serve it.
        let client = pod(
            "[{name: OIDC_ISSUER_URL, value: 'https://auth.acme-corp.net/realms/x'}, {name: PAYMENTS_BASE_URL, value: 'https://auth.acme-corp.net'}]",
            "['--upstream=https://auth.acme-corp.net']",
        );
        assert!(!serves_host(&client, "auth.acme-corp.net"));
    }

    #[test]
    fn a_pods_spec_holds_a_value_in_env_command_or_args() {
        let pod: Value = serde_norway::from_str(
            r#"
spec:
  containers:
  - name: a
    env: [{name: KC_HOSTNAME, value: "https://auth.acme-corp.net"}]
  - name: b
    command: [python, -m, tool]
    args: [--table, carts-prod]
"#,
        )
        .expect("yaml");
        assert!(spec_holds(&pod, "auth.acme-corp.net"));
        assert!(spec_holds(&pod, "carts-prod"));
        assert!(!spec_holds(&pod, "orders-prod"));
    }

    const POD_YAML: &str = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: api-7d9f-x2k4q\n  namespace: shop\n  creationTimestamp: \"2026-01-01T10:00:00Z\"\n  labels:\n    app: api\nspec:\n  nodeName: worker-1\n  volumes:\n  - name: data\n    persistentVolumeClaim:\n      claimName: data-api-0\nstatus:\n  phase: Running\n  conditions:\n  - type: Ready\n    status: \"False\"\n  initContainerStatuses:\n  - name: migrate\n    ready: false\n    restartCount: 3\n    state:\n      waiting:\n        reason: CrashLoopBackOff\n    lastState:\n      terminated:\n        exitCode: 1\n        reason: Error\n  containerStatuses:\n  - name: api\n    ready: false\n    restartCount: 0\n    state:\n      waiting:\n        reason: PodInitializing\n";

    #[test]
    fn a_pod_object_gives_its_state_node_claims_and_init_containers() {
        let pod = pod_of(POD_YAML, "api-7d9f-x2k4q").expect("a pod");
        assert_eq!(pod.node.as_deref(), Some("worker-1"));
        assert_eq!(pod.claims, ["data-api-0"]);
        assert_eq!(pod.ready, Some(false));
        let init = &pod.containers[0];
        assert!(init.init && init.failing() && init.restarted());
        assert_eq!(init.last_terminated, Some(("Error".to_string(), 1)));
        assert!(
            !pod.containers[1].failing(),
            "PodInitializing is waiting, not failing"
        );
        assert_eq!(pod.labels.get("app").map(String::as_str), Some("api"));
    }

    #[test]
    fn lists_come_as_yaml_sequences_json_items_or_tables() {
        let yaml = format!("- {}", POD_YAML.replace('\n', "\n  "));
        assert_eq!(pods_in_list(&yaml).len(), 1);
        let json = r#"{"kind":"PodList","items":[{"metadata":{"name":"a"},"status":{"phase":"Pending"}},{"metadata":{"name":"b"},"status":{"phase":"Running"}}]}"#;
        let pods = pods_in_list(json);
        assert_eq!(pods.len(), 2);
        assert_eq!(pods[0].status, "Pending");
        let table = "NAME                      READY   STATUS             RESTARTS      AGE\napi-1                     1/1     Running            0             2d\napi-2                     0/1     CrashLoopBackOff   7 (1m ago)    10m\n";
        let mut pods = pods_in_list(table);
        assert_eq!(pods[1].restarts, 7);
        assert_eq!(pods[1].ready, Some(false));
        rank_pods(&mut pods);
        assert_eq!(pods[0].name, "api-2", "the crash-looping pod is read first");
    }

    #[test]
    fn selectors_come_from_workloads_services_jobs_and_describe_text() {
        let deployment = "kind: Deployment\nmetadata:\n  name: api\nspec:\n  selector:\n    matchLabels:\n      app: api\n      tier: web\n";
        assert_eq!(selector_of(deployment).as_deref(), Some("app=api,tier=web"));
        let service = "kind: Service\nmetadata:\n  name: api\nspec:\n  selector:\n    app: api\n";
        assert_eq!(selector_of(service).as_deref(), Some("app=api"));
        let job = "kind: Job\nmetadata:\n  name: nightly-28901\nspec:\n  selector:\n    matchLabels: {}\n";
        assert_eq!(selector_of(job).as_deref(), Some("job-name=nightly-28901"));
        let describe = "Name:         api\nNamespace:    shop\nSelector:     app=api, tier=web\n";
        assert_eq!(selector_of(describe).as_deref(), Some("app=api,tier=web"));
        assert_eq!(selector_of("Selector:  <none>\n"), None);
    }

    #[test]
    fn cronjob_jobs_pvc_classes_and_hpa_targets() {
        let jobs = "- kind: Job\n  metadata:\n    name: report-100\n    creationTimestamp: \"2026-01-01T00:00:00Z\"\n    ownerReferences:\n    - kind: CronJob\n      name: report\n- kind: Job\n  metadata:\n    name: report-200\n    creationTimestamp: \"2026-01-02T00:00:00Z\"\n- kind: Job\n  metadata:\n    name: other-1\n";
        assert_eq!(
            jobs_of_cronjob(jobs, "report"),
            ["report-200", "report-100"]
        );
        let pvc = "kind: PersistentVolumeClaim\nspec:\n  storageClassName: fast-ssd\nstatus:\n  phase: Pending\n";
        assert_eq!(
            claim_of(pvc),
            (Some("fast-ssd".into()), Some("Pending".into()))
        );
        let hpa = "kind: HorizontalPodAutoscaler\nspec:\n  scaleTargetRef:\n    kind: Deployment\n    name: api\n";
        assert_eq!(
            scale_target_of(hpa),
            Some(("Deployment".into(), "api".into()))
        );
        assert_eq!(
            scale_target_of("Reference:  Deployment/web\n"),
            Some(("Deployment".into(), "web".into()))
        );
    }

    #[test]
    fn unreadable_text_is_nothing_not_an_error() {
        assert!(objects("the server said no").is_empty());
        assert!(pods_in_list("").is_empty());
        assert_eq!(pod_of("garbage", "x"), None);
    }

    fn pod(name: &str, owner: Option<(&str, &str)>) -> PodInfo {
        PodInfo {
            name: name.to_string(),
            owner: owner.map(|(kind, name)| (kind.to_string(), name.to_string())),
            ..PodInfo::default()
        }
    }

    #[test]
    fn a_pod_of_a_replica_set_belongs_to_the_deployment_named_before_its_hash() {
        let owned = pod("web-7d9f8c6b5-x2k4q", Some(("ReplicaSet", "web-7d9f8c6b5")));
        assert_eq!(deployment_of(&owned).as_deref(), Some("web"));
        let dashed = pod(
            "payments-api-7d9f8c6b5-x2k4q",
            Some(("ReplicaSet", "payments-api-7d9f8c6b5")),
        );
        assert_eq!(deployment_of(&dashed).as_deref(), Some("payments-api"));
        // No owner known (a table row): read from the pod's name.
        let listed = pod("coredns-5d78c9869d-x2k4q", None);
        assert_eq!(deployment_of(&listed).as_deref(), Some("coredns"));
        // The owner reference wins over what the name looks like.
        let renamed = pod(
            "web-7d9f8c6b5-x2k4q",
            Some(("ReplicaSet", "shop-web-6b8d7c5f9")),
        );
        assert_eq!(deployment_of(&renamed).as_deref(), Some("shop-web"));
    }

    #[test]
    fn pods_of_other_controllers_belong_to_no_deployment() {
        for (name, owner) in [
            ("db-0", Some(("StatefulSet", "db"))),
            ("nightly-report-x2k4q", Some(("Job", "nightly-report"))),
            ("node-exporter-x2k4q", Some(("DaemonSet", "node-exporter"))),
            // A ReplicaSet made by hand has no hash: no Deployment behind it.
            ("frontend-x2k4q", Some(("ReplicaSet", "frontend"))),
            ("db-0", None),
            ("node-exporter-x2k4q", None),
            ("fluent-bit-x2k4q", None),
            // A CronJob's Job is named for its scheduled minute, which is no template hash.
            ("invoice-export-28911840-9vkxt", None),
            ("backup-20250101-x2k4q", None),
        ] {
            assert_eq!(deployment_of(&pod(name, owner)), None, "{name} {owner:?}");
        }
    }

    #[test]
    fn describe_text_that_parses_as_yaml_is_no_object() {
        let describe = "Name:                   web\nNamespace:              shop\nReplicas:               3 desired | 3 updated | 3 total\nStrategyType:           RollingUpdate\n";
        let parsed: Value = serde_norway::from_str(describe).expect("describe text is YAML too");
        assert!(parsed.is_object());
        assert!(flatten(parsed).is_empty());
        assert!(objects(describe).is_empty());
        // Lists keep their objects only.
        let list: Value = serde_json::json!({
            "kind": "PodList",
            "items": [{"metadata": {"name": "a"}}, "stray", {"note": "no kind"}, {"spec": {}}],
        });
        assert_eq!(flatten(list).len(), 2);
        let sequence: Value = serde_json::json!([{"kind": "Node"}, 3, {"Name": "web"}]);
        assert_eq!(flatten(sequence), [serde_json::json!({"kind": "Node"})]);
    }
}
