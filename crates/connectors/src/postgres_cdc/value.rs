//! PostgreSQL's text output of a value, read as the declared Arrow type.
//!
//! `pgoutput` and the snapshot's simple queries both send values in their type's text
//! output format; the session runs with `TimeZone=UTC`, `DateStyle=ISO` and
//! `bytea_output=hex`, so timestamps read `2024-01-02 03:04:05.123456+00` and bytea
//! `\x0102`. A value that does not fit its column is an error (the row becomes a bad record),
//! never a panic.

use arrow::datatypes::{DataType, Field, TimeUnit};
use chrono::{DateTime, NaiveDate, NaiveDateTime, NaiveTime, Timelike};

/// One value, converted to the Rust type of its Arrow column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value {
    /// SQL NULL, or a value upstream did not send.
    Null,
    /// `Boolean`.
    Boolean(bool),
    /// `Int16`.
    Int16(i16),
    /// `Int32`.
    Int32(i32),
    /// `Int64`.
    Int64(i64),
    /// `Float32`.
    Float32(f32),
    /// `Float64`.
    Float64(f64),
    /// `Decimal128`: the unscaled value.
    Decimal(i128),
    /// `Utf8`.
    Text(String),
    /// `Binary`.
    Binary(Vec<u8>),
    /// `Date32`: days since 1970-01-01.
    Date(i32),
    /// `Time64(Microsecond)`: microseconds since midnight.
    Time(i64),
    /// `Timestamp(Microsecond, _)`: microseconds since 1970-01-01 00:00:00 UTC.
    Timestamp(i64),
    /// `List`: the elements.
    List(Vec<Value>),
}

/// Whether values can be read as `data_type`; the reason if not.
pub(crate) fn check_supported(data_type: &DataType) -> Result<(), String> {
    match data_type {
        DataType::List(element) if !matches!(element.data_type(), DataType::List(_)) => {
            check_supported(element.data_type())
        }
        DataType::Boolean
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(_, _)
        | DataType::Utf8
        | DataType::Binary
        | DataType::Date32
        | DataType::Time64(TimeUnit::Microsecond)
        | DataType::Timestamp(TimeUnit::Microsecond, _) => Ok(()),
        other => Err(format!("a postgres-cdc column cannot be of type {other}")),
    }
}

/// Reads `text`, a value in PostgreSQL's text output format, as `data_type` (one that
/// [`check_supported`] accepts).
pub(crate) fn parse(text: &str, data_type: &DataType) -> Result<Value, String> {
    let invalid = |what: &str| format!("\"{text}\" is not {what}");
    let value = match data_type {
        DataType::Boolean => match text {
            "t" | "true" => Value::Boolean(true),
            "f" | "false" => Value::Boolean(false),
            _ => return Err(invalid("a boolean")),
        },
        DataType::Int16 => Value::Int16(text.parse().map_err(|_| invalid("a smallint"))?),
        DataType::Int32 => Value::Int32(text.parse().map_err(|_| invalid("an integer"))?),
        DataType::Int64 => Value::Int64(text.parse().map_err(|_| invalid("a bigint"))?),
        DataType::Float32 => Value::Float32(text.parse().map_err(|_| invalid("a real"))?),
        DataType::Float64 => Value::Float64(text.parse().map_err(|_| invalid("a double"))?),
        DataType::Decimal128(precision, scale) => {
            Value::Decimal(parse_decimal(text, *precision, *scale)?)
        }
        DataType::Utf8 => Value::Text(text.to_string()),
        DataType::Binary => Value::Binary(parse_bytea(text).ok_or_else(|| invalid("a bytea"))?),
        DataType::Date32 => {
            let date =
                NaiveDate::parse_from_str(text, "%Y-%m-%d").map_err(|_| invalid("a date"))?;
            let days = date.signed_duration_since(NaiveDate::default()).num_days();
            Value::Date(i32::try_from(days).map_err(|_| invalid("a date"))?)
        }
        DataType::Time64(TimeUnit::Microsecond) => {
            let time =
                NaiveTime::parse_from_str(text, "%H:%M:%S%.f").map_err(|_| invalid("a time"))?;
            Value::Time(
                i64::from(time.num_seconds_from_midnight()) * 1_000_000
                    + i64::from(time.nanosecond() / 1_000),
            )
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            // A timestamptz has an offset; a timestamp, read in the UTC session, has none.
            let micros = DateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f%#z")
                .map(|at| at.timestamp_micros())
                .or_else(|_| {
                    NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f")
                        .map(|at| at.and_utc().timestamp_micros())
                });
            Value::Timestamp(micros.map_err(|_| invalid("a timestamp"))?)
        }
        DataType::List(element) => Value::List(parse_list(text, element)?),
        other => return Err(format!("a postgres-cdc column cannot be of type {other}")),
    };
    Ok(value)
}

