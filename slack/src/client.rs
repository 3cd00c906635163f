//! The Slack Web API client the rest of Firstline uses: post a message (text, Block Kit, message
//! metadata) in a thread, update it, show a person an ephemeral message, add and remove
//! reactions, read a thread's replies with their metadata, list a user group's members, and
//! `auth.test`.
//!
//! Every call has a timeout; an HTTP 429 is retried after Slack's `Retry-After` (capped, a few
//! times) and pushes that channel's pacer back; posts are paced to ~1/s per channel and cut to
//! Slack's size limits ([`super::limits`]). Tokens never reach a log line.
//!
//! Posting, updating and reading replies go through slack-morphism's raw JSON calls (its envelope
//! and 429 handling, our JSON), so caller-built Block Kit and metadata pass through untouched by
//! its typed models.

use super::limits::{self, MAX_TEXT_CHARS};
use super::pacer::Pacer;
use firstline_config::SecretString;
use serde_json::{Map, Value, json};
use slack_morphism::errors::SlackClientError;
use slack_morphism::prelude::*;
use std::future::Future;
use std::time::Duration;

/// Calls that were rate limited are retried this many times.
const RATE_LIMIT_RETRIES: usize = 3;
/// Longest `Retry-After` honoured before giving up on a call.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);
/// Largest page `conversations.replies` is asked for.
const REPLIES_PAGE: u16 = 200;
/// Most pages of one thread read before stopping (a bound, whatever Slack's cursor says).
const MAX_REPLY_PAGES: usize = 20;

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
    /// The caller's request cannot be sent as it is (e.g. blocks that are not a JSON array).
    #[error("Slack API {method}: invalid request: {reason}")]
    Invalid {
        /// The method.
        method: &'static str,
        /// What is wrong.
        reason: String,
    },
    /// Slack answered `ok` without a field the call needs.
    #[error("Slack API {method}: answer without `{field}`")]
    MissingField {
        /// The method.
        method: &'static str,
        /// The field.
        field: &'static str,
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
    /// Slack message metadata (`{"event_type": …, "event_payload": {…}}`), when it has some.
    pub metadata: Option<Value>,
}

