//! PostgreSQL's `to_char(timestamp | date, template)`.
//!
//! DataFusion's own `to_char` reads chrono's `%Y-%m-%d` templates, so PostgreSQL's
//! `to_char(ts, 'YYYY-MM-DD')` came back as the template itself. This one reads PostgreSQL's
//! template patterns (`YYYY`, `MM`, `DD`, `HH24`, `MI`, `SS`, `MS`, `US`, `Month`, `Dy`,
//! `AM`, …, the `FM` fill-mode and `TM` prefixes, and `"quoted text"`), as in PostgreSQL's
//! documentation, table "Template Patterns for Date/Time Formatting"; any other character is
//! copied. Evaluated per batch; a constant template is parsed once.

use std::sync::Arc;

use chrono::{Datelike, NaiveDateTime, Timelike};
use datafusion::arrow::array::{Array, AsArray, StringBuilder};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::temporal_conversions::timestamp_us_to_datetime;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

/// The `to_char` function.
pub(crate) fn to_char() -> ScalarUDF {
    ScalarUDF::new_from_impl(ToChar {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

/// An error a client sees for a value `to_char` cannot format.
fn invalid_argument(message: impl Into<String>) -> DataFusionError {
    DataFusionError::Execution(message.into())
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct ToChar {
    signature: Signature,
}

impl ScalarUDFImpl for ToChar {
    fn name(&self) -> &str {
        "to_char"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let scalar = args
            .args
            .iter()
            .all(|arg| matches!(arg, ColumnarValue::Scalar(_)));
        let rows = if scalar { 1 } else { args.number_rows };
        let values = args.args[0].to_array(rows)?;
        let micros = match values.data_type() {
            DataType::Timestamp(..) | DataType::Date32 | DataType::Date64 | DataType::Null => {
                cast(&values, &DataType::Timestamp(TimeUnit::Microsecond, None))?
            }
            other => {
                return Err(invalid_argument(format!(
                    "to_char of {other} is not supported; it formats timestamps and dates"
                )))
            }
        };
        let micros = micros.as_primitive::<TimestampMicrosecondType>();
        let constant_template = match &args.args[1] {
            ColumnarValue::Scalar(value) => Some(template_text(value).map(|t| parse(&t))),
            ColumnarValue::Array(_) => None,
        };
        let templates = args.args[1].to_array(rows)?;
        let mut out = StringBuilder::with_capacity(rows, rows * 16);
        for row in 0..rows {
            let template = match &constant_template {
                Some(template) => template.clone(),
                None => {
                    template_text(&ScalarValue::try_from_array(&templates, row)?).map(|t| parse(&t))
                }
            };
            match (micros.is_valid(row), template) {
                (true, Some(template)) => {
                    let at = timestamp_us_to_datetime(micros.value(row))
                        .ok_or_else(|| invalid_argument("timestamp out of range"))?;
                    out.append_value(format(&template, &at));
                }
                _ => out.append_null(),
            }
        }
        // One row for constant arguments: DataFusion reads it as a constant.
        Ok(ColumnarValue::Array(Arc::new(out.finish())))
    }
}

fn template_text(value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Utf8(t) | ScalarValue::LargeUtf8(t) | ScalarValue::Utf8View(t) => t.clone(),
        _ => None,
    }
}

/// How a name (month, weekday) or meridiem is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Case {
    Upper,
    Capitalized,
    Lower,
}

/// One template pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Hour24,
    Hour12,
    Minute,
    Second,
    Millisecond,
    Microsecond,
    SecondOfDay,
    Meridiem { case: Case, dots: bool },
    YearWithComma,
    Year,
    YearLast3,
    YearLast2,
    YearLast1,
    IsoYear,
    Century,
    Quarter,
    Month,
    MonthName { case: Case, short: bool },
    Week,
    IsoWeek,
    DayOfYear,
    DayOfMonth,
    DayOfWeek,
    IsoDayOfWeek,
    DayName { case: Case, short: bool },
    JulianDay,
}

/// Patterns written one way only; tried before [`PATTERNS`].
const EXACT_PATTERNS: [(&str, Field); 20] = [
    (
        "MONTH",
        Field::MonthName {
            case: Case::Upper,
            short: false,
        },
    ),
    (
        "Month",
        Field::MonthName {
            case: Case::Capitalized,
            short: false,
        },
    ),
    (
        "month",
        Field::MonthName {
            case: Case::Lower,
            short: false,
        },
    ),
    (
        "MON",
        Field::MonthName {
            case: Case::Upper,
            short: true,
        },
    ),
    (
        "Mon",
        Field::MonthName {
            case: Case::Capitalized,
            short: true,
        },
    ),
    (
        "mon",
        Field::MonthName {
            case: Case::Lower,
            short: true,
        },
    ),
    (
        "DAY",
        Field::DayName {
            case: Case::Upper,
            short: false,
        },
    ),
    (
        "Day",
        Field::DayName {
            case: Case::Capitalized,
            short: false,
        },
    ),
    (
        "day",
        Field::DayName {
            case: Case::Lower,
            short: false,
        },
    ),
    (
        "DY",
        Field::DayName {
            case: Case::Upper,
            short: true,
        },
    ),
    (
        "Dy",
        Field::DayName {
            case: Case::Capitalized,
            short: true,
        },
    ),
    (
        "dy",
        Field::DayName {
            case: Case::Lower,
            short: true,
        },
    ),
    (
        "A.M.",
        Field::Meridiem {
            case: Case::Upper,
            dots: true,
        },
    ),
    (
        "P.M.",
        Field::Meridiem {
            case: Case::Upper,
            dots: true,
        },
    ),
    (
        "a.m.",
        Field::Meridiem {
            case: Case::Lower,
            dots: true,
        },
    ),
    (
        "p.m.",
        Field::Meridiem {
            case: Case::Lower,
            dots: true,
        },
    ),
    (
        "AM",
        Field::Meridiem {
            case: Case::Upper,
            dots: false,
        },
    ),
    (
        "PM",
        Field::Meridiem {
            case: Case::Upper,
            dots: false,
        },
    ),
    (
        "am",
        Field::Meridiem {
            case: Case::Lower,
            dots: false,
        },
    ),
    (
        "pm",
        Field::Meridiem {
            case: Case::Lower,
            dots: false,
        },
    ),
];

/// Numeric patterns, matched in either case, longest first.
const PATTERNS: [(&str, Field); 25] = [
    ("Y,YYY", Field::YearWithComma),
    ("SSSSS", Field::SecondOfDay),
    ("HH24", Field::Hour24),
    ("HH12", Field::Hour12),
    ("SSSS", Field::SecondOfDay),
    ("YYYY", Field::Year),
    ("IYYY", Field::IsoYear),
    ("YYY", Field::YearLast3),
    ("DDD", Field::DayOfYear),
    ("HH", Field::Hour12),
    ("MI", Field::Minute),
    ("SS", Field::Second),
    ("MS", Field::Millisecond),
    ("US", Field::Microsecond),
    ("YY", Field::YearLast2),
    ("CC", Field::Century),
    ("MM", Field::Month),
    ("WW", Field::Week),
    ("IW", Field::IsoWeek),
    ("DD", Field::DayOfMonth),
    ("ID", Field::IsoDayOfWeek),
    ("Y", Field::YearLast1),
    ("Q", Field::Quarter),
    ("D", Field::DayOfWeek),
    ("J", Field::JulianDay),
];

/// A parsed template: text copied as is, or a pattern (with `FM`: without padding).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Field { field: Field, fill: bool },
}

