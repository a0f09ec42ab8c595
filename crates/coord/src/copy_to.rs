//! `COPY table | (query) TO STDOUT [(FORMAT text | csv, DELIMITER, NULL, HEADER)]`: the rows of
//! a relation or query, read at one consistent time, as COPY data (psql's `\copy … to`).

use datafusion::sql::sqlparser::ast::{CopySource, CopyTarget, Statement};

use crate::coordinator::{parse, Coordinator};
use crate::copy::CopyOptions;
use crate::error::CoordError;
use crate::naming::{name_result_columns, sql_ident};
use crate::response::ExecuteResponse;
use crate::session::Session;

impl Coordinator {
    pub(crate) async fn copy_to(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        let Statement::Copy {
            source,
            target,
            options,
            legacy_options,
            ..
        } = statement
        else {
            return Err(CoordError::Internal("not a COPY".into()));
        };
        if !matches!(target, CopyTarget::Stdout) {
            return Err(CoordError::Unsupported(
                "COPY TO a file or program (COPY … TO STDOUT, psql's \\copy, works)".into(),
            ));
        }
        let options = CopyOptions::from_statement(options, legacy_options)?;
        let mut query = match source {
            CopySource::Query(query) => *query,
            CopySource::Table {
                table_name,
                columns,
            } => {
                let item = self.resolve_item(session, &table_name)?;
                let columns = if columns.is_empty() {
                    "*".to_string()
                } else {
                    columns
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                let sql = format!(
                    "SELECT {columns} FROM {}.{}",
                    sql_ident(&item.schema),
                    sql_ident(&item.name)
                );
                match parse(&sql)?.pop() {
                    Some(Statement::Query(query)) => *query,
                    _ => return Err(CoordError::Internal(format!("COPY query {sql}"))),
                }
            }
        };
        name_result_columns(&mut query);
        let (schema, batches) = self
            .run_query(session, Statement::Query(Box::new(query)))
            .await?;
        Ok(ExecuteResponse::CopyOut {
            schema,
            batches,
            options,
        })
    }
}
