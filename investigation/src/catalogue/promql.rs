//! A small PromQL reader, just good enough for the vendored kube-prometheus rules: a tokenizer
//! whose tokens cover every byte of the expression, a precedence parser over them, and
//! [`with_labels`], which narrows a rule's expression to one firing alert by adding its identifying
//! labels as equality matchers and leaves every other byte as it was.
//!
//! Why not a PromQL crate: the investigation needs exactly one edit (insert matchers into
//! selectors) on a known set of expressions, and byte-identical output around it, which a parser
//! that re-prints its AST would not give.

use std::collections::{BTreeMap, BTreeSet};

/// The labels that identify what an alert is about, in the order they are written into a
/// selector. Everything else on an alert (`job`, `severity`, `reason`, `mountpoint`, …) either
/// is already in the rule or narrows below the object the investigation looks at.
pub const IDENTIFYING_LABELS: [&str; 13] = [
    "namespace",
    "pod",
    "container",
    "deployment",
    "statefulset",
    "daemonset",
    "job_name",
    "node",
    "persistentvolumeclaim",
    "horizontalpodautoscaler",
    "service",
    "instance",
    "cluster",
];

/// Why an expression could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PromqlError {
    #[error("unterminated {what} starting at byte {at}")]
    Unterminated { what: &'static str, at: usize },
    #[error("unexpected character {found:?} at byte {at}")]
    UnexpectedChar { found: char, at: usize },
    #[error("unexpected {found:?} at byte {at}, expected {expected}")]
    Unexpected {
        found: String,
        at: usize,
        expected: &'static str,
    },
    #[error("the expression ends where {expected} was expected")]
    UnexpectedEnd { expected: &'static str },
}

/// The words PromQL gives a meaning of their own (case-insensitive, as in Prometheus).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keyword {
    By,
    Without,
    On,
    Ignoring,
    GroupLeft,
    GroupRight,
    Offset,
    Bool,
    And,
    Or,
    Unless,
}

impl Keyword {
    fn from_ident(ident: &str) -> Option<Self> {
        Some(match ident.to_ascii_lowercase().as_str() {
            "by" => Self::By,
            "without" => Self::Without,
            "on" => Self::On,
            "ignoring" => Self::Ignoring,
            "group_left" => Self::GroupLeft,
            "group_right" => Self::GroupRight,
            "offset" => Self::Offset,
            "bool" => Self::Bool,
            "and" => Self::And,
            "or" => Self::Or,
            "unless" => Self::Unless,
            _ => return None,
        })
    }
}

/// What a token is. Selectors' `{…}` and ranges' `[…]` are one token each: nothing inside a range
/// is ever touched, and matchers are read by [`parse_matchers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenKind {
    Space,
    /// `#` to the end of the line.
    Comment,
    /// A metric, label, function or aggregation name (recording rules' `a:b:c` included).
    Ident,
    Keyword(Keyword),
    /// `"…"`, `'…'` or `` `…` ``.
    Str,
    /// A number, or a duration after `offset`.
    Number,
    /// `{…}`: the label matchers of a selector.
    Matchers,
    /// `[…]`: a range or a subquery.
    Range,
    /// `+ - * / % ^ == != < <= > >=`.
    Operator,
    LParen,
    RParen,
    Comma,
}

/// One token: its kind and its byte span in the expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Token {
    pub kind: TokenKind,
    pub start: usize,
    pub end: usize,
}

impl Token {
    pub fn text<'a>(&self, source: &'a str) -> &'a str {
        &source[self.start..self.end]
    }

    fn is_trivia(&self) -> bool {
        matches!(self.kind, TokenKind::Space | TokenKind::Comment)
    }
}

