//! Change logs: files of change batches in time order, each durable before it counts.
//!
//! Two things in Fluxion are histories that must outlive the process but not live in the WAL:
//!
//! - **streams** (append-only sources): their rows are only ever inserted, so nothing can be
//!   compacted away; in the WAL every checkpoint would rewrite all of it, in an arrangement
//!   memory would grow with it. A source's batch commits once, in its stream's log: one frame
//!   holds the rows, the source's position after them and any bad records it had, and the
//!   fsync of that frame is the commit ([`ChangeLog::write`], then
//!   [`ChangeLog::sync_through`], which concurrent commits share). Opening the log keeps
//!   what a checkpoint recorded and every whole frame after it that commits itself (it holds a
//!   position), and cuts the rest ([`ChangeLog::open`]).
//! - **durable subscriptions**: the changes of a view, in time order, kept for their
//!   retention so that subscribers can resume after a disconnect or a restart. Nothing else
//!   commits them: the log holds whatever whole frames reached the disk
//!   ([`ChangeLog::open_recovering`] cuts a torn tail), and it is compacted by rewriting its
//!   old part as one consolidated batch ([`ChangeLog::replace`]).
//!
//! The file is frames (see `wal::segment`), each one WAL record payload holding one batch at
//! its time.
//!
//! A failed write or fsync poisons the log, as it does the WAL (see `wal::writer`): the
//! kernel may have dropped the pages, so nothing more is appended until the log is reopened,
//! which reads what reached the disk.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use repr::{ChangeBatch, GlobalId, Timestamp};

use crate::wal::files::{remove_file, sync_dir};
use crate::wal::record_codec::{decode_record, decode_record_without, encode_record};
use crate::wal::segment::{frame, FrameRead, FrameReader};
use crate::{StorageError, WalRecord};

/// One change log. `Send + Sync`; writes must not race each other (the coordinator orders
/// them), fsyncs and reads may run alongside them and each other.
#[derive(Debug)]
pub struct ChangeLog {
    id: GlobalId,
    path: PathBuf,
    file: Mutex<File>,
    /// The same file, for fsyncs: held by the one in progress, so commits that wait for it
    /// share the next one, and writes go on meanwhile.
    sync_file: Mutex<File>,
    /// Bytes written: whole frames, the last ones perhaps not fsynced yet.
    written_len: AtomicU64,
    /// Bytes written and fsynced: whole frames only. Readers read this far.
    durable_len: AtomicU64,
    /// Set once a write or fsync failed; never cleared.
    failure: Mutex<Option<Arc<io::Error>>>,
    /// Bumped by every [`ChangeLog::replace`]: byte offsets from before it mean nothing after.
    generation: AtomicU64,
}

