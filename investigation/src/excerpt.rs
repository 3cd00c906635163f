//! Evidence excerpts: bounded text cut from a (redacted) tool result.
//!
//! A pod log can be megabytes; the excerpt is what gets stored, cited and shown, so it must be
//! small (≤ 3,500 characters each by default, twice that for a list of Kubernetes objects) and
//! must keep what matters: error lines with a little context, and the end of the text, where a
//! crashing process writes its last words. Omitted stretches are marked `… [N lines omitted] …` so a reader knows the
//! excerpt is not the whole story.
//!
//! [`RoundBudget`] caps the total per round (≤ 40,000 characters by default): later excerpts
//! get whatever is left, so a round with many tool calls cannot grow without bound.
//!
//! Sizes are counted in characters (Unicode scalar values), and every cut is on a character
//! boundary, so multibyte text is never split.

use firstline_model::text::prefix;
use std::sync::LazyLock;

use regex::Regex;

mod objects;

/// Longest excerpt there is: the `evidence.excerpt` column refuses longer ones.
pub const MAX_EXCERPT_CHARS: usize = 7_000;
/// Default maximum characters per excerpt.
pub const DEFAULT_EXCERPT_CHARS: usize = 3_500;
/// A list of Kubernetes objects, or a range-query answer of several series, may take this many
/// times the per-excerpt limit (up to [`MAX_EXCERPT_CHARS`]): every item's identity is what
/// lets pods be compared, and every series' shape what lets series be compared and divided.
const OBJECT_LIST_FACTOR: usize = 2;
/// Default maximum characters of all excerpts in one round.
pub const DEFAULT_ROUND_CHARS: usize = 40_000;
/// Lines kept on each side of an error line.
pub const DEFAULT_CONTEXT_LINES: usize = 2;

/// Lines at the start that are always worth keeping when they fit (headers, first log lines).
const HEAD_LINES: usize = 2;
/// Lines at the end that are always worth keeping: a crashing process writes its last words
/// there.
const TAIL_LINES: usize = 5;
/// Below this many characters an excerpt is not worth making; the marker alone is stored.
const MIN_USEFUL_CHARS: usize = 80;

/// A line that likely explains a failure. Deliberately broad: keeping a harmless line costs a
/// little space, dropping the crash line costs the investigation.
static ERRORISH_LINE: LazyLock<Regex> = regex!(
    r"(?i)(\berr(or)?s?\b|\bfatal\b|\bpanic|\bexception\b|[a-z]exception\b|\bfail(ed|ure|ing|s)?\b|\bkilled\b|oomkill|\brefused\b|\bdenied\b|back-?off|exit code|exited with|\btraceback\b|\bnot found\b|no such|\btimed? ?out\b|\bunable to\b|\bcannot\b|\bunauthori[sz]ed\b|\bforbidden\b|\bevicted\b|\bunhealthy\b|\bx509\b|\bexpired\b|\binsufficient\b)"
);

/// A key with no value at shallow indentation: a section or container header.
static SECTION_HEADER: LazyLock<Regex> = regex!(r"^ {0,3}[A-Za-z][A-Za-z0-9 ._-]{0,60}:\s*$");

/// Limits for excerpts; all configurable, with the defaults above.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExcerptLimits {
    pub per_excerpt_chars: usize,
    pub per_round_chars: usize,
    pub context_lines: usize,
}

impl Default for ExcerptLimits {
    fn default() -> Self {
        Self {
            per_excerpt_chars: DEFAULT_EXCERPT_CHARS,
            per_round_chars: DEFAULT_ROUND_CHARS,
            context_lines: DEFAULT_CONTEXT_LINES,
        }
    }
}

/// True when a line looks like it reports an error (used to choose what to keep).
pub fn is_errorish_line(line: &str) -> bool {
    ERRORISH_LINE.is_match(line)
}

/// The elision marker for `n` omitted lines.
pub fn omitted_marker(n: usize) -> String {
    let unit = if n == 1 { "line" } else { "lines" };
    format!("… [{n} {unit} omitted] …")
}

