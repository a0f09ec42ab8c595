//! The SQL logic tests: every `sql-tests/**/*.slt` file, run with the `sqllogictest` crate
//! through tokio-postgres against a real Fluxion server, once over the simple query protocol and
//! once over the extended protocol (Parse/Bind/Describe/Execute, binary results rendered to text
//! by [`support::pg_text`]). Both runs compare against the same expected output, so a file pins
//! down what a client sees whichever protocol it speaks.
//!
//! Conventions the files can rely on:
//! - each file runs against a fresh server, so files are independent of each other;
//! - one SQL statement per record (the extended protocol prepares one statement at a time);
//! - NULL is written `NULL`, the empty string `(empty)`;
//! - query type letters are checked over the extended protocol: `I` for int2/int4/int8, `R` for
//!   float4/float8/numeric, `T` for everything else (the simple protocol carries no types);
//! - errors read `db error: ERROR: <message> (SQLSTATE <code>)`, so `statement error` regexes
//!   can assert the code; `statement error (42P01)` asserts the code alone;
//! - the labels `fluxion` and `simple` or `extended` are set for `skipif`/`onlyif`.
//!
//! Environment:
//! - `FLUXION_SLT_FILTER=views` runs only the files whose path contains `views`;
//! - `FLUXION_SLT_REFERENCE_PG="host=… port=… user=…"` runs the files against that PostgreSQL
//!   instead (a fresh database per file, `MATERIALIZED VIEW` read as `VIEW`, label `postgres`)
//!   to check that the expected results are PostgreSQL's; a file whose first line starts with
//!   `# Fluxion only` (nothing in it is PostgreSQL's) is left out of that run.

mod support;

use std::fmt;
use std::path::{Path, PathBuf};

use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Record, Runner};
use tokio_postgres::types::Type;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

use support::pg_text::PgText;
use support::TestServer;

/// How statements reach the server.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// One Query message per statement; rows come back as text.
    Simple,
    /// Parse/Describe, then Bind/Execute; rows come back in binary.
    Extended,
}

impl Protocol {
    /// The `skipif`/`onlyif` label of the protocol.
    fn label(self) -> &'static str {
        match self {
            Protocol::Simple => "simple",
            Protocol::Extended => "extended",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} query protocol", self.label())
    }
}

/// The database a file runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Engine {
    /// A Fluxion server started for the file.
    Fluxion,
    /// A reference PostgreSQL, to check the expectations themselves.
    Postgres,
}

impl Engine {
    /// The engine's name, also its `skipif`/`onlyif` label.
    fn name(self) -> &'static str {
        match self {
            Engine::Fluxion => "fluxion",
            Engine::Postgres => "postgres",
        }
    }
}

#[test]
fn slt_files_give_postgres_results_over_the_simple_query_protocol() {
    run_all_files(Protocol::Simple);
}

#[test]
fn slt_files_give_postgres_results_over_the_extended_query_protocol() {
    run_all_files(Protocol::Extended);
}

/// Runs every selected file over `protocol`, printing each file's outcome (and every failing
/// record of a failed file), then fails naming the files that failed.
fn run_all_files(protocol: Protocol) {
    let files = slt_files();
    assert!(
        !files.is_empty(),
        "no .slt files selected under {}",
        sql_tests_dir().display()
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime");
    let mut failures = Vec::new();
    for file in &files {
        let name = display_name(file);
        match runtime.block_on(run_file(file, protocol)) {
            Ok(()) => println!("ok     {name} [{protocol}]"),
            Err(error) => {
                println!("FAILED {name} [{protocol}]\n{error}");
                failures.push(name);
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} files failed over the {protocol} (failing records printed above): {}",
        failures.len(),
        files.len(),
        failures.join(", ")
    );
}

/// The package's directory: where `cargo test` says it is when it runs the test, which is
/// right even when the compiled test was built from a checkout at another path.
fn package_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The directory holding the `.slt` files.
fn sql_tests_dir() -> PathBuf {
    package_dir().join("sql-tests")
}

/// The `.slt` files under `sql-tests/`, sorted, narrowed by `FLUXION_SLT_FILTER`.
fn slt_files() -> Vec<PathBuf> {
    let filter = std::env::var("FLUXION_SLT_FILTER").unwrap_or_default();
    let mut files = Vec::new();
    collect_slt_files(&sql_tests_dir(), &mut files);
    files.retain(|f| display_name(f).contains(&filter));
    files.sort();
    files
}

/// Adds the `.slt` files in `dir` and its subdirectories to `files`.
fn collect_slt_files(dir: &Path, files: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            collect_slt_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "slt") {
            files.push(path);
        }
    }
}

