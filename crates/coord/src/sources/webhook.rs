//! Webhook sources: rows pushed over HTTP, durable before the request is answered.
//!
//! A webhook source has no reader thread: each request is decoded and committed like one
//! batch of a pulled source (its rows, its bad records and the count of requests so far, in
//! one log record), and only then answered.

use std::collections::HashMap;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use repr::ItemKind;

/// Why a webhook request was refused.
#[derive(Debug, thiserror::Error)]
pub enum WebhookError {
    /// No running webhook source has that name.
    #[error("{0}")]
    NotFound(String),
    /// The source has a secret and the request did not carry it.
    #[error("the request does not carry the source's secret")]
    Unauthorized,
    /// The rows could not be made durable.
    #[error("{0}")]
    Failed(#[from] CoordError),
}

/// What a webhook request added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookReceipt {
    /// Rows added to the source.
    pub rows: u64,
    /// Records kept in `fluxion_catalog.source_errors` instead.
    pub errors: u64,
}

impl Coordinator {
    /// Decodes `body` (one JSON object, or newline-delimited objects) into rows of webhook
    /// source `schema.source` and makes them durable; `headers` (lower-case names) must
    /// carry the source's secret if it has one.
    pub async fn webhook_append(
        &self,
        schema: &str,
        source: &str,
        headers: &HashMap<String, String>,
        body: &[u8],
    ) -> Result<WebhookReceipt, WebhookError> {
        let id = crate::catalog::read(&self.catalog)
            .by_name(schema, source)
            .filter(|item| item.kind == ItemKind::Source)
            .map(|item| item.id)
            .ok_or_else(|| WebhookError::NotFound(format!("no source {schema}.{source}")))?;
        let (webhook, wiring) = self.sources.webhook(id).ok_or_else(|| {
            WebhookError::NotFound(format!("{schema}.{source} is not a webhook source"))
        })?;
        if !webhook.authorized(headers.get(webhook.secret_header()).map(String::as_str)) {
            return Err(WebhookError::Unauthorized);
        }
        let batch = webhook
            .decode(body)
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        let receipt = WebhookReceipt {
            rows: batch.row_count() as u64,
            errors: batch.errors.len() as u64,
        };
        self.commit_source_batch(&wiring, batch).await?;
        Ok(receipt)
    }
}
