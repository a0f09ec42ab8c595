//! Writes to tables: `INSERT` (with `ON CONFLICT`), `UPDATE` and `DELETE`.
//!
//! Each names its table, which the coordinator resolves; what the statement computes is
//! planned here as a query: the rows to insert, or the SELECT that finds the rows an UPDATE
//! or DELETE changes (with the new values of an UPDATE's assignments beside them).

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::{cast_with_options, CastOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::LogicalPlan;
use datafusion::sql::sqlparser::ast::{
    self, Assignment, AssignmentTarget, FromTable, OnConflictAction, OnInsert, TableFactor,
    TableObject,
};

use repr::Privileges;

use super::access::relations_in;
use super::query::{parameter_types, ParameterTypes};
use crate::names::{column_name, fold_ident, object_ref, sql_ident, ObjectRef};
use crate::planner::PlanContext;
use crate::rewrite::checks::{conform_literal, normalize_insert};
use crate::rewrite::postgres_syntax::Target;
use crate::SqlError;

/// The table an INSERT writes, as far as shaping its rows needs it.
#[derive(Debug, Clone, Copy)]
pub struct InsertTarget<'a> {
    /// The table's columns.
    pub schema: &'a SchemaRef,
    /// The DEFAULT expressions of its columns, as SQL, by column.
    pub default_sql: &'a HashMap<String, String>,
}

/// `INSERT INTO table [(columns)] VALUES … | query [ON CONFLICT …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Insert {
    /// The table written.
    pub table: ObjectRef,
    insert: ast::Insert,
}

/// What an INSERT plans into.
#[derive(Debug)]
pub struct PlannedInsert {
    /// The rows to insert, in the table's column order.
    pub rows: LogicalPlan,
    /// What happens to rows whose key exists.
    pub on_conflict: Option<OnConflict>,
}

/// What `ON CONFLICT (…)` or `ON CONFLICT ON CONSTRAINT …` names as the arbiter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConflictArbiter {
    /// No target: any unique key.
    Any,
    /// The columns of a unique key, in any order.
    Columns(Vec<String>),
    /// A constraint or unique index by name.
    Constraint(String),
}

/// `ON CONFLICT DO NOTHING | DO UPDATE`.
#[derive(Debug, Clone)]
pub enum OnConflict {
    /// Rows whose key exists are skipped.
    DoNothing,
    /// Rows whose key exists update the existing row.
    DoUpdate(Box<ConflictUpdate>),
}

/// `ON CONFLICT DO UPDATE SET … [WHERE …]`.
#[derive(Debug, Clone)]
pub struct ConflictUpdate(ast::DoUpdate);

impl Insert {
    pub(crate) fn from_sql(insert: ast::Insert) -> Result<Insert, SqlError> {
        let TableObject::TableName(name) = &insert.table else {
            return Err(SqlError::Unsupported("INSERT INTO a table function".into()));
        };
        if insert.returning.is_some() {
            return Err(SqlError::Unsupported("INSERT … RETURNING".into()));
        }
        if matches!(&insert.on, Some(on) if !matches!(on, OnInsert::OnConflict(_))) {
            return Err(SqlError::Unsupported("ON DUPLICATE KEY".into()));
        }
        Ok(Insert {
            table: object_ref(name)?,
            insert,
        })
    }

    /// The statement shaped to its table (`VALUES` rows filled with defaults), without its
    /// `ON CONFLICT`, which it returns.
    fn shaped(
        &self,
        target: &InsertTarget<'_>,
    ) -> Result<(ast::Insert, Option<OnConflict>), SqlError> {
        let mut insert = self.insert.clone();
        normalize_insert(&mut insert, target)?;
        let on_conflict = match insert.on.take() {
            None => None,
            Some(OnInsert::OnConflict(conflict)) => Some(match conflict.action {
                OnConflictAction::DoNothing => OnConflict::DoNothing,
                OnConflictAction::DoUpdate(update) => {
                    OnConflict::DoUpdate(Box::new(ConflictUpdate(update)))
                }
            }),
            Some(_) => return Err(SqlError::Unsupported("ON DUPLICATE KEY".into())),
        };
        Ok((insert, on_conflict))
    }

    /// The privileges the insert needs on its table: INSERT, and UPDATE with `ON CONFLICT
    /// DO UPDATE`.
    pub(crate) fn needs(&self) -> Privileges {
        match &self.insert.on {
            Some(OnInsert::OnConflict(conflict))
                if matches!(conflict.action, OnConflictAction::DoUpdate(_)) =>
            {
                Privileges::INSERT | Privileges::UPDATE
            }
            _ => Privileges::INSERT,
        }
    }

