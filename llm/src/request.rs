//! The typed request: our own small message and tool types, and their translation into
//! async-openai's chat-completion request.

use crate::answer::{ChatAnswer, ToolCall};
use async_openai::types::chat::{
    ChatCompletionMessageToolCall, ChatCompletionMessageToolCalls,
    ChatCompletionRequestAssistantMessage, ChatCompletionRequestAssistantMessageContent,
    ChatCompletionRequestMessage, ChatCompletionRequestSystemMessage,
    ChatCompletionRequestSystemMessageContent, ChatCompletionRequestToolMessage,
    ChatCompletionRequestToolMessageContent, ChatCompletionRequestUserMessage,
    ChatCompletionRequestUserMessageContent, ChatCompletionTool, ChatCompletionTools,
    CreateChatCompletionRequest, FunctionCall, FunctionObject, ResponseFormat,
    ResponseFormatJsonSchema,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    /// Instructions.
    System {
        /// The text.
        content: String,
    },
    /// The asker's turn.
    User {
        /// The text.
        content: String,
    },
    /// The model's earlier turn, replayed (its text and/or the tools it called).
    Assistant {
        /// What it said, if anything.
        content: Option<String>,
        /// The tools it called.
        tool_calls: Vec<ToolCall>,
    },
    /// A tool's result, answering the call with id `call_id`.
    Tool {
        /// The id of the call it answers.
        call_id: String,
        /// The result text.
        content: String,
    },
}

impl Message {
    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Message::System {
            content: content.into(),
        }
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Message::User {
            content: content.into(),
        }
    }

    /// A tool result answering `call_id`.
    pub fn tool(call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            call_id: call_id.into(),
            content: content.into(),
        }
    }

    /// The model's answer as the assistant turn to send back with the tool results.
    pub fn from_answer(answer: &ChatAnswer) -> Self {
        Message::Assistant {
            content: answer.content.clone(),
            tool_calls: answer.tool_calls.clone(),
        }
    }

    fn to_wire(&self) -> ChatCompletionRequestMessage {
        match self {
            Message::System { content } => {
                ChatCompletionRequestMessage::System(ChatCompletionRequestSystemMessage {
                    content: ChatCompletionRequestSystemMessageContent::Text(content.clone()),
                    name: None,
                })
            }
            Message::User { content } => {
                ChatCompletionRequestMessage::User(ChatCompletionRequestUserMessage {
                    content: ChatCompletionRequestUserMessageContent::Text(content.clone()),
                    name: None,
                })
            }
            Message::Assistant {
                content,
                tool_calls,
            } => {
                let calls = tool_calls
                    .iter()
                    .map(|call| {
                        ChatCompletionMessageToolCalls::Function(ChatCompletionMessageToolCall {
                            id: call.id.clone(),
                            function: FunctionCall {
                                name: call.name.clone(),
                                arguments: call.arguments.clone(),
                            },
                        })
                    })
                    .collect::<Vec<_>>();
                ChatCompletionRequestMessage::Assistant(ChatCompletionRequestAssistantMessage {
                    content: content
                        .clone()
                        .map(ChatCompletionRequestAssistantMessageContent::Text),
                    tool_calls: (!calls.is_empty()).then_some(calls),
                    ..Default::default()
                })
            }
            Message::Tool { call_id, content } => {
                ChatCompletionRequestMessage::Tool(ChatCompletionRequestToolMessage {
                    content: ChatCompletionRequestToolMessageContent::Text(content.clone()),
                    tool_call_id: call_id.clone(),
                })
            }
        }
    }
}

/// A tool (function) the model may call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    /// Its name (`a-z A-Z 0-9 _ -`, at most 64 characters).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// JSON schema of its arguments (an object schema).
    pub parameters: Value,
}

/// One chat-completion request.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ChatRequest {
    /// The conversation so far.
    pub messages: Vec<Message>,
    /// Tools offered; empty offers none (the model must answer).
    pub tools: Vec<ToolSpec>,
    /// `(name, schema)`: ask for JSON content matching `schema` in strict mode (see
    /// [`crate::strict`] for making a schemars schema acceptable).
    pub response_schema: Option<(String, Value)>,
    /// Cap on completion tokens for this request.
    pub max_tokens: Option<u32>,
}

impl ChatRequest {
    /// A request with these messages, no tools, free-text answer.
    pub fn new(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// Offers `tools`.
    pub fn with_tools(mut self, tools: Vec<ToolSpec>) -> Self {
        self.tools = tools;
        self
    }

    /// Asks for JSON content matching `schema`.
    pub fn with_schema(mut self, name: impl Into<String>, schema: Value) -> Self {
        self.response_schema = Some((name.into(), schema));
        self
    }

    /// Caps completion tokens.
    pub fn with_max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// async-openai's request for `model` at `temperature`.
    ///
    /// The completion cap is sent both as `max_completion_tokens` (OpenAI's current name) and as
    /// the deprecated `max_tokens` (what llama.cpp, vLLM and Ollama have long read).
    #[allow(deprecated)]
    pub(crate) fn to_wire(&self, model: &str, temperature: f32) -> CreateChatCompletionRequest {
        let tools = self
            .tools
            .iter()
            .map(|tool| {
                ChatCompletionTools::Function(ChatCompletionTool {
                    function: FunctionObject {
                        name: tool.name.clone(),
                        description: Some(tool.description.clone()),
                        parameters: Some(tool.parameters.clone()),
                        strict: None,
                    },
                })
            })
            .collect::<Vec<_>>();
        let response_format =
            self.response_schema
                .as_ref()
                .map(|(name, schema)| ResponseFormat::JsonSchema {
                    json_schema: ResponseFormatJsonSchema {
                        description: None,
                        name: name.clone(),
                        schema: schema.clone(),
                        strict: Some(true),
                    },
                });
        CreateChatCompletionRequest {
            messages: self.messages.iter().map(Message::to_wire).collect(),
            model: model.to_string(),
            temperature: Some(temperature),
            tools: (!tools.is_empty()).then_some(tools),
            response_format,
            max_completion_tokens: self.max_tokens,
            max_tokens: self.max_tokens,
            stream: Some(false),
            ..Default::default()
        }
    }
}
