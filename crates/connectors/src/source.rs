//! What every connector provides: a reader of batches, each with its resume position.

use std::sync::{Arc, Mutex};

use arrow::array::RecordBatch;
use arrow::compute::cast;
use arrow::datatypes::SchemaRef;

use crate::file;
use crate::format::{Format, Include};
use crate::generator;
use crate::kafka;
use crate::postgres_cdc;
use crate::webhook::Webhook;
use crate::{ConnectorError, SourceOptions};

/// Changes read from the outside world, and where to resume after them.
///
/// A batch is made durable and visible as a whole, at one timestamp: a connector that reads
/// upstream transactions (Postgres CDC) puts whole transactions in a batch, never part of
/// one.
#[derive(Debug)]
pub struct SourceBatch {
    /// The changes, in the order they happened, each to one of the source's outputs.
    pub changes: Vec<OutputChange>,
    /// The position after these changes (connector-defined text: an event number, file
    /// offsets, a Kafka offset per partition, an LSN), stored in the log with the rows and
    /// handed back to [`open_source`] on restart.
    pub position: String,
    /// Records that could not be decoded or do not fit the schema; they are kept, not lost.
    pub errors: Vec<BadRecord>,
    /// How far behind the upstream's head the source is after this batch, where the
    /// upstream can tell (Kafka: messages not yet read, over all partitions).
    pub lag: Option<u64>,
    /// The upstream partition of each row the changes insert or upsert into output 0, in
    /// order, for a source read from several partitions (Kafka); empty for a source that is
    /// one sequence. Watermarks are kept per partition.
    pub row_partitions: Vec<i32>,
    /// How far the source's initial snapshot has got after this batch, for a source that
    /// reads one (Postgres CDC) while it does, and in the batch after it ends.
    pub snapshot: Option<SnapshotProgress>,
}

/// How far a source's initial snapshot of its upstream has got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SnapshotProgress {
    /// Rows of the snapshot read so far.
    pub rows_read: u64,
    /// About how many rows it has, where the upstream's statistics tell.
    pub rows_estimated: Option<u64>,
    /// Whether it has been read whole.
    pub done: bool,
}

impl SourceBatch {
    /// A batch that appends `rows` to the source's own relation (output 0).
    pub fn inserts(rows: RecordBatch, position: String) -> Self {
        Self {
            changes: vec![OutputChange {
                output: 0,
                change: Change::Insert(rows),
            }],
            position,
            errors: Vec::new(),
            lag: None,
            row_partitions: Vec::new(),
            snapshot: None,
        }
    }

    /// The number of rows the batch's changes carry.
    pub fn row_count(&self) -> usize {
        self.changes.iter().map(|c| c.change.row_count()).sum()
    }

    /// Appends `later`, the batch read after this one: its changes and bad records follow
    /// these, and its position and lag replace these. Committing the result is committing
    /// both, in order, at once.
    pub fn absorb(&mut self, later: SourceBatch) {
        self.changes.extend(later.changes);
        self.errors.extend(later.errors);
        self.position = later.position;
        self.lag = later.lag.or(self.lag);
        self.row_partitions.extend(later.row_partitions);
        self.snapshot = later.snapshot.or(self.snapshot);
    }

    /// The rows of an append-only batch's one insert (what the generators make).
    #[cfg(test)]
    pub(crate) fn into_inserted(self) -> RecordBatch {
        match self.changes.into_iter().next().map(|c| c.change) {
            Some(Change::Insert(rows)) => rows,
            other => panic!("not an insert batch: {other:?}"),
        }
    }
}

/// A change to one output of a source.
#[derive(Debug)]
pub struct OutputChange {
    /// The index of the output in [`SourceContext::outputs`].
    pub output: usize,
    /// What changed.
    pub change: Change,
}

/// What a source says happened to the rows of one output.
#[derive(Debug)]
pub enum Change {
    /// These rows were added.
    Insert(RecordBatch),
    /// Each row is now the value of its key (the output's key columns): it replaces the row
    /// with that key, if any. For each row, `unchanged` lists the columns whose value did not
    /// change and was not sent (a TOASTed column of Postgres): those keep the current value.
    /// An empty `unchanged` means every column was sent.
    Upsert {
        /// The new rows.
        rows: RecordBatch,
        /// Per row, the columns to keep from the current row.
        unchanged: Vec<Vec<usize>>,
    },
    /// The rows with these keys were deleted (only the key columns need be set).
    Delete(RecordBatch),
    /// Every row of the output was deleted.
    Truncate,
}

impl Change {
    /// The number of rows the change carries.
    pub fn row_count(&self) -> usize {
        match self {
            Change::Insert(rows) | Change::Upsert { rows, .. } | Change::Delete(rows) => {
                rows.num_rows()
            }
            Change::Truncate => 0,
        }
    }
}

/// A relation a source writes: the source's own (output 0), or, for connectors that read
/// several upstream relations (Postgres CDC), one per upstream table declared with
/// `CREATE TABLE … FROM source TABLE '…'`.
#[derive(Debug, Clone)]
pub struct SourceOutput {
    /// The upstream relation it reads (`public.orders`); empty for the source's own relation.
    pub reference: String,
    /// Its columns.
    pub schema: SchemaRef,
    /// Its key columns, if it has a primary key (needed for [`Change::Upsert`] and
    /// [`Change::Delete`]).
    pub key: Option<Vec<usize>>,
}

