//! Images that cannot be pulled: the kubelet's `ErrImagePull` / `ImagePullBackOff` and the
//! registry's answer in its "Failed to pull image" message, read whole to its deciding part
//! (the status code, `manifest unknown`, `pull access denied`), however long the message.
//!
//! | kind | role | verified when |
//! |---|---|---|
//! | [`ImagePull`] | cause | the kubelet reports the pull failure |

use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::finding::in_pod;
use super::text::{
    field_value, is_table, looks_like_injection, matching_line, object_name, quote_deciding,
    quote_line, table_rows_about,
};
use super::{
    Confidence, Fact, Finding, KindSpec, ObjectKind, Payload, Role, Round, Scene, Subject, Symptom,
    cite, same_pod,
};

static IMAGE_PULL: LazyLock<Regex> = regex!(
    r"(?i)\b(ErrImagePull|ImagePullBackOff|ErrImageNeverPull|InvalidImageName)\b|failed to pull (?:and unpack )?image|back-off pulling image"
);
static PULL_MESSAGE: LazyLock<Regex> = regex!(r"(?i)failed to pull (?:and unpack )?image");
static QUOTED_IMAGE: LazyLock<Regex> = regex!(r#"(?i)image\s+\\*"([^"\\\s]+)\\*""#);
/// What decides a pull failure: the registry's status or its words.
static REGISTRY_SAYS: LazyLock<Regex> = regex!(
    r"\b[45]\d\d [A-Z][a-z]+(?: [A-Z][a-z]+)*\b|(?i:manifest unknown|manifest for \S+ not found|: not found|pull access denied|unauthorized|authorization failed|forbidden|denied|no such host|i/o timeout|connection refused|toomanyrequests|rate limit)"
);
static STATUS: LazyLock<Regex> = regex!(r"\b[45]\d\d [A-Z][a-z]+(?: [A-Z][a-z]+)*\b");

/// What the registry's answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PullFailure {
    /// The tag or manifest does not exist.
    NotFound,
    /// Access denied: the repository does not exist or needs credentials.
    Denied,
    /// The registry is unreachable.
    Unreachable,
    /// The registry throttles pulls.
    RateLimited,
    /// Anything else the registry rejected.
    Rejected,
}

impl PullFailure {
    fn of(message: &str) -> Self {
        let lower = message.to_ascii_lowercase();
        if lower.contains("toomanyrequests")
            || lower.contains("rate limit")
            || lower.contains(" 429")
        {
            PullFailure::RateLimited
        } else if lower.contains("manifest unknown")
            || lower.contains("manifest for")
            || lower.contains(": not found")
            || lower.contains(" 404")
        {
            PullFailure::NotFound
        } else if lower.contains("pull access denied")
            || lower.contains("unauthorized")
            || lower.contains("authorization failed")
            || lower.contains(" 401")
            || lower.contains(" 403")
            || lower.contains("forbidden")
            || lower.contains("denied")
        {
            PullFailure::Denied
        } else if lower.contains("no such host")
            || lower.contains("i/o timeout")
            || lower.contains("connection refused")
        {
            PullFailure::Unreachable
        } else if lower.contains("not found") {
            PullFailure::NotFound
        } else {
            PullFailure::Rejected
        }
    }

    fn says(self) -> &'static str {
        match self {
            PullFailure::NotFound => "the tag or manifest does not exist in the registry",
            PullFailure::Denied => {
                "the registry denied access: the repository does not exist or needs credentials"
            }
            PullFailure::Unreachable => "the registry is unreachable",
            PullFailure::RateLimited => "the registry is rate-limiting pulls",
            PullFailure::Rejected => "the registry rejected the pull",
        }
    }
}

/// An image the kubelet cannot pull.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ImagePull {
    pub pod: Option<String>,
    pub image: Option<String>,
    /// What the registry answered, when the kubelet's message says.
    pub failure: Option<PullFailure>,
    /// The registry's HTTP status, when the message carries one (`401 Unauthorized`).
    pub status: Option<String>,
}

impl Payload for ImagePull {
    const SPEC: KindSpec = KindSpec {
        name: "image-pull",
        role: Role::Cause,
        verified_when: "the kubelet reports ErrImagePull / ImagePullBackOff or a failed pull",
        accounts_for: &[
            Symptom::Unavailable,
            Symptom::Restarts,
            Symptom::JobFailed,
            Symptom::Errors,
        ],
    };

    fn example() -> Self {
        Self {
            pod: Some("api-7d9f8c6b5-x2k4q".into()),
            image: Some("registry/payments:2.4.2".into()),
            failure: Some(PullFailure::NotFound),
            status: None,
        }
    }

    fn title(&self) -> String {
        let status = self
            .status
            .as_deref()
            .map(|s| format!(" ({s})"))
            .unwrap_or_default();
        match self.failure {
            Some(PullFailure::NotFound) => {
                format!(
                    "Image pull failing for {}: manifest unknown{status}",
                    self.image_text()
                )
            }
            Some(PullFailure::Denied) => format!(
                "Image pull failing for {}: pull access denied{status}",
                self.image_text()
            ),
            _ => format!("Image pull failing for {}{status}", self.image_text()),
        }
    }

