//! What writes leave behind that the file format has no place for: each changed object's
//! `metadata.resourceVersion`, the annotations clients applied, and when the action
//! `after_action` describes was executed. Never read from a file (`#[serde(skip)]`); a freshly
//! loaded scenario has none of it, and every object then has its initial resourceVersion.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};

/// An object: kind, namespace (empty for a cluster-scoped one) and name.
pub type ObjectKey = (String, String, String);

/// The state writes added to a world.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Live {
    /// `metadata.resourceVersion` of the objects a write changed or created.
    pub versions: BTreeMap<ObjectKey, u64>,
    /// Annotations clients applied to an object (on top of those the lab computes).
    pub annotations: BTreeMap<ObjectKey, BTreeMap<String, String>>,
    /// The last resourceVersion handed out (0: none yet).
    pub counter: u64,
    /// When the action `after_action` selects was executed.
    pub acted_at: Option<DateTime<Utc>>,
}

/// Resource versions handed out by writes start above every initial one.
const FIRST_WRITTEN: u64 = 1_000_000;

impl Live {
    /// A new resourceVersion, greater than every one before.
    pub fn next_version(&mut self) -> u64 {
        self.counter = self.counter.max(FIRST_WRITTEN) + 1;
        self.counter
    }

    /// An object's resourceVersion: the one its last write gave it, else its initial one (stable,
    /// made up from the kind and name, below every written one).
    pub fn version(&self, key: &ObjectKey) -> u64 {
        self.versions
            .get(key)
            .copied()
            .unwrap_or_else(|| initial_version(key))
    }
}

/// A stable number in 100000–899999 from the object's kind, namespace and name.
fn initial_version((kind, namespace, name): &ObjectKey) -> u64 {
    let seed = format!("{kind}/{namespace}/{name}");
    let hash = seed.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    100_000 + hash % 800_000
}
