//! The in-memory catalog: every item the durable catalog holds, planned and ready to use, and
//! its face towards DataFusion (a catalog provider with the user schemas and the system ones).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use repr::{GlobalId, ItemKind, Ownership, RelationDesc};
use sql::catalog::{KeyedArrangement, RelationTable, UniqueKey};
use sql::session::DEFAULT_SCHEMA;

use sql::ObjectRef;
use system_catalog::{is_system_schema, SystemSchemas};

use crate::catalog_input::SharedCatalog;
use crate::default_privileges::DefaultAclKey;
use crate::error::CoordError;
use crate::roles::Roles;
use crate::system_status::RunningSystem;

/// A planned catalog item.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub id: GlobalId,
    /// The name within its schema (a schema's own name for a schema).
    pub name: String,
    /// The schema the item lives in (empty for a schema).
    pub schema: String,
    pub kind: ItemKind,
    pub create_sql: String,
    pub depends_on: Vec<GlobalId>,
    pub details: ItemDetails,
}

/// What each kind of item carries.
#[derive(Debug, Clone)]
pub(crate) enum ItemDetails {
    /// A table or materialized view: an arranged relation.
    Relation(Arc<RelationTable>),
    /// A view: a query inlined where it is used.
    View(Arc<dyn TableProvider>),
    /// An index: another arrangement of the relation `on`.
    Index { on: GlobalId },
    /// A schema: a namespace for other items.
    Schema,
    /// A durable subscription to `from` (its log is in `durable_subscriptions`).
    Subscription { from: GlobalId },
    /// A sink delivering the changes of `from` (see `sinks`).
    Sink { from: GlobalId },
}

impl Item {
    /// The relation's description, for tables and materialized views.
    pub fn relation(&self) -> Option<&Arc<RelationTable>> {
        match &self.details {
            ItemDetails::Relation(relation) => Some(relation),
            _ => None,
        }
    }

    /// The item as DataFusion sees it, if it can be queried.
    pub fn provider(&self) -> Option<Arc<dyn TableProvider>> {
        match &self.details {
            ItemDetails::Relation(relation) => Some(relation.clone()),
            ItemDetails::View(view) => Some(view.clone()),
            ItemDetails::Index { .. }
            | ItemDetails::Schema
            | ItemDetails::Subscription { .. }
            | ItemDetails::Sink { .. } => None,
        }
    }
}

/// All planned items, by id and by (schema, name).
#[derive(Debug)]
pub(crate) struct Catalog {
    items: BTreeMap<GlobalId, Item>,
    by_name: HashMap<(String, String), GlobalId>,
    /// User schemas by name (`public` is built in and not an item).
    schemas: BTreeMap<String, GlobalId>,
    /// `COMMENT ON` texts by item and column number (0: the item itself).
    pub comments: BTreeMap<(GlobalId, u32), String>,
    /// The owner and ACL of each item (kept while a dropped item may come back in a
    /// ROLLBACK; removed when it is released).
    ownership: BTreeMap<GlobalId, Ownership>,
    /// The owner and ACL of the built-in `public` schema.
    pub public_schema: Ownership,
    /// Default privileges (see `default_privileges`), by role, schema and kind of object.
    pub default_privileges: BTreeMap<DefaultAclKey, Ownership>,
    /// Why each stopped item's dataflow is stopped (see `view_memory`).
    stopped: BTreeMap<GlobalId, String>,
    /// How many times items were added, removed or changed.
    generation: u64,
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            items: BTreeMap::new(),
            by_name: HashMap::new(),
            schemas: BTreeMap::new(),
            comments: BTreeMap::new(),
            ownership: BTreeMap::new(),
            public_schema: Ownership::public_schema(),
            default_privileges: BTreeMap::new(),
            stopped: BTreeMap::new(),
            generation: 0,
        }
    }
}

impl Catalog {
    /// The owner and ACL of item `id` (the bootstrap superuser's, with the default ACL, for
    /// an item created before privileges existed).
    pub fn ownership(&self, id: GlobalId) -> &Ownership {
        static UNRECORDED: Ownership = Ownership::new(repr::BOOTSTRAP_ROLE_OID);
        self.ownership.get(&id).unwrap_or(&UNRECORDED)
    }

    /// Sets the owner and ACL of item `id`.
    pub fn set_ownership(&mut self, id: GlobalId, ownership: Ownership) {
        self.ownership.insert(id, ownership);
    }

