//! How PostgreSQL's catalog column types are held in Arrow.
//!
//! Catalog columns use types Arrow does not have (`oid`, `name`, `"char"`, `int2vector`,
//! `regproc`, `aclitem[]`, `pg_node_tree`). Each is stored in the closest Arrow type (oids as
//! `Int64`, so they compare and join with integer literals; names as `Utf8`; vectors as
//! lists) and the field remembers the Postgres type's oid and `format_type` text in its
//! metadata, so clients see the type PostgreSQL reports.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use repr::pg_type::{DECLARED_TYPE_KEY, PG_TYPE_OID_KEY};

use crate::pg15_relations::{relations, ColumnDef, RelationDef};

/// The Arrow type that holds values of the Postgres type `type_oid`.
pub(crate) fn arrow_type(type_oid: u32) -> DataType {
    let list = |item: DataType| DataType::List(Arc::new(Field::new("item", item, true)));
    match type_oid {
        16 => DataType::Boolean,
        17 => DataType::Binary,
        21 => DataType::Int16,
        23 => DataType::Int32,
        20 | 24 | 26 | 28 | 29 | 2205 | 2206 | 4089 | 4096 | 5069 => DataType::Int64,
        700 => DataType::Float32,
        701 => DataType::Float64,
        1114 => DataType::Timestamp(TimeUnit::Microsecond, None),
        1184 => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
        22 | 1005 => list(DataType::Int16),
        1007 => list(DataType::Int32),
        30 | 1016 | 1028 | 1008 => list(DataType::Int64),
        1000 => list(DataType::Boolean),
        1021 => list(DataType::Float32),
        1022 => list(DataType::Float64),
        oid if is_array_type(oid) => list(DataType::Utf8),
        _ => DataType::Utf8,
    }
}

/// Whether `type_oid` is one of the array types catalog columns use.
pub(crate) fn is_array_type(type_oid: u32) -> bool {
    matches!(
        type_oid,
        1000 | 1002 | 1003 | 1005 | 1007 | 1008 | 1009 | 1016 | 1021 | 1022 | 1028 | 1034 | 1015
    )
}

/// The Arrow field of a catalog column.
pub(crate) fn column_field(column: &ColumnDef) -> Field {
    let data_type = arrow_type(column.type_oid);
    let metadata = HashMap::from([
        (PG_TYPE_OID_KEY.to_string(), column.type_oid.to_string()),
        (DECLARED_TYPE_KEY.to_string(), column.type_name.to_string()),
    ]);
    // Every column is nullable for planning: outer joins and NULL defaults must not trip
    // DataFusion's nullability checks. `pg_attribute.attnotnull` still says what PG says.
    Field::new(column.name, data_type, true).with_metadata(metadata)
}

/// The Arrow schema of a catalog relation (built once per relation).
pub(crate) fn relation_schema(relation: &'static RelationDef) -> SchemaRef {
    static SCHEMAS: OnceLock<HashMap<(&'static str, &'static str), SchemaRef>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            relations()
                .iter()
                .map(|r| {
                    let fields: Vec<Field> = r.columns.iter().map(column_field).collect();
                    ((r.schema, r.name), Arc::new(Schema::new(fields)))
                })
                .collect()
        })
        .get(&(relation.schema, relation.name))
        .cloned()
        .expect("invariant: every relation definition has a schema")
}

/// The definition of `schema.name`, if Fluxion presents that relation.
pub(crate) fn relation_def(schema: &str, name: &str) -> Option<&'static RelationDef> {
    relations()
        .iter()
        .find(|r| r.schema == schema && r.name == name)
}

/// The definition of a relation Fluxion's own code builds rows for.
pub(crate) fn known_relation(schema: &str, name: &str) -> &'static RelationDef {
    relation_def(schema, name)
        .unwrap_or_else(|| panic!("invariant: {schema}.{name} is a generated relation"))
}