/// An excerpt of `text` of at most `max_chars` characters, keeping error lines with
/// `context_lines` of context and the tail of the text. Text that fits is returned unchanged.
pub fn excerpt(text: &str, max_chars: usize, context_lines: usize) -> String {
    if char_len(text) <= max_chars {
        return text.to_string();
    }
    if let Some(thinned) = thin_matrix(text, max_chars) {
        return thinned;
    }
    if let Some(slowest) = slowest_traces(text, max_chars) {
        return slowest;
    }
    // A single overlong line (minified JSON, a stack dumped on one line) would otherwise block
    // every selection: shorten such lines first.
    let longest_line = (max_chars / 2).max(1);
    let lines: Vec<String> = text
        .lines()
        .map(|line| shorten_line(line, longest_line))
        .collect();

    // Kubernetes objects stay YAML: each kept line with the lines that open it, and a list's
    // items' identities first.
    let shape = objects::Shape::of(&lines);
    let mut sets: Vec<Vec<usize>> = ranges_by_priority(&lines, context_lines)
        .into_iter()
        .map(|(start, end)| (start..end).collect())
        .collect();
    if let Some(shape) = &shape {
        sets.splice(0..0, shape.identities());
    }
    let mut chosen = vec![false; lines.len()];
    let mut any_chosen = false;
    for set in sets {
        let mut candidate = chosen.clone();
        for i in set {
            candidate[i] = true;
        }
        if let Some(shape) = &shape {
            shape.close(&mut candidate);
            objects::fill_small_gaps(&lines, &mut candidate);
        }
        if char_len(&render(&lines, &candidate, shape.is_some())) <= max_chars {
            chosen = candidate;
            any_chosen = true;
        }
    }
    if any_chosen {
        return render(&lines, &chosen, shape.is_some());
    }
    truncate_chars(text, max_chars)
}

/// The most a range-query answer is thinned: beyond every 12th point a shape is no longer read.
const MAX_THINNING: usize = 12;

/// A Prometheus range-query answer (`{"result": [{"metric": …, "values": [[t, "v"], …]}]}`,
/// also under `data`) that does not fit, with every k-th point of every series kept, and every
/// point of the window's last k-th (each series' last point among them), for the smallest k
/// that fits: a cut would drop whole series, thinning keeps every series' shape. The recent
/// stretch stays whole because an alert fires at the end of its window: a step a few minutes
/// before it would otherwise fall between two kept points and could not be dated. The answer
/// says how it was thinned (`"thinned": "every 3rd point, and every point of the last 2 h"`).
/// `None` for anything else, or when even the most thinning does not fit.
fn thin_matrix(text: &str, max_chars: usize) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let has_matrix = |v: &serde_json::Value| {
        v.pointer("/result")
            .or_else(|| v.pointer("/data/result"))
            .and_then(serde_json::Value::as_array)
            .is_some_and(|series| series.iter().any(|s| s.get("values").is_some()))
    };
    if !has_matrix(&value) {
        return None;
    }
    // Points are kept on one grid for all series (by time, not by position), so series that
    // start at different times still share their kept timestamps and can be divided.
    let times: Vec<f64> = ["/result", "/data/result"]
        .iter()
        .filter_map(|p| value.pointer(p).and_then(serde_json::Value::as_array))
        .flatten()
        .filter_map(|s| s.get("values").and_then(serde_json::Value::as_array))
        .flatten()
        .filter_map(|pair| pair.get(0).and_then(serde_json::Value::as_f64))
        .collect();
    let first = times.iter().copied().fold(f64::INFINITY, f64::min);
    let end = times.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let step = sorted
        .windows(2)
        .map(|w| w[1] - w[0])
        .filter(|d| *d > 0.0)
        .fold(f64::INFINITY, f64::min);
    let slot = |pair: &serde_json::Value| -> usize {
        match pair.get(0).and_then(serde_json::Value::as_f64) {
            Some(t) if step.is_finite() => ((t - first) / step).round().max(0.0) as usize,
            _ => 0,
        }
    };
    for k in 2..=MAX_THINNING {
        let recent_secs = (end - first) / k as f64;
        let recent = |pair: &serde_json::Value| {
            pair.get(0)
                .and_then(serde_json::Value::as_f64)
                .is_some_and(|t| t >= end - recent_secs)
        };
        let mut thinned = value.clone();
        let series = thinned
            .pointer_mut("/result")
            .or(None)
            .and_then(serde_json::Value::as_array_mut);
        let series = match series {
            Some(series) => series,
            None => thinned
                .pointer_mut("/data/result")
                .and_then(serde_json::Value::as_array_mut)?,
        };
        for one in series.iter_mut() {
            if let Some(values) = one
                .get_mut("values")
                .and_then(serde_json::Value::as_array_mut)
            {
                let last = values.len().saturating_sub(1);
                let kept: Vec<serde_json::Value> = values
                    .iter()
                    .enumerate()
                    .filter(|(i, pair)| slot(pair) % k == 0 || *i == last || recent(pair))
                    .map(|(_, v)| v.clone())
                    .collect();
                *values = kept;
            }
        }
        if let Some(object) = thinned.as_object_mut() {
            let nth = match k {
                2 => "2nd".to_string(),
                3 => "3rd".to_string(),
                k => format!("{k}th"),
            };
            object.insert(
                "thinned".into(),
                format!(
                    "every {nth} point, and every point of the last {}",
                    span(recent_secs)
                )
                .into(),
            );
        }
        let out = serde_json::to_string(&thinned).ok()?;
        if char_len(&out) <= max_chars {
            return Some(out);
        }
    }
    None
}

