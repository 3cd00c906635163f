//! Timestamps as they appear in alerts and tool output.
//!
//! Integrations print times in a handful of shapes: RFC 3339 (`2025-01-27T06:28:21Z`, Kubernetes
//! objects, Prometheus), Go's default `time.Time` formatting (`2025-01-27 06:28:21.17 +0000 UTC`,
//! Alertmanager templates), and log timestamps without a zone (`2025-05-29 10:15:28,411`). A time
//! without a zone is taken as UTC, which is what Kubernetes and most log shippers emit.

use std::ops::Range;
use std::sync::LazyLock;

use chrono::{DateTime, NaiveDateTime, Utc};
use regex::Regex;

static TIMESTAMP: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\b(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2})?)(?:[.,](\d{1,9}))?(?:\s?(Z|[+-]\d{2}:?\d{2})\b)?",
    )
    .expect("static regex")
});

/// Every timestamp in `text` with its byte range, in order of appearance.
pub fn find_timestamps(text: &str) -> Vec<(DateTime<Utc>, Range<usize>)> {
    TIMESTAMP
        .captures_iter(text)
        .filter_map(|caps| {
            let whole = caps.get(0)?;
            let date = caps.get(1)?.as_str();
            let mut clock = caps.get(2)?.as_str().to_string();
            if clock.len() == 5 {
                clock.push_str(":00");
            }
            let fraction = caps.get(3).map_or("0", |m| m.as_str());
            let naive = NaiveDateTime::parse_from_str(
                &format!("{date}T{clock}.{fraction}"),
                "%Y-%m-%dT%H:%M:%S%.f",
            )
            .ok()?;
            let offset_seconds = match caps.get(4).map(|m| m.as_str()) {
                None | Some("Z") => 0,
                Some(offset) => parse_offset_seconds(offset)?,
            };
            let utc = naive - chrono::Duration::seconds(i64::from(offset_seconds));
            Some((utc.and_utc(), whole.range()))
        })
        .collect()
}

/// The first timestamp in `text`, if any.
pub fn parse_timestamp(text: &str) -> Option<DateTime<Utc>> {
    find_timestamps(text).into_iter().next().map(|(t, _)| t)
}

/// `+01:00` / `-0530` → seconds east of UTC.
fn parse_offset_seconds(offset: &str) -> Option<i32> {
    let sign = if offset.starts_with('-') { -1 } else { 1 };
    let digits: String = offset.chars().filter(|c| c.is_ascii_digit()).collect();
    if digits.len() != 4 {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits[2..].parse().ok()?;
    Some(sign * (hours * 3600 + minutes * 60))
}

/// A Unix timestamp in seconds (possibly fractional, as Prometheus returns them).
pub fn from_unix_seconds(seconds: f64) -> Option<DateTime<Utc>> {
    if !seconds.is_finite() {
        return None;
    }
    let whole = seconds.floor();
    let nanos = ((seconds - whole) * 1e9).round() as u32;
    DateTime::from_timestamp(whole as i64, nanos.min(999_999_999))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utc(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    #[test]
    fn parses_the_shapes_integrations_print() {
        let cases = [
            ("2025-01-27T06:28:21Z", "2025-01-27T06:28:21Z"),
            (
                "2025-01-27T06:28:21.173994+00:00",
                "2025-01-27T06:28:21.173994Z",
            ),
            (
                "2025-01-27 06:28:21.173994 +0000 UTC",
                "2025-01-27T06:28:21.173994Z",
            ),
            (
                "at 2025-01-27T07:28:21+01:00 it broke",
                "2025-01-27T06:28:21Z",
            ),
            (
                "2025-05-29 10:15:28,411 - ERROR",
                "2025-05-29T10:15:28.411Z",
            ),
            ("2025-05-29 10:15", "2025-05-29T10:15:00Z"),
        ];
        for (text, expected) in cases {
            assert_eq!(parse_timestamp(text), Some(utc(expected)), "{text}");
        }
    }

    #[test]
    fn finds_all_timestamps_with_ranges() {
        let text = "first 2025-01-01T00:00:00Z then 2025-01-01T00:05:00Z";
        let found = find_timestamps(text);
        assert_eq!(found.len(), 2);
        assert_eq!(&text[found[1].1.clone()], "2025-01-01T00:05:00Z");
    }

    #[test]
    fn ignores_non_dates() {
        assert_eq!(parse_timestamp("sha256:2025-13-99"), None);
        assert_eq!(parse_timestamp("no time here"), None);
        assert_eq!(parse_timestamp("2025-02-30T00:00:00Z"), None);
    }

    #[test]
    fn converts_unix_seconds() {
        assert_eq!(
            from_unix_seconds(1_735_689_600.5),
            Some(utc("2025-01-01T00:00:00.5Z"))
        );
        assert_eq!(from_unix_seconds(f64::NAN), None);
    }
}
