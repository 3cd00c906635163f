//! `incident_round(Trigger { thread })`, one run per live thread (ARCHITECTURE.md, invariant 4):
//!
//! ```text
//! loop {
//!     load_context → guards (resolved, rounds ≥ max, age > max) → return
//!     linked to another thread's analysis and nobody asked here? post_link → return
//!     (first round) probe_group, again every 3 s while an earlier alert's first analysis
//!         runs (≤ grouping.wait_secs): the alert shares an open group's root? post_link → return
//!     run_graph → commit_round → (first round, grounded) link_round: the root is an open
//!         group's? post_link → return
//!     (actions on, grounded) propose_action → post_to_thread
//!         → (with a model) refine_round → edit_post
//!     a proposal? wait for its decision, a mention or actions.approval_timeout_secs:
//!         approved → execute_action → verify_action; otherwise expire_action; → show_action
//!     a mention (or, after asking, a reply) came in meanwhile? next round
//!         : grounded? return : wait for a mention ≤ idle
//! }
//! ```
//!
//! Grouping (storms) is decided by what activities return — `load_context`'s `linked` and
//! policy, `probe_group`, `link_round` — and only in a thread's first round, so a history
//! recorded before it existed replays unchanged: its recorded policy has no grouping.
//!
//! A decision arrives as the `decision` signal (the bot recorded it in Postgres first); the
//! `actions` row, not the signal, decides what runs: an approval that won the race against the
//! timer is executed, and `execute_action` refuses anything not approved.
//!
//! Mentions arrive as the `mention` signal and are counted *before* `run_graph` starts, so one
//! that lands while a round runs starts the next round right after it (invariant 5). The run also
//! counts its own rounds and stops at `max_rounds` whatever `load_context` reports. The code is
//! deterministic: Temporal timers and the SDK's `select!`, no clock, randomness or I/O — every
//! fact comes from an activity's recorded result, including the limits (`load_context` carries
//! the worker's configured [`RoundPolicy`]). A round whose activities run out of retries posts a
//! short failure note in the thread (`post_failure`) before the run fails.

use std::time::Duration;

use firstline_model::{ActionState, Decision, DecisionSignal, MentionSignal, ThreadKey, Trigger};
use temporalio_common::RetryPolicy;
use temporalio_macros::{workflow, workflow_methods};
use temporalio_sdk::{
    ActivityExecutionError, ActivityOptions, CancellableFuture, SyncWorkflowContext,
    WorkflowContext, WorkflowContextView, WorkflowResult,
};

use crate::activities::RoundActivities;
use crate::types::{
    ActionInput, ActionPolicy, ActivityPolicy, CommitInput, EditInput, FailureInput,
    GroupingPolicy, Guard, LinkInput, LinkRoundInput, LoadContextInput, PostInput, ProbeInput,
    ProposeInput, RefineInput, RoundPolicy, RunGraphInput, RunOutcome,
};

/// Signals kept per run: a bound on workflow state whatever a channel does.
const MAX_MENTIONS: usize = 200;

/// The workflow's state: the thread and the mentions signalled so far.
#[workflow]
pub struct IncidentRound {
    thread: ThreadKey,
    mentions: Vec<MentionSignal>,
    /// Decisions on proposed actions, in arrival order (the `actions` row is the truth; a
    /// decision only wakes the round that waits for it).
    decisions: Vec<DecisionSignal>,
}

#[workflow_methods]
impl IncidentRound {
    #[init]
    pub fn new(_ctx: &WorkflowContextView, trigger: Trigger) -> Self {
        Self {
            thread: trigger.thread,
            mentions: Vec::new(),
            decisions: Vec::new(),
        }
    }

