//! `firstline investigate`: one round of the incident graph, in-process, on an alert from a
//! file — the same graph the worker runs, against the MCP servers in configuration (`mcp.*`),
//! with no Slack, Kafka or Temporal. Prints the text that would be posted (or `--json`), or
//! with `--plan` the evidence plan as it ran: every request, why it was made, what came back.
//!
//! `--scenario NAME` investigates a lab scenario instead (`lab/scenarios/NAME`, or a path to
//! one): its world is served by the lab MCP server in-process on a random port and the round
//! runs against it over real MCP with the `lab` profile, as `firstline eval` does.
//!
//! `--ask TEXT` stands for a person's mention in the thread ("check payments-db", "is it the
//! deploy?"): the round starts from the object it names (the plan says so) and the reply's first
//! line answers its question.
//!
//! `--model` runs the finished round through the model path (`[llm]`, the configured
//! OpenAI-compatible endpoint) over the same tools and prints the refined text instead (with
//! `--json`, the refined result, whose `model` says what the model did or why it fell back);
//! the model's accounting goes to standard error.
//!
//! The database (`database.url`) is optional here: with it, recall searches past incidents of
//! `--team` and tool calls are cached and audited; without it (or with `--no-db`) the round
//! runs with "memory unavailable".

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use firstline_config::Settings;
use firstline_embed::Embedder;
use firstline_investigation::investigate::render_plan;
use firstline_investigation::model_path::{ModelPath, refine};
use firstline_investigation::model_run::ModelRun;
use firstline_investigation::steer::{self, Steering};
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, Memory, RoundResult, build_incident_graph,
    render_markdown, run_round,
};
use firstline_lab::Scenario;
use firstline_llm::MemoryCache;
use firstline_model::{MentionSignal, ThreadContext};
use firstline_store::PgPool;

use crate::eval::model_path;
use crate::eval::runner::{RunOptions, investigate_in_lab, scenario_alert};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The alert message as posted in Slack (`-` reads standard input).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "scenario",
        conflicts_with = "scenario"
    )]
    alert_file: Option<PathBuf>,
    /// A lab scenario (`lab/scenarios/NAME` or a directory path), served in-process.
    #[arg(long, value_name = "NAME")]
    scenario: Option<String>,
    /// Print the whole result (report, verdict, evidence, usage) as JSON.
    #[arg(long, conflicts_with = "plan")]
    json: bool,
    /// Print the evidence plan as it ran (each request, why, what came back), then the report.
    #[arg(long)]
    plan: bool,
    /// Slack workspace (team id) whose past incidents recall searches. Not with `--scenario`,
    /// whose past incidents go under a team id of their own.
    #[arg(long, value_name = "TEAM_ID", conflicts_with = "scenario")]
    team: Option<String>,
    /// Run without the database: no recall, no tool cache, no audit rows.
    #[arg(long)]
    no_db: bool,
    /// Refine the round with the model path (`[llm]`) and print the refined result.
    #[arg(long)]
    model: bool,
    /// A person's mention the round answers ("check payments-db", "is it the deploy?").
    #[arg(long, value_name = "TEXT")]
    ask: Option<String>,
}

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let model = if args.model {
        Some(model_path(&settings)?)
    } else {
        None
    };
    let pool = if args.no_db {
        None
    } else {
        connect(&settings).await
    };
    let embedder = match &pool {
        Some(pool) => optional_embedder(&settings, pool).await,
        None => None,
    };
    let team = args.team.clone();
    let steering = match args.ask.as_deref() {
        Some(text) => Some(
            steer::read(&[MentionSignal {
                user: "cli".into(),
                text: text.to_string(),
                ts: String::new(),
                clicked: false,
            }])
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "--ask {text:?} names no object to look at and asks no hypothesis \
                     (try \"check NAME\" or \"is it the deploy?\")"
                )
            })?,
        ),
        None => None,
    };
    let done = match (&args.scenario, &args.alert_file) {
        (Some(name), _) => {
            investigate_scenario(&settings, pool, embedder, name, team, model, steering).await?
        }
        (None, Some(file)) => {
            investigate_alert(&settings, pool, embedder, file, team, model, steering).await?
        }
        (None, None) => anyhow::bail!("give --alert-file or --scenario"),
    };
    if let Some(run) = &done.model {
        eprintln!("{}", accounting(run));
    }
    if args.json {
        let json = serde_json::to_string_pretty(&RoundResult::from_state(&done))
            .context("serialising the result")?;
        println!("{json}");
    } else if args.plan {
        println!(
            "Evidence plan ({} tool calls of at most {}):",
            done.usage.tool_calls, settings.round.max_tool_calls
        );
        print!("{}", render_plan(&done.plan));
        println!();
        print!("{}", render_markdown(&done));
    } else {
        print!("{}", render_markdown(&done));
    }
    Ok(ExitCode::SUCCESS)
}