    /// Forgets the owner and ACL, and the stop, of released item `id`.
    pub fn forget_ownership(&mut self, id: GlobalId) {
        self.ownership.remove(&id);
        self.stopped.remove(&id);
    }

    /// Records that item `id`'s dataflow is stopped, and why.
    pub fn set_stopped(&mut self, id: GlobalId, message: String) {
        self.stopped.insert(id, message);
    }

    /// Why item `id`'s dataflow is stopped, if it is.
    pub fn stopped(&self, id: GlobalId) -> Option<&str> {
        self.stopped.get(&id).map(String::as_str)
    }

    /// The item as the durable catalog stores it.
    pub fn stored(&self, item: &Item) -> storage::CatalogItem {
        storage::CatalogItem {
            id: item.id,
            name: item.name.clone(),
            schema: item.schema.clone(),
            kind: item.kind,
            create_sql: item.create_sql.clone(),
            depends_on: item.depends_on.clone(),
            ownership: self.ownership(item.id).clone(),
            stopped: self.stopped.get(&item.id).cloned(),
        }
    }

    /// The relations view `view` reads directly, not through another view it reads.
    pub fn direct_reads(&self, view: &Item) -> Vec<&Item> {
        let through_views: Vec<GlobalId> = view
            .depends_on
            .iter()
            .filter_map(|id| self.get(*id))
            .filter(|item| item.kind == ItemKind::View)
            .flat_map(|inner| inner.depends_on.iter().copied())
            .collect();
        view.depends_on
            .iter()
            .filter(|id| !through_views.contains(id))
            .filter_map(|id| self.get(*id))
            .collect()
    }

