//! `incident_groups` and `group_members`: alerts that share a cause, linked to one analysis
//! (migration 0015). The bot links a firing alert when it records it ([`link_alert`]: a repeat of
//! an open group's alert joins it); the worker links a round's root ([`link_root`]: an alert whose
//! own round finds an open group's root joins it, with the alert's own repeats) or a shared root
//! ([`link_shared`]). Each takes the workspace's advisory lock first, in its transaction, so
//! linking is decided once per alert whatever the order of arrival and however many bots and
//! workers run; the groups it joins are locked (`FOR UPDATE`) and must still be open, so a group
//! being resolved meanwhile is never joined. A group lives in one channel.

use firstline_model::ThreadKey;
use sqlx::{PgConnection, PgPool};
use std::time::Duration;

/// Advisory lock class of "linking in workspace T" (`FLGR`).
const LINK_LOCK_CLASS: i32 = 0x464c_4752;

/// How a thread came to be in its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    /// The group's first alert: it gets the full analysis.
    Primary,
    /// A repeat of an alert the group already has: not investigated again.
    SameAlert,
    /// Its own round found the group's root.
    SameRoot,
}

impl Reason {
    fn parse(text: &str) -> Result<Self, sqlx::Error> {
        match text {
            "primary" => Ok(Reason::Primary),
            "same_alert" => Ok(Reason::SameAlert),
            "same_root" => Ok(Reason::SameRoot),
            other => Err(sqlx::Error::Decode(
                format!("unknown group_members.reason {other:?}").into(),
            )),
        }
    }

    /// `group_members.reason`.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Primary => "primary",
            Reason::SameAlert => "same_alert",
            Reason::SameRoot => "same_root",
        }
    }
}

/// A firing alert to link, as the bot recorded it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewAlert<'a> {
    pub team_id: &'a str,
    pub channel_id: &'a str,
    /// `threads.id` of the thread the alert opened.
    pub thread_id: i64,
    /// `firstline_alert::AlertTarget::fingerprint`; `None` links it only by its root.
    pub fingerprint: Option<&'a str>,
    /// The alert's first line.
    pub title: &'a str,
}

/// A thread's place in its group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Membership {
    pub group_id: i64,
    pub reason: Reason,
    /// The group's primary thread (the thread itself for a primary).
    pub primary: ThreadKey,
    pub primary_thread_id: i64,
    /// A same-root member's own evidence for the shared root.
    pub evidence: Option<String>,
    /// The group's root title, once its primary's round named one.
    pub root_title: Option<String>,
    /// The member's one-line reply, once posted.
    pub link_ts: Option<String>,
    /// The link to the member's alert and to the primary's, once read.
    pub permalink: Option<String>,
    pub primary_permalink: Option<String>,
    /// The member's alert's fingerprint and the primary's: a repeat of the primary's own alert
    /// has both equal.
    pub fingerprint: Option<String>,
    pub primary_fingerprint: Option<String>,
    /// An attempt to post the one-line reply started (it may have posted before it died).
    pub link_attempted: bool,
    /// The group was resolved.
    pub resolved: bool,
}

impl Membership {
    /// Whether the thread is linked to another thread's analysis.
    pub fn is_linked(&self) -> bool {
        self.reason != Reason::Primary
    }

    /// Whether the thread's alert is the primary's own alert fired again (not a repeat of
    /// another alert the group linked).
    pub fn repeats_primary(&self) -> bool {
        self.reason == Reason::SameAlert
            && self.fingerprint.is_some()
            && self.fingerprint == self.primary_fingerprint
    }
}

#[derive(sqlx::FromRow)]
struct MembershipRow {
    group_id: i64,
    reason: String,
    team_id: String,
    channel_id: String,
    thread_ts: String,
    primary_thread_id: i64,
    evidence: Option<String>,
    root_title: Option<String>,
    link_ts: Option<String>,
    permalink: Option<String>,
    primary_permalink: Option<String>,
    fingerprint: Option<String>,
    primary_fingerprint: Option<String>,
    link_attempted: bool,
    resolved: bool,
}

