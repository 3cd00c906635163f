//! One case, end to end: load it, serve its world with the lab MCP server on a random local
//! port, write its past incidents (when there is a database), run the incident graph over real
//! MCP with the `lab` profile, and check the posted text against the case's expectation. With a
//! model (`--model`), the finished round is then refined by the model path over the same tools
//! and the refined text is checked the same way, beside the no-model result.

use std::net::{Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use firstline_config::{McpServerSettings, McpSettings};
use firstline_embed::Embedder;
use firstline_investigation::model_path::{ModelPath, refine};
use firstline_investigation::model_run::ModelRun;
use firstline_investigation::steer::Steering;
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, Memory, build_incident_graph, render_markdown,
    run_round,
};
use firstline_lab::{ExpectCheck, ExpectedVerdict, Reply, Scenario};
use firstline_llm::MemoryCache;
use firstline_model::{HumanAnswer, ThreadContext};
use firstline_store::PgPool;

use super::cases::{Case, CaseKind};
use super::{holmes, memory};

/// How long a closed MCP client gets to end its session before the lab server stops.
const SESSION_CLOSE_GRACE: Duration = Duration::from_millis(50);

/// Settings shared by every case of a run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// The graph's budgets (`round.*` settings).
    pub graph: GraphOptions,
    /// Limits (timeouts, result size) come from here; servers and bindings are the lab's.
    pub mcp: McpSettings,
    /// One lab tool call's limit.
    pub call_timeout: Duration,
    /// Distinguishes this run's team ids and cache scopes from earlier runs'.
    pub run_id: String,
    /// The model path every finished round is refined by (`--model`); `None`: no model.
    pub model: Option<ModelPath>,
    /// What a person's mention asks of the round (`investigate --ask`); `None` in eval.
    pub steering: Option<Steering>,
    /// Embeds the cases' past incidents and their alerts for recall by meaning; `None`: recall
    /// by keywords and identifiers.
    pub embedder: Option<Arc<dyn Embedder>>,
}

/// How a case ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Pass,
    Fail,
    /// Failed, and `--expect-fail` said it would.
    XFail,
    /// Passed although `--expect-fail` said it would fail: fails the run.
    XPass,
}

impl Status {
    pub fn label(self) -> &'static str {
        match self {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::XFail => "xfail",
            Status::XPass => "XPASS",
        }
    }
}

/// One row of the table.
#[derive(Debug, Clone)]
pub struct CaseOutcome {
    pub name: String,
    pub kind: CaseKind,
    pub expected: Option<ExpectedVerdict>,
    /// `Some(true)`: posted (grounded); `Some(false)`: asked; `None`: did not run.
    pub posted: Option<bool>,
    pub check: ExpectCheck,
    /// Calls the lab server received.
    pub tool_calls: u64,
    pub wall: Duration,
    /// Why the case could not run, or what was degraded (memory not written).
    pub error: Option<String>,
    pub notes: Vec<String>,
    pub status: Status,
    /// The text that would be posted.
    pub text: String,
    /// The model path's result (`--model`, and the round ran).
    pub model: Option<ModelOutcome>,
}

/// How the model path's refined text fared against the case's expectation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelStatus {
    Pass,
    /// Failed, as the no-model result did.
    Fail,
    /// Failed where the no-model result passed: fails the run.
    Regressed,
}

impl ModelStatus {
    pub fn label(self) -> &'static str {
        match self {
            ModelStatus::Pass => "pass",
            ModelStatus::Fail => "FAIL",
            ModelStatus::Regressed => "REGRESSED",
        }
    }
}

/// One case through the model path: the refined text checked as the no-model text is.
#[derive(Debug, Clone)]
pub struct ModelOutcome {
    pub status: ModelStatus,
    /// The refined round posts (grounded) rather than asks.
    pub posted: bool,
    pub check: ExpectCheck,
    /// What the model path did: fallback, calls, tokens, latency, dropped claims.
    pub run: ModelRun,
    /// The refined text that would be posted.
    pub text: String,
}

