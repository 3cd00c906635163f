//! Telemetry for every process this binary runs: structured logs with `tracing` (text for people,
//! JSON for pipelines, on stderr), OpenTelemetry traces when `telemetry.otlp_endpoint` is set, and
//! the Prometheus recorder behind each process's `/metrics`.
//!
//! `RUST_LOG` overrides `log.filter` when set. The default filter keeps dependencies at `warn`
//! (rmcp's per-session INFO lines would otherwise repeat the whole Temporal span on every tool
//! call), so `firstline dev` and the worker read as Firstline's own story.
//!
//! Traces: one trace per alert. The bot's ingest span starts it; its W3C trace context goes with
//! the wake-up (the outbox row, then the `_tracer-data` header of the Temporal signal, by the
//! SDK's tracing plugin on every client), and each activity runs in it on the worker. Firstline's
//! own spans (targets `firstline*`: one per activity, graph node, tool call and model call) that
//! the log filter lets through, and the plugin's, are exported over OTLP/gRPC by a batch processor
//! on its own thread; dependencies' spans are not (the exporter's own HTTP/2 stack among them, so
//! an export can never trace itself). A collector that is down or slow costs at most
//! [`EXPORT_TIMEOUT`] per batch on that thread, the spans are dropped, and one warning a minute
//! says so. [`Traces::shutdown`] flushes what is queued when the command returns, within
//! [`SHUTDOWN_TIMEOUT`].

use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use firstline_config::{LogFormat, LogSettings, TelemetrySettings, env_var};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{WithExportConfig as _, WithTonicConfig as _};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::{OTelSdkError, OTelSdkResult};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData, SpanExporter};
use tracing_subscriber::layer::SubscriberExt as _;
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::{EnvFilter, Layer as _};

/// Longest one batch of spans may take to reach the collector (connecting included).
pub const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest the exit of a process waits for its queued spans to be exported.
pub const SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(5);
/// At most one warning about failed exports per this interval.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// Installs the log subscriber, and the trace exporter when `telemetry.otlp_endpoint` is set (once,
/// at start-up, inside the Tokio runtime: the gRPC channel's connection task runs on it). A filter
/// that does not parse is refused, naming where it came from, rather than silently logging
/// something else. `service` names the process in traces unless `OTEL_SERVICE_NAME` is set.
pub fn init(
    log: &LogSettings,
    telemetry: &TelemetrySettings,
    service: &str,
) -> anyhow::Result<Traces> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .map_err(|e| anyhow::anyhow!("RUST_LOG `{directives}` is not a valid filter: {e}"))?,
        _ => EnvFilter::try_new(&log.filter).map_err(|e| {
            anyhow::anyhow!(
                "log.filter ({}) `{}` is not a valid filter: {e}",
                env_var("log.filter"),
                log.filter
            )
        })?,
    };
    // Colours only for a person at a terminal, never into a file or a log pipeline.
    let fmt = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    let fmt = match log.format {
        LogFormat::Text => fmt.with_target(false).boxed(),
        LogFormat::Json => fmt.json().boxed(),
    };
    let provider = tracer_provider(telemetry, service)?;
    if let Some(provider) = &provider {
        // The Temporal client's tracing plugin (firstline_temporal::connect) uses the global
        // tracer: the signal, workflow and activity spans join the alert's trace.
        opentelemetry::global::set_tracer_provider(provider.clone());
    }
    let spans = provider.as_ref().map(|provider| {
        tracing_opentelemetry::layer()
            .with_tracer(provider.tracer("firstline"))
            .with_threads(false)
            .with_filter(tracing_subscriber::filter::filter_fn(|meta| {
                meta.target().starts_with("firstline")
            }))
    });
    tracing_subscriber::registry()
        .with(filter)
        .with(fmt)
        .with(spans)
        .try_init()
        .map_err(|e| anyhow::anyhow!("installing the log subscriber: {e}"))?;
    if provider.is_some() {
        tracing::info!(
            endpoint = telemetry.otlp_endpoint.trim(),
            "exporting traces over OTLP"
        );
    }
    Ok(Traces { provider })
}

