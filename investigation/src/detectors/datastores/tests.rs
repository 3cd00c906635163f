//! Data stores read from their side: a cache at its maximum evicting keys and a database lock
//! held by one session explain the clients that log waiting on them — never a cache with room,
//! an eviction counter that stands still, or slow statements with no lock wait.

use serde_json::json;

use crate::detectors::lead::Lead;
use crate::detectors::testing::{
    Style, assert_contains, ctx, describe, detect, find, has, log_of, matrix, metric, minutely,
};
use crate::detectors::{Fact, Kind};

const CLIENT: &str = "inventory-api-6d5f8c7b94-7hx2c";
const T: f64 = 1_741_096_200.0;

fn misses() -> crate::evidence::Evidence {
    log_of(
        1,
        CLIENT,
        r#"{"level":40,"msg":"cache miss, loaded from db","key":"stock:sku-118230:eu","db_ms":1241}
{"level":30,"msg":"request completed","res":{"statusCode":200},"responseTime":1288}
{"level":40,"msg":"cache miss, loaded from db","key":"stock:sku-772014:eu","db_ms":1397}
"#,
    )
}

/// Redis' own series: memory used against its maximum, and evictions.
fn redis(used: &[f64], max: f64, evicted: &[f64]) -> crate::evidence::Evidence {
    let labels = |name: &str| json!({"__name__": name, "namespace": "inventory", "pod": "inventory-cache-0"});
    let text = matrix(
        &[
            (labels("redis_memory_used_bytes"), minutely(used, T)),
            (
                labels("redis_memory_max_bytes"),
                minutely(&vec![max; used.len()], T),
            ),
            (labels("redis_evicted_keys_total"), minutely(evicted, T)),
        ],
        true,
        Style::Compact,
    );
    metric(
        2,
        r#"{__name__=~"redis_memory_used_bytes|redis_memory_max_bytes|redis_evicted_keys_total"}"#,
        &text,
    )
}

#[test]
fn a_cache_at_its_maximum_evicting_keys_explains_the_clients_misses() {
    let evidence = [
        misses(),
        redis(
            &[3.9e9, 4.1e9, 4.29e9, 4.29e9, 4.29e9],
            4_294_967_296.0,
            &[0.0, 0.0, 0.0, 90_000.0, 230_000.0],
        ),
    ];
    let findings = detect(&evidence, &ctx());
    let full = find(&findings, Kind::CacheFull);
    assert!(full.is_verified_cause(), "{full:#?}");
    assert_contains(
        &full.title(),
        "Redis `inventory-cache-0` is at its maxmemory",
    );
    assert_contains(&full.title(), "evicts keys");
    let wait = find(&findings, Kind::DependencyWait);
    assert!(full.explains(wait));
    let Fact::DependencyWait(w) = &wait.fact else {
        unreachable!()
    };
    assert!(w.hosts.is_empty(), "the client names no host: {w:?}");
    assert!(matches!(
        &wait.fact.leads()[..],
        [Lead::DataStores { namespace, hosts, .. }] if namespace == "default" && hosts.is_empty()
    ));
}

#[test]
fn a_cache_with_room_or_without_evictions_is_no_cause() {
    // Cold, not full: 1.1 GB of 4 GB.
    let cold = [
        misses(),
        redis(
            &[1.2e6, 4e8, 8e8, 1.1e9],
            4_294_967_296.0,
            &[0.0, 0.0, 0.0, 0.0],
        ),
    ];
    assert!(!has(&detect(&cold, &ctx()), Kind::CacheFull));
    // Red herring: full, but its eviction counter stands still (evictions long ago).
    let still = [
        misses(),
        redis(&[4.29e9; 4], 4_294_967_296.0, &[5_000.0; 4]),
    ];
    assert!(!has(&detect(&still, &ctx()), Kind::CacheFull));
    // Full and evicting, but no client waits on it: not this alert's story.
    let alone = [redis(
        &[4.29e9; 4],
        4_294_967_296.0,
        &[0.0, 10.0, 20.0, 30.0],
    )];
    assert!(!has(&detect(&alone, &ctx()), Kind::CacheFull));
}

fn pg_log() -> crate::evidence::Evidence {
    log_of(
        3,
        "orders-db-0",
        "\
2025-01-01 00:00:00.114 UTC [88121] orders_app@orders/orders-api LOG:  process 88121 still waiting for AccessShareLock on relation 16412 of database 16384 after 1000.052 ms
2025-01-01 00:00:00.114 UTC [88121] orders_app@orders/orders-api DETAIL:  Process holding the lock: 87644. Wait queue: 88090, 88093, 88121.
2025-01-01 00:00:00.114 UTC [88121] orders_app@orders/orders-api STATEMENT:  SELECT id FROM order_items WHERE order_id = $1
2025-01-01 00:00:02.250 UTC [74] LOG:  checkpoint starting: time
",
    )
}

