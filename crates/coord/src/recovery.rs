//! Recovery: rebuilding every object from the durable catalog and replaying the log.
//!
//! Tables come first and get their logged writes back at the times they were committed;
//! then views, materialized views and indexes are planned from their stored SQL in creation
//! order (an item only depends on items created before it), and their dataflows catch up
//! from the tables' arrangements, and are fed the history of the streams they read from the
//! stream logs (each keeping what the WAL committed and the batches committed in the log
//! itself since). Sources are installed with the tables; once every dataflow has caught up,
//! each source's connector resumes after the last position the WAL or its stream log holds
//! for it. Reads are admitted once every dataflow has caught up.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use compute::ComputeError;
use repr::{GlobalId, ItemKind, RelationDesc, Timestamp};
use storage::WalRecord;

use sql::{CreateView, Statement};

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::error::CoordError;

impl Coordinator {
    /// Rebuilds all items and replays `records`, the last of which is at `floor`, and the
    /// source batches committed in stream logs after them.
    pub(crate) async fn recover(
        &self,
        records: Vec<WalRecord>,
        floor: Timestamp,
    ) -> Result<(), CoordError> {
        let started = Instant::now();
        let items = self.durable.items()?;
        self.load_ownership(&items)?;
        self.load_default_privileges()?;
        for item in items.iter().filter(|i| i.kind == ItemKind::Schema) {
            self.install_schema(item.id, &item.name, &item.create_sql);
        }
        self.install_source_errors()?;
        self.install_late_events()?;
        let mut tables = 0;
        for item in items.iter().filter(|i| i.kind == ItemKind::Table) {
            let create = match sql::parse(&item.create_sql)?.pop() {
                Some(Statement::CreateTable(create)) => create,
                Some(Statement::CreateTableFromSource(from)) => from.table,
                _ => {
                    return Err(CoordError::Internal(format!(
                        "stored SQL of {} is not CREATE TABLE",
                        item.name
                    )))
                }
            };
            let planned = self.plan_table(&create)?;
            self.install_table(
                item.id,
                ItemKind::Table,
                &item.create_sql,
                planned,
                item.depends_on.clone(),
                0,
            )?;
            tables += 1;
        }
        self.streams.set_committed_ends(&records);
        let mut sources = Vec::new();
        for item in items.iter().filter(|i| i.kind == ItemKind::Source) {
            let Some(Statement::CreateSource(create)) = sql::parse(&item.create_sql)?.pop() else {
                return Err(CoordError::Internal(format!(
                    "stored SQL of {} is not CREATE SOURCE",
                    item.name
                )));
            };
            let planned = self.plan_source(&create)?;
            self.install_table(
                item.id,
                ItemKind::Source,
                &item.create_sql,
                planned,
                item.depends_on.clone(),
                0,
            )?;
            sources.push((item.id, create));
        }
        // Source batches of streams commit in their stream logs, not in the WAL: what they
        // changed besides the stream (bad records) is replayed with the WAL's records, and
        // their positions are the latest.
        let stream_commits = self.streams.take_recovered_commits();
        let floor = stream_commits
            .last()
            .map_or(floor, |commit| commit.time.max(floor));
        let replayed = self.replay(&records)? + self.replay(&stream_commits)?;
        let mut watermarks: HashMap<GlobalId, i64> = HashMap::new();
        for record in records.iter().chain(&stream_commits) {
            for (id, watermark) in &record.watermarks {
                let kept = watermarks.entry(*id).or_insert(*watermark);
                *kept = (*kept).max(*watermark);
            }
        }
        for (id, watermark) in &watermarks {
            self.table_watermarks.resume(*id, *watermark);
        }
        self.compute.advance_inputs(floor + 1);
        self.oracle.mark_committed(floor);
        let mut dataflows: Vec<GlobalId> = Vec::new();
        let derived = items.iter().filter(|i| {
            !matches!(
                i.kind,
                ItemKind::Table
                    | ItemKind::Source
                    | ItemKind::Schema
                    | ItemKind::Subscription
                    | ItemKind::Sink
            )
        });
        for item in derived {
            let statement = sql::parse(&item.create_sql)?.pop().ok_or_else(|| {
                CoordError::Internal(format!("stored SQL of {} is empty", item.name))
            })?;
            match (item.kind, statement) {
                (ItemKind::View, Statement::CreateView(create)) => {
                    let planned = self.plan_view(&create).await?;
                    self.install_view(item.id, &item.create_sql, planned)?;
                }
                (ItemKind::MaterializedView, Statement::CreateView(create)) => {
                    if self
                        .recover_materialized_view(item, &create, floor, &watermarks)
                        .await?
                    {
                        dataflows.push(item.id);
                    }
                }
                (ItemKind::Index, Statement::CreateIndex(_)) if item.stopped.is_some() => {
                    let on = item.depends_on.first().copied().ok_or_else(|| {
                        CoordError::Internal(format!("index {} is on no relation", item.name))
                    })?;
                    let message = item.stopped.as_deref().unwrap_or_default();
                    self.install_stopped(item, ItemDetails::Index { on }, message);
                }
                (ItemKind::Index, Statement::CreateIndex(create)) => {
                    let planned = self.plan_index(&create)?;
                    let on = planned.on;
                    self.install_index(item.id, &item.create_sql, planned)?;
                    self.hydrate_streams(item.id, vec![on], floor, None).await?;
                    dataflows.push(item.id);
                }
                (kind, _) => {
                    return Err(CoordError::Internal(format!(
                        "stored SQL of {} does not create a {kind:?}",
                        item.name
                    )))
                }
            }
        }
        self.load_comments()?;
        self.streams.remove_orphans()?;
        self.recover_subscriptions(&items).await?;
        self.recover_sinks(&items).await?;
        for id in &dataflows {
            let built = self
                .compute
                .frontiers()
                .wait_until_complete_at(*id, floor)
                .await;
            match built {
                // Stopped while it was built: it needed more memory than its budget.
                Err(ComputeError::UnknownArrangement(_)) if self.compute.stopped(*id).is_some() => {
                }
                other => other?,
            }
        }
        self.compute.allow_compaction(floor);
        self.note_logged_rows(replayed as u64);
        let mut positions = HashMap::new();
        for record in records.iter().chain(&stream_commits) {
            positions.extend(record.progress.iter().cloned());
        }
        for (id, create) in &sources {
            let resume = positions.remove(id);
            let watermark = watermarks.remove(id);
            tracing::info!(source = %create.name, position = ?resume, ?watermark, "resuming source");
            if let Err(e) = self.start_source(*id, create, resume, watermark) {
                tracing::error!(source = %create.name, error = %e, "source could not be resumed");
            }
        }
        tracing::info!(
            tables,
            sources = sources.len(),
            dataflows = dataflows.len(),
            log_records = records.len(),
            replayed_rows = replayed,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "recovered: every object rebuilt and caught up with the log"
        );
        Ok(())
    }

