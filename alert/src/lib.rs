//! Alert understanding: from the text of a Slack alert message to an [`AlertTarget`] — what is
//! alerting, where, since when, and by which expression.
//!
//! This is step 1 of the seven and feeds every fixed investigation step: the
//! namespace and pod/workload choose what to describe and whose logs to read, the start time
//! bounds the deploy window and the metric range, the expression is re-run as the alert's own
//! metric. Parsing never fails: whatever cannot be determined is listed in
//! [`AlertTarget::unknown`], so the investigation checks what it can and asks about the rest.
//!
//! Formats (see `formats`): Alertmanager's Slack template, Grafana alerting's default Slack
//! message, and generic `key=value` / `key: value` / `{label="value"}` text; [`title`] reads the
//! status tag or word integrations open with (`[FIRING:1]`, `[OK]`, `Recovered:`), so the same
//! parse tells a recovery from a firing alert ([`AlertTarget::is_recovery`]). Alerts delivered
//! in Slack attachments are flattened into text first ([`attachments::message_text`]).
//! [`holmes::from_investigate_request`] adapts HolmesGPT's `investigate_request.json`.
//!
//! This is the one alert parser: the bot (which alerts a recovery resolves) and the
//! investigation (what to look at) both read alerts through it. It knows nothing else.

pub mod attachments;
mod fingerprint;
mod formats;
pub mod holmes;
mod prose;
pub mod timeparse;
pub mod title;
pub mod workload;

use std::collections::BTreeMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use formats::extract_fields;
pub use workload::{deployment_from_pod_name, deployment_from_replicaset_name};

/// Whether the alert is firing or has resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertStatus {
    Firing,
    Resolved,
}

/// A field of [`AlertTarget`] the investigation relies on, named for the "unknown" list.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertField {
    Alertname,
    Status,
    Severity,
    Namespace,
    /// Neither a pod, a workload nor a service: nothing concrete to describe.
    Target,
    StartsAt,
    Expression,
}

impl fmt::Display for AlertField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            AlertField::Alertname => "alert name",
            AlertField::Status => "status (firing or resolved)",
            AlertField::Severity => "severity",
            AlertField::Namespace => "namespace",
            AlertField::Target => "affected pod, workload or service",
            AlertField::StartsAt => "start time",
            AlertField::Expression => "alert expression",
        })
    }
}

/// What an alert is about, as far as its message says.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AlertTarget {
    pub alertname: Option<String>,
    /// The alert rule's human name, when the title gives one instead of an `alertname` label
    /// (Grafana's legacy alerts, PagerDuty, Datadog: `Triggered: [P1] High CPU on web-1`).
    pub rule: Option<String>,
    pub severity: Option<String>,
    pub status: Option<AlertStatus>,
    pub cluster: Option<String>,
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub container: Option<String>,
    /// The owning workload's name (a Deployment unless `workload_kind` says otherwise).
    pub workload: Option<String>,
    /// `Deployment`, `StatefulSet`, `DaemonSet`, `Job`, `CronJob`, when known.
    pub workload_kind: Option<String>,
    /// True when `workload` was derived from the pod name rather than stated by the alert.
    pub workload_derived: bool,
    pub service: Option<String>,
    pub node: Option<String>,
    /// A PersistentVolumeClaim the alert is about (`persistentvolumeclaim` label).
    pub volume_claim: Option<String>,
    /// A HorizontalPodAutoscaler the alert is about (`horizontalpodautoscaler` label).
    pub autoscaler: Option<String>,
    /// A PersistentVolume the alert is about (`persistentvolume` label).
    pub volume: Option<String>,
    /// Prometheus scrape job label (not a Kubernetes Job; see `workload_kind`).
    pub job: Option<String>,
    pub instance: Option<String>,
    pub starts_at: Option<DateTime<Utc>>,
    /// The alert's own PromQL, re-run over the alert window by the investigation.
    pub expression: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    /// The value the alerting system reported (Grafana's `Value:` line), verbatim.
    pub observed_value: Option<String>,
    /// A link back to the alert's source (generator URL, Grafana rule).
    pub source_url: Option<String>,
    /// Every label found, keys as written (lowercased for `Key: value` prose).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    /// How uncertain values were obtained, e.g. "workload derived from pod name".
    pub notes: Vec<String>,
    /// What the investigation needs but the message did not say.
    pub unknown: Vec<AlertField>,
}