/// A range-query answer with more than one series.
fn is_matrix_of_several(text: &str) -> bool {
    let Ok(value) = serde_json::from_str::<serde_json::Value>(text.trim()) else {
        return false;
    };
    value
        .pointer("/result")
        .or_else(|| value.pointer("/data/result"))
        .and_then(serde_json::Value::as_array)
        .is_some_and(|series| series.iter().filter(|s| s.get("values").is_some()).count() > 1)
}

/// A span of seconds as a reader says it: `47 min`, `2 h`.
fn span(secs: f64) -> String {
    let minutes = (secs / 60.0).round().max(1.0) as i64;
    if minutes < 120 {
        format!("{minutes} min")
    } else {
        format!("{} h", (minutes as f64 / 60.0).round() as i64)
    }
}

/// A trace search answer (`{"traces": [...]}`) that does not fit, as the slowest traces that do
/// (whole, so each stays valid JSON and its spans stay together), slowest first, saying how many
/// were left out (`"omitted": "7 faster traces"`). `None` for anything else, or when not even the
/// slowest trace fits.
fn slowest_traces(text: &str, max_chars: usize) -> Option<String> {
    let mut value: serde_json::Value = serde_json::from_str(text.trim()).ok()?;
    let traces = value.get_mut("traces")?.as_array_mut()?;
    let duration = |t: &serde_json::Value| {
        t.get("durationMs")
            .and_then(serde_json::Value::as_f64)
            .unwrap_or(0.0)
    };
    traces.sort_by(|a, b| duration(b).total_cmp(&duration(a)));
    let all: Vec<serde_json::Value> = std::mem::take(traces);
    let total = all.len();
    for keep in (1..total).rev() {
        let mut trimmed = value.clone();
        if let Some(object) = trimmed.as_object_mut() {
            object.insert("traces".into(), all[..keep].to_vec().into());
            object.insert(
                "omitted".into(),
                format!("{} faster traces", total - keep).into(),
            );
        }
        let out = serde_json::to_string(&trimmed).ok()?;
        if char_len(&out) <= max_chars {
            return Some(out);
        }
    }
    None
}