/// The latest position whose batch is durable, as the coordinator reports it to a running
/// reader; a connector that acknowledges upstream (a replication slot's confirmed LSN)
/// acknowledges only this far.
#[derive(Debug, Clone, Default)]
pub struct DurablePosition(Arc<Mutex<Option<String>>>);

impl DurablePosition {
    /// Records that the batch ending at `position` is durable.
    pub fn set(&self, position: &str) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(position.to_string());
    }

    /// The latest durable position, if any batch has been made durable since the start.
    pub fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Everything a connector is opened with besides its options.
#[derive(Debug, Clone)]
pub struct SourceContext {
    /// The relations it writes; output 0 is the source's own.
    pub outputs: Vec<SourceOutput>,
    /// `FORMAT … ENCODE …`, if the statement gave one.
    pub format: Option<Format>,
    /// `INCLUDE …` metadata columns.
    pub include: Vec<Include>,
    /// The position an earlier batch carried, to resume after; `None` starts from the
    /// beginning.
    pub resume: Option<String>,
    /// Where the coordinator reports what has become durable.
    pub durable: DurablePosition,
}

impl SourceContext {
    /// The context of a source with one relation of `schema` and no format, starting afresh.
    pub fn new(schema: SchemaRef) -> Self {
        Self {
            outputs: vec![SourceOutput {
                reference: String::new(),
                schema,
                key: None,
            }],
            format: None,
            include: Vec::new(),
            resume: None,
            durable: DurablePosition::default(),
        }
    }

    /// The schema of the source's own relation.
    pub fn schema(&self) -> SchemaRef {
        Arc::clone(&self.outputs[0].schema)
    }
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
        "file" | "webhook" | kafka::CONNECTOR => Err(ConnectorError::Schema(format!(
            "a {} source must declare its columns",
            connector_name(options)?
        ))),
        postgres_cdc::CONNECTOR => Ok(postgres_cdc::schema()),
        other => Err(ConnectorError::UnknownConnector(other.into())),
    }
}

/// An opened source: a reader to pull batches from, or a webhook that requests push to.
pub enum OpenedSource {
    /// Read by a thread of its own.
    Reader(Box<dyn SourceReader>),
    /// Fed by HTTP requests.
    Webhook(Webhook),
}

impl std::fmt::Debug for OpenedSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OpenedSource::Reader(_) => f.write_str("OpenedSource::Reader"),
            OpenedSource::Webhook(webhook) => f
                .debug_tuple("OpenedSource::Webhook")
                .field(webhook)
                .finish(),
        }
    }
}

/// Opens the source described by `options`, writing the outputs of `context`, resuming after
/// its `resume` position (or from the start).
///
/// Every declared column must be one the connector produces (matched by name, cast to the
/// declared type); unknown or misspelt options are errors.
pub fn open_source(
    options: &SourceOptions,
    context: SourceContext,
) -> Result<OpenedSource, ConnectorError> {
    let connector = connector_name(options)?.to_string();
    if connector == "webhook" {
        return Webhook::open(options, &context).map(OpenedSource::Webhook);
    }
    let schema = context.schema();
    let resume = context.resume.as_deref();
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
        "file" => Box::new(file::FileReader::open(options, &context)?),
        postgres_cdc::CONNECTOR => Box::new(postgres_cdc::CdcReader::open(options, context)?),
        kafka::CONNECTOR => Box::new(kafka::KafkaReader::open(options, &context)?),
        other => return Err(ConnectorError::UnknownConnector(other.into())),
    };
    options.reject_unknown(&connector)?;
    Ok(OpenedSource::Reader(reader))
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
        let changes = batch
            .changes
            .into_iter()
            .map(|c| {
                let change = match c.change {
                    Change::Insert(rows) => Change::Insert(self.columns.apply(&rows)?),
                    Change::Upsert { rows, unchanged } => Change::Upsert {
                        rows: self.columns.apply(&rows)?,
                        unchanged,
                    },
                    Change::Delete(rows) => Change::Delete(self.columns.apply(&rows)?),
                    Change::Truncate => Change::Truncate,
                };
                Ok(OutputChange {
                    output: c.output,
                    change,
                })
            })
            .collect::<Result<_, ConnectorError>>()?;
        Ok(Some(SourceBatch { changes, ..batch }))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn numbers(values: &[i64]) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        RecordBatch::try_new(schema, vec![Arc::new(Int64Array::from(values.to_vec()))])
            .expect("a batch")
    }

    #[test]
    fn an_absorbed_batch_follows_and_its_position_wins() {
        let mut first = SourceBatch::inserts(numbers(&[1, 2]), "2".into());
        first.lag = Some(9);
        let mut second = SourceBatch::inserts(numbers(&[3]), "3".into());
        second.errors.push(BadRecord {
            position: "3".into(),
            raw: "x".into(),
            error: "bad".into(),
        });
        first.absorb(second);
        assert_eq!(first.row_count(), 3);
        assert_eq!(first.position, "3");
        assert_eq!(first.errors.len(), 1);
        assert_eq!(
            first.lag,
            Some(9),
            "a later batch that cannot tell keeps the lag"
        );
        let values: Vec<i64> = first
            .changes
            .into_iter()
            .flat_map(|c| match c.change {
                Change::Insert(rows) => rows
                    .column(0)
                    .as_any()
                    .downcast_ref::<Int64Array>()
                    .expect("int64")
                    .values()
                    .to_vec(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(values, vec![1, 2, 3]);
    }
}
