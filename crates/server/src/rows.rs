//! Result sets on the wire: row descriptions from Arrow schemas, data rows from batches.

use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow::datatypes::{DataType, Field, FieldRef, SchemaRef};
use pgwire::api::portal::Format;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::error::PgWireResult;
use pgwire::messages::data::DataRow;
use pgwire::types::format::FormatOptions;
use repr::pg_type::{pg_type_of_field, PgType};

use crate::values::Cell;

/// The pgwire type with this Postgres type's oid (a type only catalog columns show, such as
/// `pg_statistic[]`, keeps its oid too).
pub(crate) fn wire_type(pg: PgType) -> Type {
    Type::from_oid(pg.oid).unwrap_or_else(|| {
        Type::new(
            pg.name.to_string(),
            pg.oid,
            postgres_types::Kind::Simple,
            "pg_catalog".to_string(),
        )
    })
}

/// The Arrow type a parameter of this Postgres type binds as.
pub(crate) fn arrow_type_of(ty: &Type) -> Option<DataType> {
    use arrow::datatypes::{IntervalUnit, TimeUnit};
    Some(match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::Int16,
        Type::INT4 => DataType::Int32,
        Type::INT8 => DataType::Int64,
        Type::FLOAT4 => DataType::Float32,
        Type::FLOAT8 => DataType::Float64,
        Type::NUMERIC => DataType::Decimal128(38, 10),
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::JSON
        | Type::JSONB
        | Type::UUID => DataType::Utf8,
        Type::BYTEA => DataType::Binary,
        Type::DATE => DataType::Date32,
        Type::TIMESTAMP => DataType::Timestamp(TimeUnit::Microsecond, None),
        Type::TIMESTAMPTZ => DataType::Timestamp(TimeUnit::Microsecond, Some(Arc::from("UTC"))),
        Type::INTERVAL => DataType::Interval(IntervalUnit::MonthDayNano),
        _ => match ty.kind() {
            postgres_types::Kind::Array(element) => DataType::List(Arc::new(
                arrow::datatypes::Field::new("item", arrow_type_of(element)?, true),
            )),
            _ => return None,
        },
    })
}

/// The field a parameter the client declared of type `ty` binds as (remembering the Postgres
/// type where the Arrow type alone would not say it: `uuid`, `jsonb`, `varchar`).
pub(crate) fn parameter_field_of(ty: &Type) -> Option<FieldRef> {
    let data_type = arrow_type_of(ty)?;
    let field = Field::new("", data_type.clone(), true);
    let field = if repr::pg_type::pg_type_of(&data_type).oid == ty.oid() {
        field
    } else {
        field.with_metadata(std::collections::HashMap::from([(
            repr::pg_type::PG_TYPE_OID_KEY.to_string(),
            ty.oid().to_string(),
        )]))
    };
    Some(Arc::new(field))
}

fn field_info(field: &Field, format: FieldFormat) -> FieldInfo {
    let pg = pg_type_of_field(field);
    let origin = repr::pg_type::column_origin(field);
    FieldInfo::new(
        field.name().clone(),
        origin.map(|(table, _)| table as i32),
        origin.map(|(_, attnum)| attnum),
        wire_type(pg),
        format,
    )
    .with_type_size(pg.len)
    .with_type_modifier(repr::pg_type::type_modifier(field))
}

/// The row description of `schema`, with per-column formats from `format` (text if `None`),
/// its `timestamptz` values shown in time zone `zone` (UTC if `None`).
pub(crate) fn field_infos(
    schema: &SchemaRef,
    format: Option<&Format>,
    zone: Option<&str>,
) -> Vec<FieldInfo> {
    let options = zone.map(|zone| {
        let mut options = FormatOptions::default();
        options.time_zone = zone.to_string();
        Arc::new(options)
    });
    schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let column_format = match format {
                Some(Format::Individual(codes)) if codes.len() <= i => FieldFormat::Text,
                Some(format) => format.format_for(i),
                None => FieldFormat::Text,
            };
            let info = field_info(f, column_format);
            match &options {
                Some(options) => info.with_format_options(options.clone()),
                None => info,
            }
        })
        .collect()
}

/// Encodes every row of `batches` as DataRow messages.
pub(crate) fn data_rows(
    fields: Arc<Vec<FieldInfo>>,
    batches: &[RecordBatch],
) -> PgWireResult<Vec<DataRow>> {
    let mut encoder = DataRowEncoder::new(fields);
    let mut rows = Vec::with_capacity(batches.iter().map(RecordBatch::num_rows).sum());
    for batch in batches {
        for row in 0..batch.num_rows() {
            for column in batch.columns() {
                encoder.encode_field(&Cell { array: column, row })?;
            }
            rows.push(encoder.take_row());
        }
    }
    Ok(rows)
}
