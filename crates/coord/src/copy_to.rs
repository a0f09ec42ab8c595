//! `COPY table | (query) TO STDOUT [(FORMAT text | csv, DELIMITER, NULL, HEADER)]`: the rows of
//! a relation or query, read at one consistent time, as COPY data (psql's `\copy … to`),
//! sent as it is computed.

use sql::{CopySource, CopyTo, Query};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;

impl Coordinator {
    pub(crate) async fn copy_to(
        &self,
        session: &mut Session,
        copy: CopyTo,
    ) -> Result<ExecuteResponse, CoordError> {
        let query = match copy.source {
            CopySource::Query(query) => query,
            CopySource::Table { name, columns } => {
                let item = self.resolve_item(session, &name)?;
                Query::scan(&item.schema, &item.name, &columns)?
            }
        };
        let (schema, rows) = self.stream_query(session, &query).await?;
        Ok(ExecuteResponse::CopyOut {
            schema,
            rows,
            options: copy.options,
        })
    }
}
