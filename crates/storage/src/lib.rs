//! Durability: the catalog and the write-ahead log.
//!
//! Nothing counts until it is durable. The [`Catalog`] keeps the items (tables, views,
//! sources, ...) with the SQL that created them, the id counter and the timestamp oracle's
//! high-water mark in a redb database. The [`Wal`] makes every table write durable (CRC-framed
//! records, group-committed fsync) before it is applied, compacts its prefix into snapshots, and
//! hands back snapshot + tail on restart. A [`StreamLog`] keeps the history of an append-only
//! collection (a source without a key) out of the WAL and out of memory; the WAL record that
//! commits a stream append stores the stream's new length.
//!
//! This crate knows nothing of SQL, dataflows or the wire protocol: it stores `create_sql` text
//! and Arrow batches, never plans.

#![warn(missing_docs)]

mod catalog;
mod error;
mod stream_log;
mod wal;

pub use catalog::{Catalog, CatalogItem, CatalogOp, ItemKind};
pub use error::StorageError;
pub use stream_log::{StreamAppend, StreamLog, StreamLogReader};
pub use wal::{Wal, WalOptions, WalRecord};
