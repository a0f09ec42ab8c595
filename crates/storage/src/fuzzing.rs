//! The log decoders as fuzz targets see them (feature `fuzzing`).
//!
//! The WAL and the change logs are files of checksummed frames, each one record payload.
//! [`log_record`] decodes a payload as recovery would after its checksum passed;
//! [`wal_segment`] and [`change_log_file`] open a whole file of arbitrary bytes as a WAL's only
//! segment and as a stream's change log.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, StringArray};
use arrow::record_batch::RecordBatch;
use repr::{ChangeBatch, GlobalId, Timestamp};

use crate::wal::files::segment_file_name;
use crate::wal::record_codec::{decode_record, encode_record};
use crate::wal::segment::frame;
use crate::{ChangeLog, Wal, WalRecord};

/// Decodes `payload` as one record; returns whether it decoded. Panics if a record that
/// decodes does not encode back to bytes that decode to the same encoding.
pub fn log_record(payload: &[u8]) -> bool {
    let Ok(record) = decode_record(payload) else {
        return false;
    };
    let encoded = encode_record(&record).expect("a decoded record encodes");
    let again = decode_record(&encoded).expect("an encoded record decodes");
    assert_eq!(
        encode_record(&again).expect("a decoded record encodes"),
        encoded,
        "a record's encoding is stable"
    );
    true
}

/// Opens a WAL whose only segment holds `bytes`; returns whether it opened. Panics if it
/// opened but a record appended then is not the last one read back on the next open.
pub fn wal_segment(bytes: &[u8]) -> bool {
    let dir = ScratchDir::new();
    std::fs::write(dir.0.join(segment_file_name(0)), bytes).expect("write the segment");
    let Ok((wal, records)) = Wal::open(&dir.0) else {
        return false;
    };
    let time = records.iter().map(|r| r.time).max().unwrap_or(0) + 1;
    wal.append_blocking(marker_record(time))
        .expect("an append to a scratch directory");
    drop(wal);
    let (_, reopened) = Wal::open(&dir.0).expect("a log that opened reopens");
    let last = reopened.last().expect("the appended record is read back");
    assert_eq!(
        (last.time, &last.progress),
        (time, &marker_record(time).progress)
    );
    true
}

/// Opens a change log holding `bytes`, as after a crash and as committed through its whole
/// length, and reads it; returns whether it opened.
pub fn change_log_file(bytes: &[u8]) -> bool {
    let dir = ScratchDir::new();
    let id = GlobalId(3);
    std::fs::write(ChangeLog::path_in(&dir.0, "stream", id), bytes).expect("write the log");
    let Ok(log) = ChangeLog::open_recovering(&dir.0, "stream", id) else {
        return false;
    };
    let batches = log.read_through(Timestamp::MAX).expect("a log reads");
    batches.for_each(drop);
    drop(log);
    let _ = ChangeLog::open(&dir.0, "stream", id, bytes.len() as u64);
    true
}

/// Payloads of records of every part a log holds: rows with their diffs, sources'
/// positions, stream ends and watermarks.
pub fn record_seeds() -> Vec<Vec<u8>> {
    let rows = RecordBatch::try_from_iter([
        ("id", Arc::new(Int64Array::from(vec![1, 2, -3])) as ArrayRef),
        (
            "name",
            Arc::new(StringArray::from(vec![Some("a"), None, Some("ccc")])) as ArrayRef,
        ),
    ])
    .expect("a batch of two columns");
    let changes = WalRecord {
        time: 5,
        changes: vec![(
            GlobalId(3),
            ChangeBatch {
                time: 5,
                rows,
                diffs: vec![1, -1, 2],
            },
        )],
        progress: vec![(GlobalId(4), "offset 17".to_owned())],
        stream_ends: vec![(GlobalId(4), 4096)],
        watermarks: vec![(GlobalId(4), 1_700_000_000_000_000)],
    };
    [changes, marker_record(9)]
        .iter()
        .map(|record| encode_record(record).expect("a record encodes"))
        .collect()
}

/// Files of whole frames of [`record_seeds`], as a WAL segment or a change log holds them.
pub fn file_seeds() -> Vec<Vec<u8>> {
    let frames: Vec<Vec<u8>> = record_seeds()
        .iter()
        .map(|payload| frame(payload).expect("a small record frames"))
        .collect();
    vec![frames[0].clone(), frames.concat()]
}

/// A record that says which test wrote it.
fn marker_record(time: Timestamp) -> WalRecord {
    WalRecord {
        time,
        changes: Vec::new(),
        progress: vec![(GlobalId(7), "appended after a fuzzed open".to_owned())],
        stream_ends: Vec::new(),
        watermarks: Vec::new(),
    }
}

/// A fresh directory under the system's temporary directory, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Self {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let name = format!(
            "fluxion-fuzz-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let path = std::env::temp_dir().join(name);
        std::fs::create_dir_all(&path).expect("create a scratch directory");
        ScratchDir(path)
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(Path::new(&self.0));
    }
}