fn parse(template: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut text = String::new();
    let mut fill = false;
    let mut translate = false;
    let mut rest = template;
    while let Some(c) = rest.chars().next() {
        let upper = rest.get(..2).map(str::to_ascii_uppercase);
        if matches!(upper.as_deref(), Some("FM")) {
            fill = true;
            rest = &rest[2..];
            continue;
        }
        if matches!(upper.as_deref(), Some("TM")) {
            // Translation mode: English names, never padded.
            translate = true;
            rest = &rest[2..];
            continue;
        }
        if c == '"' {
            rest = quoted(&rest[1..], &mut text);
            continue;
        }
        if let Some(after) = rest.strip_prefix("\\\"") {
            text.push('"');
            rest = after;
            continue;
        }
        let exact = EXACT_PATTERNS
            .iter()
            .find(|(pattern, _)| rest.starts_with(pattern));
        let numeric = || {
            PATTERNS.iter().find(|(pattern, _)| {
                rest.get(..pattern.len())
                    .is_some_and(|head| head.eq_ignore_ascii_case(pattern))
            })
        };
        match exact.or_else(numeric) {
            Some((pattern, field)) => {
                if !text.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut text)));
                }
                let name = matches!(field, Field::MonthName { .. } | Field::DayName { .. });
                parts.push(Part::Field {
                    field: *field,
                    fill: fill || (translate && name),
                });
                (fill, translate) = (false, false);
                rest = &rest[pattern.len()..];
            }
            None => {
                text.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    if !text.is_empty() {
        parts.push(Part::Text(text));
    }
    parts
}

