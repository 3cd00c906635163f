//! Detectors over text written by applications: container logs and log queries.
//!
//! Application text is untrusted and can say anything, so these detectors never verify a cause
//! on their own: a finding is verified only when the control plane shows a failure happened
//! (`failure_observed`: a crash loop, an abnormal exit, a failed job) *and* the line sits at the
//! end of the log, where the process wrote its last words before dying. A connection error in
//! the middle of a healthy log is reported as a low-confidence observation, and text that
//! tries to instruct the reader is skipped entirely.
//!
//! A service that answers with errors or slowly does not crash, so for service-level alerts
//! (error rate, latency, timeouts) a second, weaker proof applies: a failure of a known class
//! (a dependency refusing connections, DNS, certificates, exhausted connections) that the
//! round's logs show at least [`MIN_REPEATS`] times, not logged below error level, is verified
//! at medium confidence. One line is an anecdote; the same failure again and again while the
//! service's own metric says it is failing is what an on-call engineer acts on.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use regex::Regex;

use super::text::{
    LogLevel, below_error_level, is_application_log, is_structural, is_tool_error_line, log_level,
    log_lines, looks_like_injection, object_name, quote_around,
};
use super::{Citation, Confidence, DetectionContext, DetectorKind, Finding, cite};
use crate::evidence::Evidence;

/// Lines from the end of a log that count as "the last words" of a crashed process.
const TAIL_LINES: usize = 10;
/// Lines of one failure class, across the round's logs, that corroborate a service-level alert.
const MIN_REPEATS: usize = 2;

/// Failure classes that explain a failing service when they repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum FailureClass {
    Dependency,
    Dns,
    Certificate,
    Connections,
}

impl FailureClass {
    const ALL: [FailureClass; 4] = [
        FailureClass::Dependency,
        FailureClass::Dns,
        FailureClass::Certificate,
        FailureClass::Connections,
    ];

    fn matches(self, line: &str) -> bool {
        match self {
            FailureClass::Dependency => {
                DEPENDENCY.is_match(line) && !DNS.is_match(line) && !DNS_TIMEOUT.is_match(line)
            }
            FailureClass::Dns => DNS.is_match(line) || DNS_TIMEOUT.is_match(line),
            FailureClass::Certificate => CERTIFICATE.is_match(line),
            FailureClass::Connections => {
                POOL_EXHAUSTED.is_match(line) || CONNECTION_LIMIT.is_match(line)
            }
        }
    }
}

