//! The model path: after the deterministic round, any OpenAI-compatible model may read the
//! evidence, call the same read-only tools inside the same budgets, write a structured summary
//! and give a verdict. It only ever adds grounded text: every model claim passes the quote
//! check the detectors' claims pass (unsupported claims are dropped and recorded; a cause with
//! no surviving claim is not shown), a model's cause is never "confirmed" (only a detector
//! verifies), and the deterministic judge still decides first.
//!
//! - [`refine`] runs it over a finished round's state and returns the state to post. Any model
//!   failure — timeout, HTTP error after retries, refusal, unparsable or schema-invalid output,
//!   `finish_reason=length`, a spent budget — returns the deterministic state unchanged with a
//!   [`ModelRun`] saying why, so a round never goes silent because of its model.
//! - `fence`: untrusted text is wrapped in a per-run random tag and stays data.
//! - `tools`: the capabilities the model may call, with strict argument schemas.
//! - `schema`: the summary and verdict the model answers with.
//! - `prompt`: what the model is told.
//!
//! Every model answer is cached per round and step (the caller's [`ReplyCache`]), and tool
//! calls go through the round's tool cache, so a retried attempt asks neither again.

mod fence;
mod prompt;
mod schema;
mod tools;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use tracing::Instrument;

use firstline_llm::{
    Budget, BudgetLimits, ChatAnswer, ChatRequest, Client, ClientOptions, FinishReason, LlmError,
    Message, ReplyCache, ToolSpec, parse_structured,
};

use crate::ask;
use crate::detectors::Confidence;
use crate::evidence::EvidenceId;
use crate::investigate::{Collector, InvestigateOptions, StepOutcome};
use crate::judge::{MAX_QUESTIONS, check_claim, judge_report, presents_as_confirmed};
use crate::model_run::ModelRun;
use crate::report::{Cause, Claim, Report, UnsupportedClaim};
use crate::state::IncidentState;
use crate::tools::EvidenceSource;
use firstline_model::Question;

pub use fence::Fence;
pub use schema::{Decision, ModelCause, ModelClaim, ModelConfidence, ModelSummary, ModelVerdict};

/// A tool result longer than this is refused with "narrow the query" rather than cut to an
/// excerpt the model cannot see the rest of.
const OVERSIZED_CHARS: usize = 20_000;
/// A model claim's quote must hold at least this many non-space characters: `error` occurs in
/// most evidence and proves nothing.
const MIN_QUOTE_CHARS: usize = 12;
/// Longest question the model may add.
const MAX_QUESTION_CHARS: usize = 300;
/// Completion tokens each step may ask for: an investigation step picks a tool or says it is
/// done; the summary is a few short causes; the verdict a decision and three questions. A small
/// model on one CPU thread writes about 13 tokens a second, so these also bound a step's time.
const INVESTIGATE_COMPLETION: u32 = 384;
const SUMMARY_COMPLETION: u32 = 1024;
const VERDICT_COMPLETION: u32 = 256;

/// Which steps the model takes (`llm.investigate`, `llm.summarise`, `llm.judge`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Switches {
    pub investigate: bool,
    pub summarise: bool,
    pub judge: bool,
}

/// A configured model and the per-round limits it runs within.
#[derive(Debug, Clone)]
pub struct ModelPath {
    client: Client,
    limits: BudgetLimits,
    switches: Switches,
    /// Characters of evidence in the model's opening context (`llm.context_chars`).
    context_chars: usize,
}

impl ModelPath {
    /// The model path `llm` configures, or `None` when no model is configured (`base_url`
    /// empty): the round stays deterministic.
    pub fn from_settings(llm: &firstline_config::LlmSettings) -> Result<Option<Self>, LlmError> {
        if !llm.enabled() {
            return Ok(None);
        }
        let mut options = ClientOptions::new(llm.base_url.clone(), llm.model.clone());
        options.api_key = Some(llm.api_key.expose().trim().to_string()).filter(|k| !k.is_empty());
        options.timeout = Duration::from_secs(llm.request_timeout_secs);
        options.temperature = llm.temperature;
        let limits = BudgetLimits {
            max_model_calls: llm.max_model_calls,
            max_tool_calls: llm.max_tool_calls,
            max_tokens: u64::from(llm.max_tokens),
            wall_time: Duration::from_secs(llm.budget_secs),
        };
        let switches = Switches {
            investigate: llm.investigate,
            summarise: llm.summarise,
            judge: llm.judge,
        };
        Ok(Some(
            Self::new(Client::new(options)?, limits, switches)
                .with_context_chars(llm.context_chars),
        ))
    }

