//! Prepared statements: describing a statement's parameters and result columns, and binding
//! parameter values into it.
//!
//! Parameter types are inferred by planning the statement with its `$n` placeholders
//! (DataFusion infers `id = $1` from `id`'s type); a type the client declared wins. Binding
//! replaces each placeholder by a literal of its type, so the bound statement runs through
//! the same path as a simple query.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    visit_expressions_mut, Expr, Statement, Value, ValueWithSpan,
};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::coordinator::{parse, Coordinator};
use crate::error::CoordError;
use crate::naming::name_result_columns;
use crate::response::ExecuteResponse;
use crate::session::{PendingWrites, Session};

/// What a client learns from Describe: parameter types and result columns.
#[derive(Clone, Debug)]
pub struct StatementDesc {
    /// One field per `$n` parameter, in order: its Arrow type, and in its metadata the
    /// Postgres type where Arrow's would lose it (`uuid`, `jsonb`, `varchar`).
    pub parameters: Vec<FieldRef>,
    /// The result columns, if the statement returns rows.
    pub columns: Option<SchemaRef>,
}

/// The fields planning inferred for the `$n` placeholders, by name.
type ParameterFields = HashMap<String, Option<FieldRef>>;

/// The highest `$n` in the statement.
fn parameter_count(statement: &Statement) -> usize {
    let mut count = 0;
    let mut copy = statement.clone();
    let _ = visit_expressions_mut(&mut copy, |expr| {
        if let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = expr
        {
            if let Some(n) = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()) {
                count = count.max(n);
            }
        }
        ControlFlow::<()>::Continue(())
    });
    count
}

/// Replaces every `$n` by the n-th value, cast to its type (`None` is NULL).
pub fn bind_parameters(
    statement: &crate::Statement,
    values: &[(Option<String>, DataType)],
) -> Result<crate::Statement, CoordError> {
    match statement {
        crate::Statement::Sql(statement) => {
            bind_sql_parameters(statement, values).map(crate::Statement::Sql)
        }
        other => Ok(other.clone()),
    }
}