const MEMBERSHIP: &str = "SELECT m.group_id, m.reason, p.team_id, p.channel_id, p.thread_ts,
            g.primary_thread_id, m.evidence, g.root_title, m.link_ts, m.permalink,
            pm.permalink AS primary_permalink, m.fingerprint, pm.fingerprint AS primary_fingerprint,
            m.link_attempted_at IS NOT NULL AS link_attempted, g.status = 'resolved' AS resolved
       FROM group_members m
       JOIN incident_groups g ON g.id = m.group_id
       JOIN threads p ON p.id = g.primary_thread_id
       LEFT JOIN group_members pm ON pm.thread_id = g.primary_thread_id
      WHERE m.thread_id = $1";

impl TryFrom<MembershipRow> for Membership {
    type Error = sqlx::Error;

    fn try_from(row: MembershipRow) -> Result<Self, Self::Error> {
        Ok(Membership {
            group_id: row.group_id,
            reason: Reason::parse(&row.reason)?,
            primary: ThreadKey {
                team_id: row.team_id,
                channel_id: row.channel_id,
                thread_ts: row.thread_ts,
            },
            primary_thread_id: row.primary_thread_id,
            evidence: row.evidence,
            root_title: row.root_title,
            link_ts: row.link_ts,
            permalink: row.permalink,
            primary_permalink: row.primary_permalink,
            fingerprint: row.fingerprint,
            primary_fingerprint: row.primary_fingerprint,
            link_attempted: row.link_attempted,
            resolved: row.resolved,
        })
    }
}

/// Thread `thread_id`'s membership, if it is in a group.
pub async fn membership(
    conn: &mut PgConnection,
    thread_id: i64,
) -> Result<Option<Membership>, sqlx::Error> {
    let row: Option<MembershipRow> = sqlx::query_as(MEMBERSHIP)
        .bind(thread_id)
        .fetch_optional(&mut *conn)
        .await?;
    row.map(Membership::try_from).transpose()
}

/// [`membership`] on a pooled connection.
pub async fn membership_of(
    pool: &PgPool,
    thread_id: i64,
) -> Result<Option<Membership>, sqlx::Error> {
    let mut conn = pool.acquire().await?;
    membership(&mut conn, thread_id).await
}

/// Takes workspace `team_id`'s linking lock until `conn`'s transaction ends.
async fn lock_workspace(conn: &mut PgConnection, team_id: &str) -> Result<(), sqlx::Error> {
    sqlx::query("SELECT pg_advisory_xact_lock($1, hashtext($2))")
        .bind(LINK_LOCK_CLASS)
        .bind(team_id)
        .execute(&mut *conn)
        .await
        .map(|_| ())
}

