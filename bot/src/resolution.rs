//! Resolution at ingest: a thread becomes `resolved` — and an `incidents` row remembers it — in
//! the same transaction that records the message (or reaction) that resolved it.
//!
//! Three things resolve an open thread:
//!
//! 1. **A resolved-mention**: a person's mention, in the thread, whose text after the
//!    `<@BOT>` token starts with the word `resolved` (`<@U…> resolved bad ConfigMap, rolled back`);
//!    the rest is the root cause and the resolution ([`parse_resolved_mention`]).
//! 2. **A recovery alert**: an alert-classified message marking recovery (Alertmanager
//!    `[RESOLVED]`, Grafana `[OK]` / `Resolved`, PagerDuty/Datadog `Resolved` / `Recovered`, as
//!    the one alert parser reads it) from the same integration as an open thread's alert in the same channel,
//!    with the same alertname (and namespace/service when both say) — or posted as a reply in the
//!    thread itself. A recovery alert is recorded and published, but never wakes a round.
//! 3. **✅ on the thread's alert**: `reaction_added` with `white_check_mark` by a person (not the
//!    bot, not a user seen posting as a bot) on the parent alert message ([`check_mark_of`]).
//!
//! Resolving an already resolved thread is a no-op (the `UPDATE … WHERE status = 'open'` row lock
//! serialises concurrent resolutions; `incidents` is `ON CONFLICT (thread_id) DO NOTHING`), which
//! also makes a redelivered reaction event harmless. The incident is built from the thread's alert
//! and its latest committed rounds' outlines ([`IncidentDraft::build`]). Its topic record
//! (`IncidentRecord`) goes in the outbox in the same transaction, so the embedder — the topic's
//! consumer — embeds every incident the way it embeds messages.

use crate::message::{Incoming, Kind};
use crate::relay::outbox;
use firstline_alert::title::first_line;
use firstline_alert::{AlertTarget, parse_alert};
use firstline_model::reactions::CHECK_MARK;
use firstline_model::text::clip;
use firstline_model::{INCIDENT_SCHEMA, IncidentRecord};
use firstline_store::groups::{self, GroupResolution};
use firstline_store::incidents::{self, NewIncident};
use firstline_store::rounds::{self, RoundOutline};
use firstline_store::threads;
use serde_json::{Value, json};
use sqlx::{PgConnection, PgPool};
/// Longest incident summary stored.
pub const MAX_SUMMARY_CHARS: usize = 4_000;
/// Longest incident title stored.
pub const MAX_TITLE_CHARS: usize = 300;
/// Open threads of a channel a recovery alert is compared with (most recent first).
const MAX_CANDIDATES: i64 = 200;
/// How far before the thread a reacting user's bot posts are looked for.
const BOT_LOOKBACK_SECS: i64 = 30 * 24 * 3600;

/// What resolved a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resolver {
    /// A person's resolved-mention; `text` is what followed `resolved` (may be empty).
    Mention {
        /// Who.
        user: String,
        /// Their root cause / resolution text.
        text: String,
    },
    /// A recovery alert.
    Recovery {
        /// The recovery message's ts.
        ts: String,
        /// Its first line.
        first_line: String,
    },
    /// ✅ on the thread's alert.
    CheckMark {
        /// Who reacted.
        user: String,
    },
}

impl Resolver {
    /// `mention`, `recovery_alert` or `check_mark` (audit detail, metrics label).
    pub fn via(&self) -> &'static str {
        match self {
            Resolver::Mention { .. } => "mention",
            Resolver::Recovery { .. } => "recovery_alert",
            Resolver::CheckMark { .. } => "check_mark",
        }
    }
}

/// A thread this event resolved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Resolved {
    /// `threads.id`.
    pub thread_id: i64,
    /// `incidents.id`, when the row was inserted by this resolution.
    pub incident_id: Option<i64>,
}

