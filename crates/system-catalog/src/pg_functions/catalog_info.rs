//! Functions describing catalog objects: `format_type`, `pg_get_expr`, `pg_get_indexdef`,
//! `pg_get_constraintdef`, `pg_get_viewdef`, `obj_description`, `col_description`, sizes …

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ScalarUDF, Volatility};

use super::{any_arity, int_arg, oid_arg, row_function, text, text_arg, FunctionEnv};
use crate::builtin_functions::builtin_function_types;
use crate::definitions::{constraint_definition, index_column_definition};
use crate::snapshot::{CatalogSnapshot, PG_CLASS_OID, PG_NAMESPACE_OID};
use crate::types::format_type;

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let stable = Volatility::Stable;
    let mut functions = vec![
        row_function(
            "format_type",
            any_arity(&[2], stable),
            DataType::Utf8,
            |args| {
                let Some(oid) = oid_arg(&args[0]) else {
                    return Ok(text(None));
                };
                let typmod = int_arg(&args[1]).unwrap_or(-1) as i32;
                Ok(text(Some(format_type(oid, typmod))))
            },
        ),
        // Fluxion keeps expressions as SQL text, so the "node tree" already is the text.
        row_function(
            "pg_get_expr",
            any_arity(&[2, 3], stable),
            DataType::Utf8,
            |args| Ok(text(text_arg(&args[0]))),
        ),
        row_function(
            "pg_encoding_to_char",
            any_arity(&[1], Volatility::Immutable),
            DataType::Utf8,
            |args| {
                Ok(text(int_arg(&args[0]).map(|e| {
                    match e {
                        0 => "SQL_ASCII",
                        6 => "UTF8",
                        _ => "",
                    }
                    .to_string()
                })))
            },
        ),
        // Fluxion has no temporary schemas (dbt's catalog query asks).
        row_function(
            "pg_is_other_temp_schema",
            any_arity(&[1], stable),
            DataType::Boolean,
            |_| Ok(ScalarValue::Boolean(Some(false))),
        ),
        row_function(
            "pg_get_serial_sequence",
            any_arity(&[2], stable),
            DataType::Utf8,
            |_| Ok(text(None)),
        ),
        row_function(
            "pg_size_pretty",
            any_arity(&[1], Volatility::Immutable),
            DataType::Utf8,
            |args| Ok(text(int_arg(&args[0]).map(size_pretty))),
        ),
    ];
    for name in [
        "pg_get_triggerdef",
        "pg_get_ruledef",
        "pg_get_partkeydef",
        "pg_get_partition_constraintdef",
        "pg_get_statisticsobjdef_columns",
        "pg_get_function_arg_default",
    ] {
        functions.push(row_function(
            name,
            any_arity(&[1, 2], stable),
            DataType::Utf8,
            |_| Ok(text(None)),
        ));
    }
    functions.push(row_function(
        "pg_tablespace_location",
        any_arity(&[1], stable),
        DataType::Utf8,
        |_| Ok(text(Some(String::new()))),
    ));
    functions.push(row_function(
        "pg_relation_is_publishable",
        any_arity(&[1], stable),
        DataType::Boolean,
        |_| Ok(ScalarValue::Boolean(Some(false))),
    ));
    functions.extend(snapshot_functions(env));
    functions.extend(size_functions(env));
    functions
}

/// `pg_relation_size` and its kin: the bytes of the rows a relation's arrangements hold (an
/// index holds a copy of its table's rows), looked up by oid or by name.
fn size_functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    type Size = fn(&CatalogSnapshot, u32) -> i64;
    let sizes: [(&str, Size); 4] = [
        ("pg_relation_size", CatalogSnapshot::relation_bytes),
        ("pg_table_size", CatalogSnapshot::relation_bytes),
        ("pg_indexes_size", CatalogSnapshot::indexes_bytes),
        ("pg_total_relation_size", |snapshot, oid| {
            snapshot.relation_bytes(oid) + snapshot.indexes_bytes(oid)
        }),
    ];
    let mut functions: Vec<ScalarUDF> = sizes
        .into_iter()
        .map(|(name, size)| {
            let env = env.clone();
            row_function(
                name,
                any_arity(&[1, 2], Volatility::Stable),
                DataType::Int64,
                move |args| {
                    let snapshot = env.snapshot();
                    let oid = relation_arg(&snapshot, &args[0]);
                    Ok(ScalarValue::Int64(oid.map(|oid| size(&snapshot, oid))))
                },
            )
        })
        .collect();
    let env = env.clone();
    functions.push(row_function(
        "pg_database_size",
        any_arity(&[1], Volatility::Stable),
        DataType::Int64,
        move |args| {
            let snapshot = env.snapshot();
            let total = snapshot
                .table_bytes
                .keys()
                .map(|oid| snapshot.relation_bytes(*oid) + snapshot.indexes_bytes(*oid))
                .sum();
            Ok(ScalarValue::Int64(text_arg(&args[0]).map(|_| total)))
        },
    ));
    functions
}

