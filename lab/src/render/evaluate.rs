//! Evaluating the arithmetic of instant-vector PromQL as Prometheus does, for the queries an
//! alert rule writes over gauges: a ratio of two series compared to a threshold, filtered with
//! `and` / `unless` (`available / capacity < 0.03 and used > 0 unless on(…) … == 1`), over
//! aggregations (`max by (pod) (…)`). Binary operators match series on their labels (without
//! `__name__`, or `on(…)` / `ignoring(…)`); a comparison keeps the left sample where it holds;
//! `and` keeps left samples with a match, `unless` those without, `or` adds the right's
//! unmatched ones.
//!
//! Anything else — a range (`[5m]`), a function (`rate`, `histogram_quantile`), `offset`,
//! `bool` — is not evaluated: the caller then answers leniently with the raw series it selects,
//! as before ([`super::prometheus`]). Series are selected leniently too ([`selects`]).

use std::collections::BTreeMap;

use super::matchers::{brace_end, parse_matchers};
use super::promql::{Selector, selects};

type Labels = BTreeMap<String, String>;
/// One instant's samples: labels (with `__name__` while a series keeps it) and value.
type Vector = Vec<(Labels, f64)>;
/// Series over time: labels and (instant index, value) pairs.
pub(crate) type Evaluated = Vec<(Labels, Vec<(usize, f64)>)>;

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Number(f64),
    Selector(Selector),
    Op(&'static str),
    Open,
    Close,
    Comma,
}

#[derive(Debug, Clone, PartialEq)]
enum Matching {
    All,
    On(Vec<String>),
    Ignoring(Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Number(f64),
    Select(Selector),
    Aggregate {
        op: String,
        by: Option<Vec<String>>,
        without: bool,
        inner: Box<Expr>,
    },
    Binary {
        op: &'static str,
        matching: Matching,
        left: Box<Expr>,
        right: Box<Expr>,
    },
}

const OPERATORS: &[&str] = &["==", "!=", ">=", "<=", ">", "<", "+", "-", "*", "/"];
const AGGREGATIONS: &[&str] = &["sum", "max", "min", "avg", "count"];

fn tokens(query: &str) -> Option<Vec<Token>> {
    let mut out = Vec::new();
    let bytes = query.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Token::Open);
            i += 1;
        } else if c == ')' {
            out.push(Token::Close);
            i += 1;
        } else if c == ',' {
            out.push(Token::Comma);
            i += 1;
        } else if c == '{' {
            let end = brace_end(query, i)?;
            out.push(Token::Selector(Selector {
                name: None,
                matchers: parse_matchers(&query[i + 1..end]),
                braced: true,
            }));
            i = end + 1;
        } else if c.is_ascii_digit()
            || (c == '.' && bytes.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'.' | b'+' | b'-'))
            {
                // A sign belongs to the number only right after an exponent.
                if matches!(bytes[i], b'+' | b'-') && !matches!(bytes[i - 1], b'e' | b'E') {
                    break;
                }
                i += 1;
            }
            out.push(Token::Number(query[start..i].parse().ok()?));
        } else if c.is_ascii_alphabetic() || c == '_' || c == ':' {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || matches!(bytes[i], b'_' | b':'))
            {
                i += 1;
            }
            let word = &query[start..i];
            // A metric name with its matchers is one selector.
            let next = query[i..].trim_start();
            let keyword = AGGREGATIONS.contains(&word)
                || matches!(
                    word,
                    "by" | "without" | "on" | "ignoring" | "and" | "or" | "unless"
                );
            if next.starts_with('{') && !keyword {
                let open = query.len() - next.len();
                let end = brace_end(query, open)?;
                out.push(Token::Selector(Selector {
                    name: Some(word.to_string()),
                    matchers: parse_matchers(&query[open + 1..end]),
                    braced: true,
                }));
                i = end + 1;
            } else {
                out.push(Token::Word(word.to_string()));
            }
        } else if let Some(op) = OPERATORS.iter().find(|op| query[i..].starts_with(**op)) {
            out.push(Token::Op(op));
            i += op.len();
        } else {
            // `[`, `@`, `%`, `^`, strings outside matchers: not evaluated here.
            return None;
        }
    }
    Some(out)
}

