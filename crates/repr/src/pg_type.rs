//! How Arrow types appear to Postgres clients: type OIDs, names and `format_type` text.
//!
//! The mapping is one-way and total: every Arrow type a relation can hold has a Postgres type a
//! client can decode (unknown shapes fall back to `text`).

use arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};

/// A Postgres type as clients see it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PgType {
    /// `pg_type.oid`.
    pub oid: u32,
    /// `pg_type.typname`.
    pub name: &'static str,
    /// `pg_type.typlen`: bytes of the fixed-size representation, `-1` for variable size.
    pub len: i16,
    /// The oid of the array type whose elements are this type (`0` for array types).
    pub array_oid: u32,
}

macro_rules! pg_types {
    ($($konst:ident = ($oid:expr, $name:expr, $len:expr, $array:expr);)*) => {
        $(
            #[doc = concat!("The Postgres `", $name, "` type.")]
            pub const $konst: PgType = PgType { oid: $oid, name: $name, len: $len, array_oid: $array };
        )*
        /// Every Postgres type Fluxion can produce.
        pub const ALL: &[PgType] = &[$($konst),*];
    };
}

pg_types! {
    BOOL = (16, "bool", 1, 1000);
    BYTEA = (17, "bytea", -1, 1001);
    INT8 = (20, "int8", 8, 1016);
    INT2 = (21, "int2", 2, 1005);
    INT4 = (23, "int4", 4, 1007);
    TEXT = (25, "text", -1, 1009);
    OID = (26, "oid", 4, 1028);
    JSON = (114, "json", -1, 199);
    FLOAT4 = (700, "float4", 4, 1021);
    FLOAT8 = (701, "float8", 8, 1022);
    VARCHAR = (1043, "varchar", -1, 1015);
    DATE = (1082, "date", 4, 1182);
    TIME = (1083, "time", 8, 1183);
    TIMESTAMP = (1114, "timestamp", 8, 1115);
    TIMESTAMPTZ = (1184, "timestamptz", 8, 1185);
    INTERVAL = (1186, "interval", 16, 1187);
    NUMERIC = (1700, "numeric", -1, 1231);
    UUID = (2950, "uuid", 16, 2951);
    JSONB = (3802, "jsonb", -1, 3807);
    BOOL_ARRAY = (1000, "_bool", -1, 0);
    BYTEA_ARRAY = (1001, "_bytea", -1, 0);
    INT2_ARRAY = (1005, "_int2", -1, 0);
    INT4_ARRAY = (1007, "_int4", -1, 0);
    TEXT_ARRAY = (1009, "_text", -1, 0);
    VARCHAR_ARRAY = (1015, "_varchar", -1, 0);
    INT8_ARRAY = (1016, "_int8", -1, 0);
    FLOAT4_ARRAY = (1021, "_float4", -1, 0);
    FLOAT8_ARRAY = (1022, "_float8", -1, 0);
    TIMESTAMP_ARRAY = (1115, "_timestamp", -1, 0);
    DATE_ARRAY = (1182, "_date", -1, 0);
    TIMESTAMPTZ_ARRAY = (1185, "_timestamptz", -1, 0);
    INTERVAL_ARRAY = (1187, "_interval", -1, 0);
    NUMERIC_ARRAY = (1231, "_numeric", -1, 0);
    CHAR = (18, "char", 1, 1002);
    NAME = (19, "name", 64, 1003);
    INT2VECTOR = (22, "int2vector", -1, 1006);
    REGPROC = (24, "regproc", 4, 1008);
    XID = (28, "xid", 4, 1011);
    CID = (29, "cid", 4, 1012);
    OIDVECTOR = (30, "oidvector", -1, 1013);
    PG_NODE_TREE = (194, "pg_node_tree", -1, 0);
    INET = (869, "inet", -1, 1041);
    BPCHAR = (1042, "bpchar", -1, 1014);
    REGCLASS = (2205, "regclass", 4, 2210);
    REGTYPE = (2206, "regtype", 4, 2211);
    ANYARRAY = (2277, "anyarray", -1, 0);
    PG_LSN = (3220, "pg_lsn", 8, 3221);
    REGNAMESPACE = (4089, "regnamespace", 4, 4090);
    REGROLE = (4096, "regrole", 4, 4097);
    XID8 = (5069, "xid8", 8, 271);
    CHAR_ARRAY = (1002, "_char", -1, 0);
    NAME_ARRAY = (1003, "_name", -1, 0);
    INT2VECTOR_ARRAY = (1006, "_int2vector", -1, 0);
    REGPROC_ARRAY = (1008, "_regproc", -1, 0);
    OID_ARRAY = (1028, "_oid", -1, 0);
    ACLITEM_ARRAY = (1034, "_aclitem", -1, 0);
    JSON_ARRAY = (199, "_json", -1, 0);
    JSONB_ARRAY = (3807, "_jsonb", -1, 0);
    UUID_ARRAY = (2951, "_uuid", -1, 0);
    TIME_ARRAY = (1183, "_time", -1, 0);
}

