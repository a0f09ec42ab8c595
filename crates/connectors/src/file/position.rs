//! The position of a file source: per file, where its next unread line starts.
//!
//! Stored as JSON text, `{"files":{"/data/a.jsonl":[1234,57]}}`: file `/data/a.jsonl` has
//! been read up to byte 1234, and its next line is line 57 (1-based).

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use crate::ConnectorError;

/// Where the next unread line of a file starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct FileOffset {
    /// Its byte offset.
    pub bytes: u64,
    /// Its line number, from 1.
    pub line: u64,
}

impl FileOffset {
    /// The start of a file.
    pub const START: Self = Self { bytes: 0, line: 1 };
}

/// Every file read so far, by path (in name order), with its next unread line.
pub(super) type Files = BTreeMap<String, FileOffset>;

/// The position text of `files`.
pub(super) fn encode(files: &Files) -> String {
    let files: Map<String, Value> = files
        .iter()
        .map(|(path, offset)| (path.clone(), json!([offset.bytes, offset.line])))
        .collect();
    json!({ "files": files }).to_string()
}

/// The files of a position text [`encode`] made.
pub(super) fn decode(text: &str) -> Result<Files, ConnectorError> {
    let invalid = || ConnectorError::InvalidPosition(text.to_string());
    let value: Value = serde_json::from_str(text).map_err(|_| invalid())?;
    let files = value
        .get("files")
        .and_then(Value::as_object)
        .ok_or_else(invalid)?;
    files
        .iter()
        .map(|(path, offset)| {
            let pair = offset.as_array().filter(|pair| pair.len() == 2);
            let number = |i: usize| pair.and_then(|pair| pair[i].as_u64());
            match (number(0), number(1)) {
                (Some(bytes), Some(line)) if line >= 1 => {
                    Ok((path.clone(), FileOffset { bytes, line }))
                }
                _ => Err(invalid()),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_reads_back_as_written() {
        let mut files = Files::new();
        files.insert(
            "/data/a.jsonl".into(),
            FileOffset {
                bytes: 1234,
                line: 57,
            },
        );
        files.insert("/data/b \"q\".jsonl".into(), FileOffset::START);
        let text = encode(&files);
        assert!(
            text.starts_with(r#"{"files":{"/data/a.jsonl":[1234,57]"#),
            "{text}"
        );
        assert_eq!(decode(&text).unwrap(), files);
    }

    #[test]
    fn malformed_positions_are_errors() {
        for text in [
            "",
            "12",
            r#"{"files":[]}"#,
            r#"{"files":{"a":[1]}}"#,
            r#"{"files":{"a":[1,0]}}"#,
        ] {
            assert!(decode(text).is_err(), "{text}");
        }
    }
}
