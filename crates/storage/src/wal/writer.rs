//! Group commit: callers queue framed records, one writer thread writes everything queued,
//! fsyncs once and then acknowledges each record in queue order.
//!
//! The fsync is the expensive part, so under load many appends share one (the classic group
//! commit of database logs). A failed write or fsync poisons the log: after a failed fsync the
//! kernel may have dropped the dirty pages, so retrying could report durability that is not
//! there (PostgreSQL's "fsyncgate"). Every waiting append gets the error and later appends are
//! refused until the log is reopened, which re-reads what actually reached the disk.
//!
//! But a full disk is not a failure of what is already durable: a group whose first write
//! finds no space is taken back whole (nothing of it reached the log), its appends fail with
//! [`StorageError::DiskFull`], and the log goes on: the next group is written once there is
//! space again.

use std::io;
use std::mem;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Instant;

use repr::Timestamp;
use tokio::sync::oneshot;

use super::segment::ActiveSegment;
use super::stats::WalStats;
use crate::StorageError;

/// Where a record's durability is reported.
pub(super) type Ack = oneshot::Sender<Result<(), StorageError>>;

/// A framed record waiting to be written.
struct PendingAppend {
    frame: Vec<u8>,
    time: Timestamp,
    ack: Ack,
    queued_at: Instant,
}

/// What appenders and the writer thread share.
#[derive(Default)]
struct Queue {
    pending: Vec<PendingAppend>,
    /// Set once a write or fsync failed; never cleared.
    failure: Option<Arc<io::Error>>,
    /// The latest checkpoint; appends at or before it are refused.
    checkpoint_through: Option<Timestamp>,
    is_shutting_down: bool,
}

/// A segment no longer appended to.
#[derive(Debug)]
pub(super) struct ClosedSegment {
    /// The segment file.
    pub path: PathBuf,
    /// The latest time of its records (`None` if it is empty).
    pub max_time: Option<Timestamp>,
}

/// The segment files: the closed ones in log order and the active one.
#[derive(Debug)]
pub(super) struct LogState {
    /// The directory holding the segments.
    pub dir: PathBuf,
    /// Segments before the active one, in log order.
    pub closed: Vec<ClosedSegment>,
    /// The segment being appended to.
    pub active: ActiveSegment,
    /// The size past which the writer starts a new segment.
    pub segment_bytes: u64,
}

impl LogState {
    /// Closes the active segment (already synced) and starts an empty one, unless the active
    /// one is empty already.
    pub(super) fn rotate(&mut self) -> Result<(), StorageError> {
        if self.active.records == 0 {
            return Ok(());
        }
        let next = ActiveSegment::create(&self.dir, self.active.next_seq())?;
        let old = mem::replace(&mut self.active, next);
        self.closed.push(ClosedSegment {
            path: old.path,
            max_time: old.max_time,
        });
        Ok(())
    }

    /// Writes `group` in order, rotating as segments fill, and fsyncs it.
    fn write_group(&mut self, group: &[PendingAppend]) -> Result<(), GroupFailure> {
        let mut buffer: Vec<u8> = Vec::new();
        let mut buffered_records = 0;
        let mut buffered_max_time = None;
        let mut logged_any = false;
        for append in group {
            let frame_len = append.frame.len() as u64;
            let buffered_len = self.active.len_bytes + buffer.len() as u64;
            let is_full = buffered_len > 0 && buffered_len + frame_len > self.segment_bytes;
            if is_full {
                logged_any |= self
                    .flush(&mut buffer, &mut buffered_records, &mut buffered_max_time)
                    .map_err(|e| GroupFailure::of_write(e, logged_any))?;
                self.active.sync().map_err(GroupFailure::Failed)?;
                self.rotate()
                    .map_err(|e| GroupFailure::Failed(io::Error::other(e)))?;
            }
            buffer.extend_from_slice(&append.frame);
            buffered_records += 1;
            buffered_max_time = buffered_max_time.max(Some(append.time));
        }
        self.flush(&mut buffer, &mut buffered_records, &mut buffered_max_time)
            .map_err(|e| GroupFailure::of_write(e, logged_any))?;
        self.active.sync().map_err(GroupFailure::Failed)
    }

    /// Writes what is buffered; whether there was anything to write.
    fn flush(
        &mut self,
        buffer: &mut Vec<u8>,
        records: &mut u64,
        max_time: &mut Option<Timestamp>,
    ) -> io::Result<bool> {
        let wrote = !buffer.is_empty();
        self.active.write(buffer, *records, *max_time)?;
        buffer.clear();
        *records = 0;
        *max_time = None;
        Ok(wrote)
    }
}

/// Why a group could not be logged.
enum GroupFailure {
    /// The disk is full, and nothing of the group reached the log: the log is as it was.
    DiskFull(io::Error),
    /// Anything else: what reached the disk is unknown until the log is reopened.
    Failed(io::Error),
}

impl GroupFailure {
    /// A failed write, after `logged_any` (whether part of the group was written before).
    fn of_write(error: io::Error, logged_any: bool) -> Self {
        if !logged_any && error.kind() == io::ErrorKind::StorageFull {
            GroupFailure::DiskFull(error)
        } else {
            GroupFailure::Failed(error)
        }
    }
}

