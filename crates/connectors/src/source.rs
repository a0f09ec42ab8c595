//! What every connector provides: a reader of batches, each with its resume position.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::SchemaRef;

use crate::generator;
use crate::{ConnectorError, SourceOptions};

/// Rows read from the outside world, and where to resume after them.
#[derive(Debug)]
pub struct SourceBatch {
    /// The rows, in the source's declared schema.
    pub rows: RecordBatch,
    /// The position after these rows (connector-defined text: an event number, file offsets,
    /// a Kafka offset per partition, an LSN), stored in the log with the rows and handed back
    /// to [`open_source`] on restart.
    pub position: String,
    /// Records that could not be decoded or do not fit the schema; they are kept, not lost.
    pub errors: Vec<BadRecord>,
}

/// A record that could not become a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadRecord {
    /// Where it was (connector-defined: a line of a file, a partition and offset).
    pub position: String,
    /// The record as received (lossily as text for binary input).
    pub raw: String,
    /// Why it was rejected.
    pub error: String,
}

/// A running source. It is read by a thread of its own.
pub trait SourceReader: Send {
    /// The next batch, blocking until rows are due; `Ok(None)` once the source has ended
    /// (a bounded generator is exhausted). An error stops the source.
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError>;
}

/// The columns a connector produces when `CREATE SOURCE` declares none.
pub fn source_schema(options: &SourceOptions) -> Result<SchemaRef, ConnectorError> {
    match connector_name(options)? {
        "counter" => Ok(generator::counter::schema()),
        "nexmark" => Ok(generator::nexmark::schema(
            generator::nexmark::NexmarkTable::from_options(options)?,
        )),
        "datagen" => Err(ConnectorError::Schema(
            "a datagen source must declare its columns".into(),
        )),
        other => Err(ConnectorError::UnknownConnector(other.into())),
    }
}

/// Opens the source described by `options`, producing rows of `schema`, resuming after
/// `resume` (a position an earlier batch carried) or from the start.
///
/// Every column of `schema` must be one the connector produces (matched by name, cast to the
/// declared type); unknown or misspelt options are errors.
pub fn open_source(
    options: &SourceOptions,
    schema: SchemaRef,
    resume: Option<&str>,
) -> Result<Box<dyn SourceReader>, ConnectorError> {
    let connector = connector_name(options)?.to_string();
    let reader: Box<dyn SourceReader> = match connector.as_str() {
        "counter" => {
            let produced = generator::counter::schema();
            let columns = Conform::new(produced, schema)?;
            Box::new(Conformed {
                inner: generator::counter::CounterReader::open(options, resume)?,
                columns,
            })
        }
        "nexmark" => {
            let table = generator::nexmark::NexmarkTable::from_options(options)?;
            let columns = Conform::new(generator::nexmark::schema(table), schema)?;
            Box::new(Conformed {
                inner: generator::nexmark::NexmarkReader::open(options, resume)?,
                columns,
            })
        }
        "datagen" => Box::new(generator::datagen::DatagenReader::open(
            options, schema, resume,
        )?),
        other => return Err(ConnectorError::UnknownConnector(other.into())),
    };
    options.reject_unknown(&connector)?;
    Ok(reader)
}

fn connector_name(options: &SourceOptions) -> Result<&str, ConnectorError> {
    options
        .connector()
        .ok_or_else(|| ConnectorError::MissingOption {
            connector: "(none)".into(),
            option: "connector".into(),
        })
}

/// How a connector's own columns become the declared ones: by name, cast to the declared
/// type.
struct Conform {
    /// For each declared column, the produced column it comes from.
    sources: Vec<usize>,
    schema: SchemaRef,
}

impl Conform {
    fn new(produced: SchemaRef, declared: SchemaRef) -> Result<Self, ConnectorError> {
        let sources = declared
            .fields()
            .iter()
            .map(|field| {
                let index = produced.index_of(field.name()).map_err(|_| {
                    ConnectorError::Schema(format!(
                        "the source has no column \"{}\" (it has {})",
                        field.name(),
                        produced
                            .fields()
                            .iter()
                            .map(|f| f.name().as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ))
                })?;
                let from = produced.field(index).data_type();
                if !arrow::compute::can_cast_types(from, field.data_type()) {
                    return Err(ConnectorError::Schema(format!(
                        "column \"{}\" is {from}, which cannot be read as {}",
                        field.name(),
                        field.data_type()
                    )));
                }
                Ok(index)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            sources,
            schema: declared,
        })
    }

    fn apply(&self, batch: &RecordBatch) -> Result<RecordBatch, ConnectorError> {
        let columns = self
            .sources
            .iter()
            .zip(self.schema.fields())
            .map(|(&index, field)| cast(batch.column(index), field.data_type()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(RecordBatch::try_new(Arc::clone(&self.schema), columns)?)
    }
}

/// A reader whose batches are conformed to the declared columns.
struct Conformed<R> {
    inner: R,
    columns: Conform,
}

impl<R: SourceReader> SourceReader for Conformed<R> {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        let Some(batch) = self.inner.next_batch()? else {
            return Ok(None);
        };
        Ok(Some(SourceBatch {
            rows: self.columns.apply(&batch.rows)?,
            ..batch
        }))
    }
}
