//! Spans arrive: a round run by a `firstline worker` whose `telemetry.otlp_endpoint` points at a
//! real OTLP collector — rotel's `rotel-agent` (PyPI `rotel`, installed by `scripts/setup` into
//! `.tools`), receiving OTLP/gRPC and printing every span it gets (`--debug-log traces
//! --debug-log-verbosity detailed`, exporter `blackhole`). The test reads that output and finds the
//! round's activity spans (with the thread and round), its graph nodes and its tool calls, each
//! linked to its parent (same trace, parent span id = the parent's span id); and one trace per
//! alert, from the bot's ingest span through the Temporal signal's header to every activity.

mod support;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use support::round_app::{RoundApp, test_settings};
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::process::{Child, Command};

const CRASHLOOP: &str = "crashloop-config-exit-78";
const ROUND: Duration = Duration::from_secs(90);
/// The batch processor exports every 5 s; the collector prints within its 200 ms batch.
const SPANS: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread")]
async fn a_rounds_activity_node_and_tool_spans_reach_a_real_collector_with_their_parents() {
    let collector = Collector::start().await;
    let mut settings = test_settings();
    settings.telemetry.otlp_endpoint = collector.endpoint.clone();
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let worker = app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    let rounds = app.wait_rounds(&alert, 1, ROUND).await;
    assert!(rounds[0].tool_calls > 0, "{rounds:?}");
    let thread = app.thread_key(&alert).kafka_key();

    // Spans are exported while the worker runs: the whole round arrives, its run_graph activity
    // (with the first tool call of the worker's MCP session under it) included.
    let spans = collector
        .wait_spans("the round's activity spans", |spans| {
            spans.iter().any(|s| {
                s.is_activity("post_to_thread") && s.attr("thread") == Some(thread.as_str())
            }) && spans.iter().any(|s| s.is_activity("run_graph"))
        })
        .await;
    // A worker stopped with an exporter configured exits cleanly (flushing what it still held).
    assert!(
        app.terminate_worker(worker).await,
        "the worker exits cleanly on SIGTERM"
    );
    let by_id: BTreeMap<&str, &Span> = spans.iter().map(|s| (s.span_id.as_str(), s)).collect();

    // The activities carry the thread and the round.
    let activity = |name: &str| -> &Span {
        spans
            .iter()
            .find(|s| {
                s.is_activity(name)
                    && (s.attr("thread") == Some(thread.as_str())
                        || s.attr("workflow") == Some(app.workflow_id(&alert).as_str()))
            })
            .unwrap_or_else(|| panic!("no `{name}` activity span of the thread in {spans:#?}"))
    };
    let run_graph = activity("run_graph");
    for name in ["load_context", "run_graph", "post_to_thread"] {
        assert_eq!(
            activity(name).attr("thread"),
            Some(thread.as_str()),
            "{name}"
        );
    }
    for name in ["run_graph", "commit_round", "post_to_thread"] {
        assert_eq!(activity(name).attr("round"), Some("1"), "{name}");
    }
    assert_eq!(
        collector.resource_attr("service.name").as_deref(),
        Some("firstline-worker")
    );

    // Every node of the graph is a child of run_graph's span, in its trace.
    for node in ["investigate", "recall", "summarise", "judge"] {
        let span = spans
            .iter()
            .find(|s| {
                s.name == "graph.node"
                    && s.attr("node") == Some(node)
                    && s.trace_id == run_graph.trace_id
            })
            .unwrap_or_else(|| panic!("no graph.node `{node}` in run_graph's trace"));
        let chain = ancestors(span, &by_id);
        assert_eq!(
            chain.first().map(|s| s.span_id.as_str()),
            Some(run_graph.span_id.as_str()),
            "`{node}`'s parents: {chain:#?}"
        );
    }

    // Every tool call of the round: tool.call → … → graph.node `investigate` → run_graph.
    let calls: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "tool.call" && s.trace_id == run_graph.trace_id)
        .collect();
    assert!(
        calls.len() >= rounds[0].tool_calls as usize,
        "{} tool.call spans in run_graph's trace for {} calls made",
        calls.len(),
        rounds[0].tool_calls
    );
    for call in &calls {
        assert!(
            call.attr("server") == Some("lab") && call.attr("tool").is_some(),
            "{call:#?}"
        );
        let chain = ancestors(call, &by_id);
        assert!(
            chain
                .iter()
                .any(|s| s.name == "graph.node" && s.attr("node") == Some("investigate")),
            "a tool call outside the investigate node: {chain:#?}"
        );
        assert!(
            chain.iter().any(|s| s.span_id == run_graph.span_id),
            "a tool call outside run_graph: {chain:#?}"
        );
    }

    app.stop().await;
    collector.stop().await;
}

