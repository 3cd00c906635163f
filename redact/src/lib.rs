//! firstline-redact: secrets out of untrusted text before it is stored, published, signalled,
//! shown in Slack or sent to a model (ARCHITECTURE.md, invariants 7 and 12). The bot applies it to
//! every Slack message at ingest ([`redact_json`] for the payload kept as `raw`); the
//! investigation to every tool answer.
//!
//! Rules are ordered: whole-block secrets (PEM keys) first, then token shapes that are secret
//! wherever they appear (JWTs, Slack/GitHub tokens, AWS key ids), then secrets recognised by the
//! key they follow (`password=`, `api_key:`). Each replacement is the literal [`REDACTED`], so
//! later rules see it and leave it alone, and the count is exact.
//!
//! It errs towards keeping evidence readable: words such as `token` and `secret` only redact a
//! value that looks machine-generated, because Kubernetes output is full of
//! `TokenExpirationSeconds: 3607` and `secret "db" not found`, which are evidence, not secrets.

use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Redacted text and how many secrets were removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub redactions: usize,
}

static PEM_PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)")
        .expect("static regex")
});

/// `Authorization: Bearer x`, `Authorization: Basic x`, `"authorization": "token x"`.
static AUTHORIZATION_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(authorization"?[ \t]*[:=][ \t]*"?(?:bearer|basic|token|apikey)[ \t]+)([A-Za-z0-9._~+/=-]+)"#)
        .expect("static regex")
});

/// A bearer token outside an Authorization header (curl command lines, log lines).
static BEARER_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer[ \t]+)([A-Za-z0-9._~+/-]{12,}=*)").expect("static regex")
});

/// `scheme://user:password@host`: keep the user (useful evidence), drop the password.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/\s@]+:)([^@\s/]+)(@)").expect("static regex")
});

/// Three base64url segments, the first one a JSON header (`{"` encodes to `eyJ`).
static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}")
        .expect("static regex")
});

static SLACK_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}").expect("static regex")
});

static GITHUB_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})")
        .expect("static regex")
});

static AWS_ACCESS_KEY_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b").expect("static regex"));

/// `key = value`, `key: value`, `"key": "value"` where the key *ends* in a secret-ish word.
/// Group 1 is the whole key and separator, group 2 the key's secret-ish word, group 3 the value.
static SECRET_KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(\b[A-Za-z0-9_.-]*?(password|passwd|pwd|passphrase|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret|private[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token|token|secret)"?[ \t]*[:=][ \t]*"?)([^\s"',;&}]+)"#,
    )
    .expect("static regex")
});

/// Redacts every secret the rules recognise. Pure and deterministic.
pub fn redact(text: &str) -> Redacted {
    let mut count = 0usize;
    let mut current = text.to_string();

    current = replace_counting(&PEM_PRIVATE_KEY, &current, &mut count, |_| {
        format!("{REDACTED} PRIVATE KEY")
    });
    current = replace_counting(&AUTHORIZATION_HEADER, &current, &mut count, |caps| {
        format!("{}{REDACTED}", &caps[1])
    });
    current = replace_counting(&BEARER_TOKEN, &current, &mut count, |caps| {
        format!("{}{REDACTED}", &caps[1])
    });
    let mut url_count = 0usize;
    current = URL_PASSWORD
        .replace_all(&current, |caps: &Captures<'_>| {
            if &caps[2] == REDACTED {
                return caps[0].to_string();
            }
            url_count += 1;
            format!("{}{REDACTED}{}", &caps[1], &caps[3])
        })
        .into_owned();
    count += url_count;
    for whole_token in [&*JWT, &*SLACK_TOKEN, &*GITHUB_TOKEN, &*AWS_ACCESS_KEY_ID] {
        current = replace_counting(whole_token, &current, &mut count, |_| REDACTED.to_string());
    }

    // Key-value secrets need a per-match decision, so they count themselves.
    let mut key_value_count = 0usize;
    current = SECRET_KEY_VALUE
        .replace_all(&current, |caps: &Captures<'_>| {
            let key_word = caps[2].to_ascii_lowercase();
            let value = &caps[3];
            if should_redact_value(&key_word, value) {
                key_value_count += 1;
                format!("{}{REDACTED}", &caps[1])
            } else {
                caps[0].to_string()
            }
        })
        .into_owned();
    count += key_value_count;

    Redacted {
        text: current,
        redactions: count,
    }
}

fn replace_counting(
    pattern: &Regex,
    text: &str,
    count: &mut usize,
    mut replacement: impl FnMut(&Captures<'_>) -> String,
) -> String {
    pattern
        .replace_all(text, |caps: &Captures<'_>| {
            *count += 1;
            replacement(caps)
        })
        .into_owned()
}

