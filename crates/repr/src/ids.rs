use std::fmt;

use serde::{Deserialize, Serialize};

/// The identity of a catalog item (table, view, materialized view, index, source).
///
/// Ids are handed out once and never reused, so a log record naming a dropped item can be
/// recognised and skipped on replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GlobalId(pub u64);

impl GlobalId {
    /// Where the ids of the system's own relations (`fluxion_catalog.source_errors`) start;
    /// the allocator of user ids never gets near it.
    const SYSTEM_BASE: u64 = 1 << 62;
    /// Where the ids of transient dataflows (subscriptions) start: never stored, never a
    /// catalog item.
    const TRANSIENT_BASE: u64 = 1 << 63;

    /// The `n`th system relation's id.
    pub const fn system(n: u64) -> Self {
        Self(Self::SYSTEM_BASE + n)
    }

    /// Whether this is a system relation's id.
    pub fn is_system(self) -> bool {
        (Self::SYSTEM_BASE..Self::TRANSIENT_BASE).contains(&self.0)
    }

    /// The `n`th transient dataflow's id (`n` below 2^63).
    pub const fn transient(n: u64) -> Self {
        Self(Self::TRANSIENT_BASE | n)
    }

    /// Whether this is a transient dataflow's id.
    pub fn is_transient(self) -> bool {
        self.0 >= Self::TRANSIENT_BASE
    }
}

impl fmt::Display for GlobalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_transient() {
            write!(f, "t{}", self.0 - Self::TRANSIENT_BASE)
        } else if self.is_system() {
            write!(f, "s{}", self.0 - Self::SYSTEM_BASE)
        } else {
            write!(f, "u{}", self.0)
        }
    }
}
