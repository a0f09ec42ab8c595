//! Opening the log after a clean shutdown or a crash.
//!
//! Reads the newest snapshot, then every segment in order. The first bad frame (a torn tail
//! left by a crash mid-write) ends the log: the file is cut there and later segments are
//! deleted, so new records follow the last good one. A frame with a good checksum that does
//! not decode is not a crash artefact and fails the open instead of being dropped.

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::Instant;

use repr::Timestamp;

use super::checkpoint::read_snapshot;
use super::files::{list_dir, remove_file, sync_dir};
use super::record_codec::decode_record;
use super::segment::{ActiveSegment, FrameRead, FrameReader, FRAME_HEADER_BYTES};
use super::writer::{ClosedSegment, LogState};
use super::{WalOptions, WalRecord};
use crate::StorageError;

/// What recovery found.
pub(super) struct Recovered {
    /// The segments, ready for appending.
    pub log: LogState,
    /// The snapshot (if any) followed by the records after it, in log order.
    pub records: Vec<WalRecord>,
    /// The newest snapshot's time.
    pub checkpoint_through: Option<Timestamp>,
}

/// One segment's good prefix.
struct SegmentScan {
    records: u64,
    valid_len: u64,
    file_len: u64,
    max_time: Option<Timestamp>,
    torn: Option<&'static str>,
}

/// Recovers the log in `dir` (which exists and is locked by the caller).
pub(super) fn recover(dir: &Path, options: &WalOptions) -> Result<Recovered, StorageError> {
    let started = Instant::now();
    let listing = list_dir(dir)?;
    for unfinished in &listing.temporaries {
        remove_file(unfinished)?;
    }

    let mut records = Vec::new();
    let mut bytes = 0;
    let checkpoint_through = listing.snapshots.last().map(|(through, _)| *through);
    if let Some((through, path)) = listing.snapshots.last() {
        records.push(read_snapshot(path, *through)?);
        bytes += file_len(path)?;
    }
    // Older snapshots are superseded once the newest one's name is durable.
    if listing.snapshots.len() > 1 {
        sync_dir(dir)?;
        for (_, superseded) in listing.snapshots.iter().rev().skip(1) {
            remove_file(superseded)?;
        }
    }

    let mut closed = Vec::new();
    let mut last: Option<(u64, PathBuf, SegmentScan)> = None;
    let mut segments = listing.segments.into_iter();
    while let Some((first_seq, path)) = segments.next() {
        let scan = scan_segment(&path, checkpoint_through, &mut records)?;
        bytes += scan.valid_len;
        if let Some(reason) = scan.torn {
            let later: Vec<PathBuf> = segments.by_ref().map(|(_, path)| path).collect();
            cut_torn_tail(dir, &path, &scan, reason, &later)?;
        }
        if let Some((_, path, scan)) = last.replace((first_seq, path, scan)) {
            closed.push(ClosedSegment {
                path,
                max_time: scan.max_time,
            });
        }
    }
    let active = match last {
        Some((first_seq, path, scan)) => {
            ActiveSegment::reopen(path, first_seq, scan.records, scan.valid_len, scan.max_time)?
        }
        None => ActiveSegment::create(dir, 0)?,
    };

    tracing::info!(
        dir = %dir.display(),
        records = records.len(),
        bytes,
        segments = closed.len() + 1,
        checkpoint_through,
        duration_ms = started.elapsed().as_millis() as u64,
        "WAL opened"
    );
    Ok(Recovered {
        log: LogState {
            dir: dir.to_owned(),
            closed,
            active,
            segment_bytes: options.segment_bytes,
        },
        records,
        checkpoint_through,
    })
}

/// Reads one segment's good records, keeping those after `through` in `records`.
fn scan_segment(
    path: &Path,
    through: Option<Timestamp>,
    records: &mut Vec<WalRecord>,
) -> Result<SegmentScan, StorageError> {
    let mut reader = FrameReader::open(path)?;
    let mut scan = SegmentScan {
        records: 0,
        valid_len: 0,
        file_len: reader.file_len(),
        max_time: None,
        torn: None,
    };
    loop {
        match reader.next_frame()? {
            FrameRead::Frame { offset, payload } => {
                let record =
                    decode_record(&payload).map_err(|reason| StorageError::CorruptRecord {
                        path: path.to_owned(),
                        offset,
                        reason,
                    })?;
                scan.records += 1;
                scan.valid_len = offset + FRAME_HEADER_BYTES + payload.len() as u64;
                scan.max_time = scan.max_time.max(Some(record.time));
                if through.is_none_or(|t| record.time > t) {
                    records.push(record);
                }
            }
            FrameRead::End => return Ok(scan),
            FrameRead::Torn { offset, reason } => {
                scan.valid_len = offset;
                scan.torn = Some(reason);
                return Ok(scan);
            }
        }
    }
}

/// Cuts `path` after its last good record and deletes the `later` segments, durably.
fn cut_torn_tail(
    dir: &Path,
    path: &Path,
    scan: &SegmentScan,
    reason: &str,
    later: &[PathBuf],
) -> Result<(), StorageError> {
    let mut dropped_bytes = scan.file_len - scan.valid_len;
    for segment in later {
        dropped_bytes += file_len(segment)?;
    }
    tracing::warn!(
        segment = %path.display(),
        offset = scan.valid_len,
        reason,
        dropped_bytes,
        dropped_segments = later.len(),
        "WAL ends in a torn record; truncating"
    );
    let file = OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| StorageError::io(path, e))?;
    file.set_len(scan.valid_len)
        .and_then(|()| file.sync_all())
        .map_err(|e| StorageError::io(path, e))?;
    for segment in later {
        remove_file(segment)?;
    }
    sync_dir(dir)
}

fn file_len(path: &Path) -> Result<u64, StorageError> {
    Ok(std::fs::metadata(path)
        .map_err(|e| StorageError::io(path, e))?
        .len())
}