/// Copies quoted text (after its opening quote) to `text`; returns what follows the closing
/// quote. A backslash keeps the next character as it is.
fn quoted<'a>(mut rest: &'a str, text: &mut String) -> &'a str {
    while let Some(c) = rest.chars().next() {
        rest = &rest[c.len_utf8()..];
        match c {
            '"' => return rest,
            '\\' => {
                if let Some(next) = rest.chars().next() {
                    text.push(next);
                    rest = &rest[next.len_utf8()..];
                }
            }
            other => text.push(other),
        }
    }
    rest
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

const DAYS: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];

/// The Julian day of 0001-01-01 minus one, to add to chrono's days from the common era.
const JULIAN_DAY_BEFORE_COMMON_ERA: i64 = 1_721_425;

fn format(template: &[Part], at: &NaiveDateTime) -> String {
    let mut out = String::new();
    for part in template {
        match part {
            Part::Text(text) => out.push_str(text),
            Part::Field { field, fill } => push_field(&mut out, *field, *fill, at),
        }
    }
    out
}

fn push_field(out: &mut String, field: Field, fill: bool, at: &NaiveDateTime) {
    let number = |out: &mut String, value: i64, width: usize| {
        if fill {
            out.push_str(&value.to_string());
        } else {
            out.push_str(&format!("{value:0width$}"));
        }
    };
    let hour12 = match at.hour() % 12 {
        0 => 12,
        h => h,
    };
    let year = i64::from(at.year());
    match field {
        Field::Hour24 => number(out, at.hour().into(), 2),
        Field::Hour12 => number(out, hour12.into(), 2),
        Field::Minute => number(out, at.minute().into(), 2),
        Field::Second => number(out, at.second().into(), 2),
        Field::Millisecond => number(out, (at.nanosecond() / 1_000_000).into(), 3),
        Field::Microsecond => number(out, (at.nanosecond() / 1_000).into(), 6),
        Field::SecondOfDay => out.push_str(&at.num_seconds_from_midnight().to_string()),
        Field::Meridiem { case, dots } => {
            let text = match (at.hour() < 12, dots) {
                (true, false) => "AM",
                (false, false) => "PM",
                (true, true) => "A.M.",
                (false, true) => "P.M.",
            };
            out.push_str(&cased(text, case));
        }
        Field::YearWithComma => out.push_str(&format!("{},{:03}", year / 1000, year % 1000)),
        Field::Year => number(out, year, 4),
        Field::YearLast3 => number(out, year % 1000, 3),
        Field::YearLast2 => number(out, year % 100, 2),
        Field::YearLast1 => number(out, year % 10, 1),
        Field::IsoYear => number(out, at.iso_week().year().into(), 4),
        Field::Century => number(out, (year + 99) / 100, 2),
        Field::Quarter => out.push_str(&(at.month0() / 3 + 1).to_string()),
        Field::Month => number(out, at.month().into(), 2),
        Field::MonthName { case, short } => {
            name(out, MONTHS[at.month0() as usize], case, short, fill)
        }
        Field::Week => number(out, (at.ordinal0() / 7 + 1).into(), 2),
        Field::IsoWeek => number(out, at.iso_week().week().into(), 2),
        Field::DayOfYear => number(out, at.ordinal().into(), 3),
        Field::DayOfMonth => number(out, at.day().into(), 2),
        Field::DayOfWeek => out.push_str(&(at.weekday().num_days_from_sunday() + 1).to_string()),
        Field::IsoDayOfWeek => out.push_str(&at.weekday().number_from_monday().to_string()),
        Field::DayName { case, short } => name(
            out,
            DAYS[at.weekday().num_days_from_sunday() as usize],
            case,
            short,
            fill,
        ),
        Field::JulianDay => out.push_str(
            &(i64::from(at.num_days_from_ce()) + JULIAN_DAY_BEFORE_COMMON_ERA).to_string(),
        ),
    }
}

