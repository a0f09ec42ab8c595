//! Checkpoints: the log's prefix becomes a snapshot file and the segments it covers go away,
//! so disk use follows the tables' size, not their history.
//!
//! A snapshot file is frames (see `segment`) holding a header and then the tables' consolidated
//! batches as records at time `through`, cut into chunks of at most 64 Ki rows:
//!
//! ```text
//! header = [magic "FLUXSNAP"][version: u8 = 1][through: u64 LE][entries: u64 LE]
//! entry  = a WAL record payload at time `through` with one change batch
//! ```
//!
//! Order of operations, and why a crash between any two steps reopens to the same contents
//! (recovery reads the newest snapshot and only log records *after* its `through`):
//!
//! 1. Start a fresh segment, so the current one holds no later records and can be retired.
//!    A crash leaves an extra empty segment: harmless.
//! 2. Write `snapshot-<through>.arrow.tmp`, fsync it, rename it into place, fsync the
//!    directory. Before the rename the temporary file never counts (recovery deletes it); after
//!    the directory fsync the snapshot is durable and supersedes the older snapshot together
//!    with every record at or before `through`, so those can go.
//! 3. Delete segments whose records are all at or before `through`, then older snapshots,
//!    then fsync the directory. Any subset of these deletions is harmless: whatever survives
//!    is either superseded (skipped on replay) or still needed.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use repr::{ChangeBatch, Timestamp};

use super::files::{list_dir, remove_file, snapshot_file_name, sync_dir, temporary_file_name};
use super::record_codec::{decode_record, encode_record};
use super::segment::{frame, FrameRead, FrameReader};
use super::writer::Shared;
use super::WalRecord;
use crate::StorageError;

const SNAPSHOT_MAGIC: &[u8; 8] = b"FLUXSNAP";
const SNAPSHOT_VERSION: u8 = 1;
/// The most rows one snapshot entry holds, keeping frames far below their 4 GiB limit.
const SNAPSHOT_CHUNK_ROWS: usize = 64 * 1024;
/// A snapshot is synced every this many bytes as it is written. Left to the kernel, tens of
/// megabytes of it would be written back at once, inside whichever fsync comes next (on
/// ext4 the log's own, as commits make it), and commits would wait for all of them.
const SNAPSHOT_SYNC_BYTES: usize = 8 * 1024 * 1024;

/// Runs a checkpoint through `snapshot.time` with `snapshot` as the contents at that time.
pub(super) fn run(shared: &Shared, dir: &Path, snapshot: WalRecord) -> Result<(), StorageError> {
    let started = Instant::now();
    let through = snapshot.time;
    if !shared.begin_checkpoint(through)? {
        return Ok(());
    }

    // 1. Fresh segment. A half-done rotation may leave the log unusable: poison it.
    let rotated = shared.lock_log().rotate();
    if let Err(error) = rotated {
        return Err(StorageError::WalFailed(
            shared.poison(io::Error::other(error)),
        ));
    }

    // 2. The snapshot, durably in place.
    write_snapshot(dir, &snapshot)?;

    // 3. Retire what it supersedes.
    let retired: Vec<PathBuf> = {
        let mut log = shared.lock_log();
        let (retired, kept) = std::mem::take(&mut log.closed)
            .into_iter()
            .partition(|segment| segment.max_time.is_none_or(|t| t <= through));
        log.closed = kept;
        retired.into_iter().map(|segment| segment.path).collect()
    };
    for path in &retired {
        remove_file(path)?;
    }
    for (older, path) in list_dir(dir)?.snapshots {
        if older < through {
            remove_file(&path)?;
        }
    }
    sync_dir(dir)?;
    tracing::info!(
        through,
        retired_segments = retired.len(),
        duration_ms = started.elapsed().as_millis() as u64,
        "WAL checkpoint done"
    );
    Ok(())
}

/// Writes `snapshot-<through>.arrow` (`through` is the snapshot's time) atomically and
/// durably; returns its path.
pub(super) fn write_snapshot(dir: &Path, snapshot: &WalRecord) -> Result<PathBuf, StorageError> {
    let through = snapshot.time;
    for (id, batch) in &snapshot.changes {
        if batch.diffs.len() != batch.rows.num_rows() {
            return Err(StorageError::InvalidChangeBatch {
                id: *id,
                reason: format!(
                    "{} diffs for {} rows",
                    batch.diffs.len(),
                    batch.rows.num_rows()
                ),
            });
        }
    }
    let final_name = snapshot_file_name(through);
    let final_path = dir.join(&final_name);
    let temporary = dir.join(temporary_file_name(&final_name));
    let written = write_entries(&temporary, snapshot).and_then(|()| {
        std::fs::rename(&temporary, &final_path).map_err(|e| StorageError::io(&final_path, e))
    });
    if let Err(error) = written {
        // Best effort: recovery deletes leftovers anyway.
        let _ = std::fs::remove_file(&temporary);
        return Err(error);
    }
    sync_dir(dir)?;
    Ok(final_path)
}

