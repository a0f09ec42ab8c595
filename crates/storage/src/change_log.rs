//! Change logs: files of change batches in time order, each fsynced as it is appended.
//!
//! Two things in Fluxion are histories that must outlive the process but not live in the WAL:
//!
//! - **streams** (append-only sources): their rows are only ever inserted, so nothing can be
//!   compacted away; in the WAL every checkpoint would rewrite all of it, in an arrangement
//!   memory would grow with it. An append is fsynced *before* the WAL record that commits it;
//!   that record carries the log's new length (`WalRecord::stream_ends`), and opening the log
//!   cuts it back to the last committed length ([`ChangeLog::open`]), so a batch whose commit
//!   never reached the WAL vanishes: the stream and the WAL agree after any crash.
//! - **durable subscriptions**: the changes of a view, in time order, kept for their
//!   retention so that subscribers can resume after a disconnect or a restart. Nothing else
//!   commits them: the log holds whatever whole frames reached the disk
//!   ([`ChangeLog::open_recovering`] cuts a torn tail), and it is compacted by rewriting its
//!   old part as one consolidated batch ([`ChangeLog::replace`]).
//!
//! The file is frames (see `wal::segment`), each one WAL record payload holding one batch at
//! its time.

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

/// One change log. `Send + Sync`; appends must not race each other (the coordinator makes
/// them one at a time), reads may run alongside them.
#[derive(Debug)]
pub struct ChangeLog {
    id: GlobalId,
    path: PathBuf,
    file: Mutex<File>,
    /// Bytes written and fsynced: whole frames only.
    durable_len: AtomicU64,
    /// Bumped by every [`ChangeLog::replace`]: byte offsets from before it mean nothing after.
    generation: AtomicU64,
}

/// Where an append put its batch: the log's length before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogAppend {
    /// The length before the append; [`ChangeLog::truncate`] to it undoes the append.
    pub start: u64,
    /// The length after the append, which the committing WAL record stores.
    pub end: u64,
}

impl ChangeLog {
    /// The file of log `id` of `kind` (`stream`, `subscription`) in `dir`.
    pub fn path_in(dir: &Path, kind: &str, id: GlobalId) -> PathBuf {
        dir.join(format!("{kind}-{:020}.log", id.0))
    }

    /// Deletes log `id` of `kind` in `dir` (what it logged was dropped); a missing file is
    /// fine. A reader that still has it open reads on until it is done.
    pub fn delete(dir: &Path, kind: &str, id: GlobalId) -> Result<(), StorageError> {
        remove_file(&Self::path_in(dir, kind, id))?;
        sync_dir(dir)
    }

