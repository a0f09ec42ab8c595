//! Writes to tables: INSERT (with ON CONFLICT), UPDATE and DELETE.
//!
//! A write is computed as row diffs (an UPDATE retracts the old row and inserts the new one)
//! against a snapshot of the tables, then committed (see [`crate::commit`]).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use compute::PeekFilter;
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::compute::concat_batches;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use repr::{consolidate, Diff, GlobalId, ItemKind, Row};
use sql::{ConflictArbiter, Delete, Insert, ObjectRef, OnConflict, SqlError, Update};

use crate::catalog::Item;
use crate::commit::{WriteAttempt, WriteSnapshot};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::table_rows::{batch_schema, check_not_null, conform, TableCodecs};
use crate::timestamps::ReadHold;
use crate::unique_keys::{conflict_arbiter, Arbiter};

impl Coordinator {
    /// The writable table `name` refers to.
    pub(crate) fn writable_table(
        &self,
        session: &Session,
        name: &ObjectRef,
    ) -> Result<(Item, Arc<TableCodecs>), CoordError> {
        self.writable_item(self.resolve_item(session, name)?)
    }

    /// `item` with its row codecs, if it is a table.
    pub(crate) fn writable_item(&self, item: Item) -> Result<(Item, Arc<TableCodecs>), CoordError> {
        let name = &item.name;
        if item.kind != ItemKind::Table {
            return Err(CoordError::WrongObjectType {
                name: name.to_string(),
                expected: "a table",
                hint: Some(format!(
                    "cannot change rows of a {}; write to the tables it reads",
                    item.kind.name()
                )),
            });
        }
        let feeding_source = {
            let catalog = crate::catalog::read(&self.catalog);
            item.depends_on
                .iter()
                .filter_map(|id| catalog.get(*id))
                .find(|dependency| dependency.kind == ItemKind::Source)
                .map(|source| source.name.clone())
        };
        if let Some(source) = feeding_source {
            return Err(CoordError::WrongObjectType {
                name: name.to_string(),
                expected: "a writable table",
                hint: Some(format!("its rows come from source {source}")),
            });
        }
        let codecs = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&item.id)
            .cloned()
            .ok_or_else(|| CoordError::Internal(format!("no codecs for table {name}")))?;
        Ok((item, codecs))
    }

    /// Runs a statement that writes a table. Outside a block it first reads without the
    /// sequencer, so that concurrent writers overlap, and is checked when it commits (see
    /// [`crate::write_conflicts`]); after a conflict it runs again, at last holding the
    /// sequencer throughout, which cannot conflict.
    pub(crate) async fn write(
        &self,
        session: &mut Session,
        statement: WriteStatement<'_>,
    ) -> Result<ExecuteResponse, CoordError> {
        let mut attempt = WriteAttempt::Optimistic;
        let mut conflicts = 0;
        loop {
            let result = match statement {
                WriteStatement::Insert(insert, rows) => {
                    self.insert(session, insert, rows, attempt).await
                }
                WriteStatement::Update(update, search) => {
                    self.update(session, update, search, attempt).await
                }
                WriteStatement::Delete(delete, search) => {
                    self.delete(session, delete, search, attempt).await
                }
            };
            match result {
                Err(CoordError::WriteConflict { checkable })
                    if attempt != WriteAttempt::Sequenced =>
                {
                    conflicts += 1;
                    if !checkable || conflicts >= OPTIMISTIC_ATTEMPTS {
                        attempt = WriteAttempt::Sequenced;
                    }
                }
                result => return result,
            }
        }
    }

    async fn insert(
        &self,
        session: &mut Session,
        insert: &Insert,
        rows: InsertRows<'_>,
        attempt: WriteAttempt,
    ) -> Result<ExecuteResponse, CoordError> {
        let (table, codecs) = self.writable_table(session, &insert.table)?;
        let (access, hold, snapshot) = self.begin_write(session, attempt).await?;
        let context =
            self.query_context_at(session, hold, &snapshot.overlay, snapshot.reads.clone());
        let (batches, on_conflict) = match rows {
            InsertRows::Planned => {
                let planned = insert
                    .plan(&context.plan_context(), &codecs.insert_target())
                    .await?;
                (
                    rows_of(&context.state, planned.rows).await?,
                    planned.on_conflict,
                )
            }
            // The table was replaced since the generic plan was checked.
            InsertRows::Computed { table: id, .. } if id != table.id => {
                return Err(CoordError::SerializationFailure(table.name.clone()))
            }
            InsertRows::Computed {
                rows, on_conflict, ..
            } => (vec![rows.clone()], on_conflict.clone()),
        };
        let batch = conform(&codecs.schema, &batches)?;
        check_not_null(&codecs, &batch)?;
        let (writes, count) = match on_conflict {
            None => (
                self.plain_insert(&snapshot, &codecs, &table, &batch)
                    .await?,
                batch.num_rows(),
            ),
            Some(action) => {
                let arbiter = insert.conflict_arbiter().unwrap_or(ConflictArbiter::Any);
                match conflict_arbiter(&table, &codecs, &arbiter, &action)? {
                    Arbiter::PrimaryKey => {
                        self.upsert(&snapshot, &codecs, &table, &batch, action, &context.state)
                            .await?
                    }
                    Arbiter::Nothing => (
                        self.plain_insert(&snapshot, &codecs, &table, &batch)
                            .await?,
                        batch.num_rows(),
                    ),
                    Arbiter::AnyKey => {
                        let rows = self
                            .rows_without_conflicts(&table, &codecs, &batch, &snapshot)
                            .await?;
                        let count = rows.len();
                        (rows, count)
                    }
                }
            }
        };
        drop(context);
        self.apply_writes(session, table.id, writes, &snapshot, access)
            .await?;
        Ok(ExecuteResponse::command(format!("INSERT 0 {count}")))
    }

    /// Rows of `batch` to insert, after checking that no primary key exists already.
    pub(crate) async fn plain_insert(
        &self,
        snapshot: &WriteSnapshot,
        codecs: &TableCodecs,
        table: &Item,
        batch: &RecordBatch,
    ) -> Result<Vec<(Row, Diff)>, CoordError> {
        let rows = codecs.encode(batch)?;
        if codecs.key.is_some() {
            let keys = codecs.keys_of(batch)?;
            let existing = self
                .existing_keys(snapshot, codecs, table.id, &keys)
                .await?;
            let mut seen = HashSet::new();
            for (i, key) in keys.iter().enumerate() {
                if existing.contains_key(key) || !seen.insert(key.clone()) {
                    return Err(CoordError::UniqueViolation {
                        constraint: format!("{}_pkey", table.name),
                        detail: codecs.describe_key(batch, i),
                    });
                }
            }
        }
        let writes: Vec<(Row, Diff)> = rows.into_iter().map(|row| (row, 1)).collect();
        self.check_unique_keys(table, codecs, &writes, snapshot)
            .await?;
        Ok(writes)
    }

    /// INSERT … ON CONFLICT: rows whose key exists are skipped or updated.
    async fn upsert(
        &self,
        snapshot: &WriteSnapshot,
        codecs: &TableCodecs,
        table: &Item,
        batch: &RecordBatch,
        action: OnConflict,
        state: &datafusion::execution::context::SessionState,
    ) -> Result<(Vec<(Row, Diff)>, usize), CoordError> {
        if codecs.key.is_none() {
            return Err(CoordError::invalid(
                "there is no unique or exclusion constraint matching the ON CONFLICT specification",
            ));
        }
        let rows = codecs.encode(batch)?;
        let keys = codecs.keys_of(batch)?;
        let existing = self
            .existing_keys(snapshot, codecs, table.id, &keys)
            .await?;
        let mut current: HashMap<Row, Row> = existing;
        let mut writes: Vec<(Row, Diff)> = Vec::new();
        let mut affected = 0;
        for (i, (key, row)) in keys.into_iter().zip(rows).enumerate() {
            match (current.get(&key).cloned(), &action) {
                (None, _) => {
                    writes.push((row.clone(), 1));
                    current.insert(key, row);
                    affected += 1;
                }
                (Some(_), OnConflict::DoNothing) => {}
                (Some(old), OnConflict::DoUpdate(update)) => {
                    let excluded = batch.slice(i, 1);
                    let old_batch = codecs
                        .rows
                        .decode([&old])
                        .map_err(|e| CoordError::Internal(e.to_string()))?;
                    let Some(new) = update.apply(state, &table.name, &old_batch, &excluded)? else {
                        continue;
                    };
                    check_not_null(codecs, &new)?;
                    let new_row = codecs
                        .encode(&new)?
                        .pop()
                        .ok_or_else(|| CoordError::Internal("an updated row vanished".into()))?;
                    writes.push((old, -1));
                    writes.push((new_row.clone(), 1));
                    current.insert(key, new_row);
                    affected += 1;
                }
            }
        }
        self.check_unique_keys(table, codecs, &writes, snapshot)
            .await?;
        Ok((writes, affected))
    }

    /// For each key of `table` that exists in `snapshot`, the row.
    pub(crate) async fn existing_keys(
        &self,
        snapshot: &WriteSnapshot,
        codecs: &TableCodecs,
        table: GlobalId,
        keys: &[Row],
    ) -> Result<HashMap<Row, Row>, CoordError> {
        if let Some(reads) = &snapshot.reads {
            match codecs.key {
                Some(_) => reads.keys(table, keys.iter().cloned()),
                None => reads.all(table),
            }
        }
        let mut rows = self
            .compute
            .peek(table, snapshot.read_time, PeekFilter::Keys(keys.to_vec()))
            .await?;
        if let Some(pending) = snapshot.overlay.tables.get(&table) {
            rows.extend(pending.iter().cloned());
            rows = consolidate(rows);
        }
        let rows: Vec<(Row, Diff)> = rows.into_iter().filter(|(_, d)| *d > 0).collect();
        if rows.is_empty() {
            return Ok(HashMap::new());
        }
        let batch = codecs.decode(&rows)?;
        let row_keys = codecs.keys_of(&batch)?;
        Ok(row_keys
            .into_iter()
            .zip(rows.into_iter().map(|(r, _)| r))
            .collect())
    }

    async fn update(
        &self,
        session: &mut Session,
        update: &Update,
        search: RowSearch<'_>,
        attempt: WriteAttempt,
    ) -> Result<ExecuteResponse, CoordError> {
        let (table, codecs) = self.writable_table(session, &update.table)?;
        let assigned = assigned_positions(update, &codecs, &table.name)?;
        let (access, hold, snapshot) = self.begin_write(session, attempt).await?;
        let (batch, hold) = self
            .rows_to_change(
                session,
                Changed::Update(update),
                search,
                &table,
                hold,
                &snapshot,
            )
            .await?;
        let width = codecs.schema.fields().len();
        let old = batch
            .project(&(0..width).collect::<Vec<_>>())
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        let mut columns: Vec<ArrayRef> = old.columns().to_vec();
        for (i, index) in assigned.iter().enumerate() {
            let value = batch.column(width + i);
            columns[*index] =
                crate::table_rows::cast_column(value, codecs.schema.field(*index).data_type())?;
        }
        let new = RecordBatch::try_new(batch_schema(&codecs.schema), columns)
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        check_not_null(&codecs, &new)?;
        let old_rows = codecs.encode(&old)?;
        let new_rows = codecs.encode(&new)?;
        if codecs.key.is_some() {
            self.check_changed_keys(&snapshot, &codecs, &table, &old, &new)
                .await?;
        }
        let count = old_rows.len();
        let writes: Vec<(Row, Diff)> = old_rows
            .into_iter()
            .map(|r| (r, -1))
            .chain(new_rows.into_iter().map(|r| (r, 1)))
            .collect();
        self.check_unique_keys(&table, &codecs, &writes, &snapshot)
            .await?;
        drop(hold);
        self.apply_writes(session, table.id, writes, &snapshot, access)
            .await?;
        Ok(ExecuteResponse::command(format!("UPDATE {count}")))
    }

    /// An UPDATE that changes primary keys must not collide with other rows or itself.
    async fn check_changed_keys(
        &self,
        snapshot: &WriteSnapshot,
        codecs: &TableCodecs,
        table: &Item,
        old: &RecordBatch,
        new: &RecordBatch,
    ) -> Result<(), CoordError> {
        let old_keys = codecs.keys_of(old)?;
        let new_keys = codecs.keys_of(new)?;
        if old_keys == new_keys {
            return Ok(());
        }
        let vacated: HashSet<&Row> = old_keys.iter().collect();
        let existing = self
            .existing_keys(snapshot, codecs, table.id, &new_keys)
            .await?;
        let mut seen = HashSet::new();
        for (i, key) in new_keys.iter().enumerate() {
            let taken = existing.contains_key(key) && !vacated.contains(key);
            if taken || !seen.insert(key.clone()) {
                return Err(CoordError::UniqueViolation {
                    constraint: format!("{}_pkey", table.name),
                    detail: codecs.describe_key(new, i),
                });
            }
        }
        Ok(())
    }

    async fn delete(
        &self,
        session: &mut Session,
        delete: &Delete,
        search: RowSearch<'_>,
        attempt: WriteAttempt,
    ) -> Result<ExecuteResponse, CoordError> {
        let (table, codecs) = self.writable_table(session, &delete.table)?;
        let (access, hold, snapshot) = self.begin_write(session, attempt).await?;
        let (batch, hold) = self
            .rows_to_change(
                session,
                Changed::Delete(delete),
                search,
                &table,
                hold,
                &snapshot,
            )
            .await?;
        let rows = codecs.encode(&batch)?;
        let count = rows.len();
        let writes = rows.into_iter().map(|r| (r, -1)).collect();
        drop(hold);
        self.apply_writes(session, table.id, writes, &snapshot, access)
            .await?;
        Ok(ExecuteResponse::command(format!("DELETE {count}")))
    }
}