/// Ranges of line indices (start inclusive, end exclusive), most important first: the tail,
/// then error lines with context from the last to the first, then the head, then — to use
/// spare room — everything else from the end backwards.
fn ranges_by_priority(lines: &[String], context_lines: usize) -> Vec<(usize, usize)> {
    let n = lines.len();
    let mut ranges = Vec::new();
    // The tail, one line at a time from the end, so an overlong tail still keeps its last line.
    for i in (n.saturating_sub(TAIL_LINES)..n).rev() {
        ranges.push((i, i + 1));
    }
    // The first line: a table's column header or a describe's `Name:`.
    ranges.push((0, 1.min(n)));
    let error_lines: Vec<usize> = (0..n).filter(|&i| is_errorish_line(&lines[i])).collect();
    let error_range = |i: usize| {
        (
            i.saturating_sub(context_lines),
            (i + context_lines + 1).min(n),
        )
    };
    let mut errors_latest_first = error_lines.iter().rev();
    if let Some(&last) = errors_latest_first.next() {
        ranges.push(error_range(last));
        ranges.push((last, last + 1));
    }
    // Section headers (`Containers:`, `  api:`, `Events:`) are short and tell which container
    // or section a kept line belongs to.
    for i in (0..n).filter(|&i| SECTION_HEADER.is_match(&lines[i])) {
        ranges.push((i, i + 1));
    }
    for &i in errors_latest_first {
        ranges.push(error_range(i));
        // If the context does not fit, the error line alone still might.
        ranges.push((i, i + 1));
    }
    ranges.push((0, HEAD_LINES.min(n)));
    for i in (0..n).rev() {
        ranges.push((i, i + 1));
    }
    ranges
}

/// The chosen lines, each omitted stretch marked; as YAML comments when `yaml`.
fn render(lines: &[String], chosen: &[bool], yaml: bool) -> String {
    let marker = |n: usize| {
        if yaml {
            objects::comment_marker(n)
        } else {
            omitted_marker(n)
        }
    };
    let mut parts: Vec<String> = Vec::new();
    let mut omitted = 0usize;
    for (line, keep) in lines.iter().zip(chosen) {
        if *keep {
            if omitted > 0 {
                parts.push(marker(omitted));
                omitted = 0;
            }
            parts.push(line.clone());
        } else {
            omitted += 1;
        }
    }
    if omitted > 0 {
        parts.push(marker(omitted));
    }
    parts.join("\n")
}

fn shorten_line(line: &str, max_chars: usize) -> String {
    let len = char_len(line);
    if len <= max_chars {
        return line.to_string();
    }
    let marker = format!(" … [{} chars omitted]", len - max_chars);
    let keep = max_chars.saturating_sub(char_len(&marker));
    format!("{}{marker}", prefix(line, keep))
}

/// The first `max_chars` characters of `text`, with a marker, for text no line selection can
/// fit.
fn truncate_chars(text: &str, max_chars: usize) -> String {
    let total = char_len(text);
    if total <= max_chars {
        return text.to_string();
    }
    let marker = format!(" … [{} chars omitted]", total);
    if char_len(&marker) >= max_chars {
        return prefix(text, max_chars).to_string();
    }
    let keep = max_chars - char_len(&marker);
    let marker = format!(" … [{} chars omitted]", total - keep);
    format!("{}{marker}", prefix(text, keep))
}

fn char_len(text: &str) -> usize {
    text.chars().count()
}

/// The per-round excerpt budget: each excerpt gets at most the per-excerpt limit and at most
/// what is left of the round's total, so later excerpts shrink instead of the round growing.
#[derive(Debug, Clone)]
pub struct RoundBudget {
    limits: ExcerptLimits,
    used_chars: usize,
}

impl RoundBudget {
    pub fn new(limits: ExcerptLimits) -> Self {
        Self {
            limits,
            used_chars: 0,
        }
    }

    /// Characters still available this round.
    pub fn remaining(&self) -> usize {
        self.limits.per_round_chars.saturating_sub(self.used_chars)
    }

    /// Characters spent so far this round.
    pub fn used(&self) -> usize {
        self.used_chars
    }

    /// Excerpts `text` within what is left and charges the budget. When too little is left to
    /// say anything useful, returns a marker saying the text was omitted (not charged).
    pub fn excerpt(&mut self, text: &str) -> String {
        let compared = char_len(text) > self.limits.per_excerpt_chars
            && (objects::is_object_list(text) || is_matrix_of_several(text));
        let per_excerpt = if compared {
            (self.limits.per_excerpt_chars * OBJECT_LIST_FACTOR).min(MAX_EXCERPT_CHARS)
        } else {
            self.limits.per_excerpt_chars
        };
        let allowance = per_excerpt.min(self.remaining());
        if allowance < MIN_USEFUL_CHARS.min(char_len(text).max(1)) {
            return format!(
                "… [{} lines omitted: round evidence budget spent] …",
                text.lines().count()
            );
        }
        let out = excerpt(text, allowance, self.limits.context_lines);
        self.used_chars += char_len(&out);
        out
    }
}

