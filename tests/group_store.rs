//! `firstline_store::groups` against a real Postgres: every alert is linked exactly once, whoever
//! races — thirty repeats of one alert committed at once by separate transactions, roots found by
//! rounds finishing in any order — and a group resolves once, its linked alerts' later ends
//! recorded, not counted again.

use std::time::Duration;

use firstline_store::groups::{self, GroupResolution, NewAlert, Reason, Root};
use firstline_store::{PgPool, migrate};
use firstline_testkit::{connect, empty_db};

const WINDOW: Duration = Duration::from_secs(900);
const CRASH: &str = "1111111111111111111111111111111111111111111111111111111111111111";
const OTHER: &str = "2222222222222222222222222222222222222222222222222222222222222222";
const THIRD: &str = "3333333333333333333333333333333333333333333333333333333333333333";

async fn db() -> PgPool {
    let (_, url) = empty_db().await;
    let pool = connect(&url).await;
    migrate(&pool, &url).await.expect("migrations");
    pool
}

/// A new thread of `team`'s channel C1, opened by an alert at `ts`.
async fn thread(pool: &PgPool, team: &str, ts: &str) -> i64 {
    thread_in(pool, team, "C1", ts).await
}

async fn thread_in(pool: &PgPool, team: &str, channel: &str, ts: &str) -> i64 {
    sqlx::query_scalar(
        "INSERT INTO threads (team_id, channel_id, thread_ts) VALUES ($1, $2, $3) RETURNING id",
    )
    .bind(team)
    .bind(channel)
    .bind(ts)
    .fetch_one(pool)
    .await
    .expect("thread")
}

/// Links thread `thread_id`'s alert (channel C1) in a transaction of its own.
async fn link(pool: &PgPool, team: &str, thread_id: i64, fingerprint: Option<&str>) -> Reason {
    link_in(pool, team, "C1", thread_id, fingerprint).await
}

async fn link_in(
    pool: &PgPool,
    team: &str,
    channel: &str,
    thread_id: i64,
    fingerprint: Option<&str>,
) -> Reason {
    let mut tx = pool.begin().await.expect("tx");
    let alert = NewAlert {
        team_id: team,
        channel_id: channel,
        thread_id,
        fingerprint,
        title: "[FIRING:1] KubePodCrashLooping (shop api-1)",
    };
    let member = groups::link_alert(&mut tx, &alert, WINDOW)
        .await
        .expect("linked");
    tx.commit().await.expect("commit");
    member.reason
}

async fn group_of(pool: &PgPool, thread_id: i64) -> i64 {
    groups::membership_of(pool, thread_id)
        .await
        .expect("membership")
        .expect("a member")
        .group_id
}

#[tokio::test]
async fn thirty_repeats_committed_at_once_make_one_primary_and_twenty_nine_links() {
    let pool = db().await;
    let mut threads = Vec::new();
    for i in 0..30 {
        threads.push(thread(&pool, "T1", &format!("1733130000.{i:06}")).await);
    }
    let linked = futures::future::join_all(threads.iter().map(|&t| {
        let pool = pool.clone();
        async move { link(&pool, "T1", t, Some(CRASH)).await }
    }))
    .await;
    let primaries = linked.iter().filter(|r| **r == Reason::Primary).count();
    assert_eq!(primaries, 1, "{linked:?}");
    assert_eq!(
        linked.iter().filter(|r| **r == Reason::SameAlert).count(),
        29
    );
    let groups: i64 = sqlx::query_scalar("SELECT count(*) FROM incident_groups")
        .fetch_one(&pool)
        .await
        .expect("count");
    assert_eq!(groups, 1);
    // Linking again (a redelivered event) changes nothing.
    assert_eq!(link(&pool, "T1", threads[3], Some(CRASH)).await, linked[3]);
    let (count, newest) = groups::linked(&pool, group_of(&pool, threads[0]).await, 10)
        .await
        .expect("listed");
    assert_eq!((count, newest.len()), (29, 10));
}