    /// The relations the rows are read from.
    pub(crate) fn relations_read(&self) -> Vec<ObjectRef> {
        self.insert
            .source
            .as_ref()
            .map(|query| relations_in(ast::Statement::Query(query.clone())))
            .unwrap_or_default()
    }

    /// `INSERT INTO table query`, with `query` as parsed (never printed and parsed again).
    pub fn of_query(table: &ObjectRef, query: &super::Query) -> Result<Insert, SqlError> {
        let template = format!("INSERT INTO {} SELECT 1", crate::names::object_name(table));
        let Some(ast::Statement::Insert(mut insert)) = crate::parse::parse_sql(&template)?.pop()
        else {
            return Err(SqlError::Internal(format!("not an INSERT: {template}")));
        };
        insert.source = Some(query.0.clone());
        Insert::from_sql(insert)
    }

    /// The arbiter of the statement's `ON CONFLICT`, if it has one.
    pub fn conflict_arbiter(&self) -> Option<ConflictArbiter> {
        let Some(OnInsert::OnConflict(conflict)) = &self.insert.on else {
            return None;
        };
        Some(match &conflict.conflict_target {
            None => ConflictArbiter::Any,
            Some(ast::ConflictTarget::Columns(columns)) => {
                ConflictArbiter::Columns(columns.iter().map(fold_ident).collect())
            }
            Some(ast::ConflictTarget::OnConstraint(name)) => ConflictArbiter::Constraint(
                object_ref(name).map_or_else(|_| name.to_string(), |name| name.name),
            ),
        })
    }

    /// Plans the rows to insert into `target`.
    pub async fn plan(
        &self,
        ctx: &PlanContext<'_>,
        target: &InsertTarget<'_>,
    ) -> Result<PlannedInsert, SqlError> {
        let (insert, on_conflict) = self.shaped(target)?;
        let plan = ctx
            .plan(ast::Statement::Insert(insert), Target::Read)
            .await?;
        let LogicalPlan::Dml(dml) = plan else {
            return Err(SqlError::Internal("INSERT did not plan as DML".into()));
        };
        Ok(PlannedInsert {
            rows: dml.input.as_ref().clone(),
            on_conflict,
        })
    }

    /// The types of the statement's parameters.
    pub async fn describe(
        &self,
        ctx: &PlanContext<'_>,
        target: &InsertTarget<'_>,
    ) -> Result<ParameterTypes, SqlError> {
        let (insert, _) = self.shaped(target)?;
        let plan = ctx
            .plan(ast::Statement::Insert(insert), Target::Read)
            .await?;
        parameter_types(&plan)
    }

    pub(crate) fn ast_mut(&mut self) -> &mut ast::Insert {
        &mut self.insert
    }
}

impl ConflictUpdate {
    /// The row `DO UPDATE` makes of the existing row `old` (one row of table `table`) and
    /// the proposed row `excluded`, in `old`'s columns and types; `None` when its WHERE
    /// condition rejects the update.
    pub fn apply(
        &self,
        state: &SessionState,
        table: &str,
        old: &RecordBatch,
        excluded: &RecordBatch,
    ) -> Result<Option<RecordBatch>, SqlError> {
        let table_schema = DFSchema::try_from_qualified_schema(table, old.schema().as_ref())?;
        let excluded_schema =
            DFSchema::try_from_qualified_schema("excluded", excluded.schema().as_ref())?;
        let both_schema = table_schema.join(&excluded_schema)?;
        let mut columns: Vec<ArrayRef> = old.columns().to_vec();
        columns.extend(excluded.columns().iter().cloned());
        let both = RecordBatch::try_new(Arc::new(both_schema.as_arrow().clone()), columns)?;
        let evaluate = |sql: &str| -> Result<ArrayRef, SqlError> {
            let expr = state.create_logical_expr(sql, &both_schema)?;
            let physical = state.create_physical_expr(expr, &both_schema)?;
            Ok(physical.evaluate(&both)?.into_array(1)?)
        };
        if let Some(selection) = &self.0.selection {
            let keep = evaluate(&selection.to_string())?;
            let keep = keep
                .as_any()
                .downcast_ref::<BooleanArray>()
                .ok_or_else(|| {
                    SqlError::TypeMismatch("ON CONFLICT WHERE must be boolean".into())
                })?;
            if !(keep.is_valid(0) && keep.value(0)) {
                return Ok(None);
            }
        }
        let schema = old.schema();
        let mut new_columns: Vec<ArrayRef> = old.columns().to_vec();
        for assignment in &self.0.assignments {
            let AssignmentTarget::ColumnName(column) = &assignment.target else {
                return Err(SqlError::Unsupported(
                    "ON CONFLICT update of a column tuple".into(),
                ));
            };
            let name = column_name(column)?;
            let index = schema.index_of(&name).map_err(|_| {
                SqlError::UnknownColumn(format!(
                    "column \"{name}\" of relation \"{table}\" does not exist"
                ))
            })?;
            let mut value = assignment.value.clone();
            conform_literal(&mut value, schema.field(index))?;
            let value = evaluate(&value.to_string())?;
            new_columns[index] =
                cast_with_options(&value, schema.field(index).data_type(), &STRICT)
                    .map_err(|e| SqlError::InvalidValue(e.to_string()))?;
        }
        Ok(Some(RecordBatch::try_new(schema, new_columns)?))
    }
}

