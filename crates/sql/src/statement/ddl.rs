//! DDL: `CREATE TABLE | VIEW | MATERIALIZED VIEW | INDEX | SCHEMA`, `DROP` and `COMMENT ON`.
//!
//! A table's definition and a view's query are planned here; the coordinator names, records
//! and installs what they define. A created item's SQL is stored as [`CreateTable::to_sql`]
//! and [`CreateView::to_sql`] print it: names qualified, so it means the same under any
//! search path and after a restart.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::common::DFSchema;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::{Expr, ExprSchemable, LogicalPlan};
use datafusion::sql::sqlparser::ast::{
    self, ColumnOption, CommentObject, Expr as SqlExpr, ObjectName, ObjectNamePart, ObjectType,
    SchemaName, TableConstraint,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::tokenizer::{Location, Token, Tokenizer};
use repr::RelationDesc;

use crate::names::{fold_ident, object_name, object_ref, ObjectRef};
use crate::planner::PlanContext;
use crate::result_columns::{display_name, name_result_columns};
use crate::rewrite::postgres_syntax::Target;
use crate::statement::view_options::ViewOptions;
use crate::statement::watermark::{WatermarkClause, WatermarkSpec};
use crate::statement::Query;
use crate::SqlError;

/// The kinds of catalog objects statements name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    /// A table.
    Table,
    /// A view.
    View,
    /// A materialized view.
    MaterializedView,
    /// An index.
    Index,
    /// A schema.
    Schema,
    /// A source.
    Source,
    /// A sink.
    Sink,
    /// A durable subscription.
    Subscription,
}

/// `CREATE TABLE name (columns, constraints)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateTable {
    /// The table's name (the coordinator qualifies it before the SQL is stored).
    pub name: ObjectRef,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    create: ast::CreateTable,
    /// `WATERMARK FOR column AS expr` among its columns.
    pub(crate) watermark: Option<WatermarkClause>,
}

/// A table's columns, key and defaults, planned from its `CREATE TABLE`.
#[derive(Debug, Clone)]
pub struct TableDefinition {
    /// The columns and primary key.
    pub desc: RelationDesc,
    /// The DEFAULT expressions, planned, by column.
    pub defaults: HashMap<String, Expr>,
    /// The DEFAULT expressions as SQL, by column.
    pub default_sql: HashMap<String, String>,
    /// The columns of each UNIQUE constraint, by name, in key order.
    pub unique_keys: Vec<Vec<String>>,
}

/// `ALTER TABLE | VIEW | MATERIALIZED VIEW [IF EXISTS] name RENAME TO new_name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rename {
    /// What the statement names: `Table` for ALTER TABLE, which renames any relation, as in
    /// PostgreSQL.
    pub kind: ObjectKind,
    /// The relation renamed.
    pub name: ObjectRef,
    /// Its new name, in the same schema.
    pub new_name: String,
    /// `IF EXISTS`.
    pub if_exists: bool,
}

impl Rename {
    /// `ALTER TABLE name RENAME TO table_name`.
    fn of_table(
        alter: &ast::AlterTable,
        table_name: &ast::RenameTableNameKind,
    ) -> Result<Rename, SqlError> {
        let (ast::RenameTableNameKind::To(new_name) | ast::RenameTableNameKind::As(new_name)) =
            table_name;
        Ok(Rename {
            kind: ObjectKind::Table,
            name: object_ref(&alter.name)?,
            new_name: renamed_to(new_name)?,
            if_exists: alter.if_exists,
        })
    }

    /// The tag of the statement's CommandComplete.
    pub fn tag(&self) -> &'static str {
        match self.kind {
            ObjectKind::View => "ALTER VIEW",
            ObjectKind::MaterializedView => "ALTER MATERIALIZED VIEW",
            _ => "ALTER TABLE",
        }
    }
}

/// `ALTER TABLE [IF EXISTS] name ADD | DROP | RENAME COLUMN …`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterColumns {
    /// The table.
    pub name: ObjectRef,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// What changes.
    pub change: ColumnChange,
}

/// One change to a table's columns.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnChange {
    /// `ADD [COLUMN] [IF NOT EXISTS] definition`.
    Add {
        /// The new column, as written.
        column: ast::ColumnDef,
        /// `IF NOT EXISTS`.
        if_not_exists: bool,
    },
    /// `DROP [COLUMN] [IF EXISTS] column`.
    Drop {
        /// The column.
        column: String,
        /// `IF EXISTS`.
        if_exists: bool,
    },
    /// `RENAME [COLUMN] column TO new_name`.
    Rename {
        /// The column.
        column: String,
        /// Its new name.
        new_name: String,
    },
}

