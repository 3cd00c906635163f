//! The real Prometheus with a scenario's metric series, and the real `prometheus-mcp-server`
//! in front of it.
//!
//! Each `metrics[]` entry becomes one **gauge series**: named `metric`, or after the first metric
//! selector in its `query`, labelled with its `labels` plus the query's equality matchers
//! (`k="v"`), sampled
//! every 15 s from an hour before the alert (or its first point, if earlier) until now. So a
//! query that selects or aggregates that one series (`x{…}`, `sum(x{…})`, `max(x{…})`) gives
//! back the scenario's values through real PromQL; a query over counters (`rate(…)`) does not —
//! write such scenarios with a recording-rule-style gauge (`job:http_error_ratio:rate5m{…}`).
//!
//! The series are written as OpenMetrics with timestamps in the past and backfilled with
//! `promtool tsdb create-blocks-from openmetrics` into a fresh data directory *before*
//! Prometheus starts, so the blocks never overlap a live head block. Prometheus then runs on
//! that directory with no scrape jobs (`--config.file` with only `global`), on a free loopback
//! port; it is ready when `/-/ready` answers 200.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::{McpPeer, Peer, PeerError, PeerTools, free_port};
use crate::render::promql::{self, Labels};
use crate::scenario::{MetricSpec, Scenario};

/// Sample interval of the backfilled series.
pub const SAMPLE_EVERY_SECS: i64 = 15;

/// The series a metric entry is backfilled as: its metric name and labels
/// ([`crate::render::promql::series_of`], the series lenient matching answers with too).
pub fn series_of(metric: &MetricSpec) -> Result<(String, Labels), PeerError> {
    promql::series_of(metric).ok_or_else(|| {
        PeerError(format!(
            "metrics query {:?}: no metric name to backfill a series for",
            metric.query.as_deref().unwrap_or_default()
        ))
    })
}

fn escape(value: &str) -> String {
    value
        .replace('\\', r"\\")
        .replace('"', "\\\"")
        .replace('\n', r"\n")
}

fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// The scenario's series as OpenMetrics text (gauges, timestamps in seconds) sampled every
/// [`SAMPLE_EVERY_SECS`] from an hour before the alert (or the earliest point) to `until`.
pub fn openmetrics(scenario: &Scenario, until: DateTime<Utc>) -> Result<String, PeerError> {
    // Metric name → its series (labels, entry).
    type Families<'a> = BTreeMap<String, Vec<(Labels, &'a MetricSpec)>>;
    let mut families: Families<'_> = BTreeMap::new();
    for metric in &scenario.spec.metrics {
        let (name, labels) = series_of(metric)?;
        let series = families.entry(name.clone()).or_default();
        if series.iter().any(|(l, _)| *l == labels) {
            return Err(PeerError(format!(
                "metrics: two entries backfill the same series {name}{labels:?}"
            )));
        }
        series.push((labels, metric));
    }
    let earliest = scenario
        .spec
        .metrics
        .iter()
        .flat_map(|m| m.points.iter().flatten().map(|(at, _)| scenario.time(*at)))
        .chain([scenario.alert_at - chrono::Duration::hours(1)])
        .min()
        .unwrap_or(until);
    let start = earliest.timestamp() - earliest.timestamp() % SAMPLE_EVERY_SECS;
    let mut out = String::new();
    for (name, series) in &families {
        let _ = writeln!(out, "# TYPE {name} gauge");
        for (labels, metric) in series {
            let rendered: Vec<String> = labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape(v)))
                .collect();
            let selector = if rendered.is_empty() {
                name.clone()
            } else {
                format!("{name}{{{}}}", rendered.join(","))
            };
            let mut t = start;
            while t <= until.timestamp() {
                let at = DateTime::from_timestamp(t, 0).unwrap_or(until);
                if let Some(v) = metric.value_at(scenario, at) {
                    let _ = writeln!(out, "{selector} {} {t}", format_value(v));
                }
                t += SAMPLE_EVERY_SECS;
            }
        }
    }
    out.push_str("# EOF\n");
    Ok(out)
}

/// Prometheus serving a scenario's series.
pub struct PrometheusPeer {
    pub peer: Peer,
    pub addr: SocketAddr,
    /// What `promtool` printed when it wrote the blocks.
    pub backfill_output: String,
}

