//! Structured logging with `tracing`: text for people, JSON for pipelines, on stderr.
//! `RUST_LOG` overrides `log.filter` when set.

use firstline_config::{LogFormat, LogSettings};
use tracing_subscriber::EnvFilter;

pub fn init(settings: &LogSettings) {
    let filter = EnvFilter::try_from_default_env()
        .or_else(|_| EnvFilter::try_new(&settings.filter))
        .unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match settings.format {
        LogFormat::Text => builder.with_target(false).init(),
        LogFormat::Json => builder.json().init(),
    }
}
