//! The HTTP listener: webhook sources (`POST /webhook/<schema>/<source>`).
//!
//! A request's records are committed before the response is sent, so a `200` means they are
//! durable; a client that gets no answer (or a `5xx`) may retry. Records that cannot become
//! rows are kept in `fluxion_catalog.source_errors` and counted in the answer; they do not
//! fail the request.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::Router;
use coord::{Coordinator, WebhookError};
use tokio::net::TcpListener;

/// Serves the HTTP endpoints on `listener` until `shutdown` completes.
pub async fn serve_http(
    listener: TcpListener,
    coord: Arc<Coordinator>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let app = Router::new()
        .route("/webhook/{schema}/{source}", post(webhook))
        .with_state(coord);
    if let Err(e) = axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
    {
        tracing::error!(error = %e, "the HTTP listener failed");
    }
}

/// `POST /webhook/<schema>/<source>`: one JSON object, or newline-delimited objects.
async fn webhook(
    State(coord): State<Arc<Coordinator>>,
    Path((schema, source)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let headers: HashMap<String, String> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_string(), value.to_str().ok()?.into())))
        .collect();
    match coord
        .webhook_append(&schema, &source, &headers, &body)
        .await
    {
        Ok(receipt) => (
            StatusCode::OK,
            format!(
                "{{\"rows\":{},\"errors\":{}}}\n",
                receipt.rows, receipt.errors
            ),
        )
            .into_response(),
        Err(e) => {
            let status = match &e {
                WebhookError::NotFound(_) => StatusCode::NOT_FOUND,
                WebhookError::Unauthorized => StatusCode::UNAUTHORIZED,
                WebhookError::Failed(_) => StatusCode::INTERNAL_SERVER_ERROR,
            };
            (status, format!("{e}\n")).into_response()
        }
    }
}
