//! `load_context`: the thread rebuilt from Postgres (invariant 1). A run started hours after
//! the last one — on another worker, after a restart — sees the same thread: the alert, the
//! conversation (chatter included, most recent first within a character budget), earlier
//! rounds' summaries, verdicts and questions, and what people answered since the bot asked.

use chrono::Utc;
use firstline_model::ThreadKey;
use sqlx::PgPool;

use crate::RoundError;
use firstline_model::text::clip;
use firstline_model::{AnswerBlock, ConversationMessage, EarlierRound, HumanAnswer, ThreadContext};
use firstline_redact::redact;
use firstline_store::rounds::{self, RoundRecap};
use firstline_store::threads;
use firstline_workflows::types::{AlertMessage, RoundContext, RoundPolicy};

/// Longest text of one conversation message kept (characters).
const MAX_MESSAGE_CHARS: usize = 1_500;
/// Most messages read from a thread (the budget usually stops earlier).
const MAX_MESSAGES: i64 = 500;

/// Loads the thread `key` as a round would start on it now.
pub async fn load_context(
    pool: &PgPool,
    key: &ThreadKey,
    policy: &RoundPolicy,
    context_chars: usize,
) -> Result<RoundContext, RoundError> {
    let age_secs = thread_age_secs(&key.thread_ts);
    let row = threads::find(pool, key).await?;
    let Some(thread) = row else {
        return Ok(RoundContext {
            thread_id: None,
            resolved: false,
            rounds_done: 0,
            age_secs,
            alert: AlertMessage::default(),
            thread: ThreadContext::for_team(&key.team_id),
            policy: policy.clone(),
            linked: None,
        });
    };
    let thread_id = thread.id;

    // The newest messages (a long thread's oldest ones matter least), oldest first; the alert
    // (the first one, or the parent) is read on its own so it is never cut off.
    let mut messages: Vec<StoredMessage> = sqlx::query_as(
        "SELECT ts, kind, user_id, coalesce(bot_id, username) AS bot, text, received_at,
                CASE WHEN kind = 'answer' THEN raw #>> '{actions,0,block_id}' END AS block_id
           FROM messages
          WHERE thread_id = $1 AND kind IN ('alert', 'mention', 'chatter', 'bot_echo', 'answer')
          ORDER BY ts::numeric DESC LIMIT $2",
    )
    .bind(thread_id)
    .bind(MAX_MESSAGES)
    .fetch_all(pool)
    .await?;
    messages.reverse();
    let first: Vec<StoredMessage> = sqlx::query_as(
        "(SELECT ts, kind, user_id, coalesce(bot_id, username) AS bot, text, received_at,
                 NULL::text AS block_id FROM messages
           WHERE thread_id = $1 AND kind = 'alert' ORDER BY ts::numeric LIMIT 1)
         UNION ALL
         (SELECT ts, kind, user_id, coalesce(bot_id, username) AS bot, text, received_at,
                 NULL::text AS block_id FROM messages
           WHERE thread_id = $1 AND kind IN ('mention', 'chatter', 'bot_echo')
           ORDER BY (ts = $2) DESC, ts::numeric LIMIT 1)",
    )
    .bind(thread_id)
    .bind(&key.thread_ts)
    .fetch_all(pool)
    .await?;
    let alert = pick_alert(&first, &key.thread_ts);

    let recaps = rounds::recaps(pool, thread_id).await?;
    let earlier_rounds: Vec<EarlierRound> = recaps
        .iter()
        .map(|round| EarlierRound {
            number: u32::try_from(round.number).unwrap_or(0),
            summary: round_summary(round),
            grounded: round.grounded,
            questions: round.questions.0.clone(),
        })
        .collect();
    let last = recaps.last();
    let open_questions = match last {
        Some(round) if !round.grounded => round.questions.0.clone(),
        _ => Vec::new(),
    };
    // Answers: what people wrote after the last round started — it never read them, whether
    // they came while it ran or after it asked.
    let answered_after = last.map(|round| round.started_at);
    let human_answers = if last.is_some_and(|round| !round.grounded) {
        messages
            .iter()
            .filter(|m| {
                m.user_id.is_some()
                    && matches!(m.kind.as_str(), "chatter" | "mention" | "answer")
                    && answered_after.is_none_or(|after| m.received_at > after)
            })
            .map(|m| HumanAnswer {
                user: m.user_id.clone().unwrap_or_default(),
                text: clip(&redact(&m.text).text, MAX_MESSAGE_CHARS, "…"),
                ts: m.ts.clone(),
                // A click answers the question it was rendered for, in the latest round.
                question: m
                    .block_id
                    .as_deref()
                    .and_then(AnswerBlock::parse)
                    .filter(|b| {
                        last.is_some_and(|round| i64::from(b.round) == i64::from(round.number))
                    })
                    .map(|b| b.index),
            })
            .collect::<Vec<_>>()
    } else {
        Vec::new()
    };

    let human_answers = newest_within(human_answers, context_chars, |a| a.text.chars().count());

    Ok(RoundContext {
        thread_id: Some(thread_id),
        resolved: thread.is_resolved(),
        rounds_done: u32::try_from(thread.rounds).unwrap_or(0),
        age_secs,
        alert,
        thread: ThreadContext {
            team_id: Some(key.team_id.clone()),
            earlier_rounds,
            open_questions,
            human_answers,
            conversation: compact(&messages, &key.thread_ts, context_chars),
        },
        policy: policy.clone(),
        linked: firstline_store::groups::membership_of(pool, thread_id)
            .await?
            .as_ref()
            .and_then(crate::group::link::linked_to),
    })
}

