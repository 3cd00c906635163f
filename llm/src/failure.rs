//! Sorting a failed request into an [`LlmError`] and deciding whether it may be retried.
//!
//! Retried: HTTP 429 (except OpenAI's permanent `insufficient_quota`), HTTP 5xx, and errors
//! connecting. Never retried: other 4xx, timeouts, a connection broken after sending (the request
//! may have been served), and anything that could not be decoded.

use crate::LlmError;
use crate::transport::{HttpStatus, shorten};
use async_openai::error::OpenAIError;
use std::time::Duration;

/// Characters of any outside message kept in an error.
const DETAIL_CHARS: usize = 300;

/// A classified failure.
pub(crate) struct Failure {
    /// What to report if this is the last attempt.
    pub(crate) error: LlmError,
    /// Whether another attempt may help.
    pub(crate) retryable: bool,
    /// The server's own wait hint.
    pub(crate) retry_after: Option<Duration>,
}

impl Failure {
    fn final_(error: LlmError) -> Self {
        Self {
            error,
            retryable: false,
            retry_after: None,
        }
    }
}

/// Classifies `error` from attempt number `attempt`; `secret` is removed from every message.
pub(crate) fn classify(
    error: OpenAIError,
    attempt: u32,
    timeout: Duration,
    secret: Option<&str>,
) -> Failure {
    let clean = |text: &str| shorten(&redact(text, secret), DETAIL_CHARS);
    match error {
        OpenAIError::Boxed(boxed) => match boxed.downcast_ref::<HttpStatus>() {
            Some(http) => from_status(http.status, &clean(&http.body), http.retry_after, attempt),
            None => Failure::final_(LlmError::Transport(clean(&boxed.to_string()))),
        },
        OpenAIError::ApiError(api) => from_status(
            api.status_code.as_u16(),
            &clean(&api.api_error.to_string()),
            None,
            attempt,
        ),
        OpenAIError::Reqwest(error) => {
            let error = error.without_url();
            if error.is_timeout() {
                Failure::final_(LlmError::Timeout { after: timeout })
            } else if error.is_connect() {
                Failure {
                    error: LlmError::Connect {
                        attempts: attempt,
                        detail: clean(&chain(&error)),
                    },
                    retryable: true,
                    retry_after: None,
                }
            } else {
                Failure::final_(LlmError::Transport(clean(&chain(&error))))
            }
        }
        OpenAIError::JSONDeserialize(error, _body) => Failure::final_(LlmError::Unparsable(clean(
            &format!("the response body is not JSON: {error}"),
        ))),
        OpenAIError::InvalidArgument(message) => Failure::final_(LlmError::Config(clean(&message))),
        other => Failure::final_(LlmError::Transport(clean(&other.to_string()))),
    }
}

fn from_status(status: u16, detail: &str, retry_after: Option<Duration>, attempt: u32) -> Failure {
    let detail = detail.to_string();
    match status {
        429 => Failure {
            // OpenAI's "out of credit" is a 429 too, and waiting does not fix it.
            retryable: !detail.contains("insufficient_quota"),
            error: LlmError::RateLimited {
                attempts: attempt,
                detail,
            },
            retry_after,
        },
        500..=599 => Failure {
            error: LlmError::Server {
                status,
                attempts: attempt,
                detail,
            },
            retryable: true,
            retry_after,
        },
        _ => Failure::final_(LlmError::Http { status, detail }),
    }
}

/// The error and its sources on one line ("error sending request: connection refused"), each
/// said once; also how the MCP tool layer names a failed connection.
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    // Bounded: error chains are short, but a cycle must not spin.
    for _ in 0..8 {
        let Some(cause) = source else { break };
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// `text` with every occurrence of the secret replaced by `***`.
pub(crate) fn redact(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(secret) if !secret.is_empty() => text.replace(secret, "***"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::{from_status, redact};

    #[test]
    fn only_429_and_5xx_statuses_are_retried() {
        assert!(from_status(429, "slow down", None, 1).retryable);
        assert!(from_status(500, "", None, 1).retryable);
        assert!(from_status(503, "", None, 1).retryable);
        for status in [400, 401, 403, 404, 413, 422] {
            let failure = from_status(status, "", None, 1);
            assert!(!failure.retryable, "{status}");
            assert_eq!(failure.error.reason(), "http_error");
        }
        let quota = from_status(429, "insufficient_quota: You exceeded your quota", None, 1);
        assert!(!quota.retryable);
        assert_eq!(quota.error.reason(), "http_429");
    }

    #[test]
    fn the_secret_is_replaced_everywhere() {
        assert_eq!(redact("a sk-1 b sk-1", Some("sk-1")), "a *** b ***");
        assert_eq!(redact("nothing", None), "nothing");
        assert_eq!(redact("empty", Some("")), "empty");
    }
}