    /// A number that changes whenever an item is added, removed or changed: a plan made
    /// from the catalog holds while it does not.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    pub fn get(&self, id: GlobalId) -> Option<&Item> {
        self.items.get(&id)
    }

    /// The relation or index called `name` in `schema`.
    pub fn by_name(&self, schema: &str, name: &str) -> Option<&Item> {
        self.by_name
            .get(&(schema.to_string(), name.to_string()))
            .and_then(|id| self.items.get(id))
    }

    /// The item a name refers to: in its schema if it names one, else in the first schema of
    /// `search_path` that has it.
    pub fn resolve(&self, name: &ObjectRef, search_path: &[String]) -> Option<&Item> {
        match &name.schema {
            Some(schema) => self.by_name(schema, &name.name),
            None => search_path
                .iter()
                .find_map(|schema| self.by_name(schema, &name.name)),
        }
    }

    /// Whether a schema of this name exists (`public` always does).
    pub fn has_schema(&self, name: &str) -> bool {
        name == DEFAULT_SCHEMA || self.schemas.contains_key(name)
    }

    /// The schema a new item called `name` goes in: the one it names, else the first of
    /// `search_path` that exists.
    pub fn schema_for_new_item(
        &self,
        name: &ObjectRef,
        search_path: &[String],
    ) -> Result<String, CoordError> {
        match &name.schema {
            Some(schema) if is_system_schema(schema) => Err(CoordError::invalid(format!(
                "permission denied to create \"{schema}.{}\": system schemas are read-only",
                name.name
            ))),
            Some(schema) if self.has_schema(schema) => Ok(schema.clone()),
            Some(schema) => Err(CoordError::unknown("schema", schema.clone())),
            None => search_path
                .iter()
                .find(|s| self.has_schema(s))
                .cloned()
                .ok_or(CoordError::NoSchemaSelected),
        }
    }

    /// The owner and ACL of the schema called `name` (`public` included), if it exists.
    pub fn schema_ownership(&self, name: &str) -> Option<&Ownership> {
        if name == DEFAULT_SCHEMA {
            return Some(&self.public_schema);
        }
        self.schema_item(name).map(|item| self.ownership(item.id))
    }

    /// The user schemas, `public` first, then by name.
    pub fn user_schemas(&self) -> Vec<String> {
        std::iter::once(DEFAULT_SCHEMA.to_string())
            .chain(self.schemas.keys().cloned())
            .collect()
    }

    /// The schema item called `name` (`None` for `public`, which is built in).
    pub fn schema_item(&self, name: &str) -> Option<&Item> {
        self.schemas.get(name).and_then(|id| self.items.get(id))
    }

    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.items.values()
    }

    /// The items of one schema.
    pub fn items_in<'a>(&'a self, schema: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
        self.items.values().filter(move |i| i.schema == schema)
    }

    pub fn insert(&mut self, item: Item) {
        self.generation += 1;
        if item.kind == ItemKind::Schema {
            self.schemas.insert(item.name.clone(), item.id);
        } else {
            self.by_name
                .insert((item.schema.clone(), item.name.clone()), item.id);
        }
        self.items.insert(item.id, item);
    }

    pub fn remove(&mut self, id: GlobalId) -> Option<Item> {
        let item = self.items.remove(&id)?;
        self.generation += 1;
        if item.kind == ItemKind::Schema {
            self.schemas.remove(&item.name);
        } else {
            self.by_name
                .remove(&(item.schema.clone(), item.name.clone()));
        }
        Some(item)
    }

    /// Items that depend on `id`, directly or through others, dependents after what they
    /// depend on (ascending id order is creation order). The items of a schema depend on it.
    pub fn dependents(&self, id: GlobalId) -> Vec<GlobalId> {
        let mut found: Vec<GlobalId> = Vec::new();
        let mut frontier = vec![id];
        while let Some(next) = frontier.pop() {
            let schema = self
                .get(next)
                .filter(|i| i.kind == ItemKind::Schema)
                .map(|i| i.name.clone());
            for item in self.items.values() {
                let depends = item.depends_on.contains(&next)
                    || (schema.as_deref() == Some(item.schema.as_str()));
                if depends && !found.contains(&item.id) {
                    found.push(item.id);
                    frontier.push(item.id);
                }
            }
        }
        found.sort();
        found
    }

    /// What depends on relation `id`: its own indexes, and everything else (a view reading
    /// it, an index on such a view, …).
    pub fn indexes_and_readers(&self, id: GlobalId) -> (Vec<Item>, Vec<Item>) {
        self.dependents(id)
            .into_iter()
            .filter_map(|d| self.get(d).cloned())
            .partition(|d| matches!(d.details, ItemDetails::Index { on } if on == id))
    }

    /// Items that read `id`'s rows, directly or through others: its dependents, but not a
    /// table that depends on it (a table fed by a source has rows, and event time, of its own).
    pub fn readers(&self, id: GlobalId) -> Vec<GlobalId> {
        let mut found: Vec<GlobalId> = Vec::new();
        let mut frontier = vec![id];
        while let Some(next) = frontier.pop() {
            for item in self.items.values() {
                if item.kind != ItemKind::Table
                    && item.depends_on.contains(&next)
                    && !found.contains(&item.id)
                {
                    found.push(item.id);
                    frontier.push(item.id);
                }
            }
        }
        found
    }

    /// Adds an arrangement usable for point lookups to a relation's provider.
    pub fn add_lookup(&mut self, relation: GlobalId, lookup: KeyedArrangement) {
        self.update_relation(relation, |table| table.lookups.push(lookup));
    }

    /// Renames item `id` to `name` in its schema; `create_sql` is its statement under the
    /// new name.
    pub fn rename(&mut self, id: GlobalId, name: &str, create_sql: String) {
        let Some(mut item) = self.remove(id) else {
            return;
        };
        item.name = name.to_string();
        item.create_sql = create_sql;
        if let ItemDetails::Relation(table) = &item.details {
            item.details = ItemDetails::Relation(Arc::new(rebuilt_relation(table, name)));
        }
        self.insert(item);
    }

    /// Adds a unique index that writes to a table are checked against.
    pub fn add_unique_key(&mut self, relation: GlobalId, key: UniqueKey) {
        self.update_relation(relation, |table| table.unique_keys.push(key));
    }

    /// Removes the lookups served by arrangement `arrangement`, and the unique key it
    /// enforced.
    pub fn remove_lookup(&mut self, relation: GlobalId, arrangement: GlobalId) {
        self.update_relation(relation, |table| {
            table.lookups.retain(|l| l.arrangement != arrangement);
            table.unique_keys.retain(|k| k.index != arrangement);
        });
    }

    fn update_relation(&mut self, relation: GlobalId, change: impl FnOnce(&mut RelationTable)) {
        self.generation += 1;
        if let Some(item) = self.items.get_mut(&relation) {
            if let ItemDetails::Relation(table) = &item.details {
                let mut updated = rebuilt_relation(table, &table.name);
                change(&mut updated);
                item.details = ItemDetails::Relation(Arc::new(updated));
            }
        }
    }
}

