//! Running a case: the same statements go to Fluxion, to the model and to PostgreSQL; after
//! every transaction each view is read from Fluxion and compared with its query run by the
//! oracle over the model, and with the same view read from PostgreSQL.
//! A failure report carries the seed and every statement sent so far, ready to paste into psql.

use std::fmt::Write as _;
use std::time::Duration;

use tokio_postgres::{Client, SimpleQueryMessage};

use super::case::{Case, Ending, Transaction};
use super::compare::{differences, format_rows, lacks_rows_only, Cell, ResultSet};
use super::model::Table;
use super::oracle::Oracle;
use super::postgres::{Failure, Postgres};
use super::query::ViewQuery;
use super::writes::Write;

/// How long one statement may take before the case fails as hung.
const STATEMENT_TIMEOUT: Duration = Duration::from_secs(60);

/// What a case checked.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    /// Transactions applied.
    pub transactions: usize,
    /// View comparisons made.
    pub comparisons: usize,
    /// Rows compared in all of them.
    pub rows: usize,
    /// Comparisons of an empty view (they prove less).
    pub empty: usize,
    /// Comparisons with PostgreSQL (as many as `comparisons` unless PostgreSQL raised an
    /// error for a row that Fluxion's views left out and counted in `view_errors`).
    pub postgres_comparisons: usize,
    /// Comparisons with PostgreSQL only (of views whose query the oracle cannot run).
    pub postgres_only: usize,
    /// Comparisons where the oracle differed from Fluxion and PostgreSQL, which agreed.
    pub oracle_differs: usize,
    /// Views PostgreSQL could not read because an expression failed for a row, which
    /// Fluxion left out and counted in `view_errors` (or read, lacking such a row, through a
    /// view that left it out).
    pub rows_failed: usize,
}

/// A case run: the statements sent so far, for the failure report.
struct Run<'a> {
    case: &'a Case,
    client: &'a Client,
    oracle: &'a Oracle,
    postgres: &'a Postgres,
    /// The views whose queries the oracle cannot run: compared with PostgreSQL only.
    beyond_oracle: Vec<usize>,
    script: Vec<String>,
    tally: Tally,
}

/// Runs `case` on `client` (a server with none of the case's objects) and drops what it
/// created. The error is a complete failure report.
pub async fn run_case(
    case: &Case,
    client: &Client,
    oracle: &Oracle,
    postgres: &Postgres,
) -> Result<Tally, String> {
    let mut run = Run {
        case,
        client,
        oracle,
        postgres,
        beyond_oracle: Vec::new(),
        script: Vec::new(),
        tally: Tally::default(),
    };
    let result = match postgres.begin_case(case.seed).await {
        Ok(()) => run.run().await,
        Err(error) => Err(format!("PostgreSQL cannot start the case: {error}")),
    };
    postgres.end_case(case.seed).await;
    let views: Vec<String> = (0..case.views.len()).map(|i| format!("v{i}")).collect();
    oracle.unload(&views, &case.tables);
    match result {
        Ok(()) => Ok(run.tally),
        Err(problem) => Err(run.report(&problem)),
    }
}

