//! `firstline investigate`: one round of the incident graph, in-process, on an alert from a
//! file — the same graph the worker runs, against the MCP servers in configuration (`mcp.*`),
//! with no Slack, Kafka or Temporal. Prints the text that would be posted (or `--json`).
//!
//! The database (`database.url`) is optional here: with it, recall searches past incidents of
//! `--team` and tool calls are cached and audited; without it (or with `--no-db`) the round
//! runs with "memory unavailable".

use std::io::Read as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use firstline_activities::incident::{
    AlertInput, GraphOptions, IncidentState, RoundResult, ThreadContext, build_incident_graph,
    render_markdown, run_round,
};
use firstline_activities::tools::{CallScope, McpTools};
use firstline_config::Settings;
use firstline_store::PgPool;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The alert message as posted in Slack (`-` reads standard input).
    #[arg(long, value_name = "FILE")]
    alert_file: PathBuf,
    /// Print the whole result (report, verdict, evidence, usage) as JSON.
    #[arg(long)]
    json: bool,
    /// Slack workspace (team id) whose past incidents recall searches.
    #[arg(long, value_name = "TEAM_ID")]
    team: Option<String>,
    /// Run without the database: no recall, no tool cache, no audit rows.
    #[arg(long)]
    no_db: bool,
}

pub async fn run(settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let text = read_alert(&args.alert_file)?;
    let pool = if args.no_db {
        None
    } else {
        connect(&settings).await
    };
    let tools = McpTools::from_settings(&settings.mcp, pool.clone())
        .context("configuring the MCP tools (mcp.*)")?;
    // A fresh cache scope per run: a second run must not be served the first run's results.
    let scope = CallScope::adhoc(format!(
        "investigate-{}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.9fZ")
    ));
    let source = Arc::new(tools.round(scope));
    let graph = build_incident_graph(source, pool, GraphOptions::default())
        .context("building the incident graph")?;

    let context = ThreadContext {
        team_id: args.team,
        ..ThreadContext::default()
    };
    let input = IncidentState::new(AlertInput::parse(text, Some(chrono::Utc::now())), context);
    let outcome = run_round(&graph, input).await;
    tools.shutdown().await;
    let done = outcome.map_err(|e| anyhow::anyhow!("the incident graph failed: {e}"))?;

    if args.json {
        let json = serde_json::to_string_pretty(&RoundResult::from_state(&done))
            .context("serialising the result")?;
        println!("{json}");
    } else {
        print!("{}", render_markdown(&done));
    }
    Ok(ExitCode::SUCCESS)
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