/// `sql-tests/views.slt` for a path under the package.
fn display_name(path: &Path) -> String {
    path.strip_prefix(package_dir())
        .unwrap_or(path)
        .display()
        .to_string()
}

/// Runs one file against a fresh database. Every record runs even after one fails, so the
/// error lists each record that did not give the expected result (a failure can cascade into
/// the records after it: read the first one first).
async fn run_file(file: &Path, protocol: Protocol) -> Result<(), String> {
    let records = sqllogictest::parse_file::<DefaultColumnType>(file)
        .map_err(|e| format!("cannot parse: {e}"))?;
    let target = match std::env::var("FLUXION_SLT_REFERENCE_PG") {
        Ok(_) if fluxion_only(file) => return Ok(()),
        Ok(admin) => Target::reference_postgres(&admin, file, protocol).await?,
        Err(_) => Target::fluxion().await?,
    };
    let engine = target.engine;
    let connection_string = target.connection_string.clone();
    let mut runner =
        Runner::new(move || SltConnection::connect(connection_string.clone(), protocol, engine));
    runner.add_label(engine.name());
    runner.add_label(protocol.label());
    runner.with_column_validator(column_types_match);
    let mut failures = Vec::new();
    for record in records {
        if let Record::Halt { .. } = record {
            break;
        }
        if let Err(error) = runner.run_async(record).await {
            failures.push(error.display(false).to_string());
        }
    }
    drop(runner);
    target.dispose().await;
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

/// Whether `file` says it holds nothing of PostgreSQL's (its first line starts with
/// `# Fluxion only`).
fn fluxion_only(file: &Path) -> bool {
    std::fs::read_to_string(file).is_ok_and(|text| {
        text.lines()
            .next()
            .unwrap_or_default()
            .starts_with("# Fluxion only")
    })
}

/// Where one file's statements go, kept alive for the duration of the file.
struct Target {
    engine: Engine,
    connection_string: String,
    /// The Fluxion server, stopped when the target is disposed.
    server: Option<TestServer>,
    /// The reference database to drop afterwards: admin connection string and name.
    reference_db: Option<(String, String)>,
}

impl Target {
    /// A fresh Fluxion server with an empty data directory.
    async fn fluxion() -> Result<Self, String> {
        let server = tokio::task::spawn_blocking(TestServer::start)
            .await
            .map_err(|e| format!("starting fluxion failed: {e}"))?;
        Ok(Self {
            engine: Engine::Fluxion,
            connection_string: server.connection_string(),
            server: Some(server),
            reference_db: None,
        })
    }

    /// A fresh database, named after the file and protocol, on the reference PostgreSQL at
    /// `admin`.
    async fn reference_postgres(
        admin: &str,
        file: &Path,
        protocol: Protocol,
    ) -> Result<Self, String> {
        let stem = file.file_stem().unwrap_or_default().to_string_lossy();
        let stem = stem.replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let database = format!("slt_{stem}_{}", protocol.label());
        let client = connect(admin).await.map_err(|e| e.to_string())?;
        for statement in [
            format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"),
            format!("CREATE DATABASE {database}"),
        ] {
            client
                .batch_execute(&statement)
                .await
                .map_err(|e| DbError::from(e).to_string())?;
        }
        Ok(Self {
            engine: Engine::Postgres,
            connection_string: format!("{admin} dbname={database} options='-c TimeZone=UTC'"),
            server: None,
            reference_db: Some((admin.to_string(), database)),
        })
    }

    async fn dispose(self) {
        if let Some(server) = self.server {
            let _ = tokio::task::spawn_blocking(move || drop(server)).await;
        }
        if let Some((admin, database)) = self.reference_db {
            if let Ok(client) = connect(&admin).await {
                let _ = client
                    .batch_execute(&format!("DROP DATABASE IF EXISTS {database} WITH (FORCE)"))
                    .await;
            }
        }
    }
}

/// Connects a client; its connection task runs until the client is dropped.
async fn connect(connection_string: &str) -> Result<Client, tokio_postgres::Error> {
    let (client, connection) = tokio_postgres::connect(connection_string, NoTls).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Column types agree when their counts do and each known type has the expected letter
/// (results over the simple protocol carry no types and report `?`).
#[allow(clippy::ptr_arg)] // the signature of sqllogictest's `ColumnTypeValidator`
fn column_types_match(actual: &Vec<DefaultColumnType>, expected: &Vec<DefaultColumnType>) -> bool {
    actual.len() == expected.len()
        && actual
            .iter()
            .zip(expected)
            .all(|(a, e)| *a == DefaultColumnType::Any || a == e)
}

/// The sqllogictest letter of a Postgres type.
fn column_type_of(ty: &Type) -> DefaultColumnType {
    match *ty {
        Type::INT2 | Type::INT4 | Type::INT8 => DefaultColumnType::Integer,
        Type::FLOAT4 | Type::FLOAT8 | Type::NUMERIC => DefaultColumnType::FloatingPoint,
        _ => DefaultColumnType::Text,
    }
}

/// A failed statement, with the SQLSTATE when the server sent one.
#[derive(Debug)]
struct DbError {
    message: String,
    sqlstate: Option<String>,
}

impl fmt::Display for DbError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DbError {}

impl From<tokio_postgres::Error> for DbError {
    /// `db error: ERROR: relation "x" does not exist (SQLSTATE 42P01)` for server errors;
    /// other errors (a closed connection, a value that cannot be decoded) as tokio-postgres
    /// describes them.
    fn from(error: tokio_postgres::Error) -> Self {
        match error.as_db_error() {
            Some(db) => Self {
                message: format!(
                    "db error: {}: {} (SQLSTATE {})",
                    db.severity(),
                    db.message(),
                    db.code().code()
                ),
                sqlstate: Some(db.code().code().to_string()),
            },
            None => Self {
                message: format!("{error}{}", source_chain(&error)),
                sqlstate: None,
            },
        }
    }
}

/// `: cause: cause…` for an error's sources.
fn source_chain(error: &dyn std::error::Error) -> String {
    let mut text = String::new();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

/// One client connection as the sqllogictest runner drives it.
struct SltConnection {
    client: Client,
    protocol: Protocol,
    engine: Engine,
}

impl SltConnection {
    async fn connect(
        connection_string: String,
        protocol: Protocol,
        engine: Engine,
    ) -> Result<Self, DbError> {
        let client = connect(&connection_string).await?;
        Ok(Self {
            client,
            protocol,
            engine,
        })
    }

    /// Runs a statement with one Query message; rows arrive as text.
    async fn run_simple(&self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let mut columns = None;
        let mut rows = Vec::new();
        let mut count = 0;
        for message in self.client.simple_query(sql).await? {
            match message {
                SimpleQueryMessage::RowDescription(description) => {
                    columns = Some(description.len())
                }
                SimpleQueryMessage::Row(row) => {
                    rows.push((0..row.len()).map(|i| cell_text(row.get(i))).collect())
                }
                SimpleQueryMessage::CommandComplete(n) => count = n,
                _ => {}
            }
        }
        Ok(match columns {
            Some(len) => DBOutput::Rows {
                types: vec![DefaultColumnType::Any; len],
                rows,
            },
            None => DBOutput::StatementComplete(count),
        })
    }

    /// Prepares the statement (Parse/Describe), then executes it (Bind/Execute): as a query
    /// with binary results when it describes result columns, as a command otherwise.
    async fn run_extended(&self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let statement = self.client.prepare(sql).await?;
        if statement.columns().is_empty() {
            let count = self.client.execute(&statement, &[]).await?;
            return Ok(DBOutput::StatementComplete(count));
        }
        let types = statement
            .columns()
            .iter()
            .map(|c| column_type_of(c.type_()))
            .collect();
        let mut rows = Vec::new();
        for row in self.client.query(&statement, &[]).await? {
            let cells = (0..row.len())
                .map(|i| {
                    let value: Option<PgText> = row.try_get(i)?;
                    Ok(cell_text(value.as_ref().map(|v| v.0.as_str())))
                })
                .collect::<Result<Vec<_>, tokio_postgres::Error>>()?;
            rows.push(cells);
        }
        Ok(DBOutput::Rows { types, rows })
    }
}

/// A value as the expected output writes it: `NULL`, `(empty)`, or its text.
fn cell_text(value: Option<&str>) -> String {
    match value {
        None => "NULL".into(),
        Some("") => "(empty)".into(),
        Some(text) => text.to_string(),
    }
}

/// The statement as the reference PostgreSQL runs it: materialized views become views, which
/// PostgreSQL recomputes on every read, as Fluxion's are kept up to date.
fn reference_sql(sql: &str) -> String {
    sql.replace("MATERIALIZED VIEW", "VIEW")
}

#[async_trait::async_trait]
impl AsyncDB for SltConnection {
    type Error = DbError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, DbError> {
        let sql = match self.engine {
            Engine::Fluxion => sql.to_string(),
            Engine::Postgres => reference_sql(sql),
        };
        match self.protocol {
            Protocol::Simple => self.run_simple(&sql).await,
            Protocol::Extended => self.run_extended(&sql).await,
        }
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine.name()
    }

    async fn sleep(duration: std::time::Duration) {
        tokio::time::sleep(duration).await;
    }

    fn error_sql_state(error: &DbError) -> Option<String> {
        error.sqlstate.clone()
    }
}