/// Casts that fail on a value of the wrong form instead of making it NULL.
const STRICT: CastOptions<'static> = CastOptions {
    safe: false,
    format_options: datafusion::arrow::util::display::FormatOptions::new(),
};

/// `UPDATE table [AS alias] SET column = expr, … [WHERE …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Update {
    /// The table changed.
    pub table: ObjectRef,
    update: ast::Update,
}

impl Update {
    pub(crate) fn from_sql(update: ast::Update) -> Result<Update, SqlError> {
        let TableFactor::Table { name, .. } = &update.table.relation else {
            return Err(SqlError::Unsupported("UPDATE of a derived table".into()));
        };
        if !update.table.joins.is_empty() || update.from.is_some() || update.returning.is_some() {
            return Err(SqlError::Unsupported(
                "UPDATE with FROM, joins or RETURNING".into(),
            ));
        }
        for assignment in &update.assignments {
            if !matches!(assignment.target, AssignmentTarget::ColumnName(_)) {
                return Err(SqlError::Unsupported("UPDATE of a column tuple".into()));
            }
        }
        Ok(Update {
            table: object_ref(name)?,
            update,
        })
    }

    /// The relations the statement reads: those its expressions name, and its own table
    /// when a WHERE clause reads its rows.
    pub(crate) fn relations_read(&self) -> Vec<ObjectRef> {
        relations_read(
            ast::Statement::Update(self.update.clone()),
            &self.table,
            self.update.selection.is_some(),
        )
    }

    /// The columns the assignments set, in order.
    pub fn assigned_columns(&self) -> Result<Vec<String>, SqlError> {
        self.update
            .assignments
            .iter()
            .map(|assignment| match &assignment.target {
                AssignmentTarget::ColumnName(column) => column_name(column),
                AssignmentTarget::Tuple(_) => {
                    Err(SqlError::Unsupported("UPDATE of a column tuple".into()))
                }
            })
            .collect()
    }

    /// Plans the SELECT finding the rows the UPDATE changes: the old columns of table
    /// `table_name` (the catalog's name of [`Self::table`]), then the new value of each
    /// assignment, in order.
    pub async fn plan(
        &self,
        ctx: &PlanContext<'_>,
        table_name: &str,
    ) -> Result<LogicalPlan, SqlError> {
        let TableFactor::Table { name, alias, .. } = &self.update.table.relation else {
            return Err(SqlError::Internal("UPDATE of a derived table".into()));
        };
        let qualifier = qualifier(alias.as_ref(), table_name);
        let plan_with = |assignments: &[Assignment]| {
            let new_values = assignments
                .iter()
                .enumerate()
                .map(|(i, a)| format!(", ({}) AS \"__fluxion_new_{i}\"", a.value))
                .collect::<String>();
            let query = format!(
                "SELECT {qualifier}.*{new_values} FROM {name} AS {qualifier}{}",
                where_clause(self.update.selection.as_ref())
            );
            async move { plan_select(ctx, &query).await }
        };
        let plan = plan_with(&self.update.assignments).await?;
        // A literal takes the type of the column it is assigned to: planned again with the
        // literals spelled as those types read them, if any needs it.
        let mut assignments = self.update.assignments.clone();
        for assignment in &mut assignments {
            let AssignmentTarget::ColumnName(column) = &assignment.target else {
                continue;
            };
            if let Ok(field) = plan
                .schema()
                .field_with_unqualified_name(&column_name(column)?)
            {
                conform_literal(&mut assignment.value, field)?;
            }
        }
        if assignments == self.update.assignments {
            return Ok(plan);
        }
        plan_with(&assignments).await
    }

