//! `ALTER TABLE … ADD | DROP | RENAME COLUMN`: the table is rebuilt under its name.
//!
//! A table's rows are encoded for its columns, in its arrangement and in the log, so a
//! change of columns makes a new table: its rows are read as the new columns hold them (an
//! added column gets its DEFAULT, or NULL, as in PostgreSQL), the old table is dropped with
//! its indexes, the new one is created with the altered definition and filled, and the
//! indexes come back (an index on a dropped column goes, as in PostgreSQL), with the comments.
//! It all happens in one transaction block, the session's own or one of its own, so a
//! failure or a crash halfway leaves the old table as it was
//! (see [`crate::transactional_ddl`]); rows the block wrote to the table are read with the
//! rest. The old log records name the old table and are skipped.

use datafusion::arrow::compute::concat_batches;
use repr::{GlobalId, ItemKind};
use sql::{AlterColumns, Altered, ColumnChange, CreateTable, ObjectRef, Statement};

use crate::catalog::{read, Item};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::{Session, Transaction, TransactionBlock};
use crate::write::{InsertRows, WriteStatement};

const TAG: &str = "ALTER TABLE";

impl Coordinator {
    pub(crate) async fn alter_columns(
        &self,
        session: &mut Session,
        alter: AlterColumns,
    ) -> Result<ExecuteResponse, CoordError> {
        let Some(item) = self.resolve_item_if_exists(session, &alter.name, alter.if_exists)? else {
            return Ok(ExecuteResponse::command(TAG));
        };
        let (before, indexes) = self.alterable_table(&item)?;
        let after = match alter.altered(&before)? {
            Altered::Table(after) => *after,
            Altered::Unchanged(notice) => {
                session.notice("NOTICE", "00000", notice);
                return Ok(ExecuteResponse::command(TAG));
            }
        };
        let own_block = !session.in_block();
        if own_block {
            session.transaction = Transaction::Block(TransactionBlock::default());
        }
        let rebuilt = self
            .rebuild_table(session, &item, indexes, &alter, &before, after)
            .await;
        match (rebuilt, own_block) {
            (Ok(()), true) => {
                self.commit(session).await?;
            }
            (Err(e), true) => {
                self.rollback(session).await?;
                return Err(e);
            }
            (rebuilt, false) => rebuilt?,
        }
        Ok(ExecuteResponse::command(TAG))
    }

    /// The stored definition of `item`, a table whose columns can change (one fed by no
    /// source, that nothing but its indexes reads), and its indexes.
    fn alterable_table(&self, item: &Item) -> Result<(CreateTable, Vec<Item>), CoordError> {
        if item.kind != ItemKind::Table {
            return Err(CoordError::WrongObjectType {
                name: item.name.clone(),
                expected: "a table",
                hint: None,
            });
        }
        let Some(Statement::CreateTable(before)) = sql::parse(&item.create_sql)?.pop() else {
            return Err(CoordError::unsupported(format!(
                "altering the columns of table {}, which a source feeds",
                item.name
            )));
        };
        let (indexes, readers) = read(&self.catalog).indexes_and_readers(item.id);
        if let Some(reader) = readers.first() {
            return Err(CoordError::unsupported(format!(
                "altering the columns of table {}: {} {} depends on it",
                item.name,
                reader.kind.name(),
                reader.name
            )));
        }
        Ok((before, indexes))
    }

    /// Replaces the table `item` (defined by `before`, with `indexes`) with one defined by
    /// `after`, holding its rows, indexes and comments; inside the session's transaction block.
    async fn rebuild_table(
        &self,
        session: &mut Session,
        item: &Item,
        indexes: Vec<Item>,
        alter: &AlterColumns,
        before: &CreateTable,
        after: CreateTable,
    ) -> Result<(), CoordError> {
        let name = ObjectRef::qualified(&item.schema, &item.name);
        let rows_query = alter.rows_query(before)?;
        let (schema, batches) = self.run_query(session, &rows_query).await?;
        let rows = concat_batches(&schema, &batches)
            .map_err(|e| CoordError::Internal(format!("collecting the rows of {name}: {e}")))?;
        let comments: Vec<(u32, String)> = read(&self.catalog)
            .comments
            .range((item.id, 0)..=(item.id, u32::MAX))
            .map(|((_, column), text)| (*column, text.clone()))
            .collect();
        self.drop_items(session, ItemKind::Table, false, vec![name.clone()], false)
            .await?;
        self.create_table(session, after).await?;
        let table = self.resolve_item(session, &name)?;
        if rows.num_rows() > 0 {
            let insert = sql::Insert::of_query(&name, &rows_query)?;
            let rows = InsertRows::Computed {
                table: table.id,
                rows: &rows,
                on_conflict: &None,
            };
            Box::pin(self.write(session, WriteStatement::Insert(&insert, rows))).await?;
        }
        for index in indexes {
            self.restore_index(session, &index, &alter.change).await?;
        }
        self.move_comments(table.id, comments, &alter.change, before)
    }

    /// Creates `index` (of the table rebuilt) again, its column renamed as `change` renames
    /// it; an index on a dropped column goes, and one the new table made (its keys') stays.
    async fn restore_index(
        &self,
        session: &mut Session,
        index: &Item,
        change: &ColumnChange,
    ) -> Result<(), CoordError> {
        if read(&self.catalog)
            .by_name(&index.schema, &index.name)
            .is_some()
        {
            return Ok(());
        }
        let Some(Statement::CreateIndex(create)) = sql::parse(&index.create_sql)?.pop() else {
            return Err(CoordError::Internal(format!(
                "stored SQL of {} is not CREATE INDEX",
                index.name
            )));
        };
        let create = match change {
            ColumnChange::Drop { column, .. } if create.columns.contains(column) => return Ok(()),
            ColumnChange::Rename { column, new_name } => {
                create.with_column_renamed(column, new_name)
            }
            _ => create,
        };
        self.create_index(session, create).await?;
        Ok(())
    }

    /// Gives the rebuilt table `id` the comments of the table it replaces, column numbers
    /// following the columns.
    fn move_comments(
        &self,
        id: GlobalId,
        comments: Vec<(u32, String)>,
        change: &ColumnChange,
        before: &CreateTable,
    ) -> Result<(), CoordError> {
        let dropped = match change {
            ColumnChange::Drop { column, .. } => before.column_number(column),
            _ => None,
        };
        for (column, text) in comments {
            let column = match dropped {
                Some(dropped) if column == dropped => continue,
                Some(dropped) if column > dropped => column - 1,
                _ => column,
            };
            self.set_comment(id, column, Some(text))?;
        }
        Ok(())
    }
}
