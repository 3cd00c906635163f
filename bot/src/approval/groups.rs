//! User groups' members (`usergroups.users.list`), for approvers listed as a group (`S…`).
//!
//! Read on the click's path, before its ack, so bounded: all lookups of one click share one
//! deadline ([`LOOKUP_TIMEOUT`]), whatever the client's own timeout and rate-limit retries. An
//! answer is kept for [`MEMBERS_TTL`], so a burst of clicks asks Slack once and a person removed
//! from a group loses the right within a minute. A failed lookup is never kept and never allows.

use firstline_slack::SlackApi;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a group's members are trusted.
pub const MEMBERS_TTL: Duration = Duration::from_secs(60);
/// How long one click may wait for Slack's answers, all its groups together (Slack wants the
/// click acked within 3 s).
pub const LOOKUP_TIMEOUT: Duration = Duration::from_millis(1500);

/// A group whose members could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unchecked {
    /// Its id (`S…`).
    pub group: String,
    /// Why, on one line.
    pub reason: String,
}

/// Each group's members, and when Slack said so.
type Cache = HashMap<String, (Instant, Arc<[String]>)>;

/// The members cache in front of the Web API.
#[derive(Debug)]
pub struct Groups {
    api: Option<Arc<SlackApi>>,
    cache: Mutex<Cache>,
}

impl Groups {
    /// Reading through `api` (none: every lookup fails, saying no bot token is configured).
    pub fn new(api: Option<Arc<SlackApi>>) -> Self {
        Self {
            api,
            cache: Mutex::new(HashMap::new()),
        }
    }

    /// Whether `user` is a member of one of `groups`. `Err` names a group that could not be
    /// read when none of those read has them: a failure never counts as membership.
    pub async fn any_has_member(&self, groups: &[&str], user: &str) -> Result<bool, Unchecked> {
        let deadline = tokio::time::Instant::now() + LOOKUP_TIMEOUT;
        let mut unchecked = None;
        for group in groups {
            match self.members(group, deadline).await {
                Ok(members) if members.iter().any(|m| m == user) => return Ok(true),
                Ok(_) => {}
                Err(reason) => {
                    tracing::warn!(group, %reason, "could not read a user group's members");
                    unchecked.get_or_insert(Unchecked {
                        group: group.to_string(),
                        reason,
                    });
                }
            }
        }
        unchecked.map_or(Ok(false), Err)
    }

    /// `group`'s members, from the cache while fresh, else from Slack before `deadline`.
    async fn members(
        &self,
        group: &str,
        deadline: tokio::time::Instant,
    ) -> Result<Arc<[String]>, String> {
        if let Some(members) = self.cached(group) {
            return Ok(members);
        }
        let api = self
            .api
            .as_ref()
            .ok_or("no Slack bot token is configured (slack.bot_token)")?;
        let members: Arc<[String]> =
            match tokio::time::timeout_at(deadline, api.user_group_members(group)).await {
                Ok(Ok(members)) => members.into(),
                Ok(Err(e)) => return Err(firstline_model::text::prefix(&e.to_string(), 200).into()),
                Err(_) => return Err(format!("Slack did not answer within {LOOKUP_TIMEOUT:?}")),
            };
        self.lock()
            .insert(group.to_string(), (Instant::now(), members.clone()));
        Ok(members)
    }

    fn cached(&self, group: &str) -> Option<Arc<[String]>> {
        let mut cache = self.lock();
        match cache.get(group) {
            Some((at, members)) if at.elapsed() < MEMBERS_TTL => Some(members.clone()),
            Some(_) => {
                cache.remove(group);
                None
            }
            None => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }
}
