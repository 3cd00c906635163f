//! Deciding on a proposed action: a click on Approve or Reject ([`DecisionClick`]) against the
//! `actions` row it names, recorded at most once (`firstline_store::actions::decide`: a
//! conditional update, with the round's `wake` row and, for a rejection, the action's record).
//!
//! Checked, in order, before anything is written:
//!
//! 1. `actions.enabled`: off, nothing is decided;
//! 2. the action exists, and the click came from the message that shows it, in its thread;
//! 3. the button is for the change stored (its hash), so a forged or stale button decides
//!    nothing;
//! 4. nobody decided it yet and it has not expired (said without asking Slack anything);
//! 5. **Reject: anyone. Approve: only a listed approver** for the action's namespace
//!    (`actions.approvers`, `*` included; a node only by `*`): the user's id listed, or their
//!    membership of a listed user group (`usergroups.users.list`, cached for a minute
//!    ([`groups`]); a lookup that fails refuses the approval, never allows it).
//!
//! The store then has the last word (two approvers racing, a replayed click, expiry between
//! the read and the write). Every refusal is an [`Outcome::Refused`] whose [`Refusal`] says why,
//! for the person who clicked ([`tell`]); the caller shows it after the ack.

pub mod groups;
pub mod tell;

use crate::interaction::DecisionClick;
use chrono::{DateTime, Utc};
use firstline_config::ActionsSettings;
use firstline_model::{ActionState, Decision};
use firstline_slack::SlackApi;
use firstline_store::actions::{self, ActionRow, Decided};
use groups::Groups;
use sqlx::PgPool;
use std::sync::Arc;

/// Who may decide what, and the user groups' members.
#[derive(Debug)]
pub struct Approvals {
    settings: ActionsSettings,
    groups: Groups,
}

/// Where an action stands, as far as telling people goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Standing {
    pub state: ActionState,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub expires_at: DateTime<Utc>,
}

impl From<&ActionRow> for Standing {
    fn from(row: &ActionRow) -> Self {
        Self {
            state: row.state,
            decided_by: row.decided_by.clone(),
            decided_at: row.decided_at,
            expires_at: row.expires_at,
        }
    }
}

/// What a click came to.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// This click decided the action: where it now stands.
    Recorded(Standing),
    /// Nothing was written.
    Refused(Refusal),
}

/// Why a click decided nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// `actions.enabled` is false.
    Disabled,
    /// No such action.
    Unknown,
    /// The action is not the one the message it was clicked on shows (another message or
    /// thread, or not posted yet).
    NotShownHere,
    /// The button's hash is not the stored change's: forged, or a stale render.
    OtherChange,
    /// Someone decided first (or it was executed since).
    AlreadyDecided(Standing),
    /// Nobody decided in time.
    Expired(Standing),
    /// An approval by someone not listed for the action's namespace (`None`: a node).
    NotAllowed {
        namespace: Option<String>,
        /// The ids listed (users and user groups), `*` included.
        approvers: Vec<String>,
    },
    /// A listed user group's members could not be read, so the approval was not allowed.
    GroupUnchecked { group: String, reason: String },
}

impl Outcome {
    /// Its `outcome` label on [`crate::metrics::ACTION_DECISIONS`].
    pub fn label(&self, decision: Decision) -> &'static str {
        match (self, decision) {
            (Outcome::Recorded(_), Decision::Approve) => "recorded_approve",
            (Outcome::Recorded(_), Decision::Reject) => "recorded_reject",
            (Outcome::Refused(refusal), _) => refusal.label(),
        }
    }
}

impl Refusal {
    /// Its `outcome` label on [`crate::metrics::ACTION_DECISIONS`].
    pub fn label(&self) -> &'static str {
        match self {
            Refusal::Disabled => "disabled",
            Refusal::Unknown | Refusal::NotShownHere => "unknown",
            Refusal::OtherChange => "other_change",
            Refusal::AlreadyDecided(_) => "already_decided",
            Refusal::Expired(_) => "expired",
            Refusal::NotAllowed { .. } | Refusal::GroupUnchecked { .. } => "not_allowed",
        }
    }
}

