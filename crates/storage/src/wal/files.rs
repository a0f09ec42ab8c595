//! The files in a WAL directory and what their names say.
//!
//! ```text
//! wal-<first sequence number, 20 digits>.log   segments, in log order by name
//! snapshot-<through, 20 digits>.arrow          compacted contents as of `through`
//! *.tmp                                        a snapshot being written; never valid
//! LOCK                                         held while a process has the log open
//! ```
//!
//! Fixed-width numbers make name order the numeric order, for people listing the directory.

use std::fs::File;
use std::path::{Path, PathBuf};

use repr::Timestamp;

use crate::StorageError;

/// The lock file's name.
pub(super) const LOCK_FILE: &str = "LOCK";
/// The suffix of files being written that only count once renamed.
const TEMPORARY_SUFFIX: &str = ".tmp";

/// The name of the segment whose first record has sequence number `first_seq`.
pub(crate) fn segment_file_name(first_seq: u64) -> String {
    format!("wal-{first_seq:020}.log")
}

/// The name of the snapshot of the contents as of `through`.
pub(super) fn snapshot_file_name(through: Timestamp) -> String {
    format!("snapshot-{through:020}.arrow")
}

/// The name a snapshot has while it is being written.
pub(super) fn temporary_file_name(final_name: &str) -> String {
    format!("{final_name}{TEMPORARY_SUFFIX}")
}

/// The WAL's files in a directory, each list sorted by its number.
#[derive(Debug, Default)]
pub(super) struct DirListing {
    /// Segments by first sequence number.
    pub segments: Vec<(u64, PathBuf)>,
    /// Snapshots by `through`.
    pub snapshots: Vec<(Timestamp, PathBuf)>,
    /// Unfinished snapshots left by a crash.
    pub temporaries: Vec<PathBuf>,
}

/// Lists the WAL's files in `dir`, ignoring anything else.
pub(super) fn list_dir(dir: &Path) -> Result<DirListing, StorageError> {
    let mut listing = DirListing::default();
    let entries = std::fs::read_dir(dir).map_err(|e| StorageError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| StorageError::io(dir, e))?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let path = entry.path();
        if name.ends_with(TEMPORARY_SUFFIX) {
            listing.temporaries.push(path);
        } else if let Some(seq) = parse_number(&name, "wal-", ".log") {
            listing.segments.push((seq, path));
        } else if let Some(through) = parse_number(&name, "snapshot-", ".arrow") {
            listing.snapshots.push((through, path));
        }
    }
    listing.segments.sort();
    listing.snapshots.sort();
    Ok(listing)
}

/// The number in `<prefix><20 digits><suffix>`.
fn parse_number(name: &str, prefix: &str, suffix: &str) -> Option<u64> {
    let digits = name.strip_prefix(prefix)?.strip_suffix(suffix)?;
    if digits.len() != 20 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// Makes the directory's entries (created, renamed, removed files) durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| StorageError::io(dir, e))
}

/// Removes a file; one that is already gone is fine.
pub(crate) fn remove_file(path: &Path) -> Result<(), StorageError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(StorageError::io(path, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_strangers_are_ignored() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            segment_file_name(12),
            segment_file_name(3),
            snapshot_file_name(u64::MAX),
            temporary_file_name(&snapshot_file_name(9)),
            "wal-12.log".into(),
            "notes.txt".into(),
        ] {
            std::fs::write(dir.path().join(name), b"").unwrap();
        }
        let listing = list_dir(dir.path()).unwrap();
        let seqs: Vec<_> = listing.segments.iter().map(|s| s.0).collect();
        assert_eq!(seqs, vec![3, 12]);
        assert_eq!(listing.snapshots[0].0, u64::MAX);
        assert_eq!(listing.snapshots.len(), 1);
        assert_eq!(listing.temporaries.len(), 1);
    }
}
