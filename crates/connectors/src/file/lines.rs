//! Reading the lines of a file from a byte offset into a bounded chunk.
//!
//! A line ends with `\n` (a `\r` before it is dropped); an empty line is skipped but counted.
//! A last line without `\n` is a record only when the file is complete: a followed file may
//! still be being written, so its unfinished line waits for its newline.

use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind, Seek, SeekFrom};
use std::ops::Range;

use super::position::FileOffset;
use crate::ConnectorError;

/// The most records a chunk holds.
pub(super) const MAX_RECORDS: usize = 10_000;
/// The most bytes of lines a chunk holds (a longer line is still read whole).
pub(super) const MAX_BYTES: usize = 4 << 20;

/// Lines read from files for one batch.
#[derive(Debug, Default)]
pub(super) struct Chunk {
    /// The records' bytes, one after another.
    pub data: Vec<u8>,
    /// Each record's bytes in `data`, and its position (`path:line`).
    pub records: Vec<(Range<usize>, String)>,
    /// Bytes consumed from files, skipped lines included.
    pub consumed_bytes: usize,
}

/// How a chunk is filled.
#[derive(Debug, Clone, Copy)]
pub(super) struct ChunkRules {
    /// Whether a last line without a newline waits for it (the file is followed).
    pub is_following: bool,
    /// Whether line 1 of each file is a header to skip.
    pub skips_header: bool,
    /// At most this many records…
    pub max_records: usize,
    /// …and about this many bytes.
    pub max_bytes: usize,
}

impl Chunk {
    /// Whether the chunk holds as much as `rules` allow.
    pub(super) fn is_full(&self, rules: &ChunkRules) -> bool {
        self.records.len() >= rules.max_records || self.consumed_bytes >= rules.max_bytes
    }
}

/// Reads lines of the file at `path` from `offset` into `chunk` until the chunk is full or
/// the file has no more complete lines, advancing `offset` past what was read. A file that
/// is gone has nothing to read; one that shrank below `offset` is read from its start.
pub(super) fn read_lines(
    path: &str,
    offset: &mut FileOffset,
    rules: &ChunkRules,
    chunk: &mut Chunk,
) -> Result<(), ConnectorError> {
    let upstream = |e: std::io::Error| ConnectorError::Upstream(format!("reading {path}: {e}"));
    let length = match std::fs::metadata(path) {
        Ok(metadata) => metadata.len(),
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(upstream(e)),
    };
    if length < offset.bytes {
        tracing::warn!(
            path,
            length,
            offset = offset.bytes,
            "file shrank below the position read so far; reading it again from the start"
        );
        *offset = FileOffset::START;
    }
    if length == offset.bytes {
        return Ok(());
    }
    let mut file = File::open(path).map_err(upstream)?;
    file.seek(SeekFrom::Start(offset.bytes)).map_err(upstream)?;
    let mut reader = BufReader::with_capacity(64 << 10, file);
    while !chunk.is_full(rules) {
        let start = chunk.data.len();
        let read = reader
            .read_until(b'\n', &mut chunk.data)
            .map_err(upstream)?;
        if read == 0 {
            break;
        }
        let mut end = chunk.data.len();
        if chunk.data[end - 1] == b'\n' {
            end -= 1;
        } else if rules.is_following {
            chunk.data.truncate(start);
            break;
        }
        if end > start && chunk.data[end - 1] == b'\r' {
            end -= 1;
        }
        chunk.data.truncate(end);
        chunk.consumed_bytes += read;
        let line = offset.line;
        offset.bytes += read as u64;
        offset.line += 1;
        if end == start || (rules.skips_header && line == 1) {
            chunk.data.truncate(start);
            continue;
        }
        chunk.records.push((start..end, format!("{path}:{line}")));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(is_following: bool) -> ChunkRules {
        ChunkRules {
            is_following,
            skips_header: false,
            max_records: MAX_RECORDS,
            max_bytes: MAX_BYTES,
        }
    }

    fn lines(chunk: &Chunk) -> Vec<(&str, &str)> {
        chunk
            .records
            .iter()
            .map(|(range, position)| {
                let text = std::str::from_utf8(&chunk.data[range.clone()]).unwrap_or("?");
                (text, position.rsplit(':').next().unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn lines_skip_empty_ones_and_strip_carriage_returns() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "a\r\n\nb\n\r\nc").unwrap();
        let path = path.to_str().unwrap();

        let mut offset = FileOffset::START;
        let mut chunk = Chunk::default();
        read_lines(path, &mut offset, &rules(true), &mut chunk).unwrap();
        assert_eq!(lines(&chunk), [("a", "1"), ("b", "3")]);
        assert_eq!(offset, FileOffset { bytes: 8, line: 5 });

        let mut chunk = Chunk::default();
        read_lines(path, &mut offset, &rules(false), &mut chunk).unwrap();
        assert_eq!(lines(&chunk), [("c", "5")]);
        assert_eq!(offset, FileOffset { bytes: 9, line: 6 });
    }

    #[test]
    fn a_header_is_skipped_and_a_missing_file_has_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, "id,name\n1,a\n").unwrap();
        let header = ChunkRules {
            skips_header: true,
            ..rules(false)
        };
        let mut offset = FileOffset::START;
        let mut chunk = Chunk::default();
        read_lines(path.to_str().unwrap(), &mut offset, &header, &mut chunk).unwrap();
        assert_eq!(lines(&chunk), [("1,a", "2")]);

        let missing = dir.path().join("missing");
        let mut offset = FileOffset::START;
        read_lines(missing.to_str().unwrap(), &mut offset, &header, &mut chunk).unwrap();
        assert_eq!(offset, FileOffset::START);
    }
}
