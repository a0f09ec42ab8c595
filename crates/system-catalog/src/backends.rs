//! The server's client backends, as `pg_stat_activity` lists them and `pg_cancel_backend` and
//! `pg_terminate_backend` reach them; implemented by the server, which holds the connections.

use std::fmt::Debug;
use std::net::SocketAddr;
use std::time::SystemTime;

/// Every connected client's backend.
pub trait Backends: Send + Sync + Debug {
    /// What each backend is doing, in pid order.
    fn activity(&self) -> Vec<BackendActivity>;
    /// Cancels the statement backend `pid` runs (57014 for its client); `false` if no
    /// backend has that pid.
    fn cancel(&self, pid: i32) -> bool;
    /// Ends backend `pid`'s connection (57P01 for its client); `false` if no backend has
    /// that pid.
    fn terminate(&self, pid: i32) -> bool;
}

/// One row of `pg_stat_activity`.
#[derive(Clone, Debug)]
pub struct BackendActivity {
    /// The process id its client knows (BackendKeyData).
    pub pid: i32,
    /// The user it connected as.
    pub user: String,
    /// The `application_name` its client gave.
    pub application_name: String,
    /// Where its client connects from.
    pub client: Option<SocketAddr>,
    /// When it connected.
    pub backend_start: SystemTime,
    /// When its current transaction began, if it is in one.
    pub transaction_start: Option<SystemTime>,
    /// When its current (or, if idle, its last) statement began.
    pub query_start: Option<SystemTime>,
    /// When its state last changed.
    pub state_change: SystemTime,
    /// `active`, `idle`, `idle in transaction` or `idle in transaction (aborted)`.
    pub state: &'static str,
    /// Its current (or, if idle, its last) statement's text.
    pub query: String,
}