/// Splits an expression into tokens that together cover every byte of it, in order.
pub fn tokenize(source: &str) -> Result<Vec<Token>, PromqlError> {
    let bytes = source.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let start = at;
        let c = bytes[at];
        let kind = match c {
            b' ' | b'\t' | b'\r' | b'\n' => {
                while at < bytes.len() && bytes[at].is_ascii_whitespace() {
                    at += 1;
                }
                TokenKind::Space
            }
            b'#' => {
                while at < bytes.len() && bytes[at] != b'\n' {
                    at += 1;
                }
                TokenKind::Comment
            }
            b'"' | b'\'' | b'`' => {
                at = end_of_string(bytes, at)?;
                TokenKind::Str
            }
            b'{' => {
                at = end_of_group(bytes, at, b'}', "label matchers")?;
                TokenKind::Matchers
            }
            b'[' => {
                at = end_of_group(bytes, at, b']', "range")?;
                TokenKind::Range
            }
            b'(' => {
                at += 1;
                TokenKind::LParen
            }
            b')' => {
                at += 1;
                TokenKind::RParen
            }
            b',' => {
                at += 1;
                TokenKind::Comma
            }
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' => {
                at += 1;
                TokenKind::Operator
            }
            b'=' | b'!' | b'<' | b'>' => {
                let two = bytes.get(at + 1) == Some(&b'=');
                if (c == b'=' || c == b'!') && !two {
                    return Err(PromqlError::UnexpectedChar {
                        found: c as char,
                        at,
                    });
                }
                at += if two { 2 } else { 1 };
                TokenKind::Operator
            }
            b'0'..=b'9' | b'.' => {
                while at < bytes.len() && (bytes[at].is_ascii_digit() || bytes[at] == b'.') {
                    at += 1;
                }
                if at < bytes.len() && matches!(bytes[at], b'e' | b'E') {
                    let mut exp = at + 1;
                    if exp < bytes.len() && matches!(bytes[exp], b'+' | b'-') {
                        exp += 1;
                    }
                    if exp < bytes.len() && bytes[exp].is_ascii_digit() {
                        at = exp;
                        while at < bytes.len() && bytes[at].is_ascii_digit() {
                            at += 1;
                        }
                    }
                }
                // Duration units (`5m`, `1h30m`) after `offset`.
                while at < bytes.len() && bytes[at].is_ascii_alphanumeric() {
                    at += 1;
                }
                TokenKind::Number
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c == b':' => {
                while at < bytes.len()
                    && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_' || bytes[at] == b':')
                {
                    at += 1;
                }
                match Keyword::from_ident(&source[start..at]) {
                    Some(keyword) => TokenKind::Keyword(keyword),
                    None => TokenKind::Ident,
                }
            }
            _ => {
                let found = source[at..].chars().next().unwrap_or('\u{fffd}');
                return Err(PromqlError::UnexpectedChar { found, at });
            }
        };
        tokens.push(Token {
            kind,
            start,
            end: at,
        });
    }
    Ok(tokens)
}

/// The end (exclusive) of the string starting at `start`; backquoted strings have no escapes.
fn end_of_string(bytes: &[u8], start: usize) -> Result<usize, PromqlError> {
    let quote = bytes[start];
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'\\' if quote != b'`' => at += 2,
            c if c == quote => return Ok(at + 1),
            _ => at += 1,
        }
    }
    Err(PromqlError::Unterminated {
        what: "string",
        at: start,
    })
}

/// The end (exclusive) of a `{…}` or `[…]` group, skipping over strings inside it.
fn end_of_group(
    bytes: &[u8],
    start: usize,
    close: u8,
    what: &'static str,
) -> Result<usize, PromqlError> {
    let mut at = start + 1;
    while at < bytes.len() {
        match bytes[at] {
            b'"' | b'\'' | b'`' => at = end_of_string(bytes, at)?,
            c if c == close => return Ok(at + 1),
            _ => at += 1,
        }
    }
    Err(PromqlError::Unterminated { what, at: start })
}

/// One label matcher of a selector: its label and operator (`=`, `!=`, `=~`, `!~`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matcher {
    pub label: String,
    pub op: String,
}

