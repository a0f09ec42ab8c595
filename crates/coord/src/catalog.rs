//! The in-memory catalog: every item the durable catalog holds, planned and ready to use, and
//! its face towards DataFusion (a catalog provider with one schema of user objects).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use datafusion::catalog::{CatalogProvider, SchemaProvider, TableProvider};
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use repr::{GlobalId, RelationDesc};
use sql::catalog::{KeyedArrangement, RelationTable};
use sql::session::DEFAULT_SCHEMA;
use storage::ItemKind;

use crate::system_tables::{SystemSchema, SYSTEM_SCHEMA};

/// A planned catalog item.
#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub id: GlobalId,
    pub name: String,
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
            ItemDetails::Index { .. } => None,
        }
    }

    /// The word for this kind in messages ("table", "materialized view", …).
    pub fn kind_name(&self) -> &'static str {
        kind_name(self.kind)
    }
}

/// The word for a kind in messages.
pub(crate) fn kind_name(kind: ItemKind) -> &'static str {
    match kind {
        ItemKind::Table => "table",
        ItemKind::View => "view",
        ItemKind::MaterializedView => "materialized view",
        ItemKind::Index => "index",
        ItemKind::Source => "source",
        ItemKind::Sink => "sink",
    }
}

/// All planned items, by id and by name.
#[derive(Debug, Default)]
pub(crate) struct Catalog {
    items: BTreeMap<GlobalId, Item>,
    by_name: HashMap<String, GlobalId>,
    /// `COMMENT ON` texts by item and column number (0: the item itself).
    pub comments: BTreeMap<(GlobalId, u32), String>,
}

impl Catalog {
    pub fn get(&self, id: GlobalId) -> Option<&Item> {
        self.items.get(&id)
    }

    pub fn by_name(&self, name: &str) -> Option<&Item> {
        self.by_name.get(name).and_then(|id| self.items.get(id))
    }

    pub fn items(&self) -> impl Iterator<Item = &Item> {
        self.items.values()
    }

    pub fn insert(&mut self, item: Item) {
        self.by_name.insert(item.name.clone(), item.id);
        self.items.insert(item.id, item);
    }

    pub fn remove(&mut self, id: GlobalId) -> Option<Item> {
        let item = self.items.remove(&id)?;
        self.by_name.remove(&item.name);
        Some(item)
    }

    /// Items that depend on `id`, directly or through others, dependents after what they
    /// depend on (ascending id order is creation order).
    pub fn dependents(&self, id: GlobalId) -> Vec<GlobalId> {
        let mut found: Vec<GlobalId> = Vec::new();
        let mut frontier = vec![id];
        while let Some(next) = frontier.pop() {
            for item in self.items.values() {
                if item.depends_on.contains(&next) && !found.contains(&item.id) {
                    found.push(item.id);
                    frontier.push(item.id);
                }
            }
        }
        found.sort();
        found
    }

    /// Adds an arrangement usable for point lookups to a relation's provider.
    pub fn add_lookup(&mut self, relation: GlobalId, lookup: KeyedArrangement) {
        self.update_relation(relation, |table| table.lookups.push(lookup));
    }

    /// Removes the lookups served by arrangement `arrangement`.
    pub fn remove_lookup(&mut self, relation: GlobalId, arrangement: GlobalId) {
        self.update_relation(relation, |table| {
            table.lookups.retain(|l| l.arrangement != arrangement)
        });
    }

    fn update_relation(&mut self, relation: GlobalId, change: impl FnOnce(&mut RelationTable)) {
        if let Some(item) = self.items.get_mut(&relation) {
            if let ItemDetails::Relation(table) = &item.details {
                let mut updated =
                    RelationTable::new(table.id, table.name.clone(), table.desc.clone());
                updated.lookups = table.lookups.clone();
                updated.defaults = table.defaults.clone();
                change(&mut updated);
                item.details = ItemDetails::Relation(Arc::new(updated));
            }
        }
    }
}

/// A relation description with the primary key's lookup, as tables are arranged by key.
pub(crate) fn relation_table(id: GlobalId, name: &str, desc: RelationDesc) -> RelationTable {
    let key = desc.primary_key.clone();
    let mut table = RelationTable::new(id, name.to_string(), desc);
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
    public: Arc<PublicSchema>,
    system: Arc<SystemSchema>,
}

impl CatalogProviderImpl {
    pub fn new(catalog: Arc<RwLock<Catalog>>, compute: Arc<compute::ComputeController>) -> Self {
        Self {
            public: Arc::new(PublicSchema {
                catalog: catalog.clone(),
            }),
            system: Arc::new(SystemSchema::new(catalog, compute)),
        }
    }
}

impl CatalogProvider for CatalogProviderImpl {
    fn schema_names(&self) -> Vec<String> {
        vec![DEFAULT_SCHEMA.to_string(), SYSTEM_SCHEMA.to_string()]
    }

    fn schema(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        match name {
            DEFAULT_SCHEMA => Some(self.public.clone() as Arc<dyn SchemaProvider>),
            SYSTEM_SCHEMA => Some(self.system.clone() as Arc<dyn SchemaProvider>),
            _ => None,
        }
    }
}

/// The schema holding user objects.
#[derive(Debug)]
pub(crate) struct PublicSchema {
    catalog: Arc<RwLock<Catalog>>,
}

impl PublicSchema {
    fn read(&self) -> std::sync::RwLockReadGuard<'_, Catalog> {
        self.catalog.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[async_trait]
impl SchemaProvider for PublicSchema {
    fn table_names(&self) -> Vec<String> {
        self.read()
            .items()
            .filter(|i| i.provider().is_some())
            .map(|i| i.name.clone())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        Ok(self.read().by_name(name).and_then(Item::provider))
    }

    async fn table_type(&self, name: &str) -> DfResult<Option<TableType>> {
        Ok(self
            .read()
            .by_name(name)
            .and_then(|item| match item.details {
                ItemDetails::View(_) => Some(TableType::View),
                ItemDetails::Relation(_) => Some(TableType::Base),
                ItemDetails::Index { .. } => None,
            }))
    }

    fn table_exist(&self, name: &str) -> bool {
        self.read()
            .by_name(name)
            .is_some_and(|i| i.provider().is_some())
    }
}