#[tokio::test]
async fn another_alert_another_workspace_or_an_old_group_open_groups_of_their_own() {
    let pool = db().await;
    let first = thread(&pool, "T1", "1733130000.000001").await;
    assert_eq!(link(&pool, "T1", first, Some(CRASH)).await, Reason::Primary);
    let other_alert = thread(&pool, "T1", "1733130000.000002").await;
    assert_eq!(
        link(&pool, "T1", other_alert, Some(OTHER)).await,
        Reason::Primary
    );
    let other_team = thread(&pool, "T2", "1733130000.000003").await;
    assert_eq!(
        link(&pool, "T2", other_team, Some(CRASH)).await,
        Reason::Primary
    );
    let unnamed = thread(&pool, "T1", "1733130000.000004").await;
    assert_eq!(link(&pool, "T1", unnamed, None).await, Reason::Primary);
    // The same alert in another channel (staging beside prod) is another incident.
    let other_channel = thread_in(&pool, "T1", "C2", "1733130000.000005").await;
    assert_eq!(
        link_in(&pool, "T1", "C2", other_channel, Some(CRASH)).await,
        Reason::Primary
    );
    // Sixteen minutes after the group's newest alert the window is closed.
    sqlx::query("UPDATE incident_groups SET last_alert_at = now() - interval '16 minutes'")
        .execute(&pool)
        .await
        .expect("age");
    let late = thread(&pool, "T1", "1733131000.000001").await;
    assert_eq!(link(&pool, "T1", late, Some(CRASH)).await, Reason::Primary);
    assert_ne!(group_of(&pool, late).await, group_of(&pool, first).await);
}

fn node_root() -> Root<'static> {
    Root {
        key: "node|prod||worker-3",
        title: "Node worker-3 is not ready",
        evidence: "E2: \u{201c}Kubelet stopped posting node status.\u{201d}",
        sharing: None,
    }
}

#[tokio::test]
async fn a_round_that_finds_an_open_groups_root_joins_it_with_its_own_repeats() {
    let pool = db().await;
    let node_alert = thread(&pool, "T1", "1733130000.000001").await;
    link(&pool, "T1", node_alert, Some(CRASH)).await;
    let pod_alert = thread(&pool, "T1", "1733130000.000002").await;
    link(&pool, "T1", pod_alert, Some(OTHER)).await;
    let pod_repeat = thread(&pool, "T1", "1733130000.000003").await;
    assert_eq!(
        link(&pool, "T1", pod_repeat, Some(OTHER)).await,
        Reason::SameAlert
    );
    // The pod's round finishes first: its group records the root.
    let first = groups::link_root(&pool, pod_alert, &node_root(), WINDOW)
        .await
        .expect("linked")
        .expect("a member");
    assert_eq!(first.reason, Reason::Primary);
    // The node's round finds the same root: it joins, and a retry of the call changes nothing.
    for _ in 0..2 {
        let joined = groups::link_root(&pool, node_alert, &node_root(), WINDOW)
            .await
            .expect("linked")
            .expect("a member");
        assert_eq!(joined.reason, Reason::SameRoot);
        assert_eq!(joined.primary_thread_id, pod_alert);
        assert_eq!(joined.evidence.as_deref(), Some(node_root().evidence));
    }
    let group = group_of(&pool, pod_alert).await;
    assert_eq!(group_of(&pool, pod_repeat).await, group);
    // A repeat of an alert that joined by its root joins the same group.
    let node_repeat = thread(&pool, "T1", "1733130000.000005").await;
    assert_eq!(
        link(&pool, "T1", node_repeat, Some(CRASH)).await,
        Reason::SameAlert
    );
    assert_eq!(group_of(&pool, node_repeat).await, group);
    // Only a repeat of the primary's own alert ends with it (its recovery resolves the group);
    // a repeat of an alert that joined by its root is that alert's.
    let member = |thread_id| {
        let pool = pool.clone();
        async move {
            groups::membership_of(&pool, thread_id)
                .await
                .expect("membership")
                .expect("a member")
        }
    };
    assert!(member(pod_repeat).await.repeats_primary());
    assert!(!member(node_repeat).await.repeats_primary());
    // A different root stays apart.
    let unrelated = thread(&pool, "T1", "1733130000.000004").await;
    link(&pool, "T1", unrelated, Some(THIRD)).await;
    let apart = groups::link_root(
        &pool,
        unrelated,
        &Root {
            key: "workload|prod|shop|checkout",
            ..node_root()
        },
        WINDOW,
    )
    .await
    .expect("linked")
    .expect("a member");
    assert_eq!(apart.reason, Reason::Primary);
    assert_ne!(apart.group_id, group);
}

