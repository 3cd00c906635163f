//! Credentials inside URLs and connection strings: the password of `scheme://user:password@host`
//! (any scheme; the user is kept, it is evidence), Azure storage and Service Bus keys
//! (`AccountKey=`, `SharedAccessKey=`, `SharedAccessSignature=`) and the signature of a SAS or
//! presigned URL (`sig=`, `X-Amz-Signature=`, `X-Goog-Signature=`). `Password=` and `Pwd=` in
//! ADO.NET strings and `?password=` in JDBC URLs are keys like any other ([`crate::keyed`]).

use std::sync::LazyLock;

use regex::{Captures, Regex};

use crate::tally::Tally;
use crate::{Kind, REDACTED};

/// `scheme://user:password@host`, the user possibly empty (`redis://:password@cache`); the
/// password runs to the last `@` before the host, so one holding `/` or `@` (random base64 does)
/// is taken whole.
static URL_PASSWORD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^:/\s@]*:)(\S+)(@[^@\s/:]+)").expect("static regex")
});

/// A key of an Azure connection string, up to the next `;`.
static AZURE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)(\b(?:AccountKey|SharedAccessKey|SharedAccessSignature)=)([^;\s"'<>]+)"#)
        .expect("static regex")
});

/// The signature (or session token) of a SAS or presigned URL.
static URL_SIGNATURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)([?&](?:sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature)=)([^&\s"'<>#]+)"#,
    )
    .expect("static regex")
});

pub(crate) fn redact(text: &str, tally: &mut Tally) -> String {
    let text = tally.replace(Kind::UrlPassword, &URL_PASSWORD, text, |caps| {
        let password = &caps[2];
        // `http://host:8080/path@v2` is a port and a path, not a password.
        let port_then_path = password
            .split_once('/')
            .is_some_and(|(port, _)| port.chars().all(|c| c.is_ascii_digit()));
        (password != REDACTED && !port_then_path)
            .then(|| format!("{}{REDACTED}{}", &caps[1], &caps[3]))
    });
    let text = tally.replace(Kind::ConnectionKey, &AZURE_KEY, &text, keep_key);
    tally.replace(Kind::ConnectionKey, &URL_SIGNATURE, &text, keep_key)
}

/// The key (group 1) kept and its value (group 2) redacted, unless it already is.
fn keep_key(caps: &Captures<'_>) -> Option<String> {
    (!caps[2].starts_with(REDACTED)).then(|| format!("{}{REDACTED}", &caps[1]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn redacted(text: &str) -> String {
        redact(text, &mut Tally::default())
    }

    #[test]
    fn url_and_connection_string_credentials_are_redacted() {
        for (input, expected) in [
            (
                "dial postgres://app:s3cr3t@db.prod:5432/orders failed",
                "dial postgres://app:[REDACTED]@db.prod:5432/orders failed",
            ),
            (
                "redis://:pa55word@cache:6379",
                "redis://:[REDACTED]@cache:6379",
            ),
            // A random password holds `/` and `+`; another one an `@`.
            (
                "redis://:kF3n+Vq9/Lw2xR@cache:6379",
                "redis://:[REDACTED]@cache:6379",
            ),
            (
                "amqp://app:p@ss@rabbit:5672/",
                "amqp://app:[REDACTED]@rabbit:5672/",
            ),
            // A port and a path before an `@` are no password.
            (
                "GET http://registry:5000/v2/app@sha256 404",
                "GET http://registry:5000/v2/app@sha256 404",
            ),
            (
                "mongodb+srv://svc_export:Kafka!orders12@mq.acme.internal/orders",
                "mongodb+srv://svc_export:[REDACTED]@mq.acme.internal/orders",
            ),
            (
                "DefaultEndpointsProtocol=https;AccountName=diag;AccountKey=Zm9vYmFy+/Q==;EndpointSuffix=core.windows.net",
                "DefaultEndpointsProtocol=https;AccountName=diag;AccountKey=[REDACTED];EndpointSuffix=core.windows.net",
            ),
            (
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=Zm9vYmFyYmF6cXV4",
                "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey=[REDACTED]",
            ),
            (
                "https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=abc%2Bdef%3D&se=2026",
                "https://acme.blob.core.windows.net/c/f?sv=2022-11-02&sp=r&sig=[REDACTED]&se=2026",
            ),
            (
                "https://b.s3.amazonaws.com/o?X-Amz-Date=20260314T000000Z&X-Amz-Signature=9f8e7d6c",
                "https://b.s3.amazonaws.com/o?X-Amz-Date=20260314T000000Z&X-Amz-Signature=[REDACTED]",
            ),
        ] {
            assert_eq!(redacted(input), expected);
            assert_eq!(redacted(expected), expected, "redacting twice: {input}");
        }
    }

    #[test]
    fn urls_without_credentials_stay() {
        for kept in [
            "https://grafana.example.com/d/AbC123xYz/payments-overview?orgId=1&from=now-1h",
            "http://10.42.3.9:8080/actuator/health/liveness",
            "https://host:8080/path@x",
            "mail ops@example.com about http://status.example.com",
            "ssh://git@github.com/acme/payments-api.git",
        ] {
            assert_eq!(redacted(kept), kept);
        }
    }
}
