//! Line-level extraction of alert fields from the message formats integrations post.
//!
//! One pass over the lines with a little section state handles all formats at once, because
//! real messages mix them (a custom Alertmanager template that prints a Prometheus label set, a
//! Grafana message with a pasted `kubectl` line). The first value found for a key wins: the
//! structured parts of a message come before its prose.
//!
//! - Alertmanager's Slack template: title `[FIRING:1] KubePodCrashLooping (…)`, then
//!   `*Alert:* summary - `critical``, `*Description:* …`, `*Details:*` and bullets
//!   `• *namespace:* `default``; the `generatorURL` carries the expression as `g0.expr=`.
//! - Grafana alerting: `**Firing**`, `Value: …`, `Labels:` / `Annotations:` sections of
//!   ` - key = value` lines, `Source: http://…`.
//! - Generic: `{alertname="X", namespace="y"}`, `key=value`, and `key: value` lines.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use chrono::{DateTime, Utc};
use regex::Regex;

use super::AlertStatus;
use crate::timeparse::parse_timestamp;

/// Fields read straight from the text, before labels are mapped onto the target.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExtractedFields {
    pub alertname: Option<String>,
    pub severity: Option<String>,
    pub status: Option<AlertStatus>,
    pub starts_at: Option<DateTime<Utc>>,
    pub expression: Option<String>,
    pub summary: Option<String>,
    pub description: Option<String>,
    pub observed_value: Option<String>,
    pub source_url: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
}

static SLACK_LINK_WITH_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<((?:https?|mailto):[^|>\s]+)\|([^>]*)>").expect("static regex"));
static SLACK_LINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"<((?:https?|mailto):[^|>\s]+)>").expect("static regex"));
static URL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"https?://[^\s<>|"'`)]+"#).expect("static regex"));
static GENERATOR_EXPR: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[?&]g0\.expr=([^&\s<>|)]+)").expect("static regex"));
static TITLE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\[(FIRING|RESOLVED)(?::\s*\d+)?\]\s*([A-Za-z_][A-Za-z0-9_:.-]*)?")
        .expect("static regex")
});
static GRAFANA_STATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*\*{1,2}\s*(firing|resolved)\s*\*{1,2}\s*$").expect("static regex")
});
static SECTION_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[*_]*(labels|annotations|details|source|silence|dashboard|panel|value)[*_]*\s*:[*_]*\s*(.*)$")
        .expect("static regex")
});
/// ` - key = value` (Grafana) inside a Labels/Annotations section.
static DASH_KEY_EQUALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-•*]\s*([A-Za-z_][A-Za-z0-9_.:/-]*)\s*=\s*(.*?)\s*$").expect("static regex")
});
/// `• *namespace:* `default`` (Alertmanager template bullets) and `- *key*: value`.
static BULLET_BOLD_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-•]?\s*\*([A-Za-z_][A-Za-z0-9_ .-]*?)(?::\*|\*:)\s*(.*?)\s*$")
        .expect("static regex")
});
/// `*Alert:* summary - `critical``.
static ALERT_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*\*Alert:\*\s*(.*?)(?:\s+-\s+`([^`]+)`)?\s*$").expect("static regex")
});
static EXPRESSION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^\s*[-•]?\s*[*_`]*(?:expr|expression|promql|query)[*_`]*\s*[:=][*_]*\s*(.+?)\s*$",
    )
    .expect("static regex")
});
/// `Trigger:` / `Condition:` followed by a PromQL selector with label matchers.
static TRIGGER_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)^\s*[-•]?\s*[*_`]*(?:trigger|condition)[*_`]*\s*:[*_]*\s*([A-Za-z_:][A-Za-z0-9_:]*\{[^}]*=\s*"[^}]*\}.*?)\s*$"#)
        .expect("static regex")
});
/// A trailing `for 5m` (how long the condition must hold) is not PromQL.
static FOR_CLAUSE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)\s+for\s+\d+[smhd]\s*$").expect("static regex"));
static STARTS_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^\s*[-•]?\s*[*_]*(?:starts?(?:ed)?(?:[ _]?at)?|start[ _]time|fired[ _]at|firing[ _]since|active[ _]since)[*_]*\s*:[*_]*\s*(.+?)\s*$")
        .expect("static regex")
});
static LABEL_SET: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\{([^{}]*)\}").expect("static regex"));
static LABEL_PAIR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)""#)
        .expect("static regex")
});
/// A whole line `key: value` (prose or YAML-ish).
static KEY_COLON_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-•]?\s*[*_]*([A-Za-z_][A-Za-z0-9_.-]*)[*_]*\s*:[*_]*\s+(.+?)\s*$")
        .expect("static regex")
});
/// `key=value` tokens inside a line.
static KEY_EQUALS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s,;(\[])([A-Za-z_][A-Za-z0-9_.-]*)=("[^"]*"|'[^']*'|`[^`]*`|[^\s,;)\]]+)"#)
        .expect("static regex")
});

