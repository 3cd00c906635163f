//! Label matchers as PromQL and LogQL write them (`{a="b", c!="d", e=~"f.*", g!~"h"}`), the
//! quoted strings inside them, and finding a selector's closing brace.

use regex::Regex;

/// How a matcher compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Eq,
    Ne,
    Re,
    NotRe,
}

/// `label op "value"`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Matcher {
    pub label: String,
    pub op: Op,
    pub value: String,
}

impl Matcher {
    /// Whether the matcher holds on a label's value; a regex is anchored, as in Prometheus and
    /// Loki, and one that does not compile holds on nothing.
    pub fn holds(&self, value: &str) -> bool {
        match self.op {
            Op::Eq => value == self.value,
            Op::Ne => value != self.value,
            Op::Re | Op::NotRe => {
                let Ok(re) = Regex::new(&format!("^(?:{})$", self.value)) else {
                    return false;
                };
                re.is_match(value) == (self.op == Op::Re)
            }
        }
    }
}

/// A quoted string starting at byte `start` (`"…"` and `'…'` with escapes, `` `…` `` raw): its
/// value and the byte after the closing quote.
pub(crate) fn read_string(text: &str, start: usize) -> Option<(String, usize)> {
    let quote = text[start..].chars().next()?;
    let mut out = String::new();
    let mut chars = text[start + quote.len_utf8()..].char_indices();
    while let Some((i, c)) = chars.next() {
        if c == quote {
            return Some((out, start + quote.len_utf8() + i + c.len_utf8()));
        }
        if c == '\\' && quote != '`' {
            let (_, escaped) = chars.next()?;
            out.push(match escaped {
                'n' => '\n',
                't' => '\t',
                other => other,
            });
        } else {
            out.push(c);
        }
    }
    None
}

/// The byte index of the `}` closing the `{` at `open`, skipping quoted strings.
pub(crate) fn brace_end(text: &str, open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < text.len() {
        let c = text[i..].chars().next()?;
        match c {
            '}' => return Some(i),
            '"' | '\'' | '`' => i = read_string(text, i)?.1,
            _ => i += c.len_utf8(),
        }
    }
    None
}

/// The matchers between a selector's braces (`a="b", c=~"d"`); malformed ones are skipped.
pub(crate) fn parse_matchers(inner: &str) -> Vec<Matcher> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < inner.len() {
        let rest = &inner[i..];
        let Some(op_at) = rest.find(['=', '!']) else {
            break;
        };
        let label = rest[..op_at]
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_string();
        let after = &rest[op_at..];
        let (op, len) = if after.starts_with("=~") {
            (Op::Re, 2)
        } else if after.starts_with("!~") {
            (Op::NotRe, 2)
        } else if after.starts_with("!=") {
            (Op::Ne, 2)
        } else {
            (Op::Eq, 1)
        };
        let value_at = i + op_at + len;
        let skipped = inner[value_at..].len() - inner[value_at..].trim_start().len();
        let Some((value, end)) = read_string(inner, value_at + skipped) else {
            break;
        };
        if !label.is_empty() {
            out.push(Matcher { label, op, value });
        }
        i = end;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matchers_parse_and_hold_like_prometheus() {
        let m = parse_matchers(r#" a="b", c != 'd' ,e=~"f.*",g!~`h|i`, j="x\"y" "#);
        let ops: Vec<Op> = m.iter().map(|m| m.op).collect();
        assert_eq!(ops, [Op::Eq, Op::Ne, Op::Re, Op::NotRe, Op::Eq]);
        assert_eq!(m[4].value, "x\"y");
        assert!(
            m[2].holds("foo") && !m[2].holds("xf"),
            "regexes are anchored"
        );
        assert!(m[3].holds("hi") && !m[3].holds("h"));
        assert_eq!(brace_end(r#"{a="}"} x"#, 0), Some(6));
    }
}
