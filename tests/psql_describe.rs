//! psql against Fluxion: every describe command a user types (`\l \dn \d \dt \dv \dm \di
//! \d <object> \d+ <object> \df \du \dT` …) prints what PostgreSQL's psql would for the same
//! objects, compared with golden files in `tests/psql/`; `\copy` both ways, `\timing`, and tab
//! completion in an interactive psql on a pseudo-terminal.
//!
//! `FLUXION_BLESS=1` rewrites the golden files from the current output (review the diff).

mod support;

use std::path::Path;
use std::process::{Command, Output};

use support::TestServer;

/// Golden file name and psql command.
const DESCRIBE_COMMANDS: &[(&str, &str)] = &[
    ("list_databases", "\\l"),
    ("schemas", "\\dn"),
    ("schemas_plus", "\\dn+"),
    ("relations", "\\d"),
    ("tables", "\\dt"),
    ("tables_plus", "\\dt+"),
    ("views", "\\dv"),
    ("materialized_views_on_search_path", "\\dm"),
    ("materialized_views_plus", "\\dm+ analytics.*"),
    ("indexes", "\\di"),
    ("describe_table", "\\d orders"),
    ("describe_table_plus", "\\d+ orders"),
    ("describe_table_with_default", "\\d customers"),
    ("describe_view_plus", "\\d+ big_orders"),
    (
        "describe_materialized_view_plus",
        "\\d+ analytics.customer_totals",
    ),
    ("describe_index", "\\d orders_customer_idx"),
    ("functions", "\\df"),
    ("roles", "\\du"),
    ("types", "\\dT"),
    ("extensions", "\\dx"),
    ("privileges", "\\dp"),
];

/// Runs psql non-interactively against `server` with the given arguments.
fn psql(server: &TestServer, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut child = Command::new("psql")
        .args(["-X", "-h", "127.0.0.1", "-U", "fluxion", "-d", "fluxion"])
        .arg("-p")
        .arg(server.port().to_string())
        .args(args)
        .env("PGTZ", "UTC")
        .env("LC_ALL", "C.UTF-8")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("psql is installed");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("psql's stdin")
            .write_all(input.as_bytes())
            .expect("write to psql");
    }
    child.wait_with_output().expect("psql runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

async fn server_with_demo_schema() -> TestServer {
    let server = TestServer::start();
    let schema = std::fs::read_to_string("tests/clients/demo_schema.sql").expect("demo schema");
    server
        .connect()
        .await
        .batch_execute(&schema)
        .await
        .expect("the demo schema loads");
    server
}

#[tokio::test]
async fn describe_commands_print_the_golden_output() {
    let server = server_with_demo_schema().await;
    let bless = std::env::var_os("FLUXION_BLESS").is_some();
    let mut differences = Vec::new();
    for (name, command) in DESCRIBE_COMMANDS {
        let output = psql(&server, &["-c", command], None);
        let actual = format!("=== {command}\n{}", text(&output));
        let golden = Path::new("tests/psql").join(format!("{name}.out"));
        if bless {
            std::fs::write(&golden, &actual).expect("write the golden file");
            continue;
        }
        let expected = std::fs::read_to_string(&golden).unwrap_or_else(|_| {
            panic!(
                "{} is missing (FLUXION_BLESS=1 writes it)",
                golden.display()
            )
        });
        if actual != expected {
            differences.push(format!(
                "{}:\n--- expected\n{expected}\n--- actual\n{actual}",
                golden.display()
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

#[tokio::test]
async fn backslash_copy_writes_and_reads_rows() {
    let server = server_with_demo_schema().await;
    let loaded = psql(
        &server,
        &["-c", "\\copy customers from stdin csv"],
        Some("carl,west,true\ndora,\"north, east\",false\n\\.\n"),
    );
    assert!(loaded.status.success(), "{}", text(&loaded));
    assert!(text(&loaded).contains("COPY 2"), "{}", text(&loaded));
    let written = psql(
        &server,
        &[
            "-c",
            "\\copy (SELECT name, region, vip FROM customers ORDER BY name) to stdout with (format csv, header)",
        ],
        None,
    );
    assert_eq!(
        text(&written),
        "name,region,vip\nann,north,t\nbob,south,f\ncarl,west,t\ndora,\"north, east\",f\n"
    );
    let tab_separated = psql(&server, &["-c", "\\copy orders (id, tags) to stdout"], None);
    assert_eq!(text(&tab_separated), "1\t{a,b}\n2\t{}\n3\t\\N\n");
}

#[tokio::test]
async fn timing_reports_each_statement() {
    let server = server_with_demo_schema().await;
    let output = psql(
        &server,
        &["-c", "\\timing on", "-c", "SELECT count(*) FROM orders"],
        None,
    );
    let printed = text(&output);
    assert!(printed.contains("Timing is on."), "{printed}");
    assert!(
        printed
            .lines()
            .any(|l| l.starts_with("Time: ") && l.ends_with(" ms")),
        "{printed}"
    );
}

/// Types `input` into an interactive psql on a pseudo-terminal, presses Tab twice, and
/// returns what the terminal showed.
fn complete(server: &TestServer, input: &str) -> String {
    let script = r#"
import os, pty, select, sys, time
port, typed = sys.argv[1], sys.argv[2]
pid, fd = pty.fork()
if pid == 0:
    os.environ["PAGER"] = "cat"
    os.execvp("psql", ["psql", "-X", "-h", "127.0.0.1", "-p", port, "-U", "fluxion", "-d", "fluxion"])
def read_for(seconds):
    out, end = b"", time.time() + seconds
    while time.time() < end:
        ready, _, _ = select.select([fd], [], [], 0.1)
        if ready:
            try:
                out += os.read(fd, 65536)
            except OSError:
                break
    return out
read_for(3)
os.write(fd, typed.encode() + b"\t\t")
shown = read_for(3)
os.write(fd, b"\x03\\q\n")
read_for(1)
sys.stdout.write(shown.decode(errors="replace"))
"#;
    let output = Command::new("python3")
        .arg("-c")
        .arg(script)
        .arg(server.port().to_string())
        .arg(input)
        .output()
        .expect("python3 runs psql on a pseudo-terminal");
    String::from_utf8_lossy(&output.stdout).to_string()
}

#[tokio::test]
async fn tab_completion_offers_relations_and_schemas() {
    let server = server_with_demo_schema().await;
    let tables = complete(&server, "SELECT * FROM ord");
    assert!(tables.contains("orders"), "completing a table: {tables:?}");
    let qualified = complete(&server, "SELECT * FROM analytics.cust");
    assert!(
        qualified.contains("customer_totals"),
        "completing in a schema: {qualified:?}"
    );
    let describe = complete(&server, "\\d big_");
    assert!(
        describe.contains("big_orders"),
        "completing \\d: {describe:?}"
    );
}
