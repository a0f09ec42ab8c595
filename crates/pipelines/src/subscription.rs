//! SUBSCRIBE: the changes of a relation or query, as they happen.
//!
//! A subscription is a dataflow of its own (the query, lowered like a materialized view's)
//! that starts from one time, `as_of`: with `SNAPSHOT` (the default) it first reports the
//! contents at `as_of` as insertions at `as_of`, then every later change at the time it was
//! committed. Without `AS OF`, `as_of` is the last committed write (the snapshot includes
//! everything acknowledged); `AS OF t` makes it `t - 1`, so that a subscriber who saw every
//! change up to `_timestamp` `s` and resumes `AS OF s + 1 WITH (SNAPSHOT = false)` receives
//! every later change exactly once. A time is reported once it is *closed* (every change at it is known), all of
//! its changes together; with `PROGRESS`, a time that closes is also announced by a progress
//! row, so a subscriber learns how far it is complete even when nothing changes.
//!
//! Rows are `(_timestamp numeric, [_progressed boolean,] _diff bigint, <columns>)`. A forwarder
//! task takes the dataflow's output as it comes and queues it for the subscriber; the queue is
//! bounded ([`MAX_QUEUED_ROWS`]): a subscriber that falls that far behind gets an error
//! instead of slowing anything else down. Dropping the [`Subscription`] (a closed cursor, a
//! cancelled or disconnected client) ends the forwarder and drops the dataflow.

use std::collections::VecDeque;
use std::sync::Arc;

