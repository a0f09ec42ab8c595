//! DDL: creating and dropping tables, views, materialized views and indexes.
//!
//! Each item is planned from its SQL (the same code path builds it at creation and again at
//! every restart from the stored `create_sql`), recorded durably, then installed: put into the
//! catalog and, for arranged items, given an input or a dataflow in compute.

use std::collections::HashMap;
use std::sync::Arc;

use compute::{ArrangementLayout, DataflowDesc};
use datafusion::catalog::TableProvider;
use datafusion::common::tree_node::TreeNodeRecursion;
use datafusion::datasource::ViewTable;
use datafusion::logical_expr::{Expr, LogicalPlan};
use pipelines::DEFAULT_IDLE_TIMEOUT;
use plan::Plan;
use repr::pg_type::storage_type;
use repr::{GlobalId, ItemKind, Ownership, RelationDesc, Timestamp};
use sql::catalog::{KeyedArrangement, UniqueKey};
use sql::session::DEFAULT_SCHEMA;
use sql::{
    quote_ident, CreateIndex, CreateSchema, CreateTable, CreateTableAs, CreateView, Drop,
    ObjectKind, ObjectRef, PlanContext, Rename, Statement, TableDefinition, WatermarkSpec,
};
use storage::{CatalogItem, CatalogOp};

