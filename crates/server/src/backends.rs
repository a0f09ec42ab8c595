//! Every connected client's backend: what it runs (`pg_stat_activity`), and the handles that
//! cancel its statement (CancelRequest, `pg_cancel_backend`) or end its connection
//! (`pg_terminate_backend`). At most `max_connections` clients are admitted at once; the
//! next is refused as PostgreSQL refuses it (53300).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::SystemTime;

use async_trait::async_trait;
use bytes::Bytes;
use coord::{BackendActivity, Backends, IdleTimeout, TransactionStatus};
use pgwire::api::cancel::CancelHandler;
use pgwire::api::ConnectionHandle;
use pgwire::error::PgWireError;
use pgwire::messages::cancel::CancelRequest;
use tokio_util::sync::CancellationToken;

/// How much of a statement's text `pg_stat_activity` shows, in bytes (PostgreSQL's
/// `track_activity_query_size`).
const SHOWN_QUERY_BYTES: usize = 1024;

/// The backends of the connected clients, by pid.
#[derive(Debug)]
pub struct BackendRegistry {
    max_connections: usize,
    /// How the statements of every client ended so far.
    outcomes: [AtomicU64; 3],
    /// Clients admitted, counted from their startup message (before they have a pid).
    admitted: AtomicUsize,
    backends: RwLock<BTreeMap<i32, Arc<Backend>>>,
}

/// How a statement ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    Succeeded = 0,
    Failed = 1,
    /// Cancelled by the client or by its `statement_timeout` (57014).
    Canceled = 2,
}

impl Outcome {
    /// The outcome of a statement that ended with `error`.
    pub(crate) fn of_error(error: &PgWireError) -> Self {
        match error {
            PgWireError::QueryCanceled => Outcome::Canceled,
            PgWireError::UserError(info) => Outcome::of_code(&info.code),
            _ => Outcome::Failed,
        }
    }

    /// The outcome of a statement that ended with SQLSTATE `code`.
    pub(crate) fn of_code(code: &str) -> Self {
        match code {
            "57014" => Outcome::Canceled,
            _ => Outcome::Failed,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Outcome::Succeeded => "succeeded",
            Outcome::Failed => "failed",
            Outcome::Canceled => "canceled",
        }
    }
}

/// A client's place among the `max_connections`, held until its connection ends.
#[derive(Debug)]
pub(crate) struct Admission {
    registry: Arc<BackendRegistry>,
}

impl Drop for Admission {
    fn drop(&mut self) {
        self.registry.admitted.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A registered backend; dropping it (when the connection ends) unregisters it.
#[derive(Debug)]
pub(crate) struct Registration {
    backend: Arc<Backend>,
    admission: Admission,
}

impl Registration {
    /// The registered backend.
    pub fn backend(&self) -> &Arc<Backend> {
        &self.backend
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        self.admission
            .registry
            .backends
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.backend.pid);
    }
}

/// What a backend is known by when it starts.
pub(crate) struct BackendStart {
    pub pid: i32,
    pub secret_key: Bytes,
    pub user: String,
    pub application_name: String,
    pub client: SocketAddr,
}

impl BackendRegistry {
    /// A registry that admits at most `max_connections` clients at once.
    pub fn new(max_connections: usize) -> Arc<Self> {
        Arc::new(Self {
            max_connections,
            outcomes: Default::default(),
            admitted: AtomicUsize::new(0),
            backends: RwLock::new(BTreeMap::new()),
        })
    }

