//! The server: Postgres wire protocol in front of the coordinator.
//!
//! Accepts connections, runs startup (trust authentication, ParameterStatus, BackendKeyData),
//! registers each client's backend ([`backends`]: `pg_stat_activity`, cancel and terminate,
//! `max_connections`), then hands simple-query, extended-query and COPY messages of each
//! connection to its [`connection::Connection`]. While the coordinator recovers, clients are
//! told so ([`refuse_while_starting`]). Arrow results become DataRows in text or binary format;
//! coordinator errors become ErrorResponses with their SQLSTATE (chosen in [`sqlstate`]).
//! A subscription's rows are streamed and flushed as its times close ([`subscribe`]).
//! Beside it, an HTTP listener takes webhook requests ([`serve_http`]).
//! This crate knows nothing of planning, dataflows or storage.

mod backends;
mod connection;
mod copy_out;
mod frame_check;
mod held_replies;
mod http;
mod message_loop;
mod params;
mod rows;
mod simple_query;
mod sqlstate;
mod starting;
mod startup;
mod subscribe;
mod values;

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use coord::Coordinator;
use tokio::net::TcpListener;

pub use http::serve_http;
pub use starting::refuse_while_starting;

use backends::BackendRegistry;
use connection::Connection;
use startup::TrustStartup;

/// The handlers of one connection.
struct ConnectionHandlers {
    connection: Arc<Connection>,
    startup: Arc<TrustStartup>,
    backends: Arc<BackendRegistry>,
}

/// Binds the Postgres listener.
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

/// Serves Postgres connections on `listener`, at most `max_connections` at once, until
/// `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    coord: Arc<Coordinator>,
    max_connections: usize,
    shutdown: impl Future<Output = ()>,
) {
    let backends = BackendRegistry::new(max_connections);
    let startup = Arc::new(TrustStartup::new(backends.clone()));
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut shutdown => break,
        };
        let (socket, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!(error = %e, "accept failed");
                continue;
            }
        };
        let connection = Arc::new(Connection::new(coord.clone(), backends.clone()));
        let handlers = ConnectionHandlers {
            connection: connection.clone(),
            startup: startup.clone(),
            backends: backends.clone(),
        };
        tokio::spawn(async move {
            tracing::debug!(%peer, "connection opened");
            if let Err(e) = message_loop::process_socket(socket, &handlers).await {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
            connection.close().await;
            tracing::debug!(%peer, "connection closed");
        });
    }
}