static CRASH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(\berr(or)?\b|\bfatal\b|\bpanic|exception\b|\bfail(ed|ure|s)?\b|\brefused\b|\bdenied\b|\bnot found\b|no such|\bmissing\b|\brequired\b|\binvalid\b|\bcannot\b|\bcan't\b|\bunable\b|could not|couldn't|\bundefined\b|not set\b|\bexpired\b|\btimed? ?out\b|\bkilled\b|\babort|segmentation|traceback|\bexit(ed|ing)?\b|x509|no space left)",
    )
    .expect("static regex")
});
static STRONG_CRASH_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(panic:|fatal error:|Exception in thread|FATAL\b)").expect("static regex")
});
static EXCEPTION_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*(?:[A-Za-z_][\w$]*\.)*[A-Z]\w*(?:Error|Exception)(?: \(|: )\S")
        .expect("static regex")
});
static DEPENDENCY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)connection refused|connection reset|connection timed out|connect(?:ion)? timeout|i/o timeout|could not connect|couldn't connect|failed to connect|unable to connect|cannot connect|can't connect|no route to host|host is unreachable|network is unreachable|all host\(s\) tried|\bECONNREFUSED\b|\bETIMEDOUT\b|\bEHOSTUNREACH\b|server closed the connection unexpectedly|could not translate host name|\bconnectexception\b",
    )
    .expect("static regex")
});
static DNS: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)no such host|name or service not known|temporary failure in name resolution|could not resolve host|nodename nor servname|\bNXDOMAIN\b|server misbehaving|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|UnknownHostException|could not translate host name",
    )
    .expect("static regex")
});
/// A lookup that reached the DNS server and got no answer in time (the server is slow or
/// overloaded, not the name wrong): `lookup x on 10.96.0.10:53: read udp …: i/o timeout`.
static DNS_TIMEOUT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)lookup \S+ on (\S+:53): .*(?:i/o timeout|timed out|timeout)")
        .expect("static regex")
});
static ENDPOINT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b((?:[A-Za-z][A-Za-z0-9-]*\.)*[A-Za-z][A-Za-z0-9-]*|\d{1,3}(?:\.\d{1,3}){3}):(\d{2,5})\b")
        .expect("static regex")
});
static DNS_HOST: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(?:lookup|resolve host:?|host name|getaddrinfo \w+)\s+\\?"?([A-Za-z0-9][A-Za-z0-9.-]*[A-Za-z0-9])"#)
        .expect("static regex")
});
static CERTIFICATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)certificate has expired|certificate (?:is )?expired|expiredcert|certificate is not yet valid|certificate signed by unknown authority|unknown authority|certificate verify failed|CERTIFICATE_VERIFY_FAILED|SSL certificate problem|tls: failed to verify certificate|certificate is valid for \S+,? not\b|x509:",
    )
    .expect("static regex")
});
static MISSING_CONFIG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)\b(?:missing|required|not set|undefined|unset|no value for)\b.{0,40}\b(?:env(?:ironment)?(?: var(?:iable)?)?|config(?:uration)?|setting|key|variable|option|parameter)\b|\b(?:env(?:ironment)?(?: var(?:iable)?)?|config(?:uration)?(?: key)?|setting|variable|option|parameter)\b.{0,60}\b(?:is missing|missing|is required|not set|not defined|undefined|unset|is empty)\b|\bKeyError: '",
    )
    .expect("static regex")
});
/// A client's pool has no free connection (HikariCP, SQLAlchemy, DBCP, pgx, generic).
static POOL_EXHAUSTED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)connection is not available, request timed out|connection pool (?:is )?exhausted|\bpool exhausted|timeout (?:waiting for|acquiring) (?:a |an idle )?connection|timed out waiting for (?:a |an )?(?:free |idle |available )?connection|QueuePool limit of size \d+ overflow \d+ reached|unable to acquire (?:a )?(?:JDBC )?connection|failed to acquire (?:a )?connection|could not get (?:a )?connection from (?:the )?pool|cannot get a connection, pool error|no available connection",
    )
    .expect("static regex")
});
/// The server refuses new connections: its connection limit is reached (Postgres, MySQL,
/// Redis, generic).
static CONNECTION_LIMIT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)sorry, too many clients already|remaining connection slots are reserved|\btoo many connections\b|max number of clients reached|maximum number of (?:client )?connections (?:reached|exceeded)|connection limit (?:exceeded|reached)",
    )
    .expect("static regex")
});
static UPPER_NAME: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b|\b[A-Z]{4,}\b").expect("static regex")
});
static NO_SPACE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)no space left on device|\bENOSPC\b|disk (?:is )?full").expect("static regex")
});

/// The line that best explains why a process died: a Go panic / fatal line (or a line logged at
/// fatal level) if there is one, otherwise the last error-ish line — preferring lines not logged
/// below error level, so `INFO exiting with status 1` does not hide the error before it. Tool
/// errors and injection text are never chosen.
pub(super) fn crash_line(log: &str) -> Option<&str> {
    let candidates = || {
        log.lines()
            .filter(|l| !l.trim().is_empty() && !is_tool_error_line(l) && !looks_like_injection(l))
    };
    // A raised exception names what failed more precisely than the summary logged after it
    // (`botocore…ClientError: … AccessDenied …` before `CRITICAL export failed; aborting`).
    candidates()
        .rfind(|l| EXCEPTION_LINE.is_match(l))
        .or_else(|| {
            candidates()
                .find(|l| STRONG_CRASH_LINE.is_match(l) || log_level(l) == Some(LogLevel::Fatal))
        })
        .or_else(|| candidates().rfind(|l| CRASH_LINE.is_match(l) && !below_error_level(l)))
        .or_else(|| candidates().rfind(|l| CRASH_LINE.is_match(l)))
}

/// Where the last match of `re` in `line` ends: the most specific part of a wrapped error
/// (`failed to connect …: dial tcp …: connection refused`) comes last.
fn last_match_end(re: &Regex, line: &str) -> Option<usize> {
    re.find_iter(line).last().map(|m| m.end())
}

