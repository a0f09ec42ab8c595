//! The write-ahead log: every table write is durable here before it counts.
//!
//! One log serves all tables, so a transaction that writes several tables is one record and
//! either all of it survives a crash or none of it does. Records are CRC-framed in segment
//! files (`segment`), encoded as Arrow IPC (`record_codec`), written and fsynced by one writer
//! thread that commits whatever is queued as a group (`writer`), compacted into snapshots
//! (`checkpoint`) and read back on open (`recovery`).

mod checkpoint;
pub(crate) mod files;
pub(crate) mod record_codec;
mod recovery;
pub(crate) mod segment;
mod stats;
#[cfg(test)]
pub(crate) mod test_data;
#[cfg(test)]
mod tests;
mod writer;

use std::fs::{File, TryLockError};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use repr::{ChangeBatch, GlobalId, Timestamp};

use crate::StorageError;
use segment::frame;
use writer::Shared;

pub use stats::{Histogram, WalStats};

/// One atomic write: changes to any number of tables, all at one time.
#[derive(Clone, Debug)]
pub struct WalRecord {
    /// The time of every change in the record.
    pub time: Timestamp,
    /// The changes, by table. Each batch's own `time` must equal `time`.
    pub changes: Vec<(GlobalId, ChangeBatch)>,
    /// Where each source that wrote changes here resumes after them (connector-defined
    /// text: an event number, file offsets, an LSN). Stored with the data, so a restart
    /// neither loses nor repeats what a source delivered.
    pub progress: Vec<(GlobalId, String)>,
    /// A length of stream logs known to be committed (see [`crate::ChangeLog`]): in a
    /// checkpoint, each log's length through its last visible commit. (Records of older
    /// versions, whose stream appends the WAL committed, hold the log's new length.) After
    /// a crash a stream log keeps that much, and the whole frames after it that commit
    /// themselves.
    pub stream_ends: Vec<(GlobalId, u64)>,
    /// The event-time watermark (microseconds) of each source whose watermark this record
    /// advanced; in a checkpoint, every source's. Stored with the data, so a restart never
    /// moves a watermark backwards.
    pub watermarks: Vec<(GlobalId, i64)>,
}

/// How the log is laid out on disk.
#[derive(Clone, Debug)]
pub struct WalOptions {
    /// A segment that reaches this size is closed and a new one started (a single record larger
    /// than this gets a segment of its own).
    pub segment_bytes: u64,
}

impl Default for WalOptions {
    /// 64 MiB segments.
    fn default() -> Self {
        WalOptions {
            segment_bytes: 64 << 20,
        }
    }
}

/// The durable log of table writes. `Send + Sync`: share it in an `Arc`.
///
/// Dropping it writes what is queued, then stops the writer thread.
///
/// ```no_run
/// # use storage::{Wal, WalRecord};
/// # fn demo(dir: &std::path::Path) -> Result<(), storage::StorageError> {
/// let (wal, replay) = Wal::open(dir)?;
/// for record in replay {
///     // Apply record.changes at record.time.
/// }
/// wal.append_blocking(WalRecord { time: 1, changes: vec![], progress: vec![], stream_ends: vec![], watermarks: vec![] })?;
/// # Ok(()) }
/// ```
pub struct Wal {
    shared: Arc<Shared>,
    dir: PathBuf,
    writer: Option<JoinHandle<()>>,
    /// Serializes checkpoints.
    checkpointing: Mutex<()>,
    /// Held (locked) for the log's lifetime, so two processes never write one log.
    _lock: File,
}

impl std::fmt::Debug for Wal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Wal")
            .field("dir", &self.dir)
            .finish_non_exhaustive()
    }
}

impl Wal {
    /// Opens (or creates) the log in `dir` with default options.
    ///
    /// Returns the records to replay, in order: the latest checkpoint's snapshot as one record
    /// at its `through` time (if there is a checkpoint), then every logged record after
    /// `through`, in the order they were appended. A torn tail is cut off (see `recovery`).
    /// The snapshot record's `progress` holds every source's position as of `through`, and
    /// its `stream_ends` every stream log's length then.
    pub fn open(dir: &Path) -> Result<(Wal, Vec<WalRecord>), StorageError> {
        Self::open_with_options(dir, WalOptions::default())
    }