/// Records traces in this process, as `firstline bot` does with `telemetry.otlp_endpoint` set: a
/// tracing layer over an OpenTelemetry provider, which is also the global one the Temporal
/// client's tracing plugin uses. Spans made here are not exported; their context is what counts.
fn record_traces_in_this_process() {
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    opentelemetry::global::set_tracer_provider(provider.clone());
    // Another test of this binary may have installed it already.
    let _ = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("firstline-bot")))
        .try_init();
}

/// One trace per alert: the bot's ingest span starts it, its `traceparent` goes with the wake-up
/// (the outbox row), the signal carries it in its Temporal header, and the worker (another
/// process, exporting to the real collector) runs every activity of the round in it.
#[tokio::test(flavor = "multi_thread")]
async fn an_alerts_trace_runs_from_the_bots_ingest_through_temporal_to_every_activity() {
    record_traces_in_this_process();
    let collector = Collector::start().await;
    let mut settings = test_settings();
    settings.telemetry.otlp_endpoint = collector.endpoint.clone();
    let mut app = RoundApp::spawn(CRASHLOOP, settings).await;
    let worker = app.start_worker(None).await;
    let alert = app.post_alert(None).await;
    app.wait_rounds(&alert, 1, ROUND).await;

    // The trace the bot's ingest span started, as the wake-up row carries it.
    let traceparent: Option<String> = sqlx::query_scalar(
        "SELECT payload->>'traceparent' FROM outbox WHERE kind = 'wake' ORDER BY id LIMIT 1",
    )
    .fetch_one(&app.db.pool)
    .await
    .expect("the wake-up row");
    let traceparent = traceparent.expect("the wake-up carries the ingest span's traceparent");
    let trace_id = traceparent
        .split('-')
        .nth(1)
        .expect("00-TRACE-SPAN-FLAGS")
        .to_string();

    let activities = [
        "load_context",
        "run_graph",
        "commit_round",
        "post_to_thread",
    ];
    let spans = collector
        .wait_spans(
            "every activity of the round in the alert's trace",
            |spans| {
                activities.iter().all(|name| {
                    spans
                        .iter()
                        .any(|s| s.is_activity(name) && s.trace_id == trace_id)
                })
            },
        )
        .await;
    assert!(app.terminate_worker(worker).await);
    // Nothing of the round started a trace of its own: every activity span is in the alert's.
    let strays: Vec<&Span> = spans
        .iter()
        .filter(|s| s.name == "activity" && s.trace_id != trace_id)
        .collect();
    assert!(
        strays.is_empty(),
        "activity spans outside the alert's trace: {strays:#?}"
    );
    // The tool calls beneath run_graph are in it too.
    assert!(
        spans
            .iter()
            .any(|s| s.name == "tool.call" && s.trace_id == trace_id),
        "no tool call in the alert's trace"
    );
    app.stop().await;
    collector.stop().await;
}

/// `span`'s parents, nearest first, each checked to be in the same trace; stops at a span whose
/// parent is not in the output (the root).
fn ancestors<'a>(span: &'a Span, by_id: &BTreeMap<&str, &'a Span>) -> Vec<&'a Span> {
    let mut chain = Vec::new();
    let mut current = span;
    while let Some(parent) = current
        .parent_id
        .as_deref()
        .and_then(|id| by_id.get(id).copied())
    {
        assert_eq!(
            parent.trace_id, current.trace_id,
            "{current:#?} and its parent {parent:#?} are in different traces"
        );
        assert!(chain.len() < 32, "a parent loop at {current:#?}");
        chain.push(parent);
        current = parent;
    }
    chain
}

/// One span as the collector printed it.
#[derive(Debug, Clone, Default)]
struct Span {
    trace_id: String,
    span_id: String,
    /// `None` for a root span.
    parent_id: Option<String>,
    name: String,
    /// Attribute values without their type: `Str(x)` → `x`, `Int(1)` → `1`.
    attributes: BTreeMap<String, String>,
}

impl Span {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }

    fn is_activity(&self, name: &str) -> bool {
        self.name == "activity" && self.attr("name") == Some(name)
    }
}

