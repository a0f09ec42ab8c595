//! Facts about PostgreSQL's built-in types, read from the built-in `pg_type` rows, and the
//! names PostgreSQL gives them (`format_type`, `information_schema.columns.data_type`).

use std::collections::HashMap;
use std::sync::OnceLock;

use crate::builtin_rows::builtin_rows;
use crate::column_types::known_relation;
use crate::rows::Value;

/// The columns of a built-in type that other catalogs need.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct TypeInfo {
    pub oid: u32,
    pub name: String,
    pub len: i16,
    pub by_value: bool,
    /// `typtype`: `b` base, `c` composite, `p` pseudo, …
    pub kind: String,
    pub category: String,
    pub align: String,
    pub storage: String,
    /// The element type of an array type (0 otherwise).
    pub element: u32,
    /// The array type of this type (0 if none).
    pub array: u32,
    pub collation: u32,
}

fn types() -> &'static (HashMap<u32, TypeInfo>, HashMap<String, u32>) {
    static TYPES: OnceLock<(HashMap<u32, TypeInfo>, HashMap<String, u32>)> = OnceLock::new();
    TYPES.get_or_init(|| {
        let def = known_relation("pg_catalog", "pg_type");
        let position = |name: &str| {
            def.columns
                .iter()
                .position(|c| c.name == name)
                .expect("invariant: pg_type has the column")
        };
        let (oid, name, len, byval, kind, category, align, storage, elem, array, collation) = (
            position("oid"),
            position("typname"),
            position("typlen"),
            position("typbyval"),
            position("typtype"),
            position("typcategory"),
            position("typalign"),
            position("typstorage"),
            position("typelem"),
            position("typarray"),
            position("typcollation"),
        );
        let int = |v: &Value| match v {
            Value::Int(i) => *i,
            _ => 0,
        };
        let text = |v: &Value| match v {
            Value::Text(t) => t.clone(),
            _ => String::new(),
        };
        let mut by_oid = HashMap::new();
        let mut by_name = HashMap::new();
        for row in builtin_rows("pg_type") {
            let info = TypeInfo {
                oid: int(&row[oid]) as u32,
                name: text(&row[name]),
                len: int(&row[len]) as i16,
                by_value: matches!(row[byval], Value::Bool(true)),
                kind: text(&row[kind]),
                category: text(&row[category]),
                align: text(&row[align]),
                storage: text(&row[storage]),
                element: int(&row[elem]) as u32,
                array: int(&row[array]) as u32,
                collation: int(&row[collation]) as u32,
            };
            by_name.insert(info.name.clone(), info.oid);
            by_oid.insert(info.oid, info);
        }
        (by_oid, by_name)
    })
}

/// The built-in type with this oid.
pub(crate) fn type_info(oid: u32) -> Option<&'static TypeInfo> {
    types().0.get(&oid)
}

/// The oid of a type written the way SQL and `regtype` accept it (`int4`, `integer`,
/// `character varying`, `text[]`, `pg_catalog.int8`).
pub(crate) fn type_oid_by_name(name: &str) -> Option<u32> {
    let name = name.trim().to_lowercase();
    let name = name.strip_prefix("pg_catalog.").unwrap_or(&name).trim();
    if let Some(element) = name.strip_suffix("[]") {
        let element = type_oid_by_name(element)?;
        return type_info(element).map(|t| t.array).filter(|a| *a != 0);
    }
    let base = name.split('(').next().unwrap_or(name).trim();
    let canonical = match base {
        "integer" | "int" => "int4",
        "smallint" => "int2",
        "bigint" => "int8",
        "real" => "float4",
        "double precision" | "float" => "float8",
        "boolean" => "bool",
        "character varying" => "varchar",
        "character" | "char" => "bpchar",
        "\"char\"" => "char",
        "decimal" => "numeric",
        "timestamp without time zone" | "timestamp" => "timestamp",
        "timestamp with time zone" => "timestamptz",
        "time without time zone" | "time" => "time",
        "time with time zone" => "timetz",
        "bit varying" => "varbit",
        other => other,
    };
    types().1.get(canonical).copied()
}

