//! The catalog as PostgreSQL's catalogs describe it: namespaces, relations with their columns,
//! indexes and constraints, each with its OID, taken from Fluxion's catalog for one query.
//!
//! Every relation a client can see is here: user tables (`relkind 'r'`), views (`'v'`),
//! materialized views (`'m'`), sources (`'f'`), indexes (`'i'`, including the one behind each
//! primary key), and the system relations of `pg_catalog`, `information_schema` and
//! `fluxion_catalog`.

use std::collections::BTreeMap;

use datafusion::arrow::datatypes::SchemaRef;
use repr::pg_type::{format_type, pg_type_of_field, type_modifier};
use repr::{GlobalId, ItemKind, Ownership};

use crate::catalog_input::{CatalogInput, CatalogItem, ItemDetails};
use crate::fluxion_catalog;
use crate::oids;
use crate::pg15_relations::relations;
use crate::privileges::{system_relation_ownership, system_schema_ownership};
use crate::{INFORMATION_SCHEMA, PG_CATALOG, SYSTEM_SCHEMA};

/// A schema.
#[derive(Clone, Debug)]
pub(crate) struct Namespace {
    pub oid: u32,
    pub name: String,
    /// Its owner and ACL.
    pub ownership: Ownership,
}

/// A column of a relation.
#[derive(Clone, Debug)]
pub(crate) struct Column {
    pub name: String,
    /// 1-based position (`pg_attribute.attnum`).
    pub attnum: i16,
    pub type_oid: u32,
    /// `atttypmod`: precision and scale of numeric, length of varchar, else -1.
    pub typmod: i32,
    /// `attlen`.
    pub type_len: i16,
    pub not_null: bool,
    /// The DEFAULT expression, as SQL.
    pub default: Option<String>,
    /// What `format_type` prints for the column.
    pub type_text: String,
}

/// An index: a user index, or the one behind a primary key.
#[derive(Clone, Debug)]
pub(crate) struct Index {
    pub oid: u32,
    pub name: String,
    pub namespace_oid: u32,
    pub table_oid: u32,
    /// The indexed columns' attnums, in key order.
    pub columns: Vec<i16>,
    /// Its table's owner, which owns it (an index has no ACL of its own).
    pub owner: u32,
    pub is_primary: bool,
    /// A unique index (every primary key's is).
    pub is_unique: bool,
}

/// A primary-key constraint.
#[derive(Clone, Debug)]
pub(crate) struct Constraint {
    pub oid: u32,
    pub name: String,
    pub namespace_oid: u32,
    pub table_oid: u32,
    pub index_oid: u32,
    pub columns: Vec<i16>,
}

/// A relation (table, view, materialized view, source or system relation).
#[derive(Clone, Debug)]
pub(crate) struct Relation {
    pub oid: u32,
    pub name: String,
    pub namespace: String,
    pub namespace_oid: u32,
    /// `pg_class.relkind`.
    pub kind: char,
    pub columns: Vec<Column>,
    /// `pg_class.reltype`: the relation's row type (0 for system relations).
    pub row_type_oid: u32,
    /// The query of a view or materialized view.
    pub view_query: Option<String>,
    /// The catalog item of a user relation.
    pub item: Option<GlobalId>,
    /// Its owner and ACL.
    pub ownership: Ownership,
}

/// The catalog for one query.
#[derive(Clone, Debug, Default)]
pub(crate) struct CatalogSnapshot {
    pub namespaces: Vec<Namespace>,
    pub relations: Vec<Relation>,
    pub indexes: Vec<Index>,
    pub constraints: Vec<Constraint>,
    /// Comments by (object oid, sub-object: column number or 0), with the catalog the object
    /// lives in (`pg_class`, `pg_namespace`).
    pub comments: Vec<Comment>,
    /// The estimated rows of each table, by table oid.
    pub table_rows: BTreeMap<u32, i64>,
    /// The bytes of each table's rows, by table oid.
    pub table_bytes: BTreeMap<u32, i64>,
    /// The roles, by name.
    pub roles: Vec<repr::Role>,
    /// Default privileges.
    pub default_acls: Vec<crate::DefaultAcl>,
}

