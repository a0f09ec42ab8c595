//! The `file` sink: changes written to JSON-lines or CSV files in a directory.
//!
//! Changes go to a hidden temporary file; when it reaches `rotate.bytes` or is older than
//! `rotate.interval`, it is fsynced and renamed to `<name>-<first>-<last>.<jsonl|csv>`, named
//! by the first and last time it holds (zero-padded, so names sort by time). A file only ever
//! holds whole times, and only finished files count as delivered: after a restart the
//! temporary file is discarded and delivery resumes after the last time of the newest
//! finished file. No file is ever partial or repeated.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use repr::{ChangeBatch, Timestamp};

use super::encode::{csv_lines, encode_changes};
use super::SinkSpec;
use crate::duration::parse_duration;
use crate::{ConnectorError, Encoding, SourceOptions};

/// The connector's name in `connector = '…'`.
pub(crate) const CONNECTOR: &str = "file";

/// Where a `file` sink writes and when it starts a new file.
#[derive(Debug, Clone)]
pub(crate) struct FileConfig {
    /// The directory (`path`), created if missing.
    pub dir: PathBuf,
    /// A file is finished once it holds this many bytes (`rotate.bytes`, default 64 MiB).
    pub rotate_bytes: u64,
    /// A file is finished once it is this old (`rotate.interval`, default 1 minute).
    pub rotate_interval: Duration,
}

impl FileConfig {
    /// Reads the options of a `file` sink.
    pub fn from_options(spec: &SinkSpec, options: &SourceOptions) -> Result<Self, ConnectorError> {
        let dir = options.required(CONNECTOR, "path")?;
        let rotate_bytes = options.parsed::<u64>("rotate.bytes")?.unwrap_or(64 << 20);
        let rotate_interval = options
            .text("rotate.interval")
            .map(|text| parse_duration("rotate.interval", text))
            .transpose()?
            .unwrap_or(Duration::from_secs(60));
        // Read by the caller: the connector, and the key columns (in `spec`).
        let _ = (options.connector(), options.text("key"), spec);
        options.reject_unknown(CONNECTOR)?;
        Ok(Self {
            dir: PathBuf::from(dir),
            rotate_bytes: rotate_bytes.max(1),
            rotate_interval,
        })
    }
}

/// An open `file` sink.
#[derive(Debug)]
pub struct FileSink {
    spec: SinkSpec,
    config: FileConfig,
    /// The file being written, if any.
    current: Option<OpenFile>,
    /// The last time in a finished file.
    finished_through: Option<Timestamp>,
}

/// The temporary file being written.
#[derive(Debug)]
struct OpenFile {
    file: File,
    first: Timestamp,
    last: Timestamp,
    bytes: u64,
    opened: Instant,
}

impl FileSink {
    /// Opens the sink's directory and discards a temporary file a crash left behind.
    pub(crate) fn open(spec: SinkSpec, config: FileConfig) -> Result<Self, ConnectorError> {
        fs::create_dir_all(&config.dir).map_err(|e| io_error(&config.dir, "create", e))?;
        let mut sink = Self {
            spec,
            config,
            current: None,
            finished_through: None,
        };
        let temporary = sink.temporary_path();
        match fs::remove_file(&temporary) {
            Ok(()) => {
                tracing::info!(file = %temporary.display(), "discarded an unfinished sink file; its changes are written again")
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(&temporary, "remove", e)),
        }
        sink.finished_through = sink.newest_finished()?;
        Ok(sink)
    }

    /// The last time in a finished file.
    pub fn resume(&mut self) -> Result<Option<Timestamp>, ConnectorError> {
        Ok(self.finished_through)
    }

    /// The last time in a finished file.
    pub fn delivered_through(&self) -> Option<Timestamp> {
        self.finished_through
    }

    /// Appends each time's changes to the file being written, finishing it when it is full.
    pub fn deliver(&mut self, batches: &[ChangeBatch]) -> Result<(), ConnectorError> {
        for batch in batches {
            if self.finished_through.is_some_and(|done| batch.time <= done) {
                continue;
            }
            let header = self.current.is_none() && self.spec.format.encoding == Encoding::Csv;
            let lines = match self.spec.format.encoding {
                Encoding::Csv => csv_lines(batch, header)?,
                _ => encode_changes(&self.spec, batch)?
                    .into_iter()
                    .map(|change| {
                        let mut line = change.value.unwrap_or_else(|| b"null".to_vec());
                        line.push(b'\n');
                        line
                    })
                    .collect(),
            };
            if lines.is_empty() {
                continue;
            }
            let text = lines.concat();
            let path = self.temporary_path();
            let current = match &mut self.current {
                Some(current) => current,
                None => self.current.insert(OpenFile {
                    file: OpenOptions::new()
                        .create(true)
                        .truncate(true)
                        .write(true)
                        .open(&path)
                        .map_err(|e| io_error(&path, "create", e))?,
                    first: batch.time,
                    last: batch.time,
                    bytes: 0,
                    opened: Instant::now(),
                }),
            };
            current
                .file
                .write_all(&text)
                .map_err(|e| io_error(&path, "write", e))?;
            current.last = batch.time;
            current.bytes += text.len() as u64;
            if current.bytes >= self.config.rotate_bytes {
                self.finish()?;
            }
        }
        Ok(())
    }

    /// Finishes the file being written if it is older than `rotate.interval`.
    pub fn progress(&mut self, _upper: Timestamp) -> Result<(), ConnectorError> {
        if self
            .current
            .as_ref()
            .is_some_and(|current| current.opened.elapsed() >= self.config.rotate_interval)
        {
            self.finish()?;
        }
        Ok(())
    }