/// Links the firing `alert` in `conn`'s transaction: into the open group of its workspace that
/// already has the same alert (by fingerprint) and whose newest alert is at most `window` old, or
/// as the primary of a group of its own. A thread already linked keeps its membership.
pub async fn link_alert(
    conn: &mut PgConnection,
    alert: &NewAlert<'_>,
    window: Duration,
) -> Result<Membership, sqlx::Error> {
    lock_workspace(conn, alert.team_id).await?;
    if let Some(known) = membership(conn, alert.thread_id).await? {
        return Ok(known);
    }
    let repeat_of: Option<i64> = match alert.fingerprint {
        Some(fingerprint) => {
            // Locked: a group being resolved meanwhile is read again, and then no longer open.
            sqlx::query_scalar(
                "SELECT g.id FROM incident_groups g
                  WHERE g.team_id = $1 AND g.channel_id = $4 AND g.status = 'open'
                    AND g.last_alert_at >= now() - make_interval(secs => $3)
                    AND EXISTS (SELECT 1 FROM group_members m
                                 WHERE m.group_id = g.id AND m.fingerprint = $2)
                  ORDER BY g.opened_at, g.id
                  LIMIT 1
                  FOR UPDATE",
            )
            .bind(alert.team_id)
            .bind(fingerprint)
            .bind(window.as_secs_f64())
            .bind(alert.channel_id)
            .fetch_optional(&mut *conn)
            .await?
        }
        None => None,
    };
    let (group_id, reason) = match repeat_of {
        Some(group_id) => {
            sqlx::query(
                "UPDATE incident_groups SET last_alert_at = greatest(last_alert_at, now())
                  WHERE id = $1",
            )
            .bind(group_id)
            .execute(&mut *conn)
            .await?;
            (group_id, Reason::SameAlert)
        }
        None => {
            let group_id: i64 = sqlx::query_scalar(
                "INSERT INTO incident_groups (team_id, channel_id, primary_thread_id)
                 VALUES ($1, $3, $2) RETURNING id",
            )
            .bind(alert.team_id)
            .bind(alert.thread_id)
            .bind(alert.channel_id)
            .fetch_one(&mut *conn)
            .await?;
            (group_id, Reason::Primary)
        }
    };
    sqlx::query(
        "INSERT INTO group_members (thread_id, group_id, team_id, reason, fingerprint, title)
         VALUES ($1, $2, $3, $4, $5, $6)",
    )
    .bind(alert.thread_id)
    .bind(group_id)
    .bind(alert.team_id)
    .bind(reason.as_str())
    .bind(alert.fingerprint)
    .bind(firstline_model::text::prefix(alert.title, 300))
    .execute(&mut *conn)
    .await?;
    membership(conn, alert.thread_id)
        .await?
        .ok_or_else(|| sqlx::Error::Protocol("the member just inserted is gone".into()))
}

/// The root a round found, as groups compare it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Root<'a> {
    /// What identifies it (kind, cluster, namespace, name).
    pub key: &'a str,
    /// Its title, for the thread that links to it.
    pub title: &'a str,
    /// The round's own evidence for it, for the member's one line.
    pub evidence: &'a str,
    /// How later alerts may be shown to share it without rounds of their own (JSON), if they
    /// may.
    pub sharing: Option<&'a serde_json::Value>,
}

/// Links thread `thread_id`'s group by the root its round found: when another open group of the
/// workspace, whose newest alert is at most `window` old, has the same root, the thread joins it
/// (with the repeats that joined the thread's own group, which then ends); otherwise its group
/// records the root for later alerts to find. A linked thread (a repeat, or a retry of this
/// call) keeps its membership. `None` when the thread is in no group (no alert opened it).
pub async fn link_root(
    pool: &PgPool,
    thread_id: i64,
    root: &Root<'_>,
    window: Duration,
) -> Result<Option<Membership>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let team_id: Option<String> =
        sqlx::query_scalar("SELECT team_id FROM group_members WHERE thread_id = $1")
            .bind(thread_id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(team_id) = team_id else {
        return Ok(None);
    };
    lock_workspace(&mut tx, &team_id).await?;
    let Some(own) = membership(&mut tx, thread_id).await? else {
        return Ok(None);
    };
    if own.is_linked() {
        return Ok(Some(own));
    }
    let joined: Option<(i64, Option<String>)> = sqlx::query_as(
        "SELECT g.id, own.root_key FROM incident_groups g, incident_groups own
          WHERE own.id = $2 AND g.team_id = $1 AND g.root_key = $3 AND g.status = 'open'
            AND g.channel_id = own.channel_id AND g.id <> own.id
            AND g.last_alert_at >= now() - make_interval(secs => $4)
          ORDER BY g.opened_at, g.id
          LIMIT 1",
    )
    .bind(&team_id)
    .bind(own.group_id)
    .bind(root.key)
    .bind(window.as_secs_f64())
    .fetch_optional(&mut *tx)
    .await?;
    let joined = match joined {
        Some((group_id, None)) => join(&mut tx, &own, thread_id, group_id, root.evidence).await?,
        _ => false,
    };
    // No open group has this root (or the one that had it was resolved meanwhile), or the
    // thread's group already named its root (a retry of this call): its group records it.
    if !joined {
        sqlx::query(
            "UPDATE incident_groups SET root_key = $2, root_title = $3, sharing = $4
              WHERE id = $1 AND root_key IS NULL",
        )
        .bind(own.group_id)
        .bind(root.key)
        .bind(firstline_model::text::prefix(root.title, 300))
        .bind(root.sharing)
        .execute(&mut *tx)
        .await?;
    }
    let linked = membership(&mut tx, thread_id).await?;
    tx.commit().await?;
    Ok(linked)
}

