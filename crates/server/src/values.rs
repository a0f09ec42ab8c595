//! Arrow values in Postgres's text and binary wire formats.
//!
//! [`Cell`] is one value of an Arrow column; it implements both `ToSql` (binary) and
//! `ToSqlText` (text), choosing the representation from the Arrow type, so every column type
//! Fluxion can hold reaches clients in the exact shape PostgreSQL 15 sends.

use std::error::Error;
use std::fmt::Write as _;

use arrow::array::timezone::Tz;
use arrow::array::{Array, ArrayRef, AsArray};
use arrow::datatypes::{
    DataType, Date32Type, Decimal128Type, DurationMicrosecondType, DurationMillisecondType,
    DurationNanosecondType, DurationSecondType, Float32Type, Float64Type, Int16Type, Int32Type,
    Int64Type, Int8Type, IntervalMonthDayNanoType, IntervalUnit, Time64MicrosecondType,
    Time64NanosecondType, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use bytes::{BufMut, BytesMut};
use chrono::{Offset, TimeZone};
use pgwire::api::Type;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{IsNull, ToSql};
use repr::pg_text::{duration_interval, float_text, interval_text, time_text, timestamp_text};

type BoxError = Box<dyn Error + Sync + Send>;

/// Microseconds between the Unix epoch and Postgres's epoch (2000-01-01).
const PG_EPOCH_OFFSET_MICROS: i64 = 946_684_800_000_000;
/// Days between the Unix epoch and Postgres's epoch.
const PG_EPOCH_OFFSET_DAYS: i32 = 10_957;

/// One value of an Arrow column.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cell<'a> {
    pub array: &'a ArrayRef,
    pub row: usize,
}

impl Cell<'_> {
    /// Whether the value is NULL (a column of Arrow's `Null` type holds only NULLs but has no
    /// validity bitmap, so `Array::is_null` says no).
    pub(crate) fn is_null(&self) -> bool {
        self.array.data_type() == &DataType::Null || self.array.is_null(self.row)
    }
}

impl ToSql for Cell<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> Result<IsNull, BoxError> {
        if self.is_null() {
            return Ok(IsNull::Yes);
        }
        write_binary(self.array, self.row, ty, out)?;
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    postgres_types::to_sql_checked!();
}

impl ToSqlText for Cell<'_> {
    fn to_sql_text(
        &self,
        ty: &Type,
        out: &mut BytesMut,
        options: &FormatOptions,
    ) -> Result<IsNull, BoxError> {
        if self.is_null() {
            return Ok(IsNull::Yes);
        }
        let text = if is_vector(ty) {
            vector_text(self.array, self.row)?
        } else {
            text_value(self.array, self.row, &options.time_zone)?
        };
        out.put_slice(text.as_bytes());
        Ok(IsNull::No)
    }
}

