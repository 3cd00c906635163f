//! Reading application logs as evidence: which lines count, and how much a line proves.
//!
//! Application text is untrusted and can say anything, so a log line never verifies a cause on
//! its own: a finding is verified only when the control plane shows a failure happened
//! ([`super::Round::failure_observed`]: a crash loop, an abnormal exit, a failed job) *and* the
//! line sits at the end of the log, where the process wrote its last words before dying. A
//! failure line in the middle of a healthy log is a low-confidence observation, and text that
//! tries to instruct the reader is skipped entirely.
//!
//! A service that answers with errors or slowly does not crash, so for service-level alerts
//! (error rate, latency, timeouts) a second, weaker proof applies: a failure of a known class
//! (a dependency refusing connections, DNS, certificates, exhausted connections) that the
//! round's logs show at least [`MIN_REPEATS`] times, not logged below error level, is verified
//! at medium confidence. One line is an anecdote; the same failure again and again while the
//! service's own metric says it is failing is what an on-call engineer acts on. A dependency's
//! refusal in its own words counts at any level the client logs it: a client that retries a
//! 429 logs a warning, and the dependency still refused.
//!
//! A process that does not finish (a Job that does not complete, a pod that never becomes
//! ready) and whose log ends in the same wait again and again ([`LogScan::ends_stuck_on`]) is
//! stuck on it: the dependency's refusal it keeps logging is verified at medium confidence.

use regex::Regex;

use super::text::{
    below_error_level, is_application_log, is_structural, is_tool_error_line, log_lines,
    looks_like_injection, object_name,
};
use super::{Confidence, Round};
use crate::evidence::{Capability, Evidence};

/// Lines from the end of a log that count as "the last words" of a crashed process.
const TAIL_LINES: usize = 10;
/// Lines of one failure class, across the round's logs, that corroborate a service-level alert.
pub const MIN_REPEATS: usize = 2;
/// Lines at the end of a live process's log that, all of one failure, show it stuck on it.
const STUCK_LINES: usize = 3;

/// How many lines of the round's application logs show a failure of one class (`matches`),
/// not counting lines logged below error level.
pub fn repeats(evidence: &[Evidence], matches: impl Fn(&str) -> bool) -> usize {
    repeats_where(evidence, |line| !below_error_level(line) && matches(line))
}

/// [`repeats`] for a dependency's own answer (a refusal in the server's words), at whatever
/// level the client logs it: the client's level says how it copes (a retry, a requeue), not
/// whether the dependency refused the work.
pub fn answer_repeats(evidence: &[Evidence], matches: impl Fn(&str) -> bool) -> usize {
    repeats_where(evidence, matches)
}

/// A line the log store returns is often one a container log the round read holds too (the
/// store ships the same lines): counted once, from the container's log.
fn repeats_where(evidence: &[Evidence], matches: impl Fn(&str) -> bool) -> usize {
    let counts = |line: &&str| {
        !line.trim().is_empty()
            && !is_tool_error_line(line)
            && !looks_like_injection(line)
            && matches(line)
    };
    let container_lines: Vec<&str> = evidence
        .iter()
        .filter(|e| is_application_log(e) && e.capability != Capability::LogQuery)
        .flat_map(log_lines)
        .filter(counts)
        .collect();
    let stored = evidence
        .iter()
        .filter(|e| e.capability == Capability::LogQuery)
        .flat_map(log_lines)
        .filter(counts)
        .filter(|line| {
            let unescaped = line.replace("\\\"", "\"");
            !container_lines.iter().any(|l| *l == unescaped)
        })
        .count();
    container_lines.len() + stored
}

/// One log (or, for certificate errors, any evidence item) being read.
pub struct LogScan<'a> {
    pub evidence: &'a Evidence,
    /// (line index, line), without blank lines, tool errors and injection text.
    pub lines: Vec<(usize, &'a str)>,
    tail_start: usize,
    /// The pod the log is of, when the evidence says (or the alert's).
    pub pod: Option<String>,
    failure_observed: bool,
    /// Structural evidence (a pod description quoting an error) is the control plane's own
    /// account: what it shows is verified.
    structural: bool,
    service_level: bool,
}

