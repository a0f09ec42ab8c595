//! Real client libraries against a running Fluxion: SQLAlchemy 2.0 (with pandas) and 1.4 over
//! psycopg2, psycopg 3 in binary mode (and as a SUBSCRIBE subscriber that resumes after a
//! disconnect), dbt-postgres 1.9 (seeds, table, view and materialized-view models, run twice,
//! tests, docs), pgcli 4.7 driven in tmux (`\dt`, `\d`, completion), psqlODBC through pyodbc
//! (tables, columns, keys, foreign keys), and pgjdbc 42.5 (`DatabaseMetaData`, named binary
//! statements, portals with a fetch size). Each program (in
//! `tests/clients/`, checked against PostgreSQL 15 itself) inspects the demo schema and its
//! data and exits non-zero on the first wrong answer or protocol error.
//!
//! The setup installs what the programs need: Python virtual environments with pinned
//! packages (`tests/clients/setup_python.sh`), Debian's pgjdbc (`setup_java.sh`), tmux
//! (`setup_tmux.sh`) and psqlODBC (`setup_odbc.sh`). They are kept in `$FLUXION_CLIENT_CACHE` (default
//! `~/.cache/fluxion/clients`) and reused while their requirements are unchanged.

mod support;

use std::process::{Command, Output};

use support::client_programs::{assert_success, python, setup};
use support::TestServer;

/// A server holding the demo schema.
async fn server_with_demo_schema() -> TestServer {
    let server = TestServer::start();
    let client = server.connect().await;
    let schema = std::fs::read_to_string("tests/clients/demo_schema.sql").expect("demo schema");
    client
        .batch_execute(&schema)
        .await
        .expect("the demo schema loads");
    server
}

/// Runs a client program against `server` with libpq-style environment variables.
fn run_against(server: &TestServer, program: &mut Command) -> Output {
    program
        .env("PGHOST", "127.0.0.1")
        .env("PGPORT", server.port().to_string())
        .env("PGUSER", "fluxion")
        .env("PGDATABASE", "fluxion")
        .output()
        .expect("the client program runs")
}

/// What a client program finds on the server when it starts.
#[derive(Clone, Copy)]
enum Start {
    /// The demo schema of `tests/clients/demo_schema.sql`.
    DemoSchema,
    /// Nothing.
    Empty,
}

/// Runs `tests/clients/{program}` in the Python environment `flavor` against a server that
/// holds what `start` says, and requires it to pass.
async fn python_program_passes(flavor: &str, program: &str, start: Start, what: &str) {
    let python = python(flavor);
    let server = match start {
        Start::DemoSchema => server_with_demo_schema().await,
        Start::Empty => TestServer::start(),
    };
    let output = run_against(
        &server,
        Command::new(python).arg(format!("tests/clients/{program}")),
    );
    assert_success(what, &output);
}

#[tokio::test]
async fn sqlalchemy_2_and_pandas_reflect_the_schema_and_read_its_rows() {
    python_program_passes(
        "sqla2",
        "sqlalchemy_compat.py",
        Start::DemoSchema,
        "sqlalchemy_compat.py (SQLAlchemy 2.0)",
    )
    .await;
}

#[tokio::test]
async fn sqlalchemy_1_4_reflects_the_schema_as_superset_does() {
    python_program_passes(
        "sqla14",
        "sqlalchemy_compat.py",
        Start::DemoSchema,
        "sqlalchemy_compat.py (SQLAlchemy 1.4)",
    )
    .await;
}

#[tokio::test]
async fn dbt_seeds_runs_tests_and_documents_a_project_twice() {
    python_program_passes(
        "dbt",
        "dbt_check.py",
        Start::Empty,
        "dbt_check.py (dbt-postgres 1.9)",
    )
    .await;
}

#[tokio::test]
async fn pgcli_lists_describes_and_completes_in_a_terminal() {
    setup("setup_tmux.sh", &[]);
    python_program_passes(
        "pgcli",
        "pgcli_check.py",
        Start::DemoSchema,
        "pgcli_check.py (pgcli 4.7 in tmux)",
    )
    .await;
}

#[tokio::test]
async fn psqlodbc_lists_tables_columns_keys_and_foreign_keys() {
    setup("setup_odbc.sh", &[]);
    python_program_passes(
        "odbc",
        "odbc_check.py",
        Start::DemoSchema,
        "odbc_check.py (psqlODBC)",
    )
    .await;
}

#[tokio::test]
async fn psycopg_3_speaks_binary_prepared_statements_copy_and_cursors() {
    python_program_passes(
        "sqla2",
        "psycopg3_compat.py",
        Start::DemoSchema,
        "psycopg3_compat.py",
    )
    .await;
}

#[tokio::test]
async fn a_psycopg_subscriber_resumes_after_a_disconnect_exactly_once() {
    python_program_passes(
        "sqla2",
        "subscriber_resume.py",
        Start::Empty,
        "subscriber_resume.py",
    )
    .await;
}

#[tokio::test]
async fn pgjdbc_database_metadata_named_statements_and_fetch_size_work() {
    setup("setup_java.sh", &[]);
    let jar = "/usr/share/java/postgresql.jar";
    let classes = tempfile::tempdir().expect("a directory for the compiled program");
    let compiled = Command::new("javac")
        .arg("-cp")
        .arg(jar)
        .arg("-d")
        .arg(classes.path())
        .arg("tests/clients/jdbc/JdbcCompat.java")
        .output()
        .expect("javac runs");
    assert_success("javac JdbcCompat.java", &compiled);
    let server = server_with_demo_schema().await;
    let output = run_against(
        &server,
        Command::new("java")
            .arg("-cp")
            .arg(format!("{jar}:{}", classes.path().display()))
            .arg("JdbcCompat"),
    );
    assert_success("JdbcCompat", &output);
}