    /// A model path over `client`.
    pub fn new(client: Client, limits: BudgetLimits, switches: Switches) -> Self {
        Self {
            client,
            limits,
            switches,
            context_chars: firstline_config::LlmSettings::default().context_chars,
        }
    }

    /// The same, with `chars` characters of evidence in the opening context.
    pub fn with_context_chars(mut self, chars: usize) -> Self {
        self.context_chars = chars;
        self
    }

    /// The model's name.
    pub fn model(&self) -> &str {
        self.client.model()
    }
}

/// Runs the model path over a finished deterministic round. `cache_prefix` names the round
/// (`<thread>/<round>`); answers are cached under it per step. Returns the state to post, with
/// [`IncidentState::model`] set.
pub async fn refine<E: EvidenceSource, C: ReplyCache>(
    path: &ModelPath,
    source: &E,
    cache: &C,
    cache_prefix: &str,
    state: &IncidentState,
    options: &InvestigateOptions,
) -> IncidentState {
    let span = tracing::info_span!(
        "incident.model",
        model = path.model(),
        fallback = tracing::field::Empty,
        model_calls = tracing::field::Empty,
        tool_calls = tracing::field::Empty,
    );
    async {
        if state.report.as_ref().is_some_and(|r| r.heartbeat.is_some()) {
            // A heartbeat fires on purpose: nothing for a model to read or say.
            let mut done = state.clone();
            done.model = Some(ModelRun {
                model: path.model().to_string(),
                fallback: Some(crate::model_run::HEARTBEAT.to_string()),
                ..ModelRun::default()
            });
            return done;
        }
        let tool_room = options
            .max_tool_calls
            .saturating_sub(state.usage.tool_calls)
            .min(path.limits.max_tool_calls);
        let budget = Budget::new(BudgetLimits {
            max_tool_calls: tool_room,
            ..path.limits
        });
        let mut run = Round {
            path,
            cache,
            prefix: cache_prefix,
            budget: &budget,
            fence: Fence::random(),
            messages: Vec::new(),
            latency: Duration::ZERO,
            work: state.clone(),
            dropped: Vec::new(),
            asked: false,
            tool_calls: 0,
        };
        let outcome = run.run(source, options).await;
        let spent = budget.spent();
        let mut model = ModelRun {
            model: path.model().to_string(),
            model_calls: spent.model_calls,
            tool_calls: run.tool_calls,
            prompt_tokens: spent.prompt_tokens,
            completion_tokens: spent.completion_tokens,
            latency_ms: u64::try_from(run.latency.as_millis()).unwrap_or(u64::MAX),
            ..ModelRun::default()
        };
        let current = tracing::Span::current();
        current.record("model_calls", spent.model_calls);
        current.record("tool_calls", run.tool_calls);
        let mut done = match outcome {
            Ok(()) => {
                model.dropped_claims = run.dropped;
                model.asked = run.asked;
                let mut work = run.work;
                work.usage.model_calls = work.usage.model_calls.saturating_add(spent.model_calls);
                work.usage.prompt_tokens = work.usage.prompt_tokens.saturating_add(spent.prompt_tokens);
                work.usage.completion_tokens =
                    work.usage.completion_tokens.saturating_add(spent.completion_tokens);
                work
            }
            Err(error) => {
                tracing::warn!(reason = error.reason(), %error, "model path fell back to the deterministic round");
                current.record("fallback", error.reason());
                model.fallback = Some(error.reason().to_string());
                model.detail = Some(cut(&error.to_string(), 300));
                // The round stands as it was, but what the model path spent is counted.
                let mut kept = state.clone();
                kept.usage.tool_calls = kept.usage.tool_calls.saturating_add(run.tool_calls);
                kept.usage.model_calls = kept.usage.model_calls.saturating_add(spent.model_calls);
                kept.usage.prompt_tokens =
                    kept.usage.prompt_tokens.saturating_add(spent.prompt_tokens);
                kept.usage.completion_tokens = kept
                    .usage
                    .completion_tokens
                    .saturating_add(spent.completion_tokens);
                kept
            }
        };
        done.model = Some(model);
        done
    }
    .instrument(span)
    .await
}