fn bind_sql_parameters(
    statement: &Statement,
    values: &[(Option<String>, DataType)],
) -> Result<Statement, CoordError> {
    let mut bound = statement.clone();
    let mut failure = None;
    let _ = visit_expressions_mut(&mut bound, |expr| {
        let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = expr
        else {
            return ControlFlow::Continue(());
        };
        let index = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
        match index.and_then(|n| values.get(n.wrapping_sub(1))) {
            Some((value, data_type)) => match literal(value.as_deref(), data_type) {
                Ok(literal) => *expr = literal,
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            },
            None => {
                failure = Some(CoordError::InvalidStatement(format!(
                    "there is no parameter {p}"
                )));
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => {
            // Bound values are literals now: spell them as DataFusion reads them.
            crate::postgres_literals::normalize_literals(&mut bound);
            Ok(bound)
        }
    }
}

/// A SQL literal of `data_type` with the given text value.
fn literal(value: Option<&str>, data_type: &DataType) -> Result<Expr, CoordError> {
    let type_name = sql_type_name(data_type);
    let text = match value {
        None => format!("CAST(NULL AS {type_name})"),
        Some(v) => {
            let quoted = format!("'{}'", v.replace('\'', "''"));
            match data_type {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
                    quoted
                }
                _ => format!("CAST({quoted} AS {type_name})"),
            }
        }
    };
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(&text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| CoordError::Internal(format!("parameter literal {text}: {e}")))
}

/// Gives each `$n` whose type the client declared that type (`CAST($n AS type)`), so that
/// planning infers the result columns from it as Postgres does (`SELECT $1` with an `int8`
/// parameter returns an `int8` column).
fn type_declared_parameters(
    statement: &mut Statement,
    declared: &[Option<DataType>],
) -> Result<(), CoordError> {
    let mut failure = None;
    let _ = visit_expressions_mut(statement, |expr| {
        let Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) = expr
        else {
            return ControlFlow::Continue(());
        };
        let index = p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok());
        let Some(Some(data_type)) = index.and_then(|n| declared.get(n.wrapping_sub(1))) else {
            return ControlFlow::Continue(());
        };
        let text = format!("CAST({p} AS {})", sql_type_name(data_type));
        match Parser::new(&PostgreSqlDialect {})
            .try_with_sql(&text)
            .and_then(|mut parser| parser.parse_expr())
        {
            Ok(typed) => *expr = typed,
            Err(e) => {
                failure = Some(CoordError::Internal(format!("typed parameter {text}: {e}")));
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// The SQL name of an Arrow type, for casts.
fn sql_type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 | DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INTEGER".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => "BIGINT".into(),
        DataType::Float16 | DataType::Float32 => "REAL".into(),
        DataType::Float64 => "DOUBLE PRECISION".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("NUMERIC({p},{s})"),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP WITH TIME ZONE".into(),
        DataType::Time32(_) | DataType::Time64(_) => "TIME".into(),
        DataType::Interval(_) => "INTERVAL".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BYTEA".into(),
        DataType::List(item) | DataType::LargeList(item) => {
            format!("{}[]", sql_type_name(item.data_type()))
        }
        _ => "TEXT".into(),
    }
}

impl Coordinator {
    /// Parameter types and result columns of a statement with `$n` placeholders.
    /// `declared` holds the types the client gave (by position; `None` = infer).
    pub async fn describe(
        &self,
        session: &mut Session,
        statement: &crate::Statement,
        declared: &[Option<FieldRef>],
    ) -> Result<StatementDesc, CoordError> {
        session.check_not_failed(statement)?;
        let statement = match statement {
            crate::Statement::Sql(statement) => statement,
            crate::Statement::FetchWithTimeout { fetch, .. } => fetch.as_ref(),
            crate::Statement::Subscribe(subscribe) => {
                return Ok(StatementDesc {
                    parameters: Vec::new(),
                    columns: Some(self.subscription_schema(session, subscribe).await?),
                });
            }
            crate::Statement::ShowCreateSource(name) => {
                let columns =
                    match self.show_create(session, name, Some(storage::ItemKind::Source))? {
                        ExecuteResponse::Rows { schema, .. } => Some(schema),
                        _ => None,
                    };
                return Ok(StatementDesc {
                    parameters: Vec::new(),
                    columns,
                });
            }
            _ => {
                return Ok(StatementDesc {
                    parameters: Vec::new(),
                    columns: None,
                })
            }
        };
        let mut statement = self.prepare(session, statement.clone());
        let declared_types: Vec<Option<DataType>> = declared
            .iter()
            .map(|f| f.as_ref().map(|f| f.data_type().clone()))
            .collect();
        type_declared_parameters(&mut statement, &declared_types)?;
        let count = parameter_count(&statement).max(declared.len());
        let (inferred, columns) = self.infer(session, &statement).await?;
        let parameters = (0..count)
            .map(|i| {
                declared
                    .get(i)
                    .cloned()
                    .flatten()
                    .or_else(|| inferred.get(&format!("${}", i + 1)).cloned().flatten())
                    .unwrap_or_else(|| Arc::new(Field::new("", DataType::Utf8, true)))
            })
            .collect();
        Ok(StatementDesc {
            parameters,
            columns,
        })
    }

    async fn infer(
        &self,
        session: &mut Session,
        statement: &Statement,
    ) -> Result<(ParameterFields, Option<SchemaRef>), CoordError> {
        let plan_types = |plan: &datafusion::logical_expr::LogicalPlan| plan.get_parameter_fields();
        let context = self.query_context(session, &PendingWrites::default());
        match statement {
            Statement::Query(query) => {
                let mut query = query.clone();
                name_result_columns(&mut query);
                let plan = self
                    .plan_statement(&context.state, Statement::Query(query))
                    .await?;
                // The analyzed plan has the types the rows will have (sum(bigint) is numeric).
                let analyzed = context.state.optimize(&plan)?;
                let columns = crate::query_context::displayed_schema(&Arc::new(
                    analyzed.schema().as_arrow().clone(),
                ));
                Ok((plan_types(&plan)?, Some(columns)))
            }
            Statement::Insert(insert) => {
                let mut insert = insert.clone();
                insert.on = None;
                if let datafusion::sql::sqlparser::ast::TableObject::TableName(name) = &insert.table
                {
                    let (_, codecs) = self.writable_table(session, name)?;
                    crate::statement_checks::normalize_insert(&mut insert, &codecs)?;
                }
                let plan = self
                    .plan_statement(&context.state, Statement::Insert(insert))
                    .await?;
                Ok((plan_types(&plan)?, None))
            }
            Statement::Update(update) => {
                let update = self.update_query(session, update)?;
                self.infer_rewritten(&update.query).await
            }
            Statement::Delete(delete) => {
                let (_, _, query) = self.delete_query(session, delete)?;
                self.infer_rewritten(&query).await
            }
            Statement::Fetch { name, .. } => Ok((
                HashMap::new(),
                session.cursor_schema(&crate::naming::fold_ident(name)),
            )),
            Statement::ShowVariable { .. }
            | Statement::ShowTables { .. }
            | Statement::ShowViews { .. }
            | Statement::ShowCreate { .. }
            | Statement::Explain { .. } => match self
                .execute(session, crate::Statement::Sql(statement.clone()))
                .await?
            {
                ExecuteResponse::Rows { schema, .. } => Ok((HashMap::new(), Some(schema))),
                _ => Ok((HashMap::new(), None)),
            },
            _ => Ok((HashMap::new(), None)),
        }
    }

    async fn infer_rewritten(
        &self,
        query: &str,
    ) -> Result<(ParameterFields, Option<SchemaRef>), CoordError> {
        let statement = parse(query)?
            .pop()
            .ok_or_else(|| CoordError::Internal("rewritten statement vanished".into()))?;
        let plan = self.plan_statement(&self.base_state, statement).await?;
        Ok((plan.get_parameter_fields()?, None))
    }
}
