//! Tool arguments as the real servers read them: strings (empty counts as missing), required
//! ones, times as RFC 3339 or Unix seconds, and query text compared with a scenario's.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

pub(super) fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    args.get(key)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
}

pub(super) fn required<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    str_arg(args, key).ok_or_else(|| format!("failed to get required parameter `{key}`"))
}

/// Parses an RFC 3339 or Unix-seconds time argument.
pub(super) fn time_arg(
    args: &Map<String, Value>,
    key: &str,
) -> Result<Option<DateTime<Utc>>, String> {
    let Some(value) = args.get(key).filter(|v| !v.is_null()) else {
        return Ok(None);
    };
    if let Some(n) = value.as_f64() {
        return DateTime::from_timestamp(n as i64, 0)
            .map(Some)
            .ok_or_else(|| format!("invalid `{key}`: {n}"));
    }
    let text = value.as_str().unwrap_or_default().trim();
    if let Ok(n) = text.parse::<f64>() {
        return DateTime::from_timestamp(n as i64, 0)
            .map(Some)
            .ok_or_else(|| format!("invalid `{key}`: {text}"));
    }
    DateTime::parse_from_rfc3339(text)
        .map(|t| Some(t.with_timezone(&Utc)))
        .map_err(|e| format!("invalid `{key}` {text:?}: {e} (use RFC 3339 or a Unix timestamp)"))
}

/// Queries match whatever their spacing: the scenario and the investigation need not agree on
/// it.
pub(super) fn squash(query: &str) -> String {
    query.chars().filter(|c| !c.is_whitespace()).collect()
}
