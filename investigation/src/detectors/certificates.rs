//! TLS certificates that fail verification — expired, not yet valid, signed by an unknown
//! authority, issued for another host — in application logs (or quoted in a pod's status).
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`Certificate`] | cause | as any log line (`logscan.rs`): a crash it ends, or repeated under a service-level alert |
//! | [`CertificateIssued`] | context | never a cause: a certificate issued anew says what changed, not that it is wrong |
//!
//! What explains what: a certificate failure explains its pod's exits, crash loop and crash
//! line. It leads to the certificates cert-manager issued anew in the namespace
//! ([`Lead::CertificatesIssued`]): a certificate that fails verification after working was
//! usually just replaced, by one its clients do not trust or for another name.

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::containers::pod_failure_explains;
use super::finding::in_pod;
use super::logscan::{LogScan, repeats};
use super::text::{
    event_blocks, event_field, event_time, looks_like_injection, quote_deciding, quote_line,
};
use super::{
    Confidence, Finding, KindSpec, Lead, ObjectKind, POD_FAILURES, Payload, Role, Round, Scene,
    Subject, cite,
};
use crate::evidence::Capability;

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

    /// Which certificates were issued anew around it.
    fn leads(&self) -> Vec<Lead> {
        vec![Lead::CertificatesIssued]
    }
}

/// How long before the alert a certificate issued anew is still news.
const ISSUED_WITHIN: chrono::Duration = chrono::Duration::hours(6);

/// A certificate cert-manager issued anew (renewed, or re-issued after a change).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CertificateIssued {
    /// The `Certificate` object.
    pub name: String,
    /// cert-manager's words.
    pub says: String,
}

impl Payload for CertificateIssued {
    const SPEC: KindSpec = KindSpec {
        name: "certificate-issued",
        role: Role::Context,
        verified_when: "never a cause: a certificate issued anew says what changed, not that it \
                        is wrong",
        accounts_for: &[],
    };

    fn example() -> Self {
        Self {
            name: "otel-gateway-tls".into(),
            says: "The certificate has been successfully issued".into(),
        }
    }

    fn title(&self) -> String {
        format!(
            "Certificate `{}` was issued anew (cert-manager: `{}`)",
            self.name, self.says
        )
    }

    fn detail(&self) -> String {
        format!(
            "cert-manager issued a new certificate for `{}`: clients that fail to verify the \
             server since then meet the new one — signed by a CA they do not trust yet, or for \
             other names.",
            self.name
        )
    }

    fn subject(&self) -> Option<Subject> {
        Some(Subject::new(ObjectKind::Certificate, self.name.clone()))
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.name == other.name
    }

    fn step(&self, scene: &Scene) -> String {
        format!(
            "Compare certificate `{0}`'s issuer with the CA bundle its clients trust: `kubectl -n \
             {1} get secret {0} -o jsonpath='{{.data.ca\\.crt}}'` against the clients' bundle.",
            self.name, scene.namespace
        )
    }
}

/// Certificates issued anew in the window, from cert-manager's `Issuing` events.
fn issued(round: &Round<'_>) -> Vec<Finding> {
    let mut out: Vec<Finding> = Vec::new();
    for evidence in round.of(Capability::Events) {
        let lines: Vec<&str> = evidence.excerpt.lines().collect();
        for block in event_blocks(&lines) {
            let field = |key: &str| event_field(&block, key);
            let (Some((kind, _)), Some((name, _)), Some((message, line))) =
                (field("kind"), field("name"), field("message"))
            else {
                continue;
            };
            if kind != "Certificate"
                || !message.contains("successfully issued")
                || looks_like_injection(message)
            {
                continue;
            }
            let at = lines
                .iter()
                .position(|l| std::ptr::eq(*l, line))
                .and_then(|i| event_time(&lines, i, evidence.fetched_at));
            let recent = match (at, round.ctx.alert_start) {
                (Some(at), Some(alert)) => at <= alert && alert - at <= ISSUED_WITHIN,
                _ => true,
            };
            if !recent || out.iter().any(|f| f.resource().as_deref() == Some(name)) {
                continue;
            }
            out.push(
                Finding::new(
                    CertificateIssued {
                        name: name.to_string(),
                        says: message.to_string(),
                    },
                    Confidence::High,
                    true,
                )
                .dated(at)
                .citing(vec![cite(evidence, quote_line(line))]),
            );
        }
    }
    out
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let class_repeats = repeats(round.evidence, |l| CERTIFICATE.is_match(l));
    let failing: Vec<Finding> = LogScan::all(round, true)
        .iter()
        .filter_map(|scan| certificate(scan, class_repeats))
        .collect();
    let issued = if failing.is_empty() {
        Vec::new()
    } else {
        issued(round)
    };
    failing.into_iter().chain(issued).collect()
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