/// A `numeric` as the unscaled value of a `Decimal128(precision, scale)`, rounded half away
/// from zero to `scale` digits as PostgreSQL rounds; `NaN` and infinities do not fit.
fn parse_decimal(text: &str, precision: u8, scale: i8) -> Result<i128, String> {
    let invalid = || format!("\"{text}\" is not a decimal number");
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits = format!("{whole}{fraction}");
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid());
    }
    // The value is digits × 10^-len(fraction); the result is that × 10^scale.
    let shift = i64::from(scale) - fraction.len() as i64;
    let (kept, rounding) = if shift >= 0 {
        (format!("{digits}{}", "0".repeat(shift as usize)), b'0')
    } else {
        let keep = digits.len() as i64 + shift;
        match usize::try_from(keep) {
            Ok(keep) => (digits[..keep].to_string(), digits.as_bytes()[keep]),
            Err(_) => (String::new(), b'0'),
        }
    };
    let significant = kept.trim_start_matches('0');
    let too_big = || format!("\"{text}\" does not fit in decimal({precision}, {scale})");
    if significant.len() > 38 {
        return Err(too_big());
    }
    let mut unscaled: i128 = if significant.is_empty() {
        0
    } else {
        significant.parse().map_err(|_| invalid())?
    };
    if rounding >= b'5' {
        unscaled += 1;
    }
    if unscaled >= 10i128.pow(u32::from(precision)) {
        return Err(too_big());
    }
    Ok(if negative { -unscaled } else { unscaled })
}

