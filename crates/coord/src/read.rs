//! Reads: SELECT over a consistent snapshot.
//!
//! A query picks one time (the last committed write, so it reads its own and every
//! acknowledged write), holds it so arrangements stay readable there, and plans with
//! DataFusion in a session whose scans peek arrangements at that time (or read a stream's log
//! up to it while the query runs). Equality filters on an arrangement's key become point
//! lookups.

use std::collections::HashMap;
use std::sync::Arc;

use async_trait::async_trait;
use compute::{ComputeController, ComputeError, PeekFilter};
use datafusion::arrow::array::{ArrayRef, AsArray, BooleanArray, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{filter_record_batch, take_record_batch};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::streaming::PartitionStream;
use pipelines::{StreamScan, Streams};
use repr::{Diff, GlobalId, Row, RowCodec, Timestamp};
use sql::catalog::{KeyLookup, RelationTable, SnapshotReader};
use sql::SqlError;
use system_catalog::{LATE_EVENTS, SOURCE_ERRORS};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::hydration::Hydrations;
use crate::privileges::SourceVisibility;
use crate::query_memory;
use crate::query_rows::{QueryRows, ResultUse};
use crate::response::ExecuteResponse;
use crate::running_queries::RunningQueries;
use crate::session::{LiveNotices, PendingWrites, Session, Transaction};
use crate::write_conflicts::ReadSet;

/// Rows per batch handed to DataFusion.
const BATCH_ROWS: usize = 8192;

/// Reads arrangements at one time, with a transaction's uncommitted writes laid over them.
#[derive(Debug)]
pub(crate) struct ArrangementReader {
    pub compute: Arc<ComputeController>,
    /// Streams are read from their logs, not from arrangements.
    pub streams: Arc<Streams>,
    pub time: Timestamp,
    pub overlay: HashMap<GlobalId, Vec<(Row, Diff)>>,
    /// Where to record what is read, for a write that checks its reads when it commits.
    pub reads: Option<Arc<ReadSet>>,
    /// The sources whose bad and late records the reader may see (`None`: all).
    pub visible_sources: Option<Arc<SourceVisibility>>,
    /// The dataflows being built: a read of one waits for it, telling `notices` how far it
    /// has got.
    pub hydrations: Arc<Hydrations>,
    pub notices: Option<Arc<LiveNotices>>,
}

#[async_trait]
impl SnapshotReader for ArrangementReader {
    async fn read(
        &self,
        relation: &RelationTable,
        lookup: Option<KeyLookup>,
    ) -> DfResult<Vec<RecordBatch>> {
        let codec = RowCodec::new(datafusion::catalog::TableProvider::schema(relation))
            .map_err(external)?;
        let overlay = self
            .overlay
            .get(&relation.id)
            .filter(|rows| !rows.is_empty());
        let (target, filter, overlay) = match lookup {
            Some(lookup) => {
                let key_codec = key_codec(&relation.desc.schema, &lookup)?;
                let key = encode_key(&key_codec, &lookup)?;
                let overlay = overlay
                    .map(|rows| rows_with_key(&codec, &key_codec, &lookup, rows, &key))
                    .transpose()?;
                let arrangement = lookup.arrangement.arrangement;
                if let Some(reads) = &self.reads {
                    // The relation's own arrangement is keyed by its primary key.
                    if arrangement == relation.id {
                        reads.key(relation.id, key.clone());
                    } else {
                        reads.all(relation.id);
                    }
                }
                (arrangement, PeekFilter::Key(key), overlay)
            }
            None => {
                if let Some(reads) = &self.reads {
                    reads.all(relation.id);
                }
                (relation.id, PeekFilter::All, overlay.cloned())
            }
        };
        let peek = self.compute.peek(target, self.time, filter);
        let peeked = match &self.notices {
            Some(notices)
                if self
                    .hydrations
                    .is_building(target, self.compute.frontiers()) =>
            {
                let what = format!("relation \"{}\"", relation.name);
                let frontiers = self.compute.frontiers();
                self.hydrations
                    .reporting(target, &what, frontiers, notices, peek)
                    .await
            }
            _ => peek.await,
        };
        let mut rows = peeked.map_err(|e| match e {
            ComputeError::Stopped(message) => {
                DataFusionError::External(Box::new(SqlError::ViewStopped(message)))
            }
            other => external(other),
        })?;
        if let Some(overlay) = overlay.filter(|rows| !rows.is_empty()) {
            rows.extend(overlay);
            rows = repr::consolidate(rows);
        }
        let batches = rows_to_batches(&codec, &rows)?;
        match &self.visible_sources {
            Some(visible) if [SOURCE_ERRORS, LATE_EVENTS].contains(&relation.id) => {
                batches.iter().map(|b| of_sources(b, visible)).collect()
            }
            _ => Ok(batches),
        }
    }

    /// Streams are scanned from their logs while the query runs.
    fn scan_lazily(&self, relation: &RelationTable) -> Option<Arc<dyn PartitionStream>> {
        let log = self.streams.get(relation.id)?;
        if let Some(reads) = &self.reads {
            reads.untracked();
        }
        Some(Arc::new(StreamScan {
            log,
            time: self.time,
            schema: datafusion::catalog::TableProvider::schema(relation),
        }))
    }
}

/// The rows of `batch` (of `source_errors` or `late_events`, whose first column names the
/// source) from the `visible` sources.
fn of_sources(batch: &RecordBatch, visible: &SourceVisibility) -> DfResult<RecordBatch> {
    let sources = batch.column(0).as_string::<i32>();
    let keep: BooleanArray = sources
        .iter()
        .map(|source| Some(source.is_some_and(|name| visible.contains(name))))
        .collect();
    Ok(filter_record_batch(batch, &keep)?)
}

fn external(e: impl std::error::Error + Send + Sync + 'static) -> DataFusionError {
    DataFusionError::External(Box::new(e))
}

/// The codec of a lookup's keys: the relation's (`schema`) lookup columns.
fn key_codec(schema: &SchemaRef, lookup: &KeyLookup) -> DfResult<RowCodec> {
    let key_schema = Arc::new(schema.project(&lookup.arrangement.columns)?);
    RowCodec::new(key_schema).map_err(external)
}

/// The key row for a point lookup.
fn encode_key(codec: &RowCodec, lookup: &KeyLookup) -> DfResult<Row> {
    let columns = lookup
        .values
        .iter()
        .map(|v| v.to_array_of_size(1))
        .collect::<DfResult<Vec<ArrayRef>>>()?;
    codec
        .encode_columns(&columns, 1)
        .map_err(external)?
        .pop()
        .ok_or_else(|| DataFusionError::Internal("no key encoded".into()))
}

/// The rows of `rows` (encoded with `codec`) whose lookup columns, encoded with `key_codec`,
/// are `key`: the part of an overlay a point lookup sees.
fn rows_with_key(
    codec: &RowCodec,
    key_codec: &RowCodec,
    lookup: &KeyLookup,
    rows: &[(Row, Diff)],
    key: &Row,
) -> DfResult<Vec<(Row, Diff)>> {
    let batch = codec
        .decode(rows.iter().map(|(row, _)| row))
        .map_err(external)?;
    let columns = batch.project(&lookup.arrangement.columns)?;
    let keys = key_codec
        .encode_columns(columns.columns(), columns.num_rows())
        .map_err(external)?;
    Ok(rows
        .iter()
        .zip(keys)
        .filter(|(_, row_key)| row_key == key)
        .map(|(row, _)| row.clone())
        .collect())
}

/// Decodes rows into batches, repeating each row as often as its multiplicity.
pub(crate) fn rows_to_batches(
    codec: &RowCodec,
    rows: &[(Row, Diff)],
) -> DfResult<Vec<RecordBatch>> {
    if let Some((_, diff)) = rows.iter().find(|(_, diff)| *diff < 0) {
        return Err(DataFusionError::Internal(format!(
            "a row has negative multiplicity {diff} in a snapshot"
        )));
    }
    let mut batches = Vec::new();
    for chunk in rows.chunks(BATCH_ROWS) {
        let batch = codec
            .decode(chunk.iter().map(|(row, _)| row))
            .map_err(external)?;
        if chunk.iter().all(|(_, diff)| *diff == 1) {
            batches.push(batch);
            continue;
        }
        let indices: UInt32Array = chunk
            .iter()
            .enumerate()
            .flat_map(|(i, (_, diff))| std::iter::repeat_n(i as u32, *diff as usize))
            .collect();
        batches.push(take_record_batch(&batch, &indices)?);
    }
    Ok(batches)
}

/// Plans and runs a query whose rows the statement keeps, within the memory a query may use
/// (see [`query_memory`]); the schema is exactly the type of every returned column.
pub(crate) async fn execute_plan(
    state: &SessionState,
    plan: LogicalPlan,
) -> Result<(SchemaRef, Vec<RecordBatch>), CoordError> {
    let (schema, rows) = start_plan(state, plan, ResultUse::Kept).await?;
    Ok((schema, rows.collect().await?))
}

/// Plans a query and starts it (see [`QueryRows`]): the physical plan, which peeks the
/// snapshots, is built here; the rows are computed on a thread of their own as they are read,
/// within the memory a query may use (see [`query_memory`]). The schema is the executed
/// plan's, so it is exactly the type of every returned column. A point query (one key of one
/// relation) skips the optimizer and physical planner: see [`sql::PointQuery`].
async fn start_plan(
    state: &SessionState,
    plan: LogicalPlan,
    result_use: ResultUse,
) -> Result<(SchemaRef, QueryRows), CoordError> {
    if let Some(point) = sql::PointQuery::from_plan(state, &plan) {
        let (schema, batches) = point.execute(state).await?;
        return Ok((schema, QueryRows::computed(batches)));
    }
    let state = sql::correlated_subqueries::state_for(state, &plan);
    let physical = state.create_physical_plan(&plan).await?;
    let schema = physical.schema();
    let (task, limit) = query_memory::bounded_task(&state)?;
    let place = match state.config().get_extension::<RunningQueries>() {
        Some(running) => Some(running.admit()?),
        None => None,
    };
    let rows = QueryRows::start(physical, task, limit, result_use, place)?;
    Ok((schema, rows))
}

impl Coordinator {
    /// Runs a query and collects its rows.
    pub(crate) async fn run_query(
        &self,
        session: &mut Session,
        query: &sql::Query,
    ) -> Result<(SchemaRef, Vec<RecordBatch>), CoordError> {
        let (schema, rows) = self
            .run_read(session, Read::Query(query), ResultUse::Kept)
            .await?;
        Ok((schema, rows.collect().await?))
    }

    /// Starts `read` in the session's snapshot (with its transaction's writes); the snapshot
    /// is held until its rows are all read. A query that changes settings (`set_config`)
    /// runs to the end here, so that they are the session's when the statement ends.
    async fn run_read(
        &self,
        session: &mut Session,
        read: Read<'_>,
        result_use: ResultUse,
    ) -> Result<(SchemaRef, QueryRows), CoordError> {
        let overlay = match &session.transaction {
            Transaction::Block(block) => block.writes.clone(),
            _ => PendingWrites::default(),
        };
        let context = self.query_context(session, &overlay);
        let (schema, rows) = match read {
            Read::Query(query) => {
                let plan = query.plan(&context.plan_context()).await?;
                let result_use = match sql::calls_function(&plan, "set_config") {
                    true => ResultUse::Kept,
                    false => result_use,
                };
                let (schema, rows) = start_plan(&context.state, plan, result_use).await?;
                let rows = match result_use {
                    ResultUse::Kept => QueryRows::computed(rows.collect().await?),
                    ResultUse::Streamed => rows,
                };
                (schema, rows)
            }
            Read::Point(point) => {
                let (schema, batches) = point.execute(&context.state).await?;
                (schema, QueryRows::computed(batches))
            }
        };
        context.apply_changed_settings(session);
        let rows = rows
            .map_batches(context.reg_type_display(schema.clone()))
            .holding(context.hold);
        Ok((sql::displayed_schema(&schema), rows))
    }

    /// Runs a point query planned already (a prepared statement's generic plan).
    pub(crate) async fn select_point(
        &self,
        session: &mut Session,
        point: &sql::PointQuery,
    ) -> Result<ExecuteResponse, CoordError> {
        let (schema, rows) = self
            .run_read(session, Read::Point(point), ResultUse::Streamed)
            .await?;
        Ok(ExecuteResponse::Rows { schema, rows })
    }

    /// Starts a SELECT, whose rows stream to the client as they are computed.
    pub(crate) async fn select(
        &self,
        session: &mut Session,
        query: &sql::Query,
    ) -> Result<ExecuteResponse, CoordError> {
        let (schema, rows) = self.stream_query(session, query).await?;
        Ok(ExecuteResponse::Rows { schema, rows })
    }

    /// Starts a query whose rows stream to the client as they are computed.
    pub(crate) async fn stream_query(
        &self,
        session: &mut Session,
        query: &sql::Query,
    ) -> Result<(SchemaRef, QueryRows), CoordError> {
        self.run_read(session, Read::Query(query), ResultUse::Streamed)
            .await
    }
}

/// What a read runs.
enum Read<'a> {
    /// A query, planned in the read's snapshot.
    Query(&'a sql::Query),
    /// A point query planned already.
    Point(&'a sql::PointQuery),
}