/// Moves thread `thread_id` (the primary of group `own`) and the repeats that joined it into
/// group `group_id`, citing `evidence`; `own` ends. Both groups are locked first (in id order)
/// and must still be open: `false`, and nothing moved, when one was resolved meanwhile.
async fn join(
    conn: &mut PgConnection,
    own: &Membership,
    thread_id: i64,
    group_id: i64,
    evidence: &str,
) -> Result<bool, sqlx::Error> {
    let open: Vec<i64> = sqlx::query_scalar(
        "SELECT id FROM incident_groups WHERE id IN ($1, $2) AND status = 'open'
          ORDER BY id FOR UPDATE",
    )
    .bind(own.group_id)
    .bind(group_id)
    .fetch_all(&mut *conn)
    .await?;
    if open.len() != 2 {
        return Ok(false);
    }
    sqlx::query(
        "UPDATE group_members
            SET group_id = $1,
                reason = CASE WHEN thread_id = $3 THEN 'same_root' ELSE reason END,
                evidence = CASE WHEN thread_id = $3 THEN $4 ELSE evidence END
          WHERE group_id = $2",
    )
    .bind(group_id)
    .bind(own.group_id)
    .bind(thread_id)
    .bind(firstline_model::text::prefix(evidence, 500))
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "UPDATE incident_groups g
            SET last_alert_at = greatest(g.last_alert_at, own.last_alert_at)
           FROM incident_groups own
          WHERE g.id = $1 AND own.id = $2",
    )
    .bind(group_id)
    .bind(own.group_id)
    .execute(&mut *conn)
    .await?;
    sqlx::query("DELETE FROM incident_groups WHERE id = $1")
        .bind(own.group_id)
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

/// An open group whose root later alerts may share without rounds of their own.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct Shared {
    pub group_id: i64,
    /// How it is shared (`firstline_investigation::sharing::Sharing` in JSON).
    pub sharing: serde_json::Value,
}

/// Groups of thread `thread_id`'s workspace `team_id` and channel other than its own, open, with
/// a newest alert at most `window` old and a root that may be shared; the most recent first, at
/// most `limit`.
pub async fn shared_roots(
    pool: &PgPool,
    team_id: &str,
    thread_id: i64,
    window: Duration,
    limit: u32,
) -> Result<Vec<Shared>, sqlx::Error> {
    sqlx::query_as(
        "SELECT g.id AS group_id, g.sharing FROM incident_groups g
          WHERE g.team_id = $1 AND g.status = 'open' AND g.sharing IS NOT NULL
            AND g.last_alert_at >= now() - make_interval(secs => $3)
            AND g.primary_thread_id <> $2
            AND g.channel_id = (SELECT channel_id FROM threads WHERE id = $2)
          ORDER BY g.last_alert_at DESC, g.id DESC
          LIMIT $4",
    )
    .bind(team_id)
    .bind(thread_id)
    .bind(window.as_secs_f64())
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await
}

