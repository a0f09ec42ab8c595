//! `FORMAT … ENCODE …` and `INCLUDE …`: how a connector's raw records become rows.

use std::fmt;

use crate::ConnectorError;

/// `FORMAT envelope ENCODE encoding`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    /// What a record means: a new row, the latest value of a key, a Debezium change.
    pub envelope: Envelope,
    /// How a record's bytes are written.
    pub encoding: Encoding,
}

/// What a record means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// Each record is a new row.
    Plain,
    /// Each record is the latest value of its key; a record without a value deletes the key.
    Upsert,
    /// Each record is a Debezium change event (`before`, `after`, `op`).
    Debezium,
}

/// How a record's bytes are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// One JSON object per record; columns by name.
    Json,
    /// One CSV line per record; columns by position.
    Csv,
    /// The record's bytes as the one `bytea` column.
    Bytes,
    /// Avro (recognised, not read yet).
    Avro,
}

impl Format {
    /// The format `FORMAT envelope ENCODE encoding` names (words in any case).
    pub fn parse(envelope: &str, encoding: &str) -> Result<Self, ConnectorError> {
        let envelope = match envelope.to_ascii_uppercase().as_str() {
            "PLAIN" => Envelope::Plain,
            "UPSERT" => Envelope::Upsert,
            "DEBEZIUM" => Envelope::Debezium,
            other => {
                return Err(ConnectorError::InvalidFormat(format!(
                    "unknown FORMAT {other} (known: PLAIN, UPSERT, DEBEZIUM)"
                )))
            }
        };
        let encoding = match encoding.to_ascii_uppercase().as_str() {
            "JSON" => Encoding::Json,
            "CSV" => Encoding::Csv,
            "BYTES" => Encoding::Bytes,
            "AVRO" => Encoding::Avro,
            other => {
                return Err(ConnectorError::InvalidFormat(format!(
                    "unknown ENCODE {other} (known: JSON, CSV, BYTES, AVRO)"
                )))
            }
        };
        Ok(Self { envelope, encoding })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FORMAT {:?} ENCODE {:?}", self.envelope, self.encoding)
    }
}

/// `INCLUDE what [AS column]`: a metadata column of each record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    /// What is included.
    pub what: Metadata,
    /// The column it goes to.
    pub column: String,
}

/// Metadata a record can carry besides its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metadata {
    /// The record's key (Kafka).
    Key,
    /// The partition it was read from (Kafka).
    Partition,
    /// Its offset within the partition (Kafka) or file.
    Offset,
    /// The time the upstream stored it (Kafka's record timestamp).
    Timestamp,
}

impl Include {
    /// `INCLUDE what [AS column]`; the column defaults to `_what` (`_offset`, …) as in
    /// RisingWave.
    pub fn parse(what: &str, column: Option<&str>) -> Result<Self, ConnectorError> {
        let what = match what.to_ascii_lowercase().as_str() {
            "key" => Metadata::Key,
            "partition" => Metadata::Partition,
            "offset" => Metadata::Offset,
            "timestamp" => Metadata::Timestamp,
            other => {
                return Err(ConnectorError::InvalidFormat(format!(
                    "unknown INCLUDE {other} (known: key, partition, offset, timestamp)"
                )))
            }
        };
        let column = match column {
            Some(column) => column.to_string(),
            None => format!("_{}", format!("{what:?}").to_lowercase()),
        };
        Ok(Self { what, column })
    }
}