#[tokio::test]
async fn a_group_resolves_once_and_its_linked_alerts_ends_are_recorded() {
    let pool = db().await;
    let primary = thread(&pool, "T1", "1733130000.000001").await;
    link(&pool, "T1", primary, Some(CRASH)).await;
    let repeat = thread(&pool, "T1", "1733130000.000002").await;
    link(&pool, "T1", repeat, Some(CRASH)).await;
    let resolve = |thread_id: i64| {
        let pool = pool.clone();
        async move {
            let mut tx = pool.begin().await.expect("tx");
            let resolved = groups::resolve(&mut tx, thread_id).await.expect("resolve");
            tx.commit().await.expect("commit");
            resolved
        }
    };
    assert_eq!(resolve(repeat).await, GroupResolution::Linked);
    assert_eq!(resolve(primary).await, GroupResolution::Group { alerts: 2 });
    assert_eq!(resolve(primary).await, GroupResolution::AlreadyResolved);
    assert_eq!(resolve(repeat).await, GroupResolution::AlreadyResolved);
    let recovered: Option<chrono::DateTime<chrono::Utc>> =
        sqlx::query_scalar("SELECT recovered_at FROM group_members WHERE thread_id = $1")
            .bind(repeat)
            .fetch_one(&pool)
            .await
            .expect("member");
    assert!(recovered.is_some());
    // A new repeat after the group resolved opens a group of its own.
    let refire = thread(&pool, "T1", "1733130500.000001").await;
    assert_eq!(
        link(&pool, "T1", refire, Some(CRASH)).await,
        Reason::Primary
    );
}

#[tokio::test]
async fn a_group_being_resolved_is_never_joined() {
    let pool = db().await;
    let primary = thread(&pool, "T1", "1733130000.000001").await;
    link(&pool, "T1", primary, Some(CRASH)).await;
    // The primary's recovery is being recorded while a repeat arrives.
    let mut resolving = pool.begin().await.expect("tx");
    assert_eq!(
        groups::resolve(&mut resolving, primary)
            .await
            .expect("resolve"),
        GroupResolution::Alone
    );
    let repeat = thread(&pool, "T1", "1733130000.000002").await;
    let linking = tokio::spawn({
        let pool = pool.clone();
        async move { link(&pool, "T1", repeat, Some(CRASH)).await }
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !linking.is_finished(),
        "the repeat waits for the group's row"
    );
    resolving.commit().await.expect("commit");
    assert_eq!(linking.await.expect("linked"), Reason::Primary);
    assert_ne!(
        group_of(&pool, repeat).await,
        group_of(&pool, primary).await
    );
}

#[tokio::test]
async fn a_later_alert_waits_for_an_earlier_analysis_and_then_shares_its_root() {
    let pool = db().await;
    let wait = Duration::from_secs(60);
    let node_alert = thread(&pool, "T1", "1733130000.000001").await;
    link(&pool, "T1", node_alert, Some(CRASH)).await;
    let pod_alert = thread(&pool, "T1", "1733130000.000002").await;
    link(&pool, "T1", pod_alert, Some(OTHER)).await;
    // The node alert's first round runs: the pod alert waits; the node alert waits for nobody.
    assert!(
        groups::earlier_running(&pool, "T1", pod_alert, wait)
            .await
            .expect("read")
    );
    assert!(
        !groups::earlier_running(&pool, "T1", node_alert, wait)
            .await
            .expect("read")
    );
    let sharing = serde_json::json!({"kind": "pods_on_node", "node": "worker-3"});
    groups::link_root(
        &pool,
        node_alert,
        &Root {
            sharing: Some(&sharing),
            ..node_root()
        },
        WINDOW,
    )
    .await
    .expect("root");
    assert!(
        !groups::earlier_running(&pool, "T1", pod_alert, wait)
            .await
            .expect("read")
    );
    let shared = groups::shared_roots(&pool, "T1", pod_alert, WINDOW, 3)
        .await
        .expect("shared");
    assert_eq!(shared.len(), 1);
    assert_eq!(shared[0].sharing, sharing);
    let evidence = "pod `shop/cart-1` is not ready on node `worker-3`";
    let linked = groups::link_shared(&pool, pod_alert, shared[0].group_id, evidence, WINDOW)
        .await
        .expect("linked")
        .expect("a member");
    assert_eq!(linked.reason, Reason::SameRoot);
    assert_eq!(linked.primary_thread_id, node_alert);
    assert_eq!(linked.evidence.as_deref(), Some(evidence));
    // Once the group is resolved, nothing more shares it.
    let mut tx = pool.begin().await.expect("tx");
    groups::resolve(&mut tx, node_alert).await.expect("resolve");
    tx.commit().await.expect("commit");
    let late = thread(&pool, "T1", "1733130000.000003").await;
    link(&pool, "T1", late, Some(THIRD)).await;
    let none = groups::link_shared(&pool, late, shared[0].group_id, evidence, WINDOW)
        .await
        .expect("read");
    assert_eq!(none, None);
}
