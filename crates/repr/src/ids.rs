use std::fmt;

use serde::{Deserialize, Serialize};

/// The identity of a catalog item (table, view, materialized view, index, source).
///
/// Ids are handed out once and never reused, so a log record naming a dropped item can be
/// recognised and skipped on replay.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct GlobalId(pub u64);

impl fmt::Display for GlobalId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "u{}", self.0)
    }
}