/// A `COMMENT ON` text, as `pg_description` holds it.
#[derive(Clone, Debug)]
pub(crate) struct Comment {
    pub object_oid: u32,
    /// The oid of the catalog of the object (`pg_class` 1259, `pg_namespace` 2615).
    pub class_oid: u32,
    pub sub_id: i32,
    pub text: String,
}

/// `pg_class.oid` of `pg_class`.
pub(crate) const PG_CLASS_OID: u32 = 1259;
/// `pg_class.oid` of `pg_namespace`.
pub(crate) const PG_NAMESPACE_OID: u32 = 2615;

impl CatalogSnapshot {
    /// The name of the role with this OID.
    pub(crate) fn role_name(&self, oid: u32) -> Option<String> {
        self.roles
            .iter()
            .find(|r| r.oid == oid)
            .map(|r| r.name.clone())
    }

    /// The OID of the role called `name`.
    pub(crate) fn role_oid(&self, name: &str) -> Option<u32> {
        self.roles.iter().find(|r| r.name == name).map(|r| r.oid)
    }

    /// Takes the snapshot of `catalog`.
    pub fn of(catalog: &CatalogInput) -> Self {
        let mut snapshot = CatalogSnapshot::default();
        snapshot.add_namespaces(catalog);
        snapshot.add_system_relations();
        for (id, item) in &catalog.items {
            snapshot.add_item(*id, item);
        }
        snapshot.roles = catalog.roles.clone();
        snapshot.default_acls = catalog.default_acls.clone();
        snapshot.table_rows = catalog
            .table_rows
            .iter()
            .map(|(id, rows)| (oids::item_oid(*id), *rows))
            .collect();
        snapshot.table_bytes = catalog
            .table_bytes
            .iter()
            .map(|(id, bytes)| (oids::item_oid(*id), *bytes))
            .collect();
        for ((id, column), text) in &catalog.comments {
            let Some(item) = catalog.items.get(id) else {
                continue;
            };
            let class_oid = if item.kind == ItemKind::Schema {
                PG_NAMESPACE_OID
            } else {
                PG_CLASS_OID
            };
            snapshot.comments.push(Comment {
                object_oid: oids::item_oid(*id),
                class_oid,
                sub_id: *column as i32,
                text: text.clone(),
            });
        }
        snapshot
    }

    /// The namespace called `name`.
    pub fn namespace(&self, name: &str) -> Option<&Namespace> {
        self.namespaces.iter().find(|n| n.name == name)
    }

    /// The relation with this oid.
    pub fn relation(&self, oid: u32) -> Option<&Relation> {
        self.relations.iter().find(|r| r.oid == oid)
    }

    /// The bytes relation or index `oid` holds: a table's rows, an index's copy of its
    /// table's rows (0 for what holds no counted rows).
    pub fn relation_bytes(&self, oid: u32) -> i64 {
        let table = self.index(oid).map_or(oid, |index| index.table_oid);
        self.table_bytes.get(&table).copied().unwrap_or(0)
    }

    /// The bytes of the indexes of relation `oid`.
    pub fn indexes_bytes(&self, oid: u32) -> i64 {
        self.indexes
            .iter()
            .filter(|index| index.table_oid == oid)
            .map(|index| self.relation_bytes(index.oid))
            .sum()
    }

    /// The index with this oid.
    pub fn index(&self, oid: u32) -> Option<&Index> {
        self.indexes.iter().find(|i| i.oid == oid)
    }

    /// The schema and name of the relation or index `oid`.
    pub fn class_name(&self, oid: u32) -> Option<(&str, &str)> {
        if let Some(relation) = self.relation(oid) {
            return Some((&relation.namespace, &relation.name));
        }
        let index = self.index(oid)?;
        let namespace = self
            .namespaces
            .iter()
            .find(|n| n.oid == index.namespace_oid)?;
        Some((&namespace.name, &index.name))
    }

