//! Secrets recognised by the name before them: `Authorization:` headers and bearer tokens,
//! `key = value` / `"key": "value"` where the key ends in a secret-ish word, and sentences that
//! name a secret ("the root password is Hunter2xyz", "token: abc123xyz").
//!
//! Words such as `token` and `secret` only redact a value that looks machine-generated, because
//! Kubernetes output is full of `TokenExpirationSeconds: 3607` and `secret "db" not found`, which
//! are evidence, not secrets; in prose, a value must look like a credential (a digit, a symbol,
//! capitals inside it, or length), so "the password reset page is down" and "the token is
//! expired" stay readable.

use std::sync::LazyLock;

use regex::Regex;

use crate::tally::Tally;
use crate::value::{
    is_lowercase_name, is_placeholder, looks_like_password, looks_machine_generated,
};
use crate::{Kind, REDACTED};

/// `Authorization: Bearer x`, `Authorization: Basic x`, `"authorization": "token x"`.
static AUTHORIZATION_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(authorization"?[ \t]*[:=][ \t]*"?(?:bearer|basic|token|apikey)[ \t]+)([A-Za-z0-9._~+/=-]+)"#)
        .expect("static regex")
});

/// A bearer token outside an Authorization header (curl command lines, log lines).
static BEARER_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(bearer[ \t]+)([A-Za-z0-9._~+/-]{12,}=*)").expect("static regex")
});

/// `key = value`, `key: value`, `"key": "value"` where the key *ends* in a secret-ish word.
/// Group 1 is the whole key and separator, group 2 the key's secret-ish word, group 3 the value.
static SECRET_KEY_VALUE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(\b[A-Za-z0-9_.-]*?(password|passwd|pwd|passphrase|api[_-]?key|apikey|access[_-]?key|secret[_-]?key|secret[_-]?access[_-]?key|client[_-]?secret|private[_-]?key|account[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|auth[_-]?token|access[_-]?token|refresh[_-]?token|session[_-]?token|token|secret)"?[ \t]*[:=][ \t]*"?)([^\s"',;&}]+)"#,
    )
    .expect("static regex")
});

/// A sentence naming a secret: the name (group `name`), an optional "for the replica user" (up
/// to three words), a link
/// ("is", "was changed to", ":", "="), an optional quote, then the value (group `value`).
static PROSE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(?i)(?P<lead>\b(?P<name>",
        r"pass(?:word|wd|phrase)|pass phrase|secret|token|credentials?|creds",
        r"|(?:api|access|secret|private|signing|master|encryption)[ _-]?key",
        r"|(?:client|app|webhook)[ _-]?secret",
        r"|(?:auth|access|bearer|bot|api|refresh)[ _-]?token",
        r")",
        r"(?:[ \t]+(?:for|of)(?:[ \t]+[\w@.:/-]+){1,3}?)?",
        r"(?:[ \t]+(?:is|was|are|were)(?:[ \t]+now)?(?:[ \t]+(?:set|changed|rotated|reset|updated)[ \t]+to)?[ \t]+",
        r"|[ \t]+(?:now|set|changed|rotated|reset|updated)[ \t]+to[ \t]+",
        r"|[ \t]*(?:=>|->|:|=)[ \t]*)",
        r#"[`'"]?)"#,
        r#"(?P<value>[^\s`'"<>]+)"#,
    ))
    .expect("static regex")
});

/// Authorization headers and bearer tokens, before anything else reads their values.
pub(crate) fn authorization(text: &str, tally: &mut Tally) -> String {
    let text = tally.replace(Kind::Authorization, &AUTHORIZATION_HEADER, text, |caps| {
        Some(format!("{}{REDACTED}", &caps[1]))
    });
    tally.replace(Kind::Authorization, &BEARER_TOKEN, &text, |caps| {
        Some(format!("{}{REDACTED}", &caps[1]))
    })
}