/// Reads the matchers of a `{…}` token (braces included).
pub fn parse_matchers(group: &str) -> Result<Vec<Matcher>, PromqlError> {
    let inner = group
        .strip_prefix('{')
        .and_then(|g| g.strip_suffix('}'))
        .ok_or(PromqlError::Unexpected {
            found: group.to_owned(),
            at: 0,
            expected: "{…}",
        })?;
    let bytes = inner.as_bytes();
    let skip_space = |mut at: usize| {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        at
    };
    let unexpected = |at: usize, expected| PromqlError::Unexpected {
        found: inner[at..].chars().take(20).collect(),
        at: at + 1,
        expected,
    };
    let mut matchers = Vec::new();
    let mut at = skip_space(0);
    while at < bytes.len() {
        let label_start = at;
        while at < bytes.len() && (bytes[at].is_ascii_alphanumeric() || bytes[at] == b'_') {
            at += 1;
        }
        if at == label_start {
            return Err(unexpected(at, "a label name"));
        }
        let label = inner[label_start..at].to_owned();
        at = skip_space(at);
        let op = ["=~", "!~", "!=", "="]
            .into_iter()
            .find(|op| inner[at..].starts_with(op))
            .ok_or_else(|| unexpected(at, "a matcher operator"))?;
        at = skip_space(at + op.len());
        if !matches!(bytes.get(at), Some(b'"' | b'\'' | b'`')) {
            return Err(unexpected(at, "a quoted label value"));
        }
        at = skip_space(end_of_string(bytes, at)?);
        matchers.push(Matcher {
            label,
            op: op.to_owned(),
        });
        match bytes.get(at) {
            Some(b',') => at = skip_space(at + 1),
            None => {}
            Some(_) => return Err(unexpected(at, "`,` or `}`")),
        }
    }
    Ok(matchers)
}

/// A vector selector: its metric name, matchers, and where new matchers go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub metric: Option<String>,
    pub matchers: Vec<Matcher>,
    insert: Insertion,
}

/// Where and how new matchers are written into a selector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Insertion {
    /// No braces: `{…}` goes right after the metric name.
    NewBraces { at: usize },
    /// Into existing braces, at `at`; `comma` when a `, ` must separate it from what is there.
    IntoBraces { at: usize, comma: bool },
}

/// How the labels of two operands are matched (`on`/`ignoring`, `group_left`/`group_right`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VectorMatching {
    pub on: Option<Vec<String>>,
    pub ignoring: Option<Vec<String>>,
    pub group_left: Option<Vec<String>>,
    pub group_right: Option<Vec<String>>,
}

/// Aggregation grouping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grouping {
    None,
    By(Vec<String>),
    Without(Vec<String>),
}

/// The parsed expression: only what label propagation needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Number,
    /// A string literal, unquoted when it has no escapes (function arguments like
    /// `label_replace`'s destination label).
    Str(String),
    Selector(Selector),
    Paren(Box<Expr>),
    Unary(Box<Expr>),
    /// A range, subquery or offset applied to an expression.
    Modified(Box<Expr>),
    Call {
        name: String,
        args: Vec<Expr>,
    },
    Aggregate {
        op: String,
        grouping: Grouping,
        args: Vec<Expr>,
    },
    Binary {
        op: String,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
        matching: VectorMatching,
    },
}

impl Expr {
    /// Every selector, left to right.
    pub fn selectors(&self) -> Vec<&Selector> {
        let mut out = Vec::new();
        self.collect_selectors(&mut out);
        out
    }

    fn collect_selectors<'a>(&'a self, out: &mut Vec<&'a Selector>) {
        match self {
            Expr::Number | Expr::Str(_) => {}
            Expr::Selector(selector) => out.push(selector),
            Expr::Paren(inner) | Expr::Unary(inner) | Expr::Modified(inner) => {
                inner.collect_selectors(out)
            }
            Expr::Call { args, .. } | Expr::Aggregate { args, .. } => {
                args.iter().for_each(|arg| arg.collect_selectors(out))
            }
            Expr::Binary { lhs, rhs, .. } => {
                lhs.collect_selectors(out);
                rhs.collect_selectors(out);
            }
        }
    }

    /// Every function or aggregation called, left to right, lowercase.
    pub fn functions(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.collect_functions(&mut out);
        out
    }

    fn collect_functions(&self, out: &mut Vec<String>) {
        match self {
            Expr::Number | Expr::Str(_) | Expr::Selector(_) => {}
            Expr::Paren(inner) | Expr::Unary(inner) | Expr::Modified(inner) => {
                inner.collect_functions(out)
            }
            Expr::Call { name: op, args } | Expr::Aggregate { op, args, .. } => {
                out.push(op.to_ascii_lowercase());
                args.iter().for_each(|arg| arg.collect_functions(out));
            }
            Expr::Binary { lhs, rhs, .. } => {
                lhs.collect_functions(out);
                rhs.collect_functions(out);
            }
        }
    }
}

