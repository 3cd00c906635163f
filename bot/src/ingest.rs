//! Recording classified messages: ONE Postgres transaction for a batch of them (thread upserts,
//! message inserts deduplicated on `event_id` and `(channel, ts)`, outbox rows, and the resolutions
//! the messages cause, if any — [`crate::resolution`]), committed before Slack is acked
//! (ARCHITECTURE.md, invariants 1–3). A duplicate inserts nothing and is acked like a success.
//! Alerts and mentions get a `wake` row, except recovery alerts (recorded and published, never
//! woken); so does a person's reply in a thread that awaits an answer (`threads.awaiting_answer`:
//! its latest round asked), mention or not — the first such reply clears the flag in the same
//! statement, so a second reply does not queue another round.
//!
//! A firing alert is linked to its incident group in the same transaction
//! ([`firstline_store::groups::link_alert`]): a repeat of an open group's alert joins it, any other
//! alert opens a group of its own. Its `wake` row is written either way: the round of a repeat
//! answers with one line pointing at the group's analysis instead of investigating again.
//!
//! A batch is what [`writer`] collected while the previous commit was in flight (group commit):
//! one statement over arrays, one round trip and one fsync, instead of five statements and an
//! fsync per event. A batch of one is the same statement for one event.

pub mod writer;

use crate::message::{Incoming, Kind};
use crate::resolution;

use sqlx::PgPool;
use std::collections::HashSet;
use std::time::Duration;

/// What recording needs to know besides the messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// The bot's user id: recognises the mention token of a resolved-mention.
    pub bot_user_id: String,
    /// `grouping.window_secs`; `None`: every alert is its own incident.
    pub group_window: Option<Duration>,
}

impl Rules {
    /// Rules for bot `bot_user_id`, with grouping's default window.
    pub fn new(bot_user_id: impl Into<String>) -> Self {
        Self {
            bot_user_id: bot_user_id.into(),
            group_window: firstline_config::GroupingSettings::default().window(),
        }
    }
}

/// What recording did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recorded {
    /// Stored as `messages.id`, with its outbox rows.
    Stored {
        /// The new message's id.
        message_id: i64,
        /// Whether a `wake` row was written.
        wakes: bool,
        /// The thread this message resolved (`threads.id`), if any.
        resolved: Option<i64>,
    },
    /// Already stored (same `event_id`, or same `(channel, ts)`, earlier or earlier in the
    /// batch): nothing written.
    Duplicate,
}

/// Records one message in its own transaction. Any error leaves nothing behind.
pub async fn record(
    pool: &PgPool,
    message: &Incoming,
    rules: &Rules,
) -> Result<Recorded, sqlx::Error> {
    let mut recorded = record_batch(pool, &[message], rules).await?;
    Ok(recorded.pop().unwrap_or(Recorded::Duplicate))
}

