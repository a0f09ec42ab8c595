//! PostgreSQL's text output for values received in the binary wire format.
//!
//! Tests that read rows over the extended protocol get binary values from tokio-postgres;
//! [`PgText`] turns any of them into the exact text PostgreSQL 15 would send for the same value
//! over the simple protocol (`DateStyle = ISO`, `IntervalStyle = postgres`,
//! `extra_float_digits = 1`, `TimeZone = UTC`), so results read over both protocols can be
//! compared with one expected output. The decoding follows each type's `*send` function in
//! PostgreSQL's sources and the rendering its `*out` function; it shares no code with the
//! server, so it checks the server's encoders rather than repeating them.

use std::error::Error;
use std::fmt::Write as _;

use tokio_postgres::types::{FromSql, Kind, Type};

type BoxError = Box<dyn Error + Sync + Send>;

/// Days from 0000-03-01 (the proleptic Gregorian day 0 of [`civil_from_days`]) to 2000-01-01.
const PG_EPOCH_DAYS: i64 = 730_425;
const MICROS_PER_SECOND: i64 = 1_000_000;
const MICROS_PER_DAY: i64 = 86_400 * MICROS_PER_SECOND;

/// A non-NULL value of any type, as PostgreSQL's text output renders it.
///
/// Read it as `Option<PgText>` so that NULL becomes `None`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgText(pub String);

impl<'a> FromSql<'a> for PgText {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        render(ty, raw).map(PgText)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }
}

/// The text form of the binary value `raw` of type `ty`.
pub fn render(ty: &Type, raw: &[u8]) -> Result<String, BoxError> {
    if let Kind::Array(element) = ty.kind() {
        return render_array(element, raw);
    }
    let mut bytes = Bytes::new(raw);
    let text = match *ty {
        Type::BOOL => if bytes.u8()? != 0 { "t" } else { "f" }.to_string(),
        Type::INT2 => bytes.i16()?.to_string(),
        Type::INT4 => bytes.i32()?.to_string(),
        Type::INT8 => bytes.i64()?.to_string(),
        Type::OID => bytes.u32()?.to_string(),
        Type::FLOAT4 => float4_text(bytes.f32()?),
        Type::FLOAT8 => float8_text(bytes.f64()?),
        Type::NUMERIC => numeric_text(&mut bytes)?,
        Type::TEXT
        | Type::VARCHAR
        | Type::BPCHAR
        | Type::NAME
        | Type::CHAR
        | Type::JSON
        | Type::UNKNOWN => return Ok(std::str::from_utf8(raw)?.to_string()),
        Type::JSONB => return jsonb_text(raw),
        Type::BYTEA => return Ok(bytea_text(raw)),
        Type::UUID => return uuid_text(raw),
        Type::DATE => date_text(i64::from(bytes.i32()?)),
        Type::TIME => time_text(bytes.i64()?),
        Type::TIMESTAMP => timestamp_text(bytes.i64()?),
        Type::TIMESTAMPTZ => timestamptz_text(bytes.i64()?),
        Type::INTERVAL => {
            let micros = bytes.i64()?;
            let days = bytes.i32()?;
            let months = bytes.i32()?;
            interval_text(months, days, micros)
        }
        _ => return Err(format!("no text rendering for values of type {ty}").into()),
    };
    bytes.expect_end(ty)?;
    Ok(text)
}

/// A cursor over a binary value that fails instead of panicking on short input.
struct Bytes<'a> {
    rest: &'a [u8],
}

impl<'a> Bytes<'a> {
    fn new(raw: &'a [u8]) -> Self {
        Self { rest: raw }
    }

    fn take<const N: usize>(&mut self) -> Result<[u8; N], BoxError> {
        if self.rest.len() < N {
            return Err(format!(
                "value ends after {} bytes, {N} more expected",
                self.rest.len()
            )
            .into());
        }
        let (head, tail) = self.rest.split_at(N);
        self.rest = tail;
        Ok(head
            .try_into()
            .expect("invariant: split_at(N) yields N bytes"))
    }