/// Field metadata key under which a column remembers the Postgres type it was declared with
/// (`varchar(20)`, `jsonb`), where the Arrow type alone would lose it.
pub const DECLARED_TYPE_KEY: &str = "fluxion.pg_type";

/// Field metadata key under which a column remembers the oid of its Postgres type, for types
/// Arrow has no match for (`oid`, `name`, `"char"`, `int2vector`, `regclass`, …).
pub const PG_TYPE_OID_KEY: &str = "fluxion.pg_type_oid";

/// Field metadata key holding the oid of the table a result column comes straight from
/// (RowDescription's table oid; clients look nullability and names up by it).
pub const TABLE_OID_KEY: &str = "fluxion.table_oid";

/// Field metadata key holding a column's number in that table (RowDescription's attnum).
pub const ATTNUM_KEY: &str = "fluxion.attnum";

/// The table oid and column number a column comes from, if it is a table's column.
pub fn column_origin(field: &Field) -> Option<(u32, i16)> {
    let metadata = field.metadata();
    Some((
        metadata.get(TABLE_OID_KEY)?.parse().ok()?,
        metadata.get(ATTNUM_KEY)?.parse().ok()?,
    ))
}

/// The Postgres type of an Arrow type.
pub fn pg_type_of(data_type: &DataType) -> PgType {
    match data_type {
        DataType::Boolean => BOOL,
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => INT2,
        DataType::Int32 | DataType::UInt16 => INT4,
        DataType::Int64 | DataType::UInt32 => INT8,
        DataType::UInt64 => INT8,
        DataType::Float16 | DataType::Float32 => FLOAT4,
        DataType::Float64 => FLOAT8,
        DataType::Decimal32(..)
        | DataType::Decimal64(..)
        | DataType::Decimal128(..)
        | DataType::Decimal256(..) => NUMERIC,
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => TEXT,
        DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => BYTEA,
        DataType::Date32 | DataType::Date64 => DATE,
        DataType::Time32(_) | DataType::Time64(_) => TIME,
        DataType::Timestamp(_, None) => TIMESTAMP,
        DataType::Timestamp(_, Some(_)) => TIMESTAMPTZ,
        DataType::Interval(_) | DataType::Duration(_) => INTERVAL,
        DataType::List(f) | DataType::LargeList(f) | DataType::FixedSizeList(f, _) => {
            array_of(pg_type_of(f.data_type()))
        }
        DataType::Dictionary(_, value) => pg_type_of(value),
        _ => TEXT,
    }
}

/// The Postgres type of a column, honouring a declared type kept in the field's metadata.
pub fn pg_type_of_field(field: &Field) -> PgType {
    if let Some(oid) = field
        .metadata()
        .get(PG_TYPE_OID_KEY)
        .and_then(|oid| oid.parse().ok())
    {
        // Types Fluxion only shows in catalog columns (`pg_ndistinct`, …) are still reported
        // by their oid.
        return pg_type_by_oid(oid).unwrap_or(PgType {
            oid,
            name: "",
            len: -1,
            array_oid: 0,
        });
    }
    match field.metadata().get(DECLARED_TYPE_KEY).map(String::as_str) {
        Some(declared)
            if declared.starts_with("varchar") || declared.starts_with("character varying") =>
        {
            VARCHAR
        }
        Some("jsonb") => JSONB,
        Some("json") => JSON,
        Some("uuid") => UUID,
        _ => pg_type_of(field.data_type()),
    }
}

/// Whether a column holds a vector whose subscripts start at 0 (`int2vector`, `oidvector`:
/// `pg_index.indkey`, `pg_proc.proargtypes`); other arrays start at 1.
pub fn is_zero_based_vector(field: &Field) -> bool {
    matches!(
        field.metadata().get(PG_TYPE_OID_KEY).map(String::as_str),
        Some("22" | "30")
    )
}

