//! The one model client: a chat call with our own retry policy, a timeout on every attempt, the
//! round's deadline respected, and optional reply caching and budget accounting.

use crate::failure::{classify, redact};
use crate::transport::{SendOnce, http_client};
use crate::{Budget, ChatAnswer, ChatRequest, ClientOptions, LlmError, ReplyCache};
use async_openai::config::OpenAIConfig;
use serde_json::Value;
use std::fmt;
use std::time::Instant;
use tracing::Instrument;

/// Completion cap [`Client::chat_in_round`] sets on a request that has none.
pub const DEFAULT_COMPLETION_CAP: u32 = 4096;

/// A client of one OpenAI-compatible chat endpoint and model. Cheap to clone.
#[derive(Clone)]
pub struct Client {
    inner: async_openai::Client<OpenAIConfig>,
    options: ClientOptions,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// Builds the client. Nothing is sent until the first call.
    pub fn new(mut options: ClientOptions) -> Result<Self, LlmError> {
        options.base_url = options.base_url.trim().trim_end_matches('/').to_string();
        if !(options.base_url.starts_with("http://") || options.base_url.starts_with("https://")) {
            return Err(LlmError::Config(
                "the base URL must be an http:// or https:// URL".into(),
            ));
        }
        if options.model.trim().is_empty() {
            return Err(LlmError::Config("no model name".into()));
        }
        if options.timeout.is_zero() {
            return Err(LlmError::Config(
                "the request timeout must be positive".into(),
            ));
        }
        options.api_key = options
            .api_key
            .map(|key| key.trim().to_string())
            .filter(|key| !key.is_empty());
        // async-openai unwraps the header it builds from the key: reject what would panic there.
        if let Some(key) = &options.api_key
            && (key.chars().any(|c| c.is_control()) || !key.is_ascii())
        {
            return Err(LlmError::Config(
                "the API key contains characters an HTTP header cannot carry".into(),
            ));
        }
        let http = http_client(options.timeout)?;
        // `OpenAIConfig::new()` reads OPENAI_API_KEY, OPENAI_ORG_ID and OPENAI_PROJECT_ID from the
        // environment: every one is overridden, so only our settings reach the wire.
        let config = OpenAIConfig::new()
            .with_api_base(options.base_url.clone())
            .with_api_key(options.api_key.clone().unwrap_or_default())
            .with_org_id("")
            .with_project_id("");
        // `build` installs async-openai's retrying executor; `with_http_service` replaces it with
        // one that sends each request exactly once.
        let inner = async_openai::Client::build(http.clone(), config)
            .with_http_service(SendOnce::new(http));
        Ok(Self { inner, options })
    }

    /// The model asked.
    pub fn model(&self) -> &str {
        &self.options.model
    }

    /// The options the client was built from.
    pub fn options(&self) -> &ClientOptions {
        &self.options
    }

    /// Asks once (retrying per the policy) with no deadline beyond the request timeout.
    pub async fn chat(&self, request: &ChatRequest) -> Result<ChatAnswer, LlmError> {
        self.chat_until(request, None).await
    }

