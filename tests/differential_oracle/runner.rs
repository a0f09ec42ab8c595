//! Running a case: the same statements go to Fluxion and to the model; after every
//! transaction each view is read from Fluxion and compared with its query run by the oracle.
//! A failure report carries the seed and every statement sent so far, ready to paste into psql.

use std::fmt::Write as _;
use std::time::Duration;

use tokio_postgres::{Client, SimpleQueryMessage};

use super::case::{Case, Ending, Transaction};
use super::compare::{differences, format_rows, Cell, ResultSet};
use super::model::Table;
use super::oracle::Oracle;
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
}

/// A case run: the statements sent so far, for the failure report.
struct Run<'a> {
    case: &'a Case,
    client: &'a Client,
    oracle: &'a Oracle,
    script: Vec<String>,
    tally: Tally,
}

/// Runs `case` on `client` (a server with none of the case's objects) and drops what it
/// created. The error is a complete failure report.
pub async fn run_case(case: &Case, client: &Client, oracle: &Oracle) -> Result<Tally, String> {
    let mut run = Run {
        case,
        client,
        oracle,
        script: Vec::new(),
        tally: Tally::default(),
    };
    let result = run.run().await;
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
            self.execute(&format!("DROP MATERIALIZED VIEW v{i}"), false)
                .await?;
        }
        for table in &case.tables {
            self.execute(&format!("DROP TABLE {}", table.name), false)
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

    /// Creates the views in Fluxion and in the oracle, after checking the oracle can run them.
    async fn create_views(&mut self) -> Result<(), String> {
        for (i, view) in self.case.views.iter().enumerate() {
            if let Err(error) = self.oracle.run(&view.oracle_sql).await {
                return Err(format!(
                    "the generator made a query the oracle rejects (a test bug): {error}\n  {}",
                    view.oracle_sql
                ));
            }
            self.execute(
                &format!("CREATE MATERIALIZED VIEW v{i} AS {}", view.sql),
                false,
            )
            .await?;
            self.oracle
                .create_view(&format!("v{i}"), &view.oracle_sql)
                .await
                .map_err(|e| format!("the oracle cannot define v{i} (a test bug): {e}"))?;
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

    /// Runs one statement on Fluxion and records it in the script.
    async fn execute(&mut self, sql: &str, is_extended: bool) -> Result<(), String> {
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
            let expected = self
                .oracle
                .run(&view.oracle_sql)
                .await
                .map_err(|e| format!("the oracle failed on v{i} {moment}: {e}"))?;
            let actual = self.read_view(i).await?;
            self.tally.comparisons += 1;
            self.tally.rows += expected.rows.len();
            self.tally.empty += usize::from(expected.rows.is_empty());
            let width = actual.first().map_or(expected.columns.len(), Vec::len);
            let mismatch = if width != expected.columns.len() {
                Some(format!(
                    "v{i} has {width} columns, its query {}",
                    expected.columns.len()
                ))
            } else {
                differences(&expected, &actual)
            };
            if let Some(mismatch) = mismatch {
                return Err(mismatch_report(
                    i, view, moment, &mismatch, &expected, &actual,
                ));
            }
        }
        Ok(())
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

/// The text of a view mismatch.
fn mismatch_report(
    index: usize,
    view: &ViewQuery,
    moment: &str,
    mismatch: &str,
    expected: &ResultSet,
    actual: &[Vec<Cell>],
) -> String {
    let oracle_query = if view.oracle_sql == view.sql {
        String::new()
    } else {
        format!("  the oracle ran the equivalent: {}\n", view.oracle_sql)
    };
    format!(
        "view v{index} differs from its query {moment}\n  v{index}: {}\n{oracle_query}{mismatch}expected (the oracle, {} rows):\n{}actual (Fluxion, {} rows):\n{}",
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
