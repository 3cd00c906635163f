//! Connections exhausted: a server at its connection limit and a client's pool with no free
//! connection — never mistaken for an unreachable dependency.

use crate::detectors::testing::{
    all_of, assert_contains, assert_ends_with, assert_starts_with, ctx, detect, find, has, log_of,
    service_level,
};
use crate::detectors::{Confidence, Kind};

#[test]
fn postgres_refusing_clients_is_a_connection_limit_not_a_dependency_error() {
    let log = "\
2025-01-01 00:00:00.118 UTC [412873] FATAL:  sorry, too many clients already
2025-01-01 00:00:02.044 UTC [74] LOG:  checkpoint starting: time
";
    let findings = detect(&[log_of(1, "fulfilment-pg-0", log)], &ctx());
    let limit = find(&findings, Kind::ConnectionsExhausted);
    assert_eq!(
        limit.title(),
        "Connection limit reached: the server refuses new connections"
    );
    assert_ends_with(
        &limit.detail(),
        "[412873] FATAL:  sorry, too many clients already`.",
    );
    assert_eq!(limit.resource().as_deref(), Some("fulfilment-pg-0"));
    assert!(!has(&findings, Kind::Dependency), "{findings:#?}");
}

#[test]
fn a_pool_timing_out_for_a_free_connection_is_an_exhausted_pool() {
    let log = "\
2025-01-01T00:00:00.104Z ERROR 1 --- [shipment-api] [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 30000ms (total=4, active=4, idle=0, waiting=11)
2025-01-01T00:00:00.111Z  INFO 1 --- [shipment-api] [nio-8080-exec-3] c.e.shipment.web.ShipmentController      : POST /v1/shipments 503 (30008 ms)
";
    let findings = detect(&[log_of(1, "shipment-api-6c9f8d7b5-k7mxp", log)], &ctx());
    let pool = find(&findings, Kind::ConnectionsExhausted);
    assert_eq!(
        pool.title(),
        "Connection pool exhausted: requests wait for a free connection"
    );
    assert_starts_with(
        &pool.detail(),
        "Every connection of the pool in `shipment-api-6c9f8d7b5-k7mxp` is in use",
    );
    assert_contains(
        &pool.refs[0].quote,
        "Connection is not available, request timed out",
    );
    assert!(!pool.verified, "one line, no service-level alert");
    assert!(!has(&findings, Kind::Dependency), "{findings:#?}");
}

#[test]
fn a_refused_connection_behind_a_waiting_pool_leads_with_the_servers_limit() {
    let log = "\
2025-01-01T00:00:00.104Z ERROR 1 --- [shipment-api] [nio-8080-exec-3] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 30000ms (total=4, active=4, idle=0, waiting=11)
org.postgresql.util.PSQLException: FATAL: sorry, too many clients already
2025-01-01T00:00:02.911Z ERROR 1 --- [shipment-api] [nio-8080-exec-8] o.h.engine.jdbc.spi.SqlExceptionHelper   : HikariPool-1 - Connection is not available, request timed out after 30000ms (total=4, active=4, idle=0, waiting=12)
";
    let findings = detect(
        &[log_of(1, "shipment-api-6c9f8d7b5-k7mxp", log)],
        &service_level(),
    );
    let exhausted = all_of(&findings, Kind::ConnectionsExhausted);
    assert_eq!(exhausted.len(), 1, "{findings:#?}");
    let limit = exhausted[0];
    assert_starts_with(&limit.title(), "Connection limit reached");
    assert_ends_with(
        &limit.detail(),
        "the client's pool waits for connections it cannot open.",
    );
    assert_eq!(limit.refs.len(), 2, "{:#?}", limit.refs);
    assert!(limit.refs[0].quote.contains("too many clients already"));
    assert!(
        limit.refs[1].quote.contains("waiting=12"),
        "the latest pool line"
    );
    // Three lines of the class at error level under an error-rate alert.
    assert!(limit.verified);
    assert_eq!(limit.confidence, Confidence::Medium);
}