/// PromQL's aggregation operators: they take `by`/`without` before or after their arguments.
const AGGREGATIONS: [&str; 14] = [
    "sum",
    "min",
    "max",
    "avg",
    "group",
    "stddev",
    "stdvar",
    "count",
    "count_values",
    "bottomk",
    "topk",
    "quantile",
    "limitk",
    "limit_ratio",
];

/// Parses an expression.
pub fn parse(source: &str) -> Result<Expr, PromqlError> {
    let tokens = tokenize(source)?;
    let significant: Vec<Token> = tokens.into_iter().filter(|t| !t.is_trivia()).collect();
    let mut parser = Parser {
        source,
        tokens: &significant,
        at: 0,
    };
    let expr = parser.expr(1)?;
    match parser.peek() {
        None => Ok(expr),
        Some(token) => Err(parser.unexpected(token, "the end of the expression")),
    }
}

struct Parser<'a> {
    source: &'a str,
    tokens: &'a [Token],
    at: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<Token> {
        self.tokens.get(self.at).copied()
    }

    fn peek_kind(&self) -> Option<TokenKind> {
        self.peek().map(|t| t.kind)
    }

    fn next(&mut self, expected: &'static str) -> Result<Token, PromqlError> {
        let token = self.peek().ok_or(PromqlError::UnexpectedEnd { expected })?;
        self.at += 1;
        Ok(token)
    }

    fn expect(&mut self, kind: TokenKind, expected: &'static str) -> Result<Token, PromqlError> {
        let token = self.next(expected)?;
        if token.kind == kind {
            Ok(token)
        } else {
            Err(self.unexpected(token, expected))
        }
    }

    fn unexpected(&self, token: Token, expected: &'static str) -> PromqlError {
        PromqlError::Unexpected {
            found: token.text(self.source).to_owned(),
            at: token.start,
            expected,
        }
    }

    /// The binary operator at the cursor and its precedence (PromQL's, `or` lowest).
    fn binary_operator(&self) -> Option<(String, u8)> {
        let token = self.peek()?;
        let text = token.text(self.source);
        let precedence = match token.kind {
            TokenKind::Keyword(Keyword::Or) => 1,
            TokenKind::Keyword(Keyword::And | Keyword::Unless) => 2,
            TokenKind::Operator => match text {
                "==" | "!=" | "<" | "<=" | ">" | ">=" => 3,
                "+" | "-" => 4,
                "*" | "/" | "%" => 5,
                "^" => 6,
                _ => return None,
            },
            _ => return None,
        };
        Some((text.to_ascii_lowercase(), precedence))
    }

    /// Precedence climbing; `^` is right-associative.
    fn expr(&mut self, min_precedence: u8) -> Result<Expr, PromqlError> {
        let mut lhs = self.unary()?;
        while let Some((op, precedence)) = self.binary_operator() {
            if precedence < min_precedence {
                break;
            }
            self.at += 1;
            let matching = self.vector_matching()?;
            let next = if op == "^" {
                precedence
            } else {
                precedence + 1
            };
            let rhs = self.expr(next)?;
            lhs = Expr::Binary {
                op,
                lhs: Box::new(lhs),
                rhs: Box::new(rhs),
                matching,
            };
        }
        Ok(lhs)
    }

    fn unary(&mut self) -> Result<Expr, PromqlError> {
        if let Some(token) = self.peek()
            && token.kind == TokenKind::Operator
            && matches!(token.text(self.source), "-" | "+")
        {
            self.at += 1;
            return Ok(Expr::Unary(Box::new(self.unary()?)));
        }
        let primary = self.primary()?;
        self.postfix(primary)
    }

    /// `bool`, `on(…)`/`ignoring(…)`, `group_left(…)`/`group_right(…)` after an operator.
    fn vector_matching(&mut self) -> Result<VectorMatching, PromqlError> {
        let mut matching = VectorMatching::default();
        if self.peek_kind() == Some(TokenKind::Keyword(Keyword::Bool)) {
            self.at += 1;
        }
        match self.peek_kind() {
            Some(TokenKind::Keyword(Keyword::On)) => {
                self.at += 1;
                matching.on = Some(self.label_list()?);
            }
            Some(TokenKind::Keyword(Keyword::Ignoring)) => {
                self.at += 1;
                matching.ignoring = Some(self.label_list()?);
            }
            _ => {}
        }
        let side = match self.peek_kind() {
            Some(TokenKind::Keyword(Keyword::GroupLeft)) => Some(true),
            Some(TokenKind::Keyword(Keyword::GroupRight)) => Some(false),
            _ => None,
        };
        if let Some(left) = side {
            self.at += 1;
            // After `group_left`, a `(` always opens its label list, never the operand.
            let labels = if self.peek_kind() == Some(TokenKind::LParen) {
                self.label_list()?
            } else {
                Vec::new()
            };
            if left {
                matching.group_left = Some(labels);
            } else {
                matching.group_right = Some(labels);
            }
        }
        Ok(matching)
    }

    /// `(a, b, …)` after `by`, `without`, `on`, `ignoring`, `group_left`, `group_right`.
    fn label_list(&mut self) -> Result<Vec<String>, PromqlError> {
        self.expect(TokenKind::LParen, "`(` opening a label list")?;
        let mut labels = Vec::new();
        loop {
            let token = self.next("a label or `)`")?;
            match token.kind {
                TokenKind::RParen => return Ok(labels),
                // Label names may spell a keyword (`on`, `bool`): in a list they are labels.
                TokenKind::Ident | TokenKind::Keyword(_) => {
                    labels.push(token.text(self.source).to_owned());
                    let after = self.next("`,` or `)`")?;
                    match after.kind {
                        TokenKind::Comma => {}
                        TokenKind::RParen => return Ok(labels),
                        _ => return Err(self.unexpected(after, "`,` or `)`")),
                    }
                }
                _ => return Err(self.unexpected(token, "a label or `)`")),
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, PromqlError> {
        let token = self.next("an expression")?;
        match token.kind {
            TokenKind::Number => Ok(Expr::Number),
            TokenKind::Str => {
                let text = token.text(self.source);
                Ok(Expr::Str(text[1..text.len() - 1].to_owned()))
            }
            TokenKind::LParen => {
                let inner = self.expr(1)?;
                self.expect(TokenKind::RParen, "`)`")?;
                Ok(Expr::Paren(Box::new(inner)))
            }
            TokenKind::Matchers => Ok(Expr::Selector(self.selector(None, token)?)),
            TokenKind::Ident => {
                let name = token.text(self.source).to_owned();
                let next = self.peek_kind();
                let is_aggregation = AGGREGATIONS.contains(&name.to_ascii_lowercase().as_str())
                    && matches!(
                        next,
                        Some(
                            TokenKind::LParen | TokenKind::Keyword(Keyword::By | Keyword::Without)
                        )
                    );
                if is_aggregation {
                    self.aggregate(name)
                } else if next == Some(TokenKind::LParen) {
                    self.at += 1;
                    let args = self.arguments()?;
                    Ok(Expr::Call { name, args })
                } else if next == Some(TokenKind::Matchers) {
                    let braces = self.next("label matchers")?;
                    Ok(Expr::Selector(self.selector(Some(name), braces)?))
                } else {
                    Ok(Expr::Selector(Selector {
                        metric: Some(name),
                        matchers: Vec::new(),
                        insert: Insertion::NewBraces { at: token.end },
                    }))
                }
            }
            _ => Err(self.unexpected(token, "an expression")),
        }
    }

    fn selector(&self, metric: Option<String>, braces: Token) -> Result<Selector, PromqlError> {
        let text = braces.text(self.source);
        let matchers = parse_matchers(text).map_err(|e| match e {
            PromqlError::Unexpected {
                found,
                at,
                expected,
            } => PromqlError::Unexpected {
                found,
                at: braces.start + at,
                expected,
            },
            other => other,
        })?;
        let inner = &text[1..text.len() - 1];
        let content = inner.trim_end();
        // After a trailing comma (or in empty braces) the new matchers go right before `}`;
        // otherwise right after the last matcher, with a separating comma.
        let insert = if content.trim_start().is_empty() || content.ends_with(',') {
            Insertion::IntoBraces {
                at: braces.end - 1,
                comma: false,
            }
        } else {
            Insertion::IntoBraces {
                at: braces.start + 1 + content.len(),
                comma: true,
            }
        };
        Ok(Selector {
            metric,
            matchers,
            insert,
        })
    }

    fn arguments(&mut self) -> Result<Vec<Expr>, PromqlError> {
        let mut args = Vec::new();
        if self.peek_kind() == Some(TokenKind::RParen) {
            self.at += 1;
            return Ok(args);
        }
        loop {
            args.push(self.expr(1)?);
            let token = self.next("`,` or `)`")?;
            match token.kind {
                TokenKind::Comma => {}
                TokenKind::RParen => return Ok(args),
                _ => return Err(self.unexpected(token, "`,` or `)`")),
            }
        }
    }

    fn grouping(&mut self) -> Result<Option<Grouping>, PromqlError> {
        Ok(match self.peek_kind() {
            Some(TokenKind::Keyword(Keyword::By)) => {
                self.at += 1;
                Some(Grouping::By(self.label_list()?))
            }
            Some(TokenKind::Keyword(Keyword::Without)) => {
                self.at += 1;
                Some(Grouping::Without(self.label_list()?))
            }
            _ => None,
        })
    }

    /// `sum by (a) (x)` or `sum (x) by (a)`; `topk`/`quantile`/`count_values` take a parameter
    /// first.
    fn aggregate(&mut self, op: String) -> Result<Expr, PromqlError> {
        let before = self.grouping()?;
        self.expect(TokenKind::LParen, "`(` after an aggregation")?;
        let args = self.arguments()?;
        let grouping = match before {
            Some(grouping) => grouping,
            None => self.grouping()?.unwrap_or(Grouping::None),
        };
        Ok(Expr::Aggregate { op, grouping, args })
    }

    /// Ranges, subqueries and `offset` after an expression.
    fn postfix(&mut self, mut expr: Expr) -> Result<Expr, PromqlError> {
        loop {
            match self.peek_kind() {
                Some(TokenKind::Range) => {
                    self.at += 1;
                    expr = Expr::Modified(Box::new(expr));
                }
                Some(TokenKind::Keyword(Keyword::Offset)) => {
                    self.at += 1;
                    if let Some(token) = self.peek()
                        && token.kind == TokenKind::Operator
                        && token.text(self.source) == "-"
                    {
                        self.at += 1;
                    }
                    self.expect(TokenKind::Number, "a duration after `offset`")?;
                    expr = Expr::Modified(Box::new(expr));
                }
                _ => return Ok(expr),
            }
        }
    }
}

/// The expression with the identifying labels among `labels` added as equality matchers to each
/// selector that plausibly carries them (see `plausible`) and that does not already pin that
/// label with `=`. Nothing else changes: not function arguments, not `by`/`on`/`group_left` lists,
/// not ranges or offsets, not comments or spacing.
///
/// A label is only added to a selector it reaches: the alert's labels are those of the
/// expression's result, so a label is followed down through aggregations (kept by `by`, dropped by
/// `without`), one-to-one matching (`on` keeps only its list), `group_left(…)` (the "one" side
/// contributes only the matching and copied labels), `and`/`unless` (the right side only
/// matches) and `label_replace` (the destination label is made there, not read).
pub fn with_labels(source: &str, labels: &BTreeMap<String, String>) -> Result<String, PromqlError> {
    let expr = parse(source)?;
    let present: BTreeSet<&str> = IDENTIFYING_LABELS
        .iter()
        .copied()
        .filter(|label| labels.contains_key(*label))
        .collect();
    if present.is_empty() {
        return Ok(source.to_owned());
    }
    // Labels that some selector of a metric constrains: that metric carries them everywhere.
    let mut named: BTreeSet<(&str, &str)> = BTreeSet::new();
    for selector in expr.selectors() {
        if let Some(metric) = &selector.metric {
            for matcher in &selector.matchers {
                named.insert((metric.as_str(), matcher.label.as_str()));
            }
        }
    }
    let mut inserts = Vec::new();
    let walk = Walk {
        labels,
        named: &named,
    };
    walk.expr(&expr, &present, &BTreeSet::new(), &mut inserts);
    inserts.sort_by_key(|(at, _)| *at);
    let mut out = String::with_capacity(source.len() + inserts.len() * 32);
    let mut copied = 0;
    for (at, text) in inserts {
        out.push_str(&source[copied..at]);
        out.push_str(&text);
        copied = at;
    }
    out.push_str(&source[copied..]);
    Ok(out)
}

struct Walk<'a> {
    labels: &'a BTreeMap<String, String>,
    named: &'a BTreeSet<(&'a str, &'a str)>,
}

type Labels<'a> = BTreeSet<&'a str>;

fn only<'a>(set: &Labels<'a>, list: &[String]) -> Labels<'a> {
    set.iter()
        .copied()
        .filter(|l| list.iter().any(|x| x == l))
        .collect()
}

