//! The rows of `information_schema`'s views, as PostgreSQL 15 computes them from its catalogs.
//!
//! As in PostgreSQL, `tables` and `columns` cover tables, views and foreign tables (sources)
//! but not materialized views; clients that know PostgreSQL (Metabase, DBeaver) read those from
//! `pg_class`/`pg_attribute` and `pg_matviews`.

use datafusion::arrow::array::RecordBatch;
use datafusion::error::Result;

use crate::column_types::known_relation;
use crate::pg_catalog::OWNER;
use crate::rows::{RelationRows, Value};
use crate::schemas::RowsFn;
use crate::session::SessionInfo;
use crate::snapshot::{CatalogSnapshot, Relation};
use crate::types::{datetime_precision, information_schema_data_type, numeric_facts, type_info};
use crate::{INFORMATION_SCHEMA, PG_CATALOG};

/// The function building `relation`'s rows (`None`: the relation is always empty).
pub(crate) fn rows_of(relation: &str) -> Option<RowsFn> {
    Some(match relation {
        "information_schema_catalog_name" => catalog_name,
        "schemata" => schemata,
        "tables" => tables,
        "columns" => columns,
        "views" => views,
        "table_constraints" => table_constraints,
        "key_column_usage" => key_column_usage,
        "constraint_column_usage" => constraint_column_usage,
        "check_constraints" => check_constraints,
        "enabled_roles" => enabled_roles,
        "applicable_roles" => |_, _| rows("applicable_roles").into_batch(),
        _ => return None,
    })
}

fn rows(relation: &'static str) -> RelationRows {
    RelationRows::new(known_relation(INFORMATION_SCHEMA, relation))
}

fn database() -> Value {
    sql::session::DATABASE.into()
}

fn yes_no(b: bool) -> Value {
    (if b { "YES" } else { "NO" }).into()
}

fn catalog_name(_: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("information_schema_catalog_name");
    out.push(&[("catalog_name", database())]);
    out.into_batch()
}

fn schemata(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("schemata");
    for namespace in &snapshot.namespaces {
        out.push(&[
            ("catalog_name", database()),
            ("schema_name", namespace.name.as_str().into()),
            ("schema_owner", OWNER.into()),
        ]);
    }
    out.into_batch()
}

/// The relations `tables` and `columns` describe.
fn described(snapshot: &CatalogSnapshot) -> impl Iterator<Item = &Relation> + '_ {
    snapshot
        .relations
        .iter()
        .filter(|r| matches!(r.kind, 'r' | 'v' | 'f' | 'p'))
}

fn tables(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("tables");
    for relation in described(snapshot) {
        let table_type = match (relation.kind, relation.namespace.as_str()) {
            ('v', _) => "VIEW",
            ('f', _) => "FOREIGN",
            (_, "pg_temp") => "LOCAL TEMPORARY",
            _ => "BASE TABLE",
        };
        out.push(&[
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("table_type", table_type.into()),
            (
                "is_insertable_into",
                yes_no(relation.kind == 'r' && relation.item.is_some()),
            ),
            ("is_typed", "NO".into()),
        ]);
    }
    out.into_batch()
}

fn columns(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("columns");
    for relation in described(snapshot) {
        for column in &relation.columns {
            let info = type_info(column.type_oid);
            let (precision, radix, scale) = numeric_facts(column.type_oid, column.typmod);
            let is_character = matches!(column.type_oid, 1042 | 1043);
            let length = (is_character && column.typmod >= 4).then(|| i64::from(column.typmod - 4));
            let octets = match column.type_oid {
                25 | 1042 | 1043 => Some(length.map_or(1_073_741_824, |n| n * 4)),
                _ => None,
            };
            let collatable = info.is_some_and(|t| t.collation != 0);
            let udt_schema = match info {
                Some(_) => PG_CATALOG.to_string(),
                None => relation.namespace.clone(),
            };
            out.push(&[
                ("table_catalog", database()),
                ("table_schema", relation.namespace.as_str().into()),
                ("table_name", relation.name.as_str().into()),
                ("column_name", column.name.as_str().into()),
                ("ordinal_position", i64::from(column.attnum).into()),
                ("column_default", column.default.clone().into()),
                ("is_nullable", yes_no(!column.not_null)),
                (
                    "data_type",
                    information_schema_data_type(column.type_oid).into(),
                ),
                ("character_maximum_length", length.into()),
                ("character_octet_length", octets.into()),
                ("numeric_precision", precision.into()),
                ("numeric_precision_radix", radix.into()),
                ("numeric_scale", scale.into()),
                (
                    "datetime_precision",
                    datetime_precision(column.type_oid, column.typmod).into(),
                ),
                ("collation_catalog", collatable.then(database).into()),
                ("collation_schema", collatable.then_some(PG_CATALOG).into()),
                ("collation_name", collatable.then_some("default").into()),
                ("udt_catalog", database()),
                ("udt_schema", udt_schema.into()),
                (
                    "udt_name",
                    info.map(|t| t.name.clone())
                        .unwrap_or_else(|| column.type_text.clone())
                        .into(),
                ),
                (
                    "dtd_identifier",
                    i64::from(column.attnum).to_string().into(),
                ),
                ("is_self_referencing", "NO".into()),
                ("is_identity", "NO".into()),
                ("identity_cycle", "NO".into()),
                ("is_generated", "NEVER".into()),
                (
                    "is_updatable",
                    yes_no(relation.kind == 'r' && relation.item.is_some()),
                ),
            ]);
        }
    }
    out.into_batch()
}

