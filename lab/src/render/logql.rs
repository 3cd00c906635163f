//! Just enough LogQL for log streams: the stream selector (its first `{…}`) and the line
//! filters of the pipeline (`|=`, `!=`, `|~`, `!~`, with `or` alternatives). Parser and
//! formatting stages (`| json`, `| level="error"`, `| line_format …`) are skipped; a `(?i)`
//! prefix makes `|=` / `!=` case-insensitive too, as it does `|~`.

use std::collections::BTreeMap;

use regex::Regex;

use super::matchers::{Matcher, brace_end, parse_matchers, read_string};

/// A line filter: keep (or drop) lines containing (or matching) any of `patterns`.
#[derive(Debug, Clone, PartialEq)]
struct LineFilter {
    keep: bool,
    regex: bool,
    patterns: Vec<String>,
}

impl LineFilter {
    fn hit(&self, line: &str, pattern: &str) -> bool {
        if self.regex {
            return Regex::new(pattern).is_ok_and(|re| re.is_match(line));
        }
        match pattern.strip_prefix("(?i)") {
            Some(p) => line.to_lowercase().contains(&p.to_lowercase()),
            None => line.contains(pattern),
        }
    }

    fn passes(&self, line: &str) -> bool {
        self.patterns.iter().any(|p| self.hit(line, p)) == self.keep
    }
}

/// A parsed LogQL query.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LogQuery {
    matchers: Vec<Matcher>,
    filters: Vec<LineFilter>,
}

impl LogQuery {
    /// Parses a query; `None` without a stream selector.
    pub fn parse(query: &str) -> Option<Self> {
        let open = query.find('{')?;
        let close = brace_end(query, open)?;
        let matchers = parse_matchers(&query[open + 1..close]);
        Some(Self {
            matchers,
            filters: line_filters(&query[close + 1..]),
        })
    }

    /// Every matcher holds on the stream's labels (a missing label is empty, as in Loki).
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matchers
            .iter()
            .all(|m| m.holds(labels.get(&m.label).map_or("", String::as_str)))
    }

    /// The line passes every line filter.
    pub fn keeps(&self, line: &str) -> bool {
        self.filters.iter().all(|f| f.passes(line))
    }
}

/// The line filters of a pipeline; other stages run to the next `|` and are skipped.
fn line_filters(pipeline: &str) -> Vec<LineFilter> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < pipeline.len() {
        let rest = &pipeline[i..];
        let filter = [
            ("|=", true, false),
            ("!=", false, false),
            ("|~", true, true),
            ("!~", false, true),
        ]
        .into_iter()
        .find(|(op, _, _)| rest.starts_with(op));
        if let Some((_, keep, regex)) = filter {
            let (patterns, end) = patterns(pipeline, i + 2);
            out.push(LineFilter {
                keep,
                regex,
                patterns,
            });
            i = end;
        } else if rest.starts_with('|') {
            i = skip_stage(pipeline, i + 1);
        } else {
            i += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    out
}

/// `"a" or "b"` from `start`: the strings and the byte after the last.
fn patterns(text: &str, start: usize) -> (Vec<String>, usize) {
    let mut out = Vec::new();
    let mut i = start;
    loop {
        let at = i + (text[i..].len() - text[i..].trim_start().len());
        let Some((value, end)) = read_string(text, at) else {
            return (out, at.max(start));
        };
        out.push(value);
        i = end;
        let next = i + (text[i..].len() - text[i..].trim_start().len());
        match text[next..].strip_prefix("or") {
            Some(after) if after.starts_with(char::is_whitespace) => i = next + 2,
            _ => return (out, i),
        }
    }
}

/// The byte where the stage starting at `start` ends: the next `|` outside strings.
fn skip_stage(text: &str, start: usize) -> usize {
    let mut i = start;
    while i < text.len() {
        match text[i..].chars().next() {
            Some('|') => return i,
            Some('"' | '`') => i = read_string(text, i).map_or(text.len(), |(_, end)| end),
            Some(c) => i += c.len_utf8(),
            None => break,
        }
    }
    text.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn stream_selectors_match_labels() {
        let stream = labels(&[("namespace", "shop"), ("app", "cart-api")]);
        let q = |s: &str| LogQuery::parse(s).unwrap().selects(&stream);
        assert!(q(r#"{namespace="shop"}"#) && q(r#"{app=~"cart.*", namespace!="web"}"#));
        assert!(!q(r#"{app="cart"}"#) && !q(r#"{app!~"cart-.*"}"#) && !q(r#"{team="x"}"#));
        assert!(q(r#"sum(count_over_time({app="cart-api"}[5m]))"#));
        assert!(LogQuery::parse("no selector").is_none());
    }

    #[test]
    fn line_filters_apply_in_order() {
        let q = LogQuery::parse(
            r#"{app="x"} |= "error" != "healthz" |~ `(?i)timeout|refused` | json | level="error" or "x" |= "db" or "cache""#,
        )
        .unwrap();
        assert!(q.keeps("ERROR? error: db Timeout"));
        assert!(!q.keeps("error: db ok"), "no timeout");
        assert!(!q.keeps("error: healthz db timeout"), "healthz dropped");
        assert!(q.keeps("error cache refused"), "`or` alternatives");
        let ci = LogQuery::parse(r#"{a="b"} |= "(?i)FATAL""#).unwrap();
        assert!(ci.keeps("fatal: boom") && !ci.keeps("fine"));
    }
}
