//! Approve / Reject on a proposed action, clicked as Slack delivers it — a signed form POST to
//! `/slack/interactivity`, or an `interactive` envelope over Socket Mode — against a real bot,
//! database and Slack stand-in: a decision is recorded at most once (state, who, when, with one
//! `wake` outbox row, and for a rejection the action's `publish` row; no relay runs here), only a
//! listed approver (by id or user group) may approve, anyone may reject, and every click that
//! decides nothing leaves the row as it was and tells the clicker why, in an ephemeral message.

mod common;

use common::*;
use firstline_config::{SecretString, Settings, SlackMode};
use firstline_model::{Action, ActionBlock, Decision, WorkloadKind};
use firstline_slack::standin::StandIn;
use firstline_slack::standin::delivery::Deliverer;
use firstline_slack::standin::state::{Failure, INCIDENTS, ONCALL_USER};
use firstline_slack::{OutgoingMessage, SlackApi};
use firstline_store::actions::{self, NewAction};
use serde_json::{Value, json};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Listed for namespace `shop` by id.
const LEAD: &str = "U07LEAD0001";
/// Listed for every namespace (`*`) by id.
const SRE: &str = "W07SRE00001";
/// A user group listed for `shop`, and its one member.
const GROUP: &str = "S07SREGROUP";
const GROUP_MEMBER: &str = "U07GROUP001";
/// Listed nowhere.
const OUTSIDER: &str = "U07OUTSIDER";

const WAIT: Duration = Duration::from_secs(30);

/// Actions on, approvers as above.
fn approvers(s: &mut Settings) {
    s.actions.enabled = true;
    s.actions
        .approvers
        .insert("shop".into(), vec![LEAD.into(), GROUP.into()]);
    s.actions.approvers.insert("*".into(), vec![SRE.into()]);
}

/// A hash of a change (sha256-shaped).
fn hash(n: u32) -> String {
    format!("{n:064x}")
}

struct Desk {
    slack: StandIn,
    bot: TestBot,
    db: firstline_testkit::TestDb,
    cancel: CancellationToken,
    api: SlackApi,
    /// The alert's ts: the thread.
    thread_ts: String,
}

/// One action a round proposed, shown in its reply.
struct Proposal {
    id: i64,
    hash: String,
    reply_ts: String,
}

/// A bot in `mode` (settings changed by `configure`) with a thread, and the group defined.
async fn desk(mode: SlackMode, configure: impl FnOnce(&mut Settings)) -> Desk {
    let (slack, bot, db, cancel) = bot_on_standin_with(mode, configure).await;
    slack.define_user_group(GROUP, &[GROUP_MEMBER]);
    let thread_ts = slack.user_says(INCIDENTS, ONCALL_USER, "checkout is crash-looping", None);
    wait_count(
        &db.pool,
        "the thread",
        "SELECT count(*) FROM threads",
        1,
        WAIT,
    )
    .await;
    let api = SlackApi::new(
        &slack.api_url(),
        &SecretString::new("xoxb-standin-token"),
        Duration::from_secs(5),
    );
    Desk {
        slack,
        bot,
        db,
        cancel,
        api,
        thread_ts,
    }
}