    /// [`Wal::open`] with explicit options.
    pub fn open_with_options(
        dir: &Path,
        options: WalOptions,
    ) -> Result<(Wal, Vec<WalRecord>), StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let lock = lock_dir(dir)?;
        let recovered = recovery::recover(dir, &options)?;
        let shared = Arc::new(Shared::new(recovered.log, recovered.checkpoint_through));
        let writer = std::thread::Builder::new()
            .name("wal-writer".into())
            .spawn({
                let shared = shared.clone();
                move || shared.run_writer()
            })
            .map_err(|e| StorageError::io(dir, e))?;
        let wal = Wal {
            shared,
            dir: dir.to_owned(),
            writer: Some(writer),
            checkpointing: Mutex::new(()),
            _lock: lock,
        };
        Ok((wal, recovered.records))
    }

    /// The directory holding the log.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the writer has measured of group commit since the log was opened.
    pub fn stats(&self) -> WalStats {
        self.shared
            .stats
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Appends `record`; the future resolves once it is fsynced.
    ///
    /// The record is encoded and queued when `append` is called, not when the future is
    /// polled, so records are logged (and acknowledged) in the order of the calls. Dropping
    /// the future does not withdraw the record. An error means the record may or may not be
    /// durable; after a write or fsync failure every later append fails too.
    pub fn append(
        &self,
        record: WalRecord,
    ) -> impl Future<Output = Result<(), StorageError>> + Send + 'static {
        let queued = self.enqueue(&record);
        async move {
            match queued?.await {
                Ok(result) => result,
                Err(_) => Err(StorageError::WalClosed),
            }
        }
    }

    /// [`Wal::append`] for threads outside an async runtime: blocks until the record is
    /// fsynced. Panics if called from within an async runtime (use `append` there).
    pub fn append_blocking(&self, record: WalRecord) -> Result<(), StorageError> {
        match self.enqueue(&record)?.blocking_recv() {
            Ok(result) => result,
            Err(_) => Err(StorageError::WalClosed),
        }
    }

    /// Compacts the log: `snapshot` becomes the contents as of `through`, and segments holding
    /// only records at or before `through` are deleted, as are older snapshots.
    ///
    /// The caller guarantees `snapshot` is the consolidated contents of every table as of
    /// `through` — the previous snapshot plus every record at or before `through` — and appends
    /// nothing at or before `through` afterwards (such appends are refused). The batches' own
    /// `time` is ignored; they are replayed at `through`. A checkpoint not past the previous one
    /// changes nothing. Safe against a crash at any point (see `checkpoint`). `progress` is
    /// every source's position and `stream_ends` every stream log's length as of `through`;
    /// both are kept in the snapshot.
    pub fn checkpoint(
        &self,
        through: Timestamp,
        snapshot: Vec<(GlobalId, ChangeBatch)>,
        progress: Vec<(GlobalId, String)>,
        stream_ends: Vec<(GlobalId, u64)>,
        watermarks: Vec<(GlobalId, i64)>,
    ) -> Result<(), StorageError> {
        let _one_at_a_time = self
            .checkpointing
            .lock()
            .expect("invariant: no thread panics while checkpointing");
        let snapshot = WalRecord {
            time: through,
            changes: snapshot,
            progress,
            stream_ends,
            watermarks,
        };
        checkpoint::run(&self.shared, &self.dir, snapshot)
    }

    /// Checks, encodes, frames and queues `record`.
    fn enqueue(
        &self,
        record: &WalRecord,
    ) -> Result<tokio::sync::oneshot::Receiver<Result<(), StorageError>>, StorageError> {
        for (id, batch) in &record.changes {
            if batch.time != record.time {
                return Err(StorageError::InvalidChangeBatch {
                    id: *id,
                    reason: format!(
                        "batch at time {} in a record at {}",
                        batch.time, record.time
                    ),
                });
            }
        }
        let framed = frame(&record_codec::encode_record(record)?)?;
        self.shared.enqueue(framed, record.time)
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        self.shared.shut_down();
        if let Some(writer) = self.writer.take() {
            // A panicked writer has already failed its waiters (their senders were dropped).
            let _ = writer.join();
        }
    }
}

/// Takes the directory's lock file, failing if another `Wal` holds it.
fn lock_dir(dir: &Path) -> Result<File, StorageError> {
    let path = dir.join(files::LOCK_FILE);
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| StorageError::io(&path, e))?;
    match file.try_lock() {
        Ok(()) => Ok(file),
        Err(TryLockError::WouldBlock) => Err(StorageError::WalInUse {
            dir: dir.to_owned(),
        }),
        Err(TryLockError::Error(e)) => Err(StorageError::io(&path, e)),
    }
}
