//! The timeout settings, read and shown as PostgreSQL reads and shows them:
//! `statement_timeout` (how long a query or a write may run before it is cancelled, 57014),
//! `lock_timeout` (how long a statement may wait for the sequencer, the one lock DDL and
//! commits take, before it is cancelled, 55P03),
//! `idle_in_transaction_session_timeout` and `idle_session_timeout` (how long a client may
//! leave its session idle, in a transaction block or not, before its connection is ended;
//! enforced by the server, which sees the client wait).

use std::future::Future;
use std::time::Duration;

use sql::Statement;

use crate::error::CoordError;
use crate::session::{Session, TransactionStatus};

/// How long a query or a write may run.
pub(crate) const STATEMENT_TIMEOUT: &str = "statement_timeout";
/// How long a statement may wait for a lock.
const LOCK_TIMEOUT: &str = "lock_timeout";
/// How long a session may stay idle inside a transaction block.
const IDLE_IN_TRANSACTION_SESSION_TIMEOUT: &str = "idle_in_transaction_session_timeout";
/// How long a session may stay idle outside a transaction block.
const IDLE_SESSION_TIMEOUT: &str = "idle_session_timeout";

/// The settings whose values are durations in milliseconds.
pub(crate) const TIMEOUT_SETTINGS: &[&str] = &[
    STATEMENT_TIMEOUT,
    LOCK_TIMEOUT,
    IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
    IDLE_SESSION_TIMEOUT,
];

/// How long a session may wait for its client's next statement before its connection is
/// ended, and which setting says so.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdleTimeout {
    /// `idle_in_transaction_session_timeout`: the session is in a transaction block.
    InTransaction(Duration),
    /// `idle_session_timeout`: the session is not.
    Session(Duration),
}

impl IdleTimeout {
    /// How long the session may stay idle.
    pub fn limit(self) -> Duration {
        match self {
            IdleTimeout::InTransaction(limit) | IdleTimeout::Session(limit) => limit,
        }
    }
}

tokio::task_local! {
    /// The `lock_timeout` of the statement the task runs (see [`with_lock_timeout`]).
    static STATEMENT_LOCK_TIMEOUT: Option<Duration>;
}

/// Runs `statement` so that its waits for locks ([`waiting_for_lock`]) last at most
/// `limit`.
pub(crate) async fn with_lock_timeout<T>(
    limit: Option<Duration>,
    statement: impl Future<Output = T>,
) -> T {
    STATEMENT_LOCK_TIMEOUT.scope(limit, statement).await
}

/// Waits for `lock`: at most the `lock_timeout` of the statement that waits (55P03 past
/// it); as long as it takes outside a statement (a source's batch, a checkpoint).
pub(crate) async fn waiting_for_lock<T>(lock: impl Future<Output = T>) -> Result<T, CoordError> {
    match STATEMENT_LOCK_TIMEOUT
        .try_with(|limit| *limit)
        .ok()
        .flatten()
    {
        Some(limit) => tokio::time::timeout(limit, lock)
            .await
            .map_err(|_| CoordError::LockTimeout),
        None => Ok(lock.await),
    }
}

impl Session {
    /// The session's `lock_timeout`, if one is set.
    pub(crate) fn lock_timeout(&self) -> Option<Duration> {
        self.variable(LOCK_TIMEOUT)
            .and_then(parse)
            .filter(|limit| !limit.is_zero())
    }

    /// The idle timeout that applies to the session now, if one is set.
    pub fn idle_timeout(&self) -> Option<IdleTimeout> {
        let (setting, timeout): (_, fn(Duration) -> IdleTimeout) = match self.transaction_status() {
            TransactionStatus::Idle => (IDLE_SESSION_TIMEOUT, IdleTimeout::Session),
            TransactionStatus::InBlock | TransactionStatus::Failed => (
                IDLE_IN_TRANSACTION_SESSION_TIMEOUT,
                IdleTimeout::InTransaction,
            ),
        };
        self.variable(setting)
            .and_then(parse)
            .filter(|limit| !limit.is_zero())
            .map(timeout)
    }
}

/// The duration `value` names, as PostgreSQL reads a timeout setting: a number, in
/// milliseconds unless a unit follows (`us`, `ms`, `s`, `min`, `h`, `d`); `0` turns the limit
/// off. `None` if it is not such a value.
pub(crate) fn parse(value: &str) -> Option<Duration> {
    let value = value.trim();
    let split = value
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(value.len());
    let (number, unit) = value.split_at(split);
    let number: f64 = number.parse().ok()?;
    let micros_per_unit = match unit.trim().to_lowercase().as_str() {
        "us" => 1.0,
        "" | "ms" => 1e3,
        "s" => 1e6,
        "min" => 60e6,
        "h" => 3600e6,
        "d" => 86400e6,
        _ => return None,
    };
    let micros = number * micros_per_unit;
    (micros.is_finite() && micros <= i32::MAX as f64 * 1e3)
        .then(|| Duration::from_micros(micros.round() as u64))
}

/// `limit` as PostgreSQL shows it: in the largest unit that divides it (`5s`, `1500ms`, `0`).
pub(crate) fn display(limit: Duration) -> String {
    let millis = limit.as_millis();
    if millis == 0 {
        return "0".into();
    }
    let units = [
        (86_400_000, "d"),
        (3_600_000, "h"),
        (60_000, "min"),
        (1_000, "s"),
    ];
    for (size, unit) in units {
        if millis.is_multiple_of(size) {
            return format!("{}{unit}", millis / size);
        }
    }
    format!("{millis}ms")
}

/// Whether `statement_timeout` applies to `statement`: reads and writes. Definitions run to
/// the end (cutting one off halfway would leave the catalog half changed), and a
/// subscription runs until it is cancelled.
pub(crate) fn applies_to(statement: &Statement) -> bool {
    matches!(
        statement,
        Statement::Select(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::CopyTo(_)
            | Statement::Fetch(_)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::{Transaction, TransactionBlock};

    #[test]
    fn values_read_and_show_as_postgres_does() {
        for (input, shown) in [
            ("0", "0"),
            ("5000", "5s"),
            ("1500", "1500ms"),
            ("100ms", "100ms"),
            ("2 s", "2s"),
            ("1min", "1min"),
            ("90s", "90s"),
            ("1h", "1h"),
            ("2d", "2d"),
        ] {
            let limit = parse(input).unwrap_or_else(|| panic!("{input}"));
            assert_eq!(display(limit), shown, "{input}");
        }
        for refused in ["", "soon", "5 weeks", "-1", "1e400"] {
            assert_eq!(parse(refused), None, "{refused}");
        }
    }

    #[test]
    fn the_idle_timeout_follows_the_transaction_state() {
        let mut session = Session::new("fluxion", 0, &[]);
        assert_eq!(session.idle_timeout(), None);
        session.set_variable(IDLE_SESSION_TIMEOUT, "2s".into());
        session.set_variable(IDLE_IN_TRANSACTION_SESSION_TIMEOUT, "500".into());
        assert_eq!(
            session.idle_timeout(),
            Some(IdleTimeout::Session(Duration::from_secs(2)))
        );
        session.transaction = Transaction::Block(TransactionBlock::default());
        assert_eq!(
            session.idle_timeout(),
            Some(IdleTimeout::InTransaction(Duration::from_millis(500)))
        );
    }
}
