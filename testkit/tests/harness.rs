//! The harness itself: two tests that run at the same time get separate databases.
//!
//! Each test records itself in a rendezvous table on the shared server and waits until the other
//! has too, so the assertions below are made while both are live. (Run with at least two test
//! threads or nextest slots, which is the default on any multi-core machine.)

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
    sqlx::raw_sql("CREATE TABLE IF NOT EXISTS harness_rendezvous (test text PRIMARY KEY, database text NOT NULL)")
        .execute(&admin)
        .await
        .ok();
    sqlx::query("INSERT INTO harness_rendezvous VALUES ($1, $2) ON CONFLICT (test) DO UPDATE SET database = $2")
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
                sqlx::query_scalar("SELECT database FROM harness_rendezvous WHERE test = $1")
                    .bind(other)
                    .fetch_optional(&admin)
                    .await
                    .ok()
                    .flatten()
            }
        },
    )
    .await;

    assert_ne!(other_database, db.name, "each test has its own database");
    let owners: Vec<String> = sqlx::query_scalar("SELECT owner FROM marker")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(owners, vec![me.to_string()], "no rows from the other test");
    // The template is migrated: the schema is there.
    let threads: i64 = sqlx::query_scalar("SELECT count(*) FROM threads")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(threads, 0);
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
