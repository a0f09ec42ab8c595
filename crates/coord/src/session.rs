//! A client session: its transaction, settings, and the notices it has yet to receive.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use repr::{Diff, GlobalId, Row, Timestamp};

use datafusion::arrow::datatypes::SchemaRef;

use crate::copy::CopyPlan;
use crate::cursors::Cursor;
use crate::error::CoordError;
use crate::generic_plans::ShapePlans;
use crate::query_context::PlanningState;
use crate::transactional_ddl::DdlChange;

/// Where a session stands with respect to transactions (the ReadyForQuery status byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransactionStatus {
    /// Not in a transaction block.
    Idle,
    /// Inside BEGIN … COMMIT.
    InBlock,
    /// Inside a block that failed; only ROLLBACK (or COMMIT, which rolls back) is accepted.
    Failed,
}

/// A message for the client that is not an error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Notice {
    /// `WARNING` or `NOTICE`.
    pub severity: &'static str,
    /// The SQLSTATE code.
    pub code: &'static str,
    /// The text.
    pub message: String,
}

/// Notices for the client while a statement still runs (how far a build it waits for has
/// got): the server sends them as they come, and any it has not sent yet go with the
/// statement's other notices.
#[derive(Debug)]
pub struct LiveNotices {
    sender: tokio::sync::mpsc::UnboundedSender<Notice>,
    receiver: tokio::sync::Mutex<tokio::sync::mpsc::UnboundedReceiver<Notice>>,
}

impl Default for LiveNotices {
    fn default() -> Self {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        LiveNotices {
            sender,
            receiver: tokio::sync::Mutex::new(receiver),
        }
    }
}

impl LiveNotices {
    pub(crate) fn send(&self, notice: Notice) {
        // The receiver lives as long as the sender: both are ours.
        let _ = self.sender.send(notice);
    }

    /// The next notice, once there is one.
    pub async fn next(&self) -> Option<Notice> {
        self.receiver.lock().await.recv().await
    }

    /// The notices waiting now.
    fn waiting(&self) -> Vec<Notice> {
        let Ok(mut receiver) = self.receiver.try_lock() else {
            return Vec::new();
        };
        std::iter::from_fn(|| receiver.try_recv().ok()).collect()
    }
}

/// Writes a transaction has made and not yet committed, per table.
#[derive(Clone, Debug, Default)]
pub(crate) struct PendingWrites {
    pub tables: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
}

impl PendingWrites {
    pub fn is_empty(&self) -> bool {
        self.tables.values().all(Vec::is_empty)
    }
}

/// The state of an explicit transaction block.
#[derive(Debug, Default)]
pub(crate) struct TransactionBlock {
    pub writes: PendingWrites,
    /// Tables whose contents this transaction's writes were computed from, with the time
    /// they were read at: a later write to them makes the transaction stale.
    pub reads: BTreeMap<GlobalId, Timestamp>,
    /// Open savepoints, oldest first.
    pub savepoints: Vec<Savepoint>,
    /// The definitions made in the block, oldest first (see [`crate::transactional_ddl`]).
    pub ddl: Vec<DdlChange>,
    /// The durable catalog's name for the block, once it made a definition.
    pub ddl_block: Option<u64>,
}

/// A savepoint: the block's writes, reads and definitions when it was set.
#[derive(Debug)]
pub(crate) struct Savepoint {
    pub name: String,
    pub writes: PendingWrites,
    pub reads: BTreeMap<GlobalId, Timestamp>,
    /// How many definitions the block had made.
    pub ddl: usize,
}

#[derive(Debug, Default)]
pub(crate) enum Transaction {
    #[default]
    Idle,
    Block(TransactionBlock),
    /// A block that failed; it keeps its state for ROLLBACK TO SAVEPOINT.
    Failed(TransactionBlock),
}

/// One client connection's state.
#[derive(Debug)]
pub struct Session {
    pub(crate) transaction: Transaction,
    pub(crate) variables: BTreeMap<String, String>,
    pub(crate) notices: Vec<Notice>,
    live_notices: Arc<LiveNotices>,
    pub(crate) pending_copy: Option<CopyPlan>,
    /// Open cursors by name.
    pub(crate) cursors: BTreeMap<String, Cursor>,
    /// Reported settings changed since the last call of [`Session::take_reported_settings`].
    reported_changes: Vec<(String, String)>,
    user: String,
    /// The role `SET ROLE` took on (`None`: the session's user).
    role: Option<String>,
    backend_pid: i32,
    /// The session's planning state, kept between statements.
    pub(crate) planning_state: Mutex<Option<PlanningState>>,
    /// Generic plans of the session's simple queries that pin keys, by shape.
    pub(crate) shape_plans: ShapePlans,
    /// The server's backends, for `pg_stat_activity` and the functions that signal them
    /// (none for a session no client connected).
    pub(crate) backends: Option<Arc<dyn system_catalog::Backends>>,
}