impl Default for RoundBudget {
    fn default() -> Self {
        Self::new(ExcerptLimits::default())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_search_that_does_not_fit_keeps_the_slowest_whole_traces() {
        let trace = |id: usize, ms: usize| {
            format!(
                r#"{{"traceID":"t{id}","durationMs":{ms},"spanSet":{{"spans":[{{"name":"{}","durationMs":{ms}}}]}}}}"#,
                "x".repeat(300)
            )
        };
        let traces: Vec<String> = (0..20).map(|i| trace(i, 10 + i * 7)).collect();
        let text = format!(r#"{{"traces":[{}]}}"#, traces.join(","));
        assert!(char_len(&text) > 3_500);
        let out = excerpt(&text, 3_500, 2);
        assert!(char_len(&out) <= 3_500);
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        let kept = parsed["traces"].as_array().expect("traces");
        assert!(!kept.is_empty() && kept.len() < 20);
        assert_eq!(kept[0]["traceID"], "t19", "the slowest first");
        assert_eq!(
            parsed["omitted"],
            format!("{} faster traces", 20 - kept.len())
        );
    }

    #[test]
    fn a_range_query_that_does_not_fit_keeps_every_series_thinned() {
        let series = |name: &str, n: usize| {
            let values: Vec<String> = (0..n)
                .map(|i| format!("[{},\"{}\"]", 1_700_000_000 + i * 60, i % 7))
                .collect();
            format!(
                r#"{{"metric":{{"__name__":"{name}"}},"values":[{}]}}"#,
                values.join(",")
            )
        };
        let text = format!(
            r#"{{"result":[{},{}]}}"#,
            series("throttled", 150),
            series("periods", 150)
        );
        assert!(char_len(&text) > 3_500);
        let out = excerpt(&text, 3_500, 2);
        assert!(char_len(&out) <= 3_500, "{}", char_len(&out));
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("still JSON");
        let result = parsed["result"].as_array().expect("result");
        assert_eq!(result.len(), 2, "no series is dropped");
        let kept = result[1]["values"].as_array().expect("values");
        assert!(kept.len() > 50 && kept.len() < 150, "{}", kept.len());
        // The window's last stretch is kept whole: its last ten points, one minute apart.
        let times: Vec<i64> = kept.iter().filter_map(|p| p[0].as_i64()).collect();
        let tail = &times[times.len() - 10..];
        assert!(tail.windows(2).all(|w| w[1] - w[0] == 60), "{tail:?}");
        assert_eq!(
            kept.last(),
            Some(&serde_json::json!([1_700_000_000 + 149 * 60, "2"]))
        );
        assert!(
            parsed["thinned"]
                .as_str()
                .is_some_and(|t| t.starts_with("every ") && t.contains("every point of the last"))
        );
        // Text that is not a range-query answer is cut as before.
        assert_eq!(thin_matrix("not json", 10), None);
    }

    fn log_with_error_at(total: usize, error_at: usize) -> String {
        (0..total)
            .map(|i| {
                if i == error_at {
                    "2025-01-01T00:00:00Z ERROR payment gateway refused connection".to_string()
                } else {
                    format!("2025-01-01T00:00:00Z INFO handled request number {i:05} ok")
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }

    #[test]
    fn short_text_is_returned_unchanged() {
        let text = "one\ntwo\nthree";
        assert_eq!(excerpt(text, 100, 2), text);
    }

    #[test]
    fn keeps_error_line_with_two_lines_of_context_and_marks_elisions() {
        let text = log_with_error_at(400, 200);
        let out = excerpt(&text, 1_000, 2);
        assert!(out.chars().count() <= 1_000);
        assert!(out.contains("ERROR payment gateway refused connection"));
        assert!(out.contains("request number 00198"));
        assert!(out.contains("request number 00199"));
        assert!(out.contains("request number 00201"));
        assert!(out.contains("request number 00202"));
        assert!(out.contains("request number 00399"), "tail kept");
        assert!(out.contains("lines omitted] …"));
    }

    #[test]
    fn elision_counts_add_up() {
        let text = log_with_error_at(300, 100);
        let out = excerpt(&text, 800, 2);
        let marker = Regex::new(r"… \[(\d+) lines? omitted\] …").unwrap();
        let omitted: usize = marker
            .captures_iter(&out)
            .map(|c| c[1].parse::<usize>().unwrap())
            .sum();
        let kept = out.lines().filter(|l| !marker.is_match(l)).count();
        assert_eq!(omitted + kept, 300);
    }

    #[test]
    fn prefers_later_errors_when_not_all_fit() {
        let mut lines: Vec<String> = (0..200).map(|i| format!("info line {i:04}")).collect();
        lines[20] = "ERROR early unrelated warning".into();
        lines[150] = "FATAL config key PAYMENT_MODE missing".into();
        let out = excerpt(&lines.join("\n"), 260, 2);
        assert!(out.chars().count() <= 260);
        assert!(out.contains("FATAL config key PAYMENT_MODE missing"));
    }

    #[test]
    fn never_cuts_inside_a_multibyte_character() {
        let line = "ошибка: соединение отклонено — ✗✗✗ ".repeat(40);
        let text = format!("{line}\n{line}\n{line}");
        for max in [10, 37, 101, 500, 999] {
            let out = excerpt(&text, max, 2);
            assert!(
                out.chars().count() <= max,
                "max {max}: {}",
                out.chars().count()
            );
            // Slicing on a non-boundary would have panicked; also check it is valid text.
            assert!(std::str::from_utf8(out.as_bytes()).is_ok());
        }
    }

    #[test]
    fn single_huge_line_is_shortened_not_dropped() {
        let text = format!("{{\"values\":[{}]}}", "[1,\"0.5\"],".repeat(2_000));
        let out = excerpt(&text, 500, 2);
        assert!(out.chars().count() <= 500);
        assert!(out.starts_with("{\"values\":[[1,\"0.5\"]"));
        assert!(out.contains("chars omitted"));
    }

    #[test]
    fn round_budget_shrinks_later_excerpts() {
        let limits = ExcerptLimits {
            per_excerpt_chars: 1_000,
            per_round_chars: 2_500,
            context_lines: 2,
        };
        let mut budget = RoundBudget::new(limits);
        let big = log_with_error_at(500, 250);
        let first = budget.excerpt(&big);
        let second = budget.excerpt(&big);
        let third = budget.excerpt(&big);
        let fourth = budget.excerpt(&big);
        assert!(first.chars().count() <= 1_000);
        assert!(second.chars().count() <= 1_000);
        let spent_before_third = first.chars().count() + second.chars().count();
        assert!(third.chars().count() <= 2_500 - spent_before_third);
        assert!(third.contains("ERROR payment gateway refused connection"));
        assert!(fourth.contains("round evidence budget spent"));
        assert!(budget.used() <= 2_500);
        assert_eq!(budget.remaining(), 2_500 - budget.used());
    }

    #[test]
    fn round_budget_default_matches_design() {
        let budget = RoundBudget::default();
        assert_eq!(budget.remaining(), 40_000);
        assert_eq!(ExcerptLimits::default().per_excerpt_chars, 3_500);
    }

    #[test]
    fn small_text_still_fits_a_nearly_spent_budget() {
        let mut budget = RoundBudget::new(ExcerptLimits {
            per_excerpt_chars: 3_500,
            per_round_chars: 30,
            context_lines: 2,
        });
        assert_eq!(budget.excerpt("OOMKilled"), "OOMKilled");
    }

    #[test]
    fn recognises_common_error_lines() {
        for line in [
            "panic: runtime error: index out of range",
            "java.lang.NullPointerException: boom",
            "Back-off restarting failed container",
            "dial tcp 10.0.0.1:5432: connect: connection refused",
            "Exit Code:    137",
            "sh: wge: not found",
            "Error: ImagePullBackOff",
        ] {
            assert!(is_errorish_line(line), "{line}");
        }
        for line in ["INFO started", "GET /healthz 200", "terror-free zone"] {
            assert!(!is_errorish_line(line), "{line}");
        }
    }
}
