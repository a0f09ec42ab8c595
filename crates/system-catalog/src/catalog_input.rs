//! Fluxion's catalog as the system catalogs read it: plain data, taken whenever a query scans
//! a catalog relation or calls a catalog function, through a [`CatalogReader`].

use std::collections::BTreeMap;
use std::fmt::Debug;
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use repr::{GlobalId, ItemKind, Ownership};
use sql::session::DEFAULT_SCHEMA;

/// Gives the current catalog; implemented by whoever owns the catalog.
pub trait CatalogReader: Send + Sync + Debug {
    /// The catalog as it is now.
    fn catalog(&self) -> Arc<CatalogInput>;
}

/// Every item of Fluxion's catalog, as plain data.
#[derive(Clone, Debug, Default)]
pub struct CatalogInput {
    /// The user schemas by name, with their items' ids (`public` is built in and not here).
    pub schemas: BTreeMap<String, GlobalId>,
    /// Every item, schemas included, by id (ascending id order is creation order).
    pub items: BTreeMap<GlobalId, CatalogItem>,
    /// The roles, by name.
    pub roles: Vec<repr::Role>,
    /// `COMMENT ON` texts by item and column number (0: the item itself).
    pub comments: BTreeMap<(GlobalId, u32), String>,
    /// The rows each table holds (every diff written to it, summed), by table.
    pub table_rows: BTreeMap<GlobalId, i64>,
    /// The bytes of the rows each table holds (their encodings in its arrangement), by table.
    pub table_bytes: BTreeMap<GlobalId, i64>,
    /// The owner and ACL of the built-in `public` schema.
    pub public_schema: Ownership,
    /// Default privileges (`ALTER DEFAULT PRIVILEGES`), as `pg_default_acl` lists them.
    pub default_acls: Vec<DefaultAcl>,
}

/// One entry of default privileges: what role `role`'s new objects of one kind get.
#[derive(Clone, Debug)]
pub struct DefaultAcl {
    /// The role whose new objects it is about.
    pub role: u32,
    /// The schema they are created in (`None`: any).
    pub schema: Option<String>,
    /// The kind of object, as `pg_default_acl.defaclobjtype` (`r` relations, `n` schemas).
    pub object_type: char,
    /// The privileges, as an object owned by `role` would hold them.
    pub ownership: Ownership,
}

impl CatalogInput {
    /// Whether a schema of this name exists (`public` always does).
    pub fn has_schema(&self, name: &str) -> bool {
        name == DEFAULT_SCHEMA || self.schemas.contains_key(name)
    }
}

/// One catalog item.
#[derive(Clone, Debug)]
pub struct CatalogItem {
    /// The name within its schema (a schema's own name for a schema).
    pub name: String,
    /// The schema the item lives in (empty for a schema).
    pub schema: String,
    /// What kind of object it is.
    pub kind: ItemKind,
    /// The statement that creates it, as stored.
    pub create_sql: String,
    /// Its owner and ACL.
    pub ownership: Ownership,
    /// What the catalogs show of this kind of item.
    pub details: ItemDetails,
}

/// What the catalogs show of each kind of item.
#[derive(Clone, Debug)]
pub enum ItemDetails {
    /// A table, source or materialized view: an arranged relation.
    Relation {
        /// Its columns.
        columns: SchemaRef,
        /// The positions of its primary key's columns, if it has one.
        primary_key: Option<Vec<usize>>,
    },
    /// A view: a query inlined where it is used.
    View {
        /// Its columns.
        columns: SchemaRef,
    },
    /// An index: another arrangement of the relation `on`.
    Index {
        /// The indexed relation.
        on: GlobalId,
        /// The positions of the indexed columns in `on`'s columns, in key order.
        columns: Vec<usize>,
        /// A unique index.
        unique: bool,
    },
    /// A schema.
    Schema,
    /// A durable subscription to `from`.
    Subscription {
        /// The watched object.
        from: GlobalId,
    },
    /// A sink delivering the changes of `from`.
    Sink {
        /// The watched object.
        from: GlobalId,
    },
}