/// Records `messages` atomically and says what became of each, in order. All or nothing: any
/// error leaves nothing of the batch behind.
///
/// Threads, messages and outbox rows are ONE statement (data-modifying CTEs), so a batch costs
/// one round trip and one commit. Only a batch holding a message that may resolve a thread
/// ([`resolution::may_resolve`]) or a firing alert to link wraps it in a transaction, for those
/// statements.
/// Rows are written in `(channel, ts)` order, whatever the arrival order, so two concurrent
/// batches take their row locks in the same order and cannot deadlock each other.
pub async fn record_batch(
    pool: &PgPool,
    messages: &[&Incoming],
    rules: &Rules,
) -> Result<Vec<Recorded>, sqlx::Error> {
    let bot_user_id = rules.bot_user_id.as_str();
    let mut fresh = first_of_each(messages);
    let mut recorded = vec![Recorded::Duplicate; messages.len()];
    if fresh.is_empty() {
        return Ok(recorded);
    }
    fresh.sort_by(|&a, &b| {
        (&messages[a].thread.channel_id, &messages[a].ts)
            .cmp(&(&messages[b].thread.channel_id, &messages[b].ts))
    });
    let received_at = chrono::Utc::now();
    let batch = Columns::of(fresh.iter().map(|&i| messages[i]), received_at)?;
    // Positions in `fresh` (the statement's input order) of the messages that may resolve.
    let resolving: Vec<usize> = (0..fresh.len())
        .filter(|&k| resolution::may_resolve(messages[fresh[k]], bot_user_id))
        .collect();
    // Positions in `fresh` of the firing alerts to link to their groups.
    let linking: Vec<usize> = match rules.group_window {
        Some(_) => (0..fresh.len())
            .filter(|&k| links(messages[fresh[k]]))
            .collect(),
        None => Vec::new(),
    };

    let mut tx = match resolving.is_empty() && linking.is_empty() {
        true => None,
        false => Some(pool.begin().await?),
    };
    let insert = batch.insert_query();
    let inserted: Vec<(i64, i64, i64, bool)> = match tx.as_mut() {
        Some(tx) => insert.fetch_all(&mut **tx).await?,
        None => insert.fetch_all(pool).await?,
    };
    // (message id, thread id, woke) by input position; `None` where the message was already
    // stored.
    let mut stored = vec![None; fresh.len()];
    for (ordinal, message_id, thread_id, woke) in inserted {
        let slot = usize::try_from(ordinal - 1)
            .ok()
            .and_then(|k| stored.get_mut(k))
            .ok_or_else(|| sqlx::Error::Protocol(format!("ordinal {ordinal} out of range")))?;
        *slot = Some((message_id, thread_id, woke));
    }
    for (k, &i) in fresh.iter().enumerate() {
        if let Some((message_id, _, wakes)) = stored[k] {
            recorded[i] = Recorded::Stored {
                message_id,
                wakes,
                resolved: None,
            };
        }
    }
    if let Some(mut tx) = tx {
        if let Some(window) = rules.group_window {
            for k in linking {
                let Some((_, thread_id, _)) = stored[k] else {
                    continue;
                };
                link(&mut tx, messages[fresh[k]], thread_id, window).await?;
            }
        }
        for k in resolving {
            let Some((_, thread_id, _)) = stored[k] else {
                continue;
            };
            let i = fresh[k];
            let resolved = resolution::on_message(&mut tx, messages[i], thread_id, bot_user_id)
                .await?
                .map(|r| r.thread_id);
            if let Recorded::Stored { resolved: slot, .. } = &mut recorded[i] {
                *slot = resolved;
            }
        }
        tx.commit().await?;
    }
    Ok(recorded)
}

/// Whether a stored message is a firing alert, linked to its incident group.
fn links(message: &Incoming) -> bool {
    message.kind == Kind::Alert && !resolution::is_recovery_alert(message)
}

/// Links firing alert `message` (recorded in thread `thread_id`) to its incident group.
async fn link(
    conn: &mut sqlx::PgConnection,
    message: &Incoming,
    thread_id: i64,
    window: Duration,
) -> Result<(), sqlx::Error> {
    let alert = firstline_alert::parse_alert(&message.text);
    let fingerprint = alert.fingerprint();
    let title = alert
        .short_name()
        .unwrap_or_else(|| firstline_alert::title::first_line(&message.text).to_string());
    let alert = firstline_store::groups::NewAlert {
        team_id: &message.thread.team_id,
        channel_id: &message.thread.channel_id,
        thread_id,
        fingerprint: fingerprint.as_deref(),
        title: &title,
    };
    let membership = firstline_store::groups::link_alert(conn, &alert, window).await?;
    if membership.is_linked() {
        metrics::counter!(crate::metrics::ALERTS_LINKED, "reason" => "same_alert").increment(1);
        tracing::info!(
            group = membership.group_id,
            primary = %membership.primary.thread_ts,
            "a repeat of an alert its group already has: linked to that analysis"
        );
    }
    Ok(())
}

/// Whether a stored message gets a `wake` row: alerts and mentions, except recovery alerts.
fn wakes(message: &Incoming) -> bool {
    message.kind.wakes() && !resolution::is_recovery_alert(message)
}

/// Whether a message may answer the thread's pending question: a person's reply in a thread, or
/// a click on a question's choice.
fn may_answer(message: &Incoming) -> bool {
    matches!(message.kind, Kind::Chatter | Kind::Answer)
        && message.user_id.is_some()
        && message
            .thread_ts
            .as_deref()
            .is_some_and(|t| t != message.ts)
}