/// The relation an argument names: an oid, or a name as `'schema.name'::regclass` reads it.
fn relation_arg(snapshot: &CatalogSnapshot, arg: &ScalarValue) -> Option<u32> {
    if let Some(oid) = oid_arg(arg) {
        return Some(oid);
    }
    let name = text_arg(arg)?;
    let (schema, relation) = match name.split_once('.') {
        Some((schema, relation)) => (schema.to_string(), relation.to_string()),
        None => (sql::session::DEFAULT_SCHEMA.to_string(), name),
    };
    snapshot.relation_named(&schema, &relation)
}

/// Functions that look objects up in the catalog snapshot.
fn snapshot_functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let stable = Volatility::Stable;
    let with_snapshot = |f: fn(&CatalogSnapshot, &[ScalarValue]) -> Option<String>| {
        let env = env.clone();
        move |args: &[ScalarValue]| Ok(text(f(&env.snapshot(), args)))
    };
    vec![
        row_function(
            "pg_get_userbyid",
            any_arity(&[1], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| Some(snapshot.owner_name(oid_arg(&args[0])?))),
        ),
        row_function(
            "pg_get_indexdef",
            any_arity(&[1, 3], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| {
                let index = snapshot.index(oid_arg(&args[0])?)?;
                let column = args.get(1).and_then(int_arg).unwrap_or(0);
                index_column_definition(snapshot, index, column)
            }),
        ),
        row_function(
            "pg_get_constraintdef",
            any_arity(&[1, 2], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| {
                let oid = oid_arg(&args[0])?;
                let constraint = snapshot.constraints.iter().find(|c| c.oid == oid)?;
                Some(constraint_definition(snapshot, constraint))
            }),
        ),
        row_function(
            "pg_get_viewdef",
            any_arity(&[1, 2], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| {
                let oid = relation_arg(snapshot, &args[0])?;
                snapshot.relation(oid)?.view_query.clone()
            }),
        ),
        row_function(
            "obj_description",
            any_arity(&[1, 2], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| {
                let oid = oid_arg(&args[0])?;
                let class_oid = match args.get(1).and_then(text_arg).as_deref() {
                    Some("pg_namespace") => PG_NAMESPACE_OID,
                    Some("pg_class") | None => PG_CLASS_OID,
                    Some(_) => return None,
                };
                snapshot
                    .comments
                    .iter()
                    .find(|c| c.object_oid == oid && c.sub_id == 0 && c.class_oid == class_oid)
                    .map(|c| c.text.clone())
            }),
        ),
        row_function(
            "col_description",
            any_arity(&[2], stable),
            DataType::Utf8,
            with_snapshot(|snapshot, args| {
                let oid = oid_arg(&args[0])?;
                let column = int_arg(&args[1])? as i32;
                snapshot.comment(oid, column).map(str::to_string)
            }),
        ),
        row_function(
            "shobj_description",
            any_arity(&[2], stable),
            DataType::Utf8,
            |_| Ok(text(None)),
        ),
        row_function(
            "pg_get_function_result",
            any_arity(&[1], stable),
            DataType::Utf8,
            |args| Ok(text(function_signature(&args[0]).map(|(result, _)| result))),
        ),
        row_function(
            "pg_get_function_arguments",
            any_arity(&[1], stable),
            DataType::Utf8,
            |args| {
                Ok(text(
                    function_signature(&args[0]).map(|(_, arguments)| arguments),
                ))
            },
        ),
        row_function(
            "pg_get_function_identity_arguments",
            any_arity(&[1], stable),
            DataType::Utf8,
            |args| {
                Ok(text(
                    function_signature(&args[0]).map(|(_, arguments)| arguments),
                ))
            },
        ),
    ]
}

/// The result type and argument types of a built-in function, as `format_type` prints them.
fn function_signature(oid: &ScalarValue) -> Option<(String, String)> {
    let (result, arguments) = builtin_function_types(oid_arg(oid)?)?;
    let arguments = arguments
        .iter()
        .map(|t| format_type(*t, -1))
        .collect::<Vec<_>>()
        .join(", ");
    Some((format_type(result, -1), arguments))
}

/// `pg_size_pretty`: bytes in the largest unit that keeps the number at least 10.
fn size_pretty(bytes: i64) -> String {
    let mut size = bytes;
    for unit in ["bytes", "kB", "MB", "GB", "TB"] {
        if size.abs() < 10 * 1024 || unit == "TB" {
            return format!("{size} {unit}");
        }
        size = (size + 512) / 1024;
    }
    format!("{size} PB")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_like_postgres() {
        assert_eq!(size_pretty(0), "0 bytes");
        assert_eq!(size_pretty(8192), "8192 bytes");
        assert_eq!(size_pretty(16384), "16 kB");
        assert_eq!(size_pretty(10 * 1024 * 1024), "10 MB");
    }
}
