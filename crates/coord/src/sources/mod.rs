//! Sources: `CREATE SOURCE` and `DROP SOURCE`, and running each source's connector.
//!
//! A source is planned like a table (its declared columns, or the connector's own) and
//! installed like one: a collection with an input and an arrangement in compute, written to
//! the same log and timeline as tables, so views read sources and tables alike. An
//! append-only source (no key, plain records) is a stream instead: its rows go to a stream
//! log of their own and to the dataflows that read it, and are not arranged
//! ([`pipelines::Streams`]). Users cannot write to it; its connector does (the ingest loop of
//! `pipelines`, see [`pipelines::spawn_ingest`]), and every batch is logged together with
//! the connector's position after it. On restart the log gives back the rows and the last
//! position, and the connector resumes there: nothing lost, nothing twice.
//!
//! `apply` turns a batch's changes into updates, `commit` commits a batch (the coordinator's
//! side of ingest), `errors` installs the relation of bad records, `tables` holds the tables
//! a CDC source feeds, and `webhook` takes pushed rows.

mod apply;
mod commit;
mod errors;
mod event_time;
mod tables;
mod webhook;

use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use connectors::{
    Envelope, Format, Include, Metadata, OpenedSource, SourceContext, SourceOptions, SourceOutput,
};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use pipelines::{
    SourceWiring, DEFAULT_IDLE_TIMEOUT, ERROR_TABLE_OPTION, IDLE_TIMEOUT_OPTION, LATE_TABLE_OPTION,
};
use repr::{GlobalId, ItemKind, RelationDesc};
use sql::{CreateSource, Drop};

pub(crate) use event_time::watermark_tracker;
pub use webhook::{WebhookError, WebhookReceipt};

use crate::coordinator::Coordinator;
use crate::ddl::{stored_name, PlannedTable};
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;

/// The connectors that connect to an upstream system when opened.
const UPSTREAM_CONNECTORS: [&str; 2] = ["kafka", tables::CDC_CONNECTOR];

/// The connectors that make up their own rows and take no FORMAT or INCLUDE.
const GENERATORS: [&str; 3] = ["counter", "datagen", "nexmark"];

impl Coordinator {
    /// `CREATE SOURCE`: plans the source, checks its options (by opening its connector,
    /// unless it connects upstream), records it and starts it; a source whose connector
    /// cannot start is dropped again.
    pub(crate) async fn create_source(
        &self,
        session: &mut Session,
        mut create: CreateSource,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let error_table = self.resolve_side_table(session, &mut create, &ERROR_TABLE)?;
        let late_table = self.resolve_side_table(session, &mut create, &LATE_TABLE)?;
        let create_sql = create.to_string();
        let planned = self.plan_source(&create)?;
        let sequencer = self.lock_sequencer().await?;
        let created = self.record_table(
            session,
            ItemKind::Source,
            &create_sql,
            planned,
            error_table.into_iter().chain(late_table).collect(),
            create.if_not_exists,
        )?;
        drop(sequencer);
        if let Some(id) = created {
            if let Err(e) = self.start_source(id, &create, None, None) {
                // The connector could not start (a refused upstream connection): the source
                // is not created.
                self.drop_items(
                    session,
                    ItemKind::Source,
                    true,
                    vec![create.name.clone()],
                    true,
                )
                .await?;
                return Err(e);
            }
        }
        Ok(ExecuteResponse::command("CREATE SOURCE"))
    }

