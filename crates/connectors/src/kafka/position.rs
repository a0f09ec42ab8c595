//! The resume position of a `kafka` source: per partition, the offset of the next record to
//! read.
//!
//! Written as JSON: `{"partitions":{"0":1234,"1":88}}`. Every record of a partition below its
//! offset has been emitted; a partition the position does not list has had none read.

use std::collections::BTreeMap;

use serde_json::Value;

use crate::ConnectorError;

/// How far a `kafka` source has read each partition.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Position {
    /// Per partition, the offset of its next record to read.
    pub partitions: BTreeMap<i32, i64>,
}

impl Position {
    /// Reads a position written by [`Position::to_json`].
    pub fn parse(text: &str) -> Result<Self, ConnectorError> {
        let invalid = || ConnectorError::InvalidPosition(text.to_string());
        let value: Value = serde_json::from_str(text).map_err(|_| invalid())?;
        let Some(Value::Object(entries)) = value.get("partitions") else {
            return Err(invalid());
        };
        let partitions = entries
            .iter()
            .map(|(partition, offset)| {
                let partition = partition.parse::<i32>().ok().filter(|p| *p >= 0);
                let offset = offset.as_i64().filter(|o| *o >= 0);
                partition.zip(offset).ok_or_else(invalid)
            })
            .collect::<Result<_, _>>()?;
        Ok(Self { partitions })
    }

    /// The position as JSON text, partitions in numeric order.
    pub fn to_json(&self) -> String {
        let entries: Vec<String> = self
            .partitions
            .iter()
            .map(|(partition, offset)| format!("\"{partition}\":{offset}"))
            .collect();
        format!("{{\"partitions\":{{{}}}}}", entries.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let position = Position {
            partitions: BTreeMap::from([(0, 1234), (1, 88), (10, 0)]),
        };
        let text = position.to_json();
        assert_eq!(text, r#"{"partitions":{"0":1234,"1":88,"10":0}}"#);
        assert_eq!(Position::parse(&text).unwrap(), position);
        assert_eq!(
            Position::parse(r#"{"partitions":{}}"#).unwrap(),
            Position::default()
        );
    }

    #[test]
    fn rejects_what_is_not_a_position() {
        for text in [
            "",
            "{}",
            r#"{"partitions":[1]}"#,
            r#"{"partitions":{"x":1}}"#,
            r#"{"partitions":{"0":-1}}"#,
            r#"{"partitions":{"0":"1"}}"#,
        ] {
            assert!(Position::parse(text).is_err(), "{text}");
        }
    }
}
