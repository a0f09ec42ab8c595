//! Dates, times and intervals as PostgreSQL prints them (`DateStyle = ISO`, `IntervalStyle =
//! postgres`): what clients read in text results and what a cast to `text` gives.

use std::fmt::Write as _;

/// A timestamp (microseconds since the Unix epoch) as `YYYY-MM-DD HH:MM:SS[.ffffff]`, the
/// fraction without trailing zeros.
pub fn timestamp_text(micros: i64) -> String {
    match chrono::DateTime::from_timestamp_micros(micros) {
        Some(t) => {
            let base = t.format("%Y-%m-%d %H:%M:%S").to_string();
            format!("{base}{}", fraction_text(micros.rem_euclid(1_000_000)))
        }
        None => micros.to_string(),
    }
}

/// A time of day (microseconds since midnight) as `HH:MM:SS[.ffffff]`.
pub fn time_text(micros: i64) -> String {
    let seconds = micros.div_euclid(1_000_000);
    format!(
        "{:02}:{:02}:{:02}{}",
        seconds / 3600,
        (seconds / 60) % 60,
        seconds % 60,
        fraction_text(micros.rem_euclid(1_000_000))
    )
}

/// An interval as Postgres prints it (`IntervalStyle = postgres`): each non-zero field with
/// its unit (plural unless exactly 1), a `+` on a positive field after a negative one, and the
/// clock time last.
pub fn interval_text(months: i32, days: i32, micros: i64) -> String {
    let mut text = String::new();
    let mut is_zero = true;
    let mut is_before = false;
    let mut add_part = |text: &mut String, value: i64, unit: &str| {
        if value == 0 {
            return;
        }
        let separator = if is_zero { "" } else { " " };
        let plus = if is_before && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        let _ = write!(text, "{separator}{plus}{value} {unit}{plural}");
        is_before = value < 0;
        is_zero = false;
    };
    add_part(&mut text, (months / 12) as i64, "year");
    add_part(&mut text, (months % 12) as i64, "mon");
    add_part(&mut text, days as i64, "day");
    if is_zero || micros != 0 {
        let separator = if is_zero { "" } else { " " };
        let sign = if micros < 0 {
            "-"
        } else if is_before {
            "+"
        } else {
            ""
        };
        let _ = write!(text, "{separator}{sign}{}", time_text(micros.abs()));
    }
    text
}

/// A duration (what a timestamp minus a timestamp is) as the interval PostgreSQL makes of
/// it: whole 24-hour days, and the rest as time (`27 hours` is `1 day 03:00:00`), both with
/// the duration's sign. Returns `(days, micros)`.
pub fn duration_interval(micros: i64) -> (i32, i64) {
    const DAY: i64 = 86_400_000_000;
    ((micros / DAY) as i32, micros % DAY)
}

/// A `double precision` (or, `single`, a `real`) as PostgreSQL prints it: the shortest text that
/// reads back as the same value, in exponent notation outside 1e-4 to 1e15 (1e6 for `real`),
/// `NaN` and `Infinity` spelled out.
pub fn float_text(value: f64, single: bool) -> String {
    if value.is_nan() {
        return "NaN".into();
    }
    if value.is_infinite() {
        return if value > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    let magnitude = value.abs();
    let text = if single {
        format!("{}", value as f32)
    } else {
        format!("{value}")
    };
    // Postgres switches to exponent notation at 10^FLT_DIG / 10^DBL_DIG.
    let limit = if single { 1e6 } else { 1e15 };
    if magnitude != 0.0 && !(1e-4..limit).contains(&magnitude) {
        let exponent = if single {
            format!("{:e}", value as f32)
        } else {
            format!("{value:e}")
        };
        match exponent.split_once('e') {
            Some((mantissa, exp)) if exp.starts_with('-') => {
                format!("{mantissa}e-{:0>2}", &exp[1..])
            }
            Some((mantissa, exp)) => format!("{mantissa}e+{exp:0>2}"),
            None => exponent,
        }
    } else {
        text
    }
}

/// `.ffffff` without trailing zeros, or nothing for whole seconds.
fn fraction_text(micros: i64) -> String {
    if micros == 0 {
        return String::new();
    }
    let digits = format!("{micros:06}");
    format!(".{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fractions_lose_their_trailing_zeros() {
        assert_eq!(timestamp_text(1_500_000), "1970-01-01 00:00:01.5");
        assert_eq!(timestamp_text(0), "1970-01-01 00:00:00");
        assert_eq!(time_text(3_723_000_001), "01:02:03.000001");
    }

    #[test]
    fn durations_read_as_justified_intervals() {
        let text = |micros| {
            let (days, rest) = duration_interval(micros);
            interval_text(0, days, rest)
        };
        assert_eq!(text(5_400_000_000), "01:30:00");
        assert_eq!(text(-43_200_000_000), "-12:00:00");
        assert_eq!(text(27 * 3_600_000_000), "1 day 03:00:00");
        assert_eq!(text(-27 * 3_600_000_000), "-1 days -03:00:00");
        assert_eq!(text(0), "00:00:00");
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(float_text(0.1, false), "0.1");
        assert_eq!(float_text(1e300, false), "1e+300");
        assert_eq!(float_text(f64::INFINITY, false), "Infinity");
    }
}
