//! The `webhook` connector: rows pushed over HTTP instead of pulled.
//!
//! A webhook source has no reader: the server's HTTP listener hands each request's body to
//! [`Webhook::decode`] and commits the batch before it answers. A body is one JSON object,
//! or newline-delimited objects (one record each); the optional `secret` option must then
//! arrive in the `secret.header` header (default `x-webhook-secret`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::decode::{Decoder, RawRecord};
use crate::{ConnectorError, Encoding, Envelope, SourceBatch, SourceContext, SourceOptions};

/// The header that carries the secret unless `secret.header` names another.
const DEFAULT_SECRET_HEADER: &str = "x-webhook-secret";

/// A webhook source's request decoder and secret.
#[derive(Debug)]
pub struct Webhook {
    decoder: Decoder,
    secret: Option<String>,
    secret_header: String,
    /// Requests decoded so far (the source's position).
    requests: AtomicU64,
}

impl Webhook {
    /// The webhook described by `options` (`secret`, `secret.header`) writing rows of
    /// `context`'s schema, counting requests on from `context.resume`.
    pub fn open(options: &SourceOptions, context: &SourceContext) -> Result<Self, ConnectorError> {
        if let Some(format) = context.format {
            if format.envelope != Envelope::Plain || format.encoding != Encoding::Json {
                return Err(ConnectorError::InvalidFormat(format!(
                    "a webhook source reads FORMAT PLAIN ENCODE JSON, not {format}"
                )));
            }
        }
        if !context.include.is_empty() {
            return Err(ConnectorError::InvalidFormat(
                "a webhook source has no INCLUDE columns".into(),
            ));
        }
        let requests = match context.resume.as_deref() {
            Some(position) => position
                .parse()
                .map_err(|_| ConnectorError::InvalidPosition(position.to_string()))?,
            None => 0,
        };
        let webhook = Self {
            decoder: Decoder::new(Encoding::Json, context.schema(), options)?,
            secret: options.text("secret").map(str::to_string),
            secret_header: options
                .text("secret.header")
                .unwrap_or(DEFAULT_SECRET_HEADER)
                .to_ascii_lowercase(),
            requests: AtomicU64::new(requests),
        };
        options.reject_unknown("webhook")?;
        Ok(webhook)
    }

    /// The (lower-case) name of the header that must carry the secret.
    pub fn secret_header(&self) -> &str {
        &self.secret_header
    }

    /// Whether a request whose secret header is `presented` may write.
    pub fn authorized(&self, presented: Option<&str>) -> bool {
        match (&self.secret, presented) {
            (None, _) => true,
            (Some(secret), Some(presented)) => {
                constant_time_eq(secret.as_bytes(), presented.as_bytes())
            }
            (Some(_), None) => false,
        }
    }

    /// The rows of one request's `body`; records that are not JSON objects of the columns
    /// are bad records at position `request N, record M`.
    pub fn decode(&self, body: &[u8]) -> Result<SourceBatch, ConnectorError> {
        let request = self.requests.fetch_add(1, Ordering::AcqRel) + 1;
        let whole =
            serde_json::from_slice::<serde_json::Value>(body).is_ok_and(|value| value.is_object());
        let lines: Vec<&[u8]> = if whole {
            vec![body]
        } else {
            body.split(|&b| b == b'\n')
                .map(|line| line.strip_suffix(b"\r").unwrap_or(line))
                .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
                .collect()
        };
        let records: Vec<RawRecord<'_>> = lines
            .into_iter()
            .enumerate()
            .map(|(index, bytes)| RawRecord {
                bytes,
                position: format!("request {request}, record {}", index + 1),
            })
            .collect();
        let decoded = self.decoder.decode(&records)?;
        let mut batch = SourceBatch::inserts(decoded.rows, request.to_string());
        batch.errors = decoded.errors;
        Ok(batch)
    }
}

/// Whether `a` equals `b`, taking the same time wherever they differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::Int64Array;
    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    fn webhook(options: &[(&str, &str)]) -> Webhook {
        let options =
            SourceOptions::new(options.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
        Webhook::open(&options, &SourceContext::new(schema)).unwrap()
    }

    #[test]
    fn one_object_or_many_lines_with_bad_ones_kept() {
        let hook = webhook(&[]);
        let one = hook.decode(br#"{"id": 7}"#).unwrap();
        assert_eq!(one.row_count(), 1);
        assert_eq!(one.position, "1");
        let many = hook
            .decode(b"{\"id\": 1}\n\n{\"id\": \"x\"}\r\nnot json\n{\"id\": 3}")
            .unwrap();
        assert_eq!(many.position, "2");
        let positions: Vec<&str> = many.errors.iter().map(|e| e.position.as_str()).collect();
        assert_eq!(positions, ["request 2, record 2", "request 2, record 3"]);
        let rows = many.into_inserted();
        let ids = rows
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(ids.values(), &[1, 3]);
    }

    #[test]
    fn the_secret_is_checked() {
        let open = webhook(&[]);
        assert!(open.authorized(None));
        let guarded = webhook(&[("secret", "s3cret"), ("secret.header", "X-Token")]);
        assert_eq!(guarded.secret_header(), "x-token");
        assert!(guarded.authorized(Some("s3cret")));
        assert!(!guarded.authorized(Some("s3cre")));
        assert!(!guarded.authorized(None));
    }
}
