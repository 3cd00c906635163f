//! What the workflow and the activities exchange. Everything here is in Temporal's history, so
//! it stays small: thread keys, numbers, a compact context and outcomes — never the graph's
//! state or the evidence (those live in Postgres).

use firstline_model::{MentionSignal, ThreadContext, ThreadKey, limits};
use serde::{Deserialize, Serialize};
use std::time::Duration;

/// `load_context`'s input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadContextInput {
    pub thread: ThreadKey,
}

/// The thread as Postgres knows it when a round is about to start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundContext {
    /// `threads.id`; `None` when the thread is not recorded (nothing to do).
    pub thread_id: Option<i64>,
    /// `threads.status = 'resolved'`.
    pub resolved: bool,
    /// Rounds committed so far.
    pub rounds_done: u32,
    /// Seconds since the thread's first message (its `thread_ts`).
    pub age_secs: u64,
    /// The alert (or, for a thread a person started, its first message).
    pub alert: AlertMessage,
    /// Earlier rounds, open questions, human answers, the conversation.
    pub thread: ThreadContext,
    /// The limits the workflow applies, from the worker's configuration.
    pub policy: RoundPolicy,
    /// The incident group whose analysis answers this thread's alert, when it is linked to
    /// another thread's (a repeat of its alert, or its own round found the group's root).
    #[serde(default)]
    pub linked: Option<LinkedTo>,
}

/// Another thread whose analysis answers this one's alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkedTo {
    pub group_id: i64,
    /// The group's primary thread, which has the analysis.
    pub primary: ThreadKey,
}

/// `link_round`'s input: a committed, grounded round whose root may be an open group's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkRoundInput {
    pub thread_id: i64,
    pub round: u32,
}

/// What `link_round` or `probe_group` decided.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LinkOutcome {
    /// The thread is linked to another thread's analysis: it gets one line, not the reply.
    pub linked: Option<LinkedTo>,
    /// Not linked yet, and an earlier alert's first analysis is still running: its root may
    /// be this alert's too.
    #[serde(default)]
    pub earlier_running: bool,
}

/// `probe_group`'s input: a new alert that may share an open group's root.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub run_id: String,
    pub alert: AlertMessage,
    /// `grouping.wait_secs`: an earlier analysis that started longer ago is not waited for.
    pub wait_secs: u64,
}

/// `post_link`'s input: a linked thread's one line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LinkInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    /// The alert whose 👀 becomes 🔗.
    pub alert_ts: String,
}

/// Why a round does not start.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "guard")]
pub enum Guard {
    UnknownThread,
    Resolved,
    MaxRounds { rounds: u32, max: u32 },
    TooOld { age_secs: u64, max_secs: u64 },
}

impl RoundContext {
    /// The first guard that stops a round, if any (resolved, rounds ≥ max, age > max).
    pub fn guard(&self) -> Option<Guard> {
        if self.thread_id.is_none() {
            return Some(Guard::UnknownThread);
        }
        if self.resolved {
            return Some(Guard::Resolved);
        }
        if self.rounds_done >= self.policy.max_rounds {
            return Some(Guard::MaxRounds {
                rounds: self.rounds_done,
                max: self.policy.max_rounds,
            });
        }
        if self.age_secs > self.policy.max_thread_age_secs {
            return Some(Guard::TooOld {
                age_secs: self.age_secs,
                max_secs: self.policy.max_thread_age_secs,
            });
        }
        None
    }
}

/// The message a round investigates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AlertMessage {
    /// Its text (untrusted; redacted).
    pub text: String,
    /// Its ts.
    pub ts: String,
}

/// Limits of a round, from `round.*` settings. Travelling through `load_context` keeps the
/// workflow deterministic: it reads them from its history, not from the environment.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundPolicy {
    pub max_rounds: u32,
    pub max_thread_age_secs: u64,
    pub idle_timeout_secs: u64,
    pub run_graph: ActivityPolicy,
    pub activity: ActivityPolicy,
    /// `refine_round`'s limits when a model is configured; `None`: rounds stay deterministic.
    #[serde(default)]
    pub refine: Option<ActivityPolicy>,
    /// With `actions.enabled`: how long a proposal waits and is verified; `None`: no action is
    /// ever proposed.
    #[serde(default)]
    pub actions: Option<ActionPolicy>,
    /// With grouping on (`grouping.window_secs > 0`): a new alert may be linked to an open
    /// group's analysis; how long it waits for an earlier alert's first analysis.
    #[serde(default)]
    pub grouping: Option<GroupingPolicy>,
}

/// How long a new alert waits for an earlier alert's first analysis before its own round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GroupingPolicy {
    pub wait_secs: u64,
}

impl GroupingPolicy {
    /// Between two checks of whether the earlier analysis has found its root.
    pub const RECHECK: Duration = Duration::from_secs(3);
}

/// One activity's timeouts and retries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActivityPolicy {
    pub start_to_close_secs: u64,
    pub heartbeat_secs: Option<u64>,
    pub max_attempts: u32,
    pub retry_initial_ms: u64,
    pub retry_max_secs: u64,
}

impl RoundPolicy {
    /// The idle wait after asking.
    pub fn idle_timeout(&self) -> Duration {
        Duration::from_secs(self.idle_timeout_secs)
    }
}