use crate::catalog::{read, relation_table, write, Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::sources::watermark_tracker;
use crate::table_rows::TableCodecs;
use crate::transactional_ddl::DdlChange;
use crate::write::{InsertRows, WriteStatement};

/// A table, planned from its CREATE TABLE.
pub(crate) struct PlannedTable {
    pub schema: String,
    pub name: String,
    pub desc: RelationDesc,
    pub defaults: HashMap<String, Expr>,
    /// The default expressions as SQL text.
    pub default_sql: HashMap<String, String>,
    /// Append-only (a source without a key whose records are inserts): kept in a stream log
    /// and fed to the dataflows that read it, not arranged (see `streams`).
    pub is_stream: bool,
    /// Its `WATERMARK`, if it declares one: its column is the rows' event time.
    pub watermark: Option<WatermarkSpec>,
}

/// A view or materialized view, planned from its query.
pub(crate) struct PlannedView {
    pub schema: String,
    pub name: String,
    pub logical: LogicalPlan,
    pub depends_on: Vec<GlobalId>,
}

/// An index, planned from its CREATE INDEX.
pub(crate) struct PlannedIndex {
    /// The schema of the indexed relation, which the index belongs to.
    pub schema: String,
    pub name: String,
    pub on: GlobalId,
    pub columns: Vec<usize>,
    /// A unique index: writes to the table are checked against it.
    pub unique: bool,
}

impl PlannedTable {
    /// The table `name` (qualified) with the columns, key and defaults of `definition`.
    pub fn new(name: &ObjectRef, definition: TableDefinition) -> Self {
        PlannedTable {
            schema: name
                .schema
                .clone()
                .unwrap_or_else(|| DEFAULT_SCHEMA.to_string()),
            name: name.name.clone(),
            desc: definition.desc,
            defaults: definition.defaults,
            default_sql: definition.default_sql,
            is_stream: false,
            watermark: None,
        }
    }
}

/// The item kind of an object kind.
pub(crate) fn item_kind(kind: ObjectKind) -> ItemKind {
    match kind {
        ObjectKind::Table => ItemKind::Table,
        ObjectKind::View => ItemKind::View,
        ObjectKind::MaterializedView => ItemKind::MaterializedView,
        ObjectKind::Index => ItemKind::Index,
        ObjectKind::Schema => ItemKind::Schema,
        ObjectKind::Source => ItemKind::Source,
        ObjectKind::Sink => ItemKind::Sink,
        ObjectKind::Subscription => ItemKind::Subscription,
    }
}

impl Coordinator {
    pub(crate) async fn create_table(
        &self,
        session: &mut Session,
        mut create: CreateTable,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let create_sql = create.to_sql();
        let definition = create.plan(&self.base_state)?;
        let unique_keys = definition.unique_keys.clone();
        let mut planned = PlannedTable::new(&create.name, definition);
        self.plan_watermark(&mut planned, &create)?;
        let (schema, table) = (planned.schema.clone(), planned.name.clone());
        let _sequencer = self.lock_sequencer().await?;
        let created = self.record_table(
            session,
            ItemKind::Table,
            &create_sql,
            planned,
            Vec::new(),
            create.if_not_exists,
        )?;
        if created.is_some() {
            // Each UNIQUE constraint is a unique index named as PostgreSQL names the
            // constraint's index.
            for columns in unique_keys {
                let name = format!("{table}_{}_key", columns.join("_"));
                let columns: Vec<String> = columns.iter().map(|c| quote_ident(c)).collect();
                let sql = format!(
                    "CREATE UNIQUE INDEX {} ON {}.{} ({})",
                    quote_ident(&name),
                    quote_ident(&schema),
                    quote_ident(&table),
                    columns.join(", ")
                );
                let Some(Statement::CreateIndex(index)) = sql::parse(&sql)?.pop() else {
                    return Err(CoordError::Internal(format!("not an index: {sql}")));
                };
                self.record_index(session, &index).await?;
            }
        }
        Ok(ExecuteResponse::command("CREATE TABLE"))
    }

    /// `CREATE TABLE name AS query`: a table with the query's columns, then an INSERT of its
    /// rows (two steps, as outside a transaction block in PostgreSQL: a failed INSERT leaves
    /// the empty table).
    pub(crate) async fn create_table_as(
        &self,
        session: &mut Session,
        create: CreateTableAs,
    ) -> Result<ExecuteResponse, CoordError> {
        let name = self.name_for_new_item(session, &create.name)?;
        let query = Statement::Select(create.query.clone());
        let columns = self
            .describe(session, &query, &[])
            .await?
            .columns
            .ok_or_else(|| CoordError::Internal("a query without columns".into()))?;
        let columns: Vec<String> = columns
            .fields()
            .iter()
            .map(|field| format!("{} {}", quote_ident(field.name()), storage_type(field)))
            .collect();
        let qualified = format!(
            "{}.{}",
            quote_ident(name.schema.as_deref().unwrap_or(DEFAULT_SCHEMA)),
            quote_ident(&name.name)
        );
        let table = format!("CREATE TABLE {qualified} ({})", columns.join(", "));
        let Some(Statement::CreateTable(table)) = sql::parse(&table)?.pop() else {
            return Err(CoordError::Internal(format!("not a table: {table}")));
        };
        let schema = name.schema.as_deref().unwrap_or(DEFAULT_SCHEMA);
        if self.exists(session, schema, &name.name, create.if_not_exists)? {
            return Ok(ExecuteResponse::command("CREATE TABLE AS"));
        }
        let insert = sql::Insert::of_query(&table.name, &create.query)?;
        self.create_table(session, table).await?;
        let write = WriteStatement::Insert(&insert, InsertRows::Planned);
        match Box::pin(self.write(session, write)).await? {
            ExecuteResponse::Command(tag) => Ok(ExecuteResponse::command(format!(
                "SELECT {}",
                tag.rsplit(' ').next().unwrap_or("0")
            ))),
            other => Ok(other),
        }
    }

    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW … RENAME TO …` of a table, view or
    /// materialized view that nothing depends on (a dependent's stored SQL names it).
    pub(crate) async fn rename(
        &self,
        session: &mut Session,
        rename: Rename,
    ) -> Result<ExecuteResponse, CoordError> {
        let tag = rename.tag();
        let _sequencer = self.lock_sequencer().await?;
        let Some(item) = self.resolve_item_if_exists(session, &rename.name, rename.if_exists)?
        else {
            return Ok(ExecuteResponse::command(tag));
        };
        let expected = match rename.kind {
            ObjectKind::View => Some((ItemKind::View, "a view")),
            ObjectKind::MaterializedView => {
                Some((ItemKind::MaterializedView, "a materialized view"))
            }
            _ => None,
        };
        let renamable = matches!(
            item.kind,
            ItemKind::Table | ItemKind::View | ItemKind::MaterializedView
        );
        if let Some((kind, expected)) = expected {
            if kind != item.kind {
                return Err(CoordError::WrongObjectType {
                    name: item.name,
                    expected,
                    hint: None,
                });
            }
        }
        if !renamable {
            return Err(CoordError::unsupported(format!(
                "renaming {} {}",
                item.kind.name(),
                item.name
            )));
        }
        // The relation's own indexes name it in their stored SQL, which is rewritten; any
        // other dependent (a view reading it) would need its query rewritten too.
        let (indexes, others) = read(&self.catalog).indexes_and_readers(item.id);
        if let Some(dependent) = others.first() {
            return Err(CoordError::unsupported(format!(
                "renaming {} {}: {} {} depends on it",
                item.kind.name(),
                item.name,
                dependent.kind.name(),
                dependent.name
            )));
        }
        // Taken already: 42P07.
        self.exists(session, &item.schema, &rename.new_name, false)?;
        let create_sql = sql::renamed_create_sql(&item.create_sql, &rename.new_name)?;
        let mut renamed = vec![(item.clone(), rename.new_name.clone(), create_sql)];
        for index in indexes {
            let create_sql = sql::reindexed_create_sql(&index.create_sql, &rename.new_name)?;
            let name = index.name.clone();
            renamed.push((index, name, create_sql));
        }
        let (ops, undo): (Vec<CatalogOp>, Vec<CatalogOp>) = {
            let catalog = read(&self.catalog);
            renamed
                .iter()
                .map(|(item, name, create_sql)| {
                    let stored = catalog.stored(item);
                    let put = CatalogOp::Put(CatalogItem {
                        name: name.clone(),
                        create_sql: create_sql.clone(),
                        ..stored.clone()
                    });
                    (put, CatalogOp::Put(stored))
                })
                .unzip()
        };
        let before: Vec<Item> = renamed.iter().map(|(item, _, _)| item.clone()).collect();
        self.apply_ddl(session, &ops, undo, DdlChange::Renamed(before))?;
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        for (item, name, create_sql) in renamed {
            catalog.rename(item.id, &name, create_sql);
        }
        Ok(ExecuteResponse::command(tag))
    }

    /// `REFRESH MATERIALIZED VIEW name`: every materialized view is always fresh, so this
    /// only checks that `name` is one.
    pub(crate) fn refresh_materialized_view(
        &self,
        session: &Session,
        name: &ObjectRef,
    ) -> Result<ExecuteResponse, CoordError> {
        let item = self.resolve_item(session, name)?;
        if item.kind != ItemKind::MaterializedView {
            return Err(CoordError::WrongObjectType {
                name: item.name,
                expected: "a materialized view",
                hint: None,
            });
        }
        Ok(ExecuteResponse::command("REFRESH MATERIALIZED VIEW"))
    }

    /// Records and installs a planned table or source (`kind`), which depends on
    /// `depends_on`, unless its name is taken (with `if_not_exists`, a notice); returns its
    /// id if it was created. The caller holds the sequencer.
    pub(crate) fn record_table(
        &self,
        session: &mut Session,
        kind: ItemKind,
        create_sql: &str,
        planned: PlannedTable,
        depends_on: Vec<GlobalId>,
        if_not_exists: bool,
    ) -> Result<Option<GlobalId>, CoordError> {
        if self.exists(session, &planned.schema, &planned.name, if_not_exists)? {
            return Ok(None);
        }
        let id = self.record_item(
            session,
            &planned.schema,
            &planned.name,
            kind,
            create_sql,
            depends_on.clone(),
        )?;
        self.install_table(
            id,
            kind,
            create_sql,
            planned,
            depends_on,
            self.oracle.read_time() + 1,
        )?;
        Ok(Some(id))
    }

    pub(crate) async fn create_view(
        &self,
        session: &mut Session,
        mut create: CreateView,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let search_path = session.search_path();
        create.prepare(&self.plan_context(&search_path))?;
        let create_sql = create.to_sql();
        let kind = if create.materialized {
            ItemKind::MaterializedView
        } else {
            ItemKind::View
        };
        let tag = if create.materialized {
            "CREATE MATERIALIZED VIEW"
        } else {
            "CREATE VIEW"
        };
        let planned = self.plan_view(&create).await?;
        // Let go while a materialized view is fed its history: commits go on meanwhile.
        let mut sequencer = Some(self.lock_sequencer().await?);
        if self.exists(
            session,
            &planned.schema,
            &planned.name,
            create.if_not_exists,
        )? {
            return Ok(ExecuteResponse::command(tag));
        }
        let lowered = match kind {
            ItemKind::MaterializedView => Some(self.lower_materialized_view(&create, &planned)?),
            _ => None,
        };
        if let Some(plan) = &lowered {
            self.check_maintained_reads(session, plan)?;
        }
        let id = self.record_item(
            session,
            &planned.schema,
            &planned.name,
            kind,
            &create_sql,
            planned.depends_on.clone(),
        )?;
        let undo = self.undo_if_abandoned(session, id);
        let planned_name = planned.name.clone();
        let installed = match lowered {
            Some(plan) => {
                let imports = plan.imports();
                let waits_for = plan.watermark_sources();
                match self.install_materialized_view(id, &create_sql, planned, plan) {
                    Ok(()) => {
                        self.view_budgets.set(id, create.options.memory_budget);
                        let watermarks = self.watermarks().into_iter().collect();
                        let start = self.oracle.read_time();
                        let what = format!("materialized view \"{planned_name}\"");
                        let build = self.hydrate_view(
                            id,
                            imports,
                            &waits_for,
                            start,
                            &watermarks,
                            sequencer.take(),
                        );
                        self.reporting_build(session, id, &what, build).await
                    }
                    Err(e) => Err(e),
                }
            }
            None => self.install_view(id, &create_sql, planned),
        };
        if let Err(e) = installed {
            let _sequencer = match sequencer {
                Some(held) => held,
                None => self.lock_sequencer_to_finish().await,
            };
            undo.finished();
            self.undo_create(id)?;
            return Err(e);
        }
        undo.finished();
        Ok(ExecuteResponse::command(tag))
    }

    pub(crate) async fn create_index(
        &self,
        session: &mut Session,
        mut create: CreateIndex,
    ) -> Result<ExecuteResponse, CoordError> {
        let on = self.resolve_item(session, &create.on)?;
        create.on = ObjectRef::qualified(&on.schema, &on.name);
        let _sequencer = self.lock_sequencer().await?;
        self.record_index(session, &create).await?;
        Ok(ExecuteResponse::command("CREATE INDEX"))
    }

    /// Records, installs and fills the index `create` (on a qualified relation), unless its
    /// name is taken (with `if_not_exists`, a notice). A unique index is refused if the rows
    /// already break it. The caller holds the sequencer.
    async fn record_index(
        &self,
        session: &mut Session,
        create: &CreateIndex,
    ) -> Result<(), CoordError> {
        let create_sql = create.to_sql();
        let planned = self.plan_index(create)?;
        if self.exists(
            session,
            &planned.schema,
            &planned.name,
            create.if_not_exists,
        )? {
            return Ok(());
        }
        if planned.unique {
            self.check_rows_unique(&planned).await?;
        }
        let id = self.record_item(
            session,
            &planned.schema,
            &planned.name,
            ItemKind::Index,
            &create_sql,
            vec![planned.on],
        )?;
        let undo = self.undo_if_abandoned(session, id);
        let on = planned.on;
        let what = format!("index \"{}\"", planned.name);
        let installed = match self.install_index(id, &create_sql, planned) {
            Ok(()) => {
                let build = self.hydrate_streams(id, vec![on], self.oracle.read_time(), None);
                self.reporting_build(session, id, &what, build).await
            }
            Err(e) => Err(e),
        };
        undo.finished();
        if let Err(e) = installed {
            self.undo_create(id)?;
            return Err(e);
        }
        Ok(())
    }

    pub(crate) async fn create_schema(
        &self,
        session: &mut Session,
        create: CreateSchema,
    ) -> Result<ExecuteResponse, CoordError> {
        let CreateSchema {
            name,
            if_not_exists,
        } = create;
        let _sequencer = self.lock_sequencer().await?;
        let taken = {
            let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
            catalog.has_schema(&name) || system_catalog::is_system_schema(&name)
        };
        if taken {
            if if_not_exists {
                session.notice(
                    "NOTICE",
                    "42P06",
                    format!("schema \"{name}\" already exists, skipping"),
                );
                return Ok(ExecuteResponse::command("CREATE SCHEMA"));
            }
            return Err(CoordError::DuplicateObject {
                kind: "schema",
                name,
            });
        }
        let create_sql = format!("CREATE SCHEMA {}", sql::quote_ident(&name));
        let id = self.record_item(
            session,
            "",
            &name,
            ItemKind::Schema,
            &create_sql,
            Vec::new(),
        )?;
        self.install_schema(id, &name, &create_sql);
        Ok(ExecuteResponse::command("CREATE SCHEMA"))
    }

    /// Puts a schema into the catalog.
    pub(crate) fn install_schema(&self, id: GlobalId, name: &str, create_sql: &str) {
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name: name.to_string(),
                schema: String::new(),
                kind: ItemKind::Schema,
                create_sql: create_sql.to_string(),
                depends_on: Vec::new(),
                details: ItemDetails::Schema,
            });
    }

    /// Whether `name` is taken in `schema`; with IF NOT EXISTS that is a notice, otherwise an
    /// error.
    pub(crate) fn exists(
        &self,
        session: &mut Session,
        schema: &str,
        name: &str,
        if_not_exists: bool,
    ) -> Result<bool, CoordError> {
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        match catalog.by_name(schema, name) {
            None => Ok(false),
            Some(_) if if_not_exists => {
                session.notice(
                    "NOTICE",
                    "42P07",
                    format!("relation \"{name}\" already exists, skipping"),
                );
                Ok(true)
            }
            Some(_) => Err(CoordError::DuplicateObject {
                kind: "relation",
                name: name.to_string(),
            }),
        }
    }

    /// Stores a new item durably (inside a transaction block, until ROLLBACK) and returns
    /// its id.
    pub(crate) fn record_item(
        &self,
        session: &mut Session,
        schema: &str,
        name: &str,
        kind: ItemKind,
        create_sql: &str,
        depends_on: Vec<GlobalId>,
    ) -> Result<GlobalId, CoordError> {
        let owner = self.acting_role(session)?.oid;
        let ownership = Ownership {
            owner,
            acl: self.default_acl(owner, schema, kind),
        };
        let id = self.durable.allocate_id()?;
        let put = CatalogOp::Put(CatalogItem {
            id,
            name: name.to_string(),
            schema: schema.to_string(),
            kind,
            create_sql: create_sql.to_string(),
            depends_on,
            ownership: ownership.clone(),
            stopped: None,
        });
        self.apply_ddl(
            session,
            &[put],
            vec![CatalogOp::Delete(id)],
            DdlChange::Created(id),
        )?;
        write(&self.catalog).set_ownership(id, ownership);
        Ok(id)
    }

    /// Plans a table from its statement (whose name is qualified).
    pub(crate) fn plan_table(&self, create: &CreateTable) -> Result<PlannedTable, CoordError> {
        let mut planned = PlannedTable::new(&create.name, create.plan(&self.base_state)?);
        self.plan_watermark(&mut planned, create)?;
        Ok(planned)
    }

    /// Gives `planned` the watermark `create` declares, checked against its columns.
    fn plan_watermark(
        &self,
        planned: &mut PlannedTable,
        create: &CreateTable,
    ) -> Result<(), CoordError> {
        planned.watermark = create.watermark(&self.base_state)?;
        if let Some(spec) = &planned.watermark {
            watermark_tracker(spec, &planned.desc.schema, DEFAULT_IDLE_TIMEOUT, None)?;
        }
        Ok(())
    }

    /// Makes a table (or a source: `kind`) readable and writable: its codecs, its input and
    /// arrangement in compute (or, for a stream, its stream log and stream), its catalog entry
    /// (depending on `depends_on`).
    pub(crate) fn install_table(
        &self,
        id: GlobalId,
        kind: ItemKind,
        create_sql: &str,
        planned: PlannedTable,
        depends_on: Vec<GlobalId>,
        upper: Timestamp,
    ) -> Result<(), CoordError> {
        let codecs = Arc::new(TableCodecs::new(
            &planned.name,
            &planned.desc,
            planned.default_sql.clone(),
        )?);
        let layout = match &planned.desc.primary_key {
            Some(key) => ArrangementLayout::ByColumns(key.clone()),
            None => ArrangementLayout::BySelf,
        };
        if let Some(spec) = planned
            .watermark
            .as_ref()
            .filter(|_| kind == ItemKind::Table)
        {
            let tracker =
                watermark_tracker(spec, &planned.desc.schema, DEFAULT_IDLE_TIMEOUT, None)?;
            self.table_watermarks.declare(id, tracker);
        }
        let mut table = relation_table(id, &planned.name, planned.desc);
        table.defaults = planned.defaults;
        table.event_time = planned.watermark.as_ref().map(|w| w.column.clone());
        table.append_only = planned.is_stream;

        if planned.is_stream {
            self.streams.open(id)?;
            self.compute.create_stream(id);
        } else {
            self.compute.create_input(id, layout, upper, &planned.name);
        }
        self.table_codecs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(id, codecs);
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name: planned.name,
                schema: planned.schema,
                kind,
                create_sql: create_sql.to_string(),
                depends_on,
                details: ItemDetails::Relation(Arc::new(table)),
            });
        Ok(())
    }

    /// Plans a view from its statement (whose name is qualified and whose query is
    /// prepared).
    pub(crate) async fn plan_view(&self, create: &CreateView) -> Result<PlannedView, CoordError> {
        let logical = create
            .plan(&PlanContext::new(&self.base_state, &[]))
            .await?;
        let depends_on = self.referenced_items(&logical);
        Ok(PlannedView {
            schema: create
                .name
                .schema
                .clone()
                .unwrap_or_else(|| DEFAULT_SCHEMA.to_string()),
            name: create.name.name.clone(),
            logical,
            depends_on,
        })
    }

    /// The catalog items a plan reads, views included (before they are inlined).
    fn referenced_items(&self, plan: &LogicalPlan) -> Vec<GlobalId> {
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let mut ids = Vec::new();
        let _ = plan.apply_with_subqueries(|node| {
            match node {
                LogicalPlan::TableScan(scan) => {
                    let schema = scan.table_name.schema().unwrap_or(DEFAULT_SCHEMA);
                    if let Some(item) = catalog.by_name(schema, scan.table_name.table()) {
                        ids.push(item.id);
                    }
                }
                // Views are inlined while planning; what is left of them is an alias.
                LogicalPlan::SubqueryAlias(alias) => {
                    let schema = alias.alias.schema().unwrap_or(DEFAULT_SCHEMA);
                    if let Some(item) = catalog.by_name(schema, alias.alias.table()) {
                        if item.kind == ItemKind::View {
                            ids.push(item.id);
                        }
                    }
                }
                _ => {}
            }
            Ok(TreeNodeRecursion::Continue)
        });
        ids.sort();
        ids.dedup();
        ids
    }

    pub(crate) fn lower_view(&self, planned: &PlannedView) -> Result<Plan, CoordError> {
        Ok(sql::lower(&self.base_state, &planned.logical)?)
    }

    /// The dataflow plan of materialized view `create`: its query lowered and, with `EMIT ON
    /// WINDOW CLOSE`, under an operator that lets each row out once its window has closed.
    pub(crate) fn lower_materialized_view(
        &self,
        create: &CreateView,
        planned: &PlannedView,
    ) -> Result<Plan, CoordError> {
        let plan = self.lower_view(planned)?;
        if !create.emit_on_window_close {
            return Ok(plan);
        }
        let columns: HashMap<GlobalId, usize> = plan
            .imports()
            .into_iter()
            .filter_map(|id| Some((id, self.watermark_column(id)?)))
            .collect();
        plan::emit_on_window_close(plan, &|id| columns.get(&id).copied()).ok_or_else(|| {
            CoordError::invalid(
                "EMIT ON WINDOW CLOSE needs a column that a watermark closes: select the \
                 window_start or window_end of a window over a source or table with a \
                 WATERMARK, and group by it, or select the time of a row of an interval join \
                 of such relations",
            )
        })
    }

    pub(crate) fn install_view(
        &self,
        id: GlobalId,
        create_sql: &str,
        planned: PlannedView,
    ) -> Result<(), CoordError> {
        let view: Arc<dyn TableProvider> = Arc::new(ViewTable::new(
            planned.logical,
            Some(create_sql.to_string()),
        ));
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name: planned.name,
                schema: planned.schema,
                kind: ItemKind::View,
                create_sql: create_sql.to_string(),
                depends_on: planned.depends_on,
                details: ItemDetails::View(view),
            });
        Ok(())
    }

    pub(crate) fn install_materialized_view(
        &self,
        id: GlobalId,
        create_sql: &str,
        planned: PlannedView,
        plan: Plan,
    ) -> Result<(), CoordError> {
        // The dataflow's rows have the types of the lowered (analyzed) plan.
        let schema = plan.schema().clone();
        self.compute.create_dataflow(DataflowDesc {
            id,
            plan,
            layout: ArrangementLayout::BySelf,
            debug_name: planned.name.clone(),
        })?;
        let table = crate::catalog::arranged_relation(id, &planned.name, RelationDesc::new(schema));
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name: planned.name,
                schema: planned.schema,
                kind: ItemKind::MaterializedView,
                create_sql: create_sql.to_string(),
                depends_on: planned.depends_on,
                details: ItemDetails::Relation(Arc::new(table)),
            });
        Ok(())
    }

    /// Plans an index from its statement (whose relation is qualified).
    pub(crate) fn plan_index(&self, create: &CreateIndex) -> Result<PlannedIndex, CoordError> {
        let schema = create
            .on
            .schema
            .clone()
            .unwrap_or_else(|| DEFAULT_SCHEMA.to_string());
        let on_name = &create.on.name;
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let on = catalog
            .by_name(&schema, on_name)
            .ok_or_else(|| CoordError::unknown("relation", on_name.clone()))?;
        let relation = on.relation().ok_or_else(|| CoordError::WrongObjectType {
            name: on_name.clone(),
            expected: "a table or materialized view",
            hint: Some("indexes arrange stored relations; create a materialized view first".into()),
        })?;
        if create.unique && on.kind != ItemKind::Table {
            return Err(CoordError::WrongObjectType {
                name: on_name.clone(),
                expected: "a table",
                hint: Some(
                    "a unique index constrains what is written to a table; a view's rows \
                     follow its query"
                        .into(),
                ),
            });
        }
        let columns = create
            .columns
            .iter()
            .map(|column| {
                relation.desc.schema.index_of(column).map_err(|_| {
                    CoordError::unknown_column(format!("column \"{column}\" does not exist"))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let name = create.name.clone().unwrap_or_else(|| {
            let column_names: Vec<&str> = columns
                .iter()
                .map(|&c| relation.desc.schema.field(c).name().as_str())
                .collect();
            format!("{on_name}_{}_idx", column_names.join("_"))
        });
        Ok(PlannedIndex {
            schema,
            name,
            on: on.id,
            columns,
            unique: create.unique,
        })
    }

    pub(crate) fn install_index(
        &self,
        id: GlobalId,
        create_sql: &str,
        planned: PlannedIndex,
    ) -> Result<(), CoordError> {
        let schema = {
            let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
            catalog
                .get(planned.on)
                .and_then(Item::relation)
                .map(|r| r.desc.schema.clone())
                .ok_or_else(|| {
                    CoordError::Internal(format!("index on missing relation {}", planned.on))
                })?
        };
        self.compute.create_dataflow(DataflowDesc {
            id,
            plan: Plan::Get {
                id: planned.on,
                schema,
            },
            layout: ArrangementLayout::ByColumns(planned.columns.clone()),
            debug_name: planned.name.clone(),
        })?;
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        catalog.add_lookup(
            planned.on,
            KeyedArrangement {
                arrangement: id,
                columns: planned.columns.clone(),
            },
        );
        if planned.unique {
            catalog.add_unique_key(
                planned.on,
                UniqueKey {
                    index: id,
                    name: planned.name.clone(),
                    columns: planned.columns.clone(),
                },
            );
        }
        catalog.insert(Item {
            id,
            name: planned.name,
            schema: planned.schema,
            kind: ItemKind::Index,
            create_sql: create_sql.to_string(),
            depends_on: vec![planned.on],
            details: ItemDetails::Index { on: planned.on },
        });
        Ok(())
    }

    /// `DROP TABLE | VIEW | … | SINK | SUBSCRIPTION` (`DROP SOURCE` is [`Self::drop_source`]).
    pub(crate) async fn drop_objects(
        &self,
        session: &mut Session,
        drop: Drop,
    ) -> Result<ExecuteResponse, CoordError> {
        if !drop.options.is_empty() {
            return Err(CoordError::invalid(format!(
                "DROP {} takes no options",
                item_kind(drop.kind).name().to_uppercase()
            )));
        }
        self.drop_items(
            session,
            item_kind(drop.kind),
            drop.if_exists,
            drop.names,
            drop.cascade,
        )
        .await
    }

    /// Drops the items of kind `expected_kind` named `names` (and, with `cascade`, what
    /// depends on them).
    pub(crate) async fn drop_items(
        &self,
        session: &mut Session,
        expected_kind: ItemKind,
        if_exists: bool,
        names: Vec<ObjectRef>,
        cascade: bool,
    ) -> Result<ExecuteResponse, CoordError> {
        let search_path = session.search_path();
        let type_name = expected_kind.name();
        let expected = expected_kind.with_article();
        let tag = format!("DROP {}", type_name.to_uppercase());
        let _sequencer = self.lock_sequencer().await?;
        let mut to_drop: Vec<GlobalId> = Vec::new();
        {
            let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
            for name in names {
                let found = if expected_kind == ItemKind::Schema {
                    if name.schema.is_none() && name.name == DEFAULT_SCHEMA {
                        return Err(CoordError::unsupported("dropping the schema public"));
                    }
                    catalog.schema_item(&name.name)
                } else {
                    catalog.resolve(&name, &search_path)
                };
                let name = name.name;
                let Some(item) = found else {
                    if if_exists {
                        session.notice(
                            "NOTICE",
                            "00000",
                            format!("{type_name} \"{name}\" does not exist, skipping"),
                        );
                        continue;
                    }
                    return Err(CoordError::unknown(type_name, name));
                };
                if item.kind != expected_kind {
                    return Err(CoordError::WrongObjectType {
                        name,
                        expected,
                        hint: Some(format!(
                            "Use DROP {} to remove a {}.",
                            item.kind.name().to_uppercase(),
                            item.kind.name()
                        )),
                    });
                }
                let dependents = catalog.dependents(item.id);
                // A relation's own indexes go with it, as in PostgreSQL; anything else that
                // depends on it needs CASCADE.
                let blocking: Vec<GlobalId> = dependents
                    .iter()
                    .copied()
                    .filter(|d| {
                        catalog.get(*d).is_none_or(|d| {
                            !matches!(d.details, ItemDetails::Index { on, .. } if on == item.id)
                        })
                    })
                    .collect();
                if !blocking.is_empty() && !cascade {
                    return Err(CoordError::DependentObjects {
                        name: format!("{} {}", item.kind.name(), item.name),
                        dependents: blocking
                            .iter()
                            .filter_map(|d| catalog.get(*d))
                            .map(|d| {
                                format!(
                                    "{} {} depends on {} {}",
                                    d.kind.name(),
                                    d.name,
                                    item.kind.name(),
                                    item.name
                                )
                            })
                            .collect(),
                    });
                }
                to_drop.push(item.id);
                to_drop.extend(dependents);
            }
        }
        to_drop.sort();
        to_drop.dedup();
        if to_drop.is_empty() {
            return Ok(ExecuteResponse::command(tag));
        }
        let ops: Vec<CatalogOp> = to_drop.iter().map(|id| CatalogOp::Delete(*id)).collect();
        if session.in_block() {
            let dropped = self.dropped_items(&to_drop)?;
            let undo = {
                let catalog = read(&self.catalog);
                dropped
                    .iter()
                    .map(|d| CatalogOp::Put(catalog.stored(&d.item)))
                    .collect()
            };
            self.apply_ddl(session, &ops, undo, DdlChange::Dropped(dropped))?;
            self.hide_dropped(session, &to_drop);
            return Ok(ExecuteResponse::command(tag));
        }
        self.durable.apply(&ops)?;
        for id in to_drop.into_iter().rev() {
            self.uninstall(id);
            self.drop_comments(id)?;
        }
        Ok(ExecuteResponse::command(tag))
    }

    /// Removes an item from the catalog and compute.
    pub(crate) fn uninstall(&self, id: GlobalId) {
        if let Some(item) = self.hide(id) {
            self.release(&item);
        }
    }

    /// Removes an item from the catalog (and an index from its relation's lookups), leaving
    /// what runs for it; returns it.
    pub(crate) fn hide(&self, id: GlobalId) -> Option<Item> {
        let mut catalog = self.catalog.write().unwrap_or_else(|p| p.into_inner());
        let item = catalog.remove(id)?;
        if let ItemDetails::Index { on, .. } = item.details {
            catalog.remove_lookup(on, id);
        }
        Some(item)
    }

    /// Stops what runs for a removed item: its source, sink or subscription, its dataflow
    /// and its table's codecs.
    pub(crate) fn release(&self, item: &Item) {
        let id = item.id;
        self.hydrations.forget(id);
        if item.kind == ItemKind::Source {
            self.stop_source(id);
            self.streams.remove(id);
        }
        if item.kind == ItemKind::Subscription {
            self.subscriptions.remove(id);
        }
        if item.kind == ItemKind::Table {
            self.table_watermarks.remove(id);
        }
        if item.kind == ItemKind::Sink {
            self.sinks.remove(id);
        }
        self.view_budgets.forget(id);
        if matches!(
            item.kind,
            ItemKind::Table | ItemKind::Source | ItemKind::MaterializedView | ItemKind::Index
        ) {
            self.compute.drop_collection(id);
        }
        self.table_codecs
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&id);
        write(&self.catalog).forget_ownership(id);
    }
}

/// The schema and name of a stored item's name (`public` for a name stored unqualified).
pub(crate) fn stored_name(name: &ObjectRef) -> (String, String) {
    (
        name.schema
            .clone()
            .unwrap_or_else(|| DEFAULT_SCHEMA.to_string()),
        name.name.clone(),
    )
}
