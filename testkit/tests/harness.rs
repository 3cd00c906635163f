//! The harness itself: two tests that run at the same time get separate databases.
//!
//! Each test records itself in a rendezvous table on the shared server, keyed by this run, and
//! waits until the other has too, so the assertions below are made while both are live. (Run
//! with at least two test threads or nextest slots, the default on any multi-core machine.)

use firstline_testkit::{connect, stack, test_db, unique_name, wait_for};
use std::time::Duration;

async fn isolated_while_the_other_runs(me: &str, other: &str) {
    let db = test_db().await;
    sqlx::raw_sql("CREATE TABLE marker (owner text NOT NULL)")
        .execute(&db.pool)
        .await
        .expect("own schema");
    sqlx::query("INSERT INTO marker VALUES ($1)")
        .bind(me)
        .execute(&db.pool)
        .await
        .unwrap();

    let admin = connect(&stack().postgres_admin_url).await;
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS harness_rendezvous (run text NOT NULL, test text NOT NULL, database text NOT NULL, PRIMARY KEY (run, test))")
        .execute(&admin)
        .await
        .ok();
    sqlx::query("INSERT INTO harness_rendezvous VALUES ($1, $2, $3)")
        .bind(run_id())
        .bind(me)
        .bind(&db.name)
        .execute(&admin)
        .await
        .unwrap();
    let other_database: String = wait_for(
        "the other test to be running",
        Duration::from_secs(120),
        || {
            let admin = admin.clone();
            async move {
                sqlx::query_scalar(
                    "SELECT database FROM harness_rendezvous WHERE run = $1 AND test = $2",
                )
                .bind(run_id())
                .bind(other)
                .fetch_optional(&admin)
                .await
                .ok()
                .flatten()
            }
        },
    )
    .await;

    let owners: Vec<String> = sqlx::query_scalar("SELECT owner FROM marker")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(owners, vec![me.to_string()], "no rows from the other test");
    // And the other test's database, live at this moment, has none of ours.
    let theirs = connect(&firstline_store::with_database(
        &stack().postgres_admin_url,
        &other_database,
    ))
    .await;
    let their_owners: Vec<String> =
        wait_for("the other test's marker", Duration::from_secs(30), || {
            let theirs = theirs.clone();
            async move {
                sqlx::query_scalar("SELECT owner FROM marker")
                    .fetch_all(&theirs)
                    .await
                    .ok()
                    .filter(|owners: &Vec<String>| !owners.is_empty())
            }
        })
        .await;
    assert_eq!(their_owners, vec![other.to_string()]);
    // The template is migrated: the schema is there.
    let threads: i64 = sqlx::query_scalar("SELECT count(*) FROM threads")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(threads, 0);
}

/// Shared by every process of one test run: nextest's run id, or (plain `cargo test`, one
/// process) our pid.
fn run_id() -> String {
    std::env::var("NEXTEST_RUN_ID").unwrap_or_else(|_| std::process::id().to_string())
}

#[tokio::test]
async fn parallel_test_a_gets_its_own_database() {
    isolated_while_the_other_runs("a", "b").await;
}

#[tokio::test]
async fn parallel_test_b_gets_its_own_database() {
    isolated_while_the_other_runs("b", "a").await;
}

#[test]
fn unique_names_do_not_collide() {
    let names: std::collections::HashSet<String> =
        (0..1000).map(|_| unique_name("queue")).collect();
    assert_eq!(names.len(), 1000);
}
