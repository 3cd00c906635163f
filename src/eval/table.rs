//! The evaluation report: a plain-text table with a totals line, or JSON.

use std::fmt::Write as _;

use firstline_lab::ExpectedVerdict;
use serde_json::{Value, json};

use super::runner::{CaseOutcome, Status};

fn expected_label(expected: Option<ExpectedVerdict>) -> &'static str {
    match expected {
        Some(ExpectedVerdict::Post) => "post",
        Some(ExpectedVerdict::Ask) => "ask",
        Some(ExpectedVerdict::Either) => "either",
        None => "-",
    }
}

fn actual_label(posted: Option<bool>) -> &'static str {
    match posted {
        Some(true) => "post",
        Some(false) => "ask",
        None => "error",
    }
}

fn missing_label(outcome: &CaseOutcome) -> String {
    let groups: Vec<String> = outcome
        .check
        .missing
        .iter()
        .map(|any| any.join("|"))
        .collect();
    if groups.is_empty() {
        "-".into()
    } else {
        groups.join(", ")
    }
}

fn forbidden_label(outcome: &CaseOutcome) -> String {
    if outcome.check.forbidden.is_empty() {
        "-".into()
    } else {
        outcome.check.forbidden.join(", ")
    }
}

/// The table, one row per case, then notes and errors, then the totals and the memory note.
pub fn render(outcomes: &[CaseOutcome], memory_note: &str) -> String {
    let header = [
        "case",
        "format",
        "result",
        "expected",
        "actual",
        "missing",
        "forbidden",
        "tools",
        "wall",
    ];
    let rows: Vec<[String; 9]> = outcomes
        .iter()
        .map(|o| {
            [
                o.name.clone(),
                o.kind.label().to_string(),
                o.status.label().to_string(),
                expected_label(o.expected).to_string(),
                actual_label(o.posted).to_string(),
                missing_label(o),
                forbidden_label(o),
                o.tool_calls.to_string(),
                format!("{:.2}s", o.wall.as_secs_f64()),
            ]
        })
        .collect();
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let line = |out: &mut String, cells: &[String]| {
        let text: Vec<String> = cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        let _ = writeln!(out, "{}", text.join("  ").trim_end());
    };
    line(&mut out, &header.map(String::from));
    for row in &rows {
        line(&mut out, row);
    }
    for o in outcomes {
        if let Some(error) = &o.error {
            let _ = writeln!(out, "\n{}: error: {error}", o.name);
        }
        for note in &o.notes {
            let _ = writeln!(out, "{}: {note}", o.name);
        }
    }
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let _ = writeln!(
        out,
        "\n{} cases: {} passed, {} failed, {} xfail, {} xpass; {} tool calls; {:.1}s",
        outcomes.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::XFail),
        count(Status::XPass),
        outcomes.iter().map(|o| o.tool_calls).sum::<u64>(),
        outcomes.iter().map(|o| o.wall.as_secs_f64()).sum::<f64>(),
    );
    let _ = writeln!(out, "{memory_note}");
    out
}

/// The same, as JSON (with each case's posted text).
pub fn to_json(outcomes: &[CaseOutcome], memory_note: &str) -> Value {
    let cases: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "case": o.name,
                "format": o.kind.label(),
                "result": o.status.label().to_ascii_lowercase(),
                "expected": expected_label(o.expected),
                "actual": actual_label(o.posted),
                "missing": o.check.missing,
                "forbidden": o.check.forbidden,
                "tool_calls": o.tool_calls,
                "wall_ms": u64::try_from(o.wall.as_millis()).unwrap_or(u64::MAX),
                "error": o.error,
                "notes": o.notes,
                "text": o.text,
            })
        })
        .collect();
    json!({"memory": memory_note, "cases": cases})
}
