//! The catalog as the system catalogs read it: plain data for the `system-catalog` crate,
//! taken from the shared catalog whenever a query scans a catalog relation.

use std::sync::{Arc, RwLock};

use compute::ArrangementSizes;
use repr::{GlobalId, ItemKind};
use system_catalog::{CatalogInput, CatalogItem, CatalogReader};

use crate::catalog::{read, Catalog, Item, ItemDetails};
use crate::roles::Roles;

/// The shared catalog and roles, as the system catalogs read them, with the arrangement
/// sizes that tell how many rows, and bytes of rows, each table holds.
#[derive(Debug, Clone)]
pub(crate) struct SharedCatalog {
    pub catalog: Arc<RwLock<Catalog>>,
    pub roles: Roles,
    pub sizes: ArrangementSizes,
}

impl CatalogReader for SharedCatalog {
    fn catalog(&self) -> Arc<CatalogInput> {
        let inputs = self.sizes.inputs();
        let catalog = read(&self.catalog);
        let table_sizes: Vec<(GlobalId, compute::InputSize)> = catalog
            .items()
            .filter(|item| item.kind == ItemKind::Table)
            .filter_map(|item| Some((item.id, *inputs.get(&item.id)?)))
            .collect();
        Arc::new(CatalogInput {
            schemas: catalog
                .user_schemas()
                .into_iter()
                .filter_map(|name| {
                    let id = catalog.schema_item(&name)?.id;
                    Some((name, id))
                })
                .collect(),
            items: catalog
                .items()
                .map(|item| (item.id, catalog_item(&catalog, item)))
                .collect(),
            comments: catalog.comments.clone(),
            public_schema: catalog.public_schema.clone(),
            default_acls: catalog
                .default_privileges
                .iter()
                .map(
                    |((role, schema, object_type), ownership)| system_catalog::DefaultAcl {
                        role: *role,
                        schema: schema.clone(),
                        object_type: *object_type,
                        ownership: ownership.clone(),
                    },
                )
                .collect(),
            roles: self.roles.all(),
            table_rows: table_sizes
                .iter()
                .map(|(id, size)| (*id, size.rows))
                .collect(),
            table_bytes: table_sizes
                .iter()
                .map(|(id, size)| (*id, size.bytes))
                .collect(),
        })
    }
}

/// `item` as plain data.
fn catalog_item(catalog: &Catalog, item: &Item) -> CatalogItem {
    let details = match &item.details {
        ItemDetails::Relation(table) => system_catalog::ItemDetails::Relation {
            columns: table.desc.schema.clone(),
            primary_key: table.desc.primary_key.clone(),
        },
        ItemDetails::View(view) => system_catalog::ItemDetails::View {
            columns: view.schema(),
        },
        ItemDetails::Index { on } => system_catalog::ItemDetails::Index {
            on: *on,
            columns: index_columns(catalog, item.id, *on),
            unique: is_unique_index(catalog, item.id, *on),
        },
        ItemDetails::Schema => system_catalog::ItemDetails::Schema,
        ItemDetails::Subscription { from } => {
            system_catalog::ItemDetails::Subscription { from: *from }
        }
        ItemDetails::Sink { from } => system_catalog::ItemDetails::Sink { from: *from },
    };
    CatalogItem {
        name: item.name.clone(),
        schema: item.schema.clone(),
        kind: item.kind,
        create_sql: item.create_sql.clone(),
        ownership: catalog.ownership(item.id).clone(),
        details,
    }
}

/// The columns of relation `on` that index `index` arranges by (none if it is not there).
/// Whether `index` is a unique index of `on`.
fn is_unique_index(catalog: &Catalog, index: GlobalId, on: GlobalId) -> bool {
    catalog
        .get(on)
        .and_then(Item::relation)
        .is_some_and(|table| table.unique_keys.iter().any(|k| k.index == index))
}

fn index_columns(catalog: &Catalog, index: GlobalId, on: GlobalId) -> Vec<usize> {
    catalog
        .get(on)
        .and_then(Item::relation)
        .and_then(|table| table.lookups.iter().find(|l| l.arrangement == index))
        .map(|lookup| lookup.columns.clone())
        .unwrap_or_default()
}
