//! Every statement real clients send while connecting and browsing a schema (captured from
//! PostgreSQL 15 in `tests/clients/captured/`: psql, pgjdbc, SQLAlchemy 1.4 and 2.0,
//! psycopg 3, tokio-postgres, and Metabase's and Grafana's catalog SQL) runs against Fluxion
//! and against a real PostgreSQL 15 holding the same demo schema. Where PostgreSQL answers,
//! Fluxion must answer; where PostgreSQL fails, Fluxion must fail with the same SQLSTATE; where
//! an entry is marked `-- same rows as PostgreSQL` (Metabase's field sync, Grafana's column
//! browser …) the rows must be equal too. What other answers contain is checked by the client
//! programs (`client_programs.rs`) and the psql golden files (`psql_describe.rs`).

mod support;

use std::path::Path;

use support::postgres::TestPostgres;
use support::TestServer;
use tokio_postgres::{Client, NoTls};

/// One captured statement.
struct Captured {
    /// Where it came from (`file:entry`).
    origin: String,
    sql: String,
    /// Whether Fluxion must return the same rows as PostgreSQL (the entry is marked
    /// `-- same rows as PostgreSQL`: its answer holds no OIDs, sizes or counters).
    same_rows: bool,
}

/// The comment marking an entry whose rows must match PostgreSQL's.
const SAME_ROWS: &str = "-- same rows as PostgreSQL";

/// The statements of a captured file (entries separated by `-- next` lines; a comment
/// `-- first parameters: $1 = 'a', $2 = 'b'` gives the values a parameterized statement ran
/// with, substituted as literals).
fn load(path: &Path) -> Vec<Captured> {
    let text = std::fs::read_to_string(path).expect("a captured statements file");
    let name = path.file_name().unwrap().to_string_lossy().to_string();
    text.split("\n-- next\n")
        .enumerate()
        .filter_map(|(index, entry)| {
            let mut parameters: Vec<(String, String)> = Vec::new();
            let mut body = Vec::new();
            let same_rows = entry.lines().any(|line| line == SAME_ROWS);
            for line in entry.lines() {
                if let Some(list) = line.strip_prefix("-- first parameters: ") {
                    parameters = parse_parameters(list);
                } else if !(body.is_empty() && line.starts_with("--")) {
                    body.push(line);
                }
            }
            let mut sql = body.join("\n").trim().to_string();
            // Substitute the highest-numbered parameters first ($10 before $1).
            for (name, value) in parameters.iter().rev() {
                sql = sql.replace(name.as_str(), value);
            }
            (!sql.is_empty()).then(|| Captured {
                origin: format!("{name}:{}", index + 1),
                sql,
                same_rows,
            })
        })
        .collect()
}

/// `$1 = 'a', $2 = 'b'` as `[("$1", "'a'"), ("$2", "'b'")]`.
fn parse_parameters(list: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = list;
    while let Some(start) = rest.find('$') {
        rest = &rest[start..];
        let Some((name, after)) = rest.split_once(" = ") else {
            break;
        };
        let value_end = if let Some(quoted) = after.strip_prefix('\'') {
            let mut end = 0;
            let bytes = quoted.as_bytes();
            while end < bytes.len() {
                if bytes[end] == b'\'' && bytes.get(end + 1) != Some(&b'\'') {
                    break;
                }
                end += if bytes[end] == b'\'' { 2 } else { 1 };
            }
            end + 2
        } else {
            after.find(',').unwrap_or(after.len())
        };
        out.push((
            name.to_string(),
            after[..value_end.min(after.len())].to_string(),
        ));
        rest = &after[value_end.min(after.len())..];
    }
    out
}

/// Statements this comparison leaves to other tests: transaction control (each statement
/// here runs on its own), COPY (needs a data stream).
fn is_compared(sql: &str) -> bool {
    let first = sql
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_uppercase();
    !matches!(
        first.as_str(),
        "BEGIN" | "COMMIT" | "ROLLBACK" | "START" | "END" | "COPY" | "SAVEPOINT" | "RELEASE"
    )
}

/// A statement's rows as text.
type Rows = Vec<Vec<Option<String>>>;

/// The outcome of running a statement: its rows, or the SQLSTATE it failed with.
async fn outcome(client: &Client, sql: &str) -> Result<Rows, String> {
    match client.simple_query(sql).await {
        Ok(messages) => Ok(messages
            .iter()
            .filter_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect()),
        Err(e) => Err(e
            .as_db_error()
            .map(|d| format!("{} ({})", d.code().code(), d.message()))
            .unwrap_or_else(|| e.to_string())),
    }
}