    fn slice(&mut self, len: usize) -> Result<&'a [u8], BoxError> {
        if self.rest.len() < len {
            return Err(
                format!("value ends after {} bytes, {len} expected", self.rest.len()).into(),
            );
        }
        let (head, tail) = self.rest.split_at(len);
        self.rest = tail;
        Ok(head)
    }

    fn u8(&mut self) -> Result<u8, BoxError> {
        Ok(self.take::<1>()?[0])
    }

    fn i16(&mut self) -> Result<i16, BoxError> {
        Ok(i16::from_be_bytes(self.take()?))
    }

    fn u16(&mut self) -> Result<u16, BoxError> {
        Ok(u16::from_be_bytes(self.take()?))
    }

    fn i32(&mut self) -> Result<i32, BoxError> {
        Ok(i32::from_be_bytes(self.take()?))
    }

    fn u32(&mut self) -> Result<u32, BoxError> {
        Ok(u32::from_be_bytes(self.take()?))
    }

    fn i64(&mut self) -> Result<i64, BoxError> {
        Ok(i64::from_be_bytes(self.take()?))
    }

    fn f32(&mut self) -> Result<f32, BoxError> {
        Ok(f32::from_be_bytes(self.take()?))
    }

    fn f64(&mut self) -> Result<f64, BoxError> {
        Ok(f64::from_be_bytes(self.take()?))
    }

    fn expect_end(&self, ty: &Type) -> Result<(), BoxError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(format!("{} trailing bytes after a {ty} value", self.rest.len()).into())
        }
    }
}

/// `float4out`: like [`float8_text`], in fixed notation for decimal exponents in `-4..6`.
fn float4_text(value: f32) -> String {
    special_float_text(f64::from(value))
        .unwrap_or_else(|| shortest_float_text(&format!("{value:e}"), 6))
}

/// `float8out`: the shortest digits that round-trip, in fixed notation for decimal exponents
/// in `-4..15` and as `d.ddde+XX` otherwise (the thresholds of `%g`).
fn float8_text(value: f64) -> String {
    special_float_text(value).unwrap_or_else(|| shortest_float_text(&format!("{value:e}"), 15))
}

/// `NaN` and the infinities, which have words instead of digits.
fn special_float_text(value: f64) -> Option<String> {
    if value.is_nan() {
        Some("NaN".into())
    } else if value.is_infinite() {
        Some(if value > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        None
    }
}

/// A finite float from Rust's shortest round-trip `{:e}` form (`-1.5e-7`), in fixed notation
/// when the exponent is in `-4..fixed_below`.
fn shortest_float_text(scientific: &str, fixed_below: i32) -> String {
    let (mantissa, exponent) = scientific
        .split_once('e')
        .expect("invariant: Rust's {:e} output contains an exponent");
    let exponent: i32 = exponent
        .parse()
        .expect("invariant: Rust's {:e} exponent is an integer");
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    if (-4..fixed_below).contains(&exponent) {
        format!("{sign}{}", fixed_notation(&digits, exponent))
    } else {
        let (first, rest) = digits.split_at(1);
        let fraction = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let exponent_sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{sign}{first}{fraction}e{exponent_sign}{:02}",
            exponent.abs()
        )
    }
}

/// `digits` (d₀d₁d₂…, meaning d₀.d₁d₂… × 10^exponent) written without an exponent.
fn fixed_notation(digits: &str, exponent: i32) -> String {
    if exponent < 0 {
        let zeros = "0".repeat((-exponent - 1) as usize);
        return format!("0.{zeros}{digits}");
    }
    let integer_len = exponent as usize + 1;
    if digits.len() <= integer_len {
        format!("{digits}{}", "0".repeat(integer_len - digits.len()))
    } else {
        let (integer, fraction) = digits.split_at(integer_len);
        format!("{integer}.{fraction}")
    }
}

