//! Sources: `CREATE SOURCE` and `DROP SOURCE`, and running each source's connector.
//!
//! A source is planned like a table (its declared columns, or the connector's own) and
//! installed like one: a collection with an input and an arrangement in compute, written to
//! the same log and timeline as tables, so views read sources and tables alike. Users cannot
//! write to it; its connector does (see `ingest`), and every batch is logged together with
//! the connector's position after it. On restart the log gives back the rows and the last
//! position, and the connector resumes there: nothing lost, nothing twice.

mod ingest;
mod registry;

use std::sync::Arc;

use connectors::{SourceContext, SourceOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::sql::sqlparser::ast::helpers::stmt_create_table::CreateTableBuilder;
use repr::{GlobalId, RelationDesc};
use storage::ItemKind;

pub(crate) use registry::{SourceRegistry, SourceStats};

use crate::coordinator::Coordinator;
use crate::ddl::{qualified_name, stored_name, PlannedTable};
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::source_statements::{CreateSource, DropSource};

/// The connectors that make up their own rows and take no FORMAT or INCLUDE.
const GENERATORS: [&str; 3] = ["counter", "datagen", "nexmark"];

impl Coordinator {
    /// `CREATE SOURCE`: plans the source, checks its options by opening its connector,
    /// records it and starts it.
    pub(crate) async fn create_source(
        &self,
        session: &mut Session,
        mut create: CreateSource,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = qualified_name(&self.name_for_new_item(session, &create.name)?);
        let create_sql = create.to_string();
        let planned = self.plan_source(&create)?;
        if create.watermark.is_some() {
            session.notice(
                "NOTICE",
                "00000",
                "the source's WATERMARK is recorded but not applied yet: rows are never \
                 treated as late"
                    .to_string(),
            );
        }
        let sequencer = self.sequencer.lock().await;
        let created = self.record_table(
            session,
            ItemKind::Source,
            &create_sql,
            planned,
            create.if_not_exists,
        )?;
        drop(sequencer);
        if let Some(id) = created {
            self.start_source(id, &create, None)?;
        }
        Ok(ExecuteResponse::command("CREATE SOURCE"))
    }

    /// `DROP SOURCE`: stops the sources and drops them with what reads from them (CASCADE).
    pub(crate) async fn drop_source(
        &self,
        session: &mut Session,
        drop: DropSource,
    ) -> Result<ExecuteResponse, CoordError> {
        let options = SourceOptions::new(drop.options.clone());
        // No connector holds upstream resources yet; `drop_slot` is accepted for the
        // Postgres CDC connector's replication slot and must be a boolean.
        options
            .parsed::<bool>("drop_slot")
            .map_err(|e| CoordError::InvalidStatement(e.to_string()))?;
        options
            .reject_unknown("DROP SOURCE")
            .map_err(|e| CoordError::InvalidStatement(e.to_string()))?;
        self.drop_items(
            session,
            ItemKind::Source,
            drop.if_exists,
            drop.names,
            drop.cascade,
        )
        .await
    }

    /// The source's relation: its declared columns, or the columns its connector produces.
    pub(crate) fn plan_source(&self, create: &CreateSource) -> Result<PlannedTable, CoordError> {
        let options = SourceOptions::new(create.options.clone());
        let connector = options.connector().map(str::to_lowercase).ok_or_else(|| {
            CoordError::InvalidStatement("CREATE SOURCE needs WITH (connector = '…')".into())
        })?;
        if GENERATORS.contains(&connector.as_str())
            && (create.format.is_some() || !create.include.is_empty())
        {
            return Err(CoordError::InvalidStatement(format!(
                "connector \"{connector}\" makes up its rows: it takes no FORMAT or INCLUDE"
            )));
        }
        if !create.include.is_empty() || create.format.is_some() {
            return Err(CoordError::Unsupported(
                "FORMAT and INCLUDE (no connector that reads them is available yet)".into(),
            ));
        }
        let planned = if create.columns.is_empty() {
            if !create.constraints.is_empty() {
                return Err(CoordError::InvalidStatement(
                    "a source without declared columns cannot have constraints".into(),
                ));
            }
            let schema = connectors::source_schema(&options).map_err(connector_error)?;
            let (schema_name, name) = stored_name(&create.name)?;
            PlannedTable {
                schema: schema_name,
                name,
                desc: RelationDesc {
                    schema,
                    primary_key: None,
                },
                defaults: Default::default(),
                default_sql: Default::default(),
            }
        } else {
            let table = CreateTableBuilder::new(create.name.clone())
                .columns(create.columns.clone())
                .constraints(create.constraints.clone())
                .build();
            self.plan_table(&table)?
        };
        if let Some((column, _)) = &create.watermark {
            let column = crate::naming::fold_ident(column);
            if planned.desc.schema.index_of(&column).is_err() {
                return Err(CoordError::UnknownColumn(format!(
                    "column \"{column}\" named in WATERMARK does not exist"
                )));
            }
        }
        // Opening the connector checks every option and the columns.
        connectors::open_source(&options, SourceContext::new(planned.desc.schema.clone()))
            .map_err(connector_error)?;
        Ok(planned)
    }

    /// Starts source `id`'s connector, resuming after `resume`.
    pub(crate) fn start_source(
        &self,
        id: GlobalId,
        create: &CreateSource,
        resume: Option<String>,
    ) -> Result<(), CoordError> {
        let options = SourceOptions::new(create.options.clone());
        let connector = options.connector().unwrap_or_default().to_lowercase();
        let stop = self.sources.register(id, &connector, resume.clone());
        let schema: SchemaRef = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .map(|codecs| codecs.schema.clone())
            .ok_or_else(|| CoordError::Internal(format!("source {id} is not installed")))?;
        let context = SourceContext {
            resume: resume.clone(),
            ..SourceContext::new(schema)
        };
        let reader = match connectors::open_source(&options, context) {
            Ok(reader) => reader,
            Err(e) => {
                let message = e.to_string();
                self.sources.update(id, |stats| {
                    stats.status = "failed";
                    stats.last_error = Some(message);
                });
                return Err(connector_error(e));
            }
        };
        ingest::spawn(
            Arc::downgrade(&self.arc()?),
            id,
            create.name.to_string(),
            reader,
            stop,
        );
        Ok(())
    }

    /// Stops source `id`'s connector (it is being dropped).
    pub(crate) fn stop_source(&self, id: GlobalId) {
        self.sources.remove(id);
    }
}

/// A connector's error as the coordinator reports it.
fn connector_error(e: connectors::ConnectorError) -> CoordError {
    CoordError::InvalidSourceOption(e.to_string())
}