/// Where an append put its batch: the log's length before and after it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogAppend {
    /// The length before the append.
    pub start: u64,
    /// The length after the append: it is durable once the log has synced this far.
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

    /// Opens (or creates) log `id` of `kind` in `dir`, keeping its first `committed_len`
    /// bytes (what the WAL or a checkpoint recorded as committed; 0 if nothing did) and,
    /// after them, every whole frame that commits itself: one that holds a source position
    /// ([`WalRecord::progress`]). It is cut at the first frame after `committed_len` that
    /// does not (an append of an older version whose WAL record never came) or is torn.
    /// Returns the log and the records of the frames kept after `committed_len`, oldest
    /// first, without their batches of this log (only their positions and what they wrote
    /// elsewhere). A file shorter than `committed_len` lost committed data and is an error.
    pub fn open(
        dir: &Path,
        kind: &str,
        id: GlobalId,
        committed_len: u64,
    ) -> Result<(Self, Vec<WalRecord>), StorageError> {
        let (path, file, len) = open_file(dir, kind, id)?;
        if len < committed_len {
            return Err(StorageError::CorruptChangeLog {
                path,
                reason: format!("{len} bytes, but {committed_len} were committed"),
            });
        }
        let mut frames = FrameReader::open_range(&path, committed_len, len)?;
        let mut committed = Vec::new();
        let mut keep = committed_len;
        while let FrameRead::Frame { offset, payload } = frames.next_frame()? {
            let record = decode_record_without(&payload, Some(id)).map_err(|reason| {
                StorageError::CorruptChangeLog {
                    path: path.clone(),
                    reason: format!("at byte {offset}: {reason}"),
                }
            })?;
            if record.progress.is_empty() {
                break;
            }
            committed.push(record);
            keep = frames.offset();
        }
        Ok((Self::cut_to(id, path, file, len, keep)?, committed))
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
        let sync_file = file.try_clone().map_err(|e| StorageError::io(&path, e))?;
        Ok(ChangeLog {
            id,
            path,
            file: Mutex::new(file),
            sync_file: Mutex::new(sync_file),
            written_len: AtomicU64::new(keep),
            durable_len: AtomicU64::new(keep),
            failure: Mutex::new(None),
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
    /// fsynced when this returns.
    pub fn append(&self, batches: &[ChangeBatch]) -> Result<LogAppend, StorageError> {
        let mut framed = Vec::new();
        for batch in batches {
            framed.extend(frame(&encode_record(&self.record_of(batch))?)?);
        }
        let append = self.write_frames(&framed)?;
        self.sync_through(append.end)?;
        Ok(append)
    }

    /// Writes `record` (later than everything logged) as one frame, without waiting for the
    /// disk: it is durable once [`Self::sync_through`] its `end` returns. Readers do not see
    /// it before then.
    pub fn write(&self, record: &WalRecord) -> Result<LogAppend, StorageError> {
        self.write_frames(&frame(&encode_record(record)?)?)
    }

    fn write_frames(&self, framed: &[u8]) -> Result<LogAppend, StorageError> {
        let mut file = self.lock_file();
        self.check_not_failed()?;
        let start = self.written_len.load(Ordering::Acquire);
        if let Err(e) = file.write_all(framed) {
            // Best effort: the bytes of a failed write must not stay before a later one.
            let _ = file.set_len(start);
            return Err(self.fail(e));
        }
        let end = start + framed.len() as u64;
        self.written_len.store(end, Ordering::Release);
        Ok(LogAppend { start, end })
    }

    /// Returns once the log is durable through byte `end`: fsyncs everything written so
    /// far, unless an fsync that already covered `end` ran meanwhile (concurrent commits
    /// share one). Blocks.
    pub fn sync_through(&self, end: u64) -> Result<(), StorageError> {
        if self.durable_len.load(Ordering::Acquire) >= end {
            return Ok(());
        }
        let sync_file = self.sync_file.lock().unwrap_or_else(|p| p.into_inner());
        if self.durable_len.load(Ordering::Acquire) >= end {
            return Ok(());
        }
        self.check_not_failed()?;
        let written = self.written_len.load(Ordering::Acquire);
        sync_file.sync_data().map_err(|e| self.fail(e))?;
        self.durable_len.fetch_max(written, Ordering::AcqRel);
        Ok(())
    }

    /// Refuses work once a write or fsync failed.
    fn check_not_failed(&self) -> Result<(), StorageError> {
        match &*self.failure.lock().unwrap_or_else(|p| p.into_inner()) {
            Some(failure) => Err(StorageError::ChangeLogFailed {
                path: self.path.clone(),
                source: failure.clone(),
            }),
            None => Ok(()),
        }
    }

    /// Records that a write or fsync failed with `error`; every later one is refused.
    fn fail(&self, error: io::Error) -> StorageError {
        let failure = self
            .failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get_or_insert_with(|| Arc::new(error))
            .clone();
        tracing::error!(log = %self.path.display(), error = %failure, "change log write failed; refusing further appends");
        StorageError::ChangeLogFailed {
            path: self.path.clone(),
            source: failure,
        }
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
        let mut sync_file = self.sync_file.lock().unwrap_or_else(|p| p.into_inner());
        self.check_not_failed()?;
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
        *sync_file = file.try_clone().map_err(io(&self.path))?;
        let len = framed.len() as u64;
        self.written_len.store(len, Ordering::Release);
        self.durable_len.store(len, Ordering::Release);
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
            watermarks: Vec::new(),
        }
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
            id: self.id,
            frames: FrameReader::open_range(&self.path, offset, self.len_bytes())?,
            path: self.path.clone(),
            through,
            stopped_at: None,
            watermark_steps: Vec::new(),
        })
    }

    fn lock_file(&self) -> std::sync::MutexGuard<'_, File> {
        self.file.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The batches of a change log up to a time, read from disk one at a time.
pub struct ChangeLogReader {
    /// The log's id: a frame's batch for it is what is read.
    id: GlobalId,
    frames: FrameReader,
    path: PathBuf,
    through: Timestamp,
    /// Where the first batch past `through` starts, once one was seen.
    stopped_at: Option<u64>,
    /// The watermarks of this log's source that the frames read so far recorded.
    watermark_steps: Vec<(Timestamp, i64)>,
}

impl Iterator for ChangeLogReader {
    type Item = Result<ChangeBatch, StorageError>;

    /// The next batch; a frame without one for this log (a commit that only moved a
    /// source's position, or only recorded bad records) is skipped.
    fn next(&mut self) -> Option<Self::Item> {
        loop {
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
            let watermarks = record.watermarks.iter().filter(|(id, _)| *id == self.id);
            self.watermark_steps
                .extend(watermarks.map(|(_, watermark)| (record.time, *watermark)));
            let own = record.changes.into_iter().find(|(id, _)| *id == self.id);
            if let Some((_, batch)) = own {
                return Some(Ok(batch));
            }
        }
    }
}

impl ChangeLogReader {
    /// The offset after the last batch returned: where a later reader picks up (a batch
    /// past `through` is left for it).
    pub fn offset(&self) -> u64 {
        self.stopped_at.unwrap_or_else(|| self.frames.offset())
    }