impl<'a> LogScan<'a> {
    pub fn new(evidence: &'a Evidence, round: &Round<'_>) -> Self {
        Self::with_default_pod(evidence, round, round.ctx.default_resource.as_ref())
    }

    /// A scan whose pod, when the evidence names none, is `default_pod`.
    fn with_default_pod(
        evidence: &'a Evidence,
        round: &Round<'_>,
        default_pod: Option<&String>,
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
            pod: object_name(evidence).or_else(|| default_pod.cloned()),
            failure_observed: round.failure_observed(),
            structural: is_structural(evidence),
            service_level: round.ctx.service_level,
        }
    }

    /// The logs of a round to scan: application logs, and structural evidence too when
    /// `with_structural` (certificate errors quoted in a pod description), split per object as
    /// [`Round::structural`] splits it so a neighbour's event is the neighbour's.
    pub fn all(round: &'a Round<'_>, with_structural: bool) -> Vec<LogScan<'a>> {
        let logs = round
            .evidence
            .iter()
            .filter(|e| is_application_log(e))
            .map(|e| LogScan::new(e, round));
        let views = round
            .structural()
            .iter()
            .filter(|_| with_structural)
            .map(|(e, ctx)| LogScan::with_default_pod(e, round, ctx.default_resource.as_ref()));
        logs.chain(views).collect()
    }

    /// The last line matching `re`.
    pub fn last(&self, re: &Regex) -> Option<(usize, &'a str)> {
        self.lines
            .iter()
            .rev()
            .find(|(_, l)| re.is_match(l))
            .copied()
    }

    /// Verified and confidence for a finding whose latest supporting line is `index`. A line
    /// the application logged below error level (`WARN … continuing without cache`) is, by its
    /// own account, not what killed it: at most a medium-confidence suspicion.
    pub fn strength(&self, index: usize) -> (bool, Confidence) {
        if self.structural {
            return (true, Confidence::High);
        }
        let in_tail = index >= self.tail_start;
        match (self.failure_observed, in_tail && !self.downplayed(index)) {
            (true, true) => (true, Confidence::High),
            (true, false) => (false, Confidence::Medium),
            (false, _) => (false, Confidence::Low),
        }
    }

    /// [`Self::strength`], raised to verified at medium confidence when the line's failure
    /// class repeats ([`MIN_REPEATS`]) in the round's logs under a service-level alert.
    pub fn class_strength(&self, index: usize, class_repeats: usize) -> (bool, Confidence) {
        if self.downplayed(index) {
            return self.strength(index);
        }
        self.answer_strength(index, class_repeats)
    }

    /// [`Self::class_strength`] for a dependency's own answer ([`answer_repeats`]), which the
    /// client's log level does not downplay.
    pub fn answer_strength(&self, index: usize, answer_repeats: usize) -> (bool, Confidence) {
        let own = self.strength(index);
        if !own.0 && self.service_level && !self.structural && answer_repeats >= MIN_REPEATS {
            (true, Confidence::Medium)
        } else {
            own
        }
    }

    /// Whether the log ends in [`STUCK_LINES`] lines or more that all `match`: a process that
    /// has not finished (a Job not completing, a pod not ready) and keeps logging one failure
    /// is stuck on it — its last words, repeated, without dying.
    pub fn ends_stuck_on(&self, matches: impl Fn(&str) -> bool) -> bool {
        self.lines.len() >= STUCK_LINES
            && self
                .lines
                .iter()
                .rev()
                .take(STUCK_LINES)
                .all(|(_, line)| matches(line))
    }

    /// Whether log line `index` (an index into [`log_lines`], like the scan's own, which for a
    /// log store's JSON answer are not the excerpt's lines) was logged below error level.
    fn downplayed(&self, index: usize) -> bool {
        self.lines
            .iter()
            .find(|(i, _)| *i == index)
            .is_some_and(|(_, line)| below_error_level(line))
    }
}