struct Parser {
    tokens: Vec<Token>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn next(&mut self) -> Option<Token> {
        let token = self.tokens.get(self.at).cloned();
        self.at += 1;
        token
    }

    fn word(&self) -> Option<&str> {
        match self.peek() {
            Some(Token::Word(w)) => Some(w),
            _ => None,
        }
    }

    /// `(a, b, …)`.
    fn labels(&mut self) -> Option<Vec<String>> {
        if self.next()? != Token::Open {
            return None;
        }
        let mut out = Vec::new();
        loop {
            match self.next()? {
                Token::Word(w) => out.push(w),
                Token::Comma => {}
                Token::Close => return Some(out),
                _ => return None,
            }
        }
    }

    fn matching(&mut self) -> Option<Matching> {
        match self.word() {
            Some("on") => {
                self.at += 1;
                Some(Matching::On(self.labels()?))
            }
            Some("ignoring") => {
                self.at += 1;
                Some(Matching::Ignoring(self.labels()?))
            }
            _ => Some(Matching::All),
        }
    }

    /// Binary operators by precedence, lowest first.
    fn binary(&mut self, level: usize) -> Option<Expr> {
        const LEVELS: &[&[&str]] = &[
            &["or"],
            &["and", "unless"],
            &["==", "!=", ">=", "<=", ">", "<"],
            &["+", "-"],
            &["*", "/"],
        ];
        let Some(ops) = LEVELS.get(level) else {
            return self.unary();
        };
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Some(Token::Op(op)) if ops.contains(op) => *op,
                Some(Token::Word(w)) if ops.contains(&w.as_str()) => {
                    ops.iter().copied().find(|o| *o == w)?
                }
                _ => return Some(left),
            };
            self.at += 1;
            if self.word() == Some("bool") {
                return None;
            }
            let matching = self.matching()?;
            if matches!(self.word(), Some("group_left" | "group_right")) {
                return None;
            }
            let right = self.binary(level + 1)?;
            left = Expr::Binary {
                op,
                matching,
                left: Box::new(left),
                right: Box::new(right),
            };
        }
    }

    fn unary(&mut self) -> Option<Expr> {
        match self.next()? {
            Token::Number(n) => Some(Expr::Number(n)),
            Token::Selector(s) => Some(Expr::Select(s)),
            Token::Open => {
                let inner = self.binary(0)?;
                (self.next()? == Token::Close).then_some(inner)
            }
            Token::Op("-") => match self.unary()? {
                Expr::Number(n) => Some(Expr::Number(-n)),
                _ => None,
            },
            Token::Word(w) if AGGREGATIONS.contains(&w.as_str()) => {
                let mut grouping = self.grouping()?;
                if self.next()? != Token::Open {
                    return None;
                }
                let inner = self.binary(0)?;
                if self.next()? != Token::Close {
                    return None;
                }
                if grouping.is_none() {
                    grouping = self.grouping()?;
                }
                let (by, without) = grouping.map_or((None, false), |(l, w)| (Some(l), w));
                Some(Expr::Aggregate {
                    op: w,
                    by,
                    without,
                    inner: Box::new(inner),
                })
            }
            // A bare metric name.
            Token::Word(w) if !matches!(w.as_str(), "by" | "without" | "on" | "ignoring") => {
                if self.peek() == Some(&Token::Open) {
                    return None; // a function call
                }
                Some(Expr::Select(Selector {
                    name: Some(w),
                    matchers: Vec::new(),
                    braced: false,
                }))
            }
            _ => None,
        }
    }

    /// `by (…)` / `without (…)`, if there.
    fn grouping(&mut self) -> Option<Option<(Vec<String>, bool)>> {
        match self.word() {
            Some("by") => {
                self.at += 1;
                Some(Some((self.labels()?, false)))
            }
            Some("without") => {
                self.at += 1;
                Some(Some((self.labels()?, true)))
            }
            _ => Some(None),
        }
    }
}

