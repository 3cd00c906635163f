//! The `[telemetry]` section: where traces go.
//!
//! Every `tracing` span Firstline opens (one per activity, graph node, tool call and model call)
//! is exported over OTLP/gRPC when `otlp_endpoint` is set; when it is empty, the default, spans
//! only shape the log and no exporter exists. The standard `OTEL_*` variables the OpenTelemetry
//! SDK reads still apply (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`).

use super::check;
use crate::ConfigError;
use serde::{Deserialize, Serialize};

/// OpenTelemetry traces.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelemetrySettings {
    /// OTLP/gRPC endpoint of a collector, e.g. `http://otel-collector:4317` (`https://` for
    /// TLS); empty: no traces are exported.
    pub otlp_endpoint: String,
}

impl TelemetrySettings {
    /// Whether spans are exported.
    pub fn enabled(&self) -> bool {
        !self.otlp_endpoint.trim().is_empty()
    }

    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        if !self.enabled() {
            return Ok(());
        }
        let endpoint = self.otlp_endpoint.trim();
        check::http_url("telemetry.otlp_endpoint", endpoint)?;
        let rest = endpoint.split_once("://").map_or("", |(_, rest)| rest);
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if authority.is_empty() {
            return Err(ConfigError::rejected(
                "telemetry.otlp_endpoint",
                "must name the collector's host and port, e.g. http://otel-collector:4317",
            ));
        }
        if !path.is_empty() {
            return Err(ConfigError::rejected(
                "telemetry.otlp_endpoint",
                format!(
                    "OTLP over gRPC takes no path (`/{path}`): give the collector's gRPC address, \
                     usually port 4317, not its OTLP/HTTP URL"
                ),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::TelemetrySettings;
    use crate::ConfigError;

    fn endpoint(url: &str) -> TelemetrySettings {
        TelemetrySettings {
            otlp_endpoint: url.into(),
        }
    }

    fn rejected(settings: &TelemetrySettings) -> String {
        match settings.validate() {
            Err(ConfigError::Rejected {
                setting, reason, ..
            }) => {
                assert_eq!(setting, "telemetry.otlp_endpoint");
                reason
            }
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn empty_is_off_and_valid() {
        let settings = TelemetrySettings::default();
        assert!(!settings.enabled());
        settings.validate().expect("the default is valid");
        assert!(!endpoint("  ").enabled());
    }

    #[test]
    fn a_grpc_address_is_accepted() {
        for url in [
            "http://127.0.0.1:4317",
            "http://otel-collector.monitoring:4317/",
            "https://otlp.example.com",
        ] {
            let settings = endpoint(url);
            assert!(settings.enabled());
            settings.validate().unwrap_or_else(|e| panic!("{url}: {e}"));
        }
    }

    #[test]
    fn other_shapes_are_rejected_by_name() {
        assert!(rejected(&endpoint("127.0.0.1:4317")).contains("http://"));
        assert!(rejected(&endpoint("http://")).contains("host and port"));
        assert!(rejected(&endpoint("http://collector:4318/v1/traces")).contains("no path"));
    }

    #[test]
    // figment::Jail fixes the closure signature (Result<(), figment::Error>); the size is not ours.
    #[allow(clippy::result_large_err)]
    fn the_endpoint_loads_from_the_environment() {
        figment::Jail::expect_with(|jail| {
            jail.set_env(
                "FIRSTLINE_TELEMETRY__OTLP_ENDPOINT",
                "http://127.0.0.1:4317",
            );
            let settings = crate::Settings::load(None).expect("loads");
            assert_eq!(settings.telemetry.otlp_endpoint, "http://127.0.0.1:4317");
            jail.set_env("FIRSTLINE_TELEMETRY__OTLP_ENDPOINT", "collector:4317");
            let error = crate::Settings::load(None).expect_err("rejected");
            assert!(
                error
                    .to_string()
                    .contains("FIRSTLINE_TELEMETRY__OTLP_ENDPOINT"),
                "{error}"
            );
            Ok(())
        });
    }
}