impl AlertTarget {
    /// The name most useful for a human headline: workload, else pod, else service.
    pub fn subject(&self) -> Option<&str> {
        self.workload
            .as_deref()
            .or(self.pod.as_deref())
            .or(self.service.as_deref())
    }

    /// Whether the message reports the alert as resolved (`[RESOLVED]`, `[OK]`, `Recovered:`,
    /// Grafana's `**Resolved**`, a `status: resolved` line).
    pub fn is_recovery(&self) -> bool {
        self.status == Some(AlertStatus::Resolved)
    }

    /// What names the alert: its `alertname`, else its rule's human name.
    pub fn identity(&self) -> Option<&str> {
        self.alertname.as_deref().or(self.rule.as_deref())
    }

    /// Whether a recovery with this target is about the alert `firing` names: the same identity
    /// (case-insensitive), and the same namespace and service where both say.
    pub fn same_alert(&self, firing: &AlertTarget) -> bool {
        let agree = |a: &Option<String>, b: &Option<String>| match (a, b) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => true,
        };
        let same_identity = match (self.identity(), firing.identity()) {
            (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
            _ => false,
        };
        same_identity
            && agree(&self.namespace, &firing.namespace)
            && agree(&self.service, &firing.service)
    }

    /// With `labels` the alert did not carry (what people answered: a namespace, a pod), read as
    /// if the alert had carried them; a label it has keeps its value.
    pub fn with_labels(mut self, labels: impl IntoIterator<Item = (String, String)>) -> Self {
        let mut added = false;
        for (key, value) in labels {
            if let std::collections::btree_map::Entry::Vacant(slot) = self.labels.entry(key) {
                slot.insert(value);
                added = true;
            }
        }
        if !added {
            return self;
        }
        let mut resolved = self.resolve();
        let mut seen = std::collections::HashSet::new();
        resolved.notes.retain(|note| seen.insert(note.clone()));
        resolved
    }