/// The type modifier of a column (`pg_attribute.atttypmod`, RowDescription's typmod), from
/// its declared type: `(precision << 16 | scale) + 4` for `numeric(p,s)`, the length + 4 for
/// `varchar(n)`, else -1 (as for every expression's result, `sum(price)` included).
pub fn type_modifier(field: &Field) -> i32 {
    let Some(declared) = field.metadata().get(DECLARED_TYPE_KEY) else {
        return -1;
    };
    let arguments = |prefix: &str| {
        declared
            .strip_prefix(prefix)?
            .strip_suffix(')')?
            .split(',')
            .map(|n| n.trim().parse::<i32>().ok())
            .collect::<Option<Vec<_>>>()
    };
    if let Some([precision, scale]) = arguments("numeric(").as_deref() {
        return ((precision << 16) | scale) + 4;
    }
    match arguments("character varying(").as_deref() {
        Some([length]) => length + 4,
        _ => -1,
    }
}

/// The array type whose elements are `element` (text[] for unknown elements).
pub fn array_of(element: PgType) -> PgType {
    ALL.iter()
        .copied()
        .find(|t| t.oid == element.array_oid)
        .unwrap_or(TEXT_ARRAY)
}

/// The type with this oid, if Fluxion produces it.
pub fn pg_type_by_oid(oid: u32) -> Option<PgType> {
    ALL.iter().copied().find(|t| t.oid == oid)
}

/// The text PostgreSQL's `format_type(typid, typmod)` prints for a column of this field.
pub fn format_type(field: &Field) -> String {
    if let Some(declared) = field.metadata().get(DECLARED_TYPE_KEY) {
        return declared.clone();
    }
    match field.data_type() {
        // An expression's numeric has no precision or scale in PostgreSQL.
        DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric".into(),
        other => format_data_type(other),
    }
}

/// The SQL type that stores this field's values exactly, for a column made from it: its
/// declared type, else its Arrow type's (`numeric(p,s)` for a decimal, where [`format_type`]
/// says `numeric`).
pub fn storage_type(field: &Field) -> String {
    match field.metadata().get(DECLARED_TYPE_KEY) {
        Some(declared) => declared.clone(),
        None => format_data_type(field.data_type()),
    }
}

/// `format_type` for a bare Arrow type.
pub fn format_data_type(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "boolean".into(),
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint".into(),
        DataType::Int32 | DataType::UInt16 => "integer".into(),
        DataType::Int64 | DataType::UInt32 => "bigint".into(),
        DataType::Float16 | DataType::Float32 => "real".into(),
        DataType::Float64 => "double precision".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("numeric({p},{s})"),
        DataType::Decimal32(p, s) | DataType::Decimal64(p, s) => format!("numeric({p},{s})"),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "bytea".into(),
        DataType::Date32 | DataType::Date64 => "date".into(),
        DataType::Time32(_) | DataType::Time64(_) => "time without time zone".into(),
        DataType::Timestamp(_, None) => "timestamp without time zone".into(),
        DataType::Timestamp(_, Some(_)) => "timestamp with time zone".into(),
        DataType::Interval(IntervalUnit::MonthDayNano) | DataType::Interval(_) => "interval".into(),
        DataType::Duration(TimeUnit::Microsecond) | DataType::Duration(_) => "interval".into(),
        DataType::List(f) | DataType::LargeList(f) => {
            format!("{}[]", format_data_type(f.data_type()))
        }
        other => pg_type_of(other).name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numeric_keeps_precision_and_scale() {
        assert_eq!(
            format_data_type(&DataType::Decimal128(12, 2)),
            "numeric(12,2)"
        );
        assert_eq!(pg_type_of(&DataType::Decimal128(12, 2)), NUMERIC);
    }

    #[test]
    fn only_declared_columns_have_a_type_modifier() {
        let declared = |name: &str, data_type: DataType, declared: &str| {
            Field::new(name, data_type, true).with_metadata(std::collections::HashMap::from([(
                DECLARED_TYPE_KEY.to_string(),
                declared.to_string(),
            )]))
        };
        let price = declared("price", DataType::Decimal128(12, 2), "numeric(12,2)");
        assert_eq!(
            (type_modifier(&price), format_type(&price)),
            ((12 << 16 | 2) + 4, "numeric(12,2)".into())
        );
        let any = declared("any", DataType::Decimal128(38, 10), "numeric");
        assert_eq!(
            (type_modifier(&any), format_type(&any)),
            (-1, "numeric".into())
        );
        let total = Field::new("total", DataType::Decimal128(22, 2), true);
        assert_eq!(
            (type_modifier(&total), format_type(&total)),
            (-1, "numeric".into())
        );
        let name = declared("name", DataType::Utf8, "character varying(10)");
        assert_eq!(type_modifier(&name), 14);
    }

    #[test]
    fn lists_map_to_array_types() {
        let list = DataType::List(std::sync::Arc::new(Field::new(
            "item",
            DataType::Utf8,
            true,
        )));
        assert_eq!(pg_type_of(&list), TEXT_ARRAY);
    }
}