    /// `DROP SOURCE`: stops the sources and drops them with what reads from them (CASCADE).
    pub(crate) async fn drop_source(
        &self,
        session: &mut Session,
        drop: Drop,
    ) -> Result<ExecuteResponse, CoordError> {
        let options = SourceOptions::new(drop.options.clone());
        let drop_slot = options
            .parsed::<bool>("drop_slot")
            .map_err(|e| CoordError::invalid(e.to_string()))?
            .unwrap_or(false);
        options
            .reject_unknown("DROP SOURCE")
            .map_err(|e| CoordError::invalid(e.to_string()))?;
        let mut slots = Vec::new();
        if drop_slot {
            for name in &drop.names {
                if let Ok(item) = self.resolve_item(session, name) {
                    let create = tables::stored_create(&item)?;
                    slots.push(connector_options(&create));
                }
            }
        }
        let response = self
            .drop_items(
                session,
                ItemKind::Source,
                drop.if_exists,
                drop.names,
                drop.cascade,
            )
            .await?;
        for options in slots {
            if options.connector() == Some(tables::CDC_CONNECTOR) {
                tables::drop_replication_slot(options).await?;
            }
        }
        Ok(response)
    }

    /// The source's relation: its declared columns, or the columns its connector produces.
    pub(crate) fn plan_source(&self, create: &CreateSource) -> Result<PlannedTable, CoordError> {
        let options = connector_options(create);
        let connector = options
            .connector()
            .map(str::to_lowercase)
            .ok_or_else(|| CoordError::invalid("CREATE SOURCE needs WITH (connector = '…')"))?;
        if GENERATORS.contains(&connector.as_str())
            && (create.format.is_some() || !create.include().is_empty())
        {
            return Err(CoordError::invalid(format!(
                "connector \"{connector}\" makes up its rows: it takes no FORMAT or INCLUDE"
            )));
        }
        let planned = if !create.has_declared_columns() {
            if create.has_constraints() {
                return Err(CoordError::invalid(
                    "a source without declared columns cannot have constraints",
                ));
            }
            let schema = connectors::source_schema(&options).map_err(connector_error)?;
            let (schema_name, name) = stored_name(&create.name);
            PlannedTable {
                schema: schema_name,
                name,
                desc: RelationDesc {
                    schema,
                    primary_key: None,
                },
                defaults: Default::default(),
                default_sql: Default::default(),
                is_stream: false,
                watermark: None,
            }
        } else {
            PlannedTable::new(&create.name, create.plan_columns(&self.base_state)?)
        };
        let include = source_include(create)?;
        let mut planned = with_include_columns(planned, &include)?;
        planned.watermark = create.watermark(&self.base_state)?;
        let format = source_format(create)?;
        // Only inserts ever reach a source without a key read as plain records: it is a
        // stream. (A CDC source feeds tables, which are arranged.)
        planned.is_stream = planned.desc.primary_key.is_none()
            && connector != tables::CDC_CONNECTOR
            && format
                .as_ref()
                .is_none_or(|f| f.envelope == Envelope::Plain);
        self.event_time(create, &planned.desc.schema, None)?;
        // Opening the connector checks every option and the columns.
        let mut context = SourceContext {
            format,
            include,
            ..SourceContext::new(planned.desc.schema.clone())
        };
        context.outputs[0].key = planned.desc.primary_key.clone();
        // Not a connector that connects upstream, though: that is checked when it starts
        // (one connection, not two in a row for the same replication slot).
        if !UPSTREAM_CONNECTORS.contains(&connector.as_str()) {
            open_blocking(&options, context)
                .map(drop)
                .map_err(connector_error)?;
        }
        Ok(planned)
    }

