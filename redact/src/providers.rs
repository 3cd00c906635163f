//! Secrets recognised by their provider's shape wherever they appear, with or without a key
//! name: PEM private keys, JWTs, and the published token formats of AWS, Slack, GitHub, GitLab,
//! OpenAI, Stripe, Google, npm, SendGrid, Twilio, Discord, Telegram, PyPI, Mailchimp and Square.
//! An AWS secret access key has no shape of its own (40 base64 characters), so it is redacted
//! as one only in a text that also holds an AWS access key id.

use std::sync::LazyLock;

use regex::Regex;

use crate::tally::Tally;
use crate::value::looks_machine_generated;
use crate::{Kind, REDACTED};

static PEM_PRIVATE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN ([A-Z0-9 ]*)PRIVATE KEY-----[\s\S]*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\z)")
        .expect("static regex")
});

static AWS_ACCESS_KEY_ID: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b").expect("static regex"));

/// A maximal run of standard base64 characters (an AWS secret access key is 40 of them).
static BASE64_RUN: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z0-9+/]+").expect("static regex"));

/// One provider's token shape. `keep` names a group that stays (a URL's host and path prefix);
/// `check`, when set, must accept the whole match.
struct Shape {
    kind: Kind,
    pattern: Regex,
    check: Option<fn(&str) -> bool>,
}

fn shape(kind: Kind, pattern: &str) -> Shape {
    Shape {
        kind,
        pattern: Regex::new(pattern).expect("static regex"),
        check: None,
    }
}

fn checked(kind: Kind, pattern: &str, check: fn(&str) -> bool) -> Shape {
    Shape {
        check: Some(check),
        ..shape(kind, pattern)
    }
}

static SHAPES: LazyLock<Vec<Shape>> = LazyLock::new(|| {
    vec![
        // Three base64url segments, the first one a JSON header (`{"` encodes to `eyJ`).
        shape(
            Kind::Jwt,
            r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}",
        ),
        shape(Kind::Slack, r"\b(?:xox[abposre]|xapp)-[A-Za-z0-9-]{10,}"),
        shape(
            Kind::Slack,
            r"(?P<keep>https://hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9_/-]{20,}",
        ),
        shape(
            Kind::GitHub,
            r"\b(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{22,})",
        ),
        shape(
            Kind::GitLab,
            r"\bgl(?:pat|dt|rt|ptt|oas|cbt|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}",
        ),
        // `sk-…` (legacy), `sk-proj-…`, `sk-svcacct-…`, `sk-admin-…`.
        checked(
            Kind::OpenAi,
            r"\bsk-(?:(?:proj|svcacct|admin)-)?[A-Za-z0-9_-]{20,}",
            |token| {
                token.bytes().any(|b| b.is_ascii_uppercase())
                    && token.bytes().any(|b| b.is_ascii_lowercase())
                    && token.bytes().any(|b| b.is_ascii_digit())
            },
        ),
        shape(
            Kind::Stripe,
            r"\b(?:(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{10,}|whsec_[A-Za-z0-9]{20,})",
        ),
        shape(
            Kind::Google,
            r"\b(?:AIza[0-9A-Za-z_-]{35}|GOCSPX-[0-9A-Za-z_-]{28}|ya29\.[0-9A-Za-z_-]{20,})",
        ),
        shape(Kind::Npm, r"\bnpm_[A-Za-z0-9]{36}\b"),
        shape(
            Kind::SendGrid,
            r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}",
        ),
        shape(Kind::Twilio, r"\b(?:AC|SK)[0-9a-f]{32}\b"),
        // The bot's id in base64, a timestamp, an HMAC.
        checked(
            Kind::Discord,
            r"\b[MNO][A-Za-z0-9_-]{23,27}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,40}",
            looks_machine_generated,
        ),
        shape(Kind::Telegram, r"\b[0-9]{8,10}:AA[0-9A-Za-z_-]{33}"),
        shape(Kind::PyPi, r"\bpypi-AgE[0-9A-Za-z_-]{50,}"),
        shape(Kind::Mailchimp, r"\b[0-9a-f]{32}-us[0-9]{1,2}\b"),
        shape(
            Kind::Square,
            r"\b(?:sq0(?:atp|csp)-[0-9A-Za-z_-]{22,}|EAAA[0-9A-Za-z_-]{60})",
        ),
    ]
});

/// PEM private keys, before anything else reads inside them.
pub(crate) fn private_keys(text: &str, tally: &mut Tally) -> String {
    tally.replace(Kind::PrivateKey, &PEM_PRIVATE_KEY, text, |_| {
        Some(format!("{REDACTED} PRIVATE KEY"))
    })
}

/// Every provider shape, and an AWS secret key beside its key id.
pub(crate) fn redact(text: &str, tally: &mut Tally) -> String {
    let mut current = if AWS_ACCESS_KEY_ID.is_match(text) {
        let paired = tally.replace(Kind::Aws, &BASE64_RUN, text, |caps| {
            is_aws_secret_key(&caps[0]).then(|| REDACTED.to_string())
        });
        tally.replace(Kind::Aws, &AWS_ACCESS_KEY_ID, &paired, |_| {
            Some(REDACTED.to_string())
        })
    } else {
        text.to_string()
    };
    for shape in SHAPES.iter() {
        current = tally.replace(shape.kind, &shape.pattern, &current, |caps| {
            if shape.check.is_some_and(|check| !check(&caps[0])) {
                return None;
            }
            let keep = caps.name("keep").map_or("", |m| m.as_str());
            Some(format!("{keep}{REDACTED}"))
        });
    }
    current
}