/// A setting's value as Postgres stores it: `DateStyle = ISO` is `ISO, MDY`.
fn normalize_setting(name: &str, value: String) -> String {
    if name.eq_ignore_ascii_case("datestyle") && !value.contains(',') {
        let upper = value.trim().to_uppercase();
        return match upper.as_str() {
            "ISO" | "SQL" | "POSTGRES" | "GERMAN" => format!("{}, MDY", title_style(&upper)),
            _ => value,
        };
    }
    value
}

fn title_style(style: &str) -> String {
    match style {
        "POSTGRES" => "Postgres".into(),
        "GERMAN" => "German".into(),
        other => other.into(),
    }
}

/// `name` spelled as PostgreSQL reports it (`TimeZone` for `timezone`), if it is one of the
/// [`REPORTED_SETTINGS`] (the others are spelled in lower case).
pub(crate) fn reported_spelling(name: &str) -> Option<&'static str> {
    REPORTED_SETTINGS
        .iter()
        .find(|r| r.eq_ignore_ascii_case(name))
        .copied()
}

/// Settings a client is told about (ParameterStatus) when they change, spelled as PostgreSQL
/// reports them.
pub const REPORTED_SETTINGS: &[&str] = &[
    "application_name",
    "client_encoding",
    "DateStyle",
    "default_transaction_read_only",
    "in_hot_standby",
    "integer_datetimes",
    "IntervalStyle",
    "is_superuser",
    "server_encoding",
    "server_version",
    "session_authorization",
    "standard_conforming_strings",
    "TimeZone",
];

/// The isolation level of the transaction a statement runs in.
pub(crate) const TRANSACTION_ISOLATION: &str = "transaction_isolation";

/// The isolation level of transactions that do not name one.
pub(crate) const DEFAULT_TRANSACTION_ISOLATION: &str = "default_transaction_isolation";

/// The isolation levels PostgreSQL accepts, in its words.
pub(crate) const ISOLATION_LEVELS: &[&str] = &[
    "serializable",
    "repeatable read",
    "read committed",
    "read uncommitted",
];

/// Settings every session starts with, as PostgreSQL 15 reports them.
pub const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "serializable"),
    ("extra_float_digits", "3"),
    ("idle_in_transaction_session_timeout", "0"),
    ("idle_session_timeout", "0"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("lock_timeout", "0"),
    ("max_connections", "100"),
    ("max_identifier_length", "63"),
    ("search_path", "\"$user\", public"),
    ("server_encoding", "UTF8"),
    ("server_version", system_catalog::SERVER_VERSION),
    ("server_version_num", system_catalog::SERVER_VERSION_NUM),
    ("ssl", "off"),
    ("standard_conforming_strings", "on"),
    ("statement_timeout", "0"),
    ("timezone", "UTC"),
    ("transaction_isolation", "serializable"),
    ("transaction_read_only", "off"),
];

impl Session {
    /// A session for `user` with the settings the client sent in its startup message.
    pub(crate) fn new(user: &str, backend_pid: i32, startup: &[(String, String)]) -> Self {
        let mut session = Self {
            transaction: Transaction::Idle,
            variables: DEFAULT_SETTINGS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            notices: Vec::new(),
            live_notices: Arc::default(),
            pending_copy: None,
            cursors: BTreeMap::new(),
            reported_changes: Vec::new(),
            user: user.to_string(),
            role: None,
            backend_pid,
            planning_state: Mutex::new(None),
            shape_plans: ShapePlans::default(),
            backends: None,
        };
        for (name, value) in startup {
            let name = name.to_lowercase();
            if DEFAULT_SETTINGS.iter().any(|(n, _)| *n == name) {
                session.set_variable(&name, value.clone());
            }
        }
        session.reported_changes.clear();
        session
    }

    /// Every reported setting with its value (what ParameterStatus tells a new client).
    pub fn reported_settings(&self) -> Vec<(String, String)> {
        REPORTED_SETTINGS
            .iter()
            .map(|name| {
                let value = match *name {
                    "session_authorization" => self.user.clone(),
                    "in_hot_standby" | "default_transaction_read_only" => "off".to_string(),
                    other => self.variable(other).unwrap_or_default().to_string(),
                };
                (name.to_string(), value)
            })
            .collect()
    }

    /// The user the session authenticated as (`session_user`).
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The role the session acts as (`current_user`): the one `SET ROLE` took on, else
    /// its user.
    pub fn current_user(&self) -> &str {
        self.role.as_deref().unwrap_or(&self.user)
    }

