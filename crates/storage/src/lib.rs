//! Durability: the catalog and the write-ahead log.
//!
//! Nothing counts until it is durable. The [`Catalog`] keeps the items (tables, views,
//! sources, ...) with the SQL that created them, the id counter and the timestamp oracle's
//! high-water mark in a redb database, beside the roles ([`repr::Role`]).
//! The [`Wal`] makes every table write durable (CRC-framed records, group-committed fsync)
//! before it is applied, compacts its prefix into snapshots, and hands back snapshot + tail
//! on restart. A [`ChangeLog`] keeps a history out of the WAL and
//! out of memory: the rows of an append-only source (the WAL record that commits a stream
//! append stores the log's new length), or the changes of a durable subscription.
//!
//! This crate knows nothing of SQL, dataflows or the wire protocol: it stores `create_sql` text
//! and Arrow batches, never plans.

#![warn(missing_docs)]

mod catalog;
mod change_log;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod roles;
mod wal;

pub use catalog::{Catalog, CatalogItem, CatalogOp};
pub use change_log::{ChangeLog, ChangeLogReader, LogAppend};
pub use error::StorageError;
pub use wal::{Histogram, Wal, WalOptions, WalRecord, WalStats};