    /// Whether an unqualified `name` finds `namespace.name` when the schemas `searched` are
    /// searched in order (the first of them with a relation of that name is `namespace`).
    pub fn is_visible(&self, searched: &[String], namespace: &str, name: &str) -> bool {
        searched
            .iter()
            .find(|schema| self.relation_named(schema, name).is_some())
            .is_some_and(|first| first == namespace)
    }

    /// The relation or index `namespace.name`.
    pub fn relation_named(&self, namespace: &str, name: &str) -> Option<u32> {
        self.relations
            .iter()
            .find(|r| r.namespace == namespace && r.name == name)
            .map(|r| r.oid)
            .or_else(|| {
                let namespace_oid = self.namespace(namespace)?.oid;
                self.indexes
                    .iter()
                    .find(|i| i.namespace_oid == namespace_oid && i.name == name)
                    .map(|i| i.oid)
            })
    }

    /// The comment on `object_oid` (column `sub_id`, 0 for the object itself).
    pub fn comment(&self, object_oid: u32, sub_id: i32) -> Option<&str> {
        self.comments
            .iter()
            .find(|c| c.object_oid == object_oid && c.sub_id == sub_id)
            .map(|c| c.text.as_str())
    }

    fn add_namespaces(&mut self, catalog: &CatalogInput) {
        let builtin = [
            (oids::PG_CATALOG_NAMESPACE, PG_CATALOG),
            (oids::PG_TOAST_NAMESPACE, "pg_toast"),
            (oids::PUBLIC_NAMESPACE, sql::session::DEFAULT_SCHEMA),
            (oids::INFORMATION_SCHEMA_NAMESPACE, INFORMATION_SCHEMA),
            (oids::FLUXION_CATALOG_NAMESPACE, SYSTEM_SCHEMA),
        ];
        for (oid, name) in builtin {
            let ownership = if oid == oids::PUBLIC_NAMESPACE {
                catalog.public_schema.clone()
            } else {
                system_schema_ownership(name)
            };
            self.namespaces.push(Namespace {
                oid,
                name: name.to_string(),
                ownership,
            });
        }
        for (name, id) in &catalog.schemas {
            self.namespaces.push(Namespace {
                oid: oids::item_oid(*id),
                name: name.clone(),
                ownership: catalog
                    .items
                    .get(id)
                    .map(|item| item.ownership.clone())
                    .unwrap_or_default(),
            });
        }
    }

    fn add_system_relations(&mut self) {
        for def in relations() {
            let namespace_oid = if def.schema == PG_CATALOG {
                oids::PG_CATALOG_NAMESPACE
            } else {
                oids::INFORMATION_SCHEMA_NAMESPACE
            };
            let columns = def
                .columns
                .iter()
                .enumerate()
                .map(|(i, c)| Column {
                    name: c.name.to_string(),
                    attnum: i as i16 + 1,
                    type_oid: c.type_oid,
                    typmod: -1,
                    type_len: repr::pg_type::pg_type_by_oid(c.type_oid).map_or(-1, |t| t.len),
                    not_null: c.not_null,
                    default: None,
                    type_text: c.type_name.to_string(),
                })
                .collect();
            self.relations.push(Relation {
                oid: def.oid,
                name: def.name.to_string(),
                namespace: def.schema.to_string(),
                namespace_oid,
                kind: def.kind,
                columns,
                row_type_oid: 0,
                view_query: None,
                item: None,
                ownership: system_relation_ownership(def.schema, def.name),
            });
        }
        for (name, schema) in fluxion_catalog::relations() {
            self.relations.push(Relation {
                oid: fluxion_catalog::relation_oid(name),
                name: name.to_string(),
                namespace: SYSTEM_SCHEMA.to_string(),
                namespace_oid: oids::FLUXION_CATALOG_NAMESPACE,
                kind: 'v',
                columns: columns_of(&schema, &BTreeMap::new()),
                row_type_oid: 0,
                view_query: None,
                item: None,
                ownership: system_relation_ownership(SYSTEM_SCHEMA, name),
            });
        }
    }