    /// The role `SET ROLE` took on, if any.
    pub(crate) fn role(&self) -> Option<&str> {
        self.role.as_deref()
    }

    /// Acts as `role` from now on (`None`: as the session's user), as `SET ROLE` does; the
    /// caller has checked that the session's user may.
    pub(crate) fn set_role(&mut self, role: Option<String>) {
        self.role = role;
    }

    /// The process id the client was told in BackendKeyData (`pg_backend_pid()`).
    pub fn backend_pid(&self) -> i32 {
        self.backend_pid
    }

    /// The transaction status for ReadyForQuery.
    pub fn transaction_status(&self) -> TransactionStatus {
        match self.transaction {
            Transaction::Idle => TransactionStatus::Idle,
            Transaction::Block(_) => TransactionStatus::InBlock,
            Transaction::Failed(_) => TransactionStatus::Failed,
        }
    }

    /// Notices produced since the last call (live ones not sent yet first).
    pub fn take_notices(&mut self) -> Vec<Notice> {
        let mut notices = self.live_notices.waiting();
        notices.append(&mut self.notices);
        notices
    }

    /// Where notices for the client arrive while a statement runs.
    pub fn live_notices(&self) -> Arc<LiveNotices> {
        self.live_notices.clone()
    }

    /// The value of a setting (names are case-insensitive).
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(&name.to_lowercase()).map(String::as_str)
    }

    /// The schemas unqualified names are looked up in, in order (`"$user"` is the session's
    /// user name; schemas that do not exist are skipped by the lookups).
    pub fn search_path(&self) -> Vec<String> {
        self.variable("search_path")
            .unwrap_or(sql::session::DEFAULT_SCHEMA)
            .split(',')
            .map(|part| part.trim())
            .filter(|part| !part.is_empty())
            .map(|part| {
                let unquoted = part
                    .strip_prefix('"')
                    .and_then(|p| p.strip_suffix('"'))
                    .map(str::to_string)
                    .unwrap_or_else(|| part.to_lowercase());
                if unquoted == "$user" {
                    self.user.clone()
                } else {
                    unquoted
                }
            })
            .collect()
    }

    /// Refuses every statement but ROLLBACK (to a savepoint) and COMMIT in a failed block.
    pub(crate) fn check_not_failed(&self, statement: &sql::Statement) -> Result<(), CoordError> {
        match self.transaction {
            Transaction::Failed(_) if !statement.may_run_after_failure() => {
                Err(CoordError::InFailedTransaction)
            }
            _ => Ok(()),
        }
    }

    /// Marks the open transaction block failed after an error.
    pub fn fail_transaction(&mut self) {
        if matches!(self.transaction, Transaction::Block(_)) {
            if let Transaction::Block(block) = std::mem::take(&mut self.transaction) {
                self.transaction = Transaction::Failed(block);
            }
        }
    }

    /// The schema of cursor `name`, if it is open (a client may Describe it as a portal).
    pub fn cursor_schema(&self, name: &str) -> Option<SchemaRef> {
        self.cursors.get(name).map(|c| c.schema.clone())
    }

    /// Settings reported to clients (ParameterStatus) that changed since the last call.
    pub fn take_reported_settings(&mut self) -> Vec<(String, String)> {
        std::mem::take(&mut self.reported_changes)
    }

    /// Sets a setting, remembering the change for the client when it is a reported one.
    pub(crate) fn set_variable(&mut self, name: &str, value: String) {
        let value = normalize_setting(name, value);
        if let Some(reported) = reported_spelling(name) {
            if self.variable(name) != Some(value.as_str()) {
                self.reported_changes
                    .push((reported.to_string(), value.clone()));
            }
        }
        self.variables.insert(name.to_lowercase(), value);
    }

    /// Forgets a COPY whose data the client abandoned.
    pub fn abandon_copy(&mut self) {
        self.pending_copy = None;
        self.fail_transaction();
    }

    /// Tells the client that identifiers were cut to `max_identifier_length`, as PostgreSQL
    /// does (42622, a NOTICE).
    pub fn notice_truncations(&mut self, truncations: &[sql::TruncatedIdentifier]) {
        for t in truncations {
            self.notice(
                "NOTICE",
                "42622",
                format!(
                    "identifier \"{}\" will be truncated to \"{}\"",
                    t.written, t.truncated
                ),
            );
        }
    }

    pub(crate) fn notice(
        &mut self,
        severity: &'static str,
        code: &'static str,
        message: impl Into<String>,
    ) {
        self.notices.push(Notice {
            severity,
            code,
            message: message.into(),
        });
    }
}
