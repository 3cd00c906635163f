//! The `/healthz` and `/metrics` endpoints of a process without a public API (the worker, the
//! embedder): healthy while its work loop runs, metrics from the process's Prometheus recorder.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

#[derive(Clone)]
struct HttpState {
    healthy: Arc<AtomicBool>,
    unhealthy_reason: &'static str,
    metrics: Option<PrometheusHandle>,
}

/// Serves the endpoints on `listen` until `cancel` fires; returns the bound address. `/healthz`
/// answers 200 while `healthy` is set, else 503 with `unhealthy_reason`.
pub async fn serve(
    listen: &str,
    healthy: Arc<AtomicBool>,
    unhealthy_reason: &'static str,
    cancel: CancellationToken,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(listen).await?;
    let addr = listener.local_addr()?;
    let app = Router::new()
        .route("/healthz", get(healthz))
        .route("/metrics", get(render_metrics))
        .with_state(HttpState {
            healthy,
            unhealthy_reason,
            metrics: crate::telemetry::metrics(),
        });
    tokio::spawn(async move {
        let served = axum::serve(listener, app)
            .with_graceful_shutdown(async move { cancel.cancelled().await })
            .await;
        if let Err(e) = served {
            tracing::warn!(error = %e, "health endpoint stopped");
        }
    });
    Ok(addr)
}

async fn healthz(State(state): State<HttpState>) -> (StatusCode, String) {
    if state.healthy.load(Ordering::SeqCst) {
        (StatusCode::OK, "ok\n".into())
    } else {
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("{}\n", state.unhealthy_reason),
        )
    }
}

async fn render_metrics(State(state): State<HttpState>) -> (StatusCode, String) {
    match &state.metrics {
        Some(handle) => (StatusCode::OK, handle.render()),
        None => (
            StatusCode::NOT_FOUND,
            "metrics recorder not installed\n".into(),
        ),
    }
}
