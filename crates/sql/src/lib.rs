//! SQL: parsing, planning with DataFusion, and lowering into dataflow plans (the `plan` crate).
//!
//! Statements are parsed with sqlparser's Postgres dialect (through DataFusion), bound and
//! optimized by DataFusion into a `LogicalPlan`, then [`lower`]ed into a [`plan::Plan`] of
//! incremental operators that `compute` renders. Catalog objects appear to DataFusion as
//! [`catalog::RelationTable`]s, which read snapshots through a [`catalog::SnapshotReader`]
//! the caller supplies per query.
//!
//! This crate knows nothing of dataflow execution, storage, sessions or the wire protocol.

pub mod catalog;
pub mod correlated_subqueries;
mod error;
mod lower;
mod postgres_arrays;
mod postgres_types;
pub mod session;
pub mod types;

pub use error::SqlError;
pub use lower::lower;
