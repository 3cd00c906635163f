//! `link_round` and `post_link`: a thread whose alert another thread's analysis answers.
//!
//! `post_link` posts the one line exactly once, the way `post_to_thread` posts a round: the
//! line's ts is stored on the membership; `link_attempted_at`, set before posting, tells a retry
//! that finds no ts to look for its own earlier line (by its metadata) before posting again.

use std::time::Duration;

use firstline_investigation::RoundResult;
use firstline_investigation::sharing::{Sharing, may_share, shares};
use firstline_investigation::tools::McpTools;
use firstline_investigation::tools::mcp::CallScope;
use firstline_model::reactions::{EYES, LINK};
use firstline_slack::{OutgoingMessage, SlackApi};
use firstline_store::groups::{self, Membership, Root};
use firstline_workflows::types::{
    LinkInput, LinkOutcome, LinkRoundInput, LinkedTo, PostOutcome, ProbeInput,
};
use sqlx::PgPool;

use super::blocks::{is_link_reply, link_metadata, link_text};
use crate::RoundError;
use crate::post::{REPLIES_SCANNED, swap_reaction};

/// What the workflow is told of a membership.
pub fn linked_to(member: &Membership) -> Option<LinkedTo> {
    member.is_linked().then(|| LinkedTo {
        group_id: member.group_id,
        primary: member.primary.clone(),
    })
}

/// Open groups whose shared root one alert is checked against (each check reads one object).
const MAX_SHARED_CHECKED: u32 = 3;

/// Links thread `input.thread_id`, before its first round, to an open group whose root its alert
/// shares (`window`: `grouping.window_secs`; `None` links nothing).
pub async fn probe_group(
    pool: &PgPool,
    tools: &McpTools,
    input: &ProbeInput,
    window: Option<Duration>,
) -> Result<LinkOutcome, RoundError> {
    let Some(window) = window else {
        return Ok(LinkOutcome::default());
    };
    let alert = firstline_alert::parse_alert(&input.alert.text);
    // Only an alert a shared root could account for waits for one, or reads anything.
    if !may_share(&alert) {
        return Ok(LinkOutcome::default());
    }
    let thread_id = input.thread_id;
    let shared = groups::shared_roots(
        pool,
        &input.thread.team_id,
        thread_id,
        window,
        MAX_SHARED_CHECKED,
    )
    .await?;
    // Each check reads afresh (a node may come back between two), in a scope of its own: the
    // round that may follow must not be served these reads from the cache.
    let cache_key = format!(
        "{}@{}/probe/{}",
        input.thread.kafka_key(),
        input.run_id,
        chrono::Utc::now().timestamp_millis()
    );
    let source = tools.round(CallScope::round(&cache_key, Some(thread_id), 1));
    for group in shared {
        let Ok(sharing) = serde_json::from_value::<Sharing>(group.sharing) else {
            continue;
        };
        let Some(evidence) = shares(&source, &alert, &sharing).await else {
            continue;
        };
        let member =
            groups::link_shared(pool, thread_id, group.group_id, &evidence, window).await?;
        if let Some(to) = member.as_ref().and_then(linked_to) {
            metrics::counter!(crate::metrics::ALERTS_LINKED, "reason" => "shared_root")
                .increment(1);
            tracing::info!(group = to.group_id, %evidence,
                "the alert shares an open group's root: linked without a round");
            return Ok(LinkOutcome {
                linked: Some(to),
                earlier_running: false,
            });
        }
    }
    let earlier_running = groups::earlier_running(
        pool,
        &input.thread.team_id,
        thread_id,
        Duration::from_secs(input.wait_secs),
    )
    .await?;
    Ok(LinkOutcome {
        linked: None,
        earlier_running,
    })
}

