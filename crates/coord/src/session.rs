//! A client session: its transaction, settings, and the notices it has yet to receive.

use std::collections::BTreeMap;

use repr::{Diff, GlobalId, Row, Timestamp};

use crate::copy::CopyPlan;

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
}

#[derive(Debug, Default)]
pub(crate) enum Transaction {
    #[default]
    Idle,
    Block(TransactionBlock),
    Failed,
}

/// One client connection's state.
#[derive(Debug)]
pub struct Session {
    pub(crate) transaction: Transaction,
    pub(crate) variables: BTreeMap<String, String>,
    pub(crate) notices: Vec<Notice>,
    pub(crate) pending_copy: Option<CopyPlan>,
    user: String,
}

/// Settings every session starts with, as PostgreSQL 15 reports them.
pub const DEFAULT_SETTINGS: &[(&str, &str)] = &[
    ("application_name", ""),
    ("client_encoding", "UTF8"),
    ("datestyle", "ISO, MDY"),
    ("default_transaction_isolation", "serializable"),
    ("extra_float_digits", "3"),
    ("integer_datetimes", "on"),
    ("intervalstyle", "postgres"),
    ("is_superuser", "on"),
    ("max_identifier_length", "63"),
    ("search_path", "public"),
    ("server_encoding", "UTF8"),
    ("server_version", crate::SERVER_VERSION),
    ("server_version_num", crate::SERVER_VERSION_NUM),
    ("standard_conforming_strings", "on"),
    ("timezone", "UTC"),
    ("transaction_isolation", "serializable"),
    ("transaction_read_only", "off"),
];

impl Session {
    pub(crate) fn new(user: &str) -> Self {
        Self {
            transaction: Transaction::Idle,
            variables: DEFAULT_SETTINGS
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            notices: Vec::new(),
            pending_copy: None,
            user: user.to_string(),
        }
    }

    /// The user the session authenticated as.
    pub fn user(&self) -> &str {
        &self.user
    }

    /// The transaction status for ReadyForQuery.
    pub fn transaction_status(&self) -> TransactionStatus {
        match self.transaction {
            Transaction::Idle => TransactionStatus::Idle,
            Transaction::Block(_) => TransactionStatus::InBlock,
            Transaction::Failed => TransactionStatus::Failed,
        }
    }

    /// Notices produced since the last call.
    pub fn take_notices(&mut self) -> Vec<Notice> {
        std::mem::take(&mut self.notices)
    }

    /// The value of a setting (names are case-insensitive).
    pub fn variable(&self, name: &str) -> Option<&str> {
        self.variables.get(&name.to_lowercase()).map(String::as_str)
    }

    /// Marks the open transaction block failed after an error.
    pub fn fail_transaction(&mut self) {
        if matches!(self.transaction, Transaction::Block(_)) {
            self.transaction = Transaction::Failed;
        }
    }

    /// Forgets a COPY whose data the client abandoned.
    pub fn abandon_copy(&mut self) {
        self.pending_copy = None;
        self.fail_transaction();
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
