//! Sinks (`CREATE SINK s FROM obj WITH (connector = …)`): an object's changes delivered to
//! files, a Kafka topic or a table of another PostgreSQL, exactly once.
//!
//! The coordinator checks the sink's options and target, records it and starts logging the
//! changes of what it watches; `pipelines` delivers them (see [`pipelines::Sinks`]).

use std::time::Duration;

use connectors::{ConnectorError, Format, SinkSpec, SourceOptions};
use repr::{GlobalId, ItemKind};

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::ddl::stored_name;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use sql::{CreateSink, Subscribe, SubscribeTarget};

/// History a sink's log keeps beyond what the target confirmed (folded every quarter of it).
const LOG_RETENTION: Duration = Duration::from_secs(60);

/// How long `CREATE SINK` waits for the target to answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

impl Coordinator {
    /// `CREATE SINK`.
    pub(crate) async fn create_sink(
        &self,
        session: &mut Session,
        mut create: CreateSink,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let from = self.resolve_watched(session, &mut create.from)?;
        let (schema, name) = stored_name(&create.name);
        let _sequencer = self.lock_sequencer().await?;
        if self.exists(session, &schema, &name, create.if_not_exists)? {
            return Ok(ExecuteResponse::command("CREATE SINK"));
        }
        // Options and the target are checked before anything is recorded.
        let watched = Subscribe {
            target: SubscribeTarget::Object(create.from.clone()),
            snapshot: true,
            progress: false,
            as_of: None,
        };
        let columns = self
            .plan_subscription(session, &watched)
            .await?
            .schema()
            .clone();
        let spec = sink_spec(&create, columns, String::new())?;
        let options = SourceOptions::new(create.options.clone());
        let mut connection =
            tokio::time::timeout(CONNECT_TIMEOUT, connectors::open_sink(&spec, &options))
                .await
                .map_err(|_| {
                    CoordError::ConnectionFailure(format!(
                        "the sink's target did not answer within {} s",
                        CONNECT_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(sink_error)?;
        connection.resume().await.map_err(sink_error)?;
        drop(connection);
        let create_sql = create.to_string();
        let id = self.record_item(
            session,
            &schema,
            &name,
            ItemKind::Sink,
            &create_sql,
            vec![from.id],
        )?;
        let undo = self.undo_if_abandoned(session, id);
        let installed = self.install_sink(id, &create_sql, &create, from.id).await;
        undo.finished();
        if let Err(e) = installed {
            self.undo_create(id)?;
            return Err(e);
        }
        Ok(ExecuteResponse::command("CREATE SINK"))
    }

    /// Puts sink `id` into the catalog, starts logging the changes of `from` and delivering
    /// them. The caller holds the sequencer.
    pub(crate) async fn install_sink(
        &self,
        id: GlobalId,
        create_sql: &str,
        create: &CreateSink,
        from: GlobalId,
    ) -> Result<(), CoordError> {
        let (schema, name) = stored_name(&create.name);
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name,
                schema,
                kind: ItemKind::Sink,
                create_sql: create_sql.to_string(),
                depends_on: vec![from],
                details: ItemDetails::Sink { from },
            });
        let log = self
            .start_logger(self.sinks.logs(), id, &create.from, LOG_RETENTION)
            .await?;
        let identity = format!("{}/{id}", create.name);
        let spec = sink_spec(create, log.query_schema.clone(), identity)?;
        self.sinks.start(
            id,
            create.option("connector").unwrap_or_default().to_string(),
            log,
            spec,
            create.options.clone(),
        );
        Ok(())
    }

    /// Starts every sink again after a restart.
    pub(crate) async fn recover_sinks(
        &self,
        items: &[storage::CatalogItem],
    ) -> Result<(), CoordError> {
        for item in items.iter().filter(|i| i.kind == ItemKind::Sink) {
            let Some(sql::Statement::CreateSink(create)) = sql::parse(&item.create_sql)?.pop()
            else {
                return Err(CoordError::Internal(format!(
                    "stored SQL of {} is not CREATE SINK",
                    item.name
                )));
            };
            let from =
                item.depends_on.first().copied().ok_or_else(|| {
                    CoordError::Internal(format!("sink {} reads nothing", item.name))
                })?;
            self.install_sink(item.id, &item.create_sql, &create, from)
                .await?;
        }
        Ok(self.sinks.logs().remove_orphans()?)
    }
}

/// What the connection of sink `create` over rows of `schema` needs to know of it;
/// `identity` (its name and catalog id) tells it apart from a sink of the same name created
/// before.
fn sink_spec(
    create: &CreateSink,
    schema: datafusion::arrow::datatypes::SchemaRef,
    identity: String,
) -> Result<SinkSpec, CoordError> {
    let (_, name) = stored_name(&create.name);
    let default_envelope = if create.option("connector") == Some("postgres") {
        "UPSERT"
    } else {
        "PLAIN"
    };
    let format = Format::parse(
        create.format.as_deref().unwrap_or(default_envelope),
        create.encode.as_deref().unwrap_or("JSON"),
    )
    .map_err(sink_error)?;
    SinkSpec::new(identity, name, schema, create.option("key"), format).map_err(sink_error)
}

/// A connector's error as `CREATE SINK` reports it.
fn sink_error(e: ConnectorError) -> CoordError {
    match e {
        ConnectorError::Upstream(message) => CoordError::ConnectionFailure(message),
        other => CoordError::InvalidSourceOption(other.to_string()),
    }
}