/// A message to post (`chat.postMessage`).
///
/// `blocks` is a JSON array of Block Kit blocks, cut to Slack's limits before sending
/// ([`limits::fit_blocks`]); `text` is the fallback (notifications, clients without blocks), cut
/// to 40,000 characters. `metadata` is Slack message metadata, `{"event_type": "…",
/// "event_payload": {…}}`; payload values are sent as strings (others JSON-encoded), because
/// slack-morphism's event model, which the bot's own ingress parses echoes with, only accepts
/// string values.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OutgoingMessage {
    /// Channel id.
    pub channel: String,
    /// Parent ts, to reply in a thread.
    pub thread_ts: Option<String>,
    /// Fallback text.
    pub text: String,
    /// Block Kit blocks (a JSON array).
    pub blocks: Option<Value>,
    /// Message metadata.
    pub metadata: Option<Value>,
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

    /// Posts `message` (paced per channel, cut to Slack's limits), returning the new message's ts.
    pub async fn post_message(&self, message: &OutgoingMessage) -> Result<String, SlackApiError> {
        const METHOD: &str = "chat.postMessage";
        let mut request = json!({
            "channel": message.channel,
            "text": limits::truncate(&message.text, MAX_TEXT_CHARS),
        });
        if let Some(thread_ts) = &message.thread_ts {
            request["thread_ts"] = json!(thread_ts);
        }
        if let Some(blocks) = &message.blocks {
            request["blocks"] = Value::Array(fitted_blocks(METHOD, blocks)?);
        }
        if let Some(metadata) = &message.metadata {
            request["metadata"] =
                slack_metadata(metadata).map_err(|reason| SlackApiError::Invalid {
                    method: METHOD,
                    reason,
                })?;
        }
        let session = self.client.open_session(&self.token);
        self.pacer.wait(&message.channel).await;
        let response: Value = self
            .call(METHOD, Some(&message.channel), || {
                session.http_session_api.http_post(METHOD, &request, None)
            })
            .await?;
        response
            .get("ts")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(SlackApiError::MissingField {
                method: METHOD,
                field: "ts",
            })
    }

    /// Replaces message `ts` in `channel`: its fallback `text`, and its blocks when `blocks` is
    /// given (`None` keeps the message's blocks, as Slack does; an empty array removes them).
    pub async fn update_message(
        &self,
        channel: &str,
        ts: &str,
        text: &str,
        blocks: Option<Value>,
    ) -> Result<(), SlackApiError> {
        const METHOD: &str = "chat.update";
        let mut request = json!({
            "channel": channel,
            "ts": ts,
            "text": limits::truncate(text, MAX_TEXT_CHARS),
        });
        if let Some(blocks) = &blocks {
            request["blocks"] = Value::Array(fitted_blocks(METHOD, blocks)?);
        }
        let session = self.client.open_session(&self.token);
        self.call(METHOD, Some(channel), || {
            session
                .http_session_api
                .http_post::<Value, Value>(METHOD, &request, None)
        })
        .await
        .map(|_| ())
    }

    /// The link to message `ts` of `channel` (`chat.getPermalink`): what a reply in another
    /// thread points people at.
    pub async fn permalink(&self, channel: &str, ts: &str) -> Result<String, SlackApiError> {
        const METHOD: &str = "chat.getPermalink";
        let params: Vec<(&str, Option<String>)> = vec![
            ("channel", Some(channel.to_string())),
            ("message_ts", Some(ts.to_string())),
        ];
        let session = self.client.open_session(&self.token);
        let response: Value = self
            .call(METHOD, Some(channel), || {
                session.http_session_api.http_get(METHOD, &params, None)
            })
            .await?;
        response
            .get("permalink")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(SlackApiError::MissingField {
                method: METHOD,
                field: "permalink",
            })
    }

    /// Opens dialog `view` for the person whose click gave `trigger_id` (valid for 3 s after the
    /// click). Returns the view's id.
    pub async fn open_view(&self, trigger_id: &str, view: &Value) -> Result<String, SlackApiError> {
        const METHOD: &str = "views.open";
        let request = json!({"trigger_id": trigger_id, "view": view});
        let session = self.client.open_session(&self.token);
        let response: Value = self
            .call(METHOD, None, || {
                session.http_session_api.http_post(METHOD, &request, None)
            })
            .await?;
        response
            .pointer("/view/id")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or(SlackApiError::MissingField {
                method: METHOD,
                field: "view.id",
            })
    }

    /// Shows `text` to `user` alone in `channel` (in `thread_ts`'s thread when given):
    /// `chat.postEphemeral`, e.g. why their click changed nothing. Not paced (it is no post in
    /// the channel) and cut to Slack's text limit.
    pub async fn post_ephemeral(
        &self,
        channel: &str,
        user: &str,
        thread_ts: Option<&str>,
        text: &str,
    ) -> Result<(), SlackApiError> {
        const METHOD: &str = "chat.postEphemeral";
        let mut request = json!({
            "channel": channel,
            "user": user,
            "text": limits::truncate(text, MAX_TEXT_CHARS),
        });
        if let Some(thread_ts) = thread_ts {
            request["thread_ts"] = json!(thread_ts);
        }
        let session = self.client.open_session(&self.token);
        self.call(METHOD, Some(channel), || {
            session
                .http_session_api
                .http_post::<Value, Value>(METHOD, &request, None)
        })
        .await
        .map(|_| ())
    }

    /// The members of user group `usergroup` (`S…`): `usergroups.users.list` (scope
    /// `usergroups:read`). A disabled or unknown group is Slack's error, never "no members".
    pub async fn user_group_members(&self, usergroup: &str) -> Result<Vec<String>, SlackApiError> {
        const METHOD: &str = "usergroups.users.list";
        let params: Vec<(&str, Option<String>)> = vec![("usergroup", Some(usergroup.to_string()))];
        let session = self.client.open_session(&self.token);
        let response: Value = self
            .call(METHOD, None, || {
                session.http_session_api.http_get(METHOD, &params, None)
            })
            .await?;
        let users =
            response
                .get("users")
                .and_then(Value::as_array)
                .ok_or(SlackApiError::MissingField {
                    method: METHOD,
                    field: "users",
                })?;
        Ok(users
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect())
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

    /// Removes our reaction `name` from message `ts`; `no_reaction` (already gone) counts as
    /// success.
    pub async fn remove_reaction(
        &self,
        channel: &str,
        ts: &str,
        name: &str,
    ) -> Result<(), SlackApiError> {
        const METHOD: &str = "reactions.remove";
        let request = json!({"channel": channel, "timestamp": ts, "name": name});
        let session = self.client.open_session(&self.token);
        match self
            .call(METHOD, Some(channel), || {
                session
                    .http_session_api
                    .http_post::<Value, Value>(METHOD, &request, None)
            })
            .await
        {
            Ok(_) => Ok(()),
            Err(SlackApiError::Api { code, .. }) if code == "no_reaction" => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// The messages of a thread (parent first), up to `limit`, with their metadata
    /// (`include_all_metadata`). Follows Slack's cursor for at most 20 pages.
    pub async fn thread_replies(
        &self,
        channel: &str,
        thread_ts: &str,
        limit: u16,
    ) -> Result<Vec<ThreadReply>, SlackApiError> {
        const METHOD: &str = "conversations.replies";
        let session = self.client.open_session(&self.token);
        let mut replies = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_REPLY_PAGES {
            let wanted = usize::from(limit).saturating_sub(replies.len());
            if wanted == 0 {
                break;
            }
            let page = wanted.min(usize::from(REPLIES_PAGE)).to_string();
            let params: Vec<(&str, Option<String>)> = vec![
                ("channel", Some(channel.to_string())),
                ("ts", Some(thread_ts.to_string())),
                ("limit", Some(page)),
                ("include_all_metadata", Some("true".to_string())),
                ("cursor", cursor.clone()),
            ];
            let response: Value = self
                .call(METHOD, Some(channel), || {
                    session.http_session_api.http_get(METHOD, &params, None)
                })
                .await?;
            let messages = response.get("messages").and_then(Value::as_array).ok_or(
                SlackApiError::MissingField {
                    method: METHOD,
                    field: "messages",
                },
            )?;
            replies.extend(messages.iter().take(wanted).filter_map(reply_of));
            cursor = response
                .pointer("/response_metadata/next_cursor")
                .and_then(Value::as_str)
                .filter(|c| !c.is_empty())
                .map(str::to_string);
            if cursor.is_none() {
                break;
            }
        }
        Ok(replies)
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

/// A caller's blocks, checked to be an array of objects and cut to Slack's limits.
fn fitted_blocks(method: &'static str, blocks: &Value) -> Result<Vec<Value>, SlackApiError> {
    let invalid = |reason: &str| SlackApiError::Invalid {
        method,
        reason: reason.to_string(),
    };
    let blocks = blocks
        .as_array()
        .ok_or_else(|| invalid("blocks must be a JSON array"))?;
    if !blocks
        .iter()
        .all(|b| b.get("type").is_some_and(Value::is_string))
    {
        return Err(invalid(
            "every block must be an object with a string `type`",
        ));
    }
    Ok(limits::fit_blocks(blocks.clone()))
}

/// Slack message metadata from a caller's value: `event_type` a non-empty string,
/// `event_payload` an object whose values become strings (non-strings JSON-encoded).
pub fn slack_metadata(metadata: &Value) -> Result<Value, String> {
    let event_type = metadata
        .get("event_type")
        .and_then(Value::as_str)
        .filter(|t| !t.is_empty())
        .ok_or("metadata.event_type must be a non-empty string")?;
    let payload: Map<String, Value> = match metadata.get("event_payload") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(fields)) => fields
            .iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                (k.clone(), Value::String(v))
            })
            .collect(),
        Some(_) => return Err("metadata.event_payload must be an object".into()),
    };
    Ok(json!({"event_type": event_type, "event_payload": payload}))
}

