//! Recall against a real, migrated Postgres (`firstline_testkit::test_db`).

use firstline_testkit::test_db;
use sqlx::PgPool;

use super::*;
use firstline_model::ThreadContext;

struct Past<'a> {
    team: &'a str,
    alertname: Option<&'a str>,
    service: Option<&'a str>,
    namespace: Option<&'a str>,
    title: &'a str,
    summary: &'a str,
    root_cause: &'a str,
}

async fn insert(pool: &PgPool, past: Past<'_>) -> i64 {
    let thread: i64 = sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts, status, resolved_at)
         VALUES ($1, 'C1', $2, 'resolved', now()) RETURNING id",
    )
    .bind(past.team)
    .bind(uuid_ts())
    .fetch_one(pool)
    .await
    .expect("thread");
    sqlx::query_scalar(
        "INSERT INTO incidents (thread_id, team_id, permalink, alertname, service, namespace,
                                title, summary, root_cause, resolution, resolved_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 'fixed it', now()) RETURNING id",
    )
    .bind(thread)
    .bind(past.team)
    .bind(format!("https://example.slack.com/archives/C1/p{thread}"))
    .bind(past.alertname)
    .bind(past.service)
    .bind(past.namespace)
    .bind(past.title)
    .bind(past.summary)
    .bind(past.root_cause)
    .fetch_one(pool)
    .await
    .expect("incident")
}

fn uuid_ts() -> String {
    firstline_testkit::unique_name("ts")
}

async fn recall_for(pool: &PgPool, team: &str, alert: &str) -> IncidentUpdate {
    let state = IncidentState::new(
        AlertInput::parse(alert, None),
        ThreadContext::for_team(team),
    );
    let memory = recall::Memory::keywords(pool.clone());
    recall::recall(Some(&memory), &state, &RecallOptions::default()).await
}

#[tokio::test]
async fn recall_finds_past_incidents_by_alertname_and_text_in_the_same_team_only() {
    let db = test_db().await;
    let by_name = insert(
        &db.pool,
        Past {
            team: "T1",
            alertname: Some("KubePodCrashLooping"),
            service: Some("ledger"),
            namespace: Some("default"),
            title: "ledger crash loop",
            summary: "ledger restarted every minute",
            root_cause: "missing LEDGER_URL",
        },
    )
    .await;
    let by_text = insert(
        &db.pool,
        Past {
            team: "T1",
            alertname: Some("PaymentsDown"),
            service: Some("checkout"),
            namespace: Some("shop"),
            title: "checkout could not reach payments",
            summary: "the payments api was crash looping after a config change",
            root_cause: "PAYMENT_MODE removed from the ConfigMap",
        },
    )
    .await;
    let _unrelated = insert(
        &db.pool,
        Past {
            team: "T1",
            alertname: Some("DiskFull"),
            service: Some("logs"),
            namespace: Some("default"),
            title: "log volume full",
            summary: "retention misconfigured",
            root_cause: "no rotation",
        },
    )
    .await;
    let _other_team = insert(
        &db.pool,
        Past {
            team: "T2",
            alertname: Some("KubePodCrashLooping"),
            service: Some("payments-api"),
            namespace: Some("default"),
            title: "payments api crash loop",
            summary: "payments api crash looping",
            root_cause: "PAYMENT_MODE missing",
        },
    )
    .await;

    let update = recall_for(&db.pool, "T1", CRASH_ALERT).await;
    // Without an embedding model, recall says it matched by keywords and identifiers only.
    assert_eq!(update.missing.len(), 1, "{:#?}", update.missing);
    assert_eq!(update.missing[0].kind, MissingKind::Skipped);
    assert!(
        update.missing[0]
            .reason
            .contains("no embedding model is configured; past incidents were matched by keywords"),
        "{}",
        update.missing[0].reason
    );
    let found = update
        .prior_incidents
        .expect("recall writes prior incidents");
    let ids: Vec<i64> = found.iter().map(|p| p.incident.id).collect();
    assert_eq!(ids, [by_name, by_text], "{found:#?}");
    assert!(found[0].matched_on.contains(&"alertname".to_string()));
    assert_eq!(found[1].matched_on, ["text"]);
    assert!(found[0].score > found[1].score);
    assert_eq!(
        found[1].incident.root_cause,
        "PAYMENT_MODE removed from the ConfigMap"
    );
    assert!(found[1].incident.permalink.is_some());

    // The other workspace sees only its own incident.
    let other = recall_for(&db.pool, "T2", CRASH_ALERT)
        .await
        .prior_incidents
        .expect("prior incidents");
    assert_eq!(other.len(), 1);
    assert_eq!(other[0].incident.title, "payments api crash loop");

    // A workspace with no history finds nothing, without failing.
    let none = recall_for(&db.pool, "T3", CRASH_ALERT).await;
    assert_eq!(none.prior_incidents, Some(Vec::new()));
}

#[tokio::test]
async fn recall_keeps_the_best_three() {
    let db = test_db().await;
    for i in 0..5 {
        insert(
            &db.pool,
            Past {
                team: "T1",
                alertname: Some("KubePodCrashLooping"),
                service: None,
                namespace: None,
                title: &format!("crash loop {i}"),
                summary: "restarts",
                root_cause: "bad config",
            },
        )
        .await;
    }
    let found = recall_for(&db.pool, "T1", CRASH_ALERT)
        .await
        .prior_incidents
        .expect("prior incidents");
    assert_eq!(found.len(), 3);
}
