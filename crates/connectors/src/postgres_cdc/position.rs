//! The resume position of a `postgres-cdc` source: the LSN after the last transaction it
//! emitted, and for each upstream table the LSN its initial snapshot was taken at.
//!
//! Written as JSON: `{"lsn":"0/16B3748","snapshots":{"public.orders":"0/16B3000"}}`. An
//! output whose reference has no snapshot entry has not had its snapshot emitted yet.

use std::collections::BTreeMap;

use pgwire_replication::Lsn;
use serde_json::{json, Map, Value};

use crate::ConnectorError;

/// How far a `postgres-cdc` source has got.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Position {
    /// Every upstream transaction whose commit ends at or before this LSN has been emitted.
    pub lsn: Lsn,
    /// Per upstream table (`schema.table`), the LSN its emitted snapshot shows the table at.
    pub snapshots: BTreeMap<String, Lsn>,
}

impl Position {
    /// Reads a position written by [`Position::to_json`].
    pub fn parse(text: &str) -> Result<Self, ConnectorError> {
        let invalid = || ConnectorError::InvalidPosition(text.to_string());
        let value: Value = serde_json::from_str(text).map_err(|_| invalid())?;
        let lsn = value
            .get("lsn")
            .and_then(Value::as_str)
            .and_then(|lsn| Lsn::parse(lsn).ok())
            .ok_or_else(invalid)?;
        let snapshots = match value.get("snapshots") {
            None => BTreeMap::new(),
            Some(Value::Object(entries)) => entries
                .iter()
                .map(|(table, lsn)| {
                    let lsn = lsn.as_str().and_then(|lsn| Lsn::parse(lsn).ok());
                    lsn.map(|lsn| (table.clone(), lsn)).ok_or_else(invalid)
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(invalid()),
        };
        Ok(Self { lsn, snapshots })
    }

    /// The position as JSON text.
    pub fn to_json(&self) -> String {
        let snapshots: Map<String, Value> = self
            .snapshots
            .iter()
            .map(|(table, lsn)| (table.clone(), Value::String(lsn.to_string())))
            .collect();
        json!({ "lsn": self.lsn.to_string(), "snapshots": snapshots }).to_string()
    }

    /// The LSN of a position's text, as the coordinator reports it durable; `None` if it is
    /// not a position.
    pub fn durable_lsn(text: &str) -> Option<Lsn> {
        Self::parse(text).ok().map(|position| position.lsn)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_json() {
        let position = Position {
            lsn: Lsn::parse("0/16B3748").unwrap(),
            snapshots: BTreeMap::from([(
                "public.orders".to_string(),
                Lsn::parse("0/16B3000").unwrap(),
            )]),
        };
        let text = position.to_json();
        assert_eq!(
            text,
            r#"{"lsn":"0/16B3748","snapshots":{"public.orders":"0/16B3000"}}"#
        );
        assert_eq!(Position::parse(&text).unwrap(), position);
    }

    #[test]
    fn rejects_what_is_not_a_position() {
        for text in [
            "",
            "12",
            r#"{"lsn":"x"}"#,
            r#"{"lsn":"0/1","snapshots":{"t":1}}"#,
        ] {
            assert!(Position::parse(text).is_err(), "{text}");
        }
        assert_eq!(
            Position::durable_lsn(r#"{"lsn":"1/2"}"#),
            Some(Lsn((1 << 32) | 2))
        );
    }
}
