//! The evaluation report: a plain-text table with a totals line, or JSON. With `--model`, each
//! row also shows the model path's result beside the no-model one (result, grounded, fallback
//! or `used`, model calls, tool calls by the model, tokens, model latency), with model totals.

use std::fmt::Write as _;

use firstline_lab::{ExpectCheck, ExpectedVerdict, HeadlineCheck};
use serde_json::{Value, json};

use super::runner::{CaseOutcome, ModelOutcome, ModelStatus, Status};

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

/// Whether the first line stated the expected cause: `right`, `WRONG`, `ask` (the round asked,
/// stating no cause), `-` (the case names no headline, or did not run).
fn headline_label(check: &ExpectCheck) -> &'static str {
    if check.wrong_headline() {
        return "WRONG";
    }
    match check.headline {
        HeadlineCheck::Right => "right",
        HeadlineCheck::Asked => "ask",
        HeadlineCheck::NotExpected | HeadlineCheck::Wrong { .. } => "-",
    }
}

/// What made a headline wrong: the first line, and forbidden causes.
fn wrong_headline_note(check: &ExpectCheck) -> Option<String> {
    let mut parts = Vec::new();
    if let HeadlineCheck::Wrong { first_line } = &check.headline {
        parts.push(format!("first line {first_line:?}"));
    }
    if !check.wrong_causes.is_empty() {
        parts.push(format!("forbidden cause(s) {:?}", check.wrong_causes));
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Cases that posted a wrong headline.
pub fn wrong_headlines(outcomes: &[CaseOutcome]) -> usize {
    outcomes.iter().filter(|o| o.check.wrong_headline()).count()
}

fn missing_label(outcome: &CaseOutcome) -> String {
    check_missing(&outcome.check)
}

fn check_missing(check: &ExpectCheck) -> String {
    let groups: Vec<String> = check.missing.iter().map(|any| any.join("|")).collect();
    if groups.is_empty() {
        "-".into()
    } else {
        groups.join(", ")
    }
}

fn forbidden_label(outcome: &CaseOutcome) -> String {
    check_forbidden(&outcome.check)
}

fn check_forbidden(check: &ExpectCheck) -> String {
    if check.forbidden.is_empty() {
        "-".into()
    } else {
        check.forbidden.join(", ")
    }
}

/// The model columns, inserted after `result` with `--model`.
const MODEL_HEADER: [&str; 7] = [
    "model",
    "grounded",
    "fallback",
    "m.calls",
    "m.tools",
    "tokens",
    "m.latency",
];

fn model_cells(model: Option<&ModelOutcome>) -> [String; 7] {
    let Some(m) = model else {
        return std::array::from_fn(|_| "-".to_string());
    };
    [
        m.status.label().to_string(),
        if m.posted { "yes" } else { "no" }.to_string(),
        fallback_label(m).to_string(),
        m.run.model_calls.to_string(),
        m.run.tool_calls.to_string(),
        format!("{}+{}", m.run.prompt_tokens, m.run.completion_tokens),
        format!("{:.2}s", m.run.latency_ms as f64 / 1000.0),
    ]
}

/// `used`, or why the round fell back to the deterministic text.
fn fallback_label(model: &ModelOutcome) -> &str {
    model.run.fallback.as_deref().unwrap_or("used")
}

/// What every case's model path came to.
#[derive(Debug, Default)]
struct ModelTotals {
    name: String,
    cases: usize,
    passed: usize,
    failed: usize,
    regressed: usize,
    /// Passed where the no-model result did not.
    fixed: usize,
    used: usize,
    fallbacks: std::collections::BTreeMap<String, usize>,
    model_calls: u64,
    tool_calls: u64,
    prompt_tokens: u64,
    completion_tokens: u64,
    latency_ms: u64,
    dropped_claims: usize,
}

impl ModelTotals {
    fn of(outcomes: &[CaseOutcome]) -> Self {
        let mut totals = Self::default();
        for (outcome, m) in outcomes
            .iter()
            .filter_map(|o| o.model.as_ref().map(|m| (o, m)))
        {
            if totals.name.is_empty() {
                totals.name.clone_from(&m.run.model);
            }
            totals.cases += 1;
            match m.status {
                ModelStatus::Pass => totals.passed += 1,
                ModelStatus::Fail => totals.failed += 1,
                ModelStatus::Regressed => totals.regressed += 1,
            }
            if m.status == ModelStatus::Pass && !matches!(outcome.status, Status::Pass) {
                totals.fixed += 1;
            }
            match &m.run.fallback {
                None => totals.used += 1,
                Some(reason) => *totals.fallbacks.entry(reason.clone()).or_default() += 1,
            }
            totals.model_calls += u64::from(m.run.model_calls);
            totals.tool_calls += u64::from(m.run.tool_calls);
            totals.prompt_tokens += m.run.prompt_tokens;
            totals.completion_tokens += m.run.completion_tokens;
            totals.latency_ms += m.run.latency_ms;
            totals.dropped_claims += m.run.dropped_claims.len();
        }
        totals
    }

    fn line(&self) -> String {
        let fallbacks = if self.fallbacks.is_empty() {
            String::new()
        } else {
            let reasons: Vec<String> = self
                .fallbacks
                .iter()
                .map(|(reason, n)| format!("{reason}: {n}"))
                .collect();
            format!(" ({})", reasons.join(", "))
        };
        format!(
            "model {}: {} cases: {} passed, {} failed, {} regressed, {} fixed; used on {}, \
             fell back on {}{fallbacks}; {} model calls, {} tool calls, {}+{} tokens, {} dropped \
             claims; {:.1}s model latency",
            if self.name.is_empty() {
                "-"
            } else {
                &self.name
            },
            self.cases,
            self.passed,
            self.failed,
            self.regressed,
            self.fixed,
            self.used,
            self.cases - self.used,
            self.model_calls,
            self.tool_calls,
            self.prompt_tokens,
            self.completion_tokens,
            self.dropped_claims,
            self.latency_ms as f64 / 1000.0,
        )
    }

    fn to_json(&self) -> Value {
        json!({
            "model": self.name,
            "cases": self.cases,
            "passed": self.passed,
            "failed": self.failed,
            "regressed": self.regressed,
            "fixed": self.fixed,
            "used": self.used,
            "fallbacks": self.fallbacks,
            "model_calls": self.model_calls,
            "tool_calls": self.tool_calls,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "latency_ms": self.latency_ms,
            "dropped_claims": self.dropped_claims,
        })
    }
}

/// Cases whose model result failed where the no-model result passed.
pub fn regressions(outcomes: &[CaseOutcome]) -> usize {
    outcomes
        .iter()
        .filter(|o| {
            o.model
                .as_ref()
                .is_some_and(|m| m.status == ModelStatus::Regressed)
        })
        .count()
}

fn model_json(m: &ModelOutcome) -> Value {
    json!({
        "result": m.status.label().to_ascii_lowercase(),
        "grounded": m.posted,
        "actual": actual_label(Some(m.posted)),
        "fallback": m.run.fallback,
        "detail": m.run.detail,
        "model": m.run.model,
        "model_calls": m.run.model_calls,
        "tool_calls": m.run.tool_calls,
        "prompt_tokens": m.run.prompt_tokens,
        "completion_tokens": m.run.completion_tokens,
        "latency_ms": m.run.latency_ms,
        "dropped_claims": m.run.dropped_claims.len(),
        "asked": m.run.asked,
        "headline": headline_label(&m.check).to_ascii_lowercase(),
        "missing": m.check.missing,
        "forbidden": m.check.forbidden,
        "text": m.text,
    })
}

/// The table, one row per case, then notes and errors, then the totals and the memory note.
/// `with_model` adds the model columns, notes and totals (`--model`).
pub fn render(outcomes: &[CaseOutcome], memory_note: &str, with_model: bool) -> String {
    let mut header = vec![
        "case",
        "format",
        "result",
        "expected",
        "actual",
        "headline",
        "missing",
        "forbidden",
        "tools",
        "wall",
    ];
    if with_model {
        header.splice(3..3, MODEL_HEADER);
    }
    let rows: Vec<Vec<String>> = outcomes
        .iter()
        .map(|o| {
            let mut row = vec![
                o.name.clone(),
                o.kind.label().to_string(),
                o.status.label().to_string(),
                expected_label(o.expected).to_string(),
                actual_label(o.posted).to_string(),
                headline_label(&o.check).to_string(),
                missing_label(o),
                forbidden_label(o),
                o.tool_calls.to_string(),
                format!("{:.2}s", o.wall.as_secs_f64()),
            ];
            if with_model {
                row.splice(3..3, model_cells(o.model.as_ref()));
            }
            row
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
    let header: Vec<String> = header.into_iter().map(String::from).collect();
    line(&mut out, &header);
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
        if let Some(note) = wrong_headline_note(&o.check) {
            let _ = writeln!(out, "{}: wrong headline: {note}", o.name);
        }
        if let Some(m) = o.model.as_ref().filter(|_| with_model) {
            if let (Some(reason), Some(detail)) = (&m.run.fallback, &m.run.detail) {
                let _ = writeln!(out, "{}: model fell back ({reason}): {detail}", o.name);
            }
            if m.status != ModelStatus::Pass {
                let _ = writeln!(
                    out,
                    "{}: model {}: actual {}, headline {}, missing {}, forbidden {}",
                    o.name,
                    m.status.label(),
                    actual_label(Some(m.posted)),
                    headline_label(&m.check),
                    check_missing(&m.check),
                    check_forbidden(&m.check),
                );
            }
        }
    }
    let count = |s: Status| outcomes.iter().filter(|o| o.status == s).count();
    let headlines = |want: &HeadlineCheck| {
        outcomes
            .iter()
            .filter(|o| !o.check.wrong_headline() && o.check.headline == *want)
            .count()
    };
    let _ = writeln!(
        out,
        "\n{} cases: {} passed, {} failed, {} xfail, {} xpass; headlines: {} right, {} wrong, {} \
         asked; {} tool calls; {:.1}s",
        outcomes.len(),
        count(Status::Pass),
        count(Status::Fail),
        count(Status::XFail),
        count(Status::XPass),
        headlines(&HeadlineCheck::Right),
        wrong_headlines(outcomes),
        headlines(&HeadlineCheck::Asked),
        outcomes.iter().map(|o| o.tool_calls).sum::<u64>(),
        outcomes.iter().map(|o| o.wall.as_secs_f64()).sum::<f64>(),
    );
    if with_model {
        let _ = writeln!(out, "{}", ModelTotals::of(outcomes).line());
    }
    let _ = writeln!(out, "{memory_note}");
    out
}

/// The same, as JSON (with each case's posted text). `with_model` adds each case's `model`
/// object (`null` when the case did not run) and the model totals.
pub fn to_json(outcomes: &[CaseOutcome], memory_note: &str, with_model: bool) -> Value {
    let cases: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            let mut case = json!({
                "case": o.name,
                "format": o.kind.label(),
                "result": o.status.label().to_ascii_lowercase(),
                "expected": expected_label(o.expected),
                "actual": actual_label(o.posted),
                "headline": headline_label(&o.check).to_ascii_lowercase(),
                "wrong_headline": wrong_headline_note(&o.check),
                "missing": o.check.missing,
                "forbidden": o.check.forbidden,
                "tool_calls": o.tool_calls,
                "wall_ms": u64::try_from(o.wall.as_millis()).unwrap_or(u64::MAX),
                "error": o.error,
                "notes": o.notes,
                "text": o.text,
            });
            if with_model {
                case["model"] = o.model.as_ref().map_or(Value::Null, model_json);
            }
            case
        })
        .collect();
    let mut report = json!({
        "memory": memory_note,
        "cases": cases,
        "wrong_headlines": wrong_headlines(outcomes),
    });
    if with_model {
        report["model"] = ModelTotals::of(outcomes).to_json();
    }
    report
}