/// Whether the value after a secret-ish key is a secret.
///
/// Password-like keys redact any real value (passwords can be short and wordy). The bare words
/// `token` and `secret` only redact values that look machine-generated, so log prose such as
/// `refresh token: expired` stays readable.
fn should_redact_value(key_word: &str, value: &str) -> bool {
    if is_placeholder(value) {
        return false;
    }
    match key_word {
        "token" | "secret" => looks_machine_generated(value),
        _ => true,
    }
}

fn is_placeholder(value: &str) -> bool {
    let lower = value.to_ascii_lowercase();
    value.is_empty()
        || value.contains(REDACTED)
        || value.chars().all(|c| c == '*' || c == 'x' || c == 'X')
        || matches!(
            lower.as_str(),
            "true" | "false" | "null" | "nil" | "none" | "<none>" | "<nil>" | "<unset>" | "[redacted]"
        )
        || value.starts_with('$') // `${DB_PASSWORD}` references a secret, it is not one.
        || value.starts_with('<') && value.ends_with('>')
}

/// Long and mixed (letters and digits), or long with high character entropy.
fn looks_machine_generated(value: &str) -> bool {
    let len = value.chars().count();
    let has_digit = value.chars().any(|c| c.is_ascii_digit());
    let has_alpha = value.chars().any(|c| c.is_ascii_alphabetic());
    (len >= 12 && has_digit && has_alpha) || (len >= 20 && shannon_entropy(value) >= 3.5)
}

/// Bits per character of the value's character distribution.
fn shannon_entropy(value: &str) -> f64 {
    let mut counts = std::collections::HashMap::new();
    let mut total = 0f64;
    for c in value.chars() {
        *counts.entry(c).or_insert(0f64) += 1.0;
        total += 1.0;
    }
    if total == 0.0 {
        return 0.0;
    }
    counts
        .values()
        .map(|n| {
            let p = n / total;
            -p * p.log2()
        })
        .sum()
}

