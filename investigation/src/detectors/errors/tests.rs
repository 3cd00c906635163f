//! The strongest evidence when nothing else explains it: the most severe and latest error
//! lines of a log (read by their level), a warning the process keeps repeating, and Warning
//! events by reason, routine ones skipped.

use serde_json::json;

use super::*;
use crate::detectors::Fact;
use crate::detectors::testing::{
    assert_ends_with, assert_starts_with, assert_verbatim, ev, events,
};
use crate::detectors::text::below_error_level;

fn log(text: &str) -> Evidence {
    ev(
        1,
        Capability::PodLogsCurrent,
        json!({"name": "api-1"}),
        text,
    )
}

#[test]
fn the_most_severe_and_latest_error_lines_come_first() {
    let text = "INFO starting\nERROR db: timeout after 30s\nINFO retrying\nERROR db: timeout after 31s\nFATAL cannot load key store\n";
    let evidence = log(text);
    let found = error_lines(&evidence, None);
    assert_verbatim(&found, std::slice::from_ref(&evidence));
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0].refs[0].quote, "FATAL cannot load key store");
    assert_ends_with(&found[0].title(), "`cannot load key store`");
    assert_eq!(found[0].resource().as_deref(), Some("api-1"));
    assert_eq!(found[1].refs[0].quote, "ERROR db: timeout after 31s");
    assert!(found.iter().all(|f| !f.verified));
}

#[test]
fn a_warning_repeated_with_no_error_is_what_the_process_is_stuck_on() {
    let text = "\
2025-03-04T02:00:00Z INFO nightly-report starting
2025-03-04T02:00:05Z WARN lock report-lock held by nightly-report-29087400-x2k4q, retrying in 30s
2025-03-04T02:00:35Z WARN lock report-lock held by nightly-report-29087400-x2k4q, retrying in 30s
2025-03-04T02:01:05Z WARN lock report-lock held by nightly-report-29087400-x2k4q, retrying in 30s
";
    let evidence = log(text);
    let found = error_lines(&evidence, None);
    assert_eq!(found.len(), 1, "{found:#?}");
    let Fact::ErrorLine(line) = &found[0].fact else {
        panic!("{found:#?}");
    };
    assert_eq!(line.severity, Severity::RepeatedWarning);
    // The latest.
    assert_starts_with(&line.line, "2025-03-04T02:01:05Z");
}

#[test]
fn warning_events_are_listed_by_reason_and_routine_ones_skipped() {
    let list = "# The following events (YAML format) were found:\n- InvolvedObject:\n    Kind: Pod\n    Name: api-1\n  Message: Back-off restarting failed container\n  Reason: BackOff\n  Type: Warning\n- InvolvedObject:\n    Kind: PersistentVolumeClaim\n    Name: data-0\n  Message: 'waiting for first consumer'\n  Reason: FailedBinding\n  Type: Warning\n- InvolvedObject:\n    Kind: Pod\n    Name: api-1\n  Message: Started container\n  Reason: Started\n  Type: Normal\n";
    let evidence = events(1, list);
    let found = warning_events(&evidence);
    assert_verbatim(&found, std::slice::from_ref(&evidence));
    assert_eq!(found.len(), 1, "{found:#?}");
    assert_eq!(
        found[0].title(),
        "Warning event `FailedBinding` on `data-0`"
    );
    assert_eq!(
        found[0].refs[0].quote,
        "Message: 'waiting for first consumer'"
    );
    assert!(!found[0].verified);
}

#[test]
fn log_levels_are_read_from_prefixes_and_fields() {
    let cases = [
        (
            "2025-01-01T00:00:00.022Z WARN  cache: redis down",
            Some(LogLevel::Warn),
        ),
        (
            "2025-01-01T00:00:00Z INFO  [main] exit code 1",
            Some(LogLevel::Info),
        ),
        (
            "time=2025-01-01T00:00:00Z level=ERROR msg=\"giving up\"",
            Some(LogLevel::Error),
        ),
        (
            "{\"level\":\"fatal\",\"ts\":\"2025\",\"msg\":\"cannot start\"}",
            Some(LogLevel::Fatal),
        ),
        (
            "{\"severity\":\"WARNING\",\"message\":\"slow\"}",
            Some(LogLevel::Warn),
        ),
        (
            "FATAL required setting PAYMENT_MODE is not set",
            Some(LogLevel::Fatal),
        ),
        // Fluent Bit's bracketed level, after its bracketed time.
        (
            "[2025/01/01 00:00:00] [error] [lib] backend failed",
            Some(LogLevel::Error),
        ),
        (
            "[2025/01/01 00:00:00] [ info] [fluent bit] version=3.1.9",
            Some(LogLevel::Info),
        ),
        // A log store's JSON answer holds the line with its quotes escaped.
        (
            r#"{\"level\":\"warn\",\"msg\":\"batch done with failures\"}"#,
            Some(LogLevel::Warn),
        ),
        ("sh: wge: not found", None),
        // A level word deep inside the message is not the line's level.
        (
            "2025-01-01T00:00:00Z connecting to the upstream service at payments:8443 failed with ERROR 503",
            None,
        ),
    ];
    for (line, want) in cases {
        assert_eq!(log_level(line), want, "{line}");
    }
    assert!(below_error_level("2025-01-01T00:00:00Z WARN retrying"));
    assert!(!below_error_level("2025-01-01T00:00:00Z ERROR gave up"));
    assert!(!below_error_level("no level at all"));
}