fn except<'a>(set: &Labels<'a>, list: &[String]) -> Labels<'a> {
    set.iter()
        .copied()
        .filter(|l| !list.iter().any(|x| x == l))
        .collect()
}

fn with<'a>(set: &Labels<'a>, list: &'a [String]) -> Labels<'a> {
    let mut out = set.clone();
    out.extend(list.iter().map(String::as_str));
    out
}

impl<'a> Walk<'a> {
    /// `reach`: identifying labels of the alert that this sub-expression's series carry with the
    /// alert's value. `seen`: labels the expression names in a `by`/`on`/`group_*` list in scope.
    fn expr(
        &self,
        expr: &'a Expr,
        reach: &Labels<'a>,
        seen: &Labels<'a>,
        out: &mut Vec<(usize, String)>,
    ) {
        match expr {
            Expr::Number | Expr::Str(_) => {}
            Expr::Selector(selector) => self.selector(selector, reach, seen, out),
            Expr::Paren(inner) | Expr::Unary(inner) | Expr::Modified(inner) => {
                self.expr(inner, reach, seen, out)
            }
            Expr::Call { name, args } => {
                let name = name.to_ascii_lowercase();
                let reach = match (name.as_str(), args.get(1)) {
                    // The destination label is written by the function, not read from the input.
                    ("label_replace" | "label_join", Some(Expr::Str(dst))) => {
                        except(reach, std::slice::from_ref(dst))
                    }
                    // A scalar has no labels to narrow; `absent`'s come from its own equality
                    // matchers, so an alert cannot carry one the selector does not pin already.
                    ("scalar" | "absent" | "absent_over_time", _) => Labels::new(),
                    _ => reach.clone(),
                };
                args.iter()
                    .for_each(|arg| self.expr(arg, &reach, seen, out));
            }
            Expr::Aggregate { grouping, args, .. } => {
                let (reach, seen) = match grouping {
                    Grouping::By(list) => (only(reach, list), with(seen, list)),
                    Grouping::Without(list) => (except(reach, list), seen.clone()),
                    Grouping::None => (Labels::new(), seen.clone()),
                };
                args.iter()
                    .for_each(|arg| self.expr(arg, &reach, &seen, out));
            }
            Expr::Binary {
                op,
                lhs,
                rhs,
                matching,
            } => {
                const NONE: &[String] = &[];
                let on = matching.on.as_deref();
                let ignoring = matching.ignoring.as_deref().unwrap_or(NONE);
                let seen = with(seen, on.unwrap_or(NONE));
                // What one side contributes when it only takes part in the matching.
                let matched = |reach: &Labels<'a>, copied: &[String]| match on {
                    Some(list) => {
                        let mut out = only(reach, list);
                        out.extend(only(reach, copied));
                        out
                    }
                    None => {
                        let mut out = except(reach, ignoring);
                        out.extend(only(reach, copied));
                        out
                    }
                };
                let (left, right, left_seen, right_seen) = match op.as_str() {
                    "or" => (reach.clone(), reach.clone(), seen.clone(), seen.clone()),
                    "and" | "unless" => (
                        reach.clone(),
                        matched(reach, &[]),
                        seen.clone(),
                        seen.clone(),
                    ),
                    _ => match (&matching.group_left, &matching.group_right) {
                        (Some(copied), _) => (
                            reach.clone(),
                            matched(reach, copied),
                            seen.clone(),
                            with(&seen, copied),
                        ),
                        (None, Some(copied)) => (
                            matched(reach, copied),
                            reach.clone(),
                            with(&seen, copied),
                            seen.clone(),
                        ),
                        // One-to-one: the result keeps the `on` labels, or all but `ignoring`.
                        (None, None) => {
                            let both = matched(reach, &[]);
                            (both.clone(), both, seen.clone(), seen.clone())
                        }
                    },
                };
                self.expr(lhs, &left, &left_seen, out);
                self.expr(rhs, &right, &right_seen, out);
            }
        }
    }

    fn selector(
        &self,
        selector: &Selector,
        reach: &Labels<'a>,
        seen: &Labels<'a>,
        out: &mut Vec<(usize, String)>,
    ) {
        let added: Vec<String> = IDENTIFYING_LABELS
            .iter()
            .filter(|label| reach.contains(*label))
            .filter(|label| {
                !selector
                    .matchers
                    .iter()
                    .any(|m| m.label == **label && m.op == "=")
            })
            .filter(|label| plausible(label, selector, seen, self.named))
            .filter_map(|label| {
                let value = self.labels.get(*label)?;
                Some(format!("{label}=\"{}\"", escape(value)))
            })
            .collect();
        if added.is_empty() {
            return;
        }
        let list = added.join(", ");
        out.push(match selector.insert {
            Insertion::NewBraces { at } => (at, format!("{{{list}}}")),
            Insertion::IntoBraces { at, comma: true } => (at, format!(", {list}")),
            Insertion::IntoBraces { at, comma: false } => (at, list),
        });
    }
}