/// The lab scenario `name`, served in-process and investigated over MCP.
async fn investigate_scenario(
    settings: &Settings,
    pool: Option<PgPool>,
    embedder: Option<Arc<dyn Embedder>>,
    name: &str,
    team: Option<String>,
    model: Option<ModelPath>,
    steering: Option<Steering>,
) -> anyhow::Result<IncidentState> {
    let dir = resolve_scenario(name)?;
    let scenario = Scenario::load(&dir).map_err(|e| anyhow::anyhow!("{e}"))?;
    let run_id = chrono::Utc::now().format("%Y%m%dT%H%M%S%.6f").to_string();
    let team = team.unwrap_or_else(|| format!("investigate-{run_id}-{}", scenario.name));
    let options = RunOptions {
        graph: GraphOptions::from_settings(&settings.round),
        mcp: settings.mcp.clone(),
        call_timeout: std::time::Duration::from_secs(settings.mcp.call_timeout_secs.max(1)),
        run_id,
        model,
        embedder,
        steering,
    };
    let alert = scenario_alert(&scenario);
    let (round, notes) = investigate_in_lab(&scenario, alert, pool.as_ref(), &team, &options)
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    for note in notes {
        eprintln!("warning: {note}");
    }
    Ok(round.refined.unwrap_or(round.state))
}

/// The embedding model for recall by meaning, or `None` with a warning (recall then matches by
/// keywords and identifiers, and its report says so).
pub(crate) async fn optional_embedder(
    settings: &Settings,
    pool: &PgPool,
) -> Option<Arc<dyn Embedder>> {
    match crate::embedding::load(settings, Some(pool)).await {
        Ok(embedder) => Some(embedder),
        Err(e) => {
            eprintln!("warning: recall without meaning: {e:#}");
            None
        }
    }
}

/// `name` as a scenario directory: a path to one, else `lab/scenarios/NAME` here or in the
/// source tree this binary was built from.
fn resolve_scenario(name: &str) -> anyhow::Result<PathBuf> {
    let candidates = [
        PathBuf::from(name),
        PathBuf::from("lab/scenarios").join(name),
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("lab/scenarios")
            .join(name),
    ];
    candidates
        .into_iter()
        .find(|dir| dir.join("scenario.yaml").is_file())
        .ok_or_else(|| {
            anyhow::anyhow!("no scenario {name}: expected lab/scenarios/{name}/scenario.yaml")
        })
}

/// An alert from a file, investigated against the MCP servers in configuration.
async fn investigate_alert(
    settings: &Settings,
    pool: Option<PgPool>,
    embedder: Option<Arc<dyn Embedder>>,
    alert_file: &PathBuf,
    team: Option<String>,
    model: Option<ModelPath>,
    steering: Option<Steering>,
) -> anyhow::Result<IncidentState> {
    let text = read_alert(alert_file)?;
    let tools = McpTools::from_settings(&settings.mcp, pool.clone())
        .context("configuring the MCP tools (mcp.*)")?;
    // A fresh cache scope per run: a second run must not be served the first run's results.
    let scope_name = format!(
        "investigate-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.9fZ")
    );
    let source = Arc::new(tools.round(CallScope::adhoc(scope_name.clone())));
    let options = GraphOptions::from_settings(&settings.round);
    let memory = pool.map(|pool| Memory::new(pool, embedder));
    let graph = build_incident_graph(Arc::clone(&source), memory, options.clone())
        .context("building the incident graph")?;

    let context = ThreadContext {
        team_id: team,
        ..ThreadContext::default()
    };
    let mut input = IncidentState::new(AlertInput::parse(text, Some(chrono::Utc::now())), context);
    input.steering = steering;
    let outcome = run_round(&graph, input).await;
    // The model path reads the finished round over the same tools, within what is left of the
    // round's budget.
    let outcome = match (outcome, &model) {
        (Ok(state), Some(model)) => Ok(refine(
            model,
            &*source,
            &MemoryCache::new(),
            &format!("{scope_name}/1"),
            &state,
            &options.investigate,
        )
        .await),
        (outcome, _) => outcome,
    };
    tools.shutdown().await;
    outcome.map_err(|e| anyhow::anyhow!("the incident graph failed: {e}"))
}

/// The model path's accounting, in one line.
fn accounting(run: &ModelRun) -> String {
    let outcome = match (&run.fallback, &run.detail) {
        (None, _) => "used".to_string(),
        (Some(reason), Some(detail)) => format!("fell back ({reason}: {detail})"),
        (Some(reason), None) => format!("fell back ({reason})"),
    };
    format!(
        "model {}: {outcome}; {} model calls, {} tool calls, {}+{} tokens, {} dropped claims, \
         {} ms model latency",
        run.model,
        run.model_calls,
        run.tool_calls,
        run.prompt_tokens,
        run.completion_tokens,
        run.dropped_claims.len(),
        run.latency_ms
    )
}

fn read_alert(path: &PathBuf) -> anyhow::Result<String> {
    let text = if path.as_os_str() == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the alert from standard input")?;
        text
    } else {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the alert file {}", path.display()))?
    };
    if text.trim().is_empty() {
        anyhow::bail!("the alert file {} is empty", path.display());
    }
    Ok(text)
}

/// The database, when it answers; otherwise a warning and `None`.
async fn connect(settings: &Settings) -> Option<PgPool> {
    match firstline_store::connect(&settings.database).await {
        Ok(pool) => Some(pool),
        Err(e) => {
            eprintln!(
                "warning: {e}; investigating without past incidents, tool cache or audit \
                 (--no-db silences this)"
            );
            None
        }
    }
}
