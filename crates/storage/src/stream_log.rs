//! Stream logs: the durable history of an append-only collection (a source without a key).
//!
//! A stream's rows are only ever inserted, so nothing in its history can be compacted away:
//! its history *is* its contents. In the WAL, every checkpoint would rewrite all of it; in an
//! arrangement, memory would grow with it. So each stream has a file of its own, read again
//! only when a new dataflow (or a restart) needs the history, or a query scans the stream.
//!
//! The file is frames (see `wal::segment`), each one WAL record payload holding one batch of
//! the stream at its commit time, in commit order. An append is written and fsynced *before*
//! the WAL record that commits it; that record carries the stream's length after the append
//! (`WalRecord::stream_ends`). Opening a stream log cuts it back to the last length the WAL
//! committed, so a batch whose commit never reached the WAL vanishes with its torn or orphaned
//! bytes: the stream and the WAL agree after any crash.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use repr::{ChangeBatch, GlobalId, Timestamp};

use crate::wal::files::{remove_file, sync_dir};
use crate::wal::record_codec::{decode_record, encode_record};
use crate::wal::segment::{frame, FrameRead, FrameReader};
use crate::{StorageError, WalRecord};

/// The append-only history of one stream. `Send + Sync`; appends must not race each other
/// (the coordinator makes them under its sequencer), reads may run alongside them.
#[derive(Debug)]
pub struct StreamLog {
    id: GlobalId,
    path: PathBuf,
    file: Mutex<File>,
    /// Bytes written and fsynced: whole frames only.
    durable_len: AtomicU64,
}

/// Where an append put its batch: the log's length before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StreamAppend {
    /// The length before the append; [`StreamLog::truncate`] to it undoes the append.
    pub start: u64,
    /// The length after the append, which the committing WAL record stores.
    pub end: u64,
}

impl StreamLog {
    /// The file of stream `id` in `dir`.
    pub fn path_in(dir: &Path, id: GlobalId) -> PathBuf {
        dir.join(format!("stream-{:020}.log", id.0))
    }

    /// Deletes stream `id`'s log in `dir` (its stream was dropped); a missing file is fine. A
    /// reader that still has it open reads on until it is done.
    pub fn delete(dir: &Path, id: GlobalId) -> Result<(), StorageError> {
        remove_file(&Self::path_in(dir, id))?;
        sync_dir(dir)
    }

    /// The ids of the stream logs in `dir` (none if it does not exist).
    pub fn list(dir: &Path) -> Result<Vec<GlobalId>, StorageError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StorageError::io(dir, e)),
        };
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| StorageError::io(dir, e))?.file_name();
            let id = name
                .to_str()
                .and_then(|n| n.strip_prefix("stream-")?.strip_suffix(".log"))
                .filter(|digits| digits.len() == 20)
                .and_then(|digits| digits.parse().ok());
            ids.extend(id.map(GlobalId));
        }
        ids.sort();
        Ok(ids)
    }

    /// Opens (or creates) stream `id`'s log in `dir`, cut back to `committed_len` bytes: the
    /// last length a WAL record committed (0 if none did). A file shorter than that lost
    /// committed data and is an error.
    pub fn open(dir: &Path, id: GlobalId, committed_len: u64) -> Result<Self, StorageError> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
        let path = Self::path_in(dir, id);
        let existed = path.exists();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .append(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        if !existed {
            sync_dir(dir)?;
        }
        let len = file
            .metadata()
            .map_err(|e| StorageError::io(&path, e))?
            .len();
        if len < committed_len {
            return Err(StorageError::CorruptStreamLog {
                path,
                reason: format!("{len} bytes, but the WAL committed {committed_len}"),
            });
        }
        if len > committed_len {
            tracing::info!(
                stream = %id,
                cut_bytes = len - committed_len,
                "stream log cut back to its last committed batch"
            );
            file.set_len(committed_len)
                .and_then(|()| file.sync_all())
                .map_err(|e| StorageError::io(&path, e))?;
        }
        Ok(StreamLog {
            id,
            path,
            file: Mutex::new(file),
            durable_len: AtomicU64::new(committed_len),
        })
    }

    /// The stream's id.
    pub fn id(&self) -> GlobalId {
        self.id
    }

    /// The bytes written and fsynced so far.
    pub fn len_bytes(&self) -> u64 {
        self.durable_len.load(Ordering::Acquire)
    }

    /// Appends `batch` durably (written and fsynced when this returns). It only counts once a
    /// WAL record stores the returned `end`; if that fails, [`Self::truncate`] to `start`.
    pub fn append(&self, batch: &ChangeBatch) -> Result<StreamAppend, StorageError> {
        let record = WalRecord {
            time: batch.time,
            changes: vec![(self.id, batch.clone())],
            progress: Vec::new(),
            stream_ends: Vec::new(),
        };
        let framed = frame(&encode_record(&record)?)?;
        let mut file = self.lock_file();
        let start = self.durable_len.load(Ordering::Acquire);
        let written = file.write_all(&framed).and_then(|()| file.sync_data());
        if let Err(e) = written {
            // Best effort: the bytes of a failed append must not stay before the next one.
            let _ = file.set_len(start);
            return Err(StorageError::io(&self.path, e));
        }
        let end = start + framed.len() as u64;
        self.durable_len.store(end, Ordering::Release);
        Ok(StreamAppend { start, end })
    }

    /// Cuts the log back to `len` bytes (undoing appends whose commit failed).
    pub fn truncate(&self, len: u64) -> Result<(), StorageError> {
        let file = self.lock_file();
        file.set_len(len)
            .and_then(|()| file.sync_all())
            .map_err(|e| StorageError::io(&self.path, e))?;
        self.durable_len.store(len, Ordering::Release);
        Ok(())
    }

    /// Reads the batches committed at or before `through`, in commit order. Appends made
    /// after this call are not read.
    pub fn read_through(&self, through: Timestamp) -> Result<StreamLogReader, StorageError> {
        Ok(StreamLogReader {
            frames: FrameReader::open_prefix(&self.path, self.len_bytes())?,
            path: self.path.clone(),
            through,
        })
    }

    fn lock_file(&self) -> std::sync::MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batches of a stream log up to a time, read from disk one at a time.