/// Log-based detectors over all application-log evidence of the round.
pub(super) fn detect(
    evidence: &[Evidence],
    ctx: &DetectionContext,
    failure_observed: bool,
) -> Vec<Finding> {
    let repeated = repeated_classes(evidence);
    let mut out = Vec::new();
    for item in evidence {
        let structural = is_structural(item);
        if !is_application_log(item) && !structural {
            continue;
        }
        let mut scan = LogScan::new(item, ctx, failure_observed, structural);
        if ctx.service_level && !structural {
            scan.corroborated = repeated.clone();
        }
        if !structural {
            out.extend(scan.dependency_errors());
            out.extend(scan.connections_exhausted());
            out.extend(scan.missing_config());
            out.extend(scan.no_space());
        }
        out.extend(scan.certificate_errors());
    }
    out
}

/// The failure classes that [`MIN_REPEATS`] or more lines of the round's application logs show,
/// not counting lines logged below error level.
fn repeated_classes(evidence: &[Evidence]) -> Vec<FailureClass> {
    let mut counts: BTreeMap<FailureClass, usize> = BTreeMap::new();
    for item in evidence.iter().filter(|e| is_application_log(e)) {
        for line in log_lines(item) {
            if line.trim().is_empty()
                || is_tool_error_line(line)
                || looks_like_injection(line)
                || below_error_level(line)
            {
                continue;
            }
            for class in FailureClass::ALL {
                if class.matches(line) {
                    *counts.entry(class).or_default() += 1;
                }
            }
        }
    }
    counts
        .into_iter()
        .filter(|(_, n)| *n >= MIN_REPEATS)
        .map(|(class, _)| class)
        .collect()
}

struct LogScan<'a> {
    evidence: &'a Evidence,
    /// (line index, line), without blank lines, tool errors and injection text.
    lines: Vec<(usize, &'a str)>,
    tail_start: usize,
    resource: Option<String>,
    failure_observed: bool,
    structural: bool,
    /// Failure classes that repeat in the round's logs under a service-level alert.
    corroborated: Vec<FailureClass>,
}

impl<'a> LogScan<'a> {
    fn new(
        evidence: &'a Evidence,
        ctx: &DetectionContext,
        failure_observed: bool,
        structural: bool,
    ) -> Self {
        let lines: Vec<(usize, &str)> = log_lines(evidence)
            .into_iter()
            .enumerate()
            .filter(|(_, l)| {
                !l.trim().is_empty() && !is_tool_error_line(l) && !looks_like_injection(l)
            })
            .collect();
        let tail_start = lines
            .len()
            .checked_sub(TAIL_LINES)
            .and_then(|i| lines.get(i))
            .map_or(0, |(index, _)| *index);
        Self {
            evidence,
            lines,
            tail_start,
            resource: object_name(evidence).or_else(|| ctx.default_resource.clone()),
            failure_observed,
            structural,
            corroborated: Vec::new(),
        }
    }

    /// Verified and confidence for a finding whose latest supporting line is `index`. A line
    /// the application logged below error level (`WARN … continuing without cache`) is, by its
    /// own account, not what killed it: at most a medium-confidence suspicion.
    fn strength(&self, index: usize) -> (bool, Confidence) {
        if self.structural {
            return (true, Confidence::High);
        }
        let in_tail = index >= self.tail_start;
        let downplayed = self.downplayed(index);
        match (self.failure_observed, in_tail && !downplayed) {
            (true, true) => (true, Confidence::High),
            (true, false) => (false, Confidence::Medium),
            (false, _) => (false, Confidence::Low),
        }
    }

    /// Whether log line `index` (an index into [`log_lines`], like the scan's own, which for a
    /// log store's JSON answer are not the excerpt's lines) was logged below error level.
    fn downplayed(&self, index: usize) -> bool {
        self.lines
            .iter()
            .find(|(i, _)| *i == index)
            .is_some_and(|(_, line)| below_error_level(line))
    }

    /// [`Self::strength`], raised to verified at medium confidence when the line's failure
    /// class repeats in the round's logs under a service-level alert (see the module doc).
    fn class_strength(&self, index: usize, class: FailureClass) -> (bool, Confidence) {
        let own = self.strength(index);
        let downplayed = self.downplayed(index);
        if !own.0 && !downplayed && self.corroborated.contains(&class) {
            (true, Confidence::Medium)
        } else {
            own
        }
    }

    fn in_pod(&self) -> String {
        self.resource
            .as_deref()
            .map(|r| format!(" in `{r}`"))
            .unwrap_or_default()
    }

