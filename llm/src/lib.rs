//! Firstline's model client: typed chat requests to any OpenAI-compatible endpoint (OpenAI,
//! Azure, vLLM, Ollama, llama.cpp) over async-openai.
//!
//! - [`Client`]: one endpoint and model; an explicit timeout on every request; retries with
//!   capped exponential backoff on HTTP 429, 5xx and connect errors only (async-openai's own
//!   retry layer is replaced, see `transport`); usage and latency returned with every answer.
//! - [`ChatRequest`] / [`ChatAnswer`]: our own small message, tool and answer types.
//! - [`strict_schema`], [`strict`], [`bounded`]: JSON schemas strict structured output accepts;
//!   [`parse_structured`] decodes a structured answer, naming why it is unusable.
//! - [`ReplyCache`]: answers per round and step, so a retried activity does not ask twice.
//! - [`Budget`]: a round's model calls, tool calls, tokens and wall time.
//! - [`LlmError::reason`]: the stable fallback reason a round records.
//!
//! With the `scripted` feature, the `scripted` module serves recorded chat-completion replies on a real
//! socket, for tests.

mod answer;
mod budget;
mod cache;
mod client;
mod embeddings;
mod error;
mod failure;
mod options;
mod request;
mod schema;
#[cfg(feature = "scripted")]
pub mod scripted;
mod structured;
mod transport;

pub use answer::{ChatAnswer, FinishReason, ToolCall, Usage};
pub use budget::{Budget, BudgetLimits, Spent};
pub use cache::{MemoryCache, ReplyCache};
pub use client::{Client, DEFAULT_COMPLETION_CAP};
pub use error::{BudgetLimit, LlmError};
pub use failure::chain as error_chain;
pub use options::{ClientOptions, RetryPolicy};
pub use request::{ChatRequest, Message, ToolSpec};
pub use schema::{SchemaError, bounded, strict, strict_schema};
pub use structured::parse_structured;