/// The rows `plan` computes; rows of constants are computed without planning them the
/// general way (see [`sql::ConstantRows`]).
async fn rows_of(state: &SessionState, plan: LogicalPlan) -> Result<Vec<RecordBatch>, CoordError> {
    if let Some(rows) =
        sql::ConstantRows::from_plan(state, &plan).and_then(|rows| rows.compute(&[]))
    {
        return Ok(vec![rows.map_err(SqlError::from)?]);
    }
    Ok(crate::read::execute_plan(state, plan).await?.1)
}

/// Where an INSERT's rows come from.
#[derive(Clone, Copy)]
pub(crate) enum InsertRows<'a> {
    /// From planning the statement.
    Planned,
    /// Computed by the statement's generic plan, made for `table`.
    Computed {
        table: GlobalId,
        rows: &'a RecordBatch,
        on_conflict: &'a Option<OnConflict>,
    },
}

/// How an UPDATE or DELETE finds the rows it changes.
#[derive(Clone, Copy)]
pub(crate) enum RowSearch<'a> {
    /// By planning the statement's SELECT.
    Planned,
    /// By the point query of the statement's generic plan.
    Point(&'a sql::PointQuery),
}

/// The statement whose rows [`Coordinator::rows_to_change`] finds.
#[derive(Clone, Copy)]
enum Changed<'a> {
    Update(&'a Update),
    Delete(&'a Delete),
}

impl Changed<'_> {
    /// The SELECT finding the rows, over table `table_name`.
    async fn plan(
        self,
        ctx: &sql::PlanContext<'_>,
        table_name: &str,
    ) -> Result<LogicalPlan, SqlError> {
        match self {
            Changed::Update(update) => update.plan(ctx, table_name).await,
            Changed::Delete(delete) => delete.plan(ctx, table_name).await,
        }
    }
}