fn views(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("views");
    for relation in snapshot.relations.iter().filter(|r| r.kind == 'v') {
        out.push(&[
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("view_definition", relation.view_query.clone().into()),
            ("check_option", "NONE".into()),
            ("is_updatable", "NO".into()),
            ("is_insertable_into", "NO".into()),
            ("is_trigger_updatable", "NO".into()),
            ("is_trigger_deletable", "NO".into()),
            ("is_trigger_insertable_into", "NO".into()),
        ]);
    }
    out.into_batch()
}

/// The name PostgreSQL gives the NOT NULL check of a column.
fn not_null_name(relation: &Relation, attnum: i16) -> String {
    format!(
        "{}_{}_{}_not_null",
        relation.namespace_oid, relation.oid, attnum
    )
}

/// User tables (the relations with constraints).
fn constrained(snapshot: &CatalogSnapshot) -> impl Iterator<Item = &Relation> + '_ {
    snapshot
        .relations
        .iter()
        .filter(|r| r.kind == 'r' && r.item.is_some())
}

fn table_constraints(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("table_constraints");
    let mut push = |relation: &Relation, name: String, kind: &str| {
        out.push(&[
            ("constraint_catalog", database()),
            ("constraint_schema", relation.namespace.as_str().into()),
            ("constraint_name", name.into()),
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("constraint_type", kind.into()),
            ("is_deferrable", "NO".into()),
            ("initially_deferred", "NO".into()),
            ("enforced", "YES".into()),
        ]);
    };
    for relation in constrained(snapshot) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            push(relation, constraint.name.clone(), "PRIMARY KEY");
        }
        for column in relation.columns.iter().filter(|c| c.not_null) {
            push(relation, not_null_name(relation, column.attnum), "CHECK");
        }
    }
    out.into_batch()
}

fn key_column_usage(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("key_column_usage");
    for relation in constrained(snapshot) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            for (position, attnum) in constraint.columns.iter().enumerate() {
                let Some(column) = relation.columns.iter().find(|c| c.attnum == *attnum) else {
                    continue;
                };
                out.push(&[
                    ("constraint_catalog", database()),
                    ("constraint_schema", relation.namespace.as_str().into()),
                    ("constraint_name", constraint.name.as_str().into()),
                    ("table_catalog", database()),
                    ("table_schema", relation.namespace.as_str().into()),
                    ("table_name", relation.name.as_str().into()),
                    ("column_name", column.name.as_str().into()),
                    ("ordinal_position", (position as i64 + 1).into()),
                ]);
            }
        }
    }
    out.into_batch()
}

fn constraint_column_usage(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("constraint_column_usage");
    for relation in constrained(snapshot) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            for attnum in &constraint.columns {
                let Some(column) = relation.columns.iter().find(|c| c.attnum == *attnum) else {
                    continue;
                };
                out.push(&[
                    ("table_catalog", database()),
                    ("table_schema", relation.namespace.as_str().into()),
                    ("table_name", relation.name.as_str().into()),
                    ("column_name", column.name.as_str().into()),
                    ("constraint_catalog", database()),
                    ("constraint_schema", relation.namespace.as_str().into()),
                    ("constraint_name", constraint.name.as_str().into()),
                ]);
            }
        }
    }
    out.into_batch()
}

fn check_constraints(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("check_constraints");
    for relation in constrained(snapshot) {
        for column in relation.columns.iter().filter(|c| c.not_null) {
            out.push(&[
                ("constraint_catalog", database()),
                ("constraint_schema", relation.namespace.as_str().into()),
                (
                    "constraint_name",
                    not_null_name(relation, column.attnum).into(),
                ),
                (
                    "check_clause",
                    format!("{} IS NOT NULL", sql::quote_ident(&column.name)).into(),
                ),
            ]);
        }
    }
    out.into_batch()
}

/// `enabled_roles`: the session's role (roles are not members of one another).
fn enabled_roles(_: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("enabled_roles");
    out.push(&[("role_name", session.user.as_str().into())]);
    out.into_batch()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog_input::CatalogInput;
    use crate::pg15_relations::relations;
    use crate::rows::empty_batch;

    #[test]
    fn every_relation_builds_from_an_empty_catalog() {
        let snapshot = CatalogSnapshot::of(&CatalogInput::default());
        let session = SessionInfo::default();
        for def in relations()
            .iter()
            .filter(|r| r.schema == INFORMATION_SCHEMA)
        {
            let batch = match rows_of(def.name) {
                Some(rows) => rows(&snapshot, &session).unwrap(),
                None => empty_batch(def).unwrap(),
            };
            assert_eq!(batch.num_columns(), def.columns.len(), "{}", def.name);
        }
        let columns = columns(&snapshot, &session).unwrap();
        assert!(columns.num_rows() > 1000, "system columns are described");
    }
}