/// The text after the bot's mention token when it starts with the word `resolved`
/// (case-insensitive), with separators (`:`, `-`, `,`, …) trimmed; `None` otherwise.
///
/// `<@U07F1RSTBOT> resolved: bad ConfigMap rollout` → `Some("bad ConfigMap rollout")`;
/// `<@U07F1RSTBOT> resolved` → `Some("")`; `<@U07F1RSTBOT> resolvedness?` → `None`. With an empty
/// `bot_user_id` a leading `<@…>` token is removed.
pub fn parse_resolved_mention(text: &str, bot_user_id: &str) -> Option<String> {
    let stripped = if bot_user_id.is_empty() {
        let t = text.trim_start();
        match (t.starts_with("<@"), t.find('>')) {
            (true, Some(end)) => t[end + 1..].to_string(),
            _ => t.to_string(),
        }
    } else {
        remove_mentions_of(text, bot_user_id)
    };
    let rest = stripped.trim_start();
    let head = rest.get(..8)?;
    if !head.eq_ignore_ascii_case("resolved") {
        return None;
    }
    let after = &rest[8..];
    if after
        .chars()
        .next()
        .is_some_and(|c| c.is_alphanumeric() || c == '_')
    {
        return None;
    }
    let cause = after.trim_start_matches(|c: char| {
        c.is_whitespace() || matches!(c, ':' | '-' | '–' | '—' | ',' | '.' | '!' | ';')
    });
    Some(cause.trim().to_string())
}