/// The trace pipeline of a process: keep it until the command returns, then
/// [`Traces::shutdown`] (dropping it does the same).
pub struct Traces {
    provider: Option<SdkTracerProvider>,
}

impl Traces {
    /// Exports the spans still queued and stops the exporter, waiting [`SHUTDOWN_TIMEOUT`] at
    /// most. Call it while the Tokio runtime is still alive.
    pub fn shutdown(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        if let Some(provider) = self.provider.take()
            && let Err(e) = provider.shutdown_with_timeout(SHUTDOWN_TIMEOUT)
        {
            tracing::warn!(error = %e, "traces not flushed at exit");
        }
    }
}

impl Drop for Traces {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The tracer provider for `settings`: `None` — no exporter, no thread, no connection — when no
/// endpoint is configured. Must run inside the Tokio runtime when one is.
fn tracer_provider(
    settings: &TelemetrySettings,
    service: &str,
) -> anyhow::Result<Option<SdkTracerProvider>> {
    if !settings.enabled() {
        return Ok(None);
    }
    let endpoint = settings.otlp_endpoint.trim();
    let mut builder = opentelemetry_otlp::SpanExporter::builder()
        .with_tonic()
        .with_endpoint(endpoint)
        .with_timeout(EXPORT_TIMEOUT);
    if endpoint.starts_with("https://") {
        builder = builder.with_tls_config(
            opentelemetry_otlp::tonic_types::transport::ClientTlsConfig::new().with_native_roots(),
        );
    }
    let inner = builder.build().map_err(|e| {
        anyhow::anyhow!(
            "telemetry.otlp_endpoint ({}) `{endpoint}`: {e}",
            env_var("telemetry.otlp_endpoint")
        )
    })?;
    let runtime = tokio::runtime::Handle::try_current()
        .map_err(|e| anyhow::anyhow!("the trace exporter needs the async runtime: {e}"))?;
    let exporter = Bounded {
        inner,
        endpoint: endpoint.to_string(),
        runtime,
        timeout: EXPORT_TIMEOUT,
        failures: Mutex::default(),
    };
    let mut resource = Resource::builder().with_attribute(opentelemetry::KeyValue::new(
        "service.version",
        env!("CARGO_PKG_VERSION"),
    ));
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(service.to_string());
    }
    Ok(Some(
        SdkTracerProvider::builder()
            .with_resource(resource.build())
            // Replay-safe ids for the Temporal plugin's workflow spans; random ids elsewhere.
            .with_id_generator(temporalio_sdk::opentelemetry::WorkflowIdGenerator::default())
            .with_batch_exporter(exporter)
            .build(),
    ))
}

/// The OTLP exporter, bounded: each export gives up after `timeout`, and a failed export is
/// logged (at most once per [`WARN_EVERY`], with what was dropped since) and dropped, never
/// retried or propagated.
#[derive(Debug)]
struct Bounded<E> {
    inner: E,
    endpoint: String,
    /// The runtime the timer runs on (exports run on the batch processor's own thread).
    runtime: tokio::runtime::Handle,
    timeout: Duration,
    failures: Mutex<Failures>,
}

#[derive(Debug, Default)]
struct Failures {
    /// Failed exports and their spans since the last warning.
    batches: u64,
    spans: u64,
    last_warned: Option<Instant>,
}

