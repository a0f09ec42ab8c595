//! SQL type names to Arrow types, for column definitions.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use datafusion::sql::sqlparser::ast::{self, ArrayElemTypeDef, ExactNumberInfo, TimezoneInfo};
use repr::pg_type::DECLARED_TYPE_KEY;

use crate::SqlError;

/// The precision and scale of `numeric` without a declared precision.
pub const DEFAULT_NUMERIC: (u8, i8) = (38, 10);

/// A column of a declared type: its Arrow field (with the declared Postgres type remembered
/// where Arrow would lose it).
pub fn column_field(
    name: &str,
    declared: &ast::DataType,
    nullable: bool,
) -> Result<Field, SqlError> {
    let data_type = arrow_type(declared)?;
    let field = Field::new(name, data_type, nullable);
    Ok(match remembered_name(declared) {
        Some(text) => field.with_metadata(HashMap::from([(DECLARED_TYPE_KEY.to_string(), text)])),
        None => field,
    })
}

/// The Postgres type name to keep in metadata: for types Arrow cannot tell apart from `text`,
/// and for `numeric`, whose declared precision and scale (or their absence) a column keeps
/// while an expression's result has none.
fn remembered_name(declared: &ast::DataType) -> Option<String> {
    use ast::DataType as T;
    match declared {
        T::Varchar(_) | T::CharacterVarying(_) | T::CharVarying(_) => Some(
            declared
                .to_string()
                .to_lowercase()
                .replace("varchar", "character varying"),
        ),
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => Some(match info {
            ExactNumberInfo::None => "numeric".into(),
            ExactNumberInfo::Precision(p) => format!("numeric({p},0)"),
            ExactNumberInfo::PrecisionAndScale(p, s) => format!("numeric({p},{s})"),
        }),
        T::JSON => Some("json".into()),
        T::JSONB => Some("jsonb".into()),
        T::Uuid => Some("uuid".into()),
        _ => None,
    }
}

/// The Arrow type that stores values of a SQL type.
pub fn arrow_type(declared: &ast::DataType) -> Result<DataType, SqlError> {
    use ast::DataType as T;
    Ok(match declared {
        T::Boolean | T::Bool => DataType::Boolean,
        T::SmallInt(_) | T::Int2(_) => DataType::Int16,
        T::Int(_) | T::Integer(_) | T::Int4(_) => DataType::Int32,
        T::BigInt(_) | T::Int8(_) => DataType::Int64,
        T::Real | T::Float4 => DataType::Float32,
        T::Float(ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Float32,
        T::Double(_) | T::DoublePrecision | T::Float8 | T::Float(_) => DataType::Float64,
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => decimal(info)?,
        T::Text
        | T::Varchar(_)
        | T::CharacterVarying(_)
        | T::CharVarying(_)
        | T::Char(_)
        | T::Character(_)
        | T::String(_)
        | T::JSON
        | T::JSONB
        | T::Uuid => DataType::Utf8,
        T::Bytea => DataType::Binary,
        T::Date => DataType::Date32,
        T::Time(_, _) => DataType::Time64(TimeUnit::Microsecond),
        T::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => {
            DataType::Timestamp(TimeUnit::Microsecond, None)
        }
        T::Timestamp(_, TimezoneInfo::WithTimeZone | TimezoneInfo::Tz) => {
            DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC")))
        }
        T::Interval { .. } => DataType::Interval(IntervalUnit::MonthDayNano),
        T::Array(
            ArrayElemTypeDef::SquareBracket(inner, _) | ArrayElemTypeDef::AngleBracket(inner),
        ) => DataType::List(Arc::new(Field::new("item", arrow_type(inner)?, true))),
        T::Custom(name, _) => custom_type(&name.to_string().to_lowercase())?,
        other => {
            return Err(SqlError::UnknownObject {
                kind: "type",
                name: other.to_string(),
            })
        }
    })
}

/// PostgreSQL's internal name of a SQL type (`pg_type.typname`: `int4` for `integer`,
/// `varchar` for `varchar(3)`), which names a cast literal's result column: the name of the
/// type a column declared so reports, an array named after its element, `char(n)` (stored as
/// text) as PostgreSQL names it.
pub fn postgres_type_name(declared: &ast::DataType) -> String {
    use ast::DataType as T;
    match declared {
        T::Array(
            ArrayElemTypeDef::SquareBracket(inner, _) | ArrayElemTypeDef::AngleBracket(inner),
        ) => postgres_type_name(inner),
        T::Char(_) | T::Character(_) => "bpchar".into(),
        _ => match column_field("", declared, true) {
            Ok(field) => repr::pg_type::pg_type_of_field(&field).name.into(),
            Err(_) => declared.to_string().to_lowercase(),
        },
    }
}

fn decimal(info: &ExactNumberInfo) -> Result<DataType, SqlError> {
    let (precision, scale) = match info {
        ExactNumberInfo::None => DEFAULT_NUMERIC,
        ExactNumberInfo::Precision(p) => (*p as u8, 0),
        ExactNumberInfo::PrecisionAndScale(p, s) => (*p as u8, *s as i8),
    };
    if precision == 0 || precision > 38 || scale < 0 || scale as u8 > precision {
        return Err(SqlError::Unsupported(format!(
            "numeric precision {precision} and scale {scale} (precision must be 1..38 and scale 0..precision) is not supported"
        )));
    }
    Ok(DataType::Decimal128(precision, scale))
}

fn custom_type(name: &str) -> Result<DataType, SqlError> {
    Ok(match name {
        "int2" => DataType::Int16,
        "int4" => DataType::Int32,
        "int8" => DataType::Int64,
        "float4" => DataType::Float32,
        "float8" => DataType::Float64,
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
        "bool" => DataType::Boolean,
        "serial" | "bigserial" | "smallserial" => {
            return Err(SqlError::Unsupported(format!(
                "{name} (sequences); declare the column as an integer type and supply values is not supported"
            )))
        }
        other => return Err(SqlError::UnknownObject {
            kind: "type",
            name: other.to_string(),
        }),
    })
}
