//! `/firstline`: the slash command. `investigate <namespace>/<workload>` (or `<service>`, or
//! free text) starts a round on demand: the bot posts a message in the channel, records it as
//! the new thread's alert (it wakes the round like any alert), and answers the person privately.
//! `help` says what the bot can do; anything else gets the usage, privately.
//!
//! What a person types only ever becomes labels and prose of the recorded alert — the round
//! reads it as it reads any alert, as untrusted text.

/// What was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    /// Start a round about `subject`.
    Investigate(Subject),
    Help,
    /// Not understood: the usage, with what was typed.
    Usage(String),
}

/// What to investigate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// `namespace/name`: a Service, else a workload, of that name in that namespace.
    InNamespace { namespace: String, name: String },
    /// A bare name: looked up across the cluster.
    Named(String),
    /// Words: the round reads them like an alert's.
    Words(String),
}

/// The usage, as the ephemeral reply shows it.
pub const USAGE: &str = "Usage: `/firstline investigate <namespace>/<workload>` (or \
    `<service>`, or a few words about what is wrong) starts an investigation in a new thread \
    here; `/firstline help` says more.";

/// What `/firstline help` answers.
pub const HELP: &str = "I investigate incidents in this channel's threads: an alert posted \
    here, or `/firstline investigate <namespace>/<workload>`, starts a round that reads the \
    cluster, metrics, logs and traces read-only, and posts what it found with its evidence — or \
    asks you up to three questions (pick an answer or reply in your own words). Mention me in a \
    thread to steer the next round (`@firstline check payments-db`, `@firstline is it the \
    deploy?`), and mark a reply *Wrong cause* when it is.";

/// Longest text taken from the command.
const MAX_TEXT_CHARS: usize = 300;

/// Reads the command's text.
pub fn parse(text: &str) -> Request {
    let text = firstline_model::text::prefix(text.trim(), MAX_TEXT_CHARS);
    let (verb, rest) = text
        .split_once(char::is_whitespace)
        .map_or((text, ""), |(v, r)| (v, r.trim()));
    match verb.to_ascii_lowercase().as_str() {
        "" | "help" => Request::Help,
        "investigate" | "check" | "look" if !rest.is_empty() => {
            Request::Investigate(subject(rest.trim_start_matches("at ").trim()))
        }
        _ => Request::Usage(text.to_string()),
    }
}

fn subject(text: &str) -> Subject {
    let name = |s: &str| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
    };
    match text.split_once('/') {
        Some((namespace, workload))
            if !text.contains(char::is_whitespace) && name(namespace) && name(workload) =>
        {
            Subject::InNamespace {
                namespace: namespace.to_string(),
                name: workload.to_string(),
            }
        }
        _ if name(text) => Subject::Named(text.to_string()),
        _ => Subject::Words(text.to_string()),
    }
}

impl Subject {
    /// How the posted message names it.
    pub fn describe(&self) -> String {
        match self {
            Subject::InNamespace { namespace, name } => format!("`{name}` in `{namespace}`"),
            Subject::Named(name) => format!("`{name}`"),
            Subject::Words(words) => format!("“{words}”"),
        }
    }

    /// The recorded alert's text: a title, who asked, and the labels the round starts from.
    pub fn alert_text(&self, user: &str) -> String {
        let labels = match self {
            Subject::InNamespace { namespace, name } => {
                format!("\nnamespace={namespace}\nservice={name}")
            }
            Subject::Named(name) => format!("\nservice={name}"),
            Subject::Words(words) => format!("\n{words}"),
        };
        format!(
            "[REQUESTED] Investigation of {} requested by <@{user}> with /firstline{labels}",
            self.describe()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn investigate_a_workload_a_service_or_words_help_and_usage() {
        assert_eq!(
            parse("investigate payments/checkout-api"),
            Request::Investigate(Subject::InNamespace {
                namespace: "payments".into(),
                name: "checkout-api".into()
            })
        );
        assert_eq!(
            parse("  investigate   checkout "),
            Request::Investigate(Subject::Named("checkout".into()))
        );
        assert_eq!(
            parse("investigate checkout is slow since 14:00"),
            Request::Investigate(Subject::Words("checkout is slow since 14:00".into()))
        );
        assert_eq!(parse("help"), Request::Help);
        assert_eq!(parse(""), Request::Help);
        assert_eq!(parse("investigate"), Request::Usage("investigate".into()));
        assert_eq!(parse("deploy prod"), Request::Usage("deploy prod".into()));
    }

    #[test]
    fn the_recorded_alert_carries_the_labels_the_round_starts_from() {
        let text = Subject::InNamespace {
            namespace: "payments".into(),
            name: "checkout-api".into(),
        }
        .alert_text("U1");
        let target = firstline_alert::parse_alert(&text);
        assert_eq!(target.namespace.as_deref(), Some("payments"));
        assert_eq!(target.service.as_deref(), Some("checkout-api"));
        assert!(text.contains("requested by <@U1>"), "{text}");
    }
}
