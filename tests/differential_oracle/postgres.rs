//! The second oracle: a real PostgreSQL 15 given the same tables and the same writes, each
//! view defined there as a plain view over its query, and read after every transaction.
//!
//! The DataFusion oracle recomputes with the engine's own planner, so a SQL-semantics bug
//! shared by both could never show there; PostgreSQL is the reference for what Fluxion's SQL
//! means. Each case runs in a schema of its own (dropped afterwards, whatever happened) in a
//! database per lane with the C collation: Fluxion compares text by its bytes.

use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::compare::{Cell, ColumnKind, ResultSet};
use crate::support::postgres::TestPostgres;

/// A lane's connection to the reference PostgreSQL.
pub struct Postgres {
    client: Client,
}

/// Why PostgreSQL did not answer a query.
pub enum Failure {
    /// A data exception (SQLSTATE class 22) or a subquery returning two rows (21000): an
    /// expression failed for some row, which PostgreSQL raises and a Fluxion view records in
    /// `view_errors`.
    RowError(String),
    /// Anything else.
    Other(String),
}

impl Failure {
    /// The message, whatever the kind.
    pub fn message(&self) -> &str {
        match self {
            Failure::RowError(m) | Failure::Other(m) => m,
        }
    }
}

impl Postgres {
    /// Connects to a database of its own for `lane` (created with the C collation).
    pub async fn for_lane(server: &TestPostgres, lane: usize) -> Postgres {
        let admin = server.connect().await;
        let database = format!("oracle_lane_{lane}");
        admin
            .batch_execute(&format!(
                "CREATE DATABASE {database} \
                 TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C' LC_CTYPE 'C'"
            ))
            .await
            .expect("creating the oracle's PostgreSQL database");
        Postgres {
            client: server.connect_to(&database).await,
        }
    }

    /// Starts a case: a fresh schema `case_<seed>` first on the search path.
    pub async fn begin_case(&self, seed: u64) -> Result<(), String> {
        self.execute(&format!(
            "DROP SCHEMA IF EXISTS case_{seed} CASCADE; CREATE SCHEMA case_{seed}; \
             SET search_path = case_{seed}"
        ))
        .await
    }

    /// Ends a case: its schema and everything in it are dropped, and a transaction a failure
    /// left open is rolled back.
    pub async fn end_case(&self, seed: u64) {
        let _ = self.client.batch_execute("ROLLBACK").await;
        let _ = self
            .client
            .batch_execute(&format!("DROP SCHEMA IF EXISTS case_{seed} CASCADE"))
            .await;
    }

    /// Runs `sql` (statements without results).
    pub async fn execute(&self, sql: &str) -> Result<(), String> {
        self.client
            .batch_execute(sql)
            .await
            .map_err(|e| describe(&e))
    }

    /// Runs `query` and returns its rows as text, each column compared as its type requires.
    /// `approximate` marks the columns Fluxion computes in floating point or rounds further
    /// than PostgreSQL (`avg`, which PostgreSQL computes as a numeric with at least 16
    /// fractional digits).
    pub async fn rows(&self, query: &str, approximate: &[bool]) -> Result<ResultSet, Failure> {
        let statement = self.client.prepare(query).await.map_err(failure)?;
        let columns = statement
            .columns()
            .iter()
            .enumerate()
            .map(|(i, column)| {
                let ty = column.type_();
                let is_approximate = approximate.get(i).copied().unwrap_or(false);
                if *ty == Type::FLOAT4 || *ty == Type::FLOAT8 {
                    ColumnKind::Float
                } else if is_approximate && *ty == Type::NUMERIC {
                    ColumnKind::Rounded
                } else if is_approximate {
                    ColumnKind::Float
                } else if [Type::INT2, Type::INT4, Type::INT8, Type::NUMERIC].contains(ty) {
                    ColumnKind::Number
                } else {
                    ColumnKind::Text
                }
            })
            .collect();
        let messages = self.client.simple_query(query).await.map_err(failure)?;
        let rows = messages
            .iter()
            .filter_map(|message| match message {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|c| row.get(c).map(str::to_string))
                        .collect::<Vec<Cell>>(),
                ),
                _ => None,
            })
            .collect();
        Ok(ResultSet { columns, rows })
    }
}

/// Classifies an error from a query.
fn failure(error: tokio_postgres::Error) -> Failure {
    let is_row_error = error.code().is_some_and(|code| {
        code.code().starts_with("22") || *code == SqlState::CARDINALITY_VIOLATION
    });
    if is_row_error {
        Failure::RowError(describe(&error))
    } else {
        Failure::Other(describe(&error))
    }
}

/// An error with its SQLSTATE.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) => format!("SQLSTATE {}: {}", db.code().code(), db.message()),
        None => error.to_string(),
    }
}