    /// Starts source `id`'s connector, resuming after `resume` with event-time watermark
    /// `watermark`.
    pub(crate) fn start_source(
        &self,
        id: GlobalId,
        create: &CreateSource,
        resume: Option<String>,
        watermark: Option<i64>,
    ) -> Result<(), CoordError> {
        let options = connector_options(create);
        let connector = options.connector().unwrap_or_default().to_lowercase();
        let (stop, exited) = self.sources.register(id, &connector, resume.clone());
        let tables = self.source_tables(id);
        let mut wiring = self.source_wiring(id, create, &tables, stop);
        let (schema, key): (SchemaRef, _) = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&id)
            .map(|codecs| {
                let key = codecs.key.as_ref().map(|(columns, _)| columns.clone());
                (codecs.schema.clone(), key)
            })
            .ok_or_else(|| CoordError::Internal(format!("source {id} is not installed")))?;
        wiring.event_time = self.event_time(create, &schema, watermark)?;
        wiring.idle_timeout = SourceOptions::new(create.options.clone())
            .duration(IDLE_TIMEOUT_OPTION)
            .ok()
            .flatten()
            .unwrap_or(DEFAULT_IDLE_TIMEOUT);
        if let Some(watermark) = watermark {
            self.sources.set_watermark(id, watermark);
        }
        let mut context = SourceContext {
            format: source_format(create)?,
            include: source_include(create)?,
            resume: resume.clone(),
            ..SourceContext::new(schema)
        };
        context.outputs[0].key = key;
        context
            .outputs
            .extend(tables.into_iter().map(|(_, output)| output));
        let durable = context.durable.clone();
        let opened = match open_blocking(&options, context) {
            Ok(opened) => opened,
            Err(e) => {
                let message = e.to_string();
                self.sources.update(id, |stats| stats.fail(message));
                return Err(connector_error(e));
            }
        };
        match opened {
            OpenedSource::Reader(reader) => pipelines::spawn_ingest(
                Arc::downgrade(&self.arc()?),
                wiring,
                reader,
                exited,
                durable,
            ),
            OpenedSource::Webhook(webhook) => self.sources.set_webhook(id, webhook, wiring),
        }
        Ok(())
    }

    /// Stops source `id`'s connector (it is being dropped).
    pub(crate) fn stop_source(&self, id: GlobalId) {
        self.sources.remove(id);
    }

    /// Where source `id`'s batches go: itself, then the tables it feeds.
    fn source_wiring(
        &self,
        id: GlobalId,
        create: &CreateSource,
        tables: &[(GlobalId, SourceOutput)],
        stop: Arc<AtomicBool>,
    ) -> SourceWiring {
        let catalog = crate::catalog::read(&self.catalog);
        let side_table = |side: &SideTable| {
            let name = option_value(create, side.option)?;
            let (schema, table) = name.split_once('.')?;
            catalog.by_name(schema, table).map(|item| item.id)
        };
        SourceWiring {
            name: catalog
                .get(id)
                .map(|item| item.name.clone())
                .unwrap_or_else(|| create.name.name.clone()),
            outputs: std::iter::once(id)
                .chain(tables.iter().map(|(table, _)| *table))
                .collect(),
            error_table: side_table(&ERROR_TABLE),
            late_table: side_table(&LATE_TABLE),
            stop,
            event_time: None,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }

    /// Checks the table `side`'s option names (it must exist and have the columns `side`
    /// asks for), writes its qualified name back into the option, and returns its id (the
    /// source depends on it).
    fn resolve_side_table(
        &self,
        session: &Session,
        create: &mut CreateSource,
        side: &SideTable,
    ) -> Result<Option<GlobalId>, CoordError> {
        let Some(name) = option_value(create, side.option) else {
            return Ok(None);
        };
        let object = sql::parse_object_name(&name)?;
        let item = self.resolve_item(session, &object)?;
        let fits = item.kind == ItemKind::Table
            && match &item.details {
                crate::catalog::ItemDetails::Relation(table) => (side.fits)(&table.desc.schema),
                _ => false,
            };
        if !fits {
            return Err(CoordError::InvalidSourceOption(format!(
                "{} \"{name}\" must be a table with the columns of {}",
                side.option, side.columns
            )));
        }
        let qualified = format!("{}.{}", item.schema, item.name);
        for (option, value) in &mut create.options {
            if option == side.option {
                *value = qualified.clone();
            }
        }
        Ok(Some(item.id))
    }
}