/// Whether the rule's own expression makes it plausible that `selector`'s series carry `label`:
///
/// - the expression names it in a `by`/`on`/`group_left(…)` list that applies to the selector,
///   or in a matcher of another selector of the same metric;
/// - a recording rule's name says so (`level:metric:operations`, e.g. `node_quantile:…` → `node`);
/// - kube-state-metrics: `namespace` on every `kube_*` family of a namespaced object (not
///   `kube_node_*`, `kube_persistentvolume_*` or its own `kube_state_metrics_*`), and each
///   family's object label (`kube_pod_*` → `pod`, `kube_pod_container_*` → `container`, …);
/// - `instance` (which Prometheus adds to every scraped series) where the target is the subject:
///   `node_*` (node-exporter), `kubelet_*` but its per-volume stats, and `up`. Elsewhere
///   (kube-state-metrics, Prometheus, Alertmanager) it is the exporter's pod address: not what
///   the alert is about, and changed by a restart, which would cut a 48-hour trend short.
fn plausible(
    label: &str,
    selector: &Selector,
    seen: &Labels<'_>,
    named: &BTreeSet<(&str, &str)>,
) -> bool {
    if seen.contains(label) {
        return true;
    }
    let Some(metric) = selector.metric.as_deref() else {
        return false;
    };
    if named.contains(&(metric, label)) {
        return true;
    }
    if let Some((level, _)) = metric.split_once(':') {
        return level.split('_').any(|part| part == label);
    }
    if let Some(family) = metric.strip_prefix("kube_") {
        let object = [
            ("pod_container_", "container"),
            ("pod_", "pod"),
            ("deployment_", "deployment"),
            ("statefulset_", "statefulset"),
            ("daemonset_", "daemonset"),
            ("job_", "job_name"),
            ("horizontalpodautoscaler_", "horizontalpodautoscaler"),
            ("persistentvolumeclaim_", "persistentvolumeclaim"),
            ("node_", "node"),
        ];
        let not_namespaced = ["node_", "persistentvolume_", "state_metrics_"];
        return match label {
            "namespace" => !not_namespaced.iter().any(|p| family.starts_with(p)),
            // `kube_pod_container_*` also carries `pod`.
            _ => object
                .iter()
                .any(|(prefix, object)| *object == label && family.starts_with(prefix)),
        };
    }
    // `instance` where the scrape target is the subject: node-exporter and the kubelet (one per
    // node; not the kubelet's per-volume stats, which follow the claim from node to node), and
    // `up` (the target itself). Elsewhere it is a pod's address, which a restart changes.
    label == "instance"
        && (metric == "up"
            || metric.starts_with("node_")
            || (metric.starts_with("kubelet_") && !metric.starts_with("kubelet_volume_stats_")))
}

/// A label value as a PromQL double-quoted string body.
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}
