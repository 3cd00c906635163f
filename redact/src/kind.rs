//! What kind of secret a rule removed: the key of [`crate::Redacted::kinds`], so an operator (and
//! `firstline redact --count`) can see which rules fired, not only how often.

use std::fmt;

/// The rule family that removed a secret. Ordered as the rules run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Kind {
    /// A PEM private key block.
    PrivateKey,
    /// The credential of an `Authorization:` header or a bearer token.
    Authorization,
    /// The password of `scheme://user:password@host`.
    UrlPassword,
    /// An Azure storage or Service Bus key, a SAS or presigned-URL signature.
    ConnectionKey,
    /// An AWS access key id, or the secret key beside one.
    Aws,
    /// A JSON Web Token.
    Jwt,
    /// A Slack token or incoming-webhook path.
    Slack,
    /// A GitHub token (classic or fine-grained).
    GitHub,
    /// A GitLab token.
    GitLab,
    /// An OpenAI API key.
    OpenAi,
    /// A Stripe secret, restricted or webhook key.
    Stripe,
    /// A Google API key, OAuth client secret or access token.
    Google,
    /// An npm access token.
    Npm,
    /// A SendGrid API key.
    SendGrid,
    /// A Twilio account or API key SID.
    Twilio,
    /// A Discord bot token.
    Discord,
    /// A Telegram bot token.
    Telegram,
    /// A PyPI upload token.
    PyPi,
    /// A Mailchimp API key.
    Mailchimp,
    /// A Square OAuth secret or access token.
    Square,
    /// A value after a secret-ish key: `password=…`, `"api_key": "…"`.
    KeyValue,
    /// A value a sentence names as a secret: "the root password is …".
    Prose,
    /// A long random-looking token no other rule named.
    HighEntropy,
}

impl Kind {
    /// The kind's name as printed: lower case, a few words.
    pub fn name(self) -> &'static str {
        match self {
            Kind::PrivateKey => "private key",
            Kind::Authorization => "authorization",
            Kind::UrlPassword => "url password",
            Kind::ConnectionKey => "connection string key",
            Kind::Aws => "aws",
            Kind::Jwt => "jwt",
            Kind::Slack => "slack",
            Kind::GitHub => "github",
            Kind::GitLab => "gitlab",
            Kind::OpenAi => "openai",
            Kind::Stripe => "stripe",
            Kind::Google => "google",
            Kind::Npm => "npm",
            Kind::SendGrid => "sendgrid",
            Kind::Twilio => "twilio",
            Kind::Discord => "discord",
            Kind::Telegram => "telegram",
            Kind::PyPi => "pypi",
            Kind::Mailchimp => "mailchimp",
            Kind::Square => "square",
            Kind::KeyValue => "key=value",
            Kind::Prose => "named in prose",
            Kind::HighEntropy => "high entropy",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
