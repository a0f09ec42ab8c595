//! Bound parameter values: decoding the client's text or binary bytes into the text the
//! coordinator binds (`CAST('<text>' AS <type>)`).

use arrow::datatypes::{DataType, Field, IntervalUnit, TimeUnit};
use bytes::Bytes;
use pgwire::api::portal::Format;

use crate::values::decimal_text;

/// Whether parameter `index` arrives in binary (one format code applies to all parameters).
pub(crate) fn is_binary(format: &Format, index: usize) -> bool {
    match format {
        Format::UnifiedText => false,
        Format::UnifiedBinary => true,
        Format::Individual(codes) if codes.len() == 1 => codes[0] == 1,
        Format::Individual(codes) => codes.get(index) == Some(&1),
    }
}

/// The text of one parameter value of type `data_type`.
pub(crate) fn parameter_text(bytes: &Bytes, binary: bool, field: &Field) -> Result<String, String> {
    if binary {
        match repr::pg_type::pg_type_of_field(field) {
            repr::pg_type::UUID => return uuid_text(bytes),
            // jsonb's binary form is a version byte (1) and the text.
            repr::pg_type::JSONB => {
                return match bytes.split_first() {
                    Some((1, text)) => std::str::from_utf8(text)
                        .map(str::to_string)
                        .map_err(|e| format!("invalid UTF-8 in jsonb parameter: {e}")),
                    _ => Err("unsupported jsonb binary version".into()),
                }
            }
            // oid and the reg types travel as 4-byte unsigned integers (held as Int64).
            pg if is_oid_like(pg.oid) => {
                let bytes: [u8; 4] = bytes[..].try_into().map_err(|_| {
                    format!(
                        "binary {} parameter has {} bytes, expected 4",
                        pg.name,
                        bytes.len()
                    )
                })?;
                return Ok(u32::from_be_bytes(bytes).to_string());
            }
            _ => {}
        }
    }
    value_text(bytes, binary, field.data_type())
}

/// Whether a type's binary form is a 4-byte unsigned integer (`oid`, `xid`, `cid`, the reg
/// types).
fn is_oid_like(oid: u32) -> bool {
    matches!(
        oid,
        24 | 26 | 28 | 29 | 2202..=2206 | 3734 | 3769 | 4089 | 4096 | 4191
    )
}

/// The text of a 16-byte binary uuid.
fn uuid_text(bytes: &[u8]) -> Result<String, String> {
    if bytes.len() != 16 {
        return Err(format!(
            "binary uuid parameter has {} bytes, expected 16",
            bytes.len()
        ));
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// The text of a value of Arrow type `data_type`, from its text or binary wire form.
fn value_text(bytes: &Bytes, binary: bool, data_type: &DataType) -> Result<String, String> {
    if !binary {
        return std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|e| format!("invalid UTF-8 in parameter: {e}"));
    }
    let fixed = |n: usize| -> Result<&[u8], String> {
        if bytes.len() == n {
            Ok(&bytes[..])
        } else {
            Err(format!(
                "binary {data_type} parameter has {} bytes, expected {n}",
                bytes.len()
            ))
        }
    };
    Ok(match data_type {
        DataType::Boolean => if fixed(1)?[0] != 0 { "true" } else { "false" }.to_string(),
        DataType::Int16 => {
            i16::from_be_bytes(fixed(2)?.try_into().map_err(|_| "int2")?).to_string()
        }
        DataType::Int32 => {
            i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| "int4")?).to_string()
        }
        DataType::Int64 => {
            i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| "int8")?).to_string()
        }
        DataType::Float32 => {
            f32::from_be_bytes(fixed(4)?.try_into().map_err(|_| "float4")?).to_string()
        }
        DataType::Float64 => {
            f64::from_be_bytes(fixed(8)?.try_into().map_err(|_| "float8")?).to_string()
        }
        DataType::Decimal128(..) => numeric_text(bytes)?,
        // bytea's text form: `\x` and the bytes in hex.
        DataType::Binary | DataType::LargeBinary => {
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            format!("\\x{hex}")
        }
        DataType::Date32 => {
            let days = i32::from_be_bytes(fixed(4)?.try_into().map_err(|_| "date")?);
            chrono::NaiveDate::from_num_days_from_ce_opt(days + 730_120)
                .map(|d| d.format("%Y-%m-%d").to_string())
                .ok_or("date out of range")?
        }
        DataType::Timestamp(TimeUnit::Microsecond, tz) => {
            let micros = i64::from_be_bytes(fixed(8)?.try_into().map_err(|_| "timestamp")?);
            let time = chrono::DateTime::from_timestamp_micros(micros + 946_684_800_000_000)
                .ok_or("timestamp out of range")?;
            let text = time.format("%Y-%m-%d %H:%M:%S%.6f").to_string();
            if tz.is_some() {
                format!("{text}+00:00")
            } else {
                text
            }
        }
        DataType::List(item) => array_text(bytes, item.data_type())?,
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let raw = fixed(16)?;
            let micros = i64::from_be_bytes(raw[0..8].try_into().map_err(|_| "interval")?);
            let days = i32::from_be_bytes(raw[8..12].try_into().map_err(|_| "interval")?);
            let months = i32::from_be_bytes(raw[12..16].try_into().map_err(|_| "interval")?);
            format!("{months} months {days} days {micros} microseconds")
        }
        _ => std::str::from_utf8(bytes)
            .map(str::to_string)
            .map_err(|e| format!("invalid UTF-8 in parameter: {e}"))?,
    })
}