    fn add_item(&mut self, id: GlobalId, item: &CatalogItem) {
        let Some(namespace_oid) = self.namespace(&item.schema).map(|n| n.oid) else {
            return;
        };
        let oid = oids::item_oid(id);
        let (kind, schema, primary_key, view_query) = match &item.details {
            ItemDetails::Relation {
                columns,
                primary_key,
            } => {
                let kind = match item.kind {
                    ItemKind::Table => 'r',
                    ItemKind::Source => 'f',
                    _ => 'm',
                };
                let view_query =
                    (kind == 'm').then(|| sql::CreateView::stored_query_text(&item.create_sql));
                (kind, columns.clone(), primary_key.clone(), view_query)
            }
            ItemDetails::View { columns } => (
                'v',
                columns.clone(),
                None,
                Some(sql::CreateView::stored_query_text(&item.create_sql)),
            ),
            ItemDetails::Index {
                on,
                columns,
                unique,
            } => {
                self.add_user_index(id, item, *on, columns, *unique, namespace_oid);
                return;
            }
            // Not relations: PostgreSQL has no such objects in pg_class.
            ItemDetails::Schema | ItemDetails::Subscription { .. } | ItemDetails::Sink { .. } => {
                return
            }
        };
        let defaults = if kind == 'r' {
            sql::column_defaults(&item.create_sql).into_iter().collect()
        } else {
            BTreeMap::new()
        };
        let mut columns = columns_of(&schema, &defaults);
        if kind != 'r' {
            // Postgres reports every column of a view as nullable.
            for column in &mut columns {
                column.not_null = false;
            }
        }
        if let Some(key) = primary_key {
            let attnums: Vec<i16> = key.iter().map(|c| *c as i16 + 1).collect();
            let name = format!("{}_pkey", item.name);
            self.indexes.push(Index {
                oid: oids::primary_key_index_oid(id),
                name: name.clone(),
                namespace_oid,
                table_oid: oid,
                columns: attnums.clone(),
                owner: item.ownership.owner,
                is_primary: true,
                is_unique: true,
            });
            self.constraints.push(Constraint {
                oid: oids::primary_key_constraint_oid(id),
                name,
                namespace_oid,
                table_oid: oid,
                index_oid: oids::primary_key_index_oid(id),
                columns: attnums,
            });
        }
        self.relations.push(Relation {
            oid,
            name: item.name.clone(),
            namespace: item.schema.clone(),
            namespace_oid,
            kind,
            columns,
            row_type_oid: oids::row_type_oid(id),
            view_query,
            item: Some(id),
            ownership: item.ownership.clone(),
        });
    }

    fn add_user_index(
        &mut self,
        id: GlobalId,
        item: &CatalogItem,
        on: GlobalId,
        columns: &[usize],
        unique: bool,
        namespace: u32,
    ) {
        let table_oid = oids::item_oid(on);
        let owner = self
            .relation(table_oid)
            .map_or(item.ownership.owner, |table| table.ownership.owner);
        self.indexes.push(Index {
            oid: oids::item_oid(id),
            name: item.name.clone(),
            namespace_oid: namespace,
            table_oid,
            columns: columns.iter().map(|c| *c as i16 + 1).collect(),
            owner,
            is_primary: false,
            is_unique: unique,
        });
    }
}

/// The columns of a relation with this Arrow schema.
fn columns_of(schema: &SchemaRef, defaults: &BTreeMap<String, String>) -> Vec<Column> {
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, field)| {
            let pg = pg_type_of_field(field);
            Column {
                name: field.name().clone(),
                attnum: i as i16 + 1,
                type_oid: pg.oid,
                typmod: type_modifier(field),
                type_len: pg.len,
                not_null: !field.is_nullable(),
                default: defaults.get(field.name()).cloned(),
                type_text: format_type(field),
            }
        })
        .collect()
}