/// `numeric_send` → `numeric_out`: base-10000 digits with a weight, written with exactly
/// `dscale` fractional digits.
fn numeric_text(bytes: &mut Bytes<'_>) -> Result<String, BoxError> {
    let ndigits = bytes.i16()?;
    let weight = i32::from(bytes.i16()?);
    let sign = bytes.u16()?;
    let dscale = usize::from(bytes.u16()?);
    let digits = (0..ndigits)
        .map(|_| bytes.i16())
        .collect::<Result<Vec<_>, _>>()?;
    let negative = match sign {
        0x0000 => false,
        0x4000 => true,
        0xC000 => return Ok("NaN".into()),
        0xD000 => return Ok("Infinity".into()),
        0xF000 => return Ok("-Infinity".into()),
        other => return Err(format!("invalid numeric sign 0x{other:04x}").into()),
    };
    let digit = |index: i32| -> i16 {
        usize::try_from(index)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut text = String::from(if negative { "-" } else { "" });
    if weight < 0 {
        text.push('0');
    } else {
        let _ = write!(text, "{}", digit(0));
        for index in 1..=weight {
            let _ = write!(text, "{:04}", digit(index));
        }
    }
    if dscale > 0 {
        let mut fraction = String::new();
        let mut index = weight + 1;
        while fraction.len() < dscale {
            let _ = write!(fraction, "{:04}", digit(index));
            index += 1;
        }
        fraction.truncate(dscale);
        text.push('.');
        text.push_str(&fraction);
    }
    Ok(text)
}

/// `jsonb_send`: a version byte (1) followed by the text form.
fn jsonb_text(raw: &[u8]) -> Result<String, BoxError> {
    match raw.split_first() {
        Some((1, text)) => Ok(std::str::from_utf8(text)?.to_string()),
        _ => Err("jsonb value without version byte 1".into()),
    }
}

/// `byteaout` with `bytea_output = hex`.
fn bytea_text(raw: &[u8]) -> String {
    let mut text = String::with_capacity(2 + 2 * raw.len());
    text.push_str("\\x");
    for byte in raw {
        let _ = write!(text, "{byte:02x}");
    }
    text
}

fn uuid_text(raw: &[u8]) -> Result<String, BoxError> {
    if raw.len() != 16 {
        return Err(format!("uuid of {} bytes", raw.len()).into());
    }
    let hex = bytea_text(raw);
    let hex = &hex[2..];
    Ok(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// Year, month and day of a day number counted from 0000-03-01 (Howard Hinnant's
/// `civil_from_days`, shifted to that epoch).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let era = days.div_euclid(146_097);
    let day_of_era = days.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 {
        month_index + 3
    } else {
        month_index - 9
    } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// `YYYY-MM-DD`, with ` BC` for years before 1 (there is no year 0 in the output).
fn date_part(days_since_2000: i64) -> (String, &'static str) {
    let (year, month, day) = civil_from_days(days_since_2000 + PG_EPOCH_DAYS);
    if year <= 0 {
        (format!("{:04}-{month:02}-{day:02}", 1 - year), " BC")
    } else {
        (format!("{year:04}-{month:02}-{day:02}"), "")
    }
}

/// `date_out`: days since 2000-01-01.
fn date_text(days: i64) -> String {
    match days {
        d if d == i64::from(i32::MAX) => "infinity".into(),
        d if d == i64::from(i32::MIN) => "-infinity".into(),
        d => {
            let (date, era) = date_part(d);
            format!("{date}{era}")
        }
    }
}

/// `HH:MM:SS[.ffffff]`, trailing fractional zeros dropped, hours not wrapped at 24.
fn clock_text(micros: i64) -> String {
    let seconds = micros / MICROS_PER_SECOND;
    let fraction = micros % MICROS_PER_SECOND;
    let mut text = format!(
        "{:02}:{:02}:{:02}",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    );
    if fraction != 0 {
        let digits = format!("{fraction:06}");
        text.push('.');
        text.push_str(digits.trim_end_matches('0'));
    }
    text
}

/// `time_out`: microseconds since midnight.
fn time_text(micros: i64) -> String {
    clock_text(micros)
}

/// `timestamp_out`: microseconds since 2000-01-01 00:00:00.
fn timestamp_text(micros: i64) -> String {
    timestamp_with_zone(micros, "")
}

/// `timestamptz_out` in time zone UTC.
fn timestamptz_text(micros: i64) -> String {
    timestamp_with_zone(micros, "+00")
}

fn timestamp_with_zone(micros: i64, zone: &str) -> String {
    match micros {
        i64::MAX => "infinity".into(),
        i64::MIN => "-infinity".into(),
        m => {
            let (date, era) = date_part(m.div_euclid(MICROS_PER_DAY));
            let clock = clock_text(m.rem_euclid(MICROS_PER_DAY));
            format!("{date} {clock}{zone}{era}")
        }
    }
}

/// `interval_out` with `IntervalStyle = postgres` (`EncodeInterval`, `INTSTYLE_POSTGRES`).
fn interval_text(months: i32, days: i32, micros: i64) -> String {
    let mut text = String::new();
    let mut is_before = false;
    let parts = [
        (i64::from(months / 12), "year"),
        (i64::from(months % 12), "mon"),
        (i64::from(days), "day"),
    ];
    for (value, unit) in parts {
        if value == 0 {
            continue;
        }
        let separator = if text.is_empty() { "" } else { " " };
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        let _ = write!(text, "{separator}{plus}{value} {unit}{plural}");
        is_before = value < 0;
    }
    if text.is_empty() || micros != 0 {
        let separator = if text.is_empty() { "" } else { " " };
        let sign = if micros < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let _ = write!(text, "{separator}{sign}{}", clock_text(micros.abs()));
    }
    text
}

/// `array_send` → `array_out` for arrays of one dimension (and the empty array).
fn render_array(element: &Type, raw: &[u8]) -> Result<String, BoxError> {
    let mut bytes = Bytes::new(raw);
    let dimensions = bytes.i32()?;
    let _has_nulls = bytes.i32()?;
    let _element_oid = bytes.u32()?;
    match dimensions {
        0 => return Ok("{}".into()),
        1 => {}
        n => return Err(format!("no text rendering for arrays of {n} dimensions").into()),
    }
    let len = bytes.i32()?;
    let lower_bound = bytes.i32()?;
    let mut items = Vec::with_capacity(usize::try_from(len).unwrap_or(0));
    for _ in 0..len {
        let item_len = bytes.i32()?;
        items.push(match usize::try_from(item_len) {
            Err(_) => "NULL".to_string(),
            Ok(item_len) => quote_array_item(&render(element, bytes.slice(item_len)?)?),
        });
    }
    let bounds = if lower_bound == 1 {
        String::new()
    } else {
        format!("[{lower_bound}:{}]=", lower_bound + len - 1)
    };
    Ok(format!("{bounds}{{{}}}", items.join(",")))
}

/// An array element as `array_out` writes it: quoted when it could be misread.
fn quote_array_item(item: &str) -> String {
    let needs_quotes = item.is_empty()
        || item.eq_ignore_ascii_case("NULL")
        || item
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
    if !needs_quotes {
        return item.to_string();
    }
    let escaped = item.replace('\\', "\\\\").replace('"', "\\\"");
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric(ndigits: i16, weight: i16, sign: u16, dscale: u16, digits: &[i16]) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend(ndigits.to_be_bytes());
        raw.extend(weight.to_be_bytes());
        raw.extend(sign.to_be_bytes());
        raw.extend(dscale.to_be_bytes());
        for digit in digits {
            raw.extend(digit.to_be_bytes());
        }
        raw
    }

    #[test]
    fn floats_print_like_float8out() {
        let f8 = |v: f64| render(&Type::FLOAT8, &v.to_be_bytes()).unwrap();
        assert_eq!(f8(1.5), "1.5");
        assert_eq!(f8(100.0), "100");
        assert_eq!(f8(0.1 + 0.2), "0.30000000000000004");
        assert_eq!(f8(1e15), "1e+15");
        assert_eq!(f8(123456789012345.0), "123456789012345");
        assert_eq!(f8(0.0001), "0.0001");
        assert_eq!(f8(0.00001), "1e-05");
        assert_eq!(f8(-2.5e-7), "-2.5e-07");
        assert_eq!(f8(-0.0), "-0");
        assert_eq!(f8(f64::NAN), "NaN");
        assert_eq!(f8(f64::NEG_INFINITY), "-Infinity");
        let f4 = |v: f32| render(&Type::FLOAT4, &v.to_be_bytes()).unwrap();
        assert_eq!(f4(1234567.0), "1.234567e+06");
        assert_eq!(f4(123456.0), "123456");
        assert_eq!(f4(0.1), "0.1");
    }

    #[test]
    fn numerics_keep_their_display_scale() {
        let text = |raw: Vec<u8>| render(&Type::NUMERIC, &raw).unwrap();
        // 12345.678 = 1|2345|6780, weight 1, dscale 3
        assert_eq!(text(numeric(3, 1, 0, 3, &[1, 2345, 6780])), "12345.678");
        // -0.0005 with scale 4: one digit 5 at weight -1 → 0.0005
        assert_eq!(text(numeric(1, -1, 0x4000, 4, &[5])), "-0.0005");
        // 10000 with scale 2: digits [1], weight 1
        assert_eq!(text(numeric(1, 1, 0, 2, &[1])), "10000.00");
        // 0 with scale 2: no digits
        assert_eq!(text(numeric(0, 0, 0, 2, &[])), "0.00");
        // 0.00000001 (1e-8): digit 1 at weight -2
        assert_eq!(text(numeric(1, -2, 0, 8, &[1])), "0.00000001");
        assert_eq!(text(numeric(0, 0, 0xC000, 0, &[])), "NaN");
    }

    #[test]
    fn dates_and_timestamps_count_from_2000() {
        assert_eq!(
            render(&Type::DATE, &0i32.to_be_bytes()).unwrap(),
            "2000-01-01"
        );
        assert_eq!(
            render(&Type::DATE, &(-1i32).to_be_bytes()).unwrap(),
            "1999-12-31"
        );
        assert_eq!(
            render(&Type::DATE, &9190i32.to_be_bytes()).unwrap(),
            "2025-02-28"
        );
        assert_eq!(
            render(&Type::DATE, &(-730_120i32).to_be_bytes()).unwrap(),
            "0001-12-31 BC"
        );
        let micros = 86_400_000_000i64 + 3_723_000_500;
        assert_eq!(
            render(&Type::TIMESTAMP, &micros.to_be_bytes()).unwrap(),
            "2000-01-02 01:02:03.0005"
        );
        assert_eq!(
            render(&Type::TIMESTAMPTZ, &(-1i64).to_be_bytes()).unwrap(),
            "1999-12-31 23:59:59.999999+00"
        );
    }

    #[test]
    fn intervals_print_in_postgres_style() {
        assert_eq!(interval_text(0, 0, 0), "00:00:00");
        assert_eq!(
            interval_text(14, 3, 4 * 3_600_000_000 + 5_500_000),
            "1 year 2 mons 3 days 04:00:05.5"
        );
        assert_eq!(interval_text(0, -1, 0), "-1 days");
        assert_eq!(interval_text(0, -1, 3_600_000_000), "-1 days +01:00:00");
        assert_eq!(interval_text(0, 1, -60_000_000), "1 day -00:01:00");
        assert_eq!(interval_text(1, 0, 0), "1 mon");
        assert_eq!(interval_text(0, 0, 90_000_000_000), "25:00:00");
    }

    #[test]
    fn text_arrays_quote_what_needs_quoting() {
        let mut raw = Vec::new();
        raw.extend(1i32.to_be_bytes());
        raw.extend(1i32.to_be_bytes());
        raw.extend(25u32.to_be_bytes());
        raw.extend(3i32.to_be_bytes());
        raw.extend(1i32.to_be_bytes());
        for item in [Some("a b"), None, Some("c")] {
            match item {
                Some(s) => {
                    raw.extend((s.len() as i32).to_be_bytes());
                    raw.extend(s.as_bytes());
                }
                None => raw.extend((-1i32).to_be_bytes()),
            }
        }
        assert_eq!(render(&Type::TEXT_ARRAY, &raw).unwrap(), "{\"a b\",NULL,c}");
    }

    #[test]
    fn short_input_is_an_error_not_a_panic() {
        assert!(render(&Type::INT8, &[0, 1]).is_err());
        assert!(render(&Type::NUMERIC, &[0, 2, 0, 0, 0, 0, 0, 0, 0, 1]).is_err());
    }
}
