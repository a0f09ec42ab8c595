//! What can go wrong while keeping things durable.

use std::io;
use std::path::PathBuf;
use std::sync::Arc;

use arrow::error::ArrowError;
use repr::{GlobalId, Timestamp};

/// Errors of the catalog and the write-ahead log.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The catalog database failed (I/O, corruption, locked by another process).
    #[error("catalog database: {0}")]
    Catalog(#[from] redb::Error),
    /// A stored catalog item is not the JSON this version writes.
    #[error("catalog item {id} cannot be decoded: {source}")]
    CorruptCatalogItem {
        /// The item's key.
        id: GlobalId,
        /// Why decoding failed.
        source: serde_json::Error,
    },
    /// A catalog item could not be encoded as JSON.
    #[error("catalog item {id} cannot be encoded: {source}")]
    EncodeCatalogItem {
        /// The item's id.
        id: GlobalId,
        /// Why encoding failed.
        source: serde_json::Error,
    },
    /// The undo steps of a transaction block could not be encoded as JSON.
    #[error("the definitions of transaction block {block} cannot be encoded: {source}")]
    EncodeUndo {
        /// The block.
        block: u64,
        /// Why encoding failed.
        source: serde_json::Error,
    },
    /// The stored undo steps of a transaction block are not the JSON this version writes.
    #[error("the definitions of transaction block {block} cannot be decoded: {source}")]
    CorruptUndo {
        /// The block.
        block: u64,
        /// Why decoding failed.
        source: serde_json::Error,
    },
    /// A `Put` named an id that `allocate_id` never handed out (it could be handed out again).
    #[error("catalog item id {0} was never allocated")]
    UnallocatedId(GlobalId),
    /// A stored role is not the JSON this version writes.
    #[error("role {oid} cannot be decoded: {source}")]
    CorruptRole {
        /// The role's key.
        oid: u32,
        /// Why decoding failed.
        source: serde_json::Error,
    },
    /// A role could not be encoded as JSON.
    #[error("role {oid} cannot be encoded: {source}")]
    EncodeRole {
        /// The role's key.
        oid: u32,
        /// Why encoding failed.
        source: serde_json::Error,
    },
    /// A `Delete` named an item that does not exist.
    #[error("catalog item {0} does not exist")]
    UnknownItem(GlobalId),
    /// A file or directory operation failed.
    #[error("I/O on {}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The operating system's error.
        source: io::Error,
    },
    /// Arrow could not encode a batch.
    #[error("arrow: {0}")]
    Arrow(#[from] ArrowError),
    /// A change batch is malformed (its diffs do not match its rows).
    #[error("change batch for {id} is invalid: {reason}")]
    InvalidChangeBatch {
        /// The collection the batch was for.
        id: GlobalId,
        /// What is wrong with it.
        reason: String,
    },
    /// A record is larger than a frame can hold (4 GiB).
    #[error("record of {size_bytes} bytes exceeds the 4 GiB frame limit")]
    RecordTooLarge {
        /// The encoded size.
        size_bytes: usize,
    },
    /// A WAL record passed its checksum but cannot be decoded: a bug or a newer format, never a
    /// torn write, so it is not silently dropped.
    #[error("WAL record in {} at byte {offset} cannot be decoded: {reason}", path.display())]
    CorruptRecord {
        /// The segment file.
        path: PathBuf,
        /// Byte offset of the record's frame.
        offset: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// A snapshot file is damaged; snapshots are written atomically, so this is not a crash
    /// artefact and is never repaired silently.
    #[error("snapshot {} is corrupt: {reason}", path.display())]
    CorruptSnapshot {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A change log does not hold what the WAL committed for it, or holds bytes that are not
    /// its records: a bug or damage, never a crash artefact (a committed append is fsynced,
    /// and a torn tail is cut when a log is opened).
    #[error("change log {} is corrupt: {reason}", path.display())]
    CorruptChangeLog {
        /// The log's file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An append at a time a checkpoint already covers would be skipped on replay.
    #[error("record at time {time} is not after the last checkpoint (through {through})")]
    TimeNotAfterCheckpoint {
        /// The record's time.
        time: Timestamp,
        /// The checkpoint's time.
        through: Timestamp,
    },
    /// A write or fsync of the log failed. The failed records may or may not be durable, and an
    /// fsync failure is not retryable, so the log refuses every later append; reopen it.
    #[error("the WAL failed to write or fsync and refuses appends: {0}")]
    WalFailed(#[source] Arc<io::Error>),
    /// The disk is full: the commit was not logged (nothing of it reached the disk), and the
    /// log takes later commits once there is space.
    #[error("could not write to the log: {0}")]
    DiskFull(#[source] Arc<io::Error>),
    /// A write or fsync of a change log failed. As with the WAL, what was written may or may
    /// not be durable, so the log refuses every later append until it is reopened.
    #[error("change log {} failed to write or fsync and refuses appends: {source}", path.display())]
    ChangeLogFailed {
        /// The log's file.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: Arc<io::Error>,
    },
    /// Another `Wal` (in this or another process) has the directory open.
    #[error("the WAL in {} is already open", dir.display())]
    WalInUse {
        /// The log's directory.
        dir: PathBuf,
    },
    /// The WAL's writer thread is gone.
    #[error("the WAL writer has stopped")]
    WalClosed,
}

impl StorageError {
    /// An I/O error on `path`.
    pub(crate) fn io(path: impl Into<PathBuf>, source: io::Error) -> Self {
        StorageError::Io {
            path: path.into(),
            source,
        }
    }
}

/// redb has one error type per operation; all of them are catalog errors.
macro_rules! from_redb {
    ($($ty:ty),*) => {
        $(impl From<$ty> for StorageError {
            fn from(e: $ty) -> Self {
                StorageError::Catalog(e.into())
            }
        })*
    };
}

from_redb!(
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::SetDurabilityError
);

impl StorageError {
    /// Whether the disk was full: nothing of the failed change was kept, and it can succeed
    /// once there is space.
    pub fn is_disk_full(&self) -> bool {
        match self {
            StorageError::DiskFull(_) => true,
            StorageError::Catalog(redb::Error::Io(error)) => {
                error.kind() == io::ErrorKind::StorageFull
            }
            _ => false,
        }
    }
}