/// 40 base64 characters with both cases and a digit or `+`/`/` (not a 40-hex commit).
fn is_aws_secret_key(run: &str) -> bool {
    run.len() == 40
        && run.bytes().any(|b| b.is_ascii_uppercase())
        && run.bytes().any(|b| b.is_ascii_lowercase())
        && run
            .bytes()
            .any(|b| b.is_ascii_digit() || b == b'+' || b == b'/')
        && !run.starts_with('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> (String, Vec<Kind>) {
        let mut tally = Tally::default();
        let text = redact(text, &mut tally);
        let out = tally.finish(text);
        (out.text, out.kinds.into_keys().collect())
    }

    /// Test tokens in two halves, joined at run time, so that secret scanners reading this
    /// repository (push protection) do not take them for leaked keys.
    const PROVIDER_TOKENS: &[(&str, &str, Kind)] = &[
        (
            "sk-proj-",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0hIj3kLm6n",
            Kind::OpenAi,
        ),
        (
            "sk-",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0h",
            Kind::OpenAi,
        ),
        ("sk_live_", "4eC39HqLyjWDarjtT1zdp7dc", Kind::Stripe),
        ("rk_live_", "51H8sJkLmNoPqRsTuVwXyZ0123", Kind::Stripe),
        ("sk_test_", "4eC39HqLyjWDarjtT1zdp7dc", Kind::Stripe),
        ("AIza", "FakeKeyForFirstline-Tests_012345678", Kind::Google),
        (
            "github_pat_",
            "11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            Kind::GitHub,
        ),
        ("ghp_", "abcdefghijklmnopqrstuvwxyz0123456789", Kind::GitHub),
        ("glpat-", "Xy7zAb3dEf6hIj9kLm2n", Kind::GitLab),
        (
            "xoxb-",
            "1234567890-0987654321-AbCdEfGhIjKlMnOp",
            Kind::Slack,
        ),
        ("xapp-", "1-A0123-456789-abcdef", Kind::Slack),
        ("npm_", "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7d", Kind::Npm),
        (
            "SG.",
            "Ab3dEf6hIj9kLm2nOp5qRs.Tu1wXy4zAb7dEf0hIj3kLm6nOp9qRs2tUv5wXy8zAb1",
            Kind::SendGrid,
        ),
        ("SK", "2b7f0c1d9e8a4f6b3c5d7e9f1a2b4c6d", Kind::Twilio),
        ("AC", "2b7f0c1d9e8a4f6b3c5d7e9f1a2b4c6d", Kind::Twilio),
        (
            "MTE4MzY0NTI3ODkwMTIzNDU2Nzg5",
            ".GhT3xQ.Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7",
            Kind::Discord,
        ),
        (
            "123456789:AA",
            "Hb3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zA",
            Kind::Telegram,
        ),
        (
            "pypi-AgEIcHlwaS5vcmc",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0hIj3kLm6nOp9q",
            Kind::PyPi,
        ),
        ("2b7f0c1d9e8a4f6b3c5d7e9f1a2b4c6d", "-us12", Kind::Mailchimp),
        (
            "sq0csp-",
            "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAb7dEf0",
            Kind::Square,
        ),
        ("AKIA", "IOSFODNN7EXAMPLE", Kind::Aws),
        (
            "eyJhbGciOiJIUzI1NiJ9.",
            "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
            Kind::Jwt,
        ),
    ];

    #[test]
    fn each_provider_shape_is_redacted_without_a_key_name() {
        for (head, tail, kind) in PROVIDER_TOKENS {
            let input = format!("pasted {head}{tail} here");
            let (out, kinds) = redacted(&input);
            assert_eq!(out, "pasted [REDACTED] here", "input: {input}");
            assert_eq!(kinds, vec![*kind], "input: {input}");
        }
    }

    #[test]
    fn a_slack_webhook_keeps_its_host() {
        let (out, _) = redacted(&format!(
            "posts to https://hooks.slack.com/services/{}{}",
            "T0ABCDEF1/B0ABCDEFGH2/", "Ab3dEf6hIj9kLm2nOp5qRs8t"
        ));
        assert_eq!(out, "posts to https://hooks.slack.com/services/[REDACTED]");
    }

    #[test]
    fn a_bare_aws_secret_key_beside_its_id_is_redacted() {
        let (out, kinds) =
            redacted("creds: AKIAIOSFODNN7EXAMPLE / wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY ok");
        assert_eq!(out, "creds: [REDACTED] / [REDACTED] ok");
        assert_eq!(kinds, vec![Kind::Aws]);
    }

    #[test]
    fn forty_characters_without_a_key_id_or_a_commit_beside_one_stay() {
        let alone = "value wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
        assert_eq!(redacted(alone).0, alone);
        let (out, _) =
            redacted("AKIAIOSFODNN7EXAMPLE deployed at 9fceb02d0ae598e95dc970b74767f19372d61af8");
        assert_eq!(
            out,
            "[REDACTED] deployed at 9fceb02d0ae598e95dc970b74767f19372d61af8"
        );
    }

    #[test]
    fn words_that_start_like_a_prefix_stay() {
        for kept in [
            "task-sk-reconcile-worker-7d9f8c6b5-x2x7q",
            "sk-lb-01 is down",
            "AIza is how Google keys start",
            "SG.1 is the first security group",
            "disk-sk-ssd-premium-lrs",
        ] {
            assert_eq!(redacted(kept).0, kept);
        }
    }
}