    pub(crate) fn ast_mut(&mut self) -> &mut ast::Update {
        &mut self.update
    }
}

/// `DELETE FROM table [AS alias] [WHERE …]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delete {
    /// The table changed.
    pub table: ObjectRef,
    delete: ast::Delete,
}

impl Delete {
    /// `DELETE FROM name`: what `TRUNCATE name` does.
    pub(crate) fn every_row(name: &ast::ObjectName) -> Result<Delete, SqlError> {
        match crate::parse::parse(&format!("DELETE FROM {name}"))?.pop() {
            Some(super::Statement::Delete(delete)) => Ok(delete),
            _ => Err(SqlError::Syntax(format!("cannot truncate {name}"))),
        }
    }

    pub(crate) fn from_sql(delete: ast::Delete) -> Result<Delete, SqlError> {
        let name = match deleted_table(&delete)? {
            TableFactor::Table { name, .. } => object_ref(name)?,
            _ => return Err(SqlError::Unsupported("DELETE from a derived table".into())),
        };
        Ok(Delete {
            table: name,
            delete,
        })
    }

    /// The relations the statement reads: those its expressions name, and its own table
    /// when a WHERE clause reads its rows.
    pub(crate) fn relations_read(&self) -> Vec<ObjectRef> {
        relations_read(
            ast::Statement::Delete(self.delete.clone()),
            &self.table,
            self.delete.selection.is_some(),
        )
    }

    /// Plans the SELECT finding the rows the DELETE removes (every column of table
    /// `table_name`, the catalog's name of [`Self::table`]).
    pub async fn plan(
        &self,
        ctx: &PlanContext<'_>,
        table_name: &str,
    ) -> Result<LogicalPlan, SqlError> {
        let TableFactor::Table { name, alias, .. } = deleted_table(&self.delete)? else {
            return Err(SqlError::Internal("DELETE from a derived table".into()));
        };
        let qualifier = qualifier(alias.as_ref(), table_name);
        let query = format!(
            "SELECT {qualifier}.* FROM {name} AS {qualifier}{}",
            where_clause(self.delete.selection.as_ref())
        );
        plan_select(ctx, &query).await
    }

    pub(crate) fn ast_mut(&mut self) -> &mut ast::Delete {
        &mut self.delete
    }
}

/// The one table a DELETE removes rows from.
fn deleted_table(delete: &ast::Delete) -> Result<&TableFactor, SqlError> {
    let tables = match &delete.from {
        FromTable::WithFromKeyword(tables) | FromTable::WithoutKeyword(tables) => tables,
    };
    let [only] = tables.as_slice() else {
        return Err(SqlError::Unsupported("DELETE from several tables".into()));
    };
    if delete.using.is_some() || delete.returning.is_some() || !only.joins.is_empty() {
        return Err(SqlError::Unsupported(
            "DELETE with USING, joins or RETURNING".into(),
        ));
    }
    Ok(&only.relation)
}

/// The column qualifier of the SELECT behind an UPDATE or DELETE: the table's alias, or its
/// own bare name.
fn qualifier(alias: Option<&ast::TableAlias>, table_name: &str) -> String {
    match alias {
        Some(alias) => alias.name.to_string(),
        None => sql_ident(table_name).to_string(),
    }
}

/// ` WHERE condition`, or nothing.
fn where_clause(selection: Option<&ast::Expr>) -> String {
    selection.map(|s| format!(" WHERE {s}")).unwrap_or_default()
}

/// Plans a SELECT this module wrote.
async fn plan_select(ctx: &PlanContext<'_>, query: &str) -> Result<LogicalPlan, SqlError> {
    let statement = crate::parse::parse_sql(query)?
        .pop()
        .ok_or_else(|| SqlError::Internal("empty rewritten query".into()))?;
    ctx.plan(statement, Target::Read).await
}

/// The relations an UPDATE or DELETE of `table` reads: those `statement` names other than
/// `table`, and `table` itself if `filtered` (PostgreSQL asks for SELECT on the columns a
/// WHERE clause reads).
fn relations_read(statement: ast::Statement, table: &ObjectRef, filtered: bool) -> Vec<ObjectRef> {
    let mut relations = relations_in(statement);
    if !filtered {
        relations.retain(|relation| relation != table);
    }
    relations
}