/// Values after secret-ish keys, then secrets named in sentences.
pub(crate) fn redact(text: &str, tally: &mut Tally) -> String {
    let text = tally.replace(Kind::KeyValue, &SECRET_KEY_VALUE, text, |caps| {
        let key_word = caps[2].to_ascii_lowercase();
        should_redact_value(&key_word, &caps[3]).then(|| format!("{}{REDACTED}", &caps[1]))
    });
    tally.replace(Kind::Prose, &PROSE, &text, |caps| {
        // A sentence's own punctuation ("is Hunter2xyz.") is not part of the value.
        let raw = &caps["value"];
        let value = raw.trim_end_matches(['.', ',', ';', ':', ')', ']', '}', '?', '!']);
        let name = caps["name"].to_ascii_lowercase();
        prose_names_a_credential(&name, value)
            .then(|| format!("{}{REDACTED}{}", &caps["lead"], &raw[value.len()..]))
    })
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

/// Whether a sentence's value is a credential: for a password, anything that looks like one;
/// for the other names, something machine-generated, or eight characters or more mixing letters
/// and digits that are not a lower-case name ("the secret is payments-db-v2" names a Kubernetes
/// Secret, "token: 128000" counts tokens).
fn prose_names_a_credential(name: &str, value: &str) -> bool {
    if is_placeholder(value) {
        return false;
    }
    if name.starts_with("pass") {
        return looks_like_password(value);
    }
    let letters_and_digits =
        value.chars().any(|c| c.is_ascii_alphabetic()) && value.chars().any(|c| c.is_ascii_digit());
    !is_lowercase_name(value)
        && (looks_machine_generated(value) || (letters_and_digits && value.chars().count() >= 8))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> (String, usize) {
        let mut tally = Tally::default();
        let text = authorization(text, &mut tally);
        let text = redact(&text, &mut tally);
        let out = tally.finish(text);
        (out.text, out.redactions)
    }

    #[test]
    fn secrets_named_in_prose_are_redacted() {
        for (input, expected) in [
            (
                "the root password is Hunter2xyz",
                "the root password is [REDACTED]",
            ),
            (
                "grafana admin password is now Falcon!tiger42.",
                "grafana admin password is now [REDACTED].",
            ),
            (
                "password for the replica user was changed to Orders77abc",
                "password for the replica user was changed to [REDACTED]",
            ),
            (
                "password for admin@grafana is `P@ssw0rd`",
                "password for admin@grafana is `[REDACTED]`",
            ),
            (
                "the new db password: correcthorse9",
                "the new db password: [REDACTED]",
            ),
            ("token: abc123xyz", "token: [REDACTED]"),
            (
                "the api key is Zx81kQp02LmNa7vT, rotate it",
                "the api key is [REDACTED], rotate it",
            ),
            ("secret is 9f8e7d6c5b4a", "secret is [REDACTED]"),
            (
                "client secret rotated to q7W2e9R4t1Y6",
                "client secret rotated to [REDACTED]",
            ),
            ("passwd=letmein", "passwd=[REDACTED]"),
        ] {
            assert_eq!(redacted(input).0, expected, "input: {input}");
            assert_eq!(redacted(input).1, 1, "count for input: {input}");
        }
    }

    #[test]
    fn sentences_about_secrets_without_one_stay() {
        for kept in [
            "the password reset page is down",
            "the password is wrong",
            "the password is Expired",
            "token is expired for the grafana service account",
            "the token is valid, it's the audience claim that's wrong",
            "the secret is mounted at /var/run/secrets/payments/db",
            "the secret is payments-db-v2 in namespace payments",
            "secret is stored in vault",
            "the api key is in vault, I did not paste it anywhere",
            "tokens: 1532 prompt + 220 completion",
            "password: ${DB_PASSWORD}",
            "the password is <redacted>",
            "refresh token: expired",
            "token: 128000",
        ] {
            assert_eq!(redacted(kept), (kept.to_string(), 0));
        }
    }
}