impl Desk {
    /// Round `round` proposes restarting `shop/checkout` (change hashed `hash(round)`), expiring
    /// in `expires_in_secs` (negative: already past), in a reply with Approve and Reject.
    async fn propose(&self, round: i32, expires_in_secs: i64) -> Proposal {
        let (thread_id, round_id): (i64, i64) = sqlx::query_as(
            "INSERT INTO rounds (thread_id, number, workflow_id, run_id, started_at, grounded,
                                 result)
             SELECT id, $1, 'w', 'r', now(), true, '{}' FROM threads
             RETURNING thread_id, id",
        )
        .bind(round)
        .fetch_one(&self.db.pool)
        .await
        .expect("a round");
        let change_hash = hash(round as u32);
        let row = actions::propose(
            &self.db.pool,
            &NewAction {
                thread_id,
                round_id,
                action: Action::Restart {
                    namespace: "shop".into(),
                    kind: WorkloadKind::Deployment,
                    name: "checkout".into(),
                },
                cause: "checkout is OOMKilled".into(),
                change: json!({"patch": {"spec": {"template": {"metadata": {"annotations": {}}}}}}),
                change_hash: change_hash.clone(),
                expires_at: chrono::Utc::now() + chrono::Duration::seconds(expires_in_secs),
            },
        )
        .await
        .expect("a proposal");
        let block_id = ActionBlock { action_id: row.id }.block_id();
        let reply_ts = self
            .api
            .post_message(&OutgoingMessage {
                channel: INCIDENTS.into(),
                thread_ts: Some(self.thread_ts.clone()),
                text: "Proposed: restart checkout".into(),
                blocks: Some(json!([
                    {"type": "section", "text": {"type": "mrkdwn",
                     "text": "*Proposed*: Restart Deployment `shop/checkout`"}},
                    {"type": "actions", "block_id": block_id, "elements": [
                        {"type": "button", "action_id": "action_approve", "style": "primary",
                         "value": ActionBlock::value(Decision::Approve, &change_hash),
                         "text": {"type": "plain_text", "text": "Approve"}},
                        {"type": "button", "action_id": "action_reject", "style": "danger",
                         "value": ActionBlock::value(Decision::Reject, &change_hash),
                         "text": {"type": "plain_text", "text": "Reject"}}]},
                    {"type": "context", "elements": [{"type": "mrkdwn", "text": "round 1"}]}
                ])),
                metadata: None,
            })
            .await
            .expect("the reply posted");
        actions::set_message(&self.db.pool, row.id, &reply_ts)
            .await
            .expect("the reply's ts stored");
        Proposal {
            id: row.id,
            hash: change_hash,
            reply_ts,
        }
    }

    /// The `block_actions` payload of `user` clicking Approve or Reject on `proposal`'s reply.
    fn click(&self, proposal: &Proposal, user: &str, decision: Decision) -> Value {
        let message = self
            .slack
            .workspace()
            .message(INCIDENTS, &proposal.reply_ts)
            .expect("the reply");
        let action_id = match decision {
            Decision::Approve => "action_approve",
            Decision::Reject => "action_reject",
        };
        // Named, not looked up: once decided, the reply no longer has the buttons (a person
        // whose client has not refreshed yet still clicks them).
        let action = json!({"type": "button", "action_id": action_id,
                            "block_id": ActionBlock { action_id: proposal.id }.block_id(),
                            "value": ActionBlock::value(decision, &proposal.hash)});
        Deliverer::block_actions(self.slack.workspace(), INCIDENTS, &message, user, action).0
    }

    /// Delivers `payload` as Slack does (HTTP: answered 2xx; Socket Mode: queued).
    async fn deliver(&self, payload: Value) {
        self.slack
            .deliverer()
            .interact(payload)
            .await
            .expect("acknowledged");
    }

    /// `(state, decided_by)` of action `id`.
    async fn state(&self, id: i64) -> (String, Option<String>) {
        sqlx::query_as("SELECT state, decided_by FROM actions WHERE id = $1")
            .bind(id)
            .fetch_one(&self.db.pool)
            .await
            .expect("the action")
    }

    /// Outbox rows of action `id` of `kind`.
    async fn outbox(&self, id: i64, kind: &str) -> i64 {
        sqlx::query_scalar("SELECT count(*) FROM outbox WHERE action_id = $1 AND kind = $2")
            .bind(id)
            .bind(kind)
            .fetch_one(&self.db.pool)
            .await
            .expect("a count")
    }

    /// Waits for the `n`th ephemeral message shown to `user`, and returns it.
    async fn told(&self, user: &str, n: usize) -> String {
        firstline_testkit::wait_for("an ephemeral message", WAIT, || async {
            let shown = self.slack.ephemerals_for(user);
            shown.get(n - 1).map(|e| {
                assert_eq!(e.channel, INCIDENTS);
                assert_eq!(e.thread_ts.as_deref(), Some(self.thread_ts.as_str()));
                e.text.clone()
            })
        })
        .await
    }

    /// Waits until the reply shows `line` where its buttons were.
    async fn shows(&self, proposal: &Proposal, line: &str) {
        firstline_testkit::wait_for("the reply edited", WAIT, || async {
            let reply = self
                .slack
                .workspace()
                .message(INCIDENTS, &proposal.reply_ts)?;
            let blocks = reply.blocks.unwrap_or(Value::Null).to_string();
            (blocks.contains(line) && !blocks.contains("action_approve")).then_some(())
        })
        .await;
    }

    fn interactivity_url(&self) -> String {
        self.bot
            .events_url
            .replace("/slack/events", "/slack/interactivity")
    }

    async fn stop(self) {
        self.bot.stop().await;
        self.cancel.cancel();
    }
}

/// `payload` as the interactivity endpoint's form body.
fn form(payload: &Value) -> String {
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", &payload.to_string())
        .finish()
}