    #[run(name = "incident_round")]
    pub async fn run(ctx: &mut WorkflowContext<Self>) -> WorkflowResult<RunOutcome> {
        let thread = ctx.state(|s| s.thread.clone());
        // Before the first load the worker's limits are unknown: defaults bound that one call.
        let mut policy = RoundPolicy::default();
        let mut rounds_run = 0u32;
        let mut answered = 0usize;
        'rounds: loop {
            // Counted before the round reads the thread: every mention counted is already a row
            // (the bot commits before it signals), and one arriving later starts another round.
            let seen = ctx.state(|s| s.mentions.len());
            let mentions = ctx.state(|s| s.mentions[answered.min(seen)..seen].to_vec());
            let context = ctx
                .execute_activity(
                    RoundActivities::load_context,
                    LoadContextInput {
                        thread: thread.clone(),
                    },
                    options(&policy.activity),
                )
                .await?;
            policy = context.policy.clone();
            if let Some(guard) = context.guard() {
                return Ok(RunOutcome::Skipped { guard, rounds_run });
            }
            // The run bounds itself too, whatever the rows say.
            if rounds_run >= policy.max_rounds {
                return Ok(RunOutcome::Skipped {
                    guard: Guard::MaxRounds {
                        rounds: rounds_run,
                        max: policy.max_rounds,
                    },
                    rounds_run,
                });
            }
            let Some(thread_id) = context.thread_id else {
                return Ok(RunOutcome::Skipped {
                    guard: Guard::UnknownThread,
                    rounds_run,
                });
            };
            let round = context.rounds_done + 1;
            // What people wrote in this thread since the last round (the alert's own wake-up
            // is no question).
            let asked_here = mentions.iter().any(|m| m.ts != context.alert.ts);
            // The one line a linked alert gets instead of a reply.
            let link_line = LinkInput {
                thread: thread.clone(),
                thread_id,
                alert_ts: context.alert.ts.clone(),
            };
            // A linked alert is answered by its group's analysis, in one line — unless someone
            // asks here, who gets a round of their own. A new alert first asks whether it shares
            // an open group's root (a pod on a node that is down) for an object read or two;
            // while an earlier alert's first analysis runs, it waits for that root (bounded by
            // `grouping.wait_secs`).
            let linked = match (&policy.grouping, round) {
                _ if asked_here => false,
                _ if context.linked.is_some() => true,
                (Some(grouping), 1) => {
                    let checks = grouping.wait_secs / GroupingPolicy::RECHECK.as_secs() + 1;
                    let mut linked = false;
                    for check in 0..checks {
                        let probed = ctx
                            .execute_activity(
                                RoundActivities::probe_group,
                                ProbeInput {
                                    thread: thread.clone(),
                                    thread_id,
                                    run_id: ctx.run_id().to_string(),
                                    alert: context.alert.clone(),
                                    wait_secs: grouping.wait_secs,
                                },
                                options(&policy.activity),
                            )
                            .await?;
                        linked = probed.linked.is_some();
                        if linked || !probed.earlier_running || check + 1 == checks {
                            break;
                        }
                        ctx.timer(GroupingPolicy::RECHECK).await;
                        // Someone asked here while it waited: a round for them, now.
                        if ctx.state(|s| s.mentions.len()) > seen {
                            continue 'rounds;
                        }
                    }
                    linked
                }
                _ => false,
            };
            if linked {
                ctx.execute_activity(
                    RoundActivities::post_link,
                    link_line,
                    options(&policy.activity),
                )
                .await?;
                // Someone asked here meanwhile: they get a round of their own.
                if ctx.state(|s| s.mentions.len()) > seen {
                    continue;
                }
                return Ok(RunOutcome::Linked { rounds_run });
            }
            // Every message the round answers: its mentions and replies (their 👀; a click is
            // no message), else the alert.
            let mut react_to: Vec<String> = mentions
                .iter()
                .filter(|m| m.ts != context.alert.ts && !m.clicked)
                .map(|m| m.ts.clone())
                .collect();
            if react_to.is_empty() && !context.alert.ts.is_empty() {
                react_to.push(context.alert.ts.clone());
            }
            let finished = async {
                ctx.execute_activity(
                    RoundActivities::run_graph,
                    RunGraphInput {
                        thread: thread.clone(),
                        thread_id,
                        round,
                        run_id: ctx.run_id().to_string(),
                        alert: context.alert.clone(),
                        context: context.thread.clone(),
                        mentions: mentions.clone(),
                    },
                    options(&policy.run_graph),
                )
                .await?;
                let committed = ctx
                    .execute_activity(
                        RoundActivities::commit_round,
                        CommitInput {
                            thread_id,
                            round,
                            workflow_id: ctx.workflow_id().to_string(),
                            run_id: ctx.run_id().to_string(),
                        },
                        options(&policy.activity),
                    )
                    .await?;
                // The first round of an alert nobody asked about: when its root is an open
                // group's, the group's analysis answers it in one line.
                if policy.grouping.is_some() && committed.grounded && round == 1 && !asked_here {
                    let link = ctx
                        .execute_activity(
                            RoundActivities::link_round,
                            LinkRoundInput { thread_id, round },
                            options(&policy.activity),
                        )
                        .await?;
                    if link.linked.is_some() {
                        ctx.execute_activity(
                            RoundActivities::post_link,
                            link_line.clone(),
                            options(&policy.activity),
                        )
                        .await?;
                        return Ok::<_, ActivityExecutionError>((committed, None, true));
                    }
                }
                // Only a grounded round's verified cause may propose; a proposal that cannot be
                // prepared leaves the reply as it would have been.
                let proposed = if policy.actions.is_some() && committed.grounded {
                    match ctx
                        .execute_activity(
                            RoundActivities::propose_action,
                            ProposeInput {
                                thread_id,
                                round,
                                alert: context.alert.clone(),
                            },
                            options(&policy.activity),
                        )
                        .await
                    {
                        Ok(outcome) => outcome.action_id,
                        Err(error) => {
                            ctx.set_current_details(format!(
                                "could not prepare round {round}'s proposal: {error}"
                            ));
                            None
                        }
                    }
                } else {
                    None
                };
                ctx.execute_activity(
                    RoundActivities::post_to_thread,
                    PostInput {
                        thread: thread.clone(),
                        thread_id,
                        round,
                        react_to: react_to.clone(),
                    },
                    options(&policy.activity),
                )
                .await?;
                Ok((committed, proposed, false))
            }
            .await;
            // The deterministic reply is posted; with a model, it is improved in place. A model
            // pass that fails outright leaves the posted reply as it is.
            let finished = match (finished, &policy.refine) {
                (Ok((mut committed, proposed, false)), Some(refine)) => {
                    let refined = ctx
                        .execute_activity(
                            RoundActivities::refine_round,
                            RefineInput {
                                thread: thread.clone(),
                                thread_id,
                                round,
                                run_id: ctx.run_id().to_string(),
                            },
                            options(refine),
                        )
                        .await;
                    match refined {
                        Ok(refined) => {
                            committed.grounded = refined.grounded;
                            let edited = ctx
                                .execute_activity(
                                    RoundActivities::edit_post,
                                    EditInput {
                                        thread: thread.clone(),
                                        thread_id,
                                        round,
                                        react_to: react_to.clone(),
                                    },
                                    options(&policy.activity),
                                )
                                .await;
                            if let Err(error) = edited {
                                ctx.set_current_details(format!(
                                    "could not edit the reply of round {round}: {error}"
                                ));
                            }
                        }
                        Err(error) => ctx.set_current_details(format!(
                            "the model pass over round {round} failed: {error}"
                        )),
                    }
                    Ok((committed, proposed, false))
                }
                (finished, _) => finished,
            };
            let (committed, proposed, linked) = match finished {
                Ok(finished) => finished,
                Err(error) => {
                    // Out of retries: say so in the thread (best effort), then fail the run.
                    let note = ctx
                        .execute_activity(
                            RoundActivities::post_failure,
                            FailureInput {
                                thread: thread.clone(),
                                thread_id,
                                round,
                                react_to,
                                reason: chain(&error),
                            },
                            options(&policy.activity),
                        )
                        .await;
                    if let Err(note_error) = note {
                        ctx.set_current_details(format!(
                            "could not post the failure note: {note_error}"
                        ));
                    }
                    return Err(error.into());
                }
            };
            rounds_run += 1;
            answered = seen;
            if linked && ctx.state(|s| s.mentions.len()) <= seen {
                return Ok(RunOutcome::Linked { rounds_run });
            }

            if let (Some(action_id), Some(actions)) = (proposed, policy.actions.clone()) {
                let action = ActionInput {
                    thread: thread.clone(),
                    thread_id,
                    round,
                    action_id,
                };
                await_decision(ctx, &policy, &actions, action, seen).await;
            }

            if ctx.state(|s| s.mentions.len()) > seen || committed.answered_meanwhile {
                continue;
            }
            // What was committed and posted decides, not the graph attempt's own report.
            if committed.grounded {
                return Ok(RunOutcome::Answered { rounds_run });
            }
            let timer = ctx.timer(policy.idle_timeout());
            let mut timer = std::pin::pin!(timer);
            let mentioned = ctx.wait_condition(move |s| s.mentions.len() > seen);
            let mut mentioned = std::pin::pin!(mentioned);
            let woke = temporalio_sdk::workflows::select! {
                _ = mentioned.as_mut() => true,
                _ = timer.as_mut() => false,
            };
            if woke {
                // Dropping a timer does not cancel it on the server.
                timer.cancel();
            } else {
                return Ok(RunOutcome::Idle { rounds_run });
            }
        }
    }

    #[signal(name = "mention")]
    pub fn mention(&mut self, _ctx: &mut SyncWorkflowContext<Self>, mention: MentionSignal) {
        // Slack may deliver one message twice; the relay may retry a signal.
        if self.mentions.len() < MAX_MENTIONS && !self.mentions.iter().any(|m| m.ts == mention.ts) {
            self.mentions.push(mention);
        }
    }

    #[signal(name = "decision")]
    pub fn decision(&mut self, _ctx: &mut SyncWorkflowContext<Self>, decision: DecisionSignal) {
        if self.decisions.len() < MAX_MENTIONS && !self.decisions.contains(&decision) {
            self.decisions.push(decision);
        }
    }
}