/// A `bytea` in hex output format (`\x0aff`).
fn parse_bytea(text: &str) -> Option<Vec<u8>> {
    let hex = text.strip_prefix("\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

/// A one-dimensional array literal (`{1,2,NULL}`, `{"a b","c\"d"}`) as a list of `element`.
fn parse_list(text: &str, element: &Field) -> Result<Vec<Value>, String> {
    parse_array_literal(text)?
        .into_iter()
        .map(|item| match item {
            Some(item) => parse(&item, element.data_type()),
            None if element.is_nullable() => Ok(Value::Null),
            None => Err(format!("\"{text}\" has a NULL element")),
        })
        .collect()
}

/// The elements of a one-dimensional array literal, `None` for NULL.
fn parse_array_literal(text: &str) -> Result<Vec<Option<String>>, String> {
    let invalid = |why: &str| format!("\"{text}\" is not a one-dimensional array: {why}");
    let inner = text
        .strip_prefix('{')
        .and_then(|rest| rest.strip_suffix('}'))
        .ok_or_else(|| invalid("no braces"))?;
    let mut elements = Vec::new();
    if inner.is_empty() {
        return Ok(elements);
    }
    let mut chars = inner.chars().peekable();
    loop {
        let element = if chars.peek() == Some(&'"') {
            chars.next();
            let mut element = String::new();
            loop {
                match chars.next() {
                    Some('"') => break,
                    Some('\\') => element.push(chars.next().ok_or_else(|| invalid("escape"))?),
                    Some(c) => element.push(c),
                    None => return Err(invalid("unterminated quote")),
                }
            }
            Some(element)
        } else {
            let mut element = String::new();
            while let Some(&c) = chars.peek() {
                if c == ',' {
                    break;
                }
                if c == '{' || c == '"' || c == '\\' {
                    return Err(invalid("nested or escaped element"));
                }
                element.push(c);
                chars.next();
            }
            (!element.eq_ignore_ascii_case("NULL")).then_some(element)
        };
        elements.push(element);
        match chars.next() {
            None => return Ok(elements),
            Some(',') => continue,
            Some(_) => return Err(invalid("text after a quoted element")),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[test]
    fn reads_numbers_and_booleans() {
        assert_eq!(parse("-7", &DataType::Int16), Ok(Value::Int16(-7)));
        assert_eq!(parse("70000", &DataType::Int32), Ok(Value::Int32(70000)));
        assert_eq!(parse("1.5", &DataType::Float64), Ok(Value::Float64(1.5)));
        assert!(matches!(parse("NaN", &DataType::Float32), Ok(Value::Float32(x)) if x.is_nan()));
        assert_eq!(
            parse("-Infinity", &DataType::Float64),
            Ok(Value::Float64(f64::NEG_INFINITY))
        );
        assert_eq!(parse("t", &DataType::Boolean), Ok(Value::Boolean(true)));
        assert!(parse("70000", &DataType::Int16).is_err());
        assert!(parse("yes", &DataType::Boolean).is_err());
    }

    #[test]
    fn reads_numeric_at_the_declared_scale() {
        let d = DataType::Decimal128(12, 2);
        assert_eq!(parse("123.45", &d), Ok(Value::Decimal(12345)));
        assert_eq!(parse("-0.5", &d), Ok(Value::Decimal(-50)));
        assert_eq!(parse("7", &d), Ok(Value::Decimal(700)));
        assert_eq!(parse("1.005", &d), Ok(Value::Decimal(101)));
        assert_eq!(parse("-1.004", &d), Ok(Value::Decimal(-100)));
        assert_eq!(
            parse("1250", &DataType::Decimal128(5, -2)),
            Ok(Value::Decimal(13))
        );
        assert!(parse("NaN", &d).is_err());
        assert!(parse("Infinity", &d).is_err());
        assert!(parse("10000000000.00", &d).is_err());
        assert!(parse("1e5", &d).is_err());
    }

    #[test]
    fn reads_dates_times_and_timestamps_in_iso_style() {
        assert_eq!(parse("1970-01-02", &DataType::Date32), Ok(Value::Date(1)));
        assert_eq!(
            parse("00:00:01.5", &DataType::Time64(TimeUnit::Microsecond)),
            Ok(Value::Time(1_500_000))
        );
        let naive = DataType::Timestamp(TimeUnit::Microsecond, None);
        assert_eq!(
            parse("1970-01-01 00:00:01", &naive),
            Ok(Value::Timestamp(1_000_000))
        );
        let utc = DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()));
        assert_eq!(
            parse("2024-01-02 03:04:05.123456+00", &utc),
            Ok(Value::Timestamp(1_704_164_645_123_456))
        );
        assert_eq!(
            parse("2024-01-02 05:04:05+02", &utc),
            Ok(Value::Timestamp(1_704_164_645_000_000))
        );
        assert_eq!(
            parse("1970-01-01 00:00:01+00", &naive),
            Ok(Value::Timestamp(1_000_000))
        );
        assert_eq!(
            parse("1970-01-01 00:00:01", &utc),
            Ok(Value::Timestamp(1_000_000))
        );
        assert!(parse("infinity", &utc).is_err());
        assert!(parse("2024-01-02 03:04:05+00 BC", &utc).is_err());
    }

    #[test]
    fn reads_bytea_in_hex() {
        assert_eq!(
            parse("\\x00ff10", &DataType::Binary),
            Ok(Value::Binary(vec![0, 255, 16]))
        );
        assert!(parse("\\x0", &DataType::Binary).is_err());
        assert!(parse("abc", &DataType::Binary).is_err());
    }

    #[test]
    fn reads_one_dimensional_arrays() {
        let ints = DataType::List(Arc::new(Field::new("item", DataType::Int32, true)));
        assert_eq!(
            parse("{1,2,NULL}", &ints),
            Ok(Value::List(vec![
                Value::Int32(1),
                Value::Int32(2),
                Value::Null
            ]))
        );
        assert_eq!(parse("{}", &ints), Ok(Value::List(vec![])));
        let texts = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
        assert_eq!(
            parse(r#"{plain,"a b","c\"d","NULL",NULL}"#, &texts),
            Ok(Value::List(vec![
                Value::Text("plain".into()),
                Value::Text("a b".into()),
                Value::Text("c\"d".into()),
                Value::Text("NULL".into()),
                Value::Null,
            ]))
        );
        assert!(parse("{{1},{2}}", &ints).is_err());
        assert!(parse("{1,x}", &ints).is_err());
        assert!(parse("1,2", &ints).is_err());
    }

    #[test]
    fn knows_which_types_it_reads() {
        assert!(check_supported(&DataType::Decimal128(12, 2)).is_ok());
        assert!(check_supported(&DataType::UInt8).is_err());
        let nested = DataType::List(Arc::new(Field::new(
            "item",
            DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
            true,
        )));
        assert!(check_supported(&nested).is_err());
    }
}
