//! The `[grouping]` section: how alert storms become one conversation.
//!
//! Alerts of one workspace are linked to one analysis when they are the same alert (a repeat
//! notification, a re-fire) or when their rounds find the same root, within `window_secs` of the
//! group's newest alert. `window_secs = 0` turns grouping off: every alert is its own incident.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Linking alerts that share a cause.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GroupingSettings {
    /// How long after a group's newest alert another alert still joins it, in seconds; 0: no
    /// grouping.
    pub window_secs: u64,
    /// How long a new alert waits for an earlier alert's first analysis (still running) before
    /// it is investigated on its own, in seconds: a storm's later alerts are then checked against
    /// the root that analysis found, for one object read each instead of a round each.
    pub wait_secs: u64,
}

impl Default for GroupingSettings {
    fn default() -> Self {
        Self {
            window_secs: 900,
            wait_secs: 60,
        }
    }
}

impl GroupingSettings {
    /// The window, or `None` when grouping is off.
    pub fn window(&self) -> Option<Duration> {
        (self.window_secs > 0).then(|| Duration::from_secs(self.window_secs))
    }
}

#[cfg(test)]
mod tests {
    use super::GroupingSettings;
    use std::time::Duration;

    #[test]
    fn fifteen_minutes_by_default_and_zero_is_off() {
        assert_eq!(
            GroupingSettings::default().window(),
            Some(Duration::from_secs(900))
        );
        let off = GroupingSettings {
            window_secs: 0,
            ..GroupingSettings::default()
        };
        assert_eq!(off.window(), None);
    }
}
