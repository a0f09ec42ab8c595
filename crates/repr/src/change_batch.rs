use arrow::array::RecordBatch;

use crate::{Diff, Timestamp};

/// A batch of updates to one collection: Arrow rows, each with a multiplicity change, all at
/// one time. This is the unit that is logged durably and replayed.
#[derive(Clone, Debug)]
pub struct ChangeBatch {
    /// The time every update in the batch happens at.
    pub time: Timestamp,
    /// The rows, in the collection's schema.
    pub rows: RecordBatch,
    /// One diff per row of `rows`.
    pub diffs: Vec<Diff>,
}