/// What ended the wait for a decision on a proposal.
enum Woke {
    Decided(Decision),
    /// A mention: a newer round supersedes the proposal.
    Mentioned,
    TimedOut,
}

/// Waits (durably, bounded by `actions.approval_timeout_secs`) for a decision on `action`, then
/// carries it out: an approval executes the action once and verifies it; a rejection, an expiry
/// or a newer round's mention only updates the reply. The `actions` row decides, not the signal:
/// an approval that won the race against expiry is executed, and execution itself refuses
/// anything not approved. Failures are noted on the run and never fail the round.
async fn await_decision(
    ctx: &mut WorkflowContext<IncidentRound>,
    policy: &RoundPolicy,
    actions: &ActionPolicy,
    action: ActionInput,
    seen: usize,
) {
    let action_id = action.action_id;
    let timer = ctx.timer(Duration::from_secs(actions.approval_timeout_secs));
    let mut timer = std::pin::pin!(timer);
    let decided = ctx.wait_condition(move |s| s.decisions.iter().any(|d| d.action_id == action_id));
    let mut decided = std::pin::pin!(decided);
    let mentioned = ctx.wait_condition(move |s| s.mentions.len() > seen);
    let mut mentioned = std::pin::pin!(mentioned);
    let woke = temporalio_sdk::workflows::select! {
        _ = decided.as_mut() => Woke::Decided(ctx.state(|s| {
            s.decisions
                .iter()
                .find(|d| d.action_id == action_id)
                .map_or(Decision::Reject, |d| d.decision)
        })),
        _ = mentioned.as_mut() => Woke::Mentioned,
        _ = timer.as_mut() => Woke::TimedOut,
    };
    if !matches!(woke, Woke::TimedOut) {
        timer.cancel();
    }
    let approved = match woke {
        Woke::Decided(decision) => decision == Decision::Approve,
        Woke::Mentioned | Woke::TimedOut => {
            match ctx
                .execute_activity(
                    RoundActivities::expire_action,
                    action.clone(),
                    options(&policy.activity),
                )
                .await
            {
                Ok(outcome) => outcome.state == ActionState::Approved,
                Err(error) => {
                    ctx.set_current_details(format!(
                        "could not expire action {action_id}: {error}"
                    ));
                    false
                }
            }
        }
    };
    if approved {
        let executed = ctx
            .execute_activity(
                RoundActivities::execute_action,
                action.clone(),
                options(&actions.execute),
            )
            .await;
        match executed {
            Ok(outcome) if outcome.state == ActionState::Executed => {
                if let Err(error) = ctx
                    .execute_activity(
                        RoundActivities::verify_action,
                        action.clone(),
                        options(&actions.verify),
                    )
                    .await
                {
                    ctx.set_current_details(format!(
                        "could not verify action {action_id}: {error}"
                    ));
                }
            }
            Ok(_) => {}
            Err(error) => {
                ctx.set_current_details(format!("could not execute action {action_id}: {error}"))
            }
        }
    }
    if let Err(error) = ctx
        .execute_activity(
            RoundActivities::show_action,
            action,
            options(&policy.activity),
        )
        .await
    {
        ctx.set_current_details(format!("could not show action {action_id}: {error}"));
    }
}