pub struct StreamLogReader {
    frames: FrameReader,
    path: PathBuf,
    through: Timestamp,
}

impl Iterator for StreamLogReader {
    type Item = Result<ChangeBatch, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        let (offset, payload) = match self.frames.next_frame() {
            Err(e) => return Some(Err(e)),
            Ok(FrameRead::End) => return None,
            Ok(FrameRead::Torn { offset, reason }) => {
                return Some(Err(self.corrupt(offset, reason.to_string())))
            }
            Ok(FrameRead::Frame { offset, payload }) => (offset, payload),
        };
        let record = match decode_record(&payload) {
            Ok(record) => record,
            Err(reason) => return Some(Err(self.corrupt(offset, reason))),
        };
        if record.time > self.through {
            return None;
        }
        match record.changes.into_iter().next() {
            Some((_, batch)) => Some(Ok(batch)),
            None => Some(Err(self.corrupt(offset, "a frame without a batch".into()))),
        }
    }
}

impl StreamLogReader {
    fn corrupt(&self, offset: u64, reason: String) -> StorageError {
        StorageError::CorruptStreamLog {
            path: self.path.clone(),
            reason: format!("at byte {offset}: {reason}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::test_data::kv_change;

    fn read_keys(log: &StreamLog, through: Timestamp) -> Vec<(Timestamp, usize)> {
        log.read_through(through)
            .unwrap()
            .map(|batch| {
                let batch = batch.unwrap();
                (batch.time, batch.rows.num_rows())
            })
            .collect()
    }

    #[test]
    fn batches_read_back_in_order_up_to_a_time() {
        let dir = tempfile::tempdir().unwrap();
        let log = StreamLog::open(dir.path(), GlobalId(4), 0).unwrap();
        log.append(&kv_change(1, &[(1, "a", 1)])).unwrap();
        log.append(&kv_change(3, &[(2, "b", 1), (3, "c", 1)]))
            .unwrap();
        log.append(&kv_change(5, &[(4, "d", 1)])).unwrap();
        assert_eq!(read_keys(&log, 4), vec![(1, 1), (3, 2)]);
        assert_eq!(read_keys(&log, u64::MAX).len(), 3);
        assert_eq!(StreamLog::list(dir.path()).unwrap(), vec![GlobalId(4)]);
    }

    #[test]
    fn reopening_cuts_back_to_the_committed_length() {
        let dir = tempfile::tempdir().unwrap();
        let committed = {
            let log = StreamLog::open(dir.path(), GlobalId(1), 0).unwrap();
            let first = log.append(&kv_change(1, &[(1, "a", 1)])).unwrap();
            log.append(&kv_change(2, &[(2, "b", 1)])).unwrap();
            first.end
        };
        // The second batch's WAL record never made it: it disappears.
        let log = StreamLog::open(dir.path(), GlobalId(1), committed).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1)]);
        let next = log.append(&kv_change(3, &[(3, "c", 1)])).unwrap();
        assert_eq!(next.start, committed);
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1), (3, 1)]);
    }

    #[test]
    fn a_log_shorter_than_committed_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = StreamLog::open(dir.path(), GlobalId(1), 10).unwrap_err();
        assert!(
            matches!(err, StorageError::CorruptStreamLog { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_truncated_append_is_undone_and_deleting_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = StreamLog::open(dir.path(), GlobalId(2), 0).unwrap();
        let append = log.append(&kv_change(1, &[(1, "a", 1)])).unwrap();
        log.truncate(append.start).unwrap();
        assert_eq!(log.len_bytes(), 0);
        assert!(read_keys(&log, u64::MAX).is_empty());
        drop(log);
        StreamLog::delete(dir.path(), GlobalId(2)).unwrap();
        assert!(StreamLog::list(dir.path()).unwrap().is_empty());
    }
}
