//! The thread: the unit of an incident conversation, of Kafka ordering and of the round
//! workflow's identity.

use serde::{Deserialize, Serialize};

/// One Slack thread.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ThreadKey {
    /// Workspace (`T…`).
    pub team_id: String,
    /// Channel (`C…`).
    pub channel_id: String,
    /// ts of the thread's parent message.
    pub thread_ts: String,
}

impl ThreadKey {
    /// The Kafka message key: `<team>/<channel>/<thread_ts>`.
    pub fn kafka_key(&self) -> String {
        format!("{}/{}/{}", self.team_id, self.channel_id, self.thread_ts)
    }

    /// The round workflow's id: `incident-<team>-<channel>-<thread_ts>`. One live run per
    /// thread: the relay signals-with-start under this id.
    pub fn workflow_id(&self) -> String {
        format!(
            "incident-{}-{}-{}",
            self.team_id, self.channel_id, self.thread_ts
        )
    }
}
