//! The memory one query may use (`--max-query-memory`): its operators' state (hash tables,
//! sort buffers, join buffers), and the rows it returns if the statement keeps them all (a
//! cursor, `COPY (…) TO`, a write's query; a SELECT's rows stream to the client and are not
//! held: see [`crate::query_rows`]), counted together in a pool of its own. DataFusion's sorts and grouped aggregations spill to disk when they reach the bound;
//! anything else that would pass it fails the query with 53200 (`out of memory`), and the
//! server and every other session go on. (The rows of a snapshot a query scans are the
//! arrangements' own and are not counted; maintained views are not bounded by it.)

use std::sync::Arc;

use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionState;
use datafusion::execution::memory_pool::{GreedyMemoryPool, MemoryPool};
use datafusion::execution::runtime_env::RuntimeEnvBuilder;
use datafusion::execution::TaskContext;
use sql::SqlError;

/// How many bytes one query may use; a setting of the planning state's configuration, where
/// the coordinator puts it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct QueryMemoryLimit(pub usize);

/// The task context a query of `state` runs in: with a memory pool of the limit `state`
/// carries, if it carries one; and that limit.
pub(crate) fn bounded_task(state: &SessionState) -> DfResult<(Arc<TaskContext>, Option<usize>)> {
    let limit = state
        .config()
        .get_extension::<QueryMemoryLimit>()
        .map(|limit| limit.0);
    let task = match limit {
        Some(limit) => task_with_pool(state, limit)?,
        None => state.task_ctx(),
    };
    Ok((task, limit))
}

/// A query's error as a client sees it: 53200 if it ran out of the `limit` it had.
pub(crate) fn query_error(error: DataFusionError, limit: Option<usize>) -> SqlError {
    match (error.find_root(), limit) {
        (DataFusionError::ResourcesExhausted(_), Some(limit)) => SqlError::OutOfMemory(format!(
            "out of memory: the query needs more than the {} MiB a query may use \
             (--max-query-memory)",
            limit >> 20
        )),
        _ => error.into(),
    }
}

/// A task context for `state` whose memory pool holds `limit` bytes.
fn task_with_pool(state: &SessionState, limit: usize) -> DfResult<Arc<TaskContext>> {
    let pool: Arc<dyn MemoryPool> = Arc::new(GreedyMemoryPool::new(limit));
    let runtime = RuntimeEnvBuilder::from_runtime_env(state.runtime_env())
        .with_memory_pool(pool)
        .build_arc()?;
    Ok(Arc::new(TaskContext::from(state).with_runtime(runtime)))
}
