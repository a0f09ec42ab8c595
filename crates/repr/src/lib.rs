//! Values and rows: the vocabulary every other layer speaks.
//!
//! A relation's rows travel through the system as [`Row`]s: arrow-row bytes that sort in SQL
//! order, hash and compare as plain bytes, and turn back into Arrow columns a batch at a time
//! with a [`RowCodec`]. Updates are `(row, time, diff)` triples over the shared [`Timestamp`]
//! timeline. This crate knows nothing of SQL planning, dataflows, storage or the wire protocol.

mod change_batch;
mod consolidate;
mod error;
mod ids;
mod item_kind;
pub mod pg_array;
pub mod pg_text;
pub mod pg_type;
mod privileges;
mod relation;
mod role;
mod row;
mod wall_clock;

pub use change_batch::ChangeBatch;
pub use consolidate::consolidate;
pub use error::ReprError;
pub use ids::GlobalId;
pub use item_kind::ItemKind;
pub use privileges::{AclItem, Ownership, Privileges, PUBLIC_ROLE};
pub use relation::RelationDesc;
pub use role::{
    holds_admin_option, memberships, Recurse, Role, RoleMembership, BOOTSTRAP_ROLE_OID,
};
pub use row::{Row, RowCodec};
pub use wall_clock::{wall_clock_ms, wall_clock_ms_rounded_up};

/// A logical time on the one timeline all collections share (milliseconds of wall clock).
pub type Timestamp = u64;

/// A change in multiplicity: `+1` inserts a row, `-1` retracts it.
pub type Diff = i64;