/// One model run's working state.
struct Round<'a, C> {
    path: &'a ModelPath,
    cache: &'a C,
    prefix: &'a str,
    budget: &'a Budget,
    fence: Fence,
    messages: Vec<Message>,
    latency: Duration,
    /// The round being refined.
    work: IncidentState,
    dropped: Vec<UnsupportedClaim>,
    asked: bool,
    /// Tool calls the model's requests made (sent, not refused), so far.
    tool_calls: u32,
}

impl<C: ReplyCache> Round<'_, C> {
    async fn run<E: EvidenceSource>(
        &mut self,
        source: &E,
        options: &InvestigateOptions,
    ) -> Result<(), LlmError> {
        let switches = self.path.switches;
        self.messages = vec![
            Message::system(prompt::system(&self.fence)),
            Message::user(prompt::context(
                &self.work,
                &self.fence,
                self.path.context_chars,
            )),
        ];
        if switches.investigate {
            self.investigate(source, options).await?;
        }
        if switches.summarise {
            self.summarise().await?;
        }
        let Some(report) = self.work.report.clone() else {
            return Ok(());
        };
        let mut verdict = judge_report(
            &report,
            &self.work.evidence,
            &self.work.findings,
            &self.work,
        );
        if verdict.grounded && switches.judge {
            let answer: ModelVerdict = self
                .structured("judge", prompt::judge(&report, &self.fence))
                .await?;
            let questions: Vec<Question> = answer
                .questions
                .iter()
                .map(|q| cut(q.trim(), MAX_QUESTION_CHARS))
                .filter(|q| !q.is_empty())
                .map(Question::free)
                .take(MAX_QUESTIONS)
                .collect();
            // An "ask" with nothing to ask is no reason to hold back a grounded report.
            if answer.decision == Decision::Ask && !questions.is_empty() {
                self.asked = true;
                verdict.grounded = false;
                verdict.reason = format!(
                    "the model asked before posting: {}",
                    cut(&answer.reason, MAX_QUESTION_CHARS)
                );
                verdict.questions = questions;
            }
        }
        self.work.questions = if verdict.grounded {
            Vec::new()
        } else {
            self.work.verdict = Some(verdict.clone());
            ask::questions(&self.work)
        };
        self.work.verdict = Some(verdict);
        Ok(())
    }

    /// Tool-using steps: the model may read more, one step at a time, inside the budgets. The
    /// last allowed step offers no tools.
    async fn investigate<E: EvidenceSource>(
        &mut self,
        source: &E,
        options: &InvestigateOptions,
    ) -> Result<(), LlmError> {
        let switches = self.path.switches;
        let reserved = u32::from(switches.summarise) + u32::from(switches.judge);
        let steps = self.budget.model_calls_left().saturating_sub(reserved);
        if steps == 0 {
            return Ok(());
        }
        let all_tools = tools::offered(|c| source.supports(c));
        let window = tools::ToolWindow {
            anchor: self.work.alert.anchor().unwrap_or_else(chrono::Utc::now),
            tail_lines: options.tail_lines,
        };
        let first_id = u32::try_from(self.work.evidence.len())
            .unwrap_or(u32::MAX - 1)
            .saturating_add(1);
        let collector_options = InvestigateOptions {
            max_tool_calls: self.budget.tool_calls_left(),
            time_budget: self
                .budget
                .deadline()
                .saturating_duration_since(Instant::now()),
            ..options.clone()
        };
        let mut collector = Collector::new(source, &collector_options, first_id);
        let mut asked: BTreeMap<String, String> = BTreeMap::new();
        for step in 0..steps {
            let last = step + 1 == steps || self.budget.tool_calls_left() == 0;
            let offered: Vec<ToolSpec> = if last { Vec::new() } else { all_tools.clone() };
            let request = ChatRequest::new(self.messages.clone())
                .with_tools(offered.clone())
                .with_max_tokens(INVESTIGATE_COMPLETION);
            let answer = self.ask(&format!("investigate/{step}"), &request).await?;
            if answer.tool_calls.is_empty() {
                if let Some(refusal) = &answer.refusal {
                    return Err(LlmError::Refusal(cut(refusal, 200)));
                }
                // Prose cut off at the step's cap ends the investigation, not the run: the
                // summary is asked next, without the unfinished text.
                if answer.finish_reason != FinishReason::Length {
                    self.messages.push(Message::from_answer(&answer));
                }
                break;
            }
            self.messages.push(Message::from_answer(&answer));
            for call in &answer.tool_calls {
                let result = self
                    .call_tool(&mut collector, &offered, &window, &mut asked, call)
                    .await;
                self.tool_calls = collector.calls;
                self.messages.push(Message::tool(call.id.clone(), result));
            }
            if last {
                break;
            }
        }
        self.work.usage.tool_calls = self.work.usage.tool_calls.saturating_add(collector.calls);
        self.work.evidence.extend(collector.evidence);
        self.work.missing.extend(collector.missing);
        self.work.plan.extend(collector.plan);
        Ok(())
    }

    /// One tool call: refused when not offered, malformed, repeated or over budget; otherwise
    /// made through the tool layer, its answer an evidence item the model sees by id.
    async fn call_tool<E: EvidenceSource>(
        &mut self,
        collector: &mut Collector<'_, E>,
        offered: &[ToolSpec],
        window: &tools::ToolWindow,
        asked: &mut BTreeMap<String, String>,
        call: &firstline_llm::ToolCall,
    ) -> String {
        let request = match tools::request(offered, &call.name, &call.arguments, window) {
            Ok(request) => request,
            Err(why) => return format!("refused: {why}"),
        };
        let key = serde_json::to_string(&request).unwrap_or_default();
        if let Some(earlier) = asked.get(&key) {
            return format!("refused: you already made this call; its answer is {earlier}");
        }
        if self.budget.take_tool_call().is_err() {
            return "refused: the round's tool-call budget is spent; answer from the evidence you have"
                .to_string();
        }
        let label = request.capability().label().to_string();
        let text = collector
            .fetch(request, format!("the model asked for it ({})", call.name))
            .await;
        let outcome = collector.plan.last().map(|s| s.outcome.clone());
        let result = match (outcome, text) {
            (Some(StepOutcome::Evidence(id)), Some(text)) => {
                if text.chars().count() > OVERSIZED_CHARS {
                    format!(
                        "refused: the answer ({id}) is {} characters, too large to read here; \
                         narrow the query (a label selector, one container, a shorter window)",
                        text.chars().count()
                    )
                } else {
                    let excerpt = collector
                        .evidence
                        .iter()
                        .find(|e| e.id == id)
                        .map_or(String::new(), |e| e.excerpt.clone());
                    self.fence.wrap(&format!("{id} {label}"), &excerpt)
                }
            }
            (Some(StepOutcome::Missing(reason)), _) => {
                format!("error: {}", self.fence.wrap("tool error", &reason))
            }
            (Some(StepOutcome::OverBudget | StepOutcome::OutOfTime), _) => {
                "refused: the round's budget is spent; answer from the evidence you have"
                    .to_string()
            }
            (Some(StepOutcome::NotConfigured), _) => {
                "refused: no configured server offers this".to_string()
            }
            _ => "refused: this request was already answered this round".to_string(),
        };
        asked.insert(key, first_line(&result));
        result
    }

    /// The structured summary: its grounded claims join the report.
    async fn summarise(&mut self) -> Result<(), LlmError> {
        let summary: ModelSummary = self.structured("summarise", prompt::summarise()).await?;
        let Some(report) = self.work.report.as_mut() else {
            return Ok(());
        };
        let (causes, dropped) = ground(summary.causes, &self.work.evidence, report);
        self.dropped.extend(dropped);
        let (observations, dropped) = ground(summary.observations, &self.work.evidence, report);
        self.dropped.extend(dropped);
        // Detector-confirmed causes stay first; the model's readings follow them.
        let confirmed = report.causes.iter().take_while(|c| c.confirmed).count();
        report.causes.splice(confirmed..confirmed, causes);
        report.observations.extend(observations);
        Ok(())
    }

    /// A structured step: `instruction` appended, the answer decoded as `T`.
    async fn structured<T: schemars::JsonSchema + serde::de::DeserializeOwned>(
        &mut self,
        step: &str,
        instruction: String,
    ) -> Result<T, LlmError> {
        let schema =
            schema::schema_of::<T>().map_err(|e| LlmError::Config(format!("schema: {e}")))?;
        let mut messages = self.messages.clone();
        messages.push(Message::user(instruction));
        let cap = if step == "judge" {
            VERDICT_COMPLETION
        } else {
            SUMMARY_COMPLETION
        };
        let request = ChatRequest::new(messages)
            .with_schema(step.replace('/', "_"), schema)
            .with_max_tokens(cap);
        let answer = self.ask(step, &request).await?;
        parse_structured(&answer)
    }

    async fn ask(&mut self, step: &str, request: &ChatRequest) -> Result<ChatAnswer, LlmError> {
        let key = format!("{}/{step}", self.prefix);
        let answer = self
            .path
            .client
            .chat_in_round(self.budget, self.cache, &key, request)
            .await?;
        if !answer.cached {
            self.latency += answer.latency;
        }
        Ok(answer)
    }
}