    /// Fills the typed fields from `labels` and `annotations`, derives the workload, and
    /// computes `unknown`. Called by every constructor after it has gathered labels.
    pub(crate) fn resolve(mut self) -> Self {
        let label = |keys: &[&str]| first_value(&self.labels, keys);
        let alertname = label(&["alertname", "alert_name", "alert"]);
        let severity = label(&["severity", "priority", "level"]);
        let cluster = label(&["cluster", "cluster_name", "k8s_cluster_name", "k8s_cluster"]);
        let namespace = label(&[
            "namespace",
            "kubernetes_namespace",
            "k8s_namespace_name",
            "exported_namespace",
            "ns",
        ]);
        let pod = label(&[
            "pod",
            "pod_name",
            "kubernetes_pod_name",
            "k8s_pod_name",
            "exported_pod",
        ]);
        let container = label(&["container", "container_name", "k8s_container_name"]);
        let node = label(&[
            "node",
            "nodename",
            "kubernetes_node",
            "k8s_node_name",
            "hostname",
        ]);
        let job = label(&["job"]);
        let volume_claim = label(&["persistentvolumeclaim", "pvc", "claim_name", "k8s_pvc_name"]);
        let autoscaler = label(&["horizontalpodautoscaler", "hpa"]);
        let volume = label(&["persistentvolume", "pv"]);
        let instance = label(&["instance"]);
        let service = label(&[
            "service",
            "service_name",
            "svc",
            "k8s_service_name",
            "app_service",
            "sloth_service",
        ]);

        fill(&mut self.alertname, alertname);
        fill(&mut self.severity, severity);
        fill(&mut self.cluster, cluster);
        fill(&mut self.namespace, namespace);
        fill(&mut self.pod, pod);
        fill(&mut self.container, container);
        fill(&mut self.node, node);
        fill(&mut self.job, job);
        fill(&mut self.volume_claim, volume_claim);
        fill(&mut self.autoscaler, autoscaler);
        fill(&mut self.volume, volume);
        fill(&mut self.instance, instance);
        // kube-state-metrics alerts carry the *exporter's* service and job labels, not the
        // failing workload's: using them as the target would investigate the exporter.
        let exporter = |name: &str| {
            [
                "kube-state-metrics",
                "node-exporter",
                "prometheus-node-exporter",
                "kubelet",
            ]
            .iter()
            .any(|e| name.contains(e))
        };
        // …unless the alert is about the scrape target itself (`TargetDown`,
        // `KubeStateMetricsDown`): then the exporter is the subject.
        let about_the_target = self
            .alertname
            .as_deref()
            .is_some_and(|a| a.ends_with("Down"));
        let from_exporter = !about_the_target
            && (self.job.as_deref().is_some_and(exporter)
                || service.as_deref().is_some_and(exporter));
        // The exporter's own container label (`container="kube-state-metrics"`) names no
        // container of the target's pod.
        if self.container.as_deref().is_some_and(exporter) {
            self.notes.push(
                "ignored the `container` label: it names the metrics exporter, not the target"
                    .to_string(),
            );
            self.container = None;
        }
        if from_exporter {
            if service.is_some() {
                self.notes.push(
                    "ignored the `service` label: it names the metrics exporter, not the target"
                        .to_string(),
                );
            }
        } else {
            fill(&mut self.service, service);
        }
        // A `hostname` that is a Service's cluster DNS name (a ClickHouse replica's
        // `chi-events-main-0-0.clickhouse.svc.cluster.local`) names no node.
        if let Some(host) = self.node.clone()
            && let Some((name, namespace)) = cluster_service(&host)
        {
            self.node = None;
            fill(&mut self.service, Some(name));
            fill(&mut self.namespace, Some(namespace));
            self.notes.push(format!(
                "read the host `{host}` as a Service's cluster DNS name, not a node"
            ));
        }

        self.resolve_workload();

        if self.summary.is_none() {
            self.summary = first_value(&self.annotations, &["summary", "message", "title"]);
        }
        if self.description.is_none() {
            self.description = first_value(&self.annotations, &["description", "message"]);
        }
        if self.expression.is_none() {
            self.expression = first_value(&self.labels, &["expr", "expression", "query"])
                .or_else(|| first_value(&self.annotations, &["expr", "expression", "query"]));
        }
        if self.starts_at.is_none() {
            self.starts_at = first_value(&self.labels, &["startsat", "starts_at", "startsAt"])
                .or_else(|| first_value(&self.annotations, &["startsat", "starts_at", "startsAt"]))
                .and_then(|text| crate::timeparse::parse_timestamp(&text));
        }

        self.unknown = self.missing_fields();
        self
    }

    fn resolve_workload(&mut self) {
        let explicit = [
            (&["deployment", "k8s_deployment_name"][..], "Deployment"),
            (&["statefulset", "k8s_statefulset_name"][..], "StatefulSet"),
            (&["daemonset", "k8s_daemonset_name"][..], "DaemonSet"),
            (&["job_name", "k8s_job_name"][..], "Job"),
            (&["cronjob", "k8s_cronjob_name"][..], "CronJob"),
        ];
        if self.workload.is_none() {
            for (keys, kind) in explicit {
                if let Some(name) = first_value(&self.labels, keys) {
                    self.workload = Some(name);
                    self.workload_kind = Some(kind.to_string());
                    break;
                }
            }
        }
        if self.workload.is_none()
            && let Some(name) = first_value(&self.labels, &["workload"])
        {
            self.workload = Some(name);
            self.workload_kind = first_value(&self.labels, &["workload_type", "workload_kind"])
                .map(|kind| capitalise(&kind));
        }
        if self.workload.is_none()
            && let Some(replicaset) =
                first_value(&self.labels, &["replicaset", "k8s_replicaset_name"])
            && let Some(name) = deployment_from_replicaset_name(&replicaset)
        {
            self.workload = Some(name);
            self.workload_kind = Some("Deployment".to_string());
            self.workload_derived = true;
            self.notes.push(format!(
                "workload derived from ReplicaSet name `{replicaset}`"
            ));
        }
        if self.workload.is_none()
            && let Some(pod) = self.pod.as_deref()
            && let Some(name) = deployment_from_pod_name(pod)
        {
            self.notes.push(format!(
                "workload `{name}` derived from pod name `{pod}` (ReplicaSet hash suffix)"
            ));
            self.workload = Some(name);
            self.workload_kind = Some("Deployment".to_string());
            self.workload_derived = true;
        }
    }