/// One message of a `conversations.replies` answer; `None` without a ts.
fn reply_of(message: &Value) -> Option<ThreadReply> {
    let field = |key: &str| {
        message
            .get(key)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    Some(ThreadReply {
        ts: field("ts")?,
        user: field("user"),
        bot_id: field("bot_id"),
        text: field("text").unwrap_or_default(),
        metadata: message.get("metadata").filter(|m| m.is_object()).cloned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_payload_values_become_strings_and_bad_shapes_are_refused() {
        let m = slack_metadata(&json!({"event_type": "firstline_round",
            "event_payload": {"round": 2, "grounded": true, "thread": "C1/1.2", "x": {"a": 1}}}))
        .unwrap();
        assert_eq!(
            m,
            json!({"event_type": "firstline_round", "event_payload":
                {"round": "2", "grounded": "true", "thread": "C1/1.2", "x": "{\"a\":1}"}})
        );
        assert!(slack_metadata(&json!({"event_payload": {}})).is_err());
        assert!(slack_metadata(&json!({"event_type": "x", "event_payload": [1]})).is_err());
        assert_eq!(
            slack_metadata(&json!({"event_type": "x"})).unwrap(),
            json!({"event_type": "x", "event_payload": {}})
        );
    }

    #[test]
    fn blocks_must_be_an_array_of_typed_objects() {
        assert!(fitted_blocks("m", &json!({"type": "section"})).is_err());
        assert!(fitted_blocks("m", &json!([{"text": "no type"}])).is_err());
        assert_eq!(
            fitted_blocks("m", &json!([{"type": "divider"}]))
                .unwrap()
                .len(),
            1
        );
    }

    #[test]
    fn replies_keep_metadata_and_skip_messages_without_ts() {
        let r = reply_of(&json!({"ts": "1.2", "user": "U1", "text": "hi",
            "metadata": {"event_type": "e", "event_payload": {}}}))
        .unwrap();
        assert_eq!(r.metadata.unwrap()["event_type"], "e");
        assert_eq!(r.bot_id, None);
        assert!(reply_of(&json!({"text": "no ts"})).is_none());
    }
}
