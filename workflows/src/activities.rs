//! The round's activities as the workflow calls them: names, inputs and outputs, and nothing
//! else. The SDK's `#[activity_definitions]` makes these declarations callable from workflow
//! code; `firstline-activities` implements each one against the definition here
//! (`#[activity(definition = …)]`), so a renamed activity or a changed payload type fails to
//! compile there instead of failing on the wire.

use temporalio_common::ActivityError;
use temporalio_macros::activity_definitions;

use crate::types::*;

/// The activities' names on the wire.
pub mod names {
    pub const LOAD_CONTEXT: &str = "load_context";
    pub const RUN_GRAPH: &str = "run_graph";
    pub const COMMIT_ROUND: &str = "commit_round";
    pub const POST_TO_THREAD: &str = "post_to_thread";
    pub const POST_FAILURE: &str = "post_failure";
    pub const REFINE_ROUND: &str = "refine_round";
    pub const EDIT_POST: &str = "edit_post";
    pub const PROPOSE_ACTION: &str = "propose_action";
    pub const EXPIRE_ACTION: &str = "expire_action";
    pub const EXECUTE_ACTION: &str = "execute_action";
    pub const VERIFY_ACTION: &str = "verify_action";
    pub const SHOW_ACTION: &str = "show_action";
    pub const PROBE_GROUP: &str = "probe_group";
    pub const LINK_ROUND: &str = "link_round";
    pub const POST_LINK: &str = "post_link";
}

/// The round's activities.
pub struct RoundActivities;

#[activity_definitions]
impl RoundActivities {
    /// The thread rebuilt from Postgres, the guards' inputs and the worker's limits.
    #[activity(name = names::LOAD_CONTEXT)]
    pub fn load_context(_input: LoadContextInput) -> Result<RoundContext, ActivityError> {
        unimplemented!()
    }

    /// The incident graph, checkpointed after every super-step; heartbeats once per step.
    #[activity(name = names::RUN_GRAPH)]
    pub fn run_graph(_input: RunGraphInput) -> Result<GraphOutcome, ActivityError> {
        unimplemented!()
    }

    /// Round, evidence and claims in one transaction, idempotent on (thread, round).
    #[activity(name = names::COMMIT_ROUND)]
    pub fn commit_round(_input: CommitInput) -> Result<CommitOutcome, ActivityError> {
        unimplemented!()
    }

    /// The reply in the thread, posted once whatever fails.
    #[activity(name = names::POST_TO_THREAD)]
    pub fn post_to_thread(_input: PostInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }

    /// The model's pass over a posted round (only with a model configured): its grounded
    /// additions, or why it was not used, stored on the round. Idempotent on the round.
    #[activity(name = names::REFINE_ROUND)]
    pub fn refine_round(_input: RefineInput) -> Result<RefineOutcome, ActivityError> {
        unimplemented!()
    }

    /// The posted reply edited in place to show the refined round, once.
    #[activity(name = names::EDIT_POST)]
    pub fn edit_post(_input: EditInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }

    /// The round's proposal, if its verified cause supports one and actions are on: the exact
    /// change computed against the object as read now, its hash, stored once per round.
    #[activity(name = names::PROPOSE_ACTION)]
    pub fn propose_action(_input: ProposeInput) -> Result<ProposeOutcome, ActivityError> {
        unimplemented!()
    }

    /// A proposal nobody decided in time marked expired (or the decision that won the race).
    #[activity(name = names::EXPIRE_ACTION)]
    pub fn expire_action(_input: ActionInput) -> Result<ActionOutcome, ActivityError> {
        unimplemented!()
    }

    /// An approved action's write, sent at most once (its idempotency key is on the object).
    #[activity(name = names::EXECUTE_ACTION)]
    pub fn execute_action(_input: ActionInput) -> Result<ActionOutcome, ActivityError> {
        unimplemented!()
    }

    /// The evidence behind the cause re-read after the action, for a bounded window.
    #[activity(name = names::VERIFY_ACTION)]
    pub fn verify_action(_input: ActionInput) -> Result<ActionOutcome, ActivityError> {
        unimplemented!()
    }

    /// The reply re-rendered with the action's state; once it is final, its outcome posted in
    /// the thread once.
    #[activity(name = names::SHOW_ACTION)]
    pub fn show_action(_input: ActionInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }

    /// The thread linked, before any round, to an open group whose root its alert shares (a pod
    /// on a NotReady node: one object read), with what was read as its evidence.
    #[activity(name = names::PROBE_GROUP)]
    pub fn probe_group(_input: ProbeInput) -> Result<LinkOutcome, ActivityError> {
        unimplemented!()
    }

    /// The thread linked to an open incident group whose root its grounded round found (or
    /// its group records the root, for later alerts to find). Idempotent.
    #[activity(name = names::LINK_ROUND)]
    pub fn link_round(_input: LinkRoundInput) -> Result<LinkOutcome, ActivityError> {
        unimplemented!()
    }

    /// A linked thread's one line pointing at its group's analysis, posted once; then the
    /// primary's reply edited to list the group's linked alerts.
    #[activity(name = names::POST_LINK)]
    pub fn post_link(_input: LinkInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }

    /// A short note in the thread when a round ran out of retries.
    #[activity(name = names::POST_FAILURE)]
    pub fn post_failure(_input: FailureInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }
}

/// The activities' marker types, for implementations to name with `#[activity(definition = …)]`.
pub use round_activities::{
    CommitRound, EditPost, ExecuteAction, ExpireAction, LinkRound, LoadContext, PostFailure,
    PostLink, PostToThread, ProbeGroup, ProposeAction, RefineRound, RunGraph, ShowAction,
    VerifyAction,
};
