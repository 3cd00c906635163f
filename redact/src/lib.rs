//! firstline-redact: secrets out of untrusted text before it is stored, published, signalled,
//! shown in Slack or sent to a model (ARCHITECTURE.md, invariants 7 and 12). The bot applies it to
//! every Slack message at ingest ([`redact_json`] for the payload kept as `raw`); the
//! investigation to every tool answer; `firstline redact` to stdin, for operators.
//!
//! Rules run in order, one module per way of recognising a secret: whole PEM private keys and
//! `Authorization` headers first; credentials in URLs and connection strings
//! ([`connection`]); provider token shapes, with or without a key name ([`providers`]); values
//! named by a secret-ish key or a sentence ([`keyed`]); and last, long random-looking tokens
//! ([`entropy`]), except the identifiers an investigation needs, which stay readable
//! ([`readable`]: commits, trace and span ids, UUIDs, pod-template hashes, image digests). Each
//! replacement is the literal [`REDACTED`], so later rules see it and leave it alone, and the
//! count per [`Kind`] is exact.
//!
//! It errs towards keeping evidence readable: words such as `token` and `secret` only redact a
//! value that looks machine-generated, because Kubernetes output is full of
//! `TokenExpirationSeconds: 3607` and `secret "db" not found`, which are evidence, not secrets.

mod connection;
mod entropy;
mod keyed;
mod kind;
mod providers;
mod readable;
mod tally;
mod value;

use std::collections::BTreeMap;

pub use kind::Kind;
use tally::Tally;

/// What a redacted value is replaced with.
pub const REDACTED: &str = "[REDACTED]";

/// Redacted text and how many secrets were removed from it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Redacted {
    pub text: String,
    pub redactions: usize,
    /// `redactions` by the kind of rule that removed them (kinds with none are absent).
    pub kinds: BTreeMap<Kind, usize>,
}

/// Redacts every secret the rules recognise. Pure and deterministic.
pub fn redact(text: &str) -> Redacted {
    let mut tally = Tally::default();
    let text = providers::private_keys(text, &mut tally);
    let text = keyed::authorization(&text, &mut tally);
    let text = connection::redact(&text, &mut tally);
    let text = providers::redact(&text, &mut tally);
    let text = keyed::redact(&text, &mut tally);
    let text = entropy::redact(&text, &mut tally);
    tally.finish(text)
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
        // Beyond key names and shapes: connection strings, prose, bare random tokens.
        (
            "Server=tcp:sql.prod,1433;Database=orders;User ID=app;Password=Winter!kafka42;Encrypt=true",
            "Server=tcp:sql.prod,1433;Database=orders;User ID=app;Password=[REDACTED];Encrypt=true",
            1,
        ),
        (
            "jdbc:postgresql://pg:5432/orders?user=app&password=Orders77abc&sslmode=require",
            "jdbc:postgresql://pg:5432/orders?user=app&password=[REDACTED]&sslmode=require",
            1,
        ),
        (
            "AccountName=diag;AccountKey=Zm9vYmFyYmF6cXV4Zm9vYmFyYmF6cXV4Zm9vYmFy+/Q==;EndpointSuffix=core.windows.net",
            "AccountName=diag;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
            1,
        ),
        (
            "SharedAccessSignature=sv=2022-11-02&sig=abc%2Bdef%3D",
            "SharedAccessSignature=[REDACTED]",
            1,
        ),
        (
            "the root password is Hunter2xyz",
            "the root password is [REDACTED]",
            1,
        ),
        (
            "rotated, new value 9vQ2mX7LkP4wR8tZ1bN6cJ3hF5dS0aYe",
            "rotated, new value [REDACTED]",
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
        "payments-api-5d8f7c9b4-x7k2p   0/1   CrashLoopBackOff   6 (40s ago)   14m",
        "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "rolled back to 9fceb02d0ae598e95dc970b74767f19372d61af8 (was 3f9a2b1)",
        "sum(rate(http_requests_total{job=\"payments-api\",code=~\"5..\"}[5m]))",
        "https://grafana.example.com/d/AbC123xYz/payments-overview?orgId=1&from=now-1h",
        "the password reset page is down, token is expired, secret is mounted",
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