/// Links thread `input.thread_id` by its committed round's root (`window`: `grouping.window_secs`;
/// `None`, grouping off, links nothing).
pub async fn link_round(
    pool: &PgPool,
    input: &LinkRoundInput,
    window: Option<Duration>,
) -> Result<LinkOutcome, RoundError> {
    let (thread_id, round) = (input.thread_id, input.round);
    let Some(window) = window else {
        return Ok(LinkOutcome::default());
    };
    let result: Option<serde_json::Value> =
        sqlx::query_scalar("SELECT result FROM rounds WHERE thread_id = $1 AND number = $2")
            .bind(thread_id)
            .bind(round as i32)
            .fetch_optional(pool)
            .await?;
    let Some(result) = result else {
        return Err(RoundError::NotCommitted { thread_id, round });
    };
    let result: RoundResult =
        serde_json::from_value(result).map_err(|error| RoundError::BadResult {
            thread_id,
            round,
            error,
        })?;
    let Some(root) = result.report.and_then(|r| r.root) else {
        return Ok(LinkOutcome::default());
    };
    let sharing = root
        .sharing
        .as_ref()
        .and_then(|s| serde_json::to_value(s).ok());
    let member = groups::link_root(
        pool,
        thread_id,
        &Root {
            key: &root.key,
            title: &root.title,
            evidence: &root.evidence,
            sharing: sharing.as_ref(),
        },
        window,
    )
    .await?;
    let linked = member.as_ref().and_then(linked_to);
    if let Some(to) = &linked {
        metrics::counter!(crate::metrics::ALERTS_LINKED, "reason" => "same_root").increment(1);
        tracing::info!(group = to.group_id, primary = %to.primary.thread_ts, root = %root.key,
            "the round found an open group's root: linked to its analysis");
    }
    Ok(LinkOutcome {
        linked,
        earlier_running: false,
    })
}

/// Posts linked thread `input.thread_id`'s one line unless it is posted, swaps the alert's 👀
/// for 🔗, and has the primary's reply list the alert.
pub async fn post_link(
    pool: &PgPool,
    slack: &SlackApi,
    input: &LinkInput,
) -> Result<PostOutcome, RoundError> {
    let thread_id = input.thread_id;
    let Some(mut member) = groups::membership_of(pool, thread_id)
        .await?
        .filter(Membership::is_linked)
    else {
        return Err(RoundError::NotLinked(thread_id));
    };
    let channel = &input.thread.channel_id;
    // Links read once: the member's alert, for the primary's list, and the primary's, for the
    // line. A link Slack will not give leaves the name unlinked.
    if member.permalink.is_none() {
        match slack.permalink(channel, &input.thread.thread_ts).await {
            Ok(link) => groups::set_permalink(pool, thread_id, &link).await?,
            Err(e) => tracing::warn!(error = %e, "no permalink for the linked alert"),
        }
    }
    if member.primary_permalink.is_none() {
        match slack
            .permalink(&member.primary.channel_id, &member.primary.thread_ts)
            .await
        {
            Ok(link) => {
                groups::set_permalink(pool, member.primary_thread_id, &link).await?;
                member.primary_permalink = Some(link);
            }
            Err(e) => tracing::warn!(error = %e, "no permalink for the group's primary alert"),
        }
    }
    let (ts, posted_now) = match member.link_ts.clone() {
        Some(ts) => (ts, false),
        None => {
            let earlier = match member.link_attempted {
                true => slack
                    .thread_replies(channel, &input.thread.thread_ts, REPLIES_SCANNED)
                    .await?
                    .into_iter()
                    .find(|r| is_link_reply(r.metadata.as_ref(), thread_id))
                    .map(|r| r.ts),
                false => None,
            };
            match earlier {
                Some(ts) => {
                    tracing::info!(%ts, "adopting the line an earlier attempt posted");
                    groups::link_posted(pool, thread_id, &ts).await?;
                    (ts, false)
                }
                None => {
                    groups::link_attempted(pool, thread_id).await?;
                    let message = OutgoingMessage {
                        channel: channel.clone(),
                        thread_ts: Some(input.thread.thread_ts.clone()),
                        text: link_text(&member),
                        blocks: None,
                        metadata: Some(link_metadata(thread_id, member.group_id)),
                    };
                    let ts = slack.post_message(&message).await?;
                    groups::link_posted(pool, thread_id, &ts).await?;
                    tracing::info!(%ts, group = member.group_id, "linked alert answered in one line");
                    (ts, true)
                }
            }
        }
    };
    if !input.alert_ts.is_empty() {
        swap_reaction(slack, channel, &input.alert_ts, EYES, LINK).await;
    }
    // The primary's list is cosmetic: failing to edit it never fails the line (the next link,
    // or the primary's own post, shows it).
    if let Err(e) = super::reply::refresh(pool, slack, member.group_id).await {
        tracing::warn!(error = %e, group = member.group_id, "could not list the alert on the primary's reply");
    }
    Ok(PostOutcome { ts, posted_now })
}