/// What `format_type(oid, typmod)` prints.
pub(crate) fn format_type(oid: u32, typmod: i32) -> String {
    let Some(info) = type_info(oid) else {
        return "???".to_string();
    };
    if info.category == "A" && info.element != 0 && info.len == -1 {
        return format!("{}[]", format_type(info.element, typmod));
    }
    let with_length = |name: &str| {
        if typmod >= 4 {
            format!("{name}({})", typmod - 4)
        } else {
            name.to_string()
        }
    };
    let with_precision = |name: &str, suffix: &str| {
        if typmod >= 0 {
            format!("{name}({typmod}){suffix}")
        } else {
            format!("{name}{suffix}")
        }
    };
    match info.name.as_str() {
        "bool" => "boolean".into(),
        "int2" => "smallint".into(),
        "int4" => "integer".into(),
        "int8" => "bigint".into(),
        "float4" => "real".into(),
        "float8" => "double precision".into(),
        "char" => "\"char\"".into(),
        "bpchar" => with_length("character"),
        "varchar" => with_length("character varying"),
        "bit" => with_length("bit"),
        "varbit" => with_length("bit varying"),
        "numeric" if typmod >= 4 => {
            let packed = typmod - 4;
            format!("numeric({},{})", (packed >> 16) & 0xffff, packed & 0xffff)
        }
        "timestamp" => with_precision("timestamp", " without time zone"),
        "timestamptz" => with_precision("timestamp", " with time zone"),
        "time" => with_precision("time", " without time zone"),
        "timetz" => with_precision("time", " with time zone"),
        "interval" if typmod >= 0 => format!("interval({typmod})"),
        other => other.to_string(),
    }
}

/// `information_schema.columns.data_type`: the type's SQL name without modifiers, `ARRAY`
/// for arrays.
pub(crate) fn information_schema_data_type(oid: u32) -> String {
    match type_info(oid) {
        Some(info) if info.category == "A" && info.element != 0 => "ARRAY".into(),
        Some(info) if info.kind == "c" || info.kind == "e" => "USER-DEFINED".into(),
        Some(_) => format_type(oid, -1),
        None => "USER-DEFINED".into(),
    }
}

/// `information_schema.columns` numeric facts: (precision, radix, scale).
pub(crate) fn numeric_facts(oid: u32, typmod: i32) -> (Option<i64>, Option<i64>, Option<i64>) {
    match oid {
        21 => (Some(16), Some(2), Some(0)),
        23 => (Some(32), Some(2), Some(0)),
        20 => (Some(64), Some(2), Some(0)),
        700 => (Some(24), Some(2), None),
        701 => (Some(53), Some(2), None),
        1700 if typmod >= 4 => {
            let packed = i64::from(typmod - 4);
            (
                Some((packed >> 16) & 0xffff),
                Some(10),
                Some(packed & 0xffff),
            )
        }
        1700 => (None, Some(10), None),
        _ => (None, None, None),
    }
}

/// `information_schema.columns.datetime_precision`.
pub(crate) fn datetime_precision(oid: u32, typmod: i32) -> Option<i64> {
    match oid {
        1082 => Some(0),
        1083 | 1114 | 1184 | 1266 | 1186 => Some(if typmod >= 0 { i64::from(typmod) } else { 6 }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_prints_postgres_names() {
        assert_eq!(format_type(23, -1), "integer");
        assert_eq!(format_type(1700, (12 << 16 | 2) + 4), "numeric(12,2)");
        assert_eq!(format_type(1043, 24), "character varying(20)");
        assert_eq!(format_type(1009, -1), "text[]");
        assert_eq!(format_type(1184, -1), "timestamp with time zone");
        assert_eq!(format_type(18, -1), "\"char\"");
        assert_eq!(format_type(3802, -1), "jsonb");
    }

    #[test]
    fn type_names_resolve_like_regtype() {
        assert_eq!(type_oid_by_name("integer"), Some(23));
        assert_eq!(type_oid_by_name("pg_catalog.int8"), Some(20));
        assert_eq!(type_oid_by_name("text[]"), Some(1009));
        assert_eq!(type_oid_by_name("character varying(20)"), Some(1043));
        assert_eq!(type_oid_by_name("no_such_type"), None);
    }
}