/// The Postgres text form of a non-NULL value; a `timestamptz` is shown in time zone `zone`
/// (the session's `TimeZone`).
pub(crate) fn text_value(array: &ArrayRef, row: usize, zone: &str) -> Result<String, BoxError> {
    Ok(match array.data_type() {
        DataType::Boolean => if array.as_boolean().value(row) {
            "t"
        } else {
            "f"
        }
        .to_string(),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::UInt8 => array.as_primitive::<UInt8Type>().value(row).to_string(),
        DataType::UInt16 => array.as_primitive::<UInt16Type>().value(row).to_string(),
        DataType::UInt32 => array.as_primitive::<UInt32Type>().value(row).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Float32 => {
            float_text(array.as_primitive::<Float32Type>().value(row) as f64, true)
        }
        DataType::Float64 => float_text(array.as_primitive::<Float64Type>().value(row), false),
        DataType::Decimal128(_, scale) => {
            decimal_text(array.as_primitive::<Decimal128Type>().value(row), *scale)
        }
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => array.as_string_view().value(row).to_string(),
        DataType::Binary => bytea_text(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => bytea_text(array.as_binary::<i64>().value(row)),
        DataType::BinaryView => bytea_text(array.as_binary_view().value(row)),
        DataType::Date32 => date_text(array.as_primitive::<Date32Type>().value(row)),
        DataType::Timestamp(unit, tz) => {
            let micros = timestamp_micros(array, row, unit);
            match tz {
                Some(_) => zoned_timestamp_text(micros, zone),
                None => timestamp_text(micros),
            }
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            time_text(array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        DataType::Time64(TimeUnit::Nanosecond) => {
            time_text(array.as_primitive::<Time64NanosecondType>().value(row) / 1000)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            interval_text(v.months, v.days, v.nanoseconds / 1000)
        }
        DataType::Duration(unit) => {
            let (days, micros) = duration_interval(duration_micros(array, row, unit));
            interval_text(0, days, micros)
        }
        DataType::List(_) | DataType::LargeList(_) => array_text(array, row, zone)?,
        _ => arrow::util::display::array_value_to_string(array, row)?,
    })
}

/// A duration value in microseconds.
fn duration_micros(array: &ArrayRef, row: usize, unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => array
            .as_primitive::<DurationSecondType>()
            .value(row)
            .saturating_mul(1_000_000),
        TimeUnit::Millisecond => array
            .as_primitive::<DurationMillisecondType>()
            .value(row)
            .saturating_mul(1000),
        TimeUnit::Microsecond => array.as_primitive::<DurationMicrosecondType>().value(row),
        TimeUnit::Nanosecond => array.as_primitive::<DurationNanosecondType>().value(row) / 1000,
    }
}

/// `unscaled · 10^-scale` as decimal text.
pub(crate) fn decimal_text(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        let factor = 10i128.pow((-scale) as u32);
        return (unscaled * factor).to_string();
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let sign = if unscaled < 0 { "-" } else { "" };
    format!("{sign}{whole}.{fraction}")
}

fn bytea_text(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(2 + bytes.len() * 2);
    text.push_str("\\x");
    for b in bytes {
        let _ = write!(text, "{b:02x}");
    }
    text
}

fn date_text(days: i32) -> String {
    days.checked_add(719_163)
        .and_then(chrono::NaiveDate::from_num_days_from_ce_opt)
        .map(|d| d.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| days.to_string())
}

fn timestamp_micros(array: &ArrayRef, row: usize, unit: &TimeUnit) -> i64 {
    match unit {
        TimeUnit::Second => array
            .as_primitive::<TimestampSecondType>()
            .value(row)
            .saturating_mul(1_000_000),
        TimeUnit::Millisecond => array
            .as_primitive::<TimestampMillisecondType>()
            .value(row)
            .saturating_mul(1000),
        TimeUnit::Microsecond => array.as_primitive::<TimestampMicrosecondType>().value(row),
        TimeUnit::Nanosecond => array
            .as_primitive::<TimestampNanosecondType>()
            .value(row)
            .div_euclid(1000),
    }
}

/// The text of an instant `micros` after the epoch in time zone `zone` (an IANA name or an
/// offset; UTC where `zone` names none): its local time there, then the offset from UTC as
/// PostgreSQL writes it (`+01`, `-03:30`).
fn zoned_timestamp_text(micros: i64, zone: &str) -> String {
    let offset = zone_offset(micros, zone);
    let mut text = timestamp_text(micros.saturating_add(i64::from(offset) * 1_000_000));
    let sign = if offset < 0 { '-' } else { '+' };
    let seconds = offset.unsigned_abs();
    let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    let _ = write!(text, "{sign}{hours:02}");
    if minutes != 0 || seconds != 0 {
        let _ = write!(text, ":{minutes:02}");
    }
    if seconds != 0 {
        let _ = write!(text, ":{seconds:02}");
    }
    text
}

/// The offset from UTC, in seconds, of time zone `zone` at instant `micros`.
fn zone_offset(micros: i64, zone: &str) -> i32 {
    if zone.eq_ignore_ascii_case("UTC") || zone == "Etc/UTC" {
        return 0;
    }
    let (Ok(zone), Some(instant)) = (
        zone.parse::<Tz>(),
        chrono::DateTime::from_timestamp_micros(micros),
    ) else {
        return 0;
    };
    zone.offset_from_utc_datetime(&instant.naive_utc())
        .fix()
        .local_minus_utc()
}

fn array_text(array: &ArrayRef, row: usize, zone: &str) -> Result<String, BoxError> {
    let values = repr::pg_array::list_values(array, row).ok_or("not an array")?;
    let mut text = String::from("{");
    for i in 0..values.len() {
        if i > 0 {
            text.push(',');
        }
        if values.is_null(i) {
            text.push_str("NULL");
        } else {
            text.push_str(&repr::pg_array::quote_element(&text_value(
                &values, i, zone,
            )?));
        }
    }
    text.push('}');
    Ok(text)
}

/// Whether a wire type is a 0-based vector (`int2vector`, `oidvector`), which prints as its
/// elements separated by spaces.
fn is_vector(ty: &Type) -> bool {
    *ty == Type::INT2_VECTOR || *ty == Type::OID_VECTOR
}

/// The text of an `int2vector` / `oidvector`: `1 2 3`.
fn vector_text(array: &ArrayRef, row: usize) -> Result<String, BoxError> {
    let values = repr::pg_array::list_values(array, row).ok_or("not a vector")?;
    let elements = (0..values.len())
        .filter(|i| values.is_valid(*i))
        .map(|i| text_value(&values, i, "UTC"))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(elements.join(" "))
}

/// Whether a wire type is held as an Int64 but sent as a 4-byte oid.
fn is_oid_like(ty: &Type) -> bool {
    [
        Type::OID,
        Type::REGPROC,
        Type::REGCLASS,
        Type::REGTYPE,
        Type::REGNAMESPACE,
        Type::REGROLE,
        Type::XID,
        Type::CID,
    ]
    .contains(ty)
}

/// Writes the Postgres binary form of a non-NULL value.
fn write_binary(
    array: &ArrayRef,
    row: usize,
    ty: &Type,
    out: &mut BytesMut,
) -> Result<(), BoxError> {
    match array.data_type() {
        DataType::Boolean => out.put_u8(array.as_boolean().value(row) as u8),
        DataType::Int8 => out.put_i16(array.as_primitive::<Int8Type>().value(row) as i16),
        DataType::UInt8 => out.put_i16(array.as_primitive::<UInt8Type>().value(row) as i16),
        DataType::Int16 => out.put_i16(array.as_primitive::<Int16Type>().value(row)),
        DataType::UInt16 => out.put_i32(array.as_primitive::<UInt16Type>().value(row) as i32),
        DataType::Int32 => out.put_i32(array.as_primitive::<Int32Type>().value(row)),
        DataType::UInt32 => out.put_i64(array.as_primitive::<UInt32Type>().value(row) as i64),
        DataType::Int64 if is_oid_like(ty) => {
            out.put_u32(array.as_primitive::<Int64Type>().value(row) as u32)
        }
        DataType::Int64 => out.put_i64(array.as_primitive::<Int64Type>().value(row)),
        DataType::UInt64 => out.put_i64(array.as_primitive::<UInt64Type>().value(row) as i64),
        DataType::Float32 => out.put_f32(array.as_primitive::<Float32Type>().value(row)),
        DataType::Float64 => out.put_f64(array.as_primitive::<Float64Type>().value(row)),
        DataType::Decimal128(_, scale) => write_numeric(
            array.as_primitive::<Decimal128Type>().value(row),
            *scale,
            out,
        ),
        DataType::Date32 => out.put_i32(
            array
                .as_primitive::<Date32Type>()
                .value(row)
                .saturating_sub(PG_EPOCH_OFFSET_DAYS),
        ),
        DataType::Timestamp(unit, _) => {
            out.put_i64(timestamp_micros(array, row, unit).saturating_sub(PG_EPOCH_OFFSET_MICROS))
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            out.put_i64(array.as_primitive::<Time64MicrosecondType>().value(row))
        }
        DataType::Time64(TimeUnit::Nanosecond) => {
            out.put_i64(array.as_primitive::<Time64NanosecondType>().value(row) / 1000)
        }
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<IntervalMonthDayNanoType>().value(row);
            out.put_i64(v.nanoseconds / 1000);
            out.put_i32(v.days);
            out.put_i32(v.months);
        }
        DataType::Duration(unit) => {
            let (days, micros) = duration_interval(duration_micros(array, row, unit));
            out.put_i64(micros);
            out.put_i32(days);
            out.put_i32(0);
        }
        DataType::Binary => out.put_slice(array.as_binary::<i32>().value(row)),
        DataType::LargeBinary => out.put_slice(array.as_binary::<i64>().value(row)),
        DataType::List(_) | DataType::LargeList(_) => write_array(array, row, ty, out)?,
        _ => {
            let text = text_value(array, row, "UTC")?;
            if *ty == Type::UUID {
                out.put_slice(&parse_uuid(&text)?);
            } else {
                if *ty == Type::JSONB {
                    out.put_u8(1);
                }
                out.put_slice(text.as_bytes());
            }
        }
    }
    Ok(())
}

fn parse_uuid(text: &str) -> Result<[u8; 16], BoxError> {
    let hex: String = text.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return Err(format!("invalid uuid \"{text}\"").into());
    }
    let mut bytes = [0u8; 16];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16)?;
    }
    Ok(bytes)
}