/// Decodes a Postgres binary one-dimensional array into its text form (`{a,"b c",NULL}`),
/// each element read as `element`.
fn array_text(bytes: &[u8], element: &DataType) -> Result<String, String> {
    let mut reader = BinaryReader { bytes, at: 0 };
    let dimensions = reader.i32()?;
    let _has_nulls = reader.i32()?;
    let _element_oid = reader.i32()?;
    if dimensions == 0 {
        return Ok("{}".into());
    }
    if dimensions != 1 {
        return Err("multidimensional array parameters are not supported".into());
    }
    let length = reader.i32()?;
    let _lower_bound = reader.i32()?;
    // Each element takes at least its 4-byte length: a count the bytes cannot hold is a lie,
    // and reserving room for it could take gigabytes.
    let remaining = bytes.len().saturating_sub(reader.at) / 4;
    let length = usize::try_from(length).unwrap_or(0);
    if length > remaining {
        return Err(format!(
            "array parameter claims {length} elements in {} bytes",
            bytes.len()
        ));
    }
    let mut elements = Vec::with_capacity(length);
    for _ in 0..length {
        let size = reader.i32()?;
        if size < 0 {
            elements.push("NULL".to_string());
            continue;
        }
        let value = reader.take(size as usize)?;
        let text = value_text(&Bytes::copy_from_slice(value), true, element)?;
        elements.push(repr::pg_array::quote_element(&text));
    }
    Ok(format!("{{{}}}", elements.join(",")))
}

/// Reads big-endian fields of a binary value in order.
struct BinaryReader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> BinaryReader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let taken = self
            .bytes
            .get(self.at..self.at + n)
            .ok_or_else(|| "truncated binary parameter".to_string())?;
        self.at += n;
        Ok(taken)
    }

    fn i32(&mut self) -> Result<i32, String> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
}

/// Decodes Postgres binary `numeric` into decimal text.
fn numeric_text(bytes: &[u8]) -> Result<String, String> {
    let read = |at: usize| -> Result<u16, String> {
        bytes
            .get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "truncated numeric parameter".to_string())
    };
    let count = read(0)? as usize;
    let weight = read(2)? as i16 as i32;
    let sign = read(4)?;
    let scale = read(6)? as i8;
    if sign == 0xC000 {
        return Ok("NaN".into());
    }
    let mut unscaled: i128 = 0;
    for i in 0..count {
        let digit = read(8 + 2 * i)? as i128;
        unscaled = unscaled
            .checked_mul(10_000)
            .and_then(|v| v.checked_add(digit))
            .ok_or("numeric parameter out of range")?;
    }
    // The digits represent unscaled · 10000^(weight - count + 1); bring that to `scale`.
    let exponent = 4 * (weight - count as i32 + 1) + scale as i32;
    let value = if exponent >= 0 {
        unscaled
            .checked_mul(10i128.pow(exponent as u32))
            .ok_or("numeric parameter out of range")?
    } else {
        unscaled / 10i128.pow((-exponent) as u32)
    };
    let value = if sign == 0x4000 { -value } else { value };
    Ok(decimal_text(value, scale))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BytesMut;

    #[test]
    fn numeric_round_trips_through_binary() {
        for (unscaled, scale) in [
            (12_345_678i128, 3i8),
            (-5, 2),
            (0, 0),
            (100_000_000, 0),
            (7, 4),
        ] {
            let mut out = BytesMut::new();
            crate::values::write_numeric(unscaled, scale, &mut out);
            assert_eq!(numeric_text(&out).unwrap(), decimal_text(unscaled, scale));
        }
    }
}
