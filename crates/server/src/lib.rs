//! The server: Postgres wire protocol in front of the coordinator.
//!
//! Accepts connections (in TLS if the client asks and the server has a certificate: [`Tls`]),
//! runs startup (authentication by the access rules ([`Security`]) against the roles'
//! password verifiers, ParameterStatus, BackendKeyData),
//! registers each client's backend ([`backends`]: `pg_stat_activity`, cancel and terminate,
//! `max_connections`), then hands simple-query, extended-query and COPY messages of each
//! connection to its [`connection::Connection`]. While the coordinator recovers, clients are
//! told so ([`refuse_while_starting`]). Arrow results become DataRows in text or binary format;
//! coordinator errors become ErrorResponses with their SQLSTATE (chosen in [`sqlstate`]).
//! A subscription's rows are streamed and flushed as its times close ([`subscribe`]).
//! Beside it, an HTTP listener takes webhook requests and serves Prometheus metrics
//! ([`serve_http`]).
//! This crate knows nothing of planning, dataflows or storage.

// A connection's futures nest the coordinator's deeply; a cold build lays them out past the
// default query depth.
#![recursion_limit = "256"]

mod access_rules;
mod authentication;
mod backends;
mod connection;
mod copy_out;
mod frame_check;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod held_replies;
mod http;
mod message_loop;
mod metrics;
mod params;
mod responses;
mod rows;
mod simple_query;
mod sqlstate;
mod starting;
mod startup;
mod subscribe;
mod tls;
mod values;

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use coord::Coordinator;
use tokio::net::TcpListener;

pub use backends::BackendRegistry;
pub use http::serve_http;
pub use starting::refuse_while_starting;
pub use tls::{Tls, TlsError};

use access_rules::AccessRules;
use authentication::PasswordMethods;
use connection::Connection;
use startup::Startup;

/// The handlers of one connection.
struct ConnectionHandlers {
    connection: Arc<Connection>,
    startup: Arc<Startup>,
    backends: Arc<BackendRegistry>,
    tls: Option<tokio_rustls::TlsAcceptor>,
}

/// How the Postgres listener admits clients: the access rules that pick each client's
/// authentication method (read again from their file by [`Security::reload_rules`]), and
/// TLS. Clones share the rules.
#[derive(Clone)]
pub struct Security {
    rules_file: Option<PathBuf>,
    rules: Arc<RwLock<Arc<AccessRules>>>,
    tls: Option<Arc<Tls>>,
}

impl Security {
    /// The rules of the file at `rules_file` (without one: trust on loopback, a password
    /// everywhere else), and `tls` if the server has a certificate.
    pub fn load(rules_file: Option<&Path>, tls: Option<Tls>) -> Result<Security, String> {
        let rules = match rules_file {
            Some(path) => AccessRules::load(path).map_err(|e| e.to_string())?,
            None => AccessRules::default_rules(),
        };
        Ok(Security {
            rules_file: rules_file.map(Path::to_path_buf),
            rules: Arc::new(RwLock::new(Arc::new(rules))),
            tls: tls.map(Arc::new),
        })
    }

    /// Reads the rule file again (as PostgreSQL reads `pg_hba.conf` on SIGHUP): clients that
    /// connect from now on are admitted by its rules. A file that cannot be read or has an
    /// error leaves the rules in force as they were, and says why in the log.
    pub fn reload_rules(&self) {
        let Some(path) = &self.rules_file else {
            tracing::info!("no access rule file to reload: the built-in rules stay in force");
            return;
        };
        match AccessRules::load(path) {
            Ok(rules) => {
                *self.rules.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(rules);
                tracing::info!(file = %path.display(), "access rules reloaded");
            }
            Err(e) => tracing::error!(
                file = %path.display(),
                error = %e,
                "the access rule file was not reloaded; the rules in force stay"
            ),
        }
    }

    /// The rules in force.
    fn rules(&self) -> Arc<AccessRules> {
        self.rules.read().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// Binds the Postgres listener.
pub async fn bind(address: SocketAddr) -> std::io::Result<TcpListener> {
    TcpListener::bind(address).await
}

/// Serves Postgres connections on `listener`, as many at once as `backends` admits, admitted
/// as `security` says, until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    coord: Arc<Coordinator>,
    backends: Arc<BackendRegistry>,
    security: Security,
    shutdown: impl Future<Output = ()>,
) -> Result<(), String> {
    let certificate_pem = security
        .tls
        .as_ref()
        .map(|tls| tls.certificate_pem.as_slice());
    let passwords = PasswordMethods::new(coord.clone(), certificate_pem)
        .map_err(|e| format!("the TLS certificate cannot be used for channel binding: {e}"))?;
    let tls = security.tls.as_ref().map(|tls| tls.acceptor.clone());
    let startup = Arc::new(Startup::new(
        backends.clone(),
        coord.clone(),
        security.clone(),
        passwords,
    ));
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
            tls: tls.clone(),
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
    Ok(())
}