/// Postgres binary `numeric`: base-10000 digits with a weight, sign and display scale.
pub(crate) fn write_numeric(unscaled: i128, scale: i8, out: &mut BytesMut) {
    let scale = scale.max(0) as u32;
    let negative = unscaled < 0;
    let magnitude = unscaled.unsigned_abs();
    let divisor = 10u128.pow(scale);
    let (whole, fraction) = (magnitude / divisor, magnitude % divisor);
    let mut whole_groups = Vec::new();
    let mut w = whole;
    while w > 0 {
        whole_groups.push((w % 10_000) as i16);
        w /= 10_000;
    }
    whole_groups.reverse();
    // The fraction, padded to a multiple of 4 digits, split into groups.
    let padded_digits = scale.div_ceil(4) * 4;
    let mut f = fraction * 10u128.pow(padded_digits - scale);
    let mut fraction_groups = vec![0i16; (padded_digits / 4) as usize];
    for group in fraction_groups.iter_mut().rev() {
        *group = (f % 10_000) as i16;
        f /= 10_000;
    }
    let mut digits: Vec<i16> = whole_groups.clone();
    digits.extend(&fraction_groups);
    let mut weight = whole_groups.len() as i16 - 1;
    // Strip leading zero groups (only possible without a whole part) and trailing zeros.
    while digits.first() == Some(&0) {
        digits.remove(0);
        weight -= 1;
    }
    while digits.last() == Some(&0) {
        digits.pop();
    }
    if digits.is_empty() {
        weight = 0;
    }
    out.put_i16(digits.len() as i16);
    out.put_i16(weight);
    out.put_u16(if negative && !digits.is_empty() {
        0x4000
    } else {
        0
    });
    out.put_u16(scale as u16);
    for d in digits {
        out.put_i16(d);
    }
}

