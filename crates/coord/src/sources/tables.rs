//! Tables fed by a source: `CREATE TABLE t (…) FROM source TABLE 'schema.table'`.
//!
//! Such a table is a table of the catalog (it is read, indexed and described like one) that
//! depends on its source, and only the source writes it: its upstream table's snapshot
//! first, then every change. Each table is one of the source's outputs; creating one
//! restarts the source's connector with the new output, which takes the new table's snapshot
//! consistent with the stream.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use connectors::SourceOutput;
use repr::{GlobalId, ItemKind};

use crate::catalog::{read, ItemDetails};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use sql::{CreateSource, CreateTableFromSource, ObjectRef};

/// The connector whose sources feed tables.
pub(super) const CDC_CONNECTOR: &str = "postgres-cdc";

/// How long a restarting source waits for its old reader to let go of upstream resources.
const READER_EXIT_WAIT: Duration = Duration::from_secs(10);

impl Coordinator {
    /// `CREATE TABLE … FROM source TABLE '…'`.
    pub(crate) async fn create_table_from_source(
        &self,
        session: &mut Session,
        mut from: CreateTableFromSource,
    ) -> Result<ExecuteResponse, CoordError> {
        let source = self.resolve_item(session, &from.source)?;
        let source_create = self.stored_source(source.id)?;
        let options = super::connector_options(&source_create);
        let connector = options.connector().unwrap_or_default().to_lowercase();
        if source.kind != ItemKind::Source || connector != CDC_CONNECTOR {
            return Err(CoordError::WrongObjectType {
                name: source.name.clone(),
                expected: "a postgres-cdc source",
                hint: Some("only a postgres-cdc source feeds tables with FROM … TABLE".into()),
            });
        }
        from.table.name = self.name_for_new_item(session, &from.table.name)?;
        from.source = ObjectRef::qualified(&source.schema, &source.name);
        if !from.table.has_columns() {
            from = with_upstream_columns(from, options).await?;
        }
        let create_sql = from.to_string();
        let planned = self.plan_table(&from.table)?;
        let sequencer = self.lock_sequencer().await?;
        let created = self.record_table(
            session,
            ItemKind::Table,
            &create_sql,
            planned,
            vec![source.id],
            from.table.if_not_exists,
        )?;
        drop(sequencer);
        if created.is_some() {
            self.restart_source(source.id).await?;
        }
        Ok(ExecuteResponse::command("CREATE TABLE"))
    }

    /// Source `id`'s statement, as stored.
    pub(super) fn stored_source(&self, id: GlobalId) -> Result<CreateSource, CoordError> {
        let item = read(&self.catalog)
            .get(id)
            .cloned()
            .ok_or_else(|| CoordError::Internal(format!("source {id} vanished")))?;
        stored_create(&item)
    }

    /// The tables source `id` feeds, in creation order, as outputs 1, 2, … of its connector.
    pub(super) fn source_tables(&self, id: GlobalId) -> Vec<(GlobalId, SourceOutput)> {
        let catalog = read(&self.catalog);
        let mut tables: Vec<(GlobalId, SourceOutput)> = catalog
            .items()
            .filter(|item| item.kind == ItemKind::Table && item.depends_on.contains(&id))
            .filter_map(|item| {
                let Ok(Some(sql::Statement::CreateTableFromSource(from))) =
                    sql::parse(&item.create_sql).map(|mut s| s.pop())
                else {
                    return None;
                };
                let ItemDetails::Relation(table) = &item.details else {
                    return None;
                };
                Some((
                    item.id,
                    SourceOutput {
                        reference: from.reference,
                        schema: table.desc.schema.clone(),
                        key: table.desc.primary_key.clone(),
                    },
                ))
            })
            .collect();
        tables.sort_by_key(|(id, _)| *id);
        tables
    }

    /// Restarts source `id`'s connector (with outputs it did not have), resuming after its
    /// last durable batch.
    async fn restart_source(&self, id: GlobalId) -> Result<(), CoordError> {
        let create = self.stored_source(id)?;
        let reader_exited = self.sources.stop_reader(id);
        let deadline = Instant::now() + READER_EXIT_WAIT;
        while reader_exited
            .as_ref()
            .is_some_and(|exited| !exited.load(Ordering::Acquire))
            && Instant::now() < deadline
        {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // No batch of the old reader commits after this: commits check the stop flag under
        // the sequencer, so the position read here is the last durable one.
        let (position, watermark) = {
            let _sequencer = self.lock_sequencer_to_finish().await;
            (self.sources.position(id), self.sources.watermark(id))
        };
        self.start_source(id, &create, position, watermark)
    }
}

/// The `CREATE SOURCE` statement source `item` was created with.
pub(super) fn stored_create(item: &crate::catalog::Item) -> Result<CreateSource, CoordError> {
    match sql::parse(&item.create_sql)?.pop() {
        Some(sql::Statement::CreateSource(create)) => Ok(create),
        _ => Err(CoordError::WrongObjectType {
            name: item.name.clone(),
            expected: "a source",
            hint: None,
        }),
    }
}

/// Drops the replication slot of a dropped CDC source, once its reader has let go of it.
pub(super) async fn drop_replication_slot(
    options: connectors::SourceOptions,
) -> Result<(), CoordError> {
    let deadline = Instant::now() + READER_EXIT_WAIT;
    let options = std::sync::Arc::new(options);
    loop {
        let attempt = options.clone();
        let dropped =
            tokio::task::spawn_blocking(move || connectors::postgres_cdc::drop_slot(&attempt))
                .await
                .map_err(|e| CoordError::Internal(format!("dropping the slot failed: {e}")))?;
        match dropped {
            Ok(()) => return Ok(()),
            Err(e) if Instant::now() < deadline => {
                tracing::debug!(error = %e, "the replication slot is still held; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(e) => return Err(super::connector_error(e)),
        }
    }
}

/// `from` with the upstream table's columns and primary key, asked of the upstream.
async fn with_upstream_columns(
    from: CreateTableFromSource,
    options: connectors::SourceOptions,
) -> Result<CreateTableFromSource, CoordError> {
    let reference = from.reference.clone();
    let (schema, key) = tokio::task::spawn_blocking(move || {
        connectors::postgres_cdc::upstream_columns(&options, &reference)
    })
    .await
    .map_err(|e| CoordError::Internal(format!("upstream lookup failed: {e}")))?
    .map_err(super::connector_error)?;
    Ok(from.with_upstream_columns(&schema, key)?)
}