/// `text` without `<@BOT>` / `<@BOT|name>` tokens.
fn remove_mentions_of(text: &str, bot_user_id: &str) -> String {
    let token = format!("<@{bot_user_id}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(&token) {
        let after = &rest[start + token.len()..];
        let end = match after.chars().next() {
            Some('>') => Some(1),
            Some('|') => after.find('>').map(|e| e + 1),
            _ => None,
        };
        match end {
            Some(end) => {
                out.push_str(&rest[..start]);
                rest = &after[end..];
            }
            None => {
                out.push_str(&rest[..start + token.len()]);
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `message` is a recovery alert (an alert whose text marks recovery). Such a message is
/// recorded and published but never wakes a round.
pub fn is_recovery_alert(message: &Incoming) -> bool {
    message.kind == Kind::Alert && parse_alert(&message.text).is_recovery()
}

/// Whether `message` can resolve a thread at all (a resolved-mention in a thread, or a recovery
/// alert): the check [`on_message`] starts with, without the database, so a batch with no such
/// message needs no transaction around its insert.
pub fn may_resolve(message: &Incoming, bot_user_id: &str) -> bool {
    let is_reply = message
        .thread_ts
        .as_deref()
        .is_some_and(|t| t != message.ts);
    match message.kind {
        Kind::Mention => is_reply && parse_resolved_mention(&message.text, bot_user_id).is_some(),
        Kind::Alert => is_recovery_alert(message),
        _ => false,
    }
}

/// Resolves what `message` (just inserted into thread `thread_id`, inside `conn`'s transaction)
/// resolves: its own thread for a resolved-mention in a thread, or the matching open thread for a
/// recovery alert. `None` when it resolves nothing.
pub async fn on_message(
    conn: &mut PgConnection,
    message: &Incoming,
    thread_id: i64,
    bot_user_id: &str,
) -> Result<Option<Resolved>, sqlx::Error> {
    if !may_resolve(message, bot_user_id) {
        return Ok(None);
    }
    let is_reply = message
        .thread_ts
        .as_deref()
        .is_some_and(|t| t != message.ts);
    match message.kind {
        Kind::Mention if is_reply => {
            let Some(text) = parse_resolved_mention(&message.text, bot_user_id) else {
                return Ok(None);
            };
            let by = Resolver::Mention {
                user: message.user_id.clone().unwrap_or_default(),
                text,
            };
            resolve_thread(conn, thread_id, &by, message.event_id.as_deref()).await
        }
        Kind::Alert => {
            let recovery = parse_alert(&message.text);
            if !recovery.is_recovery() {
                return Ok(None);
            }
            let target = if is_reply {
                reply_target(conn, thread_id, &recovery).await?
            } else {
                matching_open_thread(conn, message, &recovery, thread_id).await?
            };
            let Some(target) = target else {
                tracing::debug!(alert = ?recovery.identity(), "recovery alert matches no open thread");
                return Ok(None);
            };
            let by = Resolver::Recovery {
                ts: message.ts.clone(),
                first_line: first_line(&message.text).to_string(),
            };
            resolve_thread(conn, target, &by, message.event_id.as_deref()).await
        }
        _ => Ok(None),
    }
}

/// The thread a recovery posted as a reply resolves: its own, unless its alert has a different
/// alertname (compared on the first word).
async fn reply_target(
    conn: &mut PgConnection,
    thread_id: i64,
    recovery: &AlertTarget,
) -> Result<Option<i64>, sqlx::Error> {
    let alert: Option<String> = sqlx::query_scalar(
        "SELECT m.text FROM threads t
         JOIN messages m ON m.thread_id = t.id AND m.channel_id = t.channel_id
                        AND m.ts = t.thread_ts AND m.kind = 'alert'
         WHERE t.id = $1",
    )
    .bind(thread_id)
    .fetch_optional(&mut *conn)
    .await?;
    let compatible = match alert {
        Some(text) => {
            let firing = parse_alert(&text);
            // In the thread itself, formats may differ (`[FIRING:1] X svc` vs `Resolved: X svc`):
            // the first words agreeing is enough.
            let first_word = |s: &str| s.split_whitespace().next().unwrap_or("").to_string();
            match (recovery.identity(), firing.identity()) {
                (Some(a), Some(b)) => first_word(a).eq_ignore_ascii_case(&first_word(b)),
                _ => true,
            }
        }
        None => true,
    };
    Ok(compatible.then_some(thread_id))
}

/// The most recent open thread of the channel whose parent alert came from the same integration
/// as `recovery`, is not itself a recovery, and is the same alert.
async fn matching_open_thread(
    conn: &mut PgConnection,
    recovery: &Incoming,
    recovered: &AlertTarget,
    own_thread: i64,
) -> Result<Option<i64>, sqlx::Error> {
    if recovered.identity().is_none() {
        return Ok(None);
    }
    type Candidate = (
        i64,
        String,
        Option<String>,
        Option<String>,
        Option<String>,
        Option<String>,
    );
    let candidates: Vec<Candidate> = sqlx::query_as(
        "SELECT t.id, m.text, m.user_id, m.bot_id, m.app_id, m.username
         FROM threads t
         JOIN messages m ON m.thread_id = t.id AND m.channel_id = t.channel_id
                        AND m.ts = t.thread_ts AND m.kind = 'alert'
         WHERE t.team_id = $1 AND t.channel_id = $2 AND t.status = 'open' AND t.id <> $3
         ORDER BY t.thread_ts DESC
         LIMIT $4",
    )
    .bind(&recovery.thread.team_id)
    .bind(&recovery.thread.channel_id)
    .bind(own_thread)
    .bind(MAX_CANDIDATES)
    .fetch_all(&mut *conn)
    .await?;
    let matching: Vec<Candidate> = candidates
        .into_iter()
        .filter(|(_, text, user_id, bot_id, app_id, username)| {
            let same_sender = |a: &Option<String>, b: &Option<String>, ci: bool| match (a, b) {
                (Some(a), Some(b)) => {
                    if ci {
                        a.eq_ignore_ascii_case(b)
                    } else {
                        a == b
                    }
                }
                _ => false,
            };
            let same_integration = same_sender(&recovery.bot_id, bot_id, false)
                || same_sender(&recovery.app_id, app_id, false)
                || same_sender(&recovery.username, username, true)
                || (recovery.bot_id.is_none() && same_sender(&recovery.user_id, user_id, false));
            let firing = parse_alert(text);
            same_integration && !firing.is_recovery() && recovered.same_alert(&firing)
        })
        .collect();
    // The alert with the very same labels first (Alertmanager's `[RESOLVED]` repeats them), else
    // the most recent of the same name.
    let fingerprint = recovered.fingerprint();
    let exact = matching
        .iter()
        .find(|c| fingerprint.is_some() && parse_alert(&c.1).fingerprint() == fingerprint);
    Ok(exact.or(matching.first()).map(|c| c.0))
}

/// A ✅ reaction on a message, from a `reaction_added` payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckMark {
    /// Slack's event id.
    pub event_id: Option<String>,
    /// Workspace.
    pub team_id: String,
    /// Channel of the message reacted to.
    pub channel: String,
    /// ts of the message reacted to.
    pub ts: String,
    /// Who reacted.
    pub user: String,
}

/// The ✅ in `payload` when it is an `event_callback` whose event is `reaction_added` with
/// `white_check_mark` on a message; `None` for anything else.
pub fn check_mark_of(payload: &Value) -> Option<CheckMark> {
    let s = |v: &Value, key: &str| {
        v.get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    if s(payload, "type").as_deref() != Some("event_callback") {
        return None;
    }
    let event = payload.get("event")?;
    if s(event, "type").as_deref() != Some("reaction_added")
        || s(event, "reaction").as_deref() != Some(CHECK_MARK)
    {
        return None;
    }
    let item = event.get("item")?;
    if s(item, "type").as_deref() != Some("message") {
        return None;
    }
    Some(CheckMark {
        event_id: s(payload, "event_id"),
        team_id: s(payload, "team_id")
            .or_else(|| s(event, "team"))
            .unwrap_or_default(),
        channel: s(item, "channel")?,
        ts: s(item, "ts")?,
        user: s(event, "user")?,
    })
}

/// Resolves the thread whose parent alert got `reaction`, in one transaction, unless the reactor
/// is the bot (`bot_user_id`), a bot id, or a user seen posting as a bot in the channel.
pub async fn resolve_by_check_mark(
    pool: &PgPool,
    reaction: &CheckMark,
    bot_user_id: &str,
) -> Result<Option<Resolved>, sqlx::Error> {
    if reaction.user == bot_user_id || reaction.user.starts_with('B') {
        return Ok(None);
    }
    let mut tx = pool.begin().await?;
    let thread_id: Option<i64> = sqlx::query_scalar(
        "SELECT t.id FROM threads t
         JOIN messages m ON m.thread_id = t.id AND m.channel_id = t.channel_id
                        AND m.ts = t.thread_ts AND m.kind = 'alert'
         WHERE t.team_id = $1 AND t.channel_id = $2 AND t.thread_ts = $3",
    )
    .bind(&reaction.team_id)
    .bind(&reaction.channel)
    .bind(&reaction.ts)
    .fetch_optional(&mut *tx)
    .await?;
    let Some(thread_id) = thread_id else {
        return Ok(None);
    };
    let since = reaction
        .ts
        .split('.')
        .next()
        .and_then(|s| s.parse::<i64>().ok())
        .map_or(0, |secs| (secs - BOT_LOOKBACK_SECS).max(0))
        .to_string();
    let is_bot: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM messages
                        WHERE channel_id = $1 AND ts >= $2 AND user_id = $3
                          AND (bot_id IS NOT NULL OR kind = 'bot_echo'))",
    )
    .bind(&reaction.channel)
    .bind(&since)
    .bind(&reaction.user)
    .fetch_one(&mut *tx)
    .await?;
    if is_bot {
        return Ok(None);
    }
    let by = Resolver::CheckMark {
        user: reaction.user.clone(),
    };
    let resolved = resolve_thread(&mut tx, thread_id, &by, reaction.event_id.as_deref()).await?;
    tx.commit().await?;
    Ok(resolved)
}

/// Marks thread `thread_id` resolved (if open) and inserts its incident, in `conn`'s transaction.
/// `None` when it was already resolved.
pub async fn resolve_thread(
    conn: &mut PgConnection,
    thread_id: i64,
    by: &Resolver,
    event_id: Option<&str>,
) -> Result<Option<Resolved>, sqlx::Error> {
    let thread_id = group_thread(conn, thread_id).await?;
    let Some(resolved) = threads::resolve(conn, thread_id).await? else {
        return Ok(None);
    };
    let alerts = match groups::resolve(conn, thread_id).await? {
        GroupResolution::Alone => 1,
        GroupResolution::Group { alerts } => alerts,
        // A linked alert's end: recorded on its membership; the group's incident is its
        // primary's, announced once.
        GroupResolution::Linked | GroupResolution::AlreadyResolved => {
            tracing::info!(thread_id, via = by.via(), "a linked alert ended; recorded");
            audit_resolution(conn, thread_id, &resolved.key, by, event_id, None).await?;
            return Ok(Some(Resolved {
                thread_id,
                incident_id: None,
            }));
        }
    };
    // The thread's alert: its parent when that is an alert, else its first alert, else its
    // first message.
    let alert: Option<String> = sqlx::query_scalar(
        "SELECT text FROM messages
         WHERE thread_id = $1 AND kind IN ('alert', 'mention', 'chatter')
         ORDER BY (kind = 'alert' AND ts = $2) DESC, (kind = 'alert') DESC, ts
         LIMIT 1",
    )
    .bind(thread_id)
    .bind(&resolved.key.thread_ts)
    .fetch_optional(&mut *conn)
    .await?;
    let (latest, grounded) = rounds::latest_outlines(conn, thread_id).await?;
    let mut draft = IncidentDraft::build(alert.as_deref(), latest.as_ref(), grounded.as_ref(), by);
    // What was done about it, so that recall offers it the next time.
    if let Some(acted) = action_taken(conn, thread_id).await? {
        draft.resolution = format!("{}; {acted}", draft.resolution);
    }
    let incident = NewIncident {
        thread_id,
        team_id: resolved.key.team_id.clone(),
        permalink: None,
        alertname: draft.alert.alertname,
        service: draft.alert.service,
        namespace: draft.alert.namespace,
        title: draft.title,
        summary: draft.summary,
        root_cause: draft.root_cause,
        resolution: draft.resolution,
        resolved_at: resolved.resolved_at,
        alert_count: alerts,
    };
    let incident_id = incidents::insert(conn, &incident).await?;
    if let Some(incident_id) = incident_id {
        let record = IncidentRecord {
            schema: INCIDENT_SCHEMA.to_string(),
            incident_id,
            thread: resolved.key.clone(),
            text: incident.text(),
            resolved_at: resolved.resolved_at.to_rfc3339(),
        };
        outbox::enqueue_incident(conn, thread_id, incident_id, &record).await?;
    }
    audit_resolution(conn, thread_id, &resolved.key, by, event_id, incident_id).await?;
    metrics::counter!(crate::metrics::RESOLUTIONS, "via" => by.via()).increment(1);
    tracing::info!(
        thread_id,
        via = by.via(),
        ?incident_id,
        alerts,
        "thread resolved"
    );
    Ok(Some(Resolved {
        thread_id,
        incident_id,
    }))
}

/// The thread whose resolution `thread_id`'s stands for: a repeat of its open group's primary
/// alert ends when that alert does, so its own thread is marked resolved (its end recorded) and
/// the primary is resolved instead. Any other thread — a repeat of an alert the group linked,
/// whose end is only that alert's — stands for itself.
async fn group_thread(conn: &mut PgConnection, thread_id: i64) -> Result<i64, sqlx::Error> {
    match groups::membership(conn, thread_id).await? {
        Some(member) if member.repeats_primary() && !member.resolved => {
            threads::resolve(conn, thread_id).await?;
            groups::resolve(conn, thread_id).await?;
            Ok(member.primary_thread_id)
        }
        _ => Ok(thread_id),
    }
}

/// The audit row of a resolution.
async fn audit_resolution(
    conn: &mut PgConnection,
    thread_id: i64,
    key: &firstline_model::ThreadKey,
    by: &Resolver,
    event_id: Option<&str>,
    incident_id: Option<i64>,
) -> Result<(), sqlx::Error> {
    sqlx::query(
        "INSERT INTO audit (thread_id, actor, action, target, outcome, detail)
         VALUES ($1, 'bot', 'resolve', $2, 'ok', $3)",
    )
    .bind(thread_id)
    .bind(&key.channel_id)
    .bind(json!({
        "via": by.via(),
        "event_id": event_id,
        "thread_ts": key.thread_ts,
        "incident_id": incident_id,
    }))
    .execute(&mut *conn)
    .await
    .map(|_| ())
}

/// The `incidents` row a resolution writes (without ids and times).
#[derive(Debug, Clone, PartialEq)]
pub struct IncidentDraft {
    /// The thread's alert as parsed (alertname, namespace, service identify it for recall).
    pub alert: AlertTarget,
    /// The alert's first line, else the latest report's headline.
    pub title: String,
    /// The latest round's text, else the alert's text (≤ [`MAX_SUMMARY_CHARS`]).
    pub summary: String,
    /// The person's text (resolved-mention), else the latest grounded round's first cause.
    pub root_cause: String,
    /// How it was resolved.
    pub resolution: String,
}

impl IncidentDraft {
    /// Builds the incident from the thread's alert text, its latest round, its latest grounded
    /// round, and what resolved it.
    pub fn build(
        alert: Option<&str>,
        latest_round: Option<&RoundOutline>,
        grounded_round: Option<&RoundOutline>,
        by: &Resolver,
    ) -> Self {
        let headline = nonempty(latest_round.map(|r| r.headline.as_str()));
        let title = nonempty(alert.map(first_line))
            .or(headline)
            .unwrap_or("(untitled thread)");
        let summary = nonempty(latest_round.map(|r| r.text.as_str()))
            .or_else(|| nonempty(alert))
            .unwrap_or_default();
        let cause = nonempty(grounded_round.and_then(|r| r.cause.as_deref()));
        let (root_cause, resolution) = match by {
            Resolver::Mention { user, text } => {
                let text = nonempty(Some(text));
                (
                    text.or(cause)
                        .unwrap_or("unknown (resolved by mention)")
                        .to_string(),
                    text.map_or_else(|| format!("resolved by <@{user}>"), str::to_string),
                )
            }
            Resolver::Recovery { first_line, .. } => (
                cause
                    .unwrap_or("unknown (resolved by recovery alert)")
                    .to_string(),
                format!("recovery alert: {first_line}"),
            ),
            Resolver::CheckMark { user } => (
                cause.unwrap_or("(resolved by ✅)").to_string(),
                format!("marked resolved with ✅ by <@{user}>"),
            ),
        };
        Self {
            alert: alert.map(parse_alert).unwrap_or_default(),
            title: clip(title, MAX_TITLE_CHARS, "…"),
            summary: clip(summary, MAX_SUMMARY_CHARS, "…"),
            root_cause,
            resolution,
        }
    }
}

/// The thread's latest executed action in one line: what it did, who approved it, and whether
/// the alert recovered after it.
async fn action_taken(
    conn: &mut PgConnection,
    thread_id: i64,
) -> Result<Option<String>, sqlx::Error> {
    let row: Option<(
        sqlx::types::Json<firstline_model::Action>,
        Option<String>,
        Option<bool>,
    )> = sqlx::query_as(
        "SELECT action, decided_by, (verification ->> 'recovered')::boolean FROM actions
              WHERE thread_id = $1 AND state = 'executed' ORDER BY id DESC LIMIT 1",
    )
    .bind(thread_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|(action, by, recovered)| {
        let by = by
            .map(|u| format!(" (approved by <@{u}>)"))
            .unwrap_or_default();
        let outcome = match recovered {
            Some(true) => "the alert recovered after it",
            Some(false) => "the alert did not recover after it",
            None => "not verified",
        };
        format!("action taken: {}{by}; {outcome}", action.0.title())
    }))
}

/// `s` trimmed, unless it is empty.
fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests;