    /// The ids of the logs of `kind` in `dir` (none if it does not exist).
    pub fn list(dir: &Path, kind: &str) -> Result<Vec<GlobalId>, StorageError> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StorageError::io(dir, e)),
        };
        let prefix = format!("{kind}-");
        let mut ids = Vec::new();
        for entry in entries {
            let name = entry.map_err(|e| StorageError::io(dir, e))?.file_name();
            let id = name
                .to_str()
                .and_then(|n| n.strip_prefix(&prefix)?.strip_suffix(".log"))
                .filter(|digits| digits.len() == 20)
                .and_then(|digits| digits.parse().ok());
            ids.extend(id.map(GlobalId));
        }
        ids.sort();
        Ok(ids)
    }

    /// Opens (or creates) log `id` of `kind` in `dir`, cut back to `committed_len` bytes: the
    /// last length a WAL record committed (0 if none did). A file shorter than that lost
    /// committed data and is an error.
    pub fn open(
        dir: &Path,
        kind: &str,
        id: GlobalId,
        committed_len: u64,
    ) -> Result<Self, StorageError> {
        let (path, file, len) = open_file(dir, kind, id)?;
        if len < committed_len {
            return Err(StorageError::CorruptChangeLog {
                path,
                reason: format!("{len} bytes, but the WAL committed {committed_len}"),
            });
        }
        Self::cut_to(id, path, file, len, committed_len)
    }

    /// Opens (or creates) log `id` of `kind` in `dir`, keeping every whole frame and cutting
    /// a torn tail (an append the crash interrupted).
    pub fn open_recovering(dir: &Path, kind: &str, id: GlobalId) -> Result<Self, StorageError> {
        let (path, file, len) = open_file(dir, kind, id)?;
        let mut frames = FrameReader::open(&path)?;
        let whole = loop {
            match frames.next_frame()? {
                FrameRead::Frame { .. } => continue,
                FrameRead::End => break len,
                FrameRead::Torn { offset, .. } => break offset,
            }
        };
        Self::cut_to(id, path, file, len, whole)
    }

    /// The log in `file` (`len` bytes), cut back to `keep` bytes.
    fn cut_to(
        id: GlobalId,
        path: PathBuf,
        file: File,
        len: u64,
        keep: u64,
    ) -> Result<Self, StorageError> {
        if len > keep {
            tracing::info!(
                log = %path.display(),
                cut_bytes = len - keep,
                "change log cut back to its last whole, committed batch"
            );
            file.set_len(keep)
                .and_then(|()| file.sync_all())
                .map_err(|e| StorageError::io(&path, e))?;
        }
        Ok(ChangeLog {
            id,
            path,
            file: Mutex::new(file),
            durable_len: AtomicU64::new(keep),
            generation: AtomicU64::new(0),
        })
    }

    /// The log's id.
    pub fn id(&self) -> GlobalId {
        self.id
    }

    /// The bytes written and fsynced so far.
    pub fn len_bytes(&self) -> u64 {
        self.durable_len.load(Ordering::Acquire)
    }

    /// Appends `batches` (in time order, after everything logged) durably: written and
    /// fsynced, once, when this returns. For a stream the append only counts once a WAL
    /// record stores the returned `end`; if that fails, [`Self::truncate`] to `start`.
    pub fn append(&self, batches: &[ChangeBatch]) -> Result<LogAppend, StorageError> {
        let mut framed = Vec::new();
        for batch in batches {
            framed.extend(frame(&encode_record(&self.record_of(batch))?)?);
        }
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
        Ok(LogAppend { start, end })
    }

    /// Replaces the whole log with `batches`, atomically (a new file, fsynced, renamed over
    /// the old one): how a log drops history it no longer keeps. Readers that opened the old
    /// file read it to its end.
    pub fn replace(&self, batches: &[ChangeBatch]) -> Result<(), StorageError> {
        let mut framed = Vec::new();
        for batch in batches {
            framed.extend(frame(&encode_record(&self.record_of(batch))?)?);
        }
        let temporary = self.path.with_extension("log.tmp");
        let io = |path: &Path| {
            let path = path.to_owned();
            move |e| StorageError::io(path, e)
        };
        let mut file = self.lock_file();
        std::fs::write(&temporary, &framed)
            .and_then(|()| File::open(&temporary)?.sync_all())
            .map_err(io(&temporary))?;
        std::fs::rename(&temporary, &self.path).map_err(io(&self.path))?;
        if let Some(dir) = self.path.parent() {
            sync_dir(dir)?;
        }
        *file = OpenOptions::new()
            .read(true)
            .append(true)
            .open(&self.path)
            .map_err(io(&self.path))?;
        self.durable_len
            .store(framed.len() as u64, Ordering::Release);
        self.generation.fetch_add(1, Ordering::AcqRel);
        Ok(())
    }

    /// How many times the log was replaced; offsets are only comparable within one.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The WAL record payload a frame of this log holds for `batch`.
    fn record_of(&self, batch: &ChangeBatch) -> WalRecord {
        WalRecord {
            time: batch.time,
            changes: vec![(self.id, batch.clone())],
            progress: Vec::new(),
            stream_ends: Vec::new(),
        }
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

    /// Reads the batches logged at or before `through`, in order. Appends made after this
    /// call are not read.
    pub fn read_through(&self, through: Timestamp) -> Result<ChangeLogReader, StorageError> {
        self.read_from(0, through)
    }

    /// Reads the batches from byte `offset` (where an earlier reader stopped, in the same
    /// [`Self::generation`]) on, up to `through`.
    pub fn read_from(
        &self,
        offset: u64,
        through: Timestamp,
    ) -> Result<ChangeLogReader, StorageError> {
        Ok(ChangeLogReader {
            frames: FrameReader::open_range(&self.path, offset, self.len_bytes())?,
            path: self.path.clone(),
            through,
            stopped_at: None,
        })
    }

    fn lock_file(&self) -> std::sync::MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batches of a change log up to a time, read from disk one at a time.
pub struct ChangeLogReader {
    frames: FrameReader,
    path: PathBuf,
    through: Timestamp,
    /// Where the first batch past `through` starts, once one was seen.
    stopped_at: Option<u64>,
}

impl Iterator for ChangeLogReader {
    type Item = Result<ChangeBatch, StorageError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.stopped_at.is_some() {
            return None;
        }
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
            self.stopped_at = Some(offset);
            return None;
        }
        match record.changes.into_iter().next() {
            Some((_, batch)) => Some(Ok(batch)),
            None => Some(Err(self.corrupt(offset, "a frame without a batch".into()))),
        }
    }
}

impl ChangeLogReader {
    /// The offset after the last batch returned: where a later reader picks up (a batch
    /// past `through` is left for it).
    pub fn offset(&self) -> u64 {
        self.stopped_at.unwrap_or_else(|| self.frames.offset())
    }

    fn corrupt(&self, offset: u64, reason: String) -> StorageError {
        StorageError::CorruptChangeLog {
            path: self.path.clone(),
            reason: format!("at byte {offset}: {reason}"),
        }
    }
}