async fn connect(connection_string: &str) -> Client {
    let (client, connection) = tokio_postgres::connect(connection_string, NoTls)
        .await
        .expect("connect");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

async fn load_demo_schema(client: &Client) {
    let schema = std::fs::read_to_string("tests/clients/demo_schema.sql").expect("demo schema");
    client
        .batch_execute(&schema)
        .await
        .expect("the demo schema loads");
}

#[tokio::test]
async fn client_catalog_queries_succeed_where_postgres_succeeds() {
    let postgres = TestPostgres::start();
    let server = TestServer::start();
    let reference = connect(&postgres.connection_string()).await;
    let fluxion = server.connect().await;
    load_demo_schema(&reference).await;
    reference
        .batch_execute("REFRESH MATERIALIZED VIEW analytics.customer_totals")
        .await
        .expect("refresh");
    load_demo_schema(&fluxion).await;

    let mut files: Vec<_> = ["tests/clients/captured", "tests/clients/captured/pgcompat"]
        .iter()
        .flat_map(|dir| std::fs::read_dir(dir).expect("captured statements"))
        .map(|entry| entry.expect("a directory entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "sql"))
        .collect();
    files.sort();
    let mut compared = 0;
    let mut mismatches = Vec::new();
    for file in &files {
        for statement in load(file).into_iter().filter(|s| is_compared(&s.sql)) {
            let expected = outcome(&reference, &statement.sql).await;
            let actual = outcome(&fluxion, &statement.sql).await;
            compared += 1;
            let agrees = match (&expected, &actual) {
                (Ok(expected), Ok(actual)) => {
                    !statement.same_rows
                        || sorted(expected) == sorted(&without_system_schema(actual))
                }
                (Err(e), Err(a)) => e.get(..5) == a.get(..5),
                _ => false,
            };
            if !agrees {
                mismatches.push(format!(
                    "{}: PostgreSQL {:?}, Fluxion {:?}\n    {}",
                    statement.origin,
                    expected,
                    actual,
                    statement.sql.replace('\n', "\n    ")
                ));
            }
        }
    }
    assert!(compared > 150, "only {compared} statements were compared");
    assert!(
        mismatches.is_empty(),
        "{} of {compared} client statements differ from PostgreSQL:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}

/// `rows` without those describing Fluxion's own system schema (`fluxion_catalog`, which
/// PostgreSQL does not have; clients list it like any other schema).
fn without_system_schema(rows: &Rows) -> Rows {
    rows.iter()
        .filter(|row| !row.iter().any(|v| v.as_deref() == Some("fluxion_catalog")))
        .cloned()
        .collect()
}

/// `rows` in order (the captured statements that are compared by rows have no ORDER BY).
fn sorted(rows: &Rows) -> Rows {
    let mut rows = rows.clone();
    rows.sort();
    rows
}

/// The object-identifier types `regproc`, `regtype`, … (and their arrays), which Fluxion
/// reports as `text` holding the object's name: that is what PostgreSQL prints for them, and
/// clients in binary mode (psycopg 3) decode it, where they would not decode a name sent as
/// binary `regproc` (PostgreSQL sends the oid). docs/sql-compatibility.md lists this.
const REG_TYPES: [u32; 11] = [
    24, 2202, 2203, 2204, 2205, 2206, 3734, 3769, 4089, 4096, 4191,
];

/// The (name, type oid) of each result column of `SELECT * FROM relation`, with domain types
/// read as their base types (Fluxion reports `information_schema`'s domains by their base).
async fn columns_of(
    client: &Client,
    relation: &str,
    domains: &std::collections::HashMap<u32, u32>,
) -> Result<Vec<(String, u32)>, String> {
    let statement = client
        .prepare(&format!("SELECT * FROM {relation}"))
        .await
        .map_err(|e| {
            e.as_db_error()
                .map(|d| format!("{} ({})", d.code().code(), d.message()))
                .unwrap_or_else(|| e.to_string())
        })?;
    Ok(statement
        .columns()
        .iter()
        .map(|c| {
            let oid = c.type_().oid();
            let oid = domains.get(&oid).copied().unwrap_or(oid);
            let oid = if REG_TYPES.contains(&oid) { 25 } else { oid };
            (c.name().to_string(), oid)
        })
        .collect())
}

#[tokio::test]
async fn every_catalog_relation_has_the_columns_of_postgres_15() {
    let postgres = TestPostgres::start();
    let server = TestServer::start();
    let reference = connect(&postgres.connection_string()).await;
    let fluxion = server.connect().await;
    let domains: std::collections::HashMap<u32, u32> = reference
        .query(
            "SELECT oid, typbasetype FROM pg_type WHERE typtype = 'd'",
            &[],
        )
        .await
        .expect("domains")
        .iter()
        .map(|row| (row.get::<_, u32>(0), row.get::<_, u32>(1)))
        .collect();
    let relations: Vec<String> = fluxion
        .query(
            "SELECT n.nspname || '.' || c.relname FROM pg_class c JOIN pg_namespace n \
             ON n.oid = c.relnamespace WHERE n.nspname IN ('pg_catalog', 'information_schema') \
             AND c.relkind IN ('r', 'v') ORDER BY 1",
            &[],
        )
        .await
        .expect("the system relations")
        .iter()
        .map(|row| row.get(0))
        .collect();
    assert!(
        relations.len() > 120,
        "{} system relations",
        relations.len()
    );
    let mut differences = Vec::new();
    for relation in &relations {
        let expected = columns_of(&reference, relation, &domains).await;
        let actual = columns_of(&fluxion, relation, &domains).await;
        if expected != actual {
            differences.push(format!(
                "{relation}:\n  PostgreSQL {expected:?}\n  Fluxion    {actual:?}"
            ));
        }
    }
    assert!(
        differences.is_empty(),
        "{} of {} relations differ:\n{}",
        differences.len(),
        relations.len(),
        differences.join("\n")
    );
}

#[test]
fn parameters_substitute_as_literals() {
    assert_eq!(
        parse_parameters("$1 = 'it''s', $2 = '3802'"),
        vec![
            ("$1".to_string(), "'it''s'".to_string()),
            ("$2".to_string(), "'3802'".to_string())
        ]
    );
}