/// The value of `firstline_action_decisions_total{outcome}` on the bot's `/metrics`.
async fn decisions_counted(desk: &Desk, outcome: &str) -> f64 {
    let metrics = http_client()
        .get(&desk.bot.events_url.replace("/slack/events", "/metrics"))
        .send()
        .await;
    metrics
        .body
        .lines()
        .find(|l| {
            l.starts_with("firstline_action_decisions_total")
                && l.contains(&format!("outcome=\"{outcome}\""))
        })
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<f64>().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn only_a_listed_approver_or_a_member_of_a_listed_group_may_approve() {
    let desk = desk(SlackMode::Http, approvers).await;
    let proposal = desk.propose(1, 3600).await;

    // The group's member, while Slack cannot say who is in the group: refused, never allowed.
    desk.slack.fail_next(
        "usergroups.users.list",
        Failure::Error("missing_scope".into()),
    );
    desk.deliver(desk.click(&proposal, GROUP_MEMBER, Decision::Approve))
        .await;
    let said = desk.told(GROUP_MEMBER, 1).await;
    assert!(
        said.contains(&format!(
            "could not check whether you are in <!subteam^{GROUP}>"
        )),
        "{said}"
    );
    assert!(said.contains("missing_scope"), "{said}");
    assert_eq!(desk.state(proposal.id).await.0, "proposed");

    // Someone listed nowhere: nothing recorded, and told who may approve in `shop`.
    desk.deliver(desk.click(&proposal, OUTSIDER, Decision::Approve))
        .await;
    let said = desk.told(OUTSIDER, 1).await;
    assert!(said.contains("You may not approve"), "{said}");
    assert!(said.contains("namespace `shop`"), "{said}");
    for who in [
        format!("<@{LEAD}>"),
        format!("<!subteam^{GROUP}>"),
        format!("<@{SRE}>"),
    ] {
        assert!(said.contains(&who), "names {who}: {said}");
    }
    assert_eq!(desk.state(proposal.id).await, ("proposed".into(), None));
    assert_eq!(
        count(
            &desk.db.pool,
            "SELECT count(*) FROM outbox WHERE action_id IS NOT NULL"
        )
        .await,
        0,
        "no outbox row"
    );

    // The group's member again, Slack answering (once: its answer is kept for a minute): they
    // approve.
    desk.deliver(desk.click(&proposal, GROUP_MEMBER, Decision::Approve))
        .await;
    assert_eq!(
        desk.state(proposal.id).await,
        ("approved".into(), Some(GROUP_MEMBER.into()))
    );
    assert_eq!(desk.outbox(proposal.id, "wake").await, 1);
    assert_eq!(
        desk.outbox(proposal.id, "publish").await,
        0,
        "an approval is published when it has run, not now"
    );
    let wake: Value = sqlx::query_scalar("SELECT payload FROM outbox WHERE action_id = $1")
        .bind(proposal.id)
        .fetch_one(&desk.db.pool)
        .await
        .unwrap();
    assert_eq!(wake["decision"]["action_id"], proposal.id);
    assert_eq!(wake["decision"]["decision"], "approve");
    assert_eq!(wake["decision"]["user"], GROUP_MEMBER);
    assert_eq!(wake["thread"]["thread_ts"], desk.thread_ts.as_str());
    desk.shows(
        &proposal,
        &format!("✅ Approved by <@{GROUP_MEMBER}> — running …"),
    )
    .await;
    assert_eq!(
        desk.slack.ephemerals_for(GROUP_MEMBER).len(),
        1,
        "a recorded decision is shown on the reply, not told privately"
    );
    let lookups = desk
        .slack
        .calls()
        .iter()
        .filter(|c| c.method == "usergroups.users.list")
        .count();
    assert_eq!(
        lookups, 2,
        "the failed lookup, then one answer for both later clicks"
    );

    assert!(decisions_counted(&desk, "not_allowed").await >= 2.0);
    assert!(decisions_counted(&desk, "recorded_approve").await >= 1.0);
    desk.stop().await;
}

#[tokio::test]
async fn a_forged_click_is_refused_and_a_replayed_one_is_recorded_once() {
    let desk = desk(SlackMode::Http, approvers).await;
    let proposal = desk.propose(1, 3600).await;
    let click = desk.click(&proposal, LEAD, Decision::Approve);
    let body = form(&click);
    let url = desk.interactivity_url();

    // Signed with another secret, or ten minutes old: 401, nothing recorded, nobody told.
    let forged = Deliverer::new(
        "not-the-signing-secret",
        Some(desk.bot.events_url.clone()),
        Duration::from_millis(10),
    );
    assert_eq!(
        forged.interact(click.clone()).await,
        Err("HTTP 401 Unauthorized".into())
    );
    assert_eq!(post_signed(&url, &body, -600, &[]).await, 401);
    assert_eq!(desk.state(proposal.id).await.0, "proposed");
    assert_eq!(desk.outbox(proposal.id, "wake").await, 0);

    // The same click twice: recorded once, one wake-up; the replay is told it was done.
    assert_eq!(post_signed(&url, &body, 0, &[]).await, 200);
    assert_eq!(post_signed(&url, &body, 0, &[]).await, 200);
    assert_eq!(
        desk.state(proposal.id).await,
        ("approved".into(), Some(LEAD.into()))
    );
    assert_eq!(desk.outbox(proposal.id, "wake").await, 1);
    let said = desk.told(LEAD, 1).await;
    assert!(
        said.starts_with("You already approved this action at <!date^"),
        "{said}"
    );

    // A value that is no decision: acknowledged, nothing recorded.
    let mut odd = desk.click(&proposal, LEAD, Decision::Reject);
    odd["actions"][0]["value"] = json!("reject:please");
    assert_eq!(post_signed(&url, &form(&odd), 0, &[]).await, 200);
    assert_eq!(desk.state(proposal.id).await.0, "approved");
    desk.stop().await;
}

#[tokio::test]
async fn expired_and_already_decided_proposals_change_nothing_and_say_why() {
    let desk = desk(SlackMode::Http, approvers).await;

    // Its time ran out an hour ago; the worker has not marked it yet.
    let stale = desk.propose(1, -3600).await;
    desk.deliver(desk.click(&stale, LEAD, Decision::Approve))
        .await;
    let said = desk.told(LEAD, 1).await;
    assert!(said.contains("This proposal expired at <!date^"), "{said}");
    assert_eq!(desk.state(stale.id).await, ("proposed".into(), None));
    // Marked expired by the worker: the same.
    actions::expire(&desk.db.pool, stale.id).await.unwrap();
    desk.deliver(desk.click(&stale, OUTSIDER, Decision::Reject))
        .await;
    let said = desk.told(OUTSIDER, 1).await;
    assert!(said.contains("expired"), "{said}");
    assert_eq!(desk.state(stale.id).await, ("expired".into(), None));
    assert_eq!(desk.outbox(stale.id, "wake").await, 0);

    // Rejected by one person; an approver's later click changes nothing and names them.
    let rejected = desk.propose(2, 3600).await;
    desk.deliver(desk.click(&rejected, OUTSIDER, Decision::Reject))
        .await;
    assert_eq!(desk.state(rejected.id).await.0, "rejected");
    desk.deliver(desk.click(&rejected, SRE, Decision::Approve))
        .await;
    let said = desk.told(SRE, 1).await;
    assert!(
        said.contains(&format!("already rejected by <@{OUTSIDER}> at <!date^")),
        "{said}"
    );
    assert_eq!(
        desk.state(rejected.id).await,
        ("rejected".into(), Some(OUTSIDER.into()))
    );
    assert_eq!(desk.outbox(rejected.id, "wake").await, 1);

    // A click on another message than the one that shows the action: unknown here.
    let open = desk.propose(3, 3600).await;
    let mut elsewhere = desk.click(&open, LEAD, Decision::Approve);
    elsewhere["message"]["ts"] = json!(rejected.reply_ts);
    elsewhere["container"]["message_ts"] = json!(rejected.reply_ts);
    desk.deliver(elsewhere).await;
    let said = desk.told(LEAD, 2).await;
    assert!(said.contains("not on the message that shows"), "{said}");
    // And an action that does not exist.
    let mut unknown = desk.click(&open, LEAD, Decision::Approve);
    unknown["actions"][0]["block_id"] = json!(ActionBlock { action_id: 999_999 }.block_id());
    desk.deliver(unknown).await;
    let said = desk.told(LEAD, 3).await;
    assert!(said.contains("I do not know this action"), "{said}");
    assert_eq!(desk.state(open.id).await, ("proposed".into(), None));
    assert!(decisions_counted(&desk, "expired").await >= 2.0);
    assert!(decisions_counted(&desk, "already_decided").await >= 1.0);
    desk.stop().await;
}

#[tokio::test]
async fn two_approvers_at_once_and_double_clicks_record_exactly_one_decision() {
    let desk = desk(SlackMode::Http, approvers).await;
    let proposal = desk.propose(1, 3600).await;
    let url = desk.interactivity_url();
    // Both approvers double-click, all four requests at once.
    let bodies: Vec<String> = [LEAD, SRE, LEAD, SRE]
        .iter()
        .map(|user| form(&desk.click(&proposal, user, Decision::Approve)))
        .collect();
    let statuses =
        futures::future::join_all(bodies.iter().map(|body| post_signed(&url, body, 0, &[]))).await;
    assert_eq!(statuses, [200, 200, 200, 200]);
    let (state, by) = desk.state(proposal.id).await;
    assert_eq!(state, "approved");
    let winner = by.expect("who decided");
    let loser = if winner == LEAD { SRE } else { LEAD };
    assert_eq!(desk.outbox(proposal.id, "wake").await, 1);
    assert_eq!(
        count(
            &desk.db.pool,
            "SELECT count(*) FROM outbox WHERE action_id IS NOT NULL"
        )
        .await,
        1,
        "exactly one outbox row"
    );
    // The other approver is told who decided; the winner's second click, that they did.
    for n in 1..=2 {
        let said = desk.told(loser, n).await;
        assert!(
            said.contains(&format!("already approved by <@{winner}>")),
            "{said}"
        );
    }
    let said = desk.told(&winner, 1).await;
    assert!(said.starts_with("You already approved"), "{said}");
    desk.shows(&proposal, &format!("✅ Approved by <@{winner}>"))
        .await;
    desk.stop().await;
}

#[tokio::test]
async fn a_click_for_another_change_than_the_one_stored_is_refused() {
    let desk = desk(SlackMode::Http, approvers).await;
    let proposal = desk.propose(1, 3600).await;
    let mut other = desk.click(&proposal, LEAD, Decision::Approve);
    other["actions"][0]["value"] = json!(ActionBlock::value(Decision::Approve, &hash(77)));
    desk.deliver(other).await;
    let said = desk.told(LEAD, 1).await;
    assert!(
        said.contains("a change other than the one proposed"),
        "{said}"
    );
    assert_eq!(desk.state(proposal.id).await, ("proposed".into(), None));
    assert_eq!(desk.outbox(proposal.id, "wake").await, 0);
    assert!(decisions_counted(&desk, "other_change").await >= 1.0);
    desk.stop().await;
}

/// Over Socket Mode: someone listed nowhere rejects; the rejection wakes the round and is
/// published, and the reply says who rejected it.
#[tokio::test]
async fn anyone_may_reject_over_socket_mode_and_the_rejection_is_published() {
    let desk = desk(SlackMode::Socket, approvers).await;
    let proposal = desk.propose(1, 3600).await;
    desk.deliver(desk.click(&proposal, OUTSIDER, Decision::Reject))
        .await;
    wait_count(
        &desk.db.pool,
        "the rejection",
        "SELECT count(*) FROM actions WHERE state = 'rejected'",
        1,
        WAIT,
    )
    .await;
    assert_eq!(
        desk.state(proposal.id).await,
        ("rejected".into(), Some(OUTSIDER.into()))
    );
    assert_eq!(desk.outbox(proposal.id, "wake").await, 1);
    assert_eq!(desk.outbox(proposal.id, "publish").await, 1);
    let record: Value =
        sqlx::query_scalar("SELECT payload FROM outbox WHERE action_id = $1 AND kind = 'publish'")
            .bind(proposal.id)
            .fetch_one(&desk.db.pool)
            .await
            .unwrap();
    assert_eq!(record["schema"], "firstline.action.v1");
    assert_eq!(record["state"], "rejected");
    assert_eq!(record["decided_by"], OUTSIDER);
    desk.shows(&proposal, &format!("✖️ Rejected by <@{OUTSIDER}>"))
        .await;
    assert!(desk.slack.ephemerals_for(OUTSIDER).is_empty());
    desk.stop().await;
}

#[tokio::test]
async fn nothing_is_decided_while_actions_are_turned_off() {
    let desk = desk(SlackMode::Http, |s| {
        approvers(s);
        s.actions.enabled = false;
    })
    .await;
    let proposal = desk.propose(1, 3600).await;
    desk.deliver(desk.click(&proposal, LEAD, Decision::Approve))
        .await;
    desk.deliver(desk.click(&proposal, OUTSIDER, Decision::Reject))
        .await;
    for user in [LEAD, OUTSIDER] {
        let said = desk.told(user, 1).await;
        assert!(said.contains("`actions.enabled` is false"), "{said}");
    }
    assert_eq!(desk.state(proposal.id).await, ("proposed".into(), None));
    assert_eq!(
        count(
            &desk.db.pool,
            "SELECT count(*) FROM outbox WHERE action_id IS NOT NULL"
        )
        .await,
        0
    );
    assert!(decisions_counted(&desk, "disabled").await >= 2.0);
    desk.stop().await;
}