impl Approvals {
    /// Deciding as `settings` say; `api` reads user groups' members (none: a group's members
    /// cannot be checked, so only approvers listed by their own id may approve).
    pub fn new(settings: ActionsSettings, api: Option<Arc<SlackApi>>) -> Self {
        Self {
            settings,
            groups: Groups::new(api),
        }
    }

    /// Records `click`'s decision if it may decide, within the caller's deadline; `traceparent`
    /// goes with the round's wake-up. `Err` only when the database failed.
    #[tracing::instrument(
        name = "approval.decide",
        level = "debug",
        skip_all,
        fields(action_id = click.action_id, decision = click.decision.as_str())
    )]
    pub async fn decide(
        &self,
        pool: &PgPool,
        click: &DecisionClick,
        traceparent: Option<String>,
    ) -> Result<Outcome, sqlx::Error> {
        if !self.settings.enabled {
            return Ok(Outcome::Refused(Refusal::Disabled));
        }
        let Some(row) = actions::get(pool, click.action_id).await? else {
            return Ok(Outcome::Refused(Refusal::Unknown));
        };
        // The reply's ts is stored just after Slack answered the post: a click in between
        // comes from that reply (its thread, its change's hash) before the row knows its ts.
        let shown_here = row
            .message_ts
            .as_deref()
            .is_none_or(|ts| ts == click.message_ts);
        if row.thread != click.thread || !shown_here {
            return Ok(Outcome::Refused(Refusal::NotShownHere));
        }
        if row.change_hash != click.hash {
            return Ok(Outcome::Refused(Refusal::OtherChange));
        }
        match row.state {
            ActionState::Proposed => {}
            ActionState::Expired => return Ok(Outcome::Refused(Refusal::Expired((&row).into()))),
            _ => return Ok(Outcome::Refused(Refusal::AlreadyDecided((&row).into()))),
        }
        if click.decision == Decision::Approve
            && let Err(refusal) = self.may_approve(&click.user, row.action.namespace()).await
        {
            return Ok(Outcome::Refused(refusal));
        }
        let decided = actions::decide(
            pool,
            click.action_id,
            &click.hash,
            &click.user,
            click.decision,
            traceparent,
        )
        .await?;
        Ok(match decided {
            Decided::Recorded(row) => Outcome::Recorded((&row).into()),
            Decided::AlreadyDecided(row) if row.state == ActionState::Expired => {
                Outcome::Refused(Refusal::Expired((&row).into()))
            }
            Decided::AlreadyDecided(row) => {
                Outcome::Refused(Refusal::AlreadyDecided((&row).into()))
            }
            Decided::TooLate(row) => Outcome::Refused(Refusal::Expired((&row).into())),
            Decided::OtherChange(_) => Outcome::Refused(Refusal::OtherChange),
            Decided::Unknown => Outcome::Refused(Refusal::Unknown),
        })
    }

    /// `Ok` when `user` may approve an action in `namespace` (`None`: a node): listed by id, or
    /// a member of a listed user group.
    async fn may_approve(&self, user: &str, namespace: Option<&str>) -> Result<(), Refusal> {
        let listed = self.settings.approvers_for(namespace);
        if listed.contains(&user) {
            return Ok(());
        }
        let groups: Vec<&str> = listed
            .iter()
            .copied()
            .filter(|id| id.starts_with('S'))
            .collect();
        match self.groups.any_has_member(&groups, user).await {
            Ok(true) => Ok(()),
            Ok(false) => Err(Refusal::NotAllowed {
                namespace: namespace.map(str::to_string),
                approvers: listed.iter().map(|id| id.to_string()).collect(),
            }),
            Err(unchecked) => Err(Refusal::GroupUnchecked {
                group: unchecked.group,
                reason: unchecked.reason,
            }),
        }
    }
}

#[cfg(test)]
mod tests;
