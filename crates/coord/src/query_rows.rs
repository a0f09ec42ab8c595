//! The rows of a query, computed while the client reads them.
//!
//! A query's plan runs on a thread of its own: DataFusion's operators yield only between
//! batches, so a query can compute for minutes without one (a join that finds no match), and
//! on the threads that serve clients it would hold up every session until then. The thread
//! hands its batches over a channel of [`BATCHES_IN_FLIGHT`] batches as the client takes
//! them, so a result is never built whole, however large it is, and a client that reads
//! slowly slows its query down instead of filling the server's memory. Dropping the
//! [`QueryRows`] (the client went away, cancelled, or the statement ran out of time) stops the
//! query at its next yield.
//!
//! A statement that keeps the whole result (a cursor, `COPY (…) TO`, the query of a write)
//! asks for [`ResultUse::Kept`]: its batches are then counted in the query's memory pool as they
//! arrive, as its operators' state is (see [`crate::query_memory`]).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::execution::memory_pool::MemoryConsumer;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{execute_stream, ExecutionPlan};
use futures::future::{select, Either};
use futures::stream::{self, BoxStream};
use futures::{Stream, StreamExt, TryStreamExt};

use crate::error::CoordError;
use crate::query_memory;
use crate::running_queries::QueryPlace;

/// How many computed batches wait for the client at most.
const BATCHES_IN_FLIGHT: usize = 2;

/// What the statement does with a query's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ResultUse {
    /// Sends them to the client as they come.
    Streamed,
    /// Keeps them all (so they count in the query's memory).
    Kept,
}

/// The batches of a query's result, in order, computed as they are read; an error ends them.
pub struct QueryRows {
    batches: BoxStream<'static, Result<RecordBatch, CoordError>>,
}

impl std::fmt::Debug for QueryRows {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QueryRows").finish_non_exhaustive()
    }
}

impl QueryRows {
    /// Rows computed already.
    pub(crate) fn computed(batches: Vec<RecordBatch>) -> Self {
        Self {
            batches: stream::iter(batches.into_iter().map(Ok)).boxed(),
        }
    }

    /// Starts `plan` on a thread of its own in `task`, whose memory pool holds at most
    /// `limit` bytes if it has a limit; its rows come as the thread computes them. The
    /// thread holds `place` among the running queries until it ends.
    pub(crate) fn start(
        plan: Arc<dyn ExecutionPlan>,
        task: Arc<TaskContext>,
        limit: Option<usize>,
        result_use: ResultUse,
        place: Option<QueryPlace>,
    ) -> Result<Self, CoordError> {
        let (sender, receiver) = tokio::sync::mpsc::channel(BATCHES_IN_FLIGHT);
        std::thread::Builder::new()
            .name("query".into())
            .stack_size(sql::STATEMENT_STACK_BYTES)
            .spawn(move || {
                let _place = place;
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(e) => {
                        tracing::error!(error = %e, "a query thread could not start its runtime");
                        return;
                    }
                };
                runtime.block_on(compute(plan, task, limit, result_use, sender));
            })
            .map_err(|e| CoordError::Internal(format!("no thread for the query: {e}")))?;
        let batches = stream::unfold(receiver, |mut receiver| async move {
            let batch = receiver.recv().await?;
            Some((batch, receiver))
        });
        Ok(Self {
            batches: batches.boxed(),
        })
    }

    /// Every batch, once the query has computed them all.
    pub(crate) async fn collect(self) -> Result<Vec<RecordBatch>, CoordError> {
        self.batches.try_collect().await
    }

    /// These rows with `change` applied to each batch.
    pub(crate) fn map_batches(
        self,
        mut change: impl FnMut(RecordBatch) -> Result<RecordBatch, CoordError> + Send + 'static,
    ) -> Self {
        Self {
            batches: self
                .batches
                .map(move |batch| batch.and_then(&mut change))
                .boxed(),
        }
    }

    /// These rows, keeping `held` (a read hold) until they end or are dropped.
    pub(crate) fn holding<T: Send + 'static>(self, held: T) -> Self {
        Self {
            batches: self
                .batches
                .map(move |batch| {
                    let _held = &held;
                    batch
                })
                .boxed(),
        }
    }

    /// These rows, ended with the error `stop` resolves to if it resolves first (a deadline,
    /// a cancel); the query stops then.
    pub fn stopped_by(
        self,
        stop: impl Future<Output = CoordError> + Send + 'static,
    ) -> BoxStream<'static, Result<RecordBatch, CoordError>> {
        let stop: Pin<Box<dyn Future<Output = CoordError> + Send>> = Box::pin(stop);
        stream::unfold(Some((self.batches, stop)), |state| async move {
            let (mut batches, stop) = state?;
            // The stop first: the next batch is always ready when the client reads slower
            // than the query computes.
            match select(stop, batches.next()).await {
                Either::Left((error, _)) => Some((Err(error), None)),
                Either::Right((Some(batch), stop)) => Some((batch, Some((batches, stop)))),
                Either::Right((None, _)) => None,
            }
        })
        .boxed()
    }

    /// These rows, ended with 57014 if they are not all read by `deadline`.
    pub(crate) fn with_deadline(self, deadline: tokio::time::Instant) -> Self {
        Self {
            batches: self.stopped_by(async move {
                tokio::time::sleep_until(deadline).await;
                CoordError::StatementTimeout
            }),
        }
    }
}

impl Stream for QueryRows {
    type Item = Result<RecordBatch, CoordError>;

    fn poll_next(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        self.batches.poll_next_unpin(cx)
    }
}

/// Runs `plan` in `task` and sends its batches (or the error that ends them) to `sender`,
/// until the plan ends or the receiver goes away; kept batches are counted in `task`'s pool.
async fn compute(
    plan: Arc<dyn ExecutionPlan>,
    task: Arc<TaskContext>,
    limit: Option<usize>,
    result_use: ResultUse,
    sender: tokio::sync::mpsc::Sender<Result<RecordBatch, CoordError>>,
) {
    let kept = (result_use == ResultUse::Kept)
        .then(|| MemoryConsumer::new("query result").register(task.memory_pool()));
    let mut batches = match execute_stream(plan, task) {
        Ok(batches) => batches,
        Err(e) => {
            let _ = sender
                .send(Err(query_memory::query_error(e, limit).into()))
                .await;
            return;
        }
    };
    loop {
        let next = tokio::select! {
            next = batches.next() => next,
            () = sender.closed() => return,
        };
        let Some(batch) = next else { return };
        let batch = batch.and_then(|batch| {
            if let Some(kept) = &kept {
                kept.try_grow(batch.get_array_memory_size())?;
            }
            Ok(batch)
        });
        let failed = batch.is_err();
        let batch = batch.map_err(|e| query_memory::query_error(e, limit).into());
        if sender.send(batch).await.is_err() || failed {
            return;
        }
    }
}
