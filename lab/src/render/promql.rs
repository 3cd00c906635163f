//! Just enough PromQL for lenient matching: the vector selectors a query contains
//! (`name{matchers}`, bare `name`, `{__name__="name"}`), skipping functions, keywords,
//! grouping labels (`by (le)`), strings, numbers, durations and ranges. Which scenario series a
//! query selects, and the series a scenario entry stands for (also what the real-Prometheus
//! peer backfills).

use std::collections::BTreeMap;

use super::matchers::{Matcher, Op, brace_end, parse_matchers, read_string};
use crate::scenario::MetricSpec;

/// A vector selector.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Selector {
    /// The metric name (`None`: only matchers, maybe on `__name__`).
    pub name: Option<String>,
    pub matchers: Vec<Matcher>,
    /// Written with braces.
    pub braced: bool,
}

/// Words that are not metric names.
const KEYWORDS: &[&str] = &[
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// Keywords followed by a parenthesised list of label names.
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_' || c == ':'
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == ':'
}

/// The byte after the bracket closing the one at `open` (`(`…`)` or `[`…`]`), strings skipped.
fn skip_group(text: &str, open: usize) -> usize {
    let (opening, closing) = match text[open..].chars().next() {
        Some('[') => ('[', ']'),
        _ => ('(', ')'),
    };
    let mut depth = 0;
    let mut i = open;
    while i < text.len() {
        let Some(c) = text[i..].chars().next() else {
            break;
        };
        match c {
            '"' | '\'' | '`' => {
                i = read_string(text, i).map_or(text.len(), |(_, end)| end);
                continue;
            }
            c if c == opening => depth += 1,
            c if c == closing => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            _ => {}
        }
        i += c.len_utf8();
    }
    text.len()
}

/// `by (…)` / `without (…)` follows: the word before is an aggregation, not a metric.
fn grouped_aggregation(rest: &str) -> bool {
    ["by", "without"].iter().any(|kw| {
        rest.strip_prefix(kw)
            .is_some_and(|after| after.trim_start().starts_with('('))
    })
}

/// Parses the braces at `open` into a selector named `name` (or by its `__name__="…"`).
fn braced(query: &str, open: usize, name: Option<String>) -> (Selector, usize) {
    let close = brace_end(query, open).unwrap_or(query.len());
    let mut matchers = parse_matchers(&query[open + 1..close.min(query.len())]);
    let mut name = name;
    if name.is_none()
        && let Some(at) = matchers
            .iter()
            .position(|m| m.label == "__name__" && m.op == Op::Eq)
    {
        name = Some(matchers.remove(at).value);
    }
    let selector = Selector {
        name,
        matchers,
        braced: true,
    };
    (selector, (close + 1).min(query.len()))
}

/// The vector selectors of a query, in order.
pub(crate) fn selectors(query: &str) -> Vec<Selector> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < query.len() {
        let Some(c) = query[i..].chars().next() else {
            break;
        };
        if c == '"' || c == '\'' || c == '`' {
            i = read_string(query, i).map_or(query.len(), |(_, end)| end);
        } else if c == '[' {
            i = skip_group(query, i);
        } else if c == '{' {
            let (selector, end) = braced(query, i, None);
            out.push(selector);
            i = end;
        } else if c.is_ascii_digit() || c == '.' {
            // Numbers and durations (`0.05`, `5m`, `1e3`).
            i += query[i..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.'))
                .unwrap_or(query.len() - i);
        } else if is_ident_start(c) {
            let end = query[i..]
                .find(|c: char| !is_ident(c))
                .map_or(query.len(), |n| i + n);
            let word = &query[i..end];
            let next_at = end + (query[end..].len() - query[end..].trim_start().len());
            let next = query[next_at..].chars().next();
            let lower = word.to_lowercase();
            i = end;
            if GROUPING.contains(&lower.as_str()) {
                if next == Some('(') {
                    i = skip_group(query, next_at);
                }
            } else if KEYWORDS.contains(&lower.as_str())
                || next == Some('(')
                || grouped_aggregation(&query[next_at..])
            {
                // A keyword, a function call or `sum by (…) (…)`: arguments are scanned as
                // they come.
            } else if next == Some('{') {
                let (selector, end) = braced(query, next_at, Some(word.to_string()));
                out.push(selector);
                i = end;
            } else {
                out.push(Selector {
                    name: Some(word.to_string()),
                    matchers: Vec::new(),
                    braced: false,
                });
            }
        } else {
            i += c.len_utf8();
        }
    }
    out
}