impl Default for RoundPolicy {
    /// The default limits ([`limits`]): what the workflow applies to its first `load_context`,
    /// before it has read the worker's configured ones.
    fn default() -> Self {
        let activity = ActivityPolicy {
            start_to_close_secs: limits::ACTIVITY_TIMEOUT_SECS,
            heartbeat_secs: None,
            max_attempts: limits::ACTIVITY_ATTEMPTS,
            retry_initial_ms: limits::RETRY_INITIAL_MS,
            retry_max_secs: limits::RETRY_MAX_SECS,
        };
        Self {
            max_rounds: limits::MAX_ROUNDS,
            max_thread_age_secs: limits::MAX_THREAD_AGE_SECS,
            idle_timeout_secs: limits::IDLE_TIMEOUT_SECS,
            run_graph: ActivityPolicy {
                start_to_close_secs: limits::RUN_GRAPH_TIMEOUT_SECS,
                heartbeat_secs: Some(limits::RUN_GRAPH_HEARTBEAT_SECS),
                ..activity.clone()
            },
            activity,
            refine: None,
            actions: None,
            grouping: None,
        }
    }
}

/// `run_graph`'s input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunGraphInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    /// The round's number (rounds committed + 1).
    pub round: u32,
    /// The workflow run: checkpoints and cached tool results of another run's attempt at this
    /// round (one that failed) are not reused.
    pub run_id: String,
    pub alert: AlertMessage,
    pub context: ThreadContext,
    /// The mentions this round answers (those signalled since the previous round).
    pub mentions: Vec<MentionSignal>,
}

/// What `run_graph` reports; the state itself is in `round_checkpoints`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphOutcome {
    pub grounded: bool,
    /// Super-steps run in total (over all attempts).
    pub steps: u32,
    /// The step this attempt resumed from (0: started fresh).
    pub resumed_from: u32,
    pub tool_calls: u32,
}

/// Heartbeat details: small on purpose (never the state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GraphHeartbeat {
    pub round: u32,
    pub step: u32,
    pub nodes: Vec<String>,
    /// `round_checkpoints` key of the stored checkpoint: `thread_id/round/step`.
    pub checkpoint: String,
}

/// `commit_round`'s input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CommitInput {
    pub thread_id: i64,
    pub round: u32,
    pub workflow_id: String,
    pub run_id: String,
}

/// What `commit_round` stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitOutcome {
    pub round_id: i64,
    pub grounded: bool,
    /// False when the round was already committed (a retry).
    pub inserted: bool,
    /// The round asked, and people replied while it ran: the next round starts right away,
    /// with their replies as answers.
    #[serde(default)]
    pub answered_meanwhile: bool,
}

/// `post_to_thread`'s input.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PostInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub round: u32,
    /// The messages whose 👀 becomes ✅ or ❓: the mentions the round answered, else the alert.
    pub react_to: Vec<String>,
}

/// What `post_to_thread` did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PostOutcome {
    pub ts: String,
    /// False when the reply already existed (a retry found it).
    pub posted_now: bool,
}

/// `post_failure`'s input: a round that could not finish.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub round: u32,
    /// The messages the round was answering (they get ⚠️).
    pub react_to: Vec<String>,
    /// What failed, in one line (no secrets: an activity error's message).
    pub reason: String,
}

/// `refine_round`'s input: a committed, posted round for the model to improve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefineInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub round: u32,
    pub run_id: String,
}

/// What `refine_round` stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RefineOutcome {
    /// The round as it now stands: grounded (posted) or asking.
    pub grounded: bool,
    /// Why the model was not used, if it was not (`timeout`, `http_5xx`, …).
    pub fallback: Option<String>,
}

/// `edit_post`'s input: show the refined round in the message already posted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EditInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub round: u32,
    /// The messages the round answered: their reaction follows the refined verdict.
    #[serde(default)]
    pub react_to: Vec<String>,
}

/// How a run of `incident_round` ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", tag = "outcome")]
pub enum RunOutcome {
    /// A guard stopped it before (another) round.
    Skipped { guard: Guard, rounds_run: u32 },
    /// The last round was grounded and no mention was waiting.
    Answered { rounds_run: u32 },
    /// It asked and nobody mentioned the bot within the idle timeout.
    Idle { rounds_run: u32 },
    /// Its alert is linked to another thread's analysis: one line points there.
    Linked { rounds_run: u32 },
}

/// An action's limits, from `[actions]`: how long a proposal waits for a decision and how long
/// its outcome is verified. `None` in [`RoundPolicy::actions`]: actions are off.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionPolicy {
    pub approval_timeout_secs: u64,
    /// `execute_action`'s limits: long enough for its reads and the write, each bounded by the
    /// tool layer, so a slow attempt is not overlapped by its own retry.
    pub execute: ActivityPolicy,
    /// `verify_action`'s limits (its start-to-close covers `actions.verify_secs`).
    pub verify: ActivityPolicy,
}

/// An action activity's input: the action and the thread whose reply shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionInput {
    pub thread: ThreadKey,
    pub thread_id: i64,
    pub round: u32,
    /// `actions.id`.
    pub action_id: i64,
}

/// `propose_action`'s input: a committed round whose report may propose an action.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProposeInput {
    pub thread_id: i64,
    pub round: u32,
    /// The alert's text (redacted): its expression is what verification re-runs.
    pub alert: AlertMessage,
}

/// What `propose_action` stored: the proposal shown with the round's reply, if any.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProposeOutcome {
    pub action_id: Option<i64>,
    /// Why the round's proposal is not shown (the object moved on, the write server down…).
    pub not_shown: Option<String>,
}

/// An action's state after an activity touched it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionOutcome {
    pub action_id: i64,
    pub state: firstline_model::ActionState,
    /// What the write server answered, why nothing was written, or what verification read.
    pub detail: Option<String>,
    /// After verification: whether the evidence shows recovery.
    pub recovered: Option<bool>,
}