    fn missing_fields(&self) -> Vec<AlertField> {
        let mut missing = Vec::new();
        if self.alertname.is_none() {
            missing.push(AlertField::Alertname);
        }
        if self.status.is_none() {
            missing.push(AlertField::Status);
        }
        if self.severity.is_none() {
            missing.push(AlertField::Severity);
        }
        if self.namespace.is_none() {
            missing.push(AlertField::Namespace);
        }
        if self.pod.is_none()
            && self.workload.is_none()
            && self.service.is_none()
            && self.node.is_none()
            && self.volume_claim.is_none()
            && self.autoscaler.is_none()
            && self.volume.is_none()
        {
            missing.push(AlertField::Target);
        }
        if self.starts_at.is_none() {
            missing.push(AlertField::StartsAt);
        }
        if self.expression.is_none() {
            missing.push(AlertField::Expression);
        }
        missing
    }
}

/// Parses a Slack alert message. Never fails; see [`AlertTarget::unknown`].
pub fn parse_alert(text: &str) -> AlertTarget {
    let mut fields = extract_fields(text);
    let title = title::read(text);
    // The title states the status for the whole message; a line further down (`state: ok` in a
    // description) does not override it.
    fields.status = title.status.or(fields.status);
    if fields.alertname.is_none() {
        fields.alertname = title.alertname;
    }
    if fields.summary.is_none() && fields.description.is_none() {
        fields.description = prose_description(text);
    }
    AlertTarget {
        rule: title.rule,
        alertname: fields.alertname,
        severity: fields.severity,
        status: fields.status,
        starts_at: fields.starts_at,
        expression: fields.expression,
        summary: fields.summary,
        description: fields.description,
        observed_value: fields.observed_value,
        source_url: fields.source_url,
        labels: fields.labels,
        annotations: fields.annotations,
        ..AlertTarget::default()
    }
    .resolve()
}

/// The sentences of a message that carries no summary or description field (a generic webhook's
/// free text: "100% of bulk index requests failed in the last 10 minutes"): its lines after the
/// title, without label lines (`key=value …`, `key: value`) and links.
fn prose_description(text: &str) -> Option<String> {
    let sentences: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .skip(1)
        .filter(|line| {
            let words: Vec<&str> = line.split_whitespace().collect();
            let labelled = words.iter().any(|w| w.contains('=') || w.contains("://"))
                || words.first().is_some_and(|w| w.ends_with(':'));
            words.len() >= 4 && !labelled
        })
        .collect();
    (!sentences.is_empty()).then(|| sentences.join(" "))
}

fn first_value(map: &BTreeMap<String, String>, keys: &[&str]) -> Option<String> {
    keys.iter()
        .find_map(|key| formats::label_in(map, key))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// (Service, namespace) of an in-cluster DNS name: `name.ns.svc[.cluster.local]`, or a pod of a
/// headless Service `pod.name.ns.svc[…]`.
fn cluster_service(host: &str) -> Option<(String, String)> {
    let labels: Vec<&str> = host.trim_end_matches('.').split('.').collect();
    let svc = labels.iter().position(|l| *l == "svc")?;
    match svc {
        2 => Some((labels[0].to_string(), labels[1].to_string())),
        3 => Some((labels[1].to_string(), labels[2].to_string())),
        _ => None,
    }
}

fn fill(slot: &mut Option<String>, value: Option<String>) {
    if slot.is_none() {
        *slot = value;
    }
}

fn capitalise(kind: &str) -> String {
    match kind.to_ascii_lowercase().as_str() {
        "deployment" => "Deployment".to_string(),
        "statefulset" => "StatefulSet".to_string(),
        "daemonset" => "DaemonSet".to_string(),
        "job" => "Job".to_string(),
        "cronjob" => "CronJob".to_string(),
        _ => kind.to_string(),
    }
}

#[cfg(test)]
mod tests;