/// A copy of `table` named `name`, with its lookups, unique keys and defaults.
fn rebuilt_relation(table: &RelationTable, name: &str) -> RelationTable {
    let mut rebuilt = arranged_relation(table.id, name, table.desc.clone());
    rebuilt.lookups = table.lookups.clone();
    rebuilt.unique_keys = table.unique_keys.clone();
    rebuilt.event_time = table.event_time.clone();
    rebuilt.append_only = table.append_only;
    rebuilt.defaults = table.defaults.clone();
    rebuilt
}

/// The relation `id` as DataFusion sees it (its columns say they come from it).
pub(crate) fn arranged_relation(id: GlobalId, name: &str, desc: RelationDesc) -> RelationTable {
    RelationTable::new(id, name.to_string(), desc).with_origin(system_catalog::item_oid(id))
}

/// A relation description with the primary key's lookup, as tables are arranged by key.
pub(crate) fn relation_table(id: GlobalId, name: &str, desc: RelationDesc) -> RelationTable {
    let key = desc.primary_key.clone();
    let mut table = arranged_relation(id, name, desc);
    if let Some(columns) = key {
        table.lookups.push(KeyedArrangement {
            arrangement: id,
            columns,
        });
    }
    table
}

/// DataFusion's view of the catalog: the database with its schemas.
#[derive(Debug)]
pub(crate) struct CatalogProviderImpl {
    catalog: Arc<RwLock<Catalog>>,
    system: SystemSchemas,
}

impl CatalogProviderImpl {
    /// The user schemas of `catalog`, and the system schemas describing it, `roles` and
    /// `running`.
    pub fn new(catalog: Arc<RwLock<Catalog>>, roles: Roles, running: RunningSystem) -> Self {
        Self {
            system: SystemSchemas::new(
                Arc::new(SharedCatalog {
                    catalog: catalog.clone(),
                    roles,
                    sizes: running.compute.arrangement_sizes().clone(),
                }),
                Arc::new(running),
            ),
            catalog,
        }
    }
}

impl CatalogProvider for CatalogProviderImpl {
    fn schema_names(&self) -> Vec<String> {
        let mut names = read(&self.catalog).user_schemas();
        names.extend(self.system.names().map(str::to_string));
        names
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        if let Some(system) = self.system.get(name) {
            return Some(system);
        }
        if !read(&self.catalog).has_schema(name) {
            return None;
        }
        Some(Arc::new(UserSchema {
            catalog: self.catalog.clone(),
            schema: name.to_string(),
        }))
    }
}

/// The catalog, write-locked (a poisoned lock still holds a whole catalog).
pub(crate) fn write(catalog: &RwLock<Catalog>) -> std::sync::RwLockWriteGuard<'_, Catalog> {
    catalog.write().unwrap_or_else(|p| p.into_inner())
}

/// Reads the catalog, recovering from a poisoned lock (catalog updates never panic midway).
pub(crate) fn read(catalog: &RwLock<Catalog>) -> std::sync::RwLockReadGuard<'_, Catalog> {
    catalog.read().unwrap_or_else(|p| p.into_inner())
}

/// A schema holding user objects.
#[derive(Debug)]
pub(crate) struct UserSchema {
    catalog: Arc<RwLock<Catalog>>,
    schema: String,
}

#[async_trait]
impl SchemaProvider for UserSchema {
    fn table_names(&self) -> Vec<String> {
        read(&self.catalog)
            .items_in(&self.schema)
            .filter(|i| i.provider().is_some())
            .map(|i| i.name.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(read(&self.catalog)
            .by_name(&self.schema, name)
            .and_then(Item::provider))
    }

    async fn table_type(&self, name: &str) -> DfResult<Option<TableType>> {
        Ok(read(&self.catalog)
            .by_name(&self.schema, name)
            .and_then(|item| match item.details {
                ItemDetails::View(_) => Some(TableType::View),
                ItemDetails::Relation(_) => Some(TableType::Base),
                ItemDetails::Index { .. }
                | ItemDetails::Schema
                | ItemDetails::Subscription { .. }
                | ItemDetails::Sink { .. } => None,
            }))
    }

    fn table_exist(&self, name: &str) -> bool {
        read(&self.catalog)
            .by_name(&self.schema, name)
            .is_some_and(|i| i.provider().is_some())
    }
}
