//! The Slack Web API client the rest of Firstline uses: post in a thread, update a message, add a
//! reaction, read a thread's replies, and `auth.test`.
//!
//! Every call has a timeout; an HTTP 429 is retried after Slack's `Retry-After` (capped, a few
//! times) and pushes that channel's pacer back; posts are paced to ~1/s per channel and cut to
//! Slack's size limits ([`super::limits`]). Tokens never reach a log line.

use super::limits::{self, MAX_SECTION_CHARS, MAX_TEXT_CHARS};
use super::pacer::Pacer;
use firstline_config::SecretString;
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::time::Duration;

/// Calls that were rate limited are retried this many times.
const RATE_LIMIT_RETRIES: usize = 3;
/// Longest `Retry-After` honoured before giving up on a call.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// Why a Web API call failed.
#[derive(Debug, thiserror::Error)]
pub enum SlackApiError {
    /// Slack answered `ok: false` (e.g. `channel_not_found`).
    #[error("Slack API {method}: {code}")]
    Api {
        /// The method.
        method: &'static str,
        /// Slack's error code.
        code: String,
    },
    /// Still rate limited after retrying.
    #[error("Slack API {method}: rate limited (retry after {retry_after:?})")]
    RateLimited {
        /// The method.
        method: &'static str,
        /// Slack's last `Retry-After`.
        retry_after: Option<Duration>,
    },
    /// No answer in time.
    #[error("Slack API {method}: no answer within {timeout:?}")]
    Timeout {
        /// The method.
        method: &'static str,
        /// The deadline.
        timeout: Duration,
    },
    /// Transport or protocol failure.
    #[error("Slack API {method}: {message}")]
    Transport {
        /// The method.
        method: &'static str,
        /// What failed.
        message: String,
    },
}

/// One message of a thread, as `conversations.replies` returns it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadReply {
    /// Its ts.
    pub ts: String,
    /// Author (person), if any.
    pub user: Option<String>,
    /// Author (bot), if any.
    pub bot_id: Option<String>,
    /// Text.
    pub text: String,
}

/// What `auth.test` says about our token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The bot's user id (`U…`).
    pub user_id: String,
    /// The workspace (`T…`).
    pub team_id: String,
    /// The bot id (`B…`), when a bot token.
    pub bot_id: Option<String>,
}

/// The Web API client.
pub struct SlackApi {
    client: SlackHyperClient,
    token: SlackApiToken,
    pacer: Pacer,
    timeout: Duration,
}

impl std::fmt::Debug for SlackApi {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackApi")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl SlackApi {
    /// A client for the Web API at `api_url` (`https://slack.com/api`, or the stand-in's).
    pub fn new(api_url: &str, token: &SecretString, timeout: Duration) -> Self {
        let base = api_url.trim_end_matches('/').to_string();
        let connector =
            SlackClientHyperConnector::with_connector(super::connector()).with_slack_api_url(&base);
        Self {
            client: SlackClient::new(connector),
            token: SlackApiToken::new(SlackApiTokenValue::new(token.expose().to_string())),
            pacer: Pacer::new(Duration::from_secs(1)),
            timeout,
        }
    }

    /// `auth.test`: who our token is.
    pub async fn auth_test(&self) -> Result<Identity, SlackApiError> {
        let session = self.client.open_session(&self.token);
        let response = self.call("auth.test", None, || session.auth_test()).await?;
        Ok(Identity {
            user_id: response.user_id.to_string(),
            team_id: response.team_id.to_string(),
            bot_id: response.bot_id.map(|b| b.to_string()),
        })
    }

    /// Posts `text` as a reply in `thread_ts` of `channel` (split into sections, cut to Slack's
    /// limits), returning the new message's ts.
    pub async fn post_in_thread(
        &self,
        channel: &str,
        thread_ts: &str,
        text: &str,
    ) -> Result<String, SlackApiError> {
        let request = SlackApiChatPostMessageRequest::new(channel.into(), content(text))
            .with_thread_ts(thread_ts.into());
        let session = self.client.open_session(&self.token);
        self.pacer.wait(channel).await;
        let response = self
            .call("chat.postMessage", Some(channel), || {
                session.chat_post_message(&request)
            })
            .await?;
        Ok(response.ts.to_string())
    }

