//! Durations in option values: `'1s'`, `'250ms'`, `'2 minutes'`.

use std::time::Duration;

use crate::ConnectorError;

/// Parses `text` as a duration for option `option`.
pub(crate) fn parse_duration(option: &str, text: &str) -> Result<Duration, ConnectorError> {
    let invalid = |reason: &str| ConnectorError::InvalidOption {
        option: option.to_string(),
        reason: format!("\"{text}\": {reason}"),
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(trimmed.len());
    let (number, unit) = trimmed.split_at(split);
    let number: f64 = number
        .parse()
        .map_err(|_| invalid("expected a number and a unit, such as 1s or 250ms"))?;
    let seconds_per_unit = match unit.trim().to_lowercase().as_str() {
        "ms" | "millisecond" | "milliseconds" => 0.001,
        "" | "s" | "sec" | "second" | "seconds" => 1.0,
        "m" | "min" | "minute" | "minutes" => 60.0,
        "h" | "hour" | "hours" => 3600.0,
        _ => return Err(invalid("unknown unit (use ms, s, min or h)")),
    };
    Duration::try_from_secs_f64(number * seconds_per_unit).map_err(|_| invalid("out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        assert_eq!(parse_duration("t", "1s").unwrap(), Duration::from_secs(1));
        assert_eq!(
            parse_duration("t", "250ms").unwrap(),
            Duration::from_millis(250)
        );
        assert_eq!(
            parse_duration("t", "2 minutes").unwrap(),
            Duration::from_secs(120)
        );
        assert!(parse_duration("t", "fast").is_err());
        assert!(parse_duration("t", "3 weeks").is_err());
    }
}