/// A month or day name: abbreviated to three letters, or in full padded to nine characters
/// unless in fill mode.
fn name(out: &mut String, full: &str, case: Case, short: bool, fill: bool) {
    let text = if short { &full[..3] } else { full };
    let text = cased(text, case);
    if short || fill {
        out.push_str(&text);
    } else {
        out.push_str(&format!("{text:<9}"));
    }
}

fn cased(text: &str, case: Case) -> String {
    match case {
        Case::Upper => text.to_ascii_uppercase(),
        Case::Lower => text.to_ascii_lowercase(),
        Case::Capitalized => {
            let mut chars = text.chars();
            chars.next().map_or_else(String::new, |first| {
                first.to_ascii_uppercase().to_string() + &chars.as_str().to_ascii_lowercase()
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").expect("a timestamp")
    }

    fn to_char(text: &str, template: &str) -> String {
        format(&parse(template), &at(text))
    }

    /// Expected values are PostgreSQL 15's output for the same timestamps and templates.
    #[test]
    fn templates_format_as_postgres_formats_them() {
        let cases = [
            ("2015-07-15 00:00:00.062", "YYYY-MM-DD", "2015-07-15"),
            ("2015-07-15 00:00:00.062", "HH24:MI", "00:00"),
            ("2015-07-15 00:00:00.062", "HH12:MI:SS AM", "12:00:00 AM"),
            ("2024-02-29 13:05:09.123456", "HH12:MI:SS AM", "01:05:09 PM"),
            (
                "2024-02-29 13:05:09.123456",
                "Day, DD Month YYYY",
                "Thursday , 29 February  2024",
            ),
            (
                "2021-01-01 23:59:59",
                "FMDay, FMDD FMMonth YYYY",
                "Friday, 1 January 2021",
            ),
            (
                "2015-07-15 00:00:00.062",
                "Dy Mon dy mon DY MON",
                "Wed Jul wed jul WED JUL",
            ),
            (
                "2024-02-29 13:05:09.123456",
                "MS US SSSS",
                "123 123456 47109",
            ),
            ("2015-07-15 00:00:00.062", "MS US SSSS", "062 062000 0"),
            (
                "2015-07-15 00:00:00.062",
                "YYY YY Y Y,YYY CC Q",
                "015 15 5 2,015 21 3",
            ),
            (
                "0987-12-31 12:00:00",
                "YYY YY Y Y,YYY CC Q",
                "987 87 7 0,987 10 4",
            ),
            (
                "2021-01-01 23:59:59",
                "DDD D ID IW WW IYYY J",
                "001 6 5 53 01 2020 2459216",
            ),
            (
                "0987-12-31 12:00:00",
                "DDD D ID IW WW IYYY J",
                "365 2 1 01 53 0988 2081919",
            ),
            (
                "2015-07-15 00:00:00.062",
                "\"Week\" WW \"of\" YYYY, a.m. p.m. pm",
                "Week 28 of 2015, a.m. a.m. am",
            ),
            (
                "2015-07-15 00:00:00.062",
                "FMHH12 FMMI hh24 yyyy-mm-dd",
                "12 0 00 2015-07-15",
            ),
            (
                "2024-02-29 13:05:09.123456",
                "MONTH month TMMonth",
                "FEBRUARY  february  February",
            ),
        ];
        for (timestamp, template, expected) in cases {
            assert_eq!(to_char(timestamp, template), expected, "{template}");
        }
    }
}