/// What an `ALTER TABLE` statement does.
pub(crate) fn from_alter_table(alter: &ast::AlterTable) -> Result<super::Statement, SqlError> {
    let name = object_ref(&alter.name)?;
    let change = match alter.operations.as_slice() {
        [ast::AlterTableOperation::RenameTable { table_name }] => {
            return Ok(super::Statement::Rename(Rename::of_table(
                alter, table_name,
            )?))
        }
        [ast::AlterTableOperation::AddColumn {
            if_not_exists,
            column_def,
            column_position: None,
            ..
        }] => ColumnChange::Add {
            column: column_def.clone(),
            if_not_exists: *if_not_exists,
        },
        [ast::AlterTableOperation::DropColumn {
            column_names,
            if_exists,
            ..
        }] if column_names.len() == 1 => ColumnChange::Drop {
            column: fold_ident(&column_names[0]),
            if_exists: *if_exists,
        },
        [ast::AlterTableOperation::RenameColumn {
            old_column_name,
            new_column_name,
        }] => ColumnChange::Rename {
            column: fold_ident(old_column_name),
            new_name: fold_ident(new_column_name),
        },
        operations => {
            return Err(SqlError::Unsupported(format!(
                "ALTER TABLE {}",
                operations
                    .iter()
                    .map(|o| o.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )))
        }
    };
    Ok(super::Statement::AlterColumns(AlterColumns {
        name,
        if_exists: alter.if_exists,
        change,
    }))
}

impl AlterColumns {
    /// The table's stored `CREATE TABLE` with the change made, or `None` where `IF [NOT]
    /// EXISTS` makes it nothing (with the notice to give).
    pub fn altered(&self, create: &CreateTable) -> Result<Altered, SqlError> {
        let table = &create.name.name;
        let mut altered = create.clone();
        let columns = &mut altered.create.columns;
        let position = |name: &str| columns.iter().position(|c| fold_ident(&c.name) == name);
        let missing = |column: &str| {
            SqlError::UnknownColumn(format!(
                "column \"{column}\" of relation \"{table}\" does not exist"
            ))
        };
        match &self.change {
            ColumnChange::Add {
                column,
                if_not_exists,
            } => {
                let name = fold_ident(&column.name);
                if position(&name).is_some() {
                    if *if_not_exists {
                        return Ok(Altered::Unchanged(format!(
                            "column \"{name}\" of relation \"{table}\" already exists, skipping"
                        )));
                    }
                    return Err(SqlError::ColumnExists {
                        column: name,
                        relation: table.clone(),
                    });
                }
                if column.options.iter().any(|o| {
                    matches!(
                        o.option,
                        ColumnOption::PrimaryKey(_) | ColumnOption::Unique(_)
                    )
                }) {
                    return Err(SqlError::Unsupported(
                        "adding a column with a PRIMARY KEY or UNIQUE constraint".into(),
                    ));
                }
                columns.push(column.clone());
            }
            ColumnChange::Drop { column, if_exists } => {
                let Some(at) = position(column) else {
                    if *if_exists {
                        return Ok(Altered::Unchanged(format!(
                            "column \"{column}\" of relation \"{table}\" does not exist, skipping"
                        )));
                    }
                    return Err(missing(column));
                };
                if create.keys_name(column) {
                    return Err(SqlError::Unsupported(format!(
                        "dropping column \"{column}\" of \"{table}\", which a PRIMARY KEY, UNIQUE constraint or WATERMARK names"
                    )));
                }
                if columns.len() == 1 {
                    return Err(SqlError::Unsupported(format!(
                        "dropping the last column of \"{table}\""
                    )));
                }
                columns.remove(at);
            }
            ColumnChange::Rename { column, new_name } => {
                let Some(at) = position(column) else {
                    return Err(missing(column));
                };
                if position(new_name).is_some() {
                    return Err(SqlError::ColumnExists {
                        column: new_name.clone(),
                        relation: table.clone(),
                    });
                }
                if create.keys_name(column) {
                    return Err(SqlError::Unsupported(format!(
                        "renaming column \"{column}\" of \"{table}\", which a PRIMARY KEY, UNIQUE constraint or WATERMARK names"
                    )));
                }
                columns[at].name = ast::Ident::new(new_name);
            }
        }
        Ok(Altered::Table(Box::new(altered)))
    }
}

impl AlterColumns {
    /// The query that reads the table `before` describes as the altered table holds its
    /// rows: each remaining column under its new name, and an added column's DEFAULT (or
    /// NULL) cast to its type. Built from the parsed definition, never printed and parsed.
    pub fn rows_query(&self, before: &CreateTable) -> Result<Query, SqlError> {
        let template = format!("SELECT 1 FROM {}", object_name(&before.name));
        let Some(ast::Statement::Query(mut query)) = crate::parse::parse_sql(&template)?.pop()
        else {
            return Err(SqlError::Internal(format!("not a query: {template}")));
        };
        let ast::SetExpr::Select(select) = query.body.as_mut() else {
            return Err(SqlError::Internal(format!("not a SELECT: {template}")));
        };
        let mut projection = Vec::new();
        for column in &before.create.columns {
            let name = fold_ident(&column.name);
            let new_name = match &self.change {
                ColumnChange::Drop { column, .. } if *column == name => continue,
                ColumnChange::Rename { column, new_name } if *column == name => new_name.clone(),
                _ => name.clone(),
            };
            projection.push(ast::SelectItem::ExprWithAlias {
                expr: SqlExpr::Identifier(ast::Ident::with_quote('"', name)),
                alias: ast::Ident::with_quote('"', new_name),
            });
        }
        if let ColumnChange::Add { column, .. } = &self.change {
            let default = column.options.iter().find_map(|o| match &o.option {
                ColumnOption::Default(expr) => Some(expr.clone()),
                _ => None,
            });
            projection.push(ast::SelectItem::ExprWithAlias {
                expr: SqlExpr::Cast {
                    kind: ast::CastKind::Cast,
                    expr: Box::new(default.unwrap_or(SqlExpr::Value(ast::Value::Null.into()))),
                    data_type: column.data_type.clone(),
                    array: false,
                    format: None,
                },
                alias: ast::Ident::with_quote('"', fold_ident(&column.name)),
            });
        }
        select.projection = projection;
        Ok(Query::new(*query))
    }
}

/// A table's definition after [`AlterColumns::altered`].
#[derive(Debug, Clone)]
pub enum Altered {
    /// The new definition.
    Table(Box<CreateTable>),
    /// Nothing changes; the notice says why.
    Unchanged(String),
}

/// The new name of a RENAME TO, which stays in its schema: a qualified one is refused.
pub(crate) fn renamed_to(name: &ast::ObjectName) -> Result<String, SqlError> {
    match object_ref(name)? {
        ObjectRef { schema: None, name } => Ok(name),
        ObjectRef { .. } => Err(SqlError::Syntax(format!(
            "RENAME TO takes a name without a schema (\"{name}\")"
        ))),
    }
}

/// The stored `CREATE TABLE` or `CREATE [MATERIALIZED] VIEW` `create_sql`, naming `new_name`
/// (in the same schema) instead.
pub fn renamed_create_sql(create_sql: &str, new_name: &str) -> Result<String, SqlError> {
    match crate::parse::parse(create_sql)?.pop() {
        Some(super::Statement::CreateTable(mut create)) => {
            create.name.name = new_name.to_string();
            Ok(create.to_sql())
        }
        Some(super::Statement::CreateView(mut create)) => {
            create.name.name = new_name.to_string();
            Ok(create.to_sql())
        }
        _ => Err(SqlError::Unsupported(format!(
            "renaming what {create_sql:?} created"
        ))),
    }
}

/// The stored `CREATE INDEX` `create_sql`, on the relation renamed `new_name` (in the same
/// schema).
pub fn reindexed_create_sql(create_sql: &str, new_name: &str) -> Result<String, SqlError> {
    match crate::parse::parse(create_sql)?.pop() {
        Some(super::Statement::CreateIndex(mut create)) => {
            create.on.name = new_name.to_string();
            Ok(create.to_sql())
        }
        _ => Err(SqlError::Internal(format!("not an index: {create_sql:?}"))),
    }
}

/// `CREATE TABLE name AS query`: a table with the query's columns (no key), filled with the
/// query's rows once.
#[derive(Debug, Clone)]
pub struct CreateTableAs {
    /// The table's name (the coordinator qualifies it).
    pub name: ObjectRef,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// The rows.
    pub query: Query,
}

impl CreateTableAs {
    pub(crate) fn from_sql(create: ast::CreateTable) -> Result<CreateTableAs, SqlError> {
        if !create.columns.is_empty() || !create.constraints.is_empty() {
            return Err(SqlError::Unsupported(
                "CREATE TABLE … AS with a column list".into(),
            ));
        }
        if create.temporary || create.external {
            return Err(SqlError::Unsupported(
                "temporary and external tables".into(),
            ));
        }
        let query = create
            .query
            .ok_or_else(|| SqlError::Internal("CREATE TABLE AS without a query".into()))?;
        Ok(CreateTableAs {
            name: object_ref(&create.name)?,
            if_not_exists: create.if_not_exists,
            query: Query::new(*query),
        })
    }
}

/// `create_table` (a `CREATE TABLE`'s text, as sqlparser prints it) with `element` added at
/// the end of its column list. (Text without one, which sqlparser never prints, gets the
/// element in parentheses at its end: never dropped.)
fn with_column_list_element(create_table: &str, element: &str) -> String {
    let unlisted = || format!("{create_table} ({element})");
    let Ok(tokens) = Tokenizer::new(&PostgreSqlDialect {}, create_table).tokenize_with_location()
    else {
        return unlisted();
    };
    let mut depth = 0usize;
    let mut empty = true;
    for token in &tokens {
        match &token.token {
            Token::LParen => depth += 1,
            Token::RParen if depth == 1 => {
                let at = byte_offset(create_table, token.span.start);
                let separator = if empty { "" } else { ", " };
                return format!(
                    "{}{separator}{element}{}",
                    &create_table[..at],
                    &create_table[at..]
                );
            }
            Token::RParen => depth = depth.saturating_sub(1),
            Token::Whitespace(_) => {}
            _ if depth >= 1 => empty = false,
            _ => {}
        }
    }
    unlisted()
}

/// The byte offset in `text` of `location` (a line and a character, counted from 1).
fn byte_offset(text: &str, location: Location) -> usize {
    let mut line_start = 0;
    for _ in 1..location.line {
        line_start += text[line_start..]
            .find('\n')
            .map_or(text.len() - line_start, |i| i + 1);
    }
    text[line_start..]
        .char_indices()
        .nth(location.column.saturating_sub(1) as usize)
        .map_or(text.len(), |(i, _)| line_start + i)
}

impl CreateTable {
    pub(crate) fn from_sql(create: ast::CreateTable) -> Result<CreateTable, SqlError> {
        if create.query.is_some() || create.like.is_some() || create.clone.is_some() {
            return Err(SqlError::Unsupported("CREATE TABLE … LIKE / CLONE".into()));
        }
        if create.temporary || create.external {
            return Err(SqlError::Unsupported(
                "temporary and external tables".into(),
            ));
        }
        Ok(CreateTable {
            name: object_ref(&create.name)?,
            if_not_exists: create.if_not_exists,
            create,
            watermark: None,
        })
    }

    /// The statement with `clause` written among its columns.
    pub(crate) fn with_watermark(self, clause: &WatermarkClause) -> CreateTable {
        CreateTable {
            watermark: Some(clause.clone()),
            ..self
        }
    }

    /// What its `WATERMARK FOR column AS column [- INTERVAL '…']` declares, if anything
    /// (`state` evaluates the interval).
    pub fn watermark(&self, state: &SessionState) -> Result<Option<WatermarkSpec>, SqlError> {
        self.watermark.as_ref().map(|w| w.spec(state)).transpose()
    }

    /// The number of column `column` (from 1), if the table has it.
    pub fn column_number(&self, column: &str) -> Option<u32> {
        let position = self
            .create
            .columns
            .iter()
            .position(|c| fold_ident(&c.name) == column)?;
        u32::try_from(position + 1).ok()
    }

    /// Whether `column` is part of the primary key, a UNIQUE constraint or the watermark.
    fn keys_name(&self, column: &str) -> bool {
        let in_options = self.create.columns.iter().any(|c| {
            fold_ident(&c.name) == column
                && c.options.iter().any(|o| {
                    matches!(
                        o.option,
                        ColumnOption::PrimaryKey(_) | ColumnOption::Unique(_)
                    )
                })
        });
        let in_constraints = self.create.constraints.iter().any(|constraint| {
            let columns = match constraint {
                TableConstraint::PrimaryKey(key) => &key.columns,
                TableConstraint::Unique(unique) => &unique.columns,
                _ => return false,
            };
            constraint_columns(columns, "key").is_ok_and(|names| names.iter().any(|n| n == column))
        });
        let in_watermark = self
            .watermark
            .as_ref()
            .is_some_and(|w| w.column_name() == column);
        in_options || in_constraints || in_watermark
    }

    /// Whether the statement declares columns.
    pub fn has_columns(&self) -> bool {
        !self.create.columns.is_empty()
    }

    /// The statement's SQL, under [`Self::name`].
    pub fn to_sql(&self) -> String {
        let mut create = self.create.clone();
        create.name = object_name(&self.name);
        let sql = ast::Statement::CreateTable(create).to_string();
        match &self.watermark {
            Some(watermark) => with_column_list_element(&sql, &watermark.to_string()),
            None => sql,
        }
    }

    /// Plans the table's columns, primary key and defaults (`state` plans the defaults).
    pub fn plan(&self, state: &SessionState) -> Result<TableDefinition, SqlError> {
        let name = &self.name.name;
        let mut primary_key: Option<Vec<String>> = None;
        let mut set_primary_key = |columns: Vec<String>| {
            if primary_key.is_some() {
                return Err(SqlError::InvalidStatement(format!(
                    "multiple primary keys for table \"{name}\" are not allowed"
                )));
            }
            primary_key = Some(columns);
            Ok(())
        };
        let mut unique_keys: Vec<Vec<String>> = Vec::new();
        let mut columns: Vec<(String, &ast::DataType, bool)> = Vec::new();
        let mut default_sql: Vec<(String, SqlExpr)> = Vec::new();
        for column in &self.create.columns {
            let column_name = fold_ident(&column.name);
            if columns.iter().any(|(n, _, _)| *n == column_name) {
                return Err(SqlError::DuplicateColumn(column_name));
            }
            let mut nullable = true;
            for option in &column.options {
                match &option.option {
                    ColumnOption::Null => nullable = true,
                    ColumnOption::NotNull => nullable = false,
                    ColumnOption::Default(expr) => {
                        default_sql.push((column_name.clone(), expr.clone()))
                    }
                    ColumnOption::PrimaryKey(_) => set_primary_key(vec![column_name.clone()])?,
                    ColumnOption::Unique(unique) => {
                        check_nulls_distinct(unique)?;
                        unique_keys.push(vec![column_name.clone()]);
                    }
                    other => {
                        return Err(SqlError::Unsupported(format!(
                            "column constraint {other} (only NOT NULL, DEFAULT, PRIMARY KEY and UNIQUE)"
                        )))
                    }
                }
            }
            columns.push((column_name, &column.data_type, nullable));
        }
        for constraint in &self.create.constraints {
            match constraint {
                TableConstraint::PrimaryKey(key) => {
                    set_primary_key(constraint_columns(&key.columns, "primary key")?)?
                }
                TableConstraint::Unique(unique) => {
                    check_nulls_distinct(unique)?;
                    unique_keys.push(constraint_columns(&unique.columns, "unique constraint")?);
                }
                other => {
                    return Err(SqlError::Unsupported(format!(
                        "table constraint {other} (only PRIMARY KEY and UNIQUE)"
                    )))
                }
            }
        }
        for key in unique_keys.iter().flatten() {
            if !columns.iter().any(|(n, _, _)| n == key) {
                return Err(SqlError::UnknownColumn(format!(
                    "column \"{key}\" named in key does not exist"
                )));
            }
        }
        let key_positions = primary_key
            .map(|key| {
                key.iter()
                    .map(|k| {
                        columns.iter().position(|(n, _, _)| n == k).ok_or_else(|| {
                            SqlError::UnknownColumn(format!(
                                "column \"{k}\" named in key does not exist"
                            ))
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()
            })
            .transpose()?;
        let fields = columns
            .iter()
            .enumerate()
            .map(|(i, (n, t, nullable))| {
                let in_key = key_positions.as_ref().is_some_and(|k| k.contains(&i));
                crate::types::column_field(n, t, *nullable && !in_key)
            })
            .collect::<Result<Vec<Field>, _>>()?;
        let schema = Arc::new(Schema::new(fields));
        let empty = DFSchema::empty();
        let mut defaults = HashMap::new();
        let default_text: HashMap<String, String> = default_sql
            .iter()
            .map(|(c, e)| (c.clone(), e.to_string()))
            .collect();
        for (column, expr) in default_sql {
            let logical = state.create_logical_expr(&expr.to_string(), &empty)?;
            let data_type = schema
                .field_with_name(&column)
                .map_err(|e| SqlError::Internal(e.to_string()))?
                .data_type();
            defaults.insert(column, logical.cast_to(data_type, &empty)?);
        }
        Ok(TableDefinition {
            desc: RelationDesc {
                schema,
                primary_key: key_positions,
            },
            defaults,
            default_sql: default_text,
            unique_keys,
        })
    }
}

/// The column names of a PRIMARY KEY or UNIQUE constraint (`what`, for the error).
fn constraint_columns(columns: &[ast::IndexColumn], what: &str) -> Result<Vec<String>, SqlError> {
    columns
        .iter()
        .map(|c| match &c.column.expr {
            SqlExpr::Identifier(ident) => Ok(fold_ident(ident)),
            other => Err(SqlError::Unsupported(format!(
                "{what} on expression {other}"
            ))),
        })
        .collect()
}

/// UNIQUE NULLS NOT DISTINCT is refused: NULLs are distinct in every unique key.
fn check_nulls_distinct(unique: &ast::UniqueConstraint) -> Result<(), SqlError> {
    match unique.nulls_distinct {
        ast::NullsDistinctOption::NotDistinct => {
            Err(SqlError::Unsupported("UNIQUE NULLS NOT DISTINCT".into()))
        }
        _ => Ok(()),
    }
}

/// The DEFAULT expressions of a stored `CREATE TABLE`, as SQL, by column (empty if
/// `create_sql` is not one).
pub fn column_defaults(create_sql: &str) -> Vec<(String, String)> {
    let Ok(mut statements) = crate::parse::parse_sql(create_sql) else {
        return Vec::new();
    };
    let Some(ast::Statement::CreateTable(create)) = statements.pop() else {
        return Vec::new();
    };
    create
        .columns
        .iter()
        .filter_map(|column| {
            column
                .options
                .iter()
                .find_map(|option| match &option.option {
                    ColumnOption::Default(expr) => {
                        Some((fold_ident(&column.name), expr.to_string()))
                    }
                    _ => None,
                })
        })
        .collect()
}

/// `CREATE [MATERIALIZED] VIEW name [(columns)] AS query [EMIT ON WINDOW CLOSE]`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateView {
    /// The view's name (the coordinator qualifies it before the SQL is stored).
    pub name: ObjectRef,
    /// `MATERIALIZED`.
    pub materialized: bool,
    /// `EMIT ON WINDOW CLOSE`: each row appears once, when its window closes, and never
    /// changes (materialized views only).
    pub emit_on_window_close: bool,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// A materialized view's `WITH (…)` options.
    pub options: ViewOptions,
    create: ast::CreateView,
}

impl CreateView {
    pub(crate) fn from_sql(create: ast::CreateView) -> Result<CreateView, SqlError> {
        if create.or_replace {
            return Err(SqlError::Unsupported("CREATE OR REPLACE VIEW".into()));
        }
        let options = match create.materialized {
            true => ViewOptions::from_sql(&create.options)?,
            false => ViewOptions::default(),
        };
        Ok(CreateView {
            name: object_ref(&create.name)?,
            materialized: create.materialized,
            emit_on_window_close: false,
            if_not_exists: create.if_not_exists,
            options,
            create,
        })
    }

    /// The view's query.
    pub(crate) fn query(&self) -> Query {
        Query::new((*self.create.query).clone())
    }

    /// Readies a new view's query for storing: its relations qualified for `ctx`'s search
    /// path and its PostgreSQL syntax rewritten (a stored view is planned as it is).
    pub fn prepare(&mut self, ctx: &PlanContext<'_>) -> Result<(), SqlError> {
        let mut statement = ast::Statement::CreateView(self.create.clone());
        ctx.prepare(&mut statement, Target::View)?;
        if let ast::Statement::CreateView(create) = statement {
            self.create = create;
        }
        Ok(())
    }

    /// The statement's SQL, under [`Self::name`].
    pub fn to_sql(&self) -> String {
        let mut create = self.create.clone();
        create.name = object_name(&self.name);
        let sql = crate::parse::written_as_asof(ast::Statement::CreateView(create).to_string());
        if self.emit_on_window_close {
            format!("{sql} EMIT ON WINDOW CLOSE")
        } else {
            sql
        }
    }

    /// The view's query as a logical plan, its columns named as the view names them.
    pub async fn plan(&self, ctx: &PlanContext<'_>) -> Result<LogicalPlan, SqlError> {
        let mut query = self.create.query.clone();
        name_result_columns(&mut query);
        let statement = if self.create.columns.is_empty() {
            ast::Statement::Query(query)
        } else {
            let names = self
                .create
                .columns
                .iter()
                .map(|c| format!("\"{}\"", fold_ident(&c.name)))
                .collect::<Vec<_>>()
                .join(", ");
            crate::parse::parse_sql(&format!(
                "SELECT * FROM ({query}) AS __fluxion_view({names})"
            ))?
            .pop()
            .ok_or_else(|| SqlError::Internal("renamed view query vanished".into()))?
        };
        let logical = ctx.plan_prepared(statement).await?;
        let mut seen = HashSet::new();
        for field in logical.schema().fields() {
            let name = display_name(field.name());
            if !seen.insert(name.to_string()) {
                return Err(SqlError::DuplicateColumn(name.to_string()));
            }
        }
        // A column named beside a `*` was planned under a hidden suffix; the view's readers
        // know it by its name.
        if logical
            .schema()
            .fields()
            .iter()
            .all(|f| display_name(f.name()) == f.name())
        {
            return Ok(logical);
        }
        let named: Vec<datafusion::logical_expr::Expr> = logical
            .schema()
            .iter()
            .map(|(qualifier, field)| {
                datafusion::logical_expr::col(datafusion::common::Column::from((qualifier, field)))
                    .alias(display_name(field.name()))
            })
            .collect();
        Ok(datafusion::logical_expr::LogicalPlanBuilder::from(logical)
            .project(named)?
            .build()?)
    }

    /// The view's query as `pg_get_viewdef` prints it, from its stored SQL.
    pub fn stored_query_text(create_sql: &str) -> String {
        match crate::parse::parse(create_sql)
            .ok()
            .and_then(|mut s| s.pop())
        {
            Some(crate::statement::Statement::CreateView(view)) => {
                format!(
                    " {};",
                    crate::parse::written_as_asof(view.create.query.to_string())
                )
            }
            _ => String::new(),
        }
    }
}

/// `CREATE INDEX [name] ON relation (column, …)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateIndex {
    /// The index's name within its relation's schema (`None`: derived from the columns).
    pub name: Option<String>,
    /// The relation indexed (the coordinator qualifies it before the SQL is stored).
    pub on: ObjectRef,
    /// The indexed columns, in key order.
    pub columns: Vec<String>,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
    /// `UNIQUE`: no two rows may have the same key without a NULL in it.
    pub unique: bool,
    create: ast::CreateIndex,
}

impl CreateIndex {
    pub(crate) fn from_sql(create: ast::CreateIndex) -> Result<CreateIndex, SqlError> {
        if create.predicate.is_some() || !create.include.is_empty() {
            return Err(SqlError::Unsupported("partial and covering indexes".into()));
        }
        if create.nulls_distinct == Some(false) {
            return Err(SqlError::Unsupported("UNIQUE NULLS NOT DISTINCT".into()));
        }
        let columns = create
            .columns
            .iter()
            .map(|c| match &c.column.expr {
                SqlExpr::Identifier(ident) => Ok(fold_ident(ident)),
                other => Err(SqlError::Unsupported(format!(
                    "index on expression {other}"
                ))),
            })
            .collect::<Result<Vec<_>, _>>()?;
        if columns.is_empty() {
            return Err(SqlError::InvalidStatement(
                "an index needs at least one column".into(),
            ));
        }
        let name = match &create.name {
            Some(name) => match object_ref(name)? {
                ObjectRef { schema: None, name } => Some(name),
                ObjectRef { .. } => {
                    return Err(SqlError::Syntax(format!(
                        "an index name cannot be qualified (\"{name}\"): an index lives in the schema of its relation"
                    )))
                }
            },
            None => None,
        };
        Ok(CreateIndex {
            name,
            on: object_ref(&create.table_name)?,
            columns,
            if_not_exists: create.if_not_exists,
            unique: create.unique,
            create,
        })
    }

    /// The statement's SQL, on [`Self::on`].
    pub fn to_sql(&self) -> String {
        let mut create = self.create.clone();
        create.table_name = object_name(&self.on);
        ast::Statement::CreateIndex(create).to_string()
    }

    /// The index with its column `column` called `new_name`.
    pub fn with_column_renamed(mut self, column: &str, new_name: &str) -> CreateIndex {
        for (indexed, name) in self.create.columns.iter_mut().zip(&mut self.columns) {
            if name == column {
                indexed.column.expr = SqlExpr::Identifier(ast::Ident::new(new_name));
                *name = new_name.to_string();
            }
        }
        self
    }
}

/// `CREATE SCHEMA [IF NOT EXISTS] name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateSchema {
    /// The schema's name.
    pub name: String,
    /// `IF NOT EXISTS`.
    pub if_not_exists: bool,
}

impl CreateSchema {
    pub(crate) fn from_sql(name: SchemaName, if_not_exists: bool) -> Result<Self, SqlError> {
        let name = match &name {
            SchemaName::Simple(name) | SchemaName::NamedAuthorization(name, _) => {
                match object_ref(name)? {
                    ObjectRef { schema: None, name } => name,
                    ObjectRef { .. } => {
                        return Err(SqlError::Unsupported(format!(
                            "CREATE SCHEMA {name}: schemas of other databases"
                        )))
                    }
                }
            }
            SchemaName::UnnamedAuthorization(role) => fold_ident(role),
        };
        Ok(CreateSchema {
            name,
            if_not_exists,
        })
    }
}

/// `DROP kind [IF EXISTS] name, … [CASCADE]` (`DROP SOURCE` also takes options).
#[derive(Debug, Clone, PartialEq)]
pub struct Drop {
    /// What kind of object the names name.
    pub kind: ObjectKind,
    /// The objects.
    pub names: Vec<ObjectRef>,
    /// `IF EXISTS`.
    pub if_exists: bool,
    /// `CASCADE`: drop what depends on them too.
    pub cascade: bool,
    /// `WITH (…)` options (`DROP SOURCE … WITH (drop_slot = true)`).
    pub options: Vec<(String, String)>,
}

impl Drop {
    pub(crate) fn from_sql(
        object_type: ObjectType,
        if_exists: bool,
        names: &[ObjectName],
        cascade: bool,
    ) -> Result<Self, SqlError> {
        let kind = match object_type {
            ObjectType::Table => ObjectKind::Table,
            ObjectType::View => ObjectKind::View,
            ObjectType::MaterializedView => ObjectKind::MaterializedView,
            ObjectType::Index => ObjectKind::Index,
            ObjectType::Schema => ObjectKind::Schema,
            other => return Err(SqlError::Unsupported(format!("DROP {other}"))),
        };
        Ok(Drop {
            kind,
            names: names.iter().map(object_ref).collect::<Result<_, _>>()?,
            if_exists,
            cascade,
            options: Vec::new(),
        })
    }
}

/// `COMMENT ON … IS 'text' | NULL`.
#[derive(Debug, Clone, PartialEq)]
pub struct Comment {
    /// What is described.
    pub target: CommentTarget,
    /// The text (`None`: remove the comment).
    pub text: Option<String>,
}

/// What a `COMMENT ON` describes.
#[derive(Debug, Clone, PartialEq)]
pub enum CommentTarget {
    /// A table, view, materialized view, index or schema.
    Object {
        /// Its kind.
        kind: ObjectKind,
        /// Its name.
        name: ObjectRef,
    },
    /// A column of a relation.
    Column {
        /// The relation.
        relation: ObjectRef,
        /// The column.
        column: String,
    },
}

impl Comment {
    pub(crate) fn from_sql(
        object_type: CommentObject,
        object: &ObjectName,
        text: Option<String>,
    ) -> Result<Self, SqlError> {
        let kind = match object_type {
            CommentObject::Table => Some(ObjectKind::Table),
            CommentObject::View => Some(ObjectKind::View),
            CommentObject::MaterializedView => Some(ObjectKind::MaterializedView),
            CommentObject::Index => Some(ObjectKind::Index),
            CommentObject::Schema => Some(ObjectKind::Schema),
            CommentObject::Column => None,
            other => return Err(SqlError::Unsupported(format!("COMMENT ON {other}"))),
        };
        let target = match kind {
            Some(kind) => CommentTarget::Object {
                kind,
                name: object_ref(object)?,
            },
            None => match object.0.split_last() {
                Some((ObjectNamePart::Identifier(column), relation)) if !relation.is_empty() => {
                    CommentTarget::Column {
                        relation: object_ref(&ObjectName(relation.to_vec()))?,
                        column: fold_ident(column),
                    }
                }
                _ => {
                    return Err(SqlError::Syntax(format!(
                        "column name {object} must be qualified"
                    )))
                }
            },
        };
        Ok(Comment { target, text })
    }
}