/// A series' labels.
pub type Labels = BTreeMap<String, String>;

/// The series a metric entry stands for: `metric` with its `labels`, or the metric of its
/// query's first selector with matchers (else its first selector) with its `labels` plus that
/// selector's `k="v"` matchers. `None` when the query names no metric.
pub fn series_of(metric: &MetricSpec) -> Option<(String, Labels)> {
    if let Some(name) = &metric.metric {
        return Some((name.clone(), metric.labels.clone()));
    }
    let all = selectors(metric.query.as_deref().unwrap_or_default());
    let first = all.iter().find(|s| s.braced).or(all.first())?;
    let name = first.name.clone().filter(|n| !n.is_empty())?;
    let mut labels = metric.labels.clone();
    for m in first.matchers.iter().filter(|m| m.op == Op::Eq) {
        labels.insert(m.label.clone(), m.value.clone());
    }
    labels.remove("__name__");
    Some((name, labels))
}

/// Whether a selector picks the series `name{labels}`, leniently: a matcher on a label the
/// series does not have is ignored.
/// A selector that names no metric (`{dimension_QueueName="orders"}`) selects by its labels
/// alone, so there a missing label does not match: leniency would select every series.
pub(crate) fn selects(selector: &Selector, name: &str, labels: &Labels) -> bool {
    if selector.name.as_deref().is_some_and(|n| n != name) {
        return false;
    }
    let by_labels_alone =
        selector.name.is_none() && !selector.matchers.iter().any(|m| m.label == "__name__");
    selector.matchers.iter().all(|m| {
        if m.label == "__name__" {
            return m.holds(name);
        }
        match labels.get(&m.label) {
            Some(value) => m.holds(value),
            None => !by_labels_alone,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(query: &str) -> Vec<String> {
        selectors(query)
            .into_iter()
            .map(|s| s.name.unwrap_or_default())
            .collect()
    }

    #[test]
    fn finds_the_selectors_and_skips_the_rest() {
        assert_eq!(
            names(r#"histogram_quantile(0.95, sum by (le) (rate(http_bucket{svc="a"}[5m])))"#),
            ["http_bucket"]
        );
        assert_eq!(
            names("sum(rate(errors_total[5m] offset 1h)) / on (job) group_left requests > 0.05"),
            ["errors_total", "requests"]
        );
        assert_eq!(
            names(r#"label_replace(up, "x", "$1", "job", "(.*)") and {__name__="job:ratio"}"#),
            ["up", "job:ratio"]
        );
        let s = &selectors(r#"x{a="1", b=~"2|3", c!="4"}"#)[0];
        assert_eq!(s.matchers.len(), 3);
        assert!(s.braced);
    }

    #[test]
    fn selection_is_lenient_about_labels_the_series_lacks() {
        let labels: Labels = [("service".into(), "cart".into())].into();
        let s = |q: &str| selectors(q).remove(0);
        assert!(selects(&s(r#"x{service="cart", pod="p"}"#), "x", &labels));
        assert!(!selects(&s(r#"x{service="web"}"#), "x", &labels));
        assert!(selects(&s(r#"x{service=~"ca.*"}"#), "x", &labels));
        assert!(!selects(&s(r#"x{service!~"ca.*"}"#), "x", &labels));
        assert!(!selects(&s("y"), "x", &labels));
        assert!(selects(&s(r#"{__name__=~"x|z"}"#), "x", &labels));
        // By labels alone, a series without the label is not selected.
        assert!(!selects(
            &s(r#"{dimension_QueueName="orders"}"#),
            "x",
            &labels
        ));
    }
}