impl<E: SpanExporter> SpanExporter for Bounded<E> {
    async fn export(&self, batch: Vec<SpanData>) -> OTelSdkResult {
        let spans = batch.len() as u64;
        let export = {
            let _runtime = self.runtime.enter();
            tokio::time::timeout(self.timeout, self.inner.export(batch))
        };
        let error = match export.await {
            Ok(Ok(())) => return Ok(()),
            Ok(Err(e)) => firstline_model::text::clip(&e.to_string(), 300, "…"),
            Err(_) => format!("no answer within {:?}", self.timeout),
        };
        self.failed(spans, &error);
        Err(OTelSdkError::InternalFailure(error))
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

impl<E> Bounded<E> {
    fn failed(&self, spans: u64, error: &str) {
        let mut failures = self.failures.lock().unwrap_or_else(PoisonError::into_inner);
        failures.batches += 1;
        failures.spans += spans;
        if failures
            .last_warned
            .is_some_and(|at| at.elapsed() < WARN_EVERY)
        {
            return;
        }
        tracing::warn!(
            endpoint = %self.endpoint,
            error,
            batches = failures.batches,
            spans = failures.spans,
            "traces not exported to telemetry.otlp_endpoint; dropped"
        );
        failures.batches = 0;
        failures.spans = 0;
        failures.last_warned = Some(Instant::now());
    }
}

/// The process's Prometheus recorder, installed on first use. `None` when another recorder was
/// installed first (it is then the one metrics go to).
pub fn metrics() -> Option<PrometheusHandle> {
    static HANDLE: OnceLock<Option<PrometheusHandle>> = OnceLock::new();
    HANDLE
        .get_or_init(|| match PrometheusBuilder::new().install_recorder() {
            Ok(handle) => Some(handle),
            Err(e) => {
                tracing::warn!(error = %e, "metrics recorder not installed");
                None
            }
        })
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn endpoint(url: &str) -> TelemetrySettings {
        TelemetrySettings {
            otlp_endpoint: url.into(),
        }
    }

    #[test]
    fn no_endpoint_creates_no_exporter() {
        // Outside any runtime on purpose: with no endpoint nothing needs one.
        let provider = tracer_provider(&TelemetrySettings::default(), "firstline-test")
            .expect("no endpoint is fine");
        assert!(provider.is_none());
        // The guard of a process without an endpoint holds nothing to shut down.
        Traces { provider }.shutdown();
    }

    #[tokio::test]
    async fn an_endpoint_creates_an_exporter_without_connecting() {
        // Nothing listens there: building must not connect (the channel is lazy).
        let provider = tracer_provider(&endpoint("http://127.0.0.1:9"), "firstline-test")
            .expect("builds")
            .expect("an exporter");
        tokio::task::spawn_blocking(move || {
            let _ = provider.shutdown_with_timeout(Duration::from_secs(2));
        })
        .await
        .expect("shutdown");
    }

    /// A collector that accepts connections and never answers.
    async fn silent_collector() -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((socket, _)) = listener.accept().await {
                held.push(socket);
            }
        });
        (format!("http://{addr}"), task)
    }

    fn span() -> SpanData {
        use opentelemetry::trace::{SpanContext, SpanKind, Status};
        SpanData {
            span_context: SpanContext::empty_context(),
            parent_span_id: opentelemetry::trace::SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Internal,
            name: "probe".into(),
            start_time: std::time::SystemTime::now(),
            end_time: std::time::SystemTime::now(),
            attributes: Vec::new(),
            dropped_attributes_count: 0,
            events: Default::default(),
            links: Default::default(),
            status: Status::Unset,
            instrumentation_scope: Default::default(),
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_silent_or_absent_collector_costs_one_bounded_export_and_one_warning() {
        let (silent, server) = silent_collector().await;
        for url in [silent.as_str(), "http://127.0.0.1:9"] {
            let inner = opentelemetry_otlp::SpanExporter::builder()
                .with_tonic()
                .with_endpoint(url)
                .build()
                .expect("builds");
            let exporter = Bounded {
                inner,
                endpoint: url.to_string(),
                runtime: tokio::runtime::Handle::current(),
                timeout: Duration::from_millis(500),
                failures: Mutex::default(),
            };
            // As the batch processor does: on a thread of its own, outside the runtime.
            let (started, results, exporter) = tokio::task::spawn_blocking(move || {
                let started = Instant::now();
                let results: Vec<_> = (0..3)
                    .map(|_| futures::executor::block_on(exporter.export(vec![span(), span()])))
                    .collect();
                (started, results, exporter)
            })
            .await
            .expect("exports ran");
            assert!(results.iter().all(Result::is_err), "{url}: {results:?}");
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{url}: bounded, took {:?}",
                started.elapsed()
            );
            let failures = exporter.failures.lock().unwrap();
            // The first failure warned; the next two are counted for the next warning.
            assert!(failures.last_warned.is_some(), "{url}");
            assert_eq!((failures.batches, failures.spans), (2, 4), "{url}");
        }
        server.abort();
    }
}