/// A user table a source also writes rows about its records to, named by an option.
struct SideTable {
    /// The option naming it.
    option: &'static str,
    /// Whether a table's columns can hold the rows.
    fits: fn(&SchemaRef) -> bool,
    /// The columns it needs, for the error that says so.
    columns: &'static str,
}

/// `error_table`: bad records.
const ERROR_TABLE: SideTable = SideTable {
    option: ERROR_TABLE_OPTION,
    fits: pipelines::fits_error_table,
    columns: "fluxion_catalog.source_errors: (source text NOT NULL, position text, raw text, \
              error text NOT NULL, received_at timestamptz NOT NULL)",
};

/// `late_table`: late rows.
const LATE_TABLE: SideTable = SideTable {
    option: LATE_TABLE_OPTION,
    fits: pipelines::fits_late_table,
    columns: "fluxion_catalog.late_events: (source text NOT NULL, row text NOT NULL, \
              event_time timestamp NOT NULL, watermark timestamp NOT NULL, \
              received_at timestamptz NOT NULL)",
};

/// The source's options for its connector: all but the coordinator's own (`error_table`,
/// `late_table`, `watermark.idle_timeout`).
pub(super) fn connector_options(create: &CreateSource) -> SourceOptions {
    let own = [ERROR_TABLE_OPTION, LATE_TABLE_OPTION, IDLE_TIMEOUT_OPTION];
    SourceOptions::new(
        create
            .options
            .iter()
            .filter(|(option, _)| !own.contains(&option.as_str()))
            .cloned(),
    )
}

/// The value of option `option` of `create`.
pub(super) fn option_value(create: &CreateSource, option: &str) -> Option<String> {
    create
        .options
        .iter()
        .find(|(name, _)| name == option)
        .map(|(_, value)| value.clone())
}

/// Opens a connector where blocking is allowed: connectors that talk to an upstream run (and
/// drop) a runtime of their own, which must not happen on the server's async threads.
fn open_blocking(
    options: &SourceOptions,
    context: SourceContext,
) -> Result<OpenedSource, connectors::ConnectorError> {
    let open = || connectors::open_source(options, context);
    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(open),
        _ => open(),
    }
}

/// `FORMAT … ENCODE …` of the statement.
fn source_format(create: &CreateSource) -> Result<Option<Format>, CoordError> {
    match (&create.format, &create.encode) {
        (Some(format), Some(encode)) => Format::parse(format, encode)
            .map(Some)
            .map_err(connector_error),
        (None, None) => Ok(None),
        _ => Err(CoordError::invalid(
            "FORMAT needs ENCODE (FORMAT PLAIN ENCODE JSON)",
        )),
    }
}

/// `planned` with a column after the declared ones for each `INCLUDE`d piece of metadata.
fn with_include_columns(
    mut planned: PlannedTable,
    include: &[Include],
) -> Result<PlannedTable, CoordError> {
    if include.is_empty() {
        return Ok(planned);
    }
    let mut fields: Vec<Field> = planned
        .desc
        .schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    for included in include {
        if fields.iter().any(|f| f.name() == &included.column) {
            return Err(CoordError::Sql(sql::SqlError::DuplicateColumn(
                included.column.clone(),
            )));
        }
        let data_type = match included.what {
            Metadata::Key => DataType::Binary,
            Metadata::Partition => DataType::Int32,
            Metadata::Offset => DataType::Int64,
            Metadata::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        };
        fields.push(Field::new(&included.column, data_type, true));
    }
    planned.desc.schema = Arc::new(Schema::new(fields));
    Ok(planned)
}

/// `INCLUDE …` of the statement.
fn source_include(create: &CreateSource) -> Result<Vec<Include>, CoordError> {
    create
        .include()
        .iter()
        .map(|(what, column)| Include::parse(what, column.as_deref()).map_err(connector_error))
        .collect()
}

/// A connector's error as the coordinator reports it.
pub(super) fn connector_error(e: connectors::ConnectorError) -> CoordError {
    CoordError::InvalidSourceOption(e.to_string())
}