/// A finished round against the lab.
pub struct LabRound {
    pub state: IncidentState,
    /// Calls the lab server received during the deterministic round.
    pub tool_calls: u64,
    /// The round as the model path refined it, when a model was given.
    pub refined: Option<IncidentState>,
}

/// Runs `case`; never fails — a case that cannot run is a failed row saying why.
pub async fn run_case(
    case: &Case,
    pool: Option<&PgPool>,
    options: &RunOptions,
    expect_fail: bool,
) -> CaseOutcome {
    let started = Instant::now();
    let mut outcome = CaseOutcome {
        name: case.name.clone(),
        kind: case.kind,
        expected: None,
        posted: None,
        check: ExpectCheck::default(),
        tool_calls: 0,
        wall: Duration::ZERO,
        error: None,
        notes: Vec::new(),
        status: Status::Fail,
        text: String::new(),
        model: None,
    };
    let loaded = match case.kind {
        CaseKind::Scenario => Scenario::load(&case.dir)
            .map(|scenario| {
                let alert = scenario_alert(&scenario);
                (scenario, alert)
            })
            .map_err(|e| e.to_string()),
        CaseKind::Holmes => holmes::load(&case.name, &case.dir, Utc::now())
            .map(|loaded| {
                outcome.notes.extend(
                    loaded
                        .unmapped
                        .iter()
                        .map(|recording| format!("unmapped: {recording}")),
                );
                (loaded.scenario, loaded.alert)
            })
            .map_err(|e| format!("{e:#}")),
    };
    let mut refined = None;
    let mut expect = None;
    match loaded {
        Ok((scenario, alert)) => {
            outcome.expected = Some(scenario.spec.expect.verdict);
            let team_id = format!("eval-{}-{}", options.run_id, case.name);
            match investigate_in_lab(&scenario, alert, pool, &team_id, options).await {
                Ok((round, notes)) => {
                    let posted = round.state.grounded();
                    outcome.text = render_markdown(&round.state);
                    outcome.check = scenario.spec.expect.check(&Reply {
                        text: &outcome.text,
                        posted,
                        causes: &stated_causes(&round.state),
                    });
                    outcome.posted = Some(posted);
                    outcome.tool_calls = round.tool_calls;
                    outcome.notes.extend(notes);
                    refined = round.refined;
                }
                Err(e) => outcome.error = Some(e),
            }
            expect = Some(scenario.spec.expect);
        }
        Err(e) => outcome.error = Some(e),
    }
    outcome.wall = started.elapsed();
    let passed = outcome.error.is_none() && outcome.check.passed();
    outcome.status = match (passed, expect_fail) {
        (true, false) => Status::Pass,
        (false, false) => Status::Fail,
        (false, true) => Status::XFail,
        (true, true) => Status::XPass,
    };
    if let (Some(refined), Some(expect)) = (refined, expect) {
        let posted = refined.grounded();
        let text = render_markdown(&refined);
        let check = expect.check(&Reply {
            text: &text,
            posted,
            causes: &stated_causes(&refined),
        });
        let status = match (check.passed(), passed) {
            (true, _) => ModelStatus::Pass,
            (false, true) => ModelStatus::Regressed,
            (false, false) => ModelStatus::Fail,
        };
        outcome.model = Some(ModelOutcome {
            status,
            posted,
            check,
            run: refined.model.clone().unwrap_or_default(),
            text,
        });
    }
    outcome
}

/// The causes a round's reply states: none when it asks.
pub fn stated_causes(state: &IncidentState) -> Vec<String> {
    match &state.report {
        Some(report) if state.grounded() => {
            report.causes.iter().map(|c| c.statement.clone()).collect()
        }
        _ => Vec::new(),
    }
}

/// A scenario's alert, as the bot would receive it.
pub fn scenario_alert(scenario: &Scenario) -> AlertInput {
    AlertInput::parse(scenario.alert_text(), Some(scenario.alert_at))
}