    /// Asks, giving up at `deadline`: no attempt starts after it, no attempt runs past it, and no
    /// backoff sleeps through it.
    pub async fn chat_until(
        &self,
        request: &ChatRequest,
        deadline: Option<Instant>,
    ) -> Result<ChatAnswer, LlmError> {
        let span = tracing::info_span!(
            "llm.chat",
            model = %self.options.model,
            messages = request.messages.len(),
            tools = request.tools.len(),
            structured = request.response_schema.is_some(),
            attempts = tracing::field::Empty,
            prompt_tokens = tracing::field::Empty,
            completion_tokens = tracing::field::Empty,
            latency_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let result = self
            .attempts(request, deadline)
            .instrument(span.clone())
            .await;
        match &result {
            Ok(answer) => {
                span.record("prompt_tokens", answer.usage.prompt_tokens);
                span.record("completion_tokens", answer.usage.completion_tokens);
                span.record("latency_ms", answer.latency.as_millis() as u64);
                span.record("outcome", "answered");
            }
            Err(error) => {
                span.record("outcome", error.reason());
            }
        }
        result
    }

    /// The chat request's attempts.
    async fn attempts(
        &self,
        request: &ChatRequest,
        deadline: Option<Instant>,
    ) -> Result<ChatAnswer, LlmError> {
        let wire = request.to_wire(&self.options.model, self.options.temperature);
        let secret = self.options.api_key.as_deref();
        self.retrying(
            deadline,
            || async {
                self.inner
                    .chat()
                    .create_byot::<_, Value>(wire.clone())
                    .await
            },
            |body, latency| {
                ChatAnswer::from_body(body, latency)
                    .map_err(|why| LlmError::Unparsable(redact(&why, secret)))
            },
        )
        .await
    }

    /// Embeds `inputs` with the client's model at the `/embeddings` endpoint, one vector per
    /// input in input order, under the same retry policy and timeout as a chat request.
    /// `dimensions` is sent only when set (models that cannot shorten their vectors reject it).
    pub async fn embed(
        &self,
        inputs: &[String],
        dimensions: Option<u32>,
    ) -> Result<Vec<Vec<f32>>, LlmError> {
        let span = tracing::info_span!(
            "llm.embed",
            model = %self.options.model,
            inputs = inputs.len(),
            attempts = tracing::field::Empty,
        );
        let mut wire = serde_json::json!({
            "model": self.options.model,
            "input": inputs,
            "encoding_format": "float",
        });
        if let Some(dimensions) = dimensions {
            wire["dimensions"] = dimensions.into();
        }
        let expected = inputs.len();
        self.retrying(
            None,
            || async {
                self.inner
                    .embeddings()
                    .create_byot::<_, Value>(wire.clone())
                    .await
            },
            |body, _latency| {
                crate::embeddings::vectors(body, expected).map_err(LlmError::Unparsable)
            },
        )
        .instrument(span)
        .await
    }

    /// The bounded retry loop around one kind of request: `send` makes an attempt, `decode`
    /// reads a successful body (with the time since the first attempt).
    async fn retrying<T, Sent>(
        &self,
        deadline: Option<Instant>,
        send: impl Fn() -> Sent,
        decode: impl Fn(Value, std::time::Duration) -> Result<T, LlmError>,
    ) -> Result<T, LlmError>
    where
        Sent: std::future::Future<Output = Result<Value, async_openai::error::OpenAIError>>,
    {
        let started = Instant::now();
        let policy = self.options.retry;
        let secret = self.options.api_key.as_deref();
        for attempt in 1..=policy.max_attempts() {
            tracing::Span::current().record("attempts", attempt);
            let limit = match deadline {
                Some(deadline) => deadline
                    .saturating_duration_since(Instant::now())
                    .min(self.options.timeout),
                None => self.options.timeout,
            };
            if limit.is_zero() {
                return Err(LlmError::Budget(crate::BudgetLimit::WallTime));
            }
            let failure = match tokio::time::timeout(limit, send()).await {
                Err(_elapsed) => return Err(LlmError::Timeout { after: limit }),
                Ok(Ok(body)) => return decode(body, started.elapsed()),
                Ok(Err(error)) => classify(error, attempt, self.options.timeout, secret),
            };
            if !failure.retryable || attempt == policy.max_attempts() {
                return Err(failure.error);
            }
            let delay = failure
                .retry_after
                .unwrap_or_else(|| policy.backoff(attempt))
                .min(policy.max_backoff);
            if let Some(deadline) = deadline
                && Instant::now() + delay >= deadline
            {
                return Err(failure.error);
            }
            tracing::warn!(
                reason = failure.error.reason(),
                attempt,
                delay_ms = delay.as_millis() as u64,
                "model request failed; retrying"
            );
            tokio::time::sleep(delay).await;
        }
        // The loop returns on its last attempt; this is only reached with zero attempts, which
        // `max_attempts` rules out.
        Err(LlmError::Config("no attempt was allowed".into()))
    }

    /// Like [`Client::chat`], but an answer already stored under `key` is returned without
    /// asking (marked `cached`), and a new answer is stored under it.
    pub async fn chat_cached<C: ReplyCache>(
        &self,
        cache: &C,
        key: &str,
        request: &ChatRequest,
    ) -> Result<ChatAnswer, LlmError> {
        if let Some(answer) = cached(cache, key).await {
            return Ok(answer);
        }
        let answer = self.chat(request).await?;
        cache.put(key, &answer).await;
        Ok(answer)
    }

    /// One step of a round: checked against `budget` before, served from `cache` when this step
    /// was answered before (a retried activity), charged to `budget` after.
    ///
    /// A cached answer is charged like a fresh one, so a resumed round spends what the first
    /// attempt spent and takes the same decisions; it is served even past the wall-time
    /// deadline (it costs no time). A failed call is charged as a call with no tokens. The
    /// request's completion cap is lowered to the tokens left (a request without one gets
    /// [`DEFAULT_COMPLETION_CAP`] or the tokens left, whichever is lower: sending the whole round
    /// budget as a cap could exceed a model's own output limit and earn a 400), and the call
    /// ends by the budget's deadline.
    pub async fn chat_in_round<C: ReplyCache>(
        &self,
        budget: &Budget,
        cache: &C,
        key: &str,
        request: &ChatRequest,
    ) -> Result<ChatAnswer, LlmError> {
        budget.check_spend()?;
        if let Some(answer) = cached(cache, key).await {
            budget.record(&answer.usage);
            return Ok(answer);
        }
        budget.check_time()?;
        let left = u32::try_from(budget.tokens_left()).unwrap_or(u32::MAX);
        let capped;
        let request = match request.max_tokens {
            Some(max) if max <= left => request,
            asked => {
                capped = ChatRequest {
                    max_tokens: Some(left.min(asked.unwrap_or(DEFAULT_COMPLETION_CAP))),
                    ..request.clone()
                };
                &capped
            }
        };
        match self.chat_until(request, Some(budget.deadline())).await {
            Ok(answer) => {
                budget.record(&answer.usage);
                cache.put(key, &answer).await;
                Ok(answer)
            }
            Err(error) => {
                if !matches!(error, LlmError::Budget(_)) {
                    budget.record(&crate::Usage::default());
                }
                Err(error)
            }
        }
    }
}

async fn cached<C: ReplyCache>(cache: &C, key: &str) -> Option<ChatAnswer> {
    let mut answer = cache.get(key).await?;
    answer.cached = true;
    tracing::debug!(key, "model answer served from the reply cache");
    Some(answer)
}