/// `value` with every string in it redacted (object keys are kept: they are field names), and
/// how many secrets were removed.
pub fn redact_json(value: &serde_json::Value) -> (serde_json::Value, usize) {
    use serde_json::Value;
    match value {
        Value::String(text) => {
            let redacted = redact(text);
            (Value::String(redacted.text), redacted.redactions)
        }
        Value::Array(items) => {
            let mut total = 0;
            let items = items
                .iter()
                .map(|item| {
                    let (item, n) = redact_json(item);
                    total += n;
                    item
                })
                .collect();
            (Value::Array(items), total)
        }
        Value::Object(fields) => {
            let mut total = 0;
            let fields = fields
                .iter()
                .map(|(key, item)| {
                    let (item, n) = redact_json(item);
                    total += n;
                    (key.clone(), item)
                })
                .collect();
            (Value::Object(fields), total)
        }
        other => (other.clone(), 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (input, expected output, expected redaction count)
    const REDACTION_TABLE: &[(&str, &str, usize)] = &[
        (
            "Authorization: Bearer abc.def-ghi_jkl",
            "Authorization: Bearer [REDACTED]",
            1,
        ),
        (
            r#"curl -H "authorization: basic dXNlcjpwYXNzd29yZA==" http://api"#,
            r#"curl -H "authorization: basic [REDACTED]" http://api"#,
            1,
        ),
        (
            "retrying with bearer 9f8e7d6c5b4a39281706 after 401",
            "retrying with bearer [REDACTED] after 401",
            1,
        ),
        ("api_key=abcd1234efgh", "api_key=[REDACTED]", 1),
        ("apikey: hunter2hunter2", "apikey: [REDACTED]", 1),
        ("x-api-key: 0123456789abcdef", "x-api-key: [REDACTED]", 1),
        (
            r#"{"api_key": "sk-live-00000000000000000000"}"#,
            r#"{"api_key": "[REDACTED]"}"#,
            1,
        ),
        (
            "using key AKIAIOSFODNN7EXAMPLE for s3",
            "using key [REDACTED] for s3",
            1,
        ),
        (
            "aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "aws_secret_access_key=[REDACTED]",
            1,
        ),
        (
            "dial postgres://app:s3cr3t@db.prod:5432/orders failed",
            "dial postgres://app:[REDACTED]@db.prod:5432/orders failed",
            1,
        ),
        (
            "redis://default:pa55word@cache:6379",
            "redis://default:[REDACTED]@cache:6379",
            1,
        ),
        ("password=hunter2", "password=[REDACTED]", 1),
        ("DB_PASSWORD: correcthorse", "DB_PASSWORD: [REDACTED]", 1),
        ("passwd = letmein", "passwd = [REDACTED]", 1),
        ("secret=Zx81kQp02LmNa7vT", "secret=[REDACTED]", 1),
        ("token=4f9a8b7c6d5e4f3a2b1c", "token=[REDACTED]", 1),
        ("client_secret: abc", "client_secret: [REDACTED]", 1),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\nabcdef==\n-----END RSA PRIVATE KEY-----\nnext line",
            "[REDACTED] PRIVATE KEY\nnext line",
            1,
        ),
        (
            "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkq (truncated by the tool)",
            "[REDACTED] PRIVATE KEY",
            1,
        ),
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U end",
            "jwt [REDACTED] end",
            1,
        ),
        (
            "token=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            "token=[REDACTED]",
            1,
        ),
        (
            "SLACK_BOT_TOKEN xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
            "SLACK_BOT_TOKEN [REDACTED]",
            1,
        ),
        (
            "xoxp-1111111111-2222222222 and xapp-1-A0123-456789-abcdef",
            "[REDACTED] and [REDACTED]",
            2,
        ),
        (
            "xoxa-2-abcdefghijkl xoxs-abcdefghijkl",
            "[REDACTED] [REDACTED]",
            2,
        ),
        (
            "git clone https://ghp_abcdefghijklmnopqrstuvwxyz0123456789@github.com/o/r",
            "git clone https://[REDACTED]@github.com/o/r",
            1,
        ),
        (
            "GITHUB_TOKEN=github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "GITHUB_TOKEN=[REDACTED]",
            1,
        ),
        (
            "auth_token: Q2hhbmdlTWVQbGVhc2UK",
            "auth_token: [REDACTED]",
            1,
        ),
    ];

    /// Ordinary evidence that must pass through untouched.
    const KEEP_TABLE: &[&str] = &[
        "2025-05-29 10:15:28,411 - ERROR - SSL certificate expired",
        "2024-11-18T08:21:31.842217+00:00 pod started",
        "Name:             analytics-exporter-fast-76897854c-cw5wh",
        "Image ID:         docker.io/library/busybox@sha256:141c253bc4c3fd0a201d32dc1f493bcf3fff003b6df416dea4f41046e0f37d47",
        "Container ID:  containerd://0ca62d24c10ebbe7b13c9ca1a2c9a0b00fba4bfff06ec37042e6245e203c1f66",
        "robusta_issue_id: 916704eb-fc7f-4d6f-825f-5ad94f5a116e",
        "    TokenExpirationSeconds:  3607",
        "Warning  Failed  kubelet  Error: secret \"db-credentials\" not found",
        "    SecretName:  db-credentials",
        "failed to refresh token: expired",
        "secret: db-credentials",
        "DEBUG - http://localhost:5000 \"GET / HTTP/10\" 200 1435",
        "dial tcp 10.0.0.12:5432: connect: connection refused",
        "WWW-Authenticate: Bearer realm=\"api\"",
        "password: ${DB_PASSWORD}",
        "password=<none>",
        "All host(s) tried for db query failed (tried: prod-db:3333)",
        "exec: \"wge\": executable file not found in $PATH: unknown",
        "mail ops@example.com about http://status.example.com",
    ];

    #[test]
    fn redacts_every_secret_shape_in_the_table() {
        for (input, expected, count) in REDACTION_TABLE {
            let out = redact(input);
            assert_eq!(&out.text, expected, "input: {input}");
            assert_eq!(out.redactions, *count, "count for input: {input}");
        }
    }

    #[test]
    fn leaves_ordinary_evidence_alone() {
        for input in KEEP_TABLE {
            let out = redact(input);
            assert_eq!(&out.text, input);
            assert_eq!(out.redactions, 0, "input: {input}");
        }
    }

    #[test]
    fn counts_several_secrets_in_one_text() {
        let text = "password=a1 and token=4f9a8b7c6d5e4f3a2b1c and AKIAIOSFODNN7EXAMPLE";
        let out = redact(text);
        assert_eq!(out.redactions, 3);
        assert_eq!(
            out.text,
            "password=[REDACTED] and token=[REDACTED] and [REDACTED]"
        );
    }

    #[test]
    fn redaction_is_idempotent() {
        for (input, _, _) in REDACTION_TABLE {
            let once = redact(input);
            let twice = redact(&once.text);
            assert_eq!(twice.text, once.text, "input: {input}");
            assert_eq!(twice.redactions, 0, "input: {input}");
        }
    }

    #[test]
    fn keeps_surrounding_multibyte_text_intact() {
        let out = redact("café password=ünïcødé → ok");
        assert_eq!(out.text, "café password=[REDACTED] → ok");
    }

    #[test]
    fn every_string_of_a_payload_is_redacted_and_its_keys_are_kept() {
        let payload = serde_json::json!({
            "event": {
                "text": "db is postgres://app:s3cr3t@db:5432/x",
                "blocks": [{"elements": [{"text": "password=hunter2"}]}],
                "password": 42,
            }
        });
        let (redacted, count) = redact_json(&payload);
        assert_eq!(count, 2);
        assert_eq!(
            redacted["event"]["text"],
            "db is postgres://app:[REDACTED]@db:5432/x"
        );
        assert_eq!(
            redacted["event"]["blocks"][0]["elements"][0]["text"],
            "password=[REDACTED]"
        );
        assert_eq!(
            redacted["event"]["password"], 42,
            "keys and numbers are kept"
        );
    }
}