/// Writes and fsyncs the header and the chunked entries to `path`; the source positions,
/// stream ends and watermarks, if any, are one more entry with no changes.
fn write_entries(path: &Path, snapshot: &WalRecord) -> Result<(), StorageError> {
    let through = snapshot.time;
    let mut entries: Vec<WalRecord> = snapshot
        .changes
        .iter()
        .flat_map(|(id, batch)| chunk(batch, through).map(move |c| (*id, c)))
        .map(|(id, batch)| WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: through,
            changes: vec![(id, batch)],
        })
        .collect();
    if !snapshot.progress.is_empty()
        || !snapshot.stream_ends.is_empty()
        || !snapshot.watermarks.is_empty()
    {
        entries.push(WalRecord {
            time: through,
            changes: Vec::new(),
            progress: snapshot.progress.clone(),
            stream_ends: snapshot.stream_ends.clone(),
            watermarks: snapshot.watermarks.clone(),
        });
    }
    let io_error = |e| StorageError::io(path, e);
    let mut out = BufWriter::new(File::create(path).map_err(io_error)?);

    let mut header = Vec::with_capacity(25);
    header.extend_from_slice(SNAPSHOT_MAGIC);
    header.push(SNAPSHOT_VERSION);
    header.extend_from_slice(&through.to_le_bytes());
    header.extend_from_slice(&(entries.len() as u64).to_le_bytes());
    out.write_all(&frame(&header)?).map_err(io_error)?;
    let mut unsynced = 0;
    for record in entries {
        let framed = frame(&encode_record(&record)?)?;
        out.write_all(&framed).map_err(io_error)?;
        unsynced += framed.len();
        if unsynced >= SNAPSHOT_SYNC_BYTES {
            out.flush().map_err(io_error)?;
            out.get_ref().sync_data().map_err(io_error)?;
            unsynced = 0;
        }
    }
    let file = out.into_inner().map_err(|e| io_error(e.into_error()))?;
    file.sync_all().map_err(io_error)
}

/// `batch` at time `through` in slices of at most [`SNAPSHOT_CHUNK_ROWS`] rows; an empty batch
/// is one empty chunk, so its table's schema is kept.
fn chunk(batch: &ChangeBatch, through: Timestamp) -> impl Iterator<Item = ChangeBatch> + '_ {
    let num_rows = batch.rows.num_rows();
    (0..num_rows.max(1))
        .step_by(SNAPSHOT_CHUNK_ROWS)
        .map(move |offset| {
            let len = SNAPSHOT_CHUNK_ROWS.min(num_rows - offset);
            ChangeBatch {
                time: through,
                rows: batch.rows.slice(offset, len),
                diffs: batch.diffs[offset..offset + len].to_vec(),
            }
        })
}

/// Reads a snapshot back as one record at `through`.
pub(super) fn read_snapshot(path: &Path, through: Timestamp) -> Result<WalRecord, StorageError> {
    let corrupt = |reason: String| StorageError::CorruptSnapshot {
        path: path.to_owned(),
        reason,
    };
    let mut reader = FrameReader::open(path)?;
    let header = match reader.next_frame()? {
        FrameRead::Frame { payload, .. } => payload,
        FrameRead::End => return Err(corrupt("empty file".into())),
        FrameRead::Torn { reason, .. } => return Err(corrupt(format!("header: {reason}"))),
    };
    let entries = parse_header(&header, through).map_err(corrupt)?;
    let mut record = WalRecord {
        progress: Vec::new(),
        stream_ends: Vec::new(),
        watermarks: Vec::new(),
        time: through,
        changes: Vec::new(),
    };
    for entry in 0..entries {
        let payload = match reader.next_frame()? {
            FrameRead::Frame { payload, .. } => payload,
            FrameRead::End => {
                return Err(corrupt(format!("ends after {entry} of {entries} entries")));
            }
            FrameRead::Torn { offset, reason } => {
                return Err(corrupt(format!("entry at byte {offset}: {reason}")));
            }
        };
        let entry = decode_record(&payload).map_err(&corrupt)?;
        if entry.time != through {
            return Err(corrupt(format!("entry at time {}", entry.time)));
        }
        record.changes.extend(entry.changes);
        record.progress.extend(entry.progress);
        record.stream_ends.extend(entry.stream_ends);
        record.watermarks.extend(entry.watermarks);
    }
    match reader.next_frame()? {
        FrameRead::End => Ok(record),
        _ => Err(corrupt(format!("data after its {entries} entries"))),
    }
}

/// The entry count in a snapshot header, after checking it is one for `through`.
fn parse_header(header: &[u8], through: Timestamp) -> Result<u64, String> {
    let u64_at = |at: usize| -> Result<u64, String> {
        header
            .get(at..at + 8)
            .and_then(|bytes| bytes.try_into().ok())
            .map(u64::from_le_bytes)
            .ok_or_else(|| format!("header of {} bytes", header.len()))
    };
    if header.get(..SNAPSHOT_MAGIC.len()) != Some(SNAPSHOT_MAGIC.as_slice()) {
        return Err("not a snapshot file".into());
    }
    let version = header.get(SNAPSHOT_MAGIC.len()).copied();
    if version != Some(SNAPSHOT_VERSION) {
        return Err(format!("unknown snapshot format version {version:?}"));
    }
    let header_through = u64_at(9)?;
    if header_through != through {
        return Err(format!(
            "holds time {header_through}, its name says {through}"
        ));
    }
    if header.len() != 25 {
        return Err(format!("header of {} bytes", header.len()));
    }
    u64_at(17)
}
