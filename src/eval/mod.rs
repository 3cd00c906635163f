//! `firstline eval DIR…`: measures investigation quality. Every case — one of our lab scenarios
//! (`lab/scenarios/<name>/scenario.yaml`) or one of HolmesGPT's investigation fixtures
//! (`investigate_request.json` + recorded `*.txt` tool calls + our `rubric.yaml`) — is served
//! by the lab MCP server in-process on a random port, investigated over real MCP with the `lab`
//! profile by the same incident graph the worker runs, and the text that would be posted is
//! checked against the case's `expect` block. A table (or `--json`) says what passed.
//!
//! - [`cases`]: finding cases in the given directories;
//! - [`holmes`]: the HolmesGPT adapter (request → alert, recordings → lab tool results);
//! - [`memory`]: past incidents into the database, per case under its own team id;
//! - [`runner`]: one case, end to end; [`table`]: the report.
//!
//! The exit code is non-zero when any case fails, or when a case named by `--expect-fail`
//! unexpectedly passes (`xpass`), so the list of known misses stays honest.
//!
//! `--model` also runs every finished round through the model path (`[llm]`, the configured
//! OpenAI-compatible endpoint) over the same lab tools, checks the refined text against the
//! same expectation, and reports it beside the no-model result: result, grounded, fallback
//! reason (or `used`), model and tool calls, tokens, model latency. A case the model fails where
//! the no-model result passed is a regression and fails the run.

pub mod cases;
pub mod holmes;
pub mod memory;
pub mod runner;
pub mod table;

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use firstline_config::{DatabaseUrl, Settings};
use firstline_investigation::model_path::ModelPath;
use firstline_store::PgPool;

use runner::{CaseOutcome, Status};

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Directories of scenarios or HolmesGPT cases, or single cases.
    #[arg(value_name = "DIR", required = true)]
    dirs: Vec<PathBuf>,
    /// A case (directory name) that is known to fail; it is reported as `xfail`, and as
    /// `xpass` (a failure of the run) if it passes.
    #[arg(long = "expect-fail", value_name = "NAME")]
    expect_fail: Vec<String>,
    /// Print the results as JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Use this database for recall memory instead of `database.url`.
    #[arg(long, value_name = "URL", env = "FIRSTLINE_EVAL_DATABASE_URL")]
    database_url: Option<String>,
    /// Run without the database (no recall memory).
    #[arg(long)]
    no_db: bool,
    /// Seconds one lab tool call may take (fault-injection cases wait this long).
    #[arg(long, value_name = "SECS", default_value_t = 5)]
    call_timeout_secs: u64,
    /// Also run every case through the model path with the configured endpoint (`[llm]`) and
    /// report its result beside the no-model one.
    #[arg(long)]
    model: bool,
}

pub async fn run(mut settings: Settings, args: Args) -> anyhow::Result<ExitCode> {
    let found = cases::discover(&args.dirs)?;
    for name in &args.expect_fail {
        if !found.iter().any(|c| &c.name == name) {
            anyhow::bail!("--expect-fail {name}: no such case in the given directories");
        }
    }
    let model = if args.model {
        Some(model_path(&settings)?)
    } else {
        None
    };
    if let Some(url) = &args.database_url {
        settings.database.url = DatabaseUrl::new(url.clone());
    }
    let (pool, memory_note) = if args.no_db {
        (None, "recall memory: off (--no-db)".to_string())
    } else {
        connect(&settings).await
    };

    let embedder = match &pool {
        Some(pool) => crate::investigate::optional_embedder(&settings, pool).await,
        None => None,
    };
    let options = runner::RunOptions {
        embedder,
        graph: firstline_investigation::GraphOptions::from_settings(&settings.round),
        mcp: settings.mcp.clone(),
        call_timeout: Duration::from_secs(args.call_timeout_secs.max(1)),
        run_id: chrono::Utc::now().format("%Y%m%dT%H%M%S%.6f").to_string(),
        model,
        steering: None,
    };
    let mut outcomes: Vec<CaseOutcome> = Vec::with_capacity(found.len());
    for case in &found {
        let expect_fail = args.expect_fail.contains(&case.name);
        let outcome = runner::run_case(case, pool.as_ref(), &options, expect_fail).await;
        outcomes.push(outcome);
    }
    if let Some(pool) = pool {
        pool.close().await;
    }

    if args.json {
        let report = table::to_json(&outcomes, &memory_note, args.model);
        let json = serde_json::to_string_pretty(&report).context("serialising the results")?;
        println!("{json}");
    } else {
        print!("{}", table::render(&outcomes, &memory_note, args.model));
    }
    let failed = outcomes
        .iter()
        .any(|o| matches!(o.status, Status::Fail | Status::XPass))
        || table::regressions(&outcomes) > 0;
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

/// The model path `[llm]` configures; an error when none is (`--model` needs one).
pub fn model_path(settings: &Settings) -> anyhow::Result<ModelPath> {
    ModelPath::from_settings(&settings.llm)
        .context("configuring the model path ([llm])")?
        .ok_or_else(|| {
            anyhow::anyhow!(
                "--model needs a model endpoint: set llm.base_url (FIRSTLINE_LLM__BASE_URL) and \
                 llm.model (FIRSTLINE_LLM__MODEL)"
            )
        })
}

/// The database, when it answers within its connect timeout; otherwise `None` and a note for
/// the table.
async fn connect(settings: &Settings) -> (Option<PgPool>, String) {
    let limit = Duration::from_secs(settings.database.connect_timeout_secs.clamp(1, 30) + 1);
    match tokio::time::timeout(limit, firstline_store::connect(&settings.database)).await {
        Ok(Ok(pool)) => (
            Some(pool),
            format!("recall memory: {}", settings.database.url),
        ),
        Ok(Err(e)) => (None, format!("recall memory: off ({e})")),
        Err(_) => (
            None,
            format!(
                "recall memory: off ({} did not answer in {limit:?})",
                settings.database.url
            ),
        ),
    }
}