/// The expression, when it is in the subset evaluated here and has at least one operator or
/// aggregation (a bare selector is answered as before).
fn parse(query: &str) -> Option<Expr> {
    let mut parser = Parser {
        tokens: tokens(query)?,
        at: 0,
    };
    let expr = parser.binary(0)?;
    let computed = matches!(expr, Expr::Binary { .. } | Expr::Aggregate { .. });
    (parser.at == parser.tokens.len() && computed).then_some(expr)
}

/// The labels two samples match on.
fn key(labels: &Labels, matching: &Matching) -> Labels {
    labels
        .iter()
        .filter(|(k, _)| match matching {
            Matching::All => k.as_str() != "__name__",
            Matching::On(on) => on.contains(k),
            Matching::Ignoring(ignored) => k.as_str() != "__name__" && !ignored.contains(k),
        })
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn apply(op: &str, a: f64, b: f64) -> Option<f64> {
    match op {
        "+" => Some(a + b),
        "-" => Some(a - b),
        "*" => Some(a * b),
        "/" => Some(a / b),
        _ => None,
    }
}

fn holds(op: &str, a: f64, b: f64) -> bool {
    match op {
        "==" => a == b,
        "!=" => a != b,
        ">=" => a >= b,
        "<=" => a <= b,
        ">" => a > b,
        "<" => a < b,
        _ => false,
    }
}

fn without_name(mut labels: Labels) -> Labels {
    labels.remove("__name__");
    labels
}

/// What an expression evaluates to at one instant: a scalar or a vector.
enum Value {
    Scalar(f64),
    Vector(Vector),
}

fn eval(expr: &Expr, select: &dyn Fn(&Selector) -> Vector) -> Value {
    match expr {
        Expr::Number(n) => Value::Scalar(*n),
        Expr::Select(s) => Value::Vector(select(s)),
        Expr::Aggregate {
            op,
            by,
            without,
            inner,
        } => {
            let Value::Vector(samples) = eval(inner, select) else {
                return Value::Vector(Vec::new());
            };
            let mut groups: BTreeMap<Labels, Vec<f64>> = BTreeMap::new();
            for (labels, v) in samples {
                let group: Labels = labels
                    .into_iter()
                    .filter(|(k, _)| {
                        k != "__name__" && by.as_ref().is_some_and(|l| l.contains(k) != *without)
                    })
                    .collect();
                groups.entry(group).or_default().push(v);
            }
            Value::Vector(
                groups
                    .into_iter()
                    .filter_map(|(labels, values)| {
                        let v = match op.as_str() {
                            "sum" => values.iter().sum(),
                            "max" => values.iter().copied().fold(f64::MIN, f64::max),
                            "min" => values.iter().copied().fold(f64::MAX, f64::min),
                            "avg" => values.iter().sum::<f64>() / values.len() as f64,
                            "count" => values.len() as f64,
                            _ => return None,
                        };
                        Some((labels, v))
                    })
                    .collect(),
            )
        }
        Expr::Binary {
            op,
            matching,
            left,
            right,
        } => {
            let (left, right) = (eval(left, select), eval(right, select));
            let comparison = matches!(*op, "==" | "!=" | ">=" | "<=" | ">" | "<");
            match (left, right) {
                (Value::Scalar(a), Value::Scalar(b)) => {
                    Value::Scalar(apply(op, a, b).unwrap_or(if holds(op, a, b) {
                        1.0
                    } else {
                        0.0
                    }))
                }
                (Value::Vector(v), Value::Scalar(b)) => Value::Vector(
                    v.into_iter()
                        .filter_map(|(l, a)| match comparison {
                            true => holds(op, a, b).then_some((l, a)),
                            false => apply(op, a, b).map(|r| (without_name(l), r)),
                        })
                        .collect(),
                ),
                (Value::Scalar(a), Value::Vector(v)) => Value::Vector(
                    v.into_iter()
                        .filter_map(|(l, b)| match comparison {
                            true => holds(op, a, b).then_some((l, b)),
                            false => apply(op, a, b).map(|r| (without_name(l), r)),
                        })
                        .collect(),
                ),
                (Value::Vector(l), Value::Vector(r)) => {
                    let find = |labels: &Labels| {
                        let k = key(labels, matching);
                        r.iter().find(|(rl, _)| key(rl, matching) == k)
                    };
                    let out: Vector = match *op {
                        "and" => l.into_iter().filter(|(ll, _)| find(ll).is_some()).collect(),
                        "unless" => l.into_iter().filter(|(ll, _)| find(ll).is_none()).collect(),
                        "or" => {
                            let extra: Vector = r
                                .iter()
                                .filter(|(rl, _)| {
                                    let k = key(rl, matching);
                                    !l.iter().any(|(ll, _)| key(ll, matching) == k)
                                })
                                .cloned()
                                .collect();
                            l.into_iter().chain(extra).collect()
                        }
                        _ => l
                            .into_iter()
                            .filter_map(|(ll, a)| {
                                let (_, b) = find(&ll)?;
                                match comparison {
                                    true => holds(op, a, *b).then_some((ll, a)),
                                    false => apply(op, a, *b).map(|v| (without_name(ll), v)),
                                }
                            })
                            .collect(),
                    };
                    Value::Vector(out)
                }
            }
        }
    }
}

/// Every selector of an expression.
fn selectors_of<'e>(expr: &'e Expr, found: &mut dyn FnMut(&'e Selector)) {
    match expr {
        Expr::Number(_) => {}
        Expr::Select(s) => found(s),
        Expr::Aggregate { inner, .. } => selectors_of(inner, found),
        Expr::Binary { left, right, .. } => {
            selectors_of(left, found);
            selectors_of(right, found);
        }
    }
}

/// The series `query` evaluates to at each of `times`, when it is in the subset evaluated
/// here; `series` are the scenario's (labels without `__name__`, name, value at a time).
pub(crate) fn evaluate(
    query: &str,
    series: &[(String, Labels)],
    value_at: &dyn Fn(usize, usize) -> Option<f64>,
    times: usize,
) -> Option<Evaluated> {
    let expr = parse(query)?;
    // Which series each selector picks, decided once (a regex matcher compiles per test).
    let mut picked: Vec<(&Selector, Vec<usize>)> = Vec::new();
    selectors_of(&expr, &mut |s| {
        let indices = series
            .iter()
            .enumerate()
            .filter(|(_, (name, labels))| selects(s, name, labels))
            .map(|(i, _)| i)
            .collect();
        picked.push((s, indices));
    });
    let mut out: BTreeMap<Labels, Vec<(usize, f64)>> = BTreeMap::new();
    for t in 0..times {
        let select = |s: &Selector| -> Vector {
            picked
                .iter()
                .find(|(p, _)| std::ptr::eq(*p, s))
                .map(|(_, indices)| indices.as_slice())
                .unwrap_or_default()
                .iter()
                .filter_map(|&i| {
                    let (name, labels) = &series[i];
                    let mut labels = labels.clone();
                    labels.insert("__name__".into(), name.clone());
                    value_at(i, t).map(|v| (labels, v))
                })
                .collect()
        };
        if let Value::Vector(samples) = eval(&expr, &select) {
            for (labels, v) in samples {
                out.entry(labels).or_default().push((t, v));
            }
        }
    }
    Some(out.into_iter().collect())
}

#[cfg(test)]
mod tests;