    /// Plans materialized view `item` (created by `create`) and builds its dataflow, caught
    /// up with the log through `floor`; returns whether it was built. A view that was stopped,
    /// or that reads one that was, is installed stopped instead.
    async fn recover_materialized_view(
        &self,
        item: &storage::CatalogItem,
        create: &CreateView,
        floor: Timestamp,
        watermarks: &HashMap<GlobalId, i64>,
    ) -> Result<bool, CoordError> {
        let planned = self.plan_view(create).await?;
        let plan = self.lower_materialized_view(create, &planned)?;
        let stopped = item.stopped.clone().or_else(|| {
            let read = plan
                .imports()
                .into_iter()
                .find_map(|id| self.compute.stopped(id))?;
            Some(format!(
                "materialized view \"{}\" is stopped: it reads a stopped view ({read})",
                item.name
            ))
        });
        if let Some(message) = &stopped {
            let relation = crate::catalog::arranged_relation(
                item.id,
                &planned.name,
                RelationDesc::new(plan.schema().clone()),
            );
            self.install_stopped(item, ItemDetails::Relation(Arc::new(relation)), message);
            return Ok(false);
        }
        let imports = plan.imports();
        let waits_for = plan.watermark_sources();
        self.install_materialized_view(item.id, &item.create_sql, planned, plan)?;
        self.view_budgets.set(item.id, create.options.memory_budget);
        self.hydrate_view(item.id, imports, &waits_for, floor, watermarks, None)
            .await?;
        Ok(true)
    }

    /// Installs `item`, whose dataflow was stopped for the reason `message` gives, without
    /// building it: it is listed, and reading it fails with that reason.
    fn install_stopped(&self, item: &storage::CatalogItem, details: ItemDetails, message: &str) {
        tracing::warn!(item = %item.name, reason = message, "not built: stopped");
        self.compute.mark_stopped(item.id, message.to_string());
        let mut catalog = crate::catalog::write(&self.catalog);
        catalog.set_stopped(item.id, message.to_string());
        catalog.insert(Item {
            id: item.id,
            name: item.name.clone(),
            schema: item.schema.clone(),
            kind: item.kind,
            create_sql: item.create_sql.clone(),
            depends_on: item.depends_on.clone(),
            details,
        });
    }

    /// Feeds logged table writes to compute at their original times; returns the row count.
    /// (A stream's own rows stay in its log: recovered stream commits come without them.)
    fn replay(&self, records: &[WalRecord]) -> Result<usize, CoordError> {
        let codecs = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        let mut rows = 0;
        for record in records {
            for (table, change) in &record.changes {
                let Some(codecs) = codecs.get(table) else {
                    continue;
                };
                let encoded = codecs
                    .rows
                    .encode(&change.rows)
                    .map_err(|e| CoordError::Internal(e.to_string()))?;
                let updates: Vec<_> = encoded
                    .into_iter()
                    .zip(change.diffs.iter().copied())
                    .collect();
                rows += updates.len();
                let pairs = codecs.arrangement_pairs(&updates)?;
                self.compute.append(*table, record.time, pairs);
                self.last_write
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(*table, record.time);
            }
        }
        Ok(rows)
    }
}