impl Coordinator {
    /// The rows of `table` that `changed` changes (with an UPDATE's new values beside them),
    /// read at `hold`'s time in `snapshot`, with the hold (which keeps that time readable for
    /// the write's key checks). Only a planned search builds a DataFusion session.
    async fn rows_to_change(
        &self,
        session: &Session,
        changed: Changed<'_>,
        search: RowSearch<'_>,
        table: &Item,
        hold: ReadHold,
        snapshot: &WriteSnapshot,
    ) -> Result<(RecordBatch, ReadHold), CoordError> {
        let (schema, batches, hold) = match search {
            RowSearch::Planned => {
                let context =
                    self.query_context_at(session, hold, &snapshot.overlay, snapshot.reads.clone());
                let plan = changed.plan(&context.plan_context(), &table.name).await?;
                let (schema, batches) = crate::read::execute_plan(&context.state, plan).await?;
                (schema, batches, context.hold)
            }
            // The table was replaced since the generic plan was checked.
            RowSearch::Point(point) if point.relation_id() != Some(table.id) => {
                return Err(CoordError::SerializationFailure(table.name.clone()))
            }
            RowSearch::Point(point) => {
                let reader =
                    self.snapshot_reader(hold.time(), &snapshot.overlay, snapshot.reads.clone());
                let (schema, batches) = point.read(&reader).await?;
                (schema, batches, hold)
            }
        };
        let batch =
            concat_batches(&schema, &batches).map_err(|e| CoordError::Internal(e.to_string()))?;
        Ok((batch, hold))
    }
}

/// How often a write runs reading without the sequencer before it runs holding it.
const OPTIMISTIC_ATTEMPTS: u32 = 3;

/// A statement that writes a table.
pub(crate) enum WriteStatement<'a> {
    Insert(&'a Insert, InsertRows<'a>),
    Update(&'a Update, RowSearch<'a>),
    Delete(&'a Delete, RowSearch<'a>),
}

/// The positions of the columns an UPDATE assigns, in order.
fn assigned_positions(
    update: &Update,
    codecs: &TableCodecs,
    table: &str,
) -> Result<Vec<usize>, CoordError> {
    update
        .assigned_columns()?
        .iter()
        .map(|column| {
            codecs.schema.index_of(column).map_err(|_| {
                CoordError::unknown_column(format!(
                    "column \"{column}\" of relation \"{table}\" does not exist"
                ))
            })
        })
        .collect()
}