/// Whether an alert of workspace `team_id` that opened a group before thread `thread_id`'s (in
/// linking order: groups of one batch share their `opened_at`), at most `wait` ago, is still in
/// its first analysis (its thread has no round and its group no
/// root): its root may be this thread's too.
pub async fn earlier_running(
    pool: &PgPool,
    team_id: &str,
    thread_id: i64,
    wait: Duration,
) -> Result<bool, sqlx::Error> {
    sqlx::query_scalar(
        "SELECT EXISTS (
           SELECT 1 FROM incident_groups g
             JOIN threads t ON t.id = g.primary_thread_id
             JOIN group_members own ON own.thread_id = $2
             JOIN incident_groups mine ON mine.id = own.group_id
            WHERE g.team_id = $1 AND g.status = 'open' AND g.root_key IS NULL
              AND g.channel_id = mine.channel_id
              AND g.id <> mine.id AND t.rounds = 0 AND t.status = 'open'
              AND g.id < mine.id
              AND g.opened_at >= now() - make_interval(secs => $3))",
    )
    .bind(team_id)
    .bind(thread_id)
    .bind(wait.as_secs_f64())
    .fetch_one(pool)
    .await
}

/// Links thread `thread_id` (still its own group's primary, with no root yet) into open group
/// `group_id`, whose root `evidence` shows it shares. `None` when the thread is in no group, or
/// the groups changed meanwhile (the thread already has a root, or `group_id` ended or
/// closed): then the alert gets its own round. A retry finds the thread linked.
pub async fn link_shared(
    pool: &PgPool,
    thread_id: i64,
    group_id: i64,
    evidence: &str,
    window: Duration,
) -> Result<Option<Membership>, sqlx::Error> {
    let mut tx = pool.begin().await?;
    let team_id: Option<String> =
        sqlx::query_scalar("SELECT team_id FROM group_members WHERE thread_id = $1")
            .bind(thread_id)
            .fetch_optional(&mut *tx)
            .await?;
    let Some(team_id) = team_id else {
        return Ok(None);
    };
    lock_workspace(&mut tx, &team_id).await?;
    let Some(own) = membership(&mut tx, thread_id).await? else {
        return Ok(None);
    };
    if own.is_linked() {
        return Ok(own.group_id.eq(&group_id).then_some(own));
    }
    let joinable: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM incident_groups g, incident_groups own
                         WHERE g.id = $1 AND own.id = $2 AND own.root_key IS NULL
                           AND g.id <> own.id AND g.team_id = $3 AND g.status = 'open'
                           AND g.channel_id = own.channel_id
                           AND g.last_alert_at >= now() - make_interval(secs => $4))",
    )
    .bind(group_id)
    .bind(own.group_id)
    .bind(&team_id)
    .bind(window.as_secs_f64())
    .fetch_one(&mut *tx)
    .await?;
    if !joinable {
        return Ok(None);
    }
    if !join(&mut tx, &own, thread_id, group_id, evidence).await? {
        return Ok(None);
    }
    let linked = membership(&mut tx, thread_id).await?;
    tx.commit().await?;
    Ok(linked)
}

/// A linked alert as its group's primary lists it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct Listed {
    pub channel_id: String,
    pub thread_ts: String,
    pub title: String,
    pub permalink: Option<String>,
    /// `same_alert` or `same_root`.
    pub reason: String,
    pub linked_at: chrono::DateTime<chrono::Utc>,
}

/// Group `group_id`'s linked alerts: how many, and the newest `limit` of them, newest first.
pub async fn linked(
    pool: &PgPool,
    group_id: i64,
    limit: u32,
) -> Result<(i64, Vec<Listed>), sqlx::Error> {
    let count: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM group_members WHERE group_id = $1 AND reason <> 'primary'",
    )
    .bind(group_id)
    .fetch_one(pool)
    .await?;
    let newest = sqlx::query_as(
        "SELECT t.channel_id, t.thread_ts, m.title, m.permalink, m.reason, m.linked_at
           FROM group_members m JOIN threads t ON t.id = m.thread_id
          WHERE m.group_id = $1 AND m.reason <> 'primary'
          ORDER BY m.linked_at DESC, m.thread_id DESC
          LIMIT $2",
    )
    .bind(group_id)
    .bind(i64::from(limit))
    .fetch_all(pool)
    .await?;
    Ok((count, newest))
}

