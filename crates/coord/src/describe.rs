//! Describe: the parameter types and result columns of a prepared statement.
//!
//! Parameter types are inferred by planning the statement with its `$n` placeholders (the
//! SQL front end's planner infers `id = $1` from `id`'s type); a type the client declared
//! wins. Statements whose columns only running them tells (`SHOW`, `EXPLAIN`) are run.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, FieldRef, SchemaRef};
use sql::{ParameterTypes, Statement};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
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

impl Coordinator {
    /// Parameter types and result columns of a statement with `$n` placeholders.
    /// `declared` holds the types the client gave (by position; `None` = infer).
    pub async fn describe(
        &self,
        session: &mut Session,
        statement: &Statement,
        declared: &[Option<FieldRef>],
    ) -> Result<StatementDesc, CoordError> {
        session.check_not_failed(statement)?;
        if let Statement::Subscribe(subscribe) = statement {
            return Ok(StatementDesc {
                parameters: Vec::new(),
                columns: Some(self.subscription_schema(session, subscribe).await?),
            });
        }
        let declared_types: Vec<Option<DataType>> = declared
            .iter()
            .map(|f| f.as_ref().map(|f| f.data_type().clone()))
            .collect();
        let statement = statement.with_declared_types(&declared_types)?;
        let count = statement.parameter_count().max(declared.len());
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

    /// The parameter types planning infers and the result columns of `statement`.
    async fn infer(
        &self,
        session: &mut Session,
        statement: &Statement,
    ) -> Result<(ParameterTypes, Option<SchemaRef>), CoordError> {
        match statement {
            Statement::Fetch(fetch) => {
                return Ok((ParameterTypes::new(), session.cursor_schema(&fetch.cursor)))
            }
            Statement::Show(_) | Statement::Explain(_) => {
                return match Box::pin(self.execute(session, statement.clone())).await? {
                    ExecuteResponse::Rows { schema, .. } => {
                        Ok((ParameterTypes::new(), Some(schema)))
                    }
                    _ => Ok((ParameterTypes::new(), None)),
                };
            }
            _ => {}
        }
        let context = self.query_context(session, &PendingWrites::default());
        let ctx = context.plan_context();
        match statement {
            Statement::Select(query) => {
                let (parameters, columns) = query.describe(&ctx).await?;
                Ok((parameters, Some(columns)))
            }
            Statement::Insert(insert) => {
                let (_, codecs) = self.writable_table(session, &insert.table)?;
                let parameters = insert.describe(&ctx, &codecs.insert_target()).await?;
                Ok((parameters, None))
            }
            Statement::Update(update) => {
                let (table, _) = self.writable_table(session, &update.table)?;
                let plan = update.plan(&ctx, &table.name).await?;
                Ok((sql::parameter_types(&plan)?, None))
            }
            Statement::Delete(delete) => {
                let (table, _) = self.writable_table(session, &delete.table)?;
                let plan = delete.plan(&ctx, &table.name).await?;
                Ok((sql::parameter_types(&plan)?, None))
            }
            _ => Ok((ParameterTypes::new(), None)),
        }
    }
}