const ANNOTATION_KEYS: &[&str] = &[
    "summary",
    "description",
    "message",
    "runbook",
    "runbook_url",
    "dashboard_url",
];

#[derive(Clone, Copy, PartialEq)]
enum Section {
    None,
    Labels,
    Annotations,
}

/// Extracts every alert field the text states, in any of the supported formats.
pub fn extract_fields(text: &str) -> ExtractedFields {
    let text = unwrap_slack_markup(text);
    let mut out = ExtractedFields::default();

    if let Some(caps) = GENERATOR_EXPR.captures(&text) {
        let raw = format!("e={}", &caps[1]);
        out.expression = form_urlencoded::parse(raw.as_bytes())
            .next()
            .map(|(_, v)| v.trim().to_string())
            .filter(|v| !v.is_empty());
        out.source_url = URL
            .find_iter(&text)
            .find(|m| m.as_str().contains("g0.expr="))
            .map(|m| m.as_str().to_string());
    }

    let mut section = Section::None;
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        if let Some(caps) = TITLE.captures(line) {
            out.status.get_or_insert(parse_status(&caps[1]));
            if let Some(name) = caps.get(2) {
                set_once(&mut out.alertname, name.as_str());
            }
            continue;
        }
        if let Some(caps) = GRAFANA_STATE.captures(line) {
            out.status.get_or_insert(parse_status(&caps[1]));
            continue;
        }
        if let Some(caps) = SECTION_HEADER.captures(line) {
            let rest = caps[2].trim();
            match caps[1].to_ascii_lowercase().as_str() {
                "labels" => section = Section::Labels,
                "annotations" => section = Section::Annotations,
                "details" => section = Section::Labels,
                "source" => {
                    section = Section::None;
                    if let Some(url) = URL.find(rest) {
                        out.source_url.get_or_insert(url.as_str().to_string());
                    }
                }
                "value" => {
                    section = Section::None;
                    set_once(&mut out.observed_value, rest);
                    // Newer Grafana prints `[ var='A' labels={k=v, …} value=1 ]`; its labels
                    // are the alert's.
                    read_label_set(line, &mut out.labels);
                }
                _ => section = Section::None,
            }
            if matches!(section, Section::Labels | Section::Annotations)
                && !rest.is_empty()
                && !read_label_set(rest, &mut out.labels)
            {
                let pairs: Vec<(String, String)> = KEY_EQUALS
                    .captures_iter(rest)
                    .map(|caps| (caps[1].to_string(), caps[2].to_string()))
                    .collect();
                for (key, value) in pairs {
                    record_key_value(&mut out, &key, &value, section);
                }
            }
            continue;
        }
        if let Some(caps) = ALERT_LINE.captures(line) {
            set_once(&mut out.summary, &strip_decoration(&caps[1]));
            if let Some(severity) = caps.get(2) {
                set_once(&mut out.severity, severity.as_str());
            }
            continue;
        }
        if let Some(caps) = EXPRESSION_LINE.captures(line) {
            set_once(&mut out.expression, &strip_decoration(&caps[1]));
            continue;
        }
        // `Trigger: metric{pod="x"} > 5 for 5m` (Zabbix-style and hand-written webhooks): the
        // expression, and the selector's labels are the alert's.
        if let Some(caps) = TRIGGER_LINE.captures(line) {
            let expression = FOR_CLAUSE.replace(caps[1].trim(), "");
            set_once(&mut out.expression, &strip_decoration(&expression));
            read_label_set(line, &mut out.labels);
            continue;
        }
        if let Some(caps) = STARTS_LINE.captures(line) {
            if out.starts_at.is_none() {
                out.starts_at = parse_timestamp(&caps[1]);
            }
            continue;
        }
        // ` - key = value` bullets: a section's entries, or, outside any section, label lines
        // (some templates list labels without a `Labels:` header).
        if let Some(caps) = DASH_KEY_EQUALS.captures(line)
            && (section != Section::None || is_label_name(&caps[1]))
        {
            let target = if section == Section::Annotations {
                &mut out.annotations
            } else {
                &mut out.labels
            };
            insert_once(target, &caps[1], strip_decoration(&caps[2]));
            continue;
        }
        if let Some(caps) = BULLET_BOLD_KEY.captures(line) {
            record_key_value(&mut out, &caps[1], &caps[2], section);
            continue;
        }
        if read_label_set(line, &mut out.labels) {
            continue;
        }
        // `worker: payouts-worker · namespace: payments`: several `key: value` fields on one
        // line, between middle dots or bars, each its own.
        let fields: Vec<&str> = line
            .split(" · ")
            .flat_map(|field| field.split(" | "))
            .collect();
        if fields.len() > 1 && fields.iter().all(|f| KEY_COLON_LINE.is_match(f)) {
            for field in fields {
                if let Some(caps) = KEY_COLON_LINE.captures(field) {
                    record_key_value(&mut out, &caps[1], &caps[2], section);
                }
            }
            continue;
        }
        if let Some(caps) = KEY_COLON_LINE.captures(line) {
            let value = caps[2].to_string();
            // `key: value` where the value itself holds `a=b` pairs is a list, not one value.
            if !KEY_EQUALS.is_match(&value) || URL.is_match(&value) {
                record_key_value(&mut out, &caps[1], &value, section);
                continue;
            }
        }
        let without_urls = URL.replace_all(line, " ");
        for caps in KEY_EQUALS.captures_iter(&without_urls) {
            record_key_value(&mut out, &caps[1], &caps[2], section);
        }
    }

    crate::prose::read_subjects(&text, &mut out.labels);
    if let Some(severity) = label_in(&out.labels, "severity") {
        let severity = severity.clone();
        set_once(&mut out.severity, &severity);
    }
    if let Some(name) = label_in(&out.labels, "alertname") {
        // A label is more reliable than a title word (titles may be "[FIRING:2] Pod …").
        out.alertname = Some(name.clone());
    }
    for key in ["summary", "description"] {
        if let Some(value) = out.annotations.get(key).cloned() {
            let slot = if key == "summary" {
                &mut out.summary
            } else {
                &mut out.description
            };
            set_once(slot, &value);
        }
    }
    out
}