/// A batch as the columns of the insert statement, in insertion order.
struct Columns<'a> {
    team_ids: Vec<&'a str>,
    channel_ids: Vec<&'a str>,
    thread_keys: Vec<&'a str>,
    event_ids: Vec<Option<&'a str>>,
    ts: Vec<&'a str>,
    thread_ts: Vec<Option<&'a str>>,
    kinds: Vec<&'static str>,
    user_ids: Vec<Option<&'a str>>,
    bot_ids: Vec<Option<&'a str>>,
    app_ids: Vec<Option<&'a str>>,
    usernames: Vec<Option<&'a str>>,
    texts: Vec<&'a str>,
    raws: Vec<&'a serde_json::Value>,
    /// The Kafka record, `message_id` filled in by the statement.
    publish: Vec<serde_json::Value>,
    wake: Vec<Option<serde_json::Value>>,
    /// The wake-up of a reply that wakes only a thread awaiting an answer.
    answer: Vec<Option<serde_json::Value>>,
    received_at: chrono::DateTime<chrono::Utc>,
}

impl<'a> Columns<'a> {
    fn of(
        messages: impl Iterator<Item = &'a Incoming>,
        received_at: chrono::DateTime<chrono::Utc>,
    ) -> Result<Self, sqlx::Error> {
        let encode = |e: serde_json::Error| sqlx::Error::Encode(Box::new(e));
        let mut c = Columns {
            team_ids: Vec::new(),
            channel_ids: Vec::new(),
            thread_keys: Vec::new(),
            event_ids: Vec::new(),
            ts: Vec::new(),
            thread_ts: Vec::new(),
            kinds: Vec::new(),
            user_ids: Vec::new(),
            bot_ids: Vec::new(),
            app_ids: Vec::new(),
            usernames: Vec::new(),
            texts: Vec::new(),
            raws: Vec::new(),
            publish: Vec::new(),
            wake: Vec::new(),
            answer: Vec::new(),
            received_at,
        };
        for m in messages {
            c.team_ids.push(&m.thread.team_id);
            c.channel_ids.push(&m.thread.channel_id);
            c.thread_keys.push(&m.thread.thread_ts);
            c.event_ids.push(m.event_id.as_deref());
            c.ts.push(&m.ts);
            c.thread_ts.push(m.thread_ts.as_deref());
            c.kinds.push(m.kind.as_str());
            c.user_ids.push(m.user_id.as_deref());
            c.bot_ids.push(m.bot_id.as_deref());
            c.app_ids.push(m.app_id.as_deref());
            c.usernames.push(m.username.as_deref());
            c.texts.push(&m.text);
            c.raws.push(&m.raw);
            c.publish
                .push(serde_json::to_value(m.record(0, received_at)).map_err(encode)?);
            c.wake.push(match wakes(m) {
                true => Some(serde_json::to_value(m.wake()).map_err(encode)?),
                false => None,
            });
            c.answer.push(match may_answer(m) {
                true => Some(serde_json::to_value(m.wake()).map_err(encode)?),
                false => None,
            });
        }
        Ok(c)
    }

