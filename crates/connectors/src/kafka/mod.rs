//! `kafka`: the records of every partition of a Kafka topic, decoded into the declared
//! columns as the source's `FORMAT` says, with `INCLUDE`d metadata columns after them.
//!
//! ```sql
//! CREATE SOURCE clicks (user_id bigint, url text) WITH (connector = 'kafka',
//!     topic = 'clicks', properties.bootstrap.server = '127.0.0.1:9092',
//!     scan.startup.mode = 'earliest') FORMAT PLAIN ENCODE JSON INCLUDE partition, offset;
//! ```
//!
//! Options: `topic` (required), `properties.bootstrap.server` (required; `host:port`, a
//! comma-separated list allowed), `scan.startup.mode` (`earliest`, the default; `latest`;
//! `offset`, with `scan.startup.specific.offsets = '0:42,1:17'`; it applies only when there
//! is no resume position), and `csv.delimiter` for `ENCODE CSV`. Formats: `PLAIN` with
//! `JSON` (the default), `CSV` or `BYTES`; `UPSERT` and `DEBEZIUM` with `JSON` (see
//! [`envelope`]); `INCLUDE key, partition, offset, timestamp` with any (see [`metadata`]).
//!
//! Every partition of the topic (found at open) is read; a batch holds the records of one
//! fetch round over all partitions, at most [`MAX_BATCH_RECORDS`]. The position (see
//! [`position`]) is the next offset of each partition, so a restarted source reads each
//! record exactly once; a batch's lag is the records between those offsets and the
//! partitions' high watermarks. Kafka is never told about the source's offsets (no
//! consumer group): the position kept with the batches is the one truth. A bad record
//! becomes a [`crate::BadRecord`] at `partition P offset O`.

mod broker;
mod config;
mod envelope;
mod metadata;
mod position;

use std::time::Duration;

use tokio::time::Instant;

use self::broker::TopicReader;
use self::config::KafkaConfig;
pub(crate) use self::config::{brokers, CONNECTOR};
use self::envelope::ChangeDecoder;
use self::position::Position;
use crate::runtime::ReaderRuntime;
use crate::{ConnectorError, SourceBatch, SourceContext, SourceOptions, SourceReader};

/// How long `next_batch` waits for records before returning an empty batch, so that the
/// reader's thread can notice a stop request.
const IDLE_WAIT: Duration = Duration::from_millis(500);
/// How long one fetch round waits for records at most.
const FETCH_WAIT: Duration = Duration::from_millis(250);
/// A batch holds at most this many records.
const MAX_BATCH_RECORDS: usize = 10_000;

/// A running `kafka` source.
pub(crate) struct KafkaReader {
    topic: TopicReader,
    decoder: ChangeDecoder,
    runtime: ReaderRuntime,
}

impl KafkaReader {
    /// Checks the options and format, connects to the brokers, and finds where to start in
    /// each partition: at the resume position, else where `scan.startup.mode` says.
    pub fn open(options: &SourceOptions, context: &SourceContext) -> Result<Self, ConnectorError> {
        let config = KafkaConfig::from_options(options)?;
        let decoder = ChangeDecoder::new(options, context)?;
        options.reject_unknown(CONNECTOR)?;
        let resume = context.resume.as_deref().map(Position::parse).transpose()?;
        let runtime = ReaderRuntime::current_thread()?;
        let topic = runtime.block_on(TopicReader::open(&config, resume.as_ref()))?;
        Ok(Self {
            topic,
            decoder,
            runtime,
        })
    }
}

impl SourceReader for KafkaReader {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        let deadline = Instant::now() + IDLE_WAIT;
        let records = loop {
            let wait = deadline
                .saturating_duration_since(Instant::now())
                .min(FETCH_WAIT);
            let topic = &mut self.topic;
            let records = self
                .runtime
                .block_on(topic.fetch(wait, MAX_BATCH_RECORDS))?;
            if !records.is_empty() || Instant::now() >= deadline {
                break records;
            }
        };
        let decoded = self.decoder.changes(&records)?;
        Ok(Some(SourceBatch {
            changes: decoded.changes,
            position: self.topic.position().to_json(),
            errors: decoded.errors,
            lag: Some(self.topic.lag()),
            row_partitions: decoded.row_partitions,
            snapshot: None,
        }))
    }
}