impl Run<'_> {
    async fn run(&mut self) -> Result<(), String> {
        let case = self.case;
        let mut model = case.tables.clone();
        for table in &case.tables {
            self.execute(&table.create_sql(), false).await?;
        }
        if case.is_views_first {
            self.oracle.load(&model);
            self.create_views().await?;
            self.insert_initial_rows(&mut model).await?;
            self.oracle.load(&model);
        } else {
            self.insert_initial_rows(&mut model).await?;
            self.oracle.load(&model);
            self.create_views().await?;
        }
        self.compare_views("after the views and the first rows exist")
            .await?;
        for (t, transaction) in case.transactions.iter().enumerate() {
            self.apply(transaction, &mut model).await?;
            self.oracle.load(&model);
            self.tally.transactions += 1;
            self.compare_views(&format!("after transaction {}", t + 1))
                .await?;
        }
        for i in (0..case.views.len()).rev() {
            self.execute_in_fluxion(&format!("DROP MATERIALIZED VIEW v{i}"), false)
                .await?;
        }
        for table in &case.tables {
            self.execute_in_fluxion(&format!("DROP TABLE {}", table.name), false)
                .await?;
        }
        Ok(())
    }

    /// Inserts the case's first rows, in Fluxion and in `model`.
    async fn insert_initial_rows(&mut self, model: &mut [Table]) -> Result<(), String> {
        for write in &self.case.initial {
            self.execute(&write.sql(model), false).await?;
            write.apply(model);
        }
        Ok(())
    }

    /// Creates the views in Fluxion, in PostgreSQL (as plain views) and in the oracle where
    /// DataFusion can run their queries (it cannot run a few that PostgreSQL and Fluxion
    /// accept, such as a comparison of two numerics of different precisions produced by
    /// integer arithmetic on a `sum`); those are compared with PostgreSQL only.
    async fn create_views(&mut self) -> Result<(), String> {
        for (i, view) in self.case.views.iter().enumerate() {
            let is_beyond_oracle = self.oracle.run(&view.oracle_sql).await.is_err();
            self.execute_in_fluxion(
                &format!("CREATE MATERIALIZED VIEW v{i} AS {}", view.sql),
                false,
            )
            .await?;
            self.postgres
                .execute(&format!("CREATE VIEW v{i} AS {}", view.postgres_sql()))
                .await
                .map_err(|e| {
                    format!(
                        "PostgreSQL rejects the query of v{i}, which Fluxion accepted: {e}\n  {}",
                        view.postgres_sql()
                    )
                })?;
            if is_beyond_oracle {
                self.beyond_oracle.push(i);
            } else {
                self.oracle
                    .create_view(&format!("v{i}"), &view.oracle_sql)
                    .await
                    .map_err(|e| format!("the oracle cannot define v{i} (a test bug): {e}"))?;
            }
        }
        Ok(())
    }

    /// Sends `transaction` to Fluxion and applies it to `model` unless it rolls back.
    async fn apply(
        &mut self,
        transaction: &Transaction,
        model: &mut [Table],
    ) -> Result<(), String> {
        let is_block = transaction.ending != Ending::Autocommit;
        if is_block {
            self.execute("BEGIN", false).await?;
        }
        let mut staged = model.to_vec();
        for write in &transaction.writes {
            let sql = write.sql(&staged);
            if let Err(problem) = self.execute(&sql, transaction.is_extended).await {
                if is_block {
                    let _ = self.client.batch_execute("ROLLBACK").await;
                }
                return Err(problem);
            }
            Write::apply(write, &mut staged);
        }
        match transaction.ending {
            Ending::Autocommit => model.clone_from_slice(&staged),
            Ending::Commit => {
                self.execute("COMMIT", false).await?;
                model.clone_from_slice(&staged);
            }
            Ending::Rollback => self.execute("ROLLBACK", false).await?,
        }
        Ok(())
    }

    /// Runs one statement on Fluxion, then on PostgreSQL, which must accept it too.
    async fn execute(&mut self, sql: &str, is_extended: bool) -> Result<(), String> {
        self.execute_in_fluxion(sql, is_extended).await?;
        self.postgres.execute(sql).await.map_err(|e| {
            format!("PostgreSQL failed the last statement, which Fluxion accepted: {e}")
        })
    }

    /// Runs one statement on Fluxion and records it in the script.
    async fn execute_in_fluxion(&mut self, sql: &str, is_extended: bool) -> Result<(), String> {
        self.script.push(format!("{sql};"));
        let outcome = if is_extended {
            tokio::time::timeout(STATEMENT_TIMEOUT, self.client.execute(sql, &[]))
                .await
                .map(|r| r.map(|_| ()))
        } else {
            tokio::time::timeout(STATEMENT_TIMEOUT, self.client.batch_execute(sql)).await
        };
        match outcome {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(format!(
                "Fluxion failed the last statement: {}",
                describe(&error)
            )),
            Err(_) => Err(format!(
                "the last statement did not finish within {STATEMENT_TIMEOUT:?}"
            )),
        }
    }

    /// Compares every view with its query computed by the oracle.
    async fn compare_views(&mut self, moment: &str) -> Result<(), String> {
        for (i, view) in self.case.views.iter().enumerate() {
            let actual = self.read_view(i).await?;
            self.tally.comparisons += 1;
            self.tally.rows += actual.len();
            self.tally.empty += usize::from(actual.is_empty());
            let postgres = self.compare_with_postgres(i, view, moment, &actual).await?;
            if self.beyond_oracle.contains(&i) {
                self.tally.postgres_only += 1;
                continue;
            }
            if postgres == PostgresComparison::RowsFailed {
                // The oracle raises the same error: nothing to compare.
                continue;
            }
            // PostgreSQL is the reference and agreed with Fluxion: a difference here is
            // DataFusion's own semantics (`CAST(ts AS text)` in ISO 8601, for one).
            if !self.oracle_agrees(view, &actual).await {
                self.tally.oracle_differs += 1;
            }
        }
        Ok(())
    }

    /// Whether the view, read from Fluxion as `actual`, equals its query run by the oracle.
    async fn oracle_agrees(&self, view: &ViewQuery, actual: &[Vec<Cell>]) -> bool {
        let Ok(expected) = self.oracle.run(&view.oracle_sql).await else {
            return false;
        };
        let width = actual.first().map_or(expected.columns.len(), Vec::len);
        width == expected.columns.len() && differences(&expected, actual).is_none()
    }

    /// Compares view `i`, read from Fluxion as `actual`, with the same view read from
    /// PostgreSQL: an error when they differ. Where PostgreSQL raises an error for a row (a
    /// failed cast or division), Fluxion must have left such a row out of its views and
    /// counted it in `view_errors`.
    async fn compare_with_postgres(
        &mut self,
        i: usize,
        view: &ViewQuery,
        moment: &str,
        actual: &[Vec<Cell>],
    ) -> Result<PostgresComparison, String> {
        let approximate: Vec<bool> = view.outputs.iter().map(Option::is_none).collect();
        let expected = match self
            .postgres
            .rows(&format!("SELECT * FROM v{i}"), &approximate)
            .await
        {
            Ok(expected) => expected,
            Err(Failure::RowError(_)) if self.rows_left_out().await? > 0 => {
                self.tally.rows_failed += 1;
                return Ok(PostgresComparison::RowsFailed);
            }
            Err(failure) => {
                return Err(format!(
                    "PostgreSQL failed to read v{i} {moment}: {}\n  v{i}: {}",
                    failure.message(),
                    view.postgres_sql()
                ))
            }
        };
        if let Some(mismatch) = differences(&expected, actual) {
            // A view over a view that left a failing row out lacks that row, where PostgreSQL,
            // which evaluates only what a query reads, may not fail (docs/sql-compatibility.md).
            let reads_a_view = (0..i).any(|j| view.sql.contains(&format!("v{j} AS ")));
            if reads_a_view && lacks_rows_only(&expected, actual) && self.rows_left_out().await? > 0
            {
                self.tally.rows_failed += 1;
                return Ok(PostgresComparison::RowsFailed);
            }
            return Err(mismatch_report(
                i, view, moment, &mismatch, &expected, actual,
            ));
        }
        self.tally.postgres_comparisons += 1;
        Ok(PostgresComparison::Agreed)
    }

    /// How many rows Fluxion's views leave out because an expression failed for them.
    async fn rows_left_out(&self) -> Result<i64, String> {
        let row = self
            .client
            .query_one(
                "SELECT coalesce(sum(rows_left_out), 0)::bigint FROM fluxion_catalog.view_errors",
                &[],
            )
            .await
            .map_err(|e| format!("reading view_errors failed: {}", describe(&e)))?;
        Ok(row.get(0))
    }

    /// `SELECT * FROM v{i}` as text rows.
    async fn read_view(&self, i: usize) -> Result<Vec<Vec<Cell>>, String> {
        let sql = format!("SELECT * FROM v{i}");
        let messages = tokio::time::timeout(STATEMENT_TIMEOUT, self.client.simple_query(&sql))
            .await
            .map_err(|_| format!("`{sql}` did not finish within {STATEMENT_TIMEOUT:?}"))?
            .map_err(|e| format!("`{sql}` failed: {}", describe(&e)))?;
        Ok(messages
            .iter()
            .filter_map(|m| match m {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|c| row.get(c).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect())
    }

    /// The failure report: the problem, the seed, and the statements so far.
    fn report(&self, problem: &str) -> String {
        let mut report = format!(
            "differential oracle case seed {} failed (rerun: FLUXION_ORACLE_SEED={} cargo test --test differential_oracle random_views)\n{problem}\n-- the statements sent so far:\n",
            self.case.seed, self.case.seed
        );
        for statement in &self.script {
            let _ = writeln!(report, "{statement}");
        }
        report
    }
}

/// How a view compared with PostgreSQL's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PostgresComparison {
    /// The same rows.
    Agreed,
    /// PostgreSQL raised an error for a row, and Fluxion counted rows left out.
    RowsFailed,
}