fn write_array(
    array: &ArrayRef,
    row: usize,
    ty: &Type,
    out: &mut BytesMut,
) -> Result<(), BoxError> {
    let values = repr::pg_array::list_values(array, row).ok_or("not an array")?;
    let element_type = match ty.kind() {
        postgres_types::Kind::Array(element) => element.clone(),
        _ if *ty == Type::INT2_VECTOR => Type::INT2,
        _ if *ty == Type::OID_VECTOR => Type::OID,
        _ => Type::TEXT,
    };
    out.put_i32(1);
    out.put_i32(values.null_count().min(1) as i32);
    out.put_u32(element_type.oid());
    out.put_i32(values.len() as i32);
    out.put_i32(if is_vector(ty) { 0 } else { 1 });
    for i in 0..values.len() {
        if values.is_null(i) {
            out.put_i32(-1);
            continue;
        }
        let mut element = BytesMut::new();
        write_binary(&values, i, &element_type, &mut element)?;
        out.put_i32(element.len() as i32);
        out.put_slice(&element);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_print_with_their_scale() {
        assert_eq!(decimal_text(1250, 2), "12.50");
        assert_eq!(decimal_text(-5, 3), "-0.005");
        assert_eq!(decimal_text(7, 0), "7");
    }

    #[test]
    fn numeric_binary_matches_postgres() {
        // 12345.678 → digits [1, 2345, 6780], weight 1, dscale 3 (as PostgreSQL sends it).
        let mut out = BytesMut::new();
        write_numeric(12_345_678, 3, &mut out);
        assert_eq!(
            out.as_ref(),
            &[0, 3, 0, 1, 0, 0, 0, 3, 0, 1, 0x09, 0x29, 0x1a, 0x7c]
        );
    }

    #[test]
    fn intervals_print_in_postgres_style() {
        assert_eq!(
            interval_text(14, 3, 3_600_000_000),
            "1 year 2 mons 3 days 01:00:00"
        );
    }
}