    fn finding(
        &self,
        detector: DetectorKind,
        title: String,
        detail: String,
        last_index: usize,
        refs: Vec<Citation>,
    ) -> Finding {
        let class = match detector {
            DetectorKind::DependencyError if title.starts_with("DNS") => Some(FailureClass::Dns),
            DetectorKind::DependencyError => Some(FailureClass::Dependency),
            DetectorKind::CertificateError => Some(FailureClass::Certificate),
            DetectorKind::ConnectionsExhausted => Some(FailureClass::Connections),
            _ => None,
        };
        let (verified, confidence) = match class {
            Some(class) => self.class_strength(last_index, class),
            None => self.strength(last_index),
        };
        Finding {
            detector,
            title,
            detail,
            confidence,
            verified,
            resource: self.resource.clone(),
            refs,
            at: None,
        }
    }

    /// Connection and DNS failures, one finding per endpoint.
    fn dependency_errors(&self) -> Vec<Finding> {
        // endpoint → (is_dns, count, last line index, last line)
        let mut by_endpoint: BTreeMap<String, (bool, usize, usize, &str)> = BTreeMap::new();
        let mut dns_servers_timing_out: Vec<String> = Vec::new();
        for &(index, line) in &self.lines {
            if let Some(caps) = DNS_TIMEOUT.captures(line) {
                let server = caps[1].to_string();
                if !dns_servers_timing_out.contains(&server) {
                    dns_servers_timing_out.push(server.clone());
                }
                let entry = by_endpoint.entry(server).or_insert((true, 0, index, line));
                entry.1 += 1;
                entry.2 = index;
                entry.3 = line;
                continue;
            }
            let dns = DNS.is_match(line);
            if !dns && !DEPENDENCY.is_match(line) {
                continue;
            }
            let endpoint = if dns {
                DNS_HOST.captures(line).map(|c| c[1].to_string())
            } else {
                None
            }
            .or_else(|| {
                ENDPOINT
                    .captures_iter(line)
                    .map(|c| format!("{}:{}", &c[1], &c[2]))
                    .last()
            })
            .unwrap_or_else(|| "an unnamed dependency".to_string());
            let entry = by_endpoint.entry(endpoint).or_insert((dns, 0, index, line));
            entry.0 |= dns;
            entry.1 += 1;
            entry.2 = index;
            entry.3 = line;
        }
        by_endpoint
            .into_iter()
            .map(|(endpoint, (dns, count, index, line))| {
                let timing_out = dns_servers_timing_out.contains(&endpoint);
                let end = last_match_end(&DNS_TIMEOUT, line)
                    .or_else(|| last_match_end(&DNS, line))
                    .or_else(|| last_match_end(&DEPENDENCY, line));
                let quote = quote_around(line, end.unwrap_or(0));
                let (title, what) = if timing_out {
                    (
                        format!("DNS lookups time out at {endpoint}"),
                        "DNS queries get no answer in time from",
                    )
                } else if dns {
                    (
                        format!("DNS resolution failing for {endpoint}"),
                        "DNS lookups fail for",
                    )
                } else {
                    (
                        format!("Cannot connect to dependency {endpoint}"),
                        "connections fail to",
                    )
                };
                let times = if count == 1 {
                    "once".to_string()
                } else {
                    format!("{count} times")
                };
                let detail = format!(
                    "The log{} reports that {what} {endpoint} ({times}), last: `{quote}`",
                    self.in_pod()
                );
                let refs = vec![cite(self.evidence, quote)];
                self.finding(DetectorKind::DependencyError, title, detail, index, refs)
            })
            .collect()
    }

    /// A connection pool with no free connection, or a server refusing connections because its
    /// limit is reached; one finding per log, led by the server's refusal when there is one
    /// (the pool waits because the server will not open more).
    fn connections_exhausted(&self) -> Option<Finding> {
        let last = |re: &Regex| {
            self.lines
                .iter()
                .rev()
                .find(|(_, l)| re.is_match(l))
                .copied()
        };
        let limit = last(&CONNECTION_LIMIT);
        let pool = last(&POOL_EXHAUSTED);
        let quote =
            |re: &Regex, line: &str| quote_around(line, last_match_end(re, line).unwrap_or(0));
        let (title, detail, index, mut refs) = match (limit, pool) {
            (Some((index, line)), pool) => {
                let quoted = quote(&CONNECTION_LIMIT, line);
                (
                    "Connection limit reached: the server refuses new connections".to_string(),
                    format!(
                        "The log{} shows the server refusing new connections because its \
                         connection limit is reached: `{quoted}`{}",
                        self.in_pod(),
                        if pool.is_some() {
                            "; the client's pool waits for connections it cannot open."
                        } else {
                            "."
                        }
                    ),
                    index,
                    vec![cite(self.evidence, quoted)],
                )
            }
            (None, Some((index, line))) => {
                let quoted = quote(&POOL_EXHAUSTED, line);
                (
                    "Connection pool exhausted: requests wait for a free connection".to_string(),
                    format!(
                        "Every connection of the pool{} is in use; requests wait for one and \
                         time out: `{quoted}`",
                        self.in_pod()
                    ),
                    index,
                    vec![cite(self.evidence, quoted)],
                )
            }
            (None, None) => return None,
        };
        if let (Some(_), Some((_, line))) = (limit, pool) {
            let quoted = quote(&POOL_EXHAUSTED, line);
            if !refs.iter().any(|c| c.quote == quoted) {
                refs.push(cite(self.evidence, quoted));
            }
        }
        let latest = index.max(pool.map_or(0, |(i, _)| i));
        Some(self.finding(
            DetectorKind::ConnectionsExhausted,
            title,
            detail,
            latest,
            refs,
        ))
    }