/// Routes one `key: value` pair to the field it names.
fn record_key_value(out: &mut ExtractedFields, raw_key: &str, raw_value: &str, section: Section) {
    // Label names keep their case (Prometheus compares them exactly:
    // `dimension_QueueName`); the keys this reads are matched in any case.
    let label = raw_key.trim().replace([' ', '-'], "_");
    let key = label.to_ascii_lowercase();
    let value = strip_decoration(raw_value);
    if value.is_empty() {
        return;
    }
    match key.as_str() {
        "status" | "state" => {
            let lower = value.to_ascii_lowercase();
            if lower.starts_with("firing") || lower.starts_with("alerting") {
                out.status.get_or_insert(AlertStatus::Firing);
            } else if lower.starts_with("resolved") || lower == "ok" || lower == "normal" {
                out.status.get_or_insert(AlertStatus::Resolved);
            }
        }
        "summary" => set_once(&mut out.summary, &value),
        "description" | "message" => set_once(&mut out.description, &value),
        "severity" => set_once(&mut out.severity, &value),
        "alert" if is_identifier(&value) => set_once(&mut out.alertname, &value),
        "alertname" | "alert_name" => set_once(&mut out.alertname, &value),
        _ => {}
    }
    if ANNOTATION_KEYS.contains(&key.as_str()) || section == Section::Annotations {
        insert_once(&mut out.annotations, &key, value);
    } else if is_label_name(&label) {
        insert_once(&mut out.labels, &label, value);
    }
}

/// Reads `{k="v", …}` label sets in a line into `labels`. Matchers other than `=` mean the
/// braces are a PromQL selector, not the alert's labels, so such sets are skipped.
fn read_label_set(line: &str, labels: &mut BTreeMap<String, String>) -> bool {
    let mut found = false;
    for set in LABEL_SET.captures_iter(line) {
        let pairs: Vec<_> = LABEL_PAIR.captures_iter(&set[1]).collect();
        if pairs.is_empty() || pairs.iter().any(|p| &p[2] != "=") {
            continue;
        }
        for pair in pairs {
            insert_once(labels, &pair[1], pair[3].replace("\\\"", "\""));
        }
        found = true;
    }
    found
}

fn unwrap_slack_markup(text: &str) -> String {
    let text = SLACK_LINK_WITH_TEXT.replace_all(text, "$2 $1");
    let text = SLACK_LINK.replace_all(&text, "$1");
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// Removes Slack decoration around a value: backticks, bold/italic markers, quotes.
fn strip_decoration(value: &str) -> String {
    value
        .trim()
        .trim_matches(|c| matches!(c, '`' | '*' | '_' | '"' | '\''))
        .trim()
        .to_string()
}

fn parse_status(text: &str) -> AlertStatus {
    if text.eq_ignore_ascii_case("resolved") {
        AlertStatus::Resolved
    } else {
        AlertStatus::Firing
    }
}

fn set_once(slot: &mut Option<String>, value: &str) {
    let value = value.trim();
    if slot.is_none() && !value.is_empty() {
        *slot = Some(value.to_string());
    }
}

/// A label by name in any case (`Severity`, `severity`).
pub(crate) fn label_in<'a>(labels: &'a BTreeMap<String, String>, key: &str) -> Option<&'a String> {
    labels.get(key).or_else(|| {
        labels
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v)
    })
}

fn insert_once(map: &mut BTreeMap<String, String>, key: &str, value: String) {
    if !value.is_empty() {
        map.entry(key.to_string()).or_insert(value);
    }
}

fn is_identifier(value: &str) -> bool {
    let mut chars = value.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ':' | '.' | '-'))
}

fn is_label_name(key: &str) -> bool {
    let mut chars = key.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}