    /// Makes the file being written durable under its final name.
    fn finish(&mut self) -> Result<(), ConnectorError> {
        let Some(current) = self.current.take() else {
            return Ok(());
        };
        let temporary = self.temporary_path();
        current
            .file
            .sync_all()
            .map_err(|e| io_error(&temporary, "fsync", e))?;
        drop(current.file);
        let path = self.config.dir.join(format!(
            "{}-{:020}-{:020}.{}",
            self.spec.name,
            current.first,
            current.last,
            self.extension()
        ));
        fs::rename(&temporary, &path).map_err(|e| io_error(&path, "rename to", e))?;
        File::open(&self.config.dir)
            .and_then(|dir| dir.sync_all())
            .map_err(|e| io_error(&self.config.dir, "fsync", e))?;
        self.finished_through = Some(current.last);
        tracing::debug!(file = %path.display(), bytes = current.bytes, "sink file finished");
        Ok(())
    }

    /// The last time of the newest finished file of this sink.
    fn newest_finished(&self) -> Result<Option<Timestamp>, ConnectorError> {
        let entries =
            fs::read_dir(&self.config.dir).map_err(|e| io_error(&self.config.dir, "list", e))?;
        let mut newest = None;
        for entry in entries {
            let entry = entry.map_err(|e| io_error(&self.config.dir, "list", e))?;
            if let Some(last) = self.last_time_in_name(&entry.file_name().to_string_lossy()) {
                newest = newest.max(Some(last));
            }
        }
        Ok(newest)
    }

    /// The last time a finished file's name says it holds, if it is one of this sink's.
    fn last_time_in_name(&self, name: &str) -> Option<Timestamp> {
        let times = name
            .strip_prefix(&self.spec.name)?
            .strip_prefix('-')?
            .strip_suffix(self.extension())?
            .strip_suffix('.')?;
        let (first, last) = times.split_once('-')?;
        first.parse::<Timestamp>().ok()?;
        last.parse().ok()
    }

    fn extension(&self) -> &'static str {
        match self.spec.format.encoding {
            Encoding::Csv => "csv",
            _ => "jsonl",
        }
    }

    fn temporary_path(&self) -> PathBuf {
        self.config
            .dir
            .join(format!(".{}.{}.tmp", self.spec.name, self.extension()))
    }
}

fn io_error(path: &Path, what: &str, error: std::io::Error) -> ConnectorError {
    ConnectorError::Upstream(format!("cannot {what} {}: {error}", path.display()))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{Int32Array, RecordBatch};
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;
    use crate::{Envelope, Format};

    fn sink(dir: &Path, rotate_bytes: &str) -> FileSink {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let spec = SinkSpec::new(
            "s/1".into(),
            "orders".into(),
            schema,
            None,
            Format {
                envelope: Envelope::Plain,
                encoding: Encoding::Json,
            },
        )
        .expect("a spec");
        let options = SourceOptions::new([
            ("connector".to_string(), "file".to_string()),
            ("path".to_string(), dir.display().to_string()),
            ("rotate.bytes".to_string(), rotate_bytes.to_string()),
        ]);
        let config = FileConfig::from_options(&spec, &options).expect("options");
        FileSink::open(spec, config).expect("opened")
    }

    fn batch(sink: &FileSink, time: Timestamp, ids: &[i32]) -> ChangeBatch {
        ChangeBatch {
            time,
            rows: RecordBatch::try_new(
                sink.spec.schema.clone(),
                vec![Arc::new(Int32Array::from(ids.to_vec()))],
            )
            .expect("a batch"),
            diffs: vec![1; ids.len()],
        }
    }

    fn files(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = fs::read_dir(dir)
            .expect("a directory")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        names
    }

    #[test]
    fn full_files_are_named_by_their_times_and_a_restart_resumes_after_them() {
        let dir = tempfile::tempdir().expect("a directory");
        let mut first = sink(dir.path(), "60");
        let batches: Vec<ChangeBatch> = (1..=4).map(|t| batch(&first, t, &[t as i32])).collect();
        first.deliver(&batches[..3]).expect("delivered");
        let finished = format!("orders-{:020}-{:020}.jsonl", 1, 2);
        assert_eq!(
            files(dir.path()),
            [".orders.jsonl.tmp".to_string(), finished.clone()]
        );
        assert_eq!(first.delivered_through(), Some(2));
        drop(first);

        let mut second = sink(dir.path(), "60");
        assert_eq!(second.resume().expect("a position"), Some(2));
        assert_eq!(
            files(dir.path()),
            std::slice::from_ref(&finished),
            "the unfinished file is gone"
        );
        second.deliver(&batches).expect("delivered again");
        let text = fs::read_to_string(dir.path().join(format!("orders-{:020}-{:020}.jsonl", 3, 4)))
            .unwrap_or_else(|e| panic!("the second file: {e} in {:?}", files(dir.path())));
        assert_eq!(text.lines().count(), 2, "times 3 and 4 once: {text}");
    }

    #[test]
    fn a_missing_path_is_an_error() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let spec = SinkSpec::new(
            "s/1".into(),
            "s".into(),
            schema,
            None,
            Format {
                envelope: Envelope::Plain,
                encoding: Encoding::Json,
            },
        )
        .expect("a spec");
        let options = SourceOptions::new([("connector".to_string(), "file".to_string())]);
        assert!(FileConfig::from_options(&spec, &options).is_err());
    }
}
