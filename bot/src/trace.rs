//! One trace per alert: the W3C `traceparent` of the request that recorded a message goes with its
//! wake-up (the outbox row), and the relay signals the round inside it, so the Temporal client's
//! tracing plugin carries it in the signal's header to every activity of the round.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TraceContextExt;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing_opentelemetry::OpenTelemetrySpanExt;

const TRACEPARENT: &str = "traceparent";

/// The current span's trace context as a `traceparent`, when a trace is being recorded.
pub fn current_traceparent() -> Option<String> {
    let context = tracing::Span::current().context();
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = HashMap::new();
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier.remove(TRACEPARENT)
}

/// The context a `traceparent` names (the empty context for none, or one that does not parse).
pub fn context_of(traceparent: Option<&str>) -> opentelemetry::Context {
    let carrier: HashMap<String, String> = traceparent
        .map(|value| HashMap::from([(TRACEPARENT.to_string(), value.to_string())]))
        .unwrap_or_default();
    TraceContextPropagator::new().extract(&carrier)
}

#[cfg(test)]
mod tests {
    use super::*;
    use opentelemetry::trace::TracerProvider as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    #[test]
    fn a_recorded_span_gives_a_traceparent_that_names_its_trace_and_nothing_gives_none() {
        assert_eq!(current_traceparent(), None, "no subscriber: no trace");
        assert!(!context_of(None).span().span_context().is_valid());
        assert!(!context_of(Some("garbage")).span().span_context().is_valid());

        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = tracing_subscriber::registry()
            .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
        tracing::subscriber::with_default(subscriber, || {
            let span = tracing::info_span!("ingest");
            let _entered = span.enter();
            let traceparent = current_traceparent().expect("a traceparent");
            let trace_id = span.context().span().span_context().trace_id();
            assert!(traceparent.starts_with("00-"), "{traceparent}");
            assert!(traceparent.contains(&trace_id.to_string()), "{traceparent}");
            let context = context_of(Some(&traceparent));
            assert_eq!(context.span().span_context().trace_id(), trace_id);
            assert!(context.span().span_context().is_remote());
        });
    }
}