    /// Counts a statement that ended with `outcome`.
    pub(crate) fn count_statement(&self, outcome: Outcome) {
        self.outcomes[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many statements ended with each outcome, by the outcome's name.
    pub(crate) fn statement_outcomes(&self) -> [(&'static str, u64); 3] {
        [Outcome::Succeeded, Outcome::Failed, Outcome::Canceled].map(|outcome| {
            (
                outcome.name(),
                self.outcomes[outcome as usize].load(Ordering::Relaxed),
            )
        })
    }

    /// `max_connections`, as `SHOW max_connections` reports it.
    pub fn max_connections(&self) -> usize {
        self.max_connections
    }

    /// A place for one more client, unless `max_connections` are connected.
    pub(crate) fn admit(self: &Arc<Self>) -> Option<Admission> {
        let admitted = self.admitted.fetch_add(1, Ordering::SeqCst);
        let admission = Admission {
            registry: self.clone(),
        };
        // Dropping the admission gives the place back.
        (admitted < self.max_connections).then_some(admission)
    }

    /// Registers the backend of an admitted client, unless its role already has
    /// `role_limit` backends (`CONNECTION LIMIT`): counted and registered under one lock, so
    /// two logins at once cannot both take the last place.
    pub(crate) fn register(
        &self,
        admission: Admission,
        start: BackendStart,
        role_limit: Option<usize>,
    ) -> Option<Registration> {
        let mut backends = self.backends.write().unwrap_or_else(|p| p.into_inner());
        let sessions = backends.values().filter(|b| b.user == start.user).count();
        if role_limit.is_some_and(|limit| sessions >= limit) {
            return None;
        }
        let now = SystemTime::now();
        let backend = Arc::new(Backend {
            pid: start.pid,
            secret_key: start.secret_key,
            user: start.user,
            client: start.client,
            started: now,
            activity: Mutex::new(Activity {
                state: State::Idle,
                query: String::new(),
                query_start: None,
                transaction_start: None,
                state_change: now,
                application_name: start.application_name,
                idle_timeout: None,
            }),
            statement: Arc::new(ConnectionHandle::new()),
            cancels: tokio::sync::watch::Sender::new(()),
            terminated: CancellationToken::new(),
        });
        backends.insert(backend.pid, backend.clone());
        Some(Registration { backend, admission })
    }

    fn get(&self, pid: i32) -> Option<Arc<Backend>> {
        self.backends
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&pid)
            .cloned()
    }
}

impl Backends for BackendRegistry {
    fn activity(&self) -> Vec<BackendActivity> {
        let backends: Vec<Arc<Backend>> = self
            .backends
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .values()
            .cloned()
            .collect();
        backends.iter().map(|b| b.activity()).collect()
    }

    fn cancel(&self, pid: i32) -> bool {
        let Some(backend) = self.get(pid) else {
            return false;
        };
        // The handle's lock is never held across a wait, so this does not block.
        futures::executor::block_on(backend.cancel_statement());
        true
    }

    fn terminate(&self, pid: i32) -> bool {
        let Some(backend) = self.get(pid) else {
            return false;
        };
        backend.terminated.cancel();
        true
    }
}

#[async_trait]
impl CancelHandler for BackendRegistry {
    /// Cancels the statement of the backend the request names, if its secret key matches;
    /// a request that matches none is ignored, as PostgreSQL ignores it.
    async fn on_cancel_request(&self, request: CancelRequest) {
        let Some(backend) = self.get(request.pid) else {
            return;
        };
        if backend.secret_key == request.secret_key.to_bytes() {
            backend.cancel_statement().await;
        }
    }
}

/// One client's backend.
#[derive(Debug)]
pub(crate) struct Backend {
    pid: i32,
    secret_key: Bytes,
    user: String,
    client: SocketAddr,
    started: SystemTime,
    activity: Mutex<Activity>,
    /// Cancels the running statement (pgwire's extended-query handlers read it too).
    statement: Arc<ConnectionHandle>,
    /// Tells the rows of a statement that streams them to stop (see [`Backend::cancels`]).
    cancels: tokio::sync::watch::Sender<()>,
    /// Fires when the connection is to end.
    terminated: CancellationToken,
}

/// What a backend is doing.
#[derive(Debug)]
struct Activity {
    state: State,
    query: String,
    query_start: Option<SystemTime>,
    transaction_start: Option<SystemTime>,
    state_change: SystemTime,
    application_name: String,
    /// How long the session may now wait for its client's next statement.
    idle_timeout: Option<IdleTimeout>,
}

/// The states `pg_stat_activity` shows.
#[derive(Clone, Copy, Debug)]
enum State {
    Active,
    Idle,
    IdleInTransaction,
    IdleInFailedTransaction,
}

impl State {
    fn name(self) -> &'static str {
        match self {
            State::Active => "active",
            State::Idle => "idle",
            State::IdleInTransaction => "idle in transaction",
            State::IdleInFailedTransaction => "idle in transaction (aborted)",
        }
    }
}

impl Backend {
    /// The handle that cancels the running statement.
    pub fn statement_handle(&self) -> &Arc<ConnectionHandle> {
        &self.statement
    }

    /// A receiver that changes at the next cancel of this backend's statement: the rows a
    /// statement streams are computed after its handler returned them, so after the handle
    /// that cancels the statement's execution was taken.
    pub fn cancels(&self) -> tokio::sync::watch::Receiver<()> {
        self.cancels.subscribe()
    }

    /// Cancels the running statement, and the rows it streams.
    async fn cancel_statement(&self) {
        self.statement.cancel().await;
        self.cancels.send_replace(());
    }

    /// Completes when the connection is to end (`pg_terminate_backend`).
    pub fn terminated(&self) -> &CancellationToken {
        &self.terminated
    }

    /// Notes that the statement `sql` starts.
    pub fn statement_started(&self, sql: &str) {
        let now = SystemTime::now();
        let mut activity = self.lock_activity();
        activity.state = State::Active;
        activity.query = shown_query(sql);
        activity.query_start = Some(now);
        activity.transaction_start.get_or_insert(now);
        activity.state_change = now;
    }

