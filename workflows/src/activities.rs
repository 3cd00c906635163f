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

    /// A short note in the thread when a round ran out of retries.
    #[activity(name = names::POST_FAILURE)]
    pub fn post_failure(_input: FailureInput) -> Result<PostOutcome, ActivityError> {
        unimplemented!()
    }
}

/// The activities' marker types, for implementations to name with `#[activity(definition = …)]`.
pub use round_activities::{
    CommitRound, EditPost, LoadContext, PostFailure, PostToThread, RefineRound, RunGraph,
};
