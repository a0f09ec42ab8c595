//! Dates and times as PostgreSQL prints them (`DateStyle = ISO`): what clients read in text
//! results and what a cast to `text` gives.

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
}