    /// Upserts the threads, inserts the messages (`ON CONFLICT DO NOTHING`: repeats of stored
    /// messages vanish here) and the outbox rows of those inserted; returns
    /// `(input ordinal from 1, message id, thread id, woke)` of each inserted message.
    ///
    /// Every part of one statement sees the same snapshot: `pending` reads `awaiting_answer` as
    /// it was before `thread` clears it for the replies that now answer.
    fn insert_query(
        self,
    ) -> sqlx::query::QueryAs<'a, sqlx::Postgres, (i64, i64, i64, bool), sqlx::postgres::PgArguments>
    {
        sqlx::query_as(
            "WITH input AS (
               SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[],
                                    $6::text[], $7::text[], $8::text[], $9::text[], $10::text[],
                                    $11::text[], $12::text[], $13::jsonb[], $14::jsonb[],
                                    $15::jsonb[], $17::jsonb[])
                 WITH ORDINALITY AS i(team_id, channel_id, thread_key, event_id, ts, thread_ts,
                                      kind, user_id, bot_id, app_id, username, text, raw,
                                      publish, wake, answer, ord)
             ),
             pending AS (
               SELECT t.id FROM threads t
               WHERE t.awaiting_answer
                 AND EXISTS (SELECT 1 FROM input i
                              WHERE i.answer IS NOT NULL AND i.team_id = t.team_id
                                AND i.channel_id = t.channel_id AND i.thread_key = t.thread_ts
                                AND NOT EXISTS (SELECT 1 FROM messages s
                                                 WHERE s.channel_id = i.channel_id
                                                   AND s.ts = i.ts))
             ),
             thread AS (
               INSERT INTO threads (team_id, channel_id, thread_ts)
               SELECT DISTINCT team_id, channel_id, thread_key FROM input ORDER BY 1, 2, 3
               ON CONFLICT (team_id, channel_id, thread_ts)
               DO UPDATE SET last_activity_at = now(),
                             awaiting_answer = threads.awaiting_answer
                                               AND threads.id NOT IN (SELECT id FROM pending)
               RETURNING id, team_id, channel_id, thread_ts
             ),
             message AS (
               INSERT INTO messages (thread_id, event_id, team_id, channel_id, ts, thread_ts,
                                     kind, user_id, bot_id, app_id, username, text, raw,
                                     received_at)
               SELECT t.id, i.event_id, i.team_id, i.channel_id, i.ts, i.thread_ts, i.kind,
                      i.user_id, i.bot_id, i.app_id, i.username, i.text, i.raw, $16
               FROM input i
               JOIN thread t ON t.team_id = i.team_id AND t.channel_id = i.channel_id
                            AND t.thread_ts = i.thread_key
               ORDER BY i.ord
               ON CONFLICT DO NOTHING
               RETURNING id, thread_id, channel_id, ts
             ),
             waking AS (
               SELECT m.id, m.thread_id, i.ord, i.publish,
                      coalesce(i.wake, CASE WHEN m.thread_id IN (SELECT id FROM pending)
                                            THEN i.answer END) AS wake
               FROM message m JOIN input i ON i.channel_id = m.channel_id AND i.ts = m.ts
             ),
             outbox_rows AS (
               INSERT INTO outbox (kind, thread_id, message_id, payload)
               SELECT o.kind, w.thread_id, w.id, o.payload
               FROM waking w
               CROSS JOIN LATERAL (
                 VALUES ('publish', jsonb_set(w.publish, '{message_id}', to_jsonb(w.id))),
                        ('wake', w.wake)
               ) AS o(kind, payload)
               WHERE o.payload IS NOT NULL
             )
             SELECT ord, id, thread_id, wake IS NOT NULL FROM waking",
        )
        .bind(self.team_ids)
        .bind(self.channel_ids)
        .bind(self.thread_keys)
        .bind(self.event_ids)
        .bind(self.ts)
        .bind(self.thread_ts)
        .bind(self.kinds)
        .bind(self.user_ids)
        .bind(self.bot_ids)
        .bind(self.app_ids)
        .bind(self.usernames)
        .bind(self.texts)
        .bind(self.raws)
        .bind(self.publish)
        .bind(self.wake)
        .bind(self.received_at)
        .bind(self.answer)
    }
}

/// Indices of the messages that are not repeats of an earlier one in the batch (same `event_id`,
/// or same `(channel, ts)`: the `app_mention` and `message` events of one mention), in order.
fn first_of_each(messages: &[&Incoming]) -> Vec<usize> {
    let mut events = HashSet::new();
    let mut positions = HashSet::new();
    (0..messages.len())
        .filter(|&i| {
            let m = messages[i];
            let new_event = m.event_id.as_deref().is_none_or(|e| events.insert(e));
            new_event && positions.insert((m.thread.channel_id.as_str(), m.ts.as_str()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Kind;
    use firstline_model::ThreadKey;

    fn message(event_id: Option<&str>, channel: &str, ts: &str) -> Incoming {
        Incoming {
            event_id: event_id.map(String::from),
            thread: ThreadKey {
                team_id: "T1".into(),
                channel_id: channel.into(),
                thread_ts: ts.into(),
            },
            ts: ts.into(),
            thread_ts: None,
            kind: Kind::Chatter,
            user_id: None,
            bot_id: None,
            app_id: None,
            username: None,
            text: String::new(),
            raw: serde_json::Value::Null,
            traceparent: None,
        }
    }

    #[test]
    fn repeats_within_a_batch_keep_the_first_arrival() {
        let a = message(Some("Ev1"), "C1", "1.1");
        let retry = message(Some("Ev1"), "C1", "1.1");
        let other_event_same_message = message(Some("Ev2"), "C1", "1.1");
        let same_ts_other_channel = message(Some("Ev3"), "C2", "1.1");
        let no_event_id = message(None, "C1", "2.2");
        let no_event_id_again = message(None, "C1", "2.2");
        let batch = [
            &a,
            &retry,
            &other_event_same_message,
            &same_ts_other_channel,
            &no_event_id,
            &no_event_id_again,
        ];
        assert_eq!(first_of_each(&batch), vec![0, 3, 4]);
    }
}