/// Opens or creates the file of log `id`; returns its path, the file and its length.
fn open_file(dir: &Path, kind: &str, id: GlobalId) -> Result<(PathBuf, File, u64), StorageError> {
    std::fs::create_dir_all(dir).map_err(|e| StorageError::io(dir, e))?;
    let path = ChangeLog::path_in(dir, kind, id);
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
    Ok((path, file, len))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::test_data::kv_change;

    const KIND: &str = "stream";

    fn read_keys(log: &ChangeLog, through: Timestamp) -> Vec<(Timestamp, usize)> {
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
        let log = ChangeLog::open(dir.path(), KIND, GlobalId(4), 0).unwrap();
        log.append(&[kv_change(1, &[(1, "a", 1)])]).unwrap();
        log.append(&[
            kv_change(3, &[(2, "b", 1), (3, "c", 1)]),
            kv_change(5, &[(4, "d", 1)]),
        ])
        .unwrap();
        assert_eq!(read_keys(&log, 4), vec![(1, 1), (3, 2)]);
        assert_eq!(read_keys(&log, u64::MAX).len(), 3);
        assert_eq!(
            ChangeLog::list(dir.path(), KIND).unwrap(),
            vec![GlobalId(4)]
        );
        assert!(ChangeLog::list(dir.path(), "subscription")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn reopening_cuts_back_to_the_committed_length() {
        let dir = tempfile::tempdir().unwrap();
        let committed = {
            let log = ChangeLog::open(dir.path(), KIND, GlobalId(1), 0).unwrap();
            let first = log.append(&[kv_change(1, &[(1, "a", 1)])]).unwrap();
            log.append(&[kv_change(2, &[(2, "b", 1)])]).unwrap();
            first.end
        };
        // The second batch's WAL record never made it: it disappears.
        let log = ChangeLog::open(dir.path(), KIND, GlobalId(1), committed).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1)]);
        let next = log.append(&[kv_change(3, &[(3, "c", 1)])]).unwrap();
        assert_eq!(next.start, committed);
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1), (3, 1)]);
    }

    #[test]
    fn a_reader_stopping_at_a_time_leaves_the_rest_to_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::open(dir.path(), KIND, GlobalId(5), 0).unwrap();
        log.append(&[kv_change(1, &[(1, "a", 1)]), kv_change(4, &[(2, "b", 1)])])
            .unwrap();
        let mut first = log.read_through(2).unwrap();
        assert_eq!(first.by_ref().count(), 1);
        let rest: Vec<_> = log
            .read_from(first.offset(), u64::MAX)
            .unwrap()
            .map(|b| b.unwrap().time)
            .collect();
        assert_eq!(rest, vec![4]);
    }

    #[test]
    fn a_log_shorter_than_committed_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = ChangeLog::open(dir.path(), KIND, GlobalId(1), 10).unwrap_err();
        assert!(
            matches!(err, StorageError::CorruptChangeLog { .. }),
            "{err}"
        );
    }

    #[test]
    fn a_truncated_append_is_undone_and_deleting_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::open(dir.path(), KIND, GlobalId(2), 0).unwrap();
        let append = log.append(&[kv_change(1, &[(1, "a", 1)])]).unwrap();
        log.truncate(append.start).unwrap();
        assert_eq!(log.len_bytes(), 0);
        assert!(read_keys(&log, u64::MAX).is_empty());
        drop(log);
        ChangeLog::delete(dir.path(), KIND, GlobalId(2)).unwrap();
        assert!(ChangeLog::list(dir.path(), KIND).unwrap().is_empty());
    }

    #[test]
    fn recovering_keeps_whole_frames_and_cuts_a_torn_one() {
        let dir = tempfile::tempdir().unwrap();
        let whole = {
            let log = ChangeLog::open_recovering(dir.path(), "subscription", GlobalId(7)).unwrap();
            log.append(&[kv_change(1, &[(1, "a", 1)]), kv_change(2, &[(1, "a", -1)])])
                .unwrap()
                .end
        };
        let path = ChangeLog::path_in(dir.path(), "subscription", GlobalId(7));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.extend([7, 0, 0, 0, 1, 2]);
        std::fs::write(&path, &bytes).unwrap();
        let log = ChangeLog::open_recovering(dir.path(), "subscription", GlobalId(7)).unwrap();
        assert_eq!(log.len_bytes(), whole);
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1), (2, 1)]);
    }

    #[test]
    fn replacing_drops_history_and_appends_go_on_after_it() {
        let dir = tempfile::tempdir().unwrap();
        let log = ChangeLog::open_recovering(dir.path(), "subscription", GlobalId(8)).unwrap();
        log.append(&[kv_change(1, &[(1, "a", 1)]), kv_change(2, &[(2, "b", 1)])])
            .unwrap();
        let reader = log.read_through(u64::MAX).unwrap();
        log.replace(&[kv_change(2, &[(1, "a", 1), (2, "b", 1)])])
            .unwrap();
        assert_eq!(
            reader.count(),
            2,
            "a reader of the old file reads it to the end"
        );
        log.append(&[kv_change(3, &[(3, "c", 1)])]).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(2, 2), (3, 1)]);
        let reopened = ChangeLog::open_recovering(dir.path(), "subscription", GlobalId(8)).unwrap();
        assert_eq!(read_keys(&reopened, u64::MAX), vec![(2, 2), (3, 1)]);
    }
}
