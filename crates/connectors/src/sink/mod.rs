//! Sinks: a relation's changes delivered to the outside world exactly once.
//!
//! The coordinator keeps each sink's changes in a change log of its own and hands them to
//! the sink's connection one closed time at a time, in time order. A connection records the
//! last time it delivered *with the delivery itself* (a file's name, a progress row written in
//! the target's transaction, the headers of the Kafka records), so that after a restart
//! [`SinkConnection::resume`] tells where delivery stopped, and delivery goes on from there:
//! nothing is skipped, nothing repeated.

mod encode;
mod file;
mod kafka;
mod postgres;

use arrow::datatypes::SchemaRef;
use repr::{ChangeBatch, Timestamp};

pub use encode::KeyedChange;

use crate::{ConnectorError, Encoding, Envelope, Format, SourceOptions};

/// What every sink connection knows of the sink it delivers for.
#[derive(Debug, Clone)]
pub struct SinkSpec {
    /// Identifies the sink for good (its name and catalog id), in the target's progress
    /// records: a sink dropped and created again under the same name starts afresh.
    pub identity: String,
    /// The sink's name without schema: what files are called after.
    pub name: String,
    /// The relation's columns.
    pub schema: SchemaRef,
    /// The key columns (`key = 'a, b'`), by position in `schema`.
    pub key: Vec<usize>,
    /// `FORMAT … ENCODE …`.
    pub format: Format,
}

impl SinkSpec {
    /// The spec of sink `identity` named `name` over `schema`, with its `key` option (column
    /// names, comma-separated) and format checked.
    pub fn new(
        identity: String,
        name: String,
        schema: SchemaRef,
        key: Option<&str>,
        format: Format,
    ) -> Result<Self, ConnectorError> {
        let key = match key {
            None => Vec::new(),
            Some(text) => text
                .split(',')
                .map(|column| {
                    let column = column.trim().trim_matches('"');
                    schema
                        .fields()
                        .iter()
                        .position(|f| f.name().eq_ignore_ascii_case(column))
                        .ok_or_else(|| ConnectorError::InvalidOption {
                            option: "key".into(),
                            reason: format!("the relation has no column \"{column}\""),
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        if matches!(format.envelope, Envelope::Upsert | Envelope::Debezium) && key.is_empty() {
            return Err(ConnectorError::MissingOption {
                connector: format!("FORMAT {:?}", format.envelope).to_uppercase(),
                option: "key".into(),
            });
        }
        match (format.envelope, format.encoding) {
            (_, Encoding::Json) | (Envelope::Plain, Encoding::Csv) => {}
            _ => {
                return Err(ConnectorError::InvalidFormat(format!(
                    "sinks write FORMAT PLAIN | UPSERT | DEBEZIUM ENCODE JSON, or FORMAT PLAIN \
                     ENCODE CSV; not {format}"
                )))
            }
        }
        Ok(Self {
            identity,
            name,
            schema,
            key,
            format,
        })
    }
}

/// An open connection to a sink's target.
#[derive(Debug)]
pub enum SinkConnection {
    /// Files in a directory (`connector = 'file'`).
    File(file::FileSink),
    /// A Kafka topic (`connector = 'kafka'`).
    Kafka(kafka::KafkaSink),
    /// A table of another PostgreSQL (`connector = 'postgres'`).
    Postgres(Box<postgres::PostgresSink>),
}

/// A sink's options, read and checked for its connector.
enum SinkConfig {
    File(file::FileConfig),
    Kafka(kafka::KafkaSinkConfig),
    Postgres(Box<postgres::PostgresSinkConfig>),
}

impl SinkConfig {
    fn from_options(spec: &SinkSpec, options: &SourceOptions) -> Result<Self, ConnectorError> {
        match options.connector() {
            Some(file::CONNECTOR) => file::FileConfig::from_options(spec, options).map(Self::File),
            Some(kafka::CONNECTOR) => {
                kafka::KafkaSinkConfig::from_options(spec, options).map(Self::Kafka)
            }
            Some(postgres::CONNECTOR) => postgres::PostgresSinkConfig::from_options(spec, options)
                .map(|config| Self::Postgres(Box::new(config))),
            Some(other) => Err(ConnectorError::InvalidOption {
                option: "connector".into(),
                reason: format!("\"{other}\" is no sink connector (known: file, kafka, postgres)"),
            }),
            None => Err(ConnectorError::MissingOption {
                connector: "CREATE SINK".into(),
                option: "connector".into(),
            }),
        }
    }
}

/// Checks a sink's options (names and values) without connecting to anything.
pub fn check_sink_options(spec: &SinkSpec, options: &SourceOptions) -> Result<(), ConnectorError> {
    SinkConfig::from_options(spec, options).map(drop)
}

/// Connects to a sink's target.
pub async fn open_sink(
    spec: &SinkSpec,
    options: &SourceOptions,
) -> Result<SinkConnection, ConnectorError> {
    Ok(match SinkConfig::from_options(spec, options)? {
        SinkConfig::File(config) => {
            SinkConnection::File(file::FileSink::open(spec.clone(), config)?)
        }
        SinkConfig::Kafka(config) => {
            SinkConnection::Kafka(kafka::KafkaSink::open(spec.clone(), config).await?)
        }
        SinkConfig::Postgres(config) => SinkConnection::Postgres(Box::new(
            postgres::PostgresSink::open(spec.clone(), *config).await?,
        )),
    })
}

impl SinkConnection {
    /// The last time whose changes reached the target (perhaps only partly, for Kafka: then
    /// [`deliver`](Self::deliver) skips the part that did); `None`: nothing yet.
    pub async fn resume(&mut self) -> Result<Option<Timestamp>, ConnectorError> {
        match self {
            SinkConnection::File(sink) => sink.resume(),
            SinkConnection::Kafka(sink) => sink.resume().await,
            SinkConnection::Postgres(sink) => sink.resume().await,
        }
    }

    /// Delivers the changes of closed times, one batch per time in ascending order, each
    /// after the time [`resume`](Self::resume) returned (or at it, for a partly delivered
    /// time) and after every time delivered before. When this returns, the batches are
    /// durable in the target, or (files) will be when the file being written is finished.
    pub async fn deliver(&mut self, batches: &[ChangeBatch]) -> Result<(), ConnectorError> {
        match self {
            SinkConnection::File(sink) => sink.deliver(batches),
            SinkConnection::Kafka(sink) => sink.deliver(batches).await,
            SinkConnection::Postgres(sink) => sink.deliver(batches).await,
        }
    }

    /// Every time before `upper` is closed: a file sink finishes its file when it is due.
    pub async fn progress(&mut self, upper: Timestamp) -> Result<(), ConnectorError> {
        match self {
            SinkConnection::File(sink) => sink.progress(upper),
            SinkConnection::Kafka(_) | SinkConnection::Postgres(_) => Ok(()),
        }
    }

    /// The earliest time whose changes a later delivery may still need one time at a time
    /// (the log may fold what comes before into one batch).
    pub fn history_needed_from(&self) -> Timestamp {
        match self {
            SinkConnection::Kafka(sink) => sink.history_needed_from(),
            other => other.delivered_through().unwrap_or(0),
        }
    }

    /// The last time delivered to the target for good (files: in a finished file).
    pub fn delivered_through(&self) -> Option<Timestamp> {
        match self {
            SinkConnection::File(sink) => sink.delivered_through(),
            SinkConnection::Kafka(sink) => sink.delivered_through(),
            SinkConnection::Postgres(sink) => sink.delivered_through(),
        }
    }
}
