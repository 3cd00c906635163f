//! The typed answer, and the lenient decoding of a chat-completion body into it.
//!
//! OpenAI-compatible servers differ in small ways (a missing `object` or `created`, an unknown
//! `finish_reason`, tool arguments as an object instead of a string); async-openai's own
//! response type rejects all of them, so answers are decoded here instead.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::time::Duration;

/// A tool call the model asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The call's id; the tool's result is sent back under it.
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// The arguments as the model wrote them (JSON text, not yet checked).
    pub arguments: String,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end.
    Stop,
    /// The token limit: the content is cut off.
    Length,
    /// It wants the tool calls answered.
    ToolCalls,
    /// The provider's content filter cut it.
    ContentFilter,
    /// Anything else the server said (or nothing).
    Other(String),
}

impl FinishReason {
    fn from_wire(reason: Option<&str>) -> Self {
        match reason {
            Some("stop") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some("tool_calls") => FinishReason::ToolCalls,
            Some("content_filter") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_string()),
            None => FinishReason::Other(String::new()),
        }
    }
}

/// Tokens one answer cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Tokens of the request.
    pub prompt_tokens: u32,
    /// Tokens of the answer.
    pub completion_tokens: u32,
}

impl Usage {
    /// Prompt plus completion.
    pub fn total(&self) -> u64 {
        u64::from(self.prompt_tokens) + u64::from(self.completion_tokens)
    }
}

/// One model answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatAnswer {
    /// Text (or JSON text, for a structured request).
    pub content: Option<String>,
    /// Tools it wants called.
    pub tool_calls: Vec<ToolCall>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Its refusal message, if it refused.
    pub refusal: Option<String>,
    /// Tokens it cost (zeros when the server reported none).
    pub usage: Usage,
    /// Time from the first request sent to the answer decoded, retries and backoff included.
    pub latency: Duration,
    /// Served from a [`crate::ReplyCache`] rather than asked again.
    #[serde(default)]
    pub cached: bool,
}

/// The parts of a chat-completion body we read; everything else is ignored.
#[derive(Deserialize)]
struct WireResponse {
    #[serde(default)]
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireChoice {
    #[serde(default)]
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireToolCall>>,
}

#[derive(Deserialize)]
struct WireToolCall {
    #[serde(default)]
    id: String,
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u32,
    #[serde(default)]
    completion_tokens: u32,
}

impl ChatAnswer {
    /// Decodes a chat-completion body (first choice). `Err` carries a short reason.
    pub(crate) fn from_body(body: Value, latency: Duration) -> Result<Self, String> {
        let wire: WireResponse = serde_json::from_value(body)
            .map_err(|error| format!("not a chat completion: {error}"))?;
        let Some(choice) = wire.choices.into_iter().next() else {
            return Err("the answer has no choices".into());
        };
        let tool_calls = choice
            .message
            .tool_calls
            .unwrap_or_default()
            .into_iter()
            .enumerate()
            .map(|(index, call)| ToolCall {
                // A few servers leave the id out; the result still needs one to answer.
                id: if call.id.is_empty() {
                    format!("call_{index}")
                } else {
                    call.id
                },
                name: call.function.name,
                arguments: match call.function.arguments {
                    Value::String(text) => text,
                    Value::Null => "{}".to_string(),
                    other => other.to_string(),
                },
            })
            .collect();
        let usage = wire.usage.map_or(Usage::default(), |usage| Usage {
            prompt_tokens: usage.prompt_tokens,
            completion_tokens: usage.completion_tokens,
        });
        Ok(ChatAnswer {
            content: choice.message.content,
            tool_calls,
            finish_reason: FinishReason::from_wire(choice.finish_reason.as_deref()),
            refusal: choice.message.refusal.filter(|text| !text.is_empty()),
            usage,
            latency,
            cached: false,
        })
    }
}