fn transactions() -> crate::evidence::Evidence {
    let labels = |app: &str| json!({"__name__": "pg_stat_activity_max_tx_duration", "namespace": "orders", "application_name": app, "state": "active"});
    let text = matrix(
        &[
            (labels("orders-api"), minutely(&[0.02, 5.0, 30.0], T)),
            (
                labels("orders-db-maintenance"),
                minutely(&[600.0, 1200.0, 2160.0], T),
            ),
        ],
        true,
        Style::Compact,
    );
    metric(
        4,
        r#"{__name__=~"pg_stat_activity_max_tx_duration"}"#,
        &text,
    )
}

#[test]
fn the_databases_own_log_of_a_lock_wait_names_the_holder() {
    let slow = log_of(
        1,
        "orders-api-5f8b7c9d64-2kq7x",
        r#"{"level":"warn","msg":"slow query","query":"GetOrderItems","duration_ms":29871,"db":"orders-db-rw.orders.svc:5432"}
{"level":"warn","msg":"slow query","query":"InsertOrderItems","duration_ms":30000,"db":"orders-db-rw.orders.svc:5432"}
"#,
    );
    let evidence = [slow, pg_log(), transactions()];
    let findings = detect(&evidence, &ctx());
    let lock = find(&findings, Kind::LockHeld);
    assert!(lock.is_verified_cause(), "{lock:#?}");
    // The longest transaction is the holder's application, not the waiting client's.
    assert_contains(
        &lock.title(),
        "Database `orders-db-0`: `orders-db-maintenance` (process 87644, in a transaction for 36 min) holds a lock 3 sessions wait on (AccessShareLock)",
    );
    let wait = find(&findings, Kind::DependencyWait);
    assert!(lock.explains(wait));
    let Fact::DependencyWait(w) = &wait.fact else {
        unreachable!()
    };
    assert_eq!(w.hosts, ["orders-db-rw.orders.svc:5432"]);
    // The waits the database logs are explained by the lock, not causes of their own.
    if let Some(refusal) = findings.iter().find(|f| f.kind() == Kind::Refusal) {
        assert!(lock.explains(refusal));
    }
}

#[test]
fn slow_statements_without_a_lock_wait_are_no_lock() {
    let db = log_of(
        3,
        "pricing-db-0",
        "\
2025-01-01 00:00:00.099 UTC [7712] pricing@pricing LOG:  duration: 3688.412 ms  execute <unnamed>: SELECT price_cents FROM price_history WHERE sku_code = $1
2025-01-01 00:00:00.818 UTC [7720] pricing@pricing LOG:  duration: 3839.009 ms  execute <unnamed>: SELECT price_cents FROM price_history WHERE sku_code = $1
",
    );
    let slow = log_of(
        1,
        "pricing-api-7c9d8f6b45-4kq2m",
        "level=warn msg=\"slow query\" query=PriceHistoryForSku took=3.69s\n",
    );
    let findings = detect(&[slow, db, transactions()], &ctx());
    assert!(!has(&findings, Kind::LockHeld), "{findings:#?}");
    assert!(has(&findings, Kind::DependencyWait));
}

#[test]
fn the_clients_spec_names_its_stores_and_a_timestamp_is_no_host() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": CLIENT, "namespace": "default"},
        "spec": {"containers": [{
            "name": "api",
            "args": ["--db=postgresql://app@inventory-db.inventory.svc:5432/inventory"],
            "env": [
                {"name": "REDIS_URL", "value": "redis://inventory-cache:6379/0"},
                {"name": "MEMCACHED_SERVERS", "value": "sessions-mc-0.sessions-mc.default.svc:11211"},
                {"name": "SEARCH_URL", "value": "https://search.example.com"},
                {"name": "LISTEN_ADDR", "value": "localhost:8080"}
            ]
        }]}
    });
    let log = log_of(
        1,
        CLIENT,
        "2025-01-01T00:00:00.211Z WARN  session cache miss sid=s_9a1f rebuilt in 598ms\n",
    );
    let findings = detect(&[describe(5, &pod.to_string()), log], &ctx());
    let Fact::DependencyWait(w) = &find(&findings, Kind::DependencyWait).fact else {
        unreachable!()
    };
    assert_eq!(
        w.hosts,
        [
            "inventory-cache:6379",
            "sessions-mc-0.sessions-mc.default.svc:11211",
            "inventory-db.inventory.svc:5432",
        ]
    );
}
