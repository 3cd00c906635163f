//! TLS certificates that fail verification — expired, not yet valid, signed by an unknown
//! authority, issued for another host — in application logs (or quoted in a pod's status).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Certificate`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert |
//!
//! What explains what: a certificate failure explains its pod's exits, crash loop and crash
//! line.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::{LogScan, repeats};
use super::text::quote_deciding;
use super::{
    Finding, KindSpec, ObjectKind, POD_FAILURES, Payload, Role, Round, Scene, Subject, cite,
};

static CERTIFICATE: LazyLock<Regex> = regex!(
    r"(?i)certificate has expired|certificate (?:is )?expired|expiredcert|certificate is not yet valid|certificate signed by unknown authority|unknown authority|certificate verify failed|CERTIFICATE_VERIFY_FAILED|SSL certificate problem|tls: failed to verify certificate|certificate is valid for \S+,? not\b|x509:"
);

/// What is wrong with the certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CertificateProblem {
    Expired,
    NotYetValid,
    ExpiredOrNotYetValid,
    UnknownAuthority,
    WrongHost,
    FailsVerification,
}

impl CertificateProblem {
    fn words(self) -> &'static str {
        match self {
            CertificateProblem::Expired => "expired",
            CertificateProblem::NotYetValid => "not yet valid",
            CertificateProblem::ExpiredOrNotYetValid => "expired or not yet valid",
            CertificateProblem::UnknownAuthority => "signed by an unknown authority",
            CertificateProblem::WrongHost => "issued for a different host name",
            CertificateProblem::FailsVerification => "failing verification",
        }
    }

    /// From every certificate line of a log: Go's x509 error names both expiry cases; its
    /// "current time … is after/before …" tells which.
    fn of(lines: &str) -> Self {
        if lines.contains("has expired or is not yet valid") {
            if lines.contains(" is after ") {
                CertificateProblem::Expired
            } else if lines.contains(" is before ") {
                CertificateProblem::NotYetValid
            } else {
                CertificateProblem::ExpiredOrNotYetValid
            }
        } else if lines.contains("not yet valid") {
            CertificateProblem::NotYetValid
        } else if lines.contains("expired") || lines.contains("expiredcert") {
            CertificateProblem::Expired
        } else if lines.contains("unknown authority") {
            CertificateProblem::UnknownAuthority
        } else if lines.contains("is valid for") {
            CertificateProblem::WrongHost
        } else {
            CertificateProblem::FailsVerification
        }
    }
}

/// A TLS certificate failing verification.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Certificate {
    pub pod: Option<String>,
    pub problem: CertificateProblem,
    /// The error line, verbatim.
    pub says: String,
}

impl Payload for Certificate {
    const SPEC: KindSpec = KindSpec {
        name: "certificate",
        role: Role::Cause,
        verified_when: "a container crashed and the error ends its log, or it repeats at error \
                        level under a service-level alert",
        accounts_for: POD_FAILURES,
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            problem: CertificateProblem::Expired,
            says: "x509: certificate has expired or is not yet valid".into(),
        }
    }

    fn title(&self) -> String {
        format!("TLS certificate {}", self.problem.words())
    }

    fn detail(&self) -> String {
        format!(
            "TLS certificate {}{}: `{}`",
            self.problem.words(),
            in_pod(self.pod.as_deref()),
            self.says
        )
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn step(&self, _scene: &Scene) -> String {
        match self.problem {
            CertificateProblem::UnknownAuthority => "Give the client the CA bundle that signed \
                 the server's certificate (or reissue the certificate from the CA it trusts), \
                 then restart what loaded it."
                .to_string(),
            CertificateProblem::WrongHost => "Reissue the certificate with the host name clients \
                 use (its SANs), or point the client at a name the certificate covers."
                .to_string(),
            _ => "Renew the certificate the log names and restart what loaded it; check when it \
                  was last rotated (cert-manager `Certificate` status)."
                .to_string(),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        pod_failure_explains(self.pod.as_deref(), effect)
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let class_repeats = repeats(round.evidence, |l| CERTIFICATE.is_match(l));
    LogScan::all(round, true)
        .iter()
        .filter_map(|scan| certificate(scan, class_repeats))
        .collect()
}

fn certificate(scan: &LogScan<'_>, class_repeats: usize) -> Option<Finding> {
    let matches: Vec<(usize, &str)> = scan
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
    // Prefer an error-level line as the headline quote; keep the last line too.
    let headline = matches
        .iter()
        .find(|(_, l)| {
            let lower = l.to_ascii_lowercase();
            lower.contains("error") || lower.contains("x509")
        })
        .copied()
        .unwrap_or((last_index, last_line));
    let says = quote_deciding(headline.1, &CERTIFICATE);
    let mut refs = vec![cite(scan.evidence, says.clone())];
    if headline.0 != last_index {
        refs.push(cite(scan.evidence, quote_deciding(last_line, &CERTIFICATE)));
    }
    let (verified, confidence) = scan.class_strength(last_index, class_repeats);
    Some(
        Finding::new(
            Certificate {
                pod: scan.pod.clone(),
                problem: CertificateProblem::of(&all),
                says,
            },
            confidence,
            verified,
        )
        .citing(refs),
    )
}

#[cfg(test)]
mod tests;