/// Marks thread `thread_id`'s one-line reply as about to be posted.
pub async fn link_attempted(pool: &PgPool, thread_id: i64) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE group_members SET link_attempted_at = now() WHERE thread_id = $1")
        .bind(thread_id)
        .execute(pool)
        .await
        .map(|_| ())
}

/// Stores thread `thread_id`'s one-line reply, unless one is stored already.
pub async fn link_posted(pool: &PgPool, thread_id: i64, ts: &str) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE group_members SET link_ts = $2 WHERE thread_id = $1 AND link_ts IS NULL")
        .bind(thread_id)
        .bind(ts)
        .execute(pool)
        .await
        .map(|_| ())
}

/// Stores the link to thread `thread_id`'s alert, unless one is stored already.
pub async fn set_permalink(pool: &PgPool, thread_id: i64, link: &str) -> Result<(), sqlx::Error> {
    sqlx::query(
        "UPDATE group_members SET permalink = $2 WHERE thread_id = $1 AND permalink IS NULL",
    )
    .bind(thread_id)
    .bind(link)
    .execute(pool)
    .await
    .map(|_| ())
}

/// Records that the primary's reply of group `group_id` now shows `count` linked alerts.
pub async fn set_shown(
    conn: &mut PgConnection,
    group_id: i64,
    count: i64,
) -> Result<(), sqlx::Error> {
    sqlx::query("UPDATE incident_groups SET shown = $2 WHERE id = $1")
        .bind(group_id)
        .bind(i32::try_from(count).unwrap_or(i32::MAX))
        .execute(&mut *conn)
        .await
        .map(|_| ())
}

/// What resolving a thread did to its group.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupResolution {
    /// The thread is in no group, or alone in one: an incident of its own.
    Alone,
    /// The thread is its group's primary: the group is resolved now, with this many alerts.
    Group { alerts: i64 },
    /// The group was resolved already (by its primary): the alert's recovery is recorded, not
    /// announced as another incident.
    AlreadyResolved,
    /// The thread is linked to an open group: its alert ended, the group's incident goes on.
    Linked,
}

/// Resolves thread `thread_id`'s group, in `conn`'s transaction (the thread is being resolved):
/// a primary resolves its group once; a linked thread records its alert's recovery.
pub async fn resolve(
    conn: &mut PgConnection,
    thread_id: i64,
) -> Result<GroupResolution, sqlx::Error> {
    let Some(own) = membership(conn, thread_id).await? else {
        return Ok(GroupResolution::Alone);
    };
    if own.is_linked() {
        sqlx::query(
            "UPDATE group_members SET recovered_at = coalesce(recovered_at, now())
              WHERE thread_id = $1",
        )
        .bind(thread_id)
        .execute(&mut *conn)
        .await?;
        return Ok(match own.resolved {
            true => GroupResolution::AlreadyResolved,
            false => GroupResolution::Linked,
        });
    }
    let resolved: Option<i64> = sqlx::query_scalar(
        "UPDATE incident_groups SET status = 'resolved', resolved_at = now()
          WHERE id = $1 AND status = 'open'
          RETURNING (SELECT count(*) FROM group_members WHERE group_id = $1)",
    )
    .bind(own.group_id)
    .fetch_optional(&mut *conn)
    .await?;
    if resolved.is_some() {
        // The repeats of the primary's own alert end with it: their threads close too (a
        // later notification of its end finds nothing open to announce).
        sqlx::query(
            "UPDATE threads SET status = 'resolved', resolved_at = now()
              WHERE status = 'open' AND id IN (
                SELECT m.thread_id FROM group_members m
                 WHERE m.group_id = $1 AND m.reason = 'same_alert'
                   AND m.fingerprint = $2)",
        )
        .bind(own.group_id)
        .bind(&own.fingerprint)
        .execute(&mut *conn)
        .await?;
    }
    Ok(match resolved {
        Some(alerts) if alerts > 1 => GroupResolution::Group { alerts },
        Some(_) => GroupResolution::Alone,
        None => GroupResolution::AlreadyResolved,
    })
}
