//! Telemetry for every process this binary runs: structured logs with `tracing` (text for people,
//! JSON for pipelines, on stderr) and the Prometheus recorder behind each process's `/metrics`.
//!
//! `RUST_LOG` overrides `log.filter` when set. The default filter keeps dependencies at `warn`
//! (rmcp's per-session INFO lines would otherwise repeat the whole Temporal span on every tool
//! call), so `firstline dev` and the worker read as Firstline's own story.

use std::sync::OnceLock;

use firstline_config::{LogFormat, LogSettings, env_var};
use metrics_exporter_prometheus::{PrometheusBuilder, PrometheusHandle};
use tracing_subscriber::EnvFilter;

/// Installs the log subscriber (once, at start-up). A filter that does not parse is refused,
/// naming where it came from, rather than silently logging something else.
pub fn init(settings: &LogSettings) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(directives) if !directives.trim().is_empty() => EnvFilter::try_new(&directives)
            .map_err(|e| anyhow::anyhow!("RUST_LOG `{directives}` is not a valid filter: {e}"))?,
        _ => EnvFilter::try_new(&settings.filter).map_err(|e| {
            anyhow::anyhow!(
                "log.filter ({}) `{}` is not a valid filter: {e}",
                env_var("log.filter"),
                settings.filter
            )
        })?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match settings.format {
        LogFormat::Text => builder.with_target(false).init(),
        LogFormat::Json => builder.json().init(),
    }
    Ok(())
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