/// `text` cut to `max` characters.
fn cut(text: &str, max: usize) -> String {
    firstline_model::text::clip(text, max, "…")
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    // An evidence answer starts with its fence: name the id instead.
    match line.split_whitespace().nth(1) {
        Some(id) if line.starts_with('<') => id.to_string(),
        _ => cut(line, 80),
    }
}

/// The model's causes as report causes, each claim quote-checked against the evidence it
/// cites: unsupported claims are dropped (and returned with why), a cause with no claim left
/// is dropped, and so is one worded as confirmed. A cause the report already shows (every
/// quote already cited) is not repeated.
fn ground(
    causes: Vec<ModelCause>,
    evidence: &[crate::evidence::Evidence],
    report: &Report,
) -> (Vec<Cause>, Vec<UnsupportedClaim>) {
    let mut kept = Vec::new();
    let mut dropped = Vec::new();
    let shown: Vec<String> = report.claims().map(|c| c.quote.clone()).collect();
    for cause in causes {
        let mut claims = Vec::new();
        for claim in cause.claims {
            let ids: Result<Vec<EvidenceId>, _> = claim
                .evidence
                .iter()
                .map(|id| id.trim().parse::<EvidenceId>())
                .collect();
            let quoted = claim.quote.chars().filter(|c| !c.is_whitespace()).count();
            let checked = match ids {
                Ok(_) if quoted < MIN_QUOTE_CHARS => Err(format!(
                    "its quote is shorter than {MIN_QUOTE_CHARS} characters"
                )),
                Ok(ids) => check_claim(&ids, &claim.quote, evidence).map(|()| ids),
                Err(_) => Err(format!(
                    "cites {:?}, which are not evidence ids",
                    claim.evidence
                )),
            };
            match checked {
                Ok(ids) => claims.push(Claim {
                    statement: cut(&claim.statement, 400),
                    evidence: ids,
                    quote: claim.quote,
                }),
                Err(reason) => dropped.push(UnsupportedClaim {
                    statement: cut(&claim.statement, 400),
                    reason,
                }),
            }
        }
        let statement = cut(&cause.statement, 400);
        if claims.is_empty() {
            dropped.push(UnsupportedClaim {
                statement,
                reason: "no claim of it survived the quote check".to_string(),
            });
            continue;
        }
        let candidate = Cause {
            statement,
            detail: "The model's reading of the evidence; no detector verified it.".to_string(),
            detector: None,
            confidence: match cause.confidence {
                ModelConfidence::Low => Confidence::Low,
                ModelConfidence::Medium | ModelConfidence::High => Confidence::Medium,
            },
            confirmed: false,
            claims,
            explains: Vec::new(),
            led_by: Vec::new(),
        };
        if presents_as_confirmed(&candidate) {
            dropped.push(UnsupportedClaim {
                statement: candidate.statement,
                reason: "presented as confirmed; only a detector verifies".to_string(),
            });
            continue;
        }
        if candidate.claims.iter().all(|c| shown.contains(&c.quote)) {
            continue;
        }
        kept.push(candidate);
    }
    (kept, dropped)
}
