//! Rounds marked "Wrong cause" against a real database: the thread's incident never takes a
//! wrong round's cause (so recall never offers it again), and `firstline feedback` lists the
//! round with its alert and evidence as the start of a lab scenario.

use std::process::Stdio;
use std::time::Duration;

use firstline_model::Verdict;
use firstline_store::{feedback, rounds};
use tokio::process::Command;

#[tokio::test]
async fn a_round_marked_wrong_is_never_the_incidents_cause_and_is_listed_with_its_evidence() {
    let db = firstline_testkit::test_db().await;
    let pool = &db.pool;
    sqlx::raw_sql(
        r#"INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ('T1', 'C1', '1733140000.000100');
           INSERT INTO messages (thread_id, team_id, channel_id, ts, kind, text, raw)
               VALUES (1, 'T1', 'C1', '1733140000.000100', 'alert',
                       E'[FIRING:1] KubePodCrashLooping\nnamespace=shop', '{}');
           INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded, result,
                               headline, cause, text)
               VALUES (1, 1, 'w', 'r', now(), true, '{}', 'checkout crash-looping',
                       'Deploy of checkout 5.3.0', 'posted 1'),
                      (1, 2, 'w', 'r', now(), true, '{}', 'checkout crash-looping',
                       'OOMKilled: memory limit too low', 'posted 2');
           INSERT INTO evidence (round_id, ref, capability, server, tool, args, digest, excerpt, fetched_at)
               VALUES (2, 'E1', 'pod_describe', 'lab', 'pods_get', '{}', 'd',
                       E'\nName: checkout-1\nReason: OOMKilled', now());
           UPDATE threads SET rounds = 2;"#,
    )
    .execute(pool)
    .await
    .expect("a thread with two grounded rounds");
    let mut conn = pool.acquire().await.expect("a connection");
    let (_, grounded) = rounds::latest_outlines(&mut conn, 1)
        .await
        .expect("outlines");
    assert_eq!(
        grounded.and_then(|r| r.cause).as_deref(),
        Some("OOMKilled: memory limit too low")
    );

    // Marked wrong twice by one person (a double click) and helpful by another.
    assert!(
        feedback::record(pool, 2, "U1", Verdict::Wrong)
            .await
            .expect("stored")
    );
    assert!(
        !feedback::record(pool, 2, "U1", Verdict::Wrong)
            .await
            .expect("stored")
    );
    assert!(
        feedback::record(pool, 2, "U2", Verdict::Helpful)
            .await
            .expect("stored")
    );
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM round_feedback")
        .fetch_one(pool)
        .await
        .unwrap();
    assert_eq!(rows, 2, "one row per person per round");
    let (latest, grounded) = rounds::latest_outlines(&mut conn, 1)
        .await
        .expect("outlines");
    assert!(latest.is_some_and(|r| r.marked_wrong));
    assert_eq!(
        grounded.and_then(|r| r.cause).as_deref(),
        Some("Deploy of checkout 5.3.0"),
        "the incident takes the latest grounded round nobody marked wrong"
    );

    assert!(
        feedback::note(pool, 2, "U1", "the node's disk filled up")
            .await
            .expect("stored")
    );
    assert!(
        !feedback::note(pool, 2, "U2", "not mine to say")
            .await
            .expect("checked"),
        "only who marked it wrong writes the right cause"
    );

    let mut command = Command::new(env!("CARGO_BIN_EXE_firstline"));
    for (key, _) in std::env::vars() {
        if key.starts_with("FIRSTLINE_") {
            command.env_remove(key);
        }
    }
    let output = command
        .env("FIRSTLINE_DATABASE__URL", db.url.expose())
        .env("RUST_LOG", "error")
        .arg("feedback")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let output = tokio::time::timeout(Duration::from_secs(60), output)
        .await
        .expect("within a minute")
        .expect("ran");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        text.starts_with("# T1/C1/1733140000.000100 round 2: marked wrong by U1"),
        "{text}"
    );
    assert!(
        text.contains("cause: OOMKilled: memory limit too low"),
        "{text}"
    );
    assert!(
        text.contains("The right cause, as the thread said: the node's disk filled up."),
        "{text}"
    );
    assert!(text.contains("    namespace=shop"), "{text}");
    assert!(
        text.contains("#   E1 pod_describe: Name: checkout-1"),
        "{text}"
    );
    assert!(
        !text.contains("round 1"),
        "only rounds marked wrong: {text}"
    );
}