/// A message of the thread as stored.
#[derive(Debug, Clone, sqlx::FromRow)]
struct StoredMessage {
    ts: String,
    kind: String,
    user_id: Option<String>,
    bot: Option<String>,
    text: String,
    received_at: chrono::DateTime<Utc>,
    /// The block a click came from (kind `answer`): which question it answers.
    block_id: Option<String>,
}

/// Seconds since `thread_ts` (a Slack ts is seconds since the epoch); 0 when unparsable.
fn thread_age_secs(thread_ts: &str) -> u64 {
    let Ok(started) = thread_ts.parse::<f64>() else {
        return 0;
    };
    let now = Utc::now().timestamp_millis() as f64 / 1000.0;
    if now > started {
        (now - started) as u64
    } else {
        0
    }
}

/// The thread's first alert; else its parent message; else its first message.
fn pick_alert(messages: &[StoredMessage], thread_ts: &str) -> AlertMessage {
    let chosen = messages
        .iter()
        .find(|m| m.kind == "alert")
        .or_else(|| messages.iter().find(|m| m.ts == thread_ts))
        .or_else(|| messages.first());
    chosen
        .map(|m| AlertMessage {
            text: redact(&m.text).text,
            ts: m.ts.clone(),
        })
        .unwrap_or_default()
}

/// Most recent messages first until `budget` characters are used, returned oldest first. The
/// alert itself is the round's input, not part of the conversation.
fn compact(messages: &[StoredMessage], thread_ts: &str, budget: usize) -> Vec<ConversationMessage> {
    let conversation = messages
        .iter()
        .filter(|m| !(m.kind == "alert" && m.ts == thread_ts))
        .map(|m| ConversationMessage {
            author: m
                .user_id
                .clone()
                .or_else(|| m.bot.clone())
                .unwrap_or_default(),
            kind: m.kind.clone(),
            text: clip(&redact(&m.text).text, MAX_MESSAGE_CHARS, "…"),
            ts: m.ts.clone(),
        })
        .collect();
    newest_within(conversation, budget, |m| m.text.chars().count())
}

/// The newest `items` (they are oldest first) whose `cost` fits in `budget`, oldest first.
fn newest_within<T>(items: Vec<T>, budget: usize, cost: impl Fn(&T) -> usize) -> Vec<T> {
    let mut used = 0usize;
    let mut kept: Vec<T> = Vec::new();
    for item in items.into_iter().rev() {
        used += cost(&item);
        if used > budget {
            break;
        }
        kept.push(item);
    }
    kept.reverse();
    kept
}

/// A round's headline and first cause.
fn round_summary(round: &RoundRecap) -> String {
    match &round.cause {
        Some(cause) => format!("{} Cause: {cause}", round.headline),
        None => round.headline.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(ts: &str, kind: &str, text: &str) -> StoredMessage {
        StoredMessage {
            ts: ts.into(),
            kind: kind.into(),
            user_id: Some("U1".into()),
            bot: None,
            text: text.into(),
            received_at: Utc::now(),
            block_id: None,
        }
    }

    #[test]
    fn compaction_keeps_the_most_recent_messages_within_the_budget_oldest_first() {
        let messages = vec![
            message("1.0", "alert", "the alert"),
            message("2.0", "chatter", "aaaaaaaaaa"),
            message("3.0", "chatter", "bbbbbbbbbb"),
            message("4.0", "mention", "cccccccccc"),
        ];
        let kept = compact(&messages, "1.0", 25);
        let texts: Vec<&str> = kept.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(texts, ["bbbbbbbbbb", "cccccccccc"]);
    }

    #[test]
    fn the_alert_is_the_first_alert_else_the_parent_message() {
        let with_alert = vec![
            message("1.0", "chatter", "hi"),
            message("2.0", "alert", "fire"),
        ];
        assert_eq!(pick_alert(&with_alert, "1.0").text, "fire");
        let without = vec![
            message("1.0", "chatter", "parent"),
            message("2.0", "mention", "m"),
        ];
        assert_eq!(pick_alert(&without, "1.0").text, "parent");
    }

    #[test]
    fn secrets_in_the_thread_are_redacted_before_a_round_sees_them() {
        let messages = vec![message("2.0", "chatter", "try password=hunter2 on the db")];
        let kept = compact(&messages, "1.0", 1000);
        assert!(!kept[0].text.contains("hunter2"), "{:?}", kept[0].text);
    }

    #[test]
    fn a_long_message_is_clipped_to_the_limit_marker_included() {
        let long = "x".repeat(MAX_MESSAGE_CHARS * 2);
        let kept = compact(&[message("2.0", "chatter", &long)], "1.0", usize::MAX);
        assert_eq!(kept[0].text.chars().count(), MAX_MESSAGE_CHARS);
        assert!(kept[0].text.ends_with('…'));
    }

    #[test]
    fn age_comes_from_the_thread_ts() {
        let day_ago = (Utc::now().timestamp() - 86_400).to_string() + ".000100";
        let age = thread_age_secs(&day_ago);
        assert!((86_399..86_420).contains(&age), "{age}");
        assert_eq!(thread_age_secs("not a ts"), 0);
    }
}
