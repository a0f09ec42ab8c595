//! Record framing and segment files.
//!
//! ```text
//! frame = [payload length: u32 LE][crc32c(payload): u32 LE][payload]
//! ```
//!
//! A segment is frames back to back. A crash can leave the last frame of the last segment
//! half-written (a torn tail); the reader stops at the first frame whose header, length or
//! checksum is bad and reports where, so recovery can cut the file there.

use std::fs::{File, OpenOptions};
use std::io::{self, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use repr::Timestamp;

use super::files::{segment_file_name, sync_dir};
use crate::StorageError;

/// Bytes of a frame before its payload.
pub(crate) const FRAME_HEADER_BYTES: u64 = 8;

/// Frames `payload`: header followed by the payload.
pub(crate) fn frame(payload: &[u8]) -> Result<Vec<u8>, StorageError> {
    let len = u32::try_from(payload.len()).map_err(|_| StorageError::RecordTooLarge {
        size_bytes: payload.len(),
    })?;
    let mut out = Vec::with_capacity(payload.len() + FRAME_HEADER_BYTES as usize);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out.extend_from_slice(payload);
    Ok(out)
}

/// What reading the next frame found.
#[derive(Debug)]
pub(crate) enum FrameRead {
    /// A whole frame with a good checksum, starting at `offset`.
    Frame {
        /// Byte offset of the frame's header.
        offset: u64,
        /// The payload.
        payload: Vec<u8>,
    },
    /// The file ends cleanly after the last frame.
    End,
    /// The bytes from `offset` on are not a whole, valid frame.
    Torn {
        /// Byte offset of the first bad frame.
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
}

/// Reads the frames of one file in order.
pub(crate) struct FrameReader {
    path: PathBuf,
    reader: BufReader<File>,
    offset: u64,
    file_len: u64,
}

impl FrameReader {
    /// Opens `path` for reading from the start.
    pub(crate) fn open(path: &Path) -> Result<Self, StorageError> {
        Self::open_prefix(path, u64::MAX)
    }

    /// Opens `path` for reading its first `len_bytes` bytes (fewer if the file is shorter):
    /// bytes appended after them are not read, even if they are there by then.
    pub(crate) fn open_prefix(path: &Path, len_bytes: u64) -> Result<Self, StorageError> {
        Self::open_range(path, 0, len_bytes)
    }

    /// Opens `path` for reading the frames from byte `start` (a frame boundary) up to byte
    /// `end` (fewer if the file is shorter).
    pub(crate) fn open_range(path: &Path, start: u64, end: u64) -> Result<Self, StorageError> {
        let mut file = File::open(path).map_err(|e| StorageError::io(path, e))?;
        let file_len = file
            .metadata()
            .map_err(|e| StorageError::io(path, e))?
            .len()
            .min(end);
        let offset = start.min(file_len);
        file.seek(SeekFrom::Start(offset))
            .map_err(|e| StorageError::io(path, e))?;
        Ok(FrameReader {
            path: path.to_owned(),
            reader: BufReader::with_capacity(1 << 20, file),
            offset,
            file_len,
        })
    }

    /// The length read: the file's length when it was opened, or the prefix asked for.
    pub(super) fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The offset of the next frame (after the last one read).
    pub(crate) fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads the next frame. After `End` or `Torn` there is nothing more to read.
    pub(crate) fn next_frame(&mut self) -> Result<FrameRead, StorageError> {
        let offset = self.offset;
        let remaining = self.file_len - offset;
        if remaining == 0 {
            return Ok(FrameRead::End);
        }
        let torn = |reason| Ok(FrameRead::Torn { offset, reason });
        if remaining < FRAME_HEADER_BYTES {
            return torn("incomplete frame header");
        }
        let mut header = [0u8; FRAME_HEADER_BYTES as usize];
        self.read_exact(&mut header)?;
        let [l0, l1, l2, l3, c0, c1, c2, c3] = header;
        let len = u64::from(u32::from_le_bytes([l0, l1, l2, l3]));
        let crc = u32::from_le_bytes([c0, c1, c2, c3]);
        if len == 0 {
            return torn("zero frame length");
        }
        if len > remaining - FRAME_HEADER_BYTES {
            return torn("frame length runs past the end of the file");
        }
        // `len` fits in a u32 and in the file, so the allocation is bounded by the file size.
        let mut payload = vec![0u8; len as usize];
        self.read_exact(&mut payload)?;
        if crc32c::crc32c(&payload) != crc {
            return torn("checksum mismatch");
        }
        self.offset = offset + FRAME_HEADER_BYTES + len;
        Ok(FrameRead::Frame { offset, payload })
    }

    fn read_exact(&mut self, buf: &mut [u8]) -> Result<(), StorageError> {
        self.reader
            .read_exact(buf)
            .map_err(|e| StorageError::io(&self.path, e))
    }
}

/// The segment new records are appended to.
#[derive(Debug)]
pub(super) struct ActiveSegment {
    /// The segment's file.
    pub path: PathBuf,
    file: File,
    /// The sequence number of its first record.
    pub first_seq: u64,
    /// How many records it holds.
    pub records: u64,
    /// Its length in bytes.
    pub len_bytes: u64,
    /// The latest time of its records (`None` while it is empty).
    pub max_time: Option<Timestamp>,
}

impl ActiveSegment {
    /// Creates an empty segment whose first record will be `first_seq`, durably (the directory
    /// entry is synced, or records fsynced into it could vanish with it).
    pub(super) fn create(dir: &Path, first_seq: u64) -> Result<Self, StorageError> {
        let path = dir.join(segment_file_name(first_seq));
        let file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        sync_dir(dir)?;
        Ok(ActiveSegment {
            path,
            file,
            first_seq,
            records: 0,
            len_bytes: 0,
            max_time: None,
        })
    }

    /// Reopens an existing segment for appending; the caller has checked its contents.
    pub(super) fn reopen(
        path: PathBuf,
        first_seq: u64,
        records: u64,
        len_bytes: u64,
        max_time: Option<Timestamp>,
    ) -> Result<Self, StorageError> {
        let file = OpenOptions::new()
            .append(true)
            .open(&path)
            .map_err(|e| StorageError::io(&path, e))?;
        Ok(ActiveSegment {
            path,
            file,
            first_seq,
            records,
            len_bytes,
            max_time,
        })
    }

    /// The sequence number the next record appended here gets.
    pub(super) fn next_seq(&self) -> u64 {
        self.first_seq + self.records
    }

    /// Appends already framed records (not yet durable) and notes their count and latest time.
    /// A write that fails is taken back: whatever part of `frames` reached the file is cut
    /// off, so the segment ends at its last whole record again and the error keeps its kind
    /// (a full disk is `StorageFull`); if even that fails, the error is of kind `Other`.
    pub(super) fn write(
        &mut self,
        frames: &[u8],
        records: u64,
        max_time: Option<Timestamp>,
    ) -> io::Result<()> {
        if frames.is_empty() {
            return Ok(());
        }
        if let Err(error) = self.file.write_all(frames) {
            if let Err(undo) = self.file.set_len(self.len_bytes) {
                return Err(io::Error::other(format!(
                    "{}: a failed write ({error}) could not be taken back: {undo}",
                    self.path.display()
                )));
            }
            return Err(self.with_path(error));
        }
        self.len_bytes += frames.len() as u64;
        self.records += records;
        self.max_time = self.max_time.max(max_time);
        Ok(())
    }

    /// Makes everything written so far durable.
    pub(super) fn sync(&self) -> io::Result<()> {
        self.file.sync_data().map_err(|e| self.with_path(e))
    }

    /// `error` with this segment's path in its message.
    fn with_path(&self, error: io::Error) -> io::Error {
        io::Error::new(error.kind(), format!("{}: {error}", self.path.display()))
    }

    /// Swaps the file handle; tests use it to make writes fail.
    #[cfg(test)]
    pub(super) fn replace_file(&mut self, file: File) {
        self.file = file;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(path: &Path) -> (Vec<Vec<u8>>, FrameRead) {
        let mut reader = FrameReader::open(path).unwrap();
        let mut payloads = Vec::new();
        loop {
            match reader.next_frame().unwrap() {
                FrameRead::Frame { payload, .. } => payloads.push(payload),
                other => return (payloads, other),
            }
        }
    }

    #[test]
    fn frames_read_back_until_a_torn_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("seg");
        let mut bytes = frame(b"one").unwrap();
        bytes.extend(frame(b"two").unwrap());
        std::fs::write(&path, &bytes).unwrap();
        let (payloads, end) = read_all(&path);
        assert_eq!(payloads, vec![b"one".to_vec(), b"two".to_vec()]);
        assert!(matches!(end, FrameRead::End));

        // Cut into the second frame's payload.
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        let (payloads, end) = read_all(&path);
        assert_eq!(payloads, vec![b"one".to_vec()]);
        assert!(matches!(end, FrameRead::Torn { offset: 11, .. }), "{end:?}");

        // Zeroes where a header should be (a file extended but never written).
        let mut zeroed = bytes.clone();
        zeroed.extend([0u8; 16]);
        std::fs::write(&path, &zeroed).unwrap();
        let (payloads, end) = read_all(&path);
        assert_eq!(payloads.len(), 2);
        assert!(matches!(
            end,
            FrameRead::Torn {
                offset: 22,
                reason: "zero frame length"
            }
        ));

        // A flipped payload bit.
        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        let (payloads, end) = read_all(&path);
        assert_eq!(payloads.len(), 1);
        assert!(matches!(
            end,
            FrameRead::Torn {
                offset: 11,
                reason: "checksum mismatch"
            }
        ));
    }
}
