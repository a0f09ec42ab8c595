//! The HTTP listener: webhook sources (`POST /webhook/<schema>/<source>`) and Prometheus
//! metrics (`GET /metrics`, see [`crate::metrics`]).
//!
//! A request's records are committed before the response is sent, so a `200` means they are
//! durable; a client that gets no answer (or a `5xx`) may retry. Records that cannot become
//! rows are kept in `fluxion_catalog.source_errors` and counted in the answer; they do not
//! fail the request.
//!
//! A body may be at most [`MAX_BODY_BYTES`] long (`413` otherwise) and must arrive within
//! [`BODY_TIMEOUT`] (`408` otherwise), and a request's headers within [`HEADER_TIMEOUT`] (the
//! connection is closed otherwise): a client that announces more bytes than it sends, or
//! stalls, holds no connection open for longer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;
use coord::{Coordinator, WebhookError};
use http_body_util::LengthLimitError;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;

use crate::backends::BackendRegistry;

/// The largest request body a webhook accepts.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// How long a client may take to send a request's body.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a client may take to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long to wait before accepting again after accepting failed.
const ACCEPT_RETRY: Duration = Duration::from_millis(50);

/// Serves the HTTP endpoints on `listener` until `shutdown` completes, then waits for the
/// requests in progress.
pub async fn serve_http(
    listener: TcpListener,
    coord: Arc<Coordinator>,
    backends: Arc<BackendRegistry>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let app = Router::new()
        .route("/webhook/{schema}/{source}", post(webhook))
        .with_state(coord.clone())
        .merge(
            Router::new()
                .route("/metrics", get(metrics))
                .with_state((coord, backends)),
        );
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT);
    let connections = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, most likely: let connections close first.
                    tracing::warn!(error = %e, "accepting an HTTP connection failed");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let connection =
            http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        let connection = connections.watch(connection);
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "an HTTP connection ended with an error");
            }
        });
    }
    connections.shutdown().await;
}

/// `GET /metrics`: the metrics in the OpenMetrics text format Prometheus scrapes.
async fn metrics(
    State((coord, backends)): State<(Arc<Coordinator>, Arc<BackendRegistry>)>,
) -> Response {
    match crate::metrics::render(&coord, backends).await {
        Ok(text) => (
            StatusCode::OK,
            [(
                axum::http::header::CONTENT_TYPE,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
            )],
            text,
        )
            .into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "reading the metrics failed");
            let answer = format!("reading the metrics failed: {e}\n");
            (StatusCode::INTERNAL_SERVER_ERROR, answer).into_response()
        }
    }
}

/// `POST /webhook/<schema>/<source>`: one JSON object, or newline-delimited objects.
async fn webhook(
    State(coord): State<Arc<Coordinator>>,
    Path((schema, source)): Path<(String, String)>,
    headers: HeaderMap,
    body: Body,
) -> Response {
    let body = match tokio::time::timeout(BODY_TIMEOUT, axum::body::to_bytes(body, MAX_BODY_BYTES))
        .await
    {
        Ok(Ok(body)) => body,
        Ok(Err(e)) => {
            let e = e.into_inner();
            if e.downcast_ref::<LengthLimitError>().is_some() {
                let answer = format!("the request body is longer than {MAX_BODY_BYTES} bytes\n");
                return (StatusCode::PAYLOAD_TOO_LARGE, answer).into_response();
            }
            let answer = format!("reading the request body failed: {e}\n");
            return (StatusCode::BAD_REQUEST, answer).into_response();
        }
        Err(_) => {
            let answer = format!(
                "the request body did not arrive within {} s\n",
                BODY_TIMEOUT.as_secs()
            );
            return (StatusCode::REQUEST_TIMEOUT, answer).into_response();
        }
    };
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