    /// Replaces the text of message `ts` in `channel`.
    pub async fn update(&self, channel: &str, ts: &str, text: &str) -> Result<(), SlackApiError> {
        let request = SlackApiChatUpdateRequest::new(channel.into(), content(text), ts.into());
        let session = self.client.open_session(&self.token);
        self.call("chat.update", Some(channel), || {
            session.chat_update(&request)
        })
        .await
        .map(|_| ())
    }

    /// Adds reaction `name` (e.g. `eyes`) to message `ts`; `already_reacted` counts as success.
    pub async fn add_reaction(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
    ) -> Result<(), SlackApiError> {
        let request = SlackApiReactionsAddRequest::new(
            channel.into(),
            SlackReactionName::new(name.into()),
            ts.into(),
        );
        let session = self.client.open_session(&self.token);
        match self
            .call("reactions.add", Some(channel), || {
                session.reactions_add(&request)
            })
            .await
        {
            Ok(_) => Ok(()),
            Err(SlackApiError::Api { code, .. }) if code == "already_reacted" => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The messages of a thread (parent first), up to `limit`.
    pub async fn thread_replies(
        &self,
        channel: &str,
        thread_ts: &str,
        limit: u16,
    ) -> Result<Vec<ThreadReply>, SlackApiError> {
        let request = SlackApiConversationsRepliesRequest::new(channel.into(), thread_ts.into())
            .with_limit(limit);
        let session = self.client.open_session(&self.token);
        let response = self
            .call("conversations.replies", Some(channel), || {
                session.conversations_replies(&request)
            })
            .await?;
        Ok(response
            .messages
            .into_iter()
            .map(|m| ThreadReply {
                ts: m.origin.ts.to_string(),
                user: m.sender.user.map(|u| u.to_string()),
                bot_id: m.sender.bot_id.map(|b| b.to_string()),
                text: m.content.text.unwrap_or_default(),
            })
            .collect())
    }

    /// One call with a timeout, retried on 429 after `Retry-After`.
    async fn call<T, F, Fut>(
        &self,
        method: &'static str,
        channel: Option<&str>,
        mut attempt: F,
    ) -> Result<T, SlackApiError>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = ClientResult<T>>,
    {
        let mut rate_limited = 0;
        loop {
            let outcome = tokio::time::timeout(self.timeout, attempt()).await;
            let error = match outcome {
                Err(_) => {
                    return Err(SlackApiError::Timeout {
                        method,
                        timeout: self.timeout,
                    });
                }
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) => error,
            };
            match error {
                SlackClientError::RateLimitError(limit) => {
                    let wait = limit.retry_after.unwrap_or(Duration::from_secs(1));
                    if let Some(channel) = channel {
                        self.pacer.back_off(channel, wait).await;
                    }
                    rate_limited += 1;
                    if rate_limited > RATE_LIMIT_RETRIES || wait > MAX_RETRY_AFTER {
                        return Err(SlackApiError::RateLimited {
                            method,
                            retry_after: limit.retry_after,
                        });
                    }
                    tracing::info!(
                        method,
                        wait_ms = wait.as_millis() as u64,
                        "Slack rate limit; waiting"
                    );
                    tokio::time::sleep(wait).await;
                }
                SlackClientError::ApiError(api) => {
                    return Err(SlackApiError::Api {
                        method,
                        code: api.code,
                    });
                }
                other => {
                    return Err(SlackApiError::Transport {
                        method,
                        message: other.to_string(),
                    });
                }
            }
        }
    }
}

/// Message content within Slack's limits: fallback text plus section blocks.
fn content(text: &str) -> SlackMessageContent {
    let blocks: Vec<SlackBlock> = limits::sections(text)
        .into_iter()
        .map(|chunk| {
            SlackBlock::Section(
                SlackSectionBlock::new()
                    .with_text(md!("{}", limits::truncate(&chunk, MAX_SECTION_CHARS))),
            )
        })
        .collect();
    SlackMessageContent::new()
        .with_text(limits::truncate(text, MAX_TEXT_CHARS))
        .with_blocks(blocks)
}