/// Serves `scenario` on a random local port and runs one round of the incident graph against
/// it, with its past incidents in `pool` (if any) under `team_id` and its thread replies in the
/// thread context. Returns the round and notes on anything degraded.
pub async fn investigate_in_lab(
    scenario: &Scenario,
    alert: AlertInput,
    pool: Option<&PgPool>,
    team_id: &str,
    options: &RunOptions,
) -> Result<(LabRound, Vec<String>), String> {
    let mut notes = Vec::new();
    let pool = match pool {
        Some(pool) => match memory::insert_past_incidents(
            pool,
            options.embedder.as_deref(),
            team_id,
            scenario,
        )
        .await
        {
            Ok(_) => Some(pool.clone()),
            Err(e) => {
                notes.push(format!("without recall memory: {e}"));
                None
            }
        },
        None => None,
    };
    let lab =
        firstline_lab::serve_http(scenario.clone(), SocketAddr::from((Ipv4Addr::LOCALHOST, 0)))
            .await
            .map_err(|e| format!("starting the lab MCP server: {e}"))?;
    let settings = lab_settings(&options.mcp, lab.mcp_url(), options.call_timeout);
    let result = async {
        let tools = McpTools::from_settings(&settings, pool.clone())
            .map_err(|e| format!("configuring the lab MCP tools: {e}"))?;
        let scope_name = format!("eval-{}-{}", options.run_id, scenario.name);
        let source = Arc::new(tools.round(CallScope::adhoc(scope_name.clone())));
        let memory = pool.map(|pool| Memory::new(pool, options.embedder.clone()));
        let graph = build_incident_graph(Arc::clone(&source), memory, options.graph.clone())
            .map_err(|e| format!("building the incident graph: {e}"))?;
        let mut input = IncidentState::new(alert, thread_context(scenario, team_id));
        input.steering = options.steering.clone();
        let outcome = run_round(&graph, input).await;
        let tool_calls = lab.counts().total();
        // The model path reads the finished round and may call the same tools, within what is
        // left of the round's budget.
        let refined = match (&outcome, &options.model) {
            (Ok(state), Some(model)) => Some(
                refine(
                    model,
                    &*source,
                    &MemoryCache::new(),
                    &format!("{scope_name}/1"),
                    state,
                    &options.graph.investigate,
                )
                .await,
            ),
            _ => None,
        };
        tools.shutdown().await;
        let state = outcome.map_err(|e| format!("the incident graph failed: {e}"))?;
        Ok::<_, String>(LabRound {
            state,
            tool_calls,
            refined,
        })
    }
    .await;
    // Closing the client ends its MCP session with a DELETE sent from a background task; give
    // it a moment to reach the lab before the lab stops listening (bounded, local).
    tokio::time::sleep(SESSION_CLOSE_GRACE).await;
    lab.shutdown().await;
    Ok((result?, notes))
}

/// One `lab` server at `url`; timeouts and limits from `base`, the call timeout at most
/// `call_timeout`.
fn lab_settings(base: &McpSettings, url: String, call_timeout: Duration) -> McpSettings {
    McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(url),
            profile: Some("lab".into()),
            ..McpServerSettings::default()
        }],
        capabilities: Default::default(),
        call_timeout_secs: base.call_timeout_secs.min(call_timeout.as_secs()).max(1),
        connect_timeout_secs: base.connect_timeout_secs,
        max_result_bytes: base.max_result_bytes,
    }
}

/// The thread as the scenario describes it: its workspace, and the replies people wrote.
fn thread_context(scenario: &Scenario, team_id: &str) -> ThreadContext {
    let mut context = ThreadContext::for_team(team_id);
    context.human_answers = scenario
        .spec
        .thread_replies
        .iter()
        .map(|reply| {
            let at = reply.at.map_or(scenario.alert_at, |at| scenario.time(at));
            HumanAnswer {
                user: reply.user.clone(),
                text: reply.text.clone(),
                ts: format!("{}.{:06}", at.timestamp(), at.timestamp_subsec_micros()),
                question: None,
            }
        })
        .collect();
    context
}
