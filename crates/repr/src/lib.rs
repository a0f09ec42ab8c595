//! Values and rows: the vocabulary every other layer speaks.
//!
//! A relation's rows travel through the system as [`Row`]s: arrow-row bytes that sort in SQL
//! order, hash and compare as plain bytes, and turn back into Arrow columns a batch at a time
//! with a [`RowCodec`]. Updates are `(row, time, diff)` triples over the shared [`Timestamp`]
//! timeline. This crate knows nothing of SQL planning, dataflows, storage or the wire protocol.

mod change_batch;
mod error;
mod ids;
pub mod pg_array;
pub mod pg_type;
mod relation;
mod row;

pub use change_batch::ChangeBatch;
pub use error::ReprError;
pub use ids::GlobalId;
pub use relation::RelationDesc;
pub use row::{Row, RowCodec};

/// A logical time on the one timeline all collections share (milliseconds of wall clock).
pub type Timestamp = u64;

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn wall_clock_ms() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Timestamp)
        .unwrap_or(0)
}

/// A change in multiplicity: `+1` inserts a row, `-1` retracts it.
pub type Diff = i64;