/// An error and its causes, outermost first: the activity's own message is a cause of the
/// SDK's "activity task failed". A cause an outer message already quotes is said once.
fn chain(error: &dyn std::error::Error) -> String {
    let mut parts = vec![error.to_string()];
    let mut source = error.source();
    while let Some(cause) = source.take() {
        parts.push(cause.to_string());
        source = cause.source();
        if parts.len() >= 8 {
            break;
        }
    }
    said_once(&parts)
}

/// `parts` joined with `: `, leaving out each one already said by the parts kept before it.
fn said_once(parts: &[String]) -> String {
    let mut said = String::new();
    for part in parts {
        if part.is_empty() || said.contains(part.as_str()) {
            continue;
        }
        if !said.is_empty() {
            said.push_str(": ");
        }
        said.push_str(part);
    }
    said
}

/// Temporal options for an activity under `policy`.
fn options(policy: &ActivityPolicy) -> ActivityOptions {
    let retry = RetryPolicy::builder()
        .initial_interval(Duration::from_millis(policy.retry_initial_ms))
        .backoff_coefficient(2.0)
        .maximum_interval(Duration::from_secs(policy.retry_max_secs))
        .maximum_attempts(policy.max_attempts)
        .build();
    ActivityOptions::with_start_to_close_timeout(Duration::from_secs(policy.start_to_close_secs))
        .maybe_heartbeat_timeout(policy.heartbeat_secs.map(Duration::from_secs))
        .retry_policy(retry)
        .build()
}

#[cfg(test)]
mod tests {
    use super::said_once;

    #[test]
    fn a_cause_the_outer_message_already_quotes_is_said_once() {
        let cause = "Slack API chat.postMessage: is_archived".to_string();
        let parts = [
            "Activity task failed".to_string(),
            format!("slack: {cause}"),
            cause.clone(),
            cause,
        ];
        assert_eq!(
            said_once(&parts),
            "Activity task failed: slack: Slack API chat.postMessage: is_archived"
        );
    }
}