impl PrometheusPeer {
    /// `http://127.0.0.1:P`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

/// Backfills `scenario`'s series into `work_dir/data` and starts Prometheus on it; waits (at
/// most 60 s) until `/-/ready` answers. `work_dir` should be fresh (a temporary directory).
pub async fn start_prometheus(
    tools: &PeerTools,
    scenario: &Scenario,
    work_dir: &Path,
) -> Result<PrometheusPeer, PeerError> {
    let io = |what: &str, e: std::io::Error| PeerError(format!("{what}: {e}"));
    let data = work_dir.join("data");
    let input = work_dir.join("series.om");
    std::fs::write(&input, openmetrics(scenario, Utc::now())?)
        .map_err(|e| io("writing series.om", e))?;
    let backfill = tokio::process::Command::new(&tools.promtool)
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(&data)
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), backfill)
        .await
        .map_err(|_| PeerError("promtool backfill took over 60 s".into()))?
        .map_err(|e| io("running promtool", e))?;
    let backfill_output = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    if !output.status.success() {
        return Err(PeerError(format!(
            "promtool tsdb create-blocks-from openmetrics failed ({}): {backfill_output}",
            output.status
        )));
    }
    let config = work_dir.join("prometheus.yml");
    std::fs::write(
        &config,
        "# The lab: no scrape jobs; the series were backfilled.\nglobal:\n  scrape_interval: 1m\n  evaluation_interval: 1m\n",
    )
    .map_err(|e| io("writing prometheus.yml", e))?;
    let port = free_port()?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let args = vec![
        format!("--config.file={}", config.display()),
        format!("--storage.tsdb.path={}", data.display()),
        format!("--web.listen-address={addr}"),
        "--storage.tsdb.retention.time=30d".to_string(),
    ];
    let mut peer = Peer::spawn(
        "prometheus",
        &tools.prometheus,
        &args,
        &[],
        &work_dir.join("prometheus.log"),
    )?;
    peer.wait_http_ok(addr, "/-/ready", Duration::from_secs(60))
        .await?;
    Ok(PrometheusPeer {
        peer,
        addr,
        backfill_output,
    })
}

/// Starts the real `prometheus-mcp-server` over streamable HTTP on a free loopback port, in
/// front of `prometheus_url`; waits (at most 60 s) until it listens.
pub async fn start_prometheus_mcp(
    tools: &PeerTools,
    prometheus_url: &str,
    work_dir: &Path,
) -> Result<McpPeer, PeerError> {
    let port = free_port()?;
    let env = [
        ("PROMETHEUS_URL", prometheus_url.to_string()),
        ("PROMETHEUS_MCP_SERVER_TRANSPORT", "http".to_string()),
        ("PROMETHEUS_MCP_BIND_HOST", "127.0.0.1".to_string()),
        ("PROMETHEUS_MCP_BIND_PORT", port.to_string()),
    ]
    .map(|(k, v)| (k.to_string(), v));
    let mut peer = Peer::spawn(
        "prometheus-mcp-server",
        &tools.prometheus_mcp_server,
        &[],
        &env,
        &work_dir.join("prometheus-mcp-server.log"),
    )?;
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    peer.wait_listening(addr, Duration::from_secs(60)).await?;
    Ok(McpPeer {
        peer,
        url: format!("http://{addr}/mcp"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    fn scenario(metrics: &str) -> Scenario {
        let text = format!(
            "alert:\n  text: x\n  at: -2m\nmetrics:\n{metrics}expect:\n  verdict: either\n"
        );
        let now = Utc.with_ymd_and_hms(2025, 3, 1, 12, 0, 0).unwrap();
        Scenario::parse("t", Path::new("t/scenario.yaml"), &text, now).unwrap()
    }

    #[test]
    fn series_are_named_by_the_first_selector_with_its_matchers() {
        let s = scenario(
            "  - query: 'sum(kube_pod_container_status_restarts_total{namespace=\"payments\", pod!=\"x\"})'\n    labels: {team: a}\n    constant: 1\n  - query: 'max(job:errors:ratio5m)'\n    constant: 0.5\n",
        );
        let (name, labels) = series_of(&s.spec.metrics[0]).unwrap();
        assert_eq!(name, "kube_pod_container_status_restarts_total");
        assert_eq!(
            labels,
            BTreeMap::from([
                ("namespace".into(), "payments".into()),
                ("team".into(), "a".into())
            ])
        );
        assert_eq!(
            series_of(&s.spec.metrics[1]).unwrap().0,
            "job:errors:ratio5m"
        );
    }

    #[test]
    fn openmetrics_holds_the_step_in_the_past() {
        let s = scenario(
            "  - query: 'http_error_ratio{service=\"checkout\"}'\n    step: {before: 0.01, after: 0.3, at: -10m}\n",
        );
        let text = openmetrics(&s, s.alert_at + chrono::Duration::minutes(2)).unwrap();
        assert!(
            text.starts_with("# TYPE http_error_ratio gauge\n"),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"));
        let step_at = (s.alert_at - chrono::Duration::minutes(10)).timestamp();
        assert!(text.contains(&format!(
            "http_error_ratio{{service=\"checkout\"}} 0.01 {}",
            step_at - 15
        )));
        assert!(text.contains(&format!(
            "http_error_ratio{{service=\"checkout\"}} 0.3 {step_at}"
        )));
        assert_eq!(text.lines().count(), 2 + 4 * 62 + 1);
    }
}
