//! The log streams Loki would hold for a scenario: its `log_streams[]` as written, then each
//! node's systemd journal (`nodes[].journal`), one stream per unit, labelled as a promtail /
//! Alloy journal scrape labels them: `{job="systemd-journal", node="<node>", unit="<unit>"}`.
//! So `{node="worker-3"}` finds a node's kubelet and containerd lines next to any application
//! stream that carries a `node` label.

use std::collections::BTreeMap;

use crate::reltime::RelTime;
use crate::scenario::ScenarioSpec;

/// The `job` label of journal streams.
pub(crate) const JOURNAL_JOB: &str = "systemd-journal";

/// One stream: its labels, the query it was written for (if any), its lines as written.
pub(crate) struct Stream<'a> {
    pub labels: BTreeMap<String, String>,
    pub query: Option<&'a str>,
    pub lines: Vec<(RelTime, &'a str)>,
}

/// Every stream: `log_streams[]` in order, then the journals, by node and unit.
pub(crate) fn streams(spec: &ScenarioSpec) -> Vec<Stream<'_>> {
    let mut out: Vec<Stream> = spec
        .log_streams
        .iter()
        .map(|s| Stream {
            labels: s.labels.clone(),
            query: s.query.as_deref(),
            lines: s.lines.iter().map(|l| (l.at, l.line.as_str())).collect(),
        })
        .collect();
    for node in &spec.nodes {
        let mut units: BTreeMap<&str, Vec<(RelTime, &str)>> = BTreeMap::new();
        for line in &node.journal {
            units
                .entry(line.unit())
                .or_default()
                .push((line.at, line.line.as_str()));
        }
        out.extend(units.into_iter().map(|(unit, lines)| Stream {
            labels: BTreeMap::from([
                ("job".to_string(), JOURNAL_JOB.to_string()),
                ("node".to_string(), node.name.clone()),
                ("unit".to_string(), unit.to_string()),
            ]),
            query: None,
            lines,
        }));
    }
    out
}