/// Reads rotel's `--debug-log traces --debug-log-verbosity detailed` output, which follows the
/// OpenTelemetry Collector's debug exporter:
///
/// ```text
/// ResourceSpans #0
/// Resource attributes:
///      -> service.name: Str(firstline-worker)
/// ScopeSpans #0
/// Span #0
///     Trace ID       : 5b8efff798038103d269b633813fc60c
///     Parent ID      : eee19b7ec3c1b173
///     ID             : eee19b7ec3c1b174
///     Name           : activity
/// Attributes:
///      -> thread: Str(T1/C1/1.2)
///      -> round: Int(1)
/// ```
///
/// A span's attributes are the `->` lines of the `Attributes:` block that follows its header;
/// any other heading (events, links, the next span or resource) ends that block.
fn parse_spans(lines: &[String]) -> (Vec<Span>, BTreeMap<String, String>) {
    let mut spans: Vec<Span> = Vec::new();
    let mut resource = BTreeMap::new();
    #[derive(PartialEq)]
    enum Block {
        Other,
        Resource,
        SpanAttributes,
    }
    let mut block = Block::Other;
    let mut in_span = false;
    for line in lines {
        let trimmed = line.trim();
        if let Some(attribute) = trimmed.strip_prefix("-> ") {
            let Some((key, value)) = attribute.split_once(": ") else {
                continue;
            };
            let value = untyped(value);
            match block {
                Block::Resource => {
                    resource.insert(key.to_string(), value);
                }
                Block::SpanAttributes => {
                    if let Some(span) = spans.last_mut() {
                        span.attributes.insert(key.to_string(), value);
                    }
                }
                Block::Other => {}
            }
            continue;
        }
        block = Block::Other;
        if trimmed.starts_with("Span #") {
            spans.push(Span::default());
            in_span = true;
        } else if trimmed.starts_with("ResourceSpans #") || trimmed.starts_with("ScopeSpans #") {
            in_span = false;
        } else if trimmed == "Resource attributes:" {
            block = Block::Resource;
        } else if trimmed == "Attributes:" && in_span {
            block = Block::SpanAttributes;
        } else if trimmed.starts_with("Events:")
            || trimmed.starts_with("SpanEvent #")
            || trimmed.starts_with("Links:")
            || trimmed.starts_with("SpanLink #")
        {
            // Events' and links' attributes are theirs, not the span's.
            in_span = false;
        } else if in_span && let Some((field, value)) = trimmed.split_once(':') {
            let value = value.trim().to_string();
            if let Some(span) = spans.last_mut() {
                match field.trim() {
                    "Trace ID" => span.trace_id = value,
                    "Parent ID" => span.parent_id = Some(value).filter(|v| !v.is_empty()),
                    "ID" => span.span_id = value,
                    "Name" => span.name = value,
                    _ => {}
                }
            }
        }
    }
    spans.retain(|s| !s.span_id.is_empty());
    (spans, resource)
}

/// `Str(x)` → `x`, `Int(1)` → `1`, anything else as printed.
fn untyped(value: &str) -> String {
    value
        .split_once('(')
        .and_then(|(_, rest)| rest.strip_suffix(')'))
        .unwrap_or(value)
        .to_string()
}

/// rotel-agent, listening for OTLP/gRPC on a free local port, its output kept in memory.
struct Collector {
    child: Child,
    /// `http://127.0.0.1:<port>`, the worker's `telemetry.otlp_endpoint`.
    endpoint: String,
    output: Arc<Mutex<Vec<String>>>,
    _dir: tempfile::TempDir,
}

impl Collector {
    async fn start() -> Self {
        let agent = rotel_agent();
        let dir = tempfile::tempdir().expect("temp dir");
        let (grpc, http) = (free_port(), free_port());
        let mut child = Command::new(&agent)
            .arg("start")
            .args(["--exporter", "blackhole"])
            .args(["--debug-log", "traces"])
            .args(["--debug-log-verbosity", "detailed"])
            .args(["--otlp-grpc-endpoint", &format!("127.0.0.1:{grpc}")])
            .args(["--otlp-http-endpoint", &format!("127.0.0.1:{http}")])
            .arg("--pid-file")
            .arg(dir.path().join("rotel.pid"))
            .arg("--log-file")
            .arg(dir.path().join("rotel.log"))
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", agent.display()));
        let output = Arc::new(Mutex::new(Vec::new()));
        keep_lines(child.stdout.take().expect("stdout"), Arc::clone(&output));
        keep_lines(child.stderr.take().expect("stderr"), Arc::clone(&output));
        let address = format!("127.0.0.1:{grpc}");
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while tokio::net::TcpStream::connect(&address).await.is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!(
                    "rotel-agent exited ({status}): {}",
                    output.lock().unwrap().join("\n")
                );
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "rotel-agent listens on {address} within 20 s: {}",
                output.lock().unwrap().join("\n")
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Self {
            child,
            endpoint: format!("http://{address}"),
            output,
            _dir: dir,
        }
    }