    /// How long the session may wait for its client's next statement, as its last statement
    /// left it.
    pub fn idle_timeout(&self) -> Option<IdleTimeout> {
        self.lock_activity().idle_timeout
    }

    /// Notes that the running statement ended, leaving the session in `status`, with
    /// `application_name` and the idle timeout that applies as they now are.
    pub fn statement_finished(
        &self,
        status: TransactionStatus,
        application_name: Option<String>,
        idle_timeout: Option<IdleTimeout>,
    ) {
        let now = SystemTime::now();
        let mut activity = self.lock_activity();
        activity.state = match status {
            TransactionStatus::Idle => State::Idle,
            TransactionStatus::InBlock => State::IdleInTransaction,
            TransactionStatus::Failed => State::IdleInFailedTransaction,
        };
        if matches!(status, TransactionStatus::Idle) {
            activity.transaction_start = None;
        }
        activity.state_change = now;
        if let Some(name) = application_name {
            activity.application_name = name;
        }
        activity.idle_timeout = idle_timeout;
    }

    fn activity(&self) -> BackendActivity {
        let activity = self.lock_activity();
        BackendActivity {
            pid: self.pid,
            user: self.user.clone(),
            application_name: activity.application_name.clone(),
            client: Some(self.client),
            backend_start: self.started,
            transaction_start: activity.transaction_start,
            query_start: activity.query_start,
            state_change: activity.state_change,
            state: activity.state.name(),
            query: activity.query.clone(),
        }
    }

    fn lock_activity(&self) -> std::sync::MutexGuard<'_, Activity> {
        self.activity.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The first [`SHOWN_QUERY_BYTES`] of `sql`, cut at a character boundary.
fn shown_query(sql: &str) -> String {
    let mut end = sql.len().min(SHOWN_QUERY_BYTES);
    while !sql.is_char_boundary(end) {
        end -= 1;
    }
    sql[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn start(pid: i32) -> BackendStart {
        BackendStart {
            pid,
            secret_key: Bytes::from_static(b"key!"),
            user: "fluxion".into(),
            application_name: "test".into(),
            client: "127.0.0.1:5000".parse().expect("an address"),
        }
    }

    #[test]
    fn admission_stops_at_max_connections_and_frees_its_place() {
        let registry = BackendRegistry::new(2);
        let first = registry.admit().expect("a first place");
        let second = registry.admit().expect("a second place");
        assert!(registry.admit().is_none(), "a third client is refused");
        drop(first);
        let third = registry.admit().expect("a place freed by the first");
        let registration = registry
            .register(third, start(7), None)
            .expect("registered");
        assert!(registry.admit().is_none());
        drop(registration);
        drop(second);
        assert!(registry.admit().is_some());
    }

    #[test]
    fn a_role_at_its_connection_limit_is_not_registered() {
        let registry = BackendRegistry::new(10);
        let first = registry.register(registry.admit().expect("a place"), start(7), Some(1));
        assert!(first.is_some());
        let second = registry.register(registry.admit().expect("a place"), start(8), Some(1));
        assert!(second.is_none(), "the role's one place is taken");
        drop(first);
        assert!(registry
            .register(registry.admit().expect("a place"), start(9), Some(1))
            .is_some());
    }

    #[test]
    fn activity_follows_statements_and_transactions() {
        let registry = BackendRegistry::new(10);
        let registration = registry
            .register(registry.admit().expect("a place"), start(7), None)
            .expect("registered");
        let backend = registration.backend();
        backend.statement_started("BEGIN");
        let [row] = registry.activity().try_into().expect("one backend");
        assert_eq!((row.state, row.query.as_str()), ("active", "BEGIN"));
        let began = row.transaction_start.expect("a transaction started");
        backend.statement_finished(TransactionStatus::InBlock, None, None);
        backend.statement_started("SELECT 1");
        backend.statement_finished(TransactionStatus::Failed, Some("psql".into()), None);
        let [row] = registry.activity().try_into().expect("one backend");
        assert_eq!(row.state, "idle in transaction (aborted)");
        assert_eq!(row.transaction_start, Some(began));
        assert_eq!(row.application_name, "psql");
        backend.statement_started("ROLLBACK");
        backend.statement_finished(TransactionStatus::Idle, None, None);
        let [row] = registry.activity().try_into().expect("one backend");
        assert_eq!((row.state, row.transaction_start), ("idle", None));
        drop(registration);
        assert!(registry.activity().is_empty());
        assert!(!registry.cancel(7) && !registry.terminate(7));
    }

    #[test]
    fn long_statements_are_cut_at_a_character_boundary() {
        let sql = "é".repeat(SHOWN_QUERY_BYTES);
        let shown = shown_query(&sql);
        assert!(shown.len() <= SHOWN_QUERY_BYTES && sql.starts_with(&shown));
        assert_eq!(shown.len(), SHOWN_QUERY_BYTES);
    }
}