    /// The `(time, watermark)` steps of this log's source recorded in the frames read so
    /// far: a stream's watermark history, once the reader is through.
    pub fn watermark_steps(&self) -> &[(Timestamp, i64)] {
        &self.watermark_steps
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
        let (log, _) = ChangeLog::open(dir.path(), KIND, GlobalId(4), 0).unwrap();
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

    /// The frame of a source batch at `time` of stream `id`: its rows and the position
    /// after them.
    fn committing(id: GlobalId, time: Timestamp, position: &str) -> WalRecord {
        WalRecord {
            time,
            changes: vec![(id, kv_change(time, &[(time as i64, "x", 1)]))],
            progress: vec![(id, position.to_owned())],
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
        }
    }

    #[test]
    fn reopening_keeps_committed_bytes_and_frames_that_commit_themselves() {
        let dir = tempfile::tempdir().unwrap();
        let id = GlobalId(1);
        let committed = {
            let (log, _) = ChangeLog::open(dir.path(), KIND, id, 0).unwrap();
            let first = log.append(&[kv_change(1, &[(1, "a", 1)])]).unwrap();
            log.write(&committing(id, 2, "p2")).unwrap();
            let third = log.write(&committing(id, 3, "p3")).unwrap();
            log.sync_through(third.end).unwrap();
            // Committed by nothing (an older version's append whose WAL record never came).
            log.append(&[kv_change(4, &[(4, "d", 1)])]).unwrap();
            log.write(&committing(id, 5, "p5")).unwrap();
            first.end
        };
        let (log, recovered) = ChangeLog::open(dir.path(), KIND, id, committed).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1), (2, 1), (3, 1)]);
        let positions: Vec<_> = recovered.iter().map(|r| r.progress.clone()).collect();
        assert_eq!(
            positions,
            vec![vec![(id, "p2".to_owned())], vec![(id, "p3".to_owned())]]
        );
        assert!(
            recovered.iter().all(|r| r.changes.is_empty()),
            "the stream's own rows stay in the log, undecoded"
        );
        let next = log.append(&[kv_change(6, &[(6, "f", 1)])]).unwrap();
        assert_eq!(read_keys(&log, u64::MAX).last(), Some(&(6, 1)));
        drop(log);
        // A torn frame at the end goes too.
        let path = ChangeLog::path_in(dir.path(), KIND, id);
        let mut bytes = std::fs::read(&path).unwrap();
        bytes.truncate(next.end as usize - 3);
        std::fs::write(&path, &bytes).unwrap();
        let (log, recovered) = ChangeLog::open(dir.path(), KIND, id, next.start).unwrap();
        assert!(recovered.is_empty());
        assert_eq!(log.len_bytes(), next.start);
    }

    #[test]
    fn written_frames_are_read_once_synced_and_one_sync_covers_all() {
        let dir = tempfile::tempdir().unwrap();
        let id = GlobalId(3);
        let (log, _) = ChangeLog::open(dir.path(), KIND, id, 0).unwrap();
        let first = log.write(&committing(id, 1, "p1")).unwrap();
        let second = log.write(&committing(id, 2, "p2")).unwrap();
        assert_eq!(second.start, first.end);
        assert!(
            read_keys(&log, u64::MAX).is_empty(),
            "nothing is durable yet"
        );
        log.sync_through(first.end).unwrap();
        assert_eq!(log.len_bytes(), second.end, "the fsync covered both");
        log.sync_through(second.end).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(1, 1), (2, 1)]);
    }

    #[test]
    fn frames_without_a_batch_for_the_log_are_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let id = GlobalId(9);
        let (log, _) = ChangeLog::open(dir.path(), KIND, id, 0).unwrap();
        let errors_only = WalRecord {
            time: 1,
            changes: vec![(GlobalId(2), kv_change(1, &[(1, "bad", 1)]))],
            progress: vec![(id, "p1".to_owned())],
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
        };
        log.write(&errors_only).unwrap();
        let end = log.write(&committing(id, 2, "p2")).unwrap().end;
        log.sync_through(end).unwrap();
        assert_eq!(read_keys(&log, u64::MAX), vec![(2, 1)]);
        drop(log);
        let (_, recovered) = ChangeLog::open(dir.path(), KIND, id, 0).unwrap();
        let elsewhere: Vec<_> = recovered
            .iter()
            .flat_map(|r| r.changes.iter().map(|(table, _)| *table))
            .collect();
        assert_eq!(
            elsewhere,
            vec![GlobalId(2)],
            "what a frame wrote elsewhere is kept"
        );
    }

    #[test]
    fn a_reader_stopping_at_a_time_leaves_the_rest_to_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = ChangeLog::open(dir.path(), KIND, GlobalId(5), 0).unwrap();
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
    fn deleting_removes_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (log, _) = ChangeLog::open(dir.path(), KIND, GlobalId(2), 0).unwrap();
        log.append(&[kv_change(1, &[(1, "a", 1)])]).unwrap();
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