    fn certificate_errors(&self) -> Option<Finding> {
        let matches: Vec<(usize, &str)> = self
            .lines
            .iter()
            .copied()
            .filter(|(_, l)| CERTIFICATE.is_match(l))
            .collect();
        let &(last_index, last_line) = matches.last()?;
        let all = matches
            .iter()
            .map(|(_, l)| l.to_ascii_lowercase())
            .collect::<Vec<_>>()
            .join("\n");
        let kind = if all.contains("has expired or is not yet valid") {
            // Go's x509 error names both; its "current time … is after/before …" tells which.
            if all.contains(" is after ") {
                "expired"
            } else if all.contains(" is before ") {
                "not yet valid"
            } else {
                "expired or not yet valid"
            }
        } else if all.contains("not yet valid") {
            "not yet valid"
        } else if all.contains("expired") || all.contains("expiredcert") {
            "expired"
        } else if all.contains("unknown authority") {
            "signed by an unknown authority"
        } else if all.contains("is valid for") {
            "issued for a different host name"
        } else {
            "failing verification"
        };
        // Prefer an error-level line as the headline quote; keep the last line too.
        let headline = matches
            .iter()
            .find(|(_, l)| {
                let lower = l.to_ascii_lowercase();
                lower.contains("error") || lower.contains("x509")
            })
            .copied()
            .unwrap_or((last_index, last_line));
        let around =
            |line: &str| quote_around(line, last_match_end(&CERTIFICATE, line).unwrap_or(0));
        let mut refs = vec![cite(self.evidence, around(headline.1))];
        if headline.0 != last_index {
            refs.push(cite(self.evidence, around(last_line)));
        }
        let detail = format!(
            "TLS certificate {kind}{}: `{}`",
            self.in_pod(),
            around(headline.1)
        );
        Some(self.finding(
            DetectorKind::CertificateError,
            format!("TLS certificate {kind}"),
            detail,
            last_index,
            refs,
        ))
    }

    fn missing_config(&self) -> Option<Finding> {
        let &(index, line) = self
            .lines
            .iter()
            .rev()
            .find(|(_, l)| MISSING_CONFIG.is_match(l))?;
        let name = UPPER_NAME.find_iter(line).map(|m| m.as_str()).find(|n| {
            !matches!(
                *n,
                "ERROR" | "FATAL" | "WARN" | "WARNING" | "INFO" | "DEBUG" | "PANIC"
            )
        });
        let quote = quote_around(line, last_match_end(&MISSING_CONFIG, line).unwrap_or(0));
        let title = match name {
            Some(name) => format!("Missing configuration: {name}"),
            None => "Missing configuration".to_string(),
        };
        let detail = format!(
            "The application{} reports missing configuration: `{quote}`",
            self.in_pod()
        );
        let refs = vec![cite(self.evidence, quote)];
        Some(self.finding(DetectorKind::ConfigError, title, detail, index, refs))
    }

    fn no_space(&self) -> Option<Finding> {
        let &(index, line) = self
            .lines
            .iter()
            .rev()
            .find(|(_, l)| NO_SPACE.is_match(l))?;
        let quote = quote_around(line, last_match_end(&NO_SPACE, line).unwrap_or(0));
        let detail = format!(
            "The application{} ran out of disk space: `{quote}`",
            self.in_pod()
        );
        let refs = vec![cite(self.evidence, quote)];
        Some(self.finding(
            DetectorKind::DiskPressure,
            "Out of disk space (no space left on device)".to_string(),
            detail,
            index,
            refs,
        ))
    }
}