/// The text of a view that differs from PostgreSQL's.
fn mismatch_report(
    index: usize,
    view: &ViewQuery,
    moment: &str,
    mismatch: &str,
    expected: &ResultSet,
    actual: &[Vec<Cell>],
) -> String {
    let equivalent = if view.postgres_sql() == view.sql {
        String::new()
    } else {
        format!("  PostgreSQL ran the equivalent: {}\n", view.postgres_sql())
    };
    format!(
        "view v{index} differs from PostgreSQL's {moment}\n  v{index}: {}\n{equivalent}{mismatch}expected (PostgreSQL, {} rows):\n{}actual (Fluxion, {} rows):\n{}",
        view.sql,
        expected.rows.len(),
        format_rows(&expected.rows),
        actual.len(),
        format_rows(actual)
    )
}

/// An error with its SQLSTATE; 0A000 is called out as a rejected-as-not-incremental query.
fn describe(error: &tokio_postgres::Error) -> String {
    match error.as_db_error() {
        Some(db) if db.code().code() == "0A000" => format!(
            "rejected as not incrementally maintainable (SQLSTATE 0A000), but issue 2 requires this construct: {}",
            db.message()
        ),
        Some(db) => format!("SQLSTATE {}: {}", db.code().code(), db.message()),
        None => error.to_string(),
    }
}