use compute::{ComputeController, SubscriptionUpdates};
use datafusion::arrow::array::{ArrayRef, BooleanArray, Decimal128Array, Int64Array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use tokio::sync::mpsc;

use crate::error::PipelineError;

/// Output rows queued for a subscriber that has not taken them, past which it is told it
/// fell too far behind.
const MAX_QUEUED_ROWS: usize = 1 << 20;

/// Batches handed from the forwarder to the subscriber at a time.
const HANDOFF_BATCHES: usize = 16;

/// A running subscription, as its subscriber sees it.
#[derive(Debug)]
pub struct Subscription {
    /// The output columns: `_timestamp`, `_progressed` (with PROGRESS), `_diff`, then the
    /// query's.
    pub schema: SchemaRef,
    /// The starting time.
    pub as_of: Timestamp,
    batches: mpsc::Receiver<Result<RecordBatch, PipelineError>>,
}

impl Subscription {
    /// The next rows (the changes of one or more closed times, or a progress row), waiting
    /// for them; `None` once the subscription has ended.
    pub async fn next(&mut self) -> Option<Result<RecordBatch, PipelineError>> {
        self.batches.recv().await
    }

    /// Rows already waiting, without waiting for more.
    pub fn try_next(&mut self) -> Option<Result<RecordBatch, PipelineError>> {
        self.batches.try_recv().ok()
    }
}

/// How one subscription's output is shaped.
pub struct OutputShape {
    /// The output columns (see [`output_schema`]).
    pub schema: SchemaRef,
    /// Decodes the query's rows.
    pub codec: RowCodec,
    /// The snapshot's time: changes at or before it are the snapshot.
    pub as_of: Timestamp,
    /// Whether the changes at or before `as_of` are reported.
    pub snapshot: bool,
    /// Whether closed times are announced by progress rows.
    pub progress: bool,
}

impl Subscription {
    /// Starts moving the output of the subscription dataflow `updates` (dropped with
    /// `dataflow`) to a subscriber, shaped as `shape`.
    pub fn forward(
        updates: SubscriptionUpdates,
        shape: OutputShape,
        dataflow: DataflowGuard,
    ) -> Self {
        Self::spawn(shape, |shape, sender| {
            forward(updates, shape, sender, dataflow)
        })
    }

    /// A subscription whose batches `task` sends; it is spawned with the shape and the
    /// sender.
    pub(crate) fn spawn<F, T>(shape: OutputShape, task: F) -> Self
    where
        F: FnOnce(OutputShape, mpsc::Sender<Result<RecordBatch, PipelineError>>) -> T,
        T: std::future::Future<Output = ()> + Send + 'static,
    {
        let (schema, as_of) = (shape.schema.clone(), shape.as_of);
        let (sender, batches) = mpsc::channel(HANDOFF_BATCHES);
        tokio::spawn(task(shape, sender));
        Self {
            schema,
            as_of,
            batches,
        }
    }
}

/// Drops a subscription's dataflow when it is dropped.
pub struct DataflowGuard {
    compute: Arc<ComputeController>,
    id: GlobalId,
}

impl DataflowGuard {
    /// Guards dataflow `id` of `compute`.
    pub fn new(compute: Arc<ComputeController>, id: GlobalId) -> Self {
        Self { compute, id }
    }
}

impl Drop for DataflowGuard {
    fn drop(&mut self) {
        self.compute.drop_collection(self.id);
    }
}

/// Moves the dataflow's output to the subscriber, queueing what it has not taken yet.
async fn forward(
    mut updates: SubscriptionUpdates,
    shape: OutputShape,
    sender: mpsc::Sender<Result<RecordBatch, PipelineError>>,
    _dataflow: DataflowGuard,
) {
    let mut queue: VecDeque<RecordBatch> = VecDeque::new();
    let mut queued_rows = 0usize;
    loop {
        tokio::select! {
            progress = updates.next() => {
                let batches = match progress {
                    Ok(progress) => shape.batches(progress),
                    Err(e) => Err(PipelineError::from(e)),
                };
                match batches {
                    Ok(batches) => {
                        for batch in batches {
                            queued_rows += batch.num_rows();
                            queue.push_back(batch);
                        }
                    }
                    Err(e) => {
                        let _ = sender.send(Err(e)).await;
                        return;
                    }
                }
                if queued_rows > MAX_QUEUED_ROWS {
                    let _ = sender.send(Err(PipelineError::SubscriberTooSlow { queued_rows })).await;
                    return;
                }
            }
            permit = sender.reserve(), if !queue.is_empty() => {
                let Ok(permit) = permit else { return };
                if let Some(batch) = queue.pop_front() {
                    queued_rows -= batch.num_rows();
                    permit.send(Ok(batch));
                }
            }
            () = sender.closed() => return,
        }
    }
}

impl OutputShape {
    /// The output rows of the times `progress` closed, and its progress row.
    fn batches(
        &self,
        progress: compute::SubscriptionProgress,
    ) -> Result<Vec<RecordBatch>, PipelineError> {
        let mut out = Vec::new();
        for closed in progress.closed {
            if !self.snapshot && closed.time <= self.as_of {
                continue;
            }
            out.push(self.changes(closed.time, &closed.updates)?);
        }
        if let (true, Some(upper)) = (self.progress, progress.upper) {
            // Nothing before `upper` will change any more; times before the start are not
            // the subscriber's business.
            if upper > self.as_of {
                out.push(self.progress_row(upper)?);
            }
        }
        Ok(out)
    }

    /// The rows of the changes at `time`.
    pub(crate) fn changes(
        &self,
        time: Timestamp,
        updates: &[(Row, Diff)],
    ) -> Result<RecordBatch, PipelineError> {
        let rows = self
            .codec
            .decode(updates.iter().map(|(row, _)| row))
            .map_err(|e| PipelineError::Internal(e.to_string()))?;
        let count = updates.len();
        let mut columns = vec![timestamp_column(time, count)?];
        if self.progress {
            columns.push(Arc::new(BooleanArray::from(vec![false; count])) as ArrayRef);
        }
        columns.push(Arc::new(Int64Array::from_iter_values(
            updates.iter().map(|(_, diff)| *diff),
        )));
        columns.extend(rows.columns().iter().cloned());
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }

    /// A row saying every time before `upper` is complete.
    pub(crate) fn progress_row(&self, upper: Timestamp) -> Result<RecordBatch, PipelineError> {
        let mut columns = vec![
            timestamp_column(upper, 1)?,
            Arc::new(BooleanArray::from(vec![true])) as ArrayRef,
            Arc::new(Int64Array::new_null(1)) as ArrayRef,
        ];
        for field in self.schema.fields().iter().skip(3) {
            columns.push(datafusion::arrow::array::new_null_array(
                field.data_type(),
                1,
            ));
        }
        Ok(RecordBatch::try_new(self.schema.clone(), columns)?)
    }
}

/// The type of `_timestamp`: numeric, wide enough for any `u64`.
fn timestamp_type() -> DataType {
    DataType::Decimal128(20, 0)
}

/// `count` copies of `time` as `_timestamp` values.
fn timestamp_column(time: Timestamp, count: usize) -> Result<ArrayRef, PipelineError> {
    let array =
        Decimal128Array::from(vec![i128::from(time); count]).with_precision_and_scale(20, 0)?;
    Ok(Arc::new(array))
}

/// `_timestamp`, [`_progressed`], `_diff`, then the query's columns (nullable: progress rows
/// have none).
pub fn output_schema(query: &SchemaRef, progress: bool) -> SchemaRef {
    let mut fields = vec![Field::new("_timestamp", timestamp_type(), false)];
    if progress {
        fields.push(Field::new("_progressed", DataType::Boolean, false));
    }
    fields.push(Field::new("_diff", DataType::Int64, progress));
    fields.extend(
        query
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_nullable(true)),
    );
    Arc::new(Schema::new(fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shape(snapshot: bool, progress: bool) -> OutputShape {
        let query = Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)]));
        OutputShape {
            schema: output_schema(&query, progress),
            codec: RowCodec::new(query).unwrap(),
            as_of: 10,
            snapshot,
            progress,
        }
    }

    fn rows(shape: &OutputShape, values: &[(i64, Diff)]) -> Vec<(Row, Diff)> {
        let batch = RecordBatch::try_new(
            Arc::new(Schema::new(vec![Field::new("n", DataType::Int64, false)])),
            vec![Arc::new(Int64Array::from_iter_values(
                values.iter().map(|v| v.0),
            ))],
        )
        .unwrap();
        shape
            .codec
            .encode(&batch)
            .unwrap()
            .into_iter()
            .zip(values.iter().map(|v| v.1))
            .collect()
    }

    fn progress(
        shape: &OutputShape,
        closed: &[(Timestamp, &[(i64, Diff)])],
        upper: Timestamp,
    ) -> compute::SubscriptionProgress {
        compute::SubscriptionProgress {
            closed: closed
                .iter()
                .map(|(time, values)| compute::ClosedTime {
                    time: *time,
                    updates: rows(shape, values),
                })
                .collect(),
            upper: Some(upper),
        }
    }

    #[test]
    fn changes_carry_their_time_and_diff() {
        let shape = shape(true, false);
        let batches = shape
            .batches(progress(
                &shape,
                &[(10, &[(1, 1)]), (12, &[(1, -1), (2, 1)])],
                13,
            ))
            .unwrap();
        assert_eq!(batches.len(), 2);
        assert_eq!(batches[1].num_rows(), 2);
        let diffs = batches[1]
            .column(1)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(diffs.values(), &[-1, 1]);
        assert_eq!(batches[1].schema().field(0).name(), "_timestamp");
    }

    #[test]
    fn without_snapshot_the_start_is_left_out_and_progress_is_announced() {
        let shape = shape(false, true);
        let batches = shape
            .batches(progress(&shape, &[(10, &[(1, 1)]), (11, &[(2, 1)])], 12))
            .unwrap();
        assert_eq!(batches.len(), 2, "the change at 11 and the progress row");
        let progressed = batches[1]
            .column(1)
            .as_any()
            .downcast_ref::<BooleanArray>()
            .unwrap();
        assert!(progressed.value(0));
        assert!(
            batches[1].column(2).is_null(0),
            "a progress row has no diff"
        );
    }
}