/// State shared by the [`Wal`](super::Wal) handle and its writer thread.
pub(super) struct Shared {
    queue: Mutex<Queue>,
    wakeup: Condvar,
    /// The segment files. The writer holds this while writing a group; checkpoints hold it to
    /// rotate and to pick segments to delete.
    pub log: Mutex<LogState>,
    /// How many fsyncs of segments the writer has done.
    pub syncs: AtomicU64,
    /// Group sizes and waits of the records made durable.
    pub stats: Mutex<WalStats>,
}

impl Shared {
    /// Shared state over recovered segments.
    pub(super) fn new(log: LogState, checkpoint_through: Option<Timestamp>) -> Self {
        Shared {
            queue: Mutex::new(Queue {
                checkpoint_through,
                ..Queue::default()
            }),
            wakeup: Condvar::new(),
            log: Mutex::new(log),
            syncs: AtomicU64::new(0),
            stats: Mutex::default(),
        }
    }

    /// Queues a framed record for the writer; the receiver reports when it is durable.
    pub(super) fn enqueue(
        &self,
        frame: Vec<u8>,
        time: Timestamp,
    ) -> Result<oneshot::Receiver<Result<(), StorageError>>, StorageError> {
        let mut queue = self.lock_queue();
        if let Some(failure) = &queue.failure {
            return Err(StorageError::WalFailed(failure.clone()));
        }
        if let Some(through) = queue.checkpoint_through.filter(|through| time <= *through) {
            return Err(StorageError::TimeNotAfterCheckpoint { time, through });
        }
        let (ack, durable) = oneshot::channel();
        queue.pending.push(PendingAppend {
            frame,
            time,
            ack,
            queued_at: Instant::now(),
        });
        self.wakeup.notify_one();
        Ok(durable)
    }

    /// Records that a checkpoint through `through` is starting: later appends at or before it
    /// are refused. Returns whether it is past the previous checkpoint (if not, there is
    /// nothing to do).
    pub(super) fn begin_checkpoint(&self, through: Timestamp) -> Result<bool, StorageError> {
        let mut queue = self.lock_queue();
        if let Some(failure) = &queue.failure {
            return Err(StorageError::WalFailed(failure.clone()));
        }
        if queue.checkpoint_through.is_some_and(|t| through <= t) {
            return Ok(false);
        }
        queue.checkpoint_through = Some(through);
        Ok(true)
    }

    /// Fails every waiting append with `error` and refuses later ones; returns the failure
    /// appends now report.
    pub(super) fn poison(&self, error: io::Error) -> Arc<io::Error> {
        let (failure, pending) = {
            let mut queue = self.lock_queue();
            let failure = queue.failure.get_or_insert_with(|| Arc::new(error)).clone();
            (failure, mem::take(&mut queue.pending))
        };
        tracing::error!(error = %failure, "WAL write failed; refusing further appends");
        for append in pending {
            // A dropped receiver means nobody waits for this record any more.
            let _ = append
                .ack
                .send(Err(StorageError::WalFailed(failure.clone())));
        }
        failure
    }

    /// Asks the writer to finish what is queued and stop.
    pub(super) fn shut_down(&self) {
        self.lock_queue().is_shutting_down = true;
        self.wakeup.notify_one();
    }

    /// The writer thread's loop: take everything queued, write it, fsync once, acknowledge.
    pub(super) fn run_writer(&self) {
        loop {
            let (group, failure) = {
                let mut queue = self.lock_queue();
                while queue.pending.is_empty() && !queue.is_shutting_down {
                    queue = self
                        .wakeup
                        .wait(queue)
                        .expect("invariant: no thread panics while holding the WAL queue");
                }
                if queue.pending.is_empty() {
                    return;
                }
                (mem::take(&mut queue.pending), queue.failure.clone())
            };
            if let Some(failure) = failure {
                for append in group {
                    let _ = append
                        .ack
                        .send(Err(StorageError::WalFailed(failure.clone())));
                }
                continue;
            }
            let written = self.lock_log().write_group(&group);
            match written {
                Ok(()) => {
                    self.syncs.fetch_add(1, Ordering::Relaxed);
                    let durable_at = Instant::now();
                    self.stats
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .observe_group(group.iter().map(|append| {
                            durable_at.duration_since(append.queued_at).as_secs_f64()
                        }));
                    for append in group {
                        let _ = append.ack.send(Ok(()));
                    }
                }
                Err(GroupFailure::DiskFull(error)) => {
                    tracing::warn!(
                        %error,
                        records = group.len(),
                        "the disk is full: these commits failed and the log goes on once there is space"
                    );
                    let error = Arc::new(error);
                    for append in group {
                        let _ = append.ack.send(Err(StorageError::DiskFull(error.clone())));
                    }
                }
                Err(GroupFailure::Failed(error)) => {
                    let failure = self.poison(error);
                    for append in group {
                        let _ = append
                            .ack
                            .send(Err(StorageError::WalFailed(failure.clone())));
                    }
                }
            }
        }
    }

    /// Locks the segment state.
    pub(super) fn lock_log(&self) -> MutexGuard<'_, LogState> {
        self.log
            .lock()
            .expect("invariant: no thread panics while holding the WAL segments")
    }

    fn lock_queue(&self) -> MutexGuard<'_, Queue> {
        self.queue
            .lock()
            .expect("invariant: no thread panics while holding the WAL queue")
    }
}
