//! `file`: the lines of local files, one record per line, decoded into the declared columns.
//!
//! Options: `path` (a file, a directory = every regular file in it, or a glob pattern),
//! `follow` (default `false`: read what is there, then the source ends; `true`: keep reading
//! lines appended to the files, and files that come to match `path`), and for `ENCODE CSV`
//! `csv.header` (skip line 1 of each file) and `csv.delimiter`. `FORMAT PLAIN` only, with
//! `ENCODE JSON` (the default), `CSV` or `BYTES` (each line is the value).
//!
//! Files are read in name order. The position records, per file, the byte offset and line
//! number of its next unread line (see [`position`]), so a restarted source reads each line
//! exactly once. A bad line becomes a [`crate::BadRecord`] at `path:line`.

mod discover;
mod lines;
mod position;

use std::time::{Duration, Instant};

use arrow::array::RecordBatch;

use self::lines::{read_lines, Chunk, ChunkRules, MAX_BYTES, MAX_RECORDS};
use self::position::{FileOffset, Files};
use crate::decode::{Decoder, RawRecord};
use crate::{
    Change, ConnectorError, Encoding, Envelope, OutputChange, SourceBatch, SourceContext,
    SourceOptions, SourceReader,
};

/// How often a followed source looks for new lines and files.
const POLL_INTERVAL: Duration = Duration::from_millis(200);
/// How long a followed source waits for new lines before it returns an empty batch, so its
/// reader thread can notice it was asked to stop.
const IDLE_BATCH_AFTER: Duration = Duration::from_millis(500);

/// A running file source.
pub(crate) struct FileReader {
    /// The `path` option.
    path: String,
    /// Every file known, with where its next unread line starts.
    files: Files,
    rules: ChunkRules,
    decoder: Decoder,
}

impl FileReader {
    /// Opens a file source reading the files `options` names, resuming after `context`'s
    /// position.
    pub fn open(options: &SourceOptions, context: &SourceContext) -> Result<Self, ConnectorError> {
        let encoding = encoding(context)?;
        let path = options
            .text("path")
            .ok_or_else(|| ConnectorError::MissingOption {
                connector: "file".into(),
                option: "path".into(),
            })?
            .to_string();
        let is_following = options.parsed::<bool>("follow")?.unwrap_or(false);
        let skips_header = match encoding {
            Encoding::Csv => options.parsed::<bool>("csv.header")?.unwrap_or(false),
            _ => false,
        };
        let decoder = Decoder::new(encoding, context.schema(), options)?;
        let mut files = match context.resume.as_deref() {
            Some(text) => position::decode(text)?,
            None => Files::new(),
        };
        for file in discover::matching_files(&path)? {
            files.entry(file).or_insert(FileOffset::START);
        }
        if files.is_empty() && !is_following {
            return Err(ConnectorError::Upstream(format!(
                "no file matches path \"{path}\""
            )));
        }
        Ok(Self {
            path,
            files,
            rules: ChunkRules {
                is_following,
                skips_header,
                max_records: MAX_RECORDS,
                max_bytes: MAX_BYTES,
            },
            decoder,
        })
    }

    /// Reads the next lines of the files, in name order, until the chunk is full.
    fn read_chunk(&mut self) -> Result<Chunk, ConnectorError> {
        let mut chunk = Chunk::default();
        for (path, offset) in &mut self.files {
            if chunk.is_full(&self.rules) {
                break;
            }
            read_lines(path, offset, &self.rules, &mut chunk)?;
        }
        Ok(chunk)
    }

    /// Adds the files that have come to match `path` since the last look.
    fn discover_new_files(&mut self) -> Result<(), ConnectorError> {
        for file in discover::matching_files(&self.path)? {
            self.files.entry(file).or_insert(FileOffset::START);
        }
        Ok(())
    }

    /// The batch of `chunk`'s records, ending at the current position.
    fn batch(&self, chunk: Chunk) -> Result<SourceBatch, ConnectorError> {
        let Chunk { data, records, .. } = chunk;
        let records: Vec<RawRecord<'_>> = records
            .into_iter()
            .map(|(range, position)| RawRecord {
                bytes: &data[range],
                position,
            })
            .collect();
        let decoded = self.decoder.decode(&records)?;
        Ok(SourceBatch {
            changes: inserted(decoded.rows),
            position: position::encode(&self.files),
            errors: decoded.errors,
            lag: None,
            row_partitions: Vec::new(),
            snapshot: None,
        })
    }
}

impl SourceReader for FileReader {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        let started = Instant::now();
        loop {
            let chunk = self.read_chunk()?;
            if chunk.consumed_bytes > 0 {
                return self.batch(chunk).map(Some);
            }
            if !self.rules.is_following {
                return Ok(None);
            }
            let waited = started.elapsed();
            if waited >= IDLE_BATCH_AFTER {
                return Ok(Some(SourceBatch {
                    changes: Vec::new(),
                    position: position::encode(&self.files),
                    errors: Vec::new(),
                    lag: None,
                    row_partitions: Vec::new(),
                    snapshot: None,
                }));
            }
            std::thread::sleep(POLL_INTERVAL.min(IDLE_BATCH_AFTER - waited));
            self.discover_new_files()?;
        }
    }
}

/// The one insert of `rows` to the source's relation, or no change for no rows.
fn inserted(rows: RecordBatch) -> Vec<OutputChange> {
    if rows.num_rows() == 0 {
        return Vec::new();
    }
    vec![OutputChange {
        output: 0,
        change: Change::Insert(rows),
    }]
}

/// The encoding of the file source's `FORMAT`: `PLAIN` with `JSON` (the default), `CSV` or
/// `BYTES`, and no `INCLUDE`.
fn encoding(context: &SourceContext) -> Result<Encoding, ConnectorError> {
    if let Some(include) = context.include.first() {
        return Err(ConnectorError::InvalidFormat(format!(
            "the file connector has no INCLUDE {:?} metadata",
            include.what
        )));
    }
    let Some(format) = context.format else {
        return Ok(Encoding::Json);
    };
    if format.envelope != Envelope::Plain {
        return Err(ConnectorError::InvalidFormat(format!(
            "the file connector reads FORMAT PLAIN only (each line is a new row), not {format}"
        )));
    }
    match format.encoding {
        Encoding::Json | Encoding::Csv | Encoding::Bytes => Ok(format.encoding),
        Encoding::Avro => Err(ConnectorError::InvalidFormat(
            "the file connector reads ENCODE JSON, CSV or BYTES, not AVRO".into(),
        )),
    }
}

#[cfg(test)]
mod tests;