    fn parsed(&self) -> (Vec<Span>, BTreeMap<String, String>) {
        let lines = self.output.lock().unwrap().clone();
        parse_spans(&lines)
    }

    /// The spans printed so far, once `done` holds for them (or a panic naming what arrived).
    async fn wait_spans(&self, what: &str, done: impl Fn(&[Span]) -> bool) -> Vec<Span> {
        let deadline = tokio::time::Instant::now() + SPANS;
        loop {
            let (spans, _) = self.parsed();
            if done(&spans) {
                return spans;
            }
            if tokio::time::Instant::now() >= deadline {
                let names: Vec<String> = spans
                    .iter()
                    .map(|s| match s.attr("name").or(s.attr("node")) {
                        Some(detail) => format!("{} {detail}", s.name),
                        None => s.name.clone(),
                    })
                    .collect();
                panic!("timed out after {SPANS:?} waiting for {what}; the collector got {names:?}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// A resource attribute of the spans received (the worker is the only sender).
    fn resource_attr(&self, key: &str) -> Option<String> {
        self.parsed().1.get(key).cloned()
    }

    async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = self.child.wait().await;
    }
}

/// The `rotel-agent` binary `scripts/setup` installs with PyPI `rotel` in the tools virtualenv.
fn rotel_agent() -> PathBuf {
    let lib = firstline_testkit::workspace_root().join(".tools/venv/lib");
    std::fs::read_dir(&lib)
        .into_iter()
        .flatten()
        .flatten()
        .map(|python| python.path().join("site-packages/rotel/rotel-agent"))
        .find(|agent| agent.is_file())
        .unwrap_or_else(|| {
            panic!(
                "rotel-agent (PyPI rotel) is not in {}: run scripts/setup to install the test \
                 tools",
                lib.display()
            )
        })
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map(|addr| addr.port())
        .expect("a free local port")
}

fn keep_lines(stream: impl AsyncRead + Unpin + Send + 'static, into: Arc<Mutex<Vec<String>>>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(stream).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            into.lock().unwrap().push(line);
        }
    });
}

#[test]
fn the_collectors_output_reads_as_spans_with_their_attributes() {
    let printed = "\
ResourceSpans #0
Resource attributes:
     -> service.name: Str(firstline-worker)
ScopeSpans #0
InstrumentationScope firstline
Span #0
    Trace ID       : 5b8efff798038103d269b633813fc60c
    Parent ID      : 
    ID             : eee19b7ec3c1b174
    Name           : activity
    Kind           : SPAN_KIND_INTERNAL
Attributes:
     -> name: Str(run_graph)
     -> thread: Str(T1/C1/1700000000.000100)
     -> round: Int(1)
Events:
SpanEvent #0
     -> Name: event
     -> thread: Str(not the span's)
Span #1
    Trace ID       : 5b8efff798038103d269b633813fc60c
    Parent ID      : eee19b7ec3c1b174
    ID             : 0000000000000002
    Name           : graph.node
Attributes:
     -> node: Str(investigate)
";
    let lines: Vec<String> = printed.lines().map(str::to_string).collect();
    let (spans, resource) = parse_spans(&lines);
    assert_eq!(resource["service.name"], "firstline-worker");
    assert_eq!(spans.len(), 2, "{spans:#?}");
    assert!(spans[0].is_activity("run_graph"));
    assert_eq!(spans[0].parent_id, None);
    assert_eq!(spans[0].attr("thread"), Some("T1/C1/1700000000.000100"));
    assert_eq!(spans[0].attr("round"), Some("1"));
    assert_eq!(spans[1].parent_id.as_deref(), Some("eee19b7ec3c1b174"));
    assert_eq!(spans[1].attr("node"), Some("investigate"));
}
