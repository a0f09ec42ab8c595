//! Sources and sinks: the outside world turned into batches of rows, each with the position
//! to resume after it; and a relation's changes delivered to the outside world exactly once
//! ([`SinkConnection`]: files, Kafka, PostgreSQL).
//!
//! A connector (`counter`, `nexmark`, `datagen`, `file`, `kafka`, `postgres-cdc`, …) is opened from the
//! options of its `CREATE SOURCE` statement and a resume position, and is read one batch at
//! a time by a thread of its own ([`SourceReader::next_batch`] may block until rows are due).
//! The coordinator makes each batch durable together with its position before anyone sees
//! it, so a restart resumes exactly after the last durable batch: no loss, no repeats.
//! A `webhook` source is pushed to instead ([`Webhook`]). [`postgres_cdc`] also offers what
//! the coordinator needs besides reading: an upstream table's columns and dropping the
//! replication slot.
//!
//! This crate knows nothing of SQL, dataflows or the log: it produces and consumes Arrow
//! batches.

#![warn(missing_docs)]

mod decode;
mod duration;
mod error;
mod file;
mod format;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod generator;
mod kafka;
mod options;
mod pacing;
pub mod postgres_cdc;
mod runtime;
mod sink;
mod source;
mod webhook;

pub use decode::{Decoded, Decoder, RawRecord};
pub use error::ConnectorError;
pub use format::{Encoding, Envelope, Format, Include, Metadata};
pub use options::SourceOptions;
pub use sink::{check_sink_options, open_sink, KeyedChange, SinkConnection, SinkSpec};
pub use source::{
    open_source, source_schema, BadRecord, Change, DurablePosition, OpenedSource, OutputChange,
    SnapshotProgress, SourceBatch, SourceContext, SourceOutput, SourceReader,
};
pub use webhook::Webhook;