    fn detail(&self) -> String {
        let mut detail = format!(
            "Pulling {}{} fails",
            self.image_text(),
            in_pod(self.pod.as_deref())
        );
        if let Some(failure) = self.failure {
            detail.push_str(&format!(": {}", failure.says()));
        }
        if let Some(status) = &self.status {
            detail.push_str(&format!(" (the registry answered {status})"));
        }
        detail.push('.');
        detail
    }

    fn subject(&self) -> Option<Subject> {
        Subject::named(ObjectKind::Pod, self.pod.as_deref())
    }

    fn merges_with(&self, other: &Self) -> bool {
        self.image == other.image
            || super::same_subject(self.subject().as_ref(), other.subject().as_ref())
    }

    fn merge_from(&mut self, other: &Self) {
        self.image = self.image.take().or_else(|| other.image.clone());
        self.failure = self.failure.or(other.failure);
        self.status = self.status.take().or_else(|| other.status.clone());
    }

    fn step(&self, scene: &Scene) -> String {
        let image = self.image_text();
        match self.failure {
            Some(PullFailure::Denied) => format!(
                "Check that {image}'s repository exists and that the pod's imagePullSecrets \
                 can read it (a Secret of type `kubernetes.io/dockerconfigjson` with current \
                 credentials); fix {} and roll out.",
                scene.workload_of(self.pod.as_deref())
            ),
            Some(PullFailure::Unreachable) => format!(
                "Check that the nodes can reach the registry of {image} (DNS, proxy, \
                 firewall); nothing in {} needs changing if it comes back.",
                scene.workload_of(self.pod.as_deref())
            ),
            _ => format!(
                "Check that the image exists in the registry with that tag and that the pod's \
                 imagePullSecrets can read it; fix the image in {} and roll out.",
                scene.workload_of(self.pod.as_deref())
            ),
        }
    }

    fn explains(&self, effect: &Finding) -> bool {
        match &effect.fact {
            Fact::CrashLoop(c) => same_pod(self.pod.as_deref(), c.pod.as_deref()),
            Fact::WarningEvent(w) => {
                w.reason == "Failed"
                    && same_pod(self.pod.as_deref(), w.object.as_deref())
                    && w.message
                        .as_deref()
                        .is_some_and(|m| m.to_ascii_lowercase().contains("pull"))
            }
            _ => false,
        }
    }
}

impl ImagePull {
    fn image_text(&self) -> String {
        self.image
            .as_deref()
            .map_or("the image".to_string(), |i| format!("`{i}`"))
    }
}

pub(super) fn detect(round: &Round<'_>) -> Vec<Finding> {
    let mut out = Vec::new();
    for (evidence, ctx) in round.structural() {
        let all: Vec<&str> = evidence.excerpt.lines().collect();
        let lines = if is_table(&all) {
            table_rows_about(&all, ctx.default_resource.as_deref())
        } else {
            all
        };
        let usable = |l: &&str| IMAGE_PULL.is_match(l) && !looks_like_injection(l);
        let Some(first) = lines.iter().position(usable) else {
            continue;
        };
        let message_line = matching_line(&lines, &PULL_MESSAGE);
        let reason_line = lines.iter().position(|l| {
            usable(l)
                && !PULL_MESSAGE.is_match(l)
                && (l.contains("ErrImagePull") || l.contains("ImagePullBackOff"))
        });
        let image = message_line
            .or(Some(first))
            .and_then(|i| QUOTED_IMAGE.captures(lines[i]))
            .map(|c| c[1].to_string())
            .or_else(|| {
                lines
                    .iter()
                    .find_map(|l| field_value(l, "image").map(str::to_string))
            });
        let message = message_line.map(|i| lines[i]);
        let pod = object_name(evidence).or_else(|| ctx.default_resource.clone());
        let mut finding = Finding::new(
            ImagePull {
                pod,
                image,
                failure: message.map(PullFailure::of),
                status: message
                    .and_then(|m| STATUS.captures_iter(m).last())
                    .map(|c| c[0].trim().to_string()),
            },
            Confidence::High,
            true,
        );
        if let Some(line) = message {
            // The message can run to several hundred characters; the quote keeps its end,
            // where the registry's answer is.
            finding
                .refs
                .push(cite(evidence, quote_deciding(line, &REGISTRY_SAYS)));
        }
        for i in [reason_line, Some(first)].into_iter().flatten() {
            let quote = quote_line(lines[i]);
            if finding.refs.len() < 2 && !finding.refs.iter().any(|c| c.quote == quote) {
                finding.refs.push(cite(evidence, quote));
            }
        }
        out.push(finding);
    }
    out
}

#[cfg(test)]
mod tests;
