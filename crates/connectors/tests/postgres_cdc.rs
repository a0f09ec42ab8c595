//! The `postgres-cdc` connector against a throwaway PostgreSQL (the server's binaries from
//! `pg_config --bindir`, run as the `postgres` user): snapshot plus stream equals the
//! upstream table, whole transactions per batch, restarts without loss or repeats, value
//! types, and acknowledgements that never pass the durable position.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Array, AsArray, RecordBatch};
use arrow::compute::cast;
use arrow::datatypes::{DataType, Field, Int32Type, Schema, SchemaRef, TimeUnit};
use arrow::util::display::array_value_to_string;
use connectors::{
    open_source, postgres_cdc, Change, ConnectorError, DurablePosition, OpenedSource, SourceBatch,
    SourceContext, SourceOptions, SourceOutput, SourceReader,
};

/// A PostgreSQL server in a temporary directory, stopped and removed when dropped.
struct Postgres {
    dir: PathBuf,
    bin: PathBuf,
    port: u16,
}

impl Postgres {
    fn start() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let bin = PathBuf::from(
            String::from_utf8(
                Command::new("pg_config")
                    .arg("--bindir")
                    .output()
                    .expect("pg_config")
                    .stdout,
            )
            .unwrap()
            .trim(),
        );
        let dir = std::env::temp_dir().join(format!(
            "fluxion-pg-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        run("chown", &["postgres:", dir.to_str().unwrap()]);
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let server = Self { dir, bin, port };
        server.as_postgres(
            "initdb",
            &["-D", &server.data(), "-A", "trust", "-U", "postgres"],
        );
        server.pg_ctl("start");
        server.psql("postgres", "CREATE DATABASE shop");
        server
    }

    fn data(&self) -> String {
        self.dir.join("data").display().to_string()
    }

    fn pg_ctl(&self, action: &str) {
        self.pg_ctl_with(action, "logical");
    }

    fn pg_ctl_with(&self, action: &str, wal_level: &str) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c wal_level={wal_level} \
             -c max_replication_slots=10 -c max_wal_senders=10",
            self.port,
            self.dir.display()
        );
        let log = self.dir.join("log").display().to_string();
        self.as_postgres(
            "pg_ctl",
            &["-D", &self.data(), "-l", &log, "-w", "-o", &options, action],
        );
    }

    fn as_postgres(&self, program: &str, args: &[&str]) -> String {
        let program = self.bin.join(program);
        let mut all = vec!["-u", "postgres", "--", program.to_str().unwrap()];
        all.extend_from_slice(args);
        run("runuser", &all)
    }

    /// Runs `sql` in `database`; returns the rows, one a line, columns split by `|`.
    fn psql(&self, database: &str, sql: &str) -> String {
        let port = self.port.to_string();
        run(
            self.bin.join("psql").to_str().unwrap(),
            &[
                "-X",
                "-q",
                "-At",
                "-v",
                "ON_ERROR_STOP=1",
                "-h",
                "127.0.0.1",
                "-p",
                &port,
                "-U",
                "postgres",
                "-d",
                database,
                "-c",
                sql,
            ],
        )
    }

    fn sql(&self, sql: &str) -> String {
        self.psql("shop", sql)
    }

    fn options(&self) -> SourceOptions {
        SourceOptions::new(
            [
                ("connector", "postgres-cdc"),
                ("hostname", "127.0.0.1"),
                ("port", &self.port.to_string()),
                ("username", "postgres"),
                ("password", ""),
                ("database.name", "shop"),
                ("publication.name", "fluxion_pub"),
                ("slot.name", "fluxion_slot"),
            ]
            .map(|(k, v)| (k.to_string(), v.to_string())),
        )
    }

    /// The slot's acknowledged LSN, as a number.
    fn confirmed_flush(&self) -> u64 {
        lsn(&self.sql(
            "SELECT confirmed_flush_lsn FROM pg_replication_slots WHERE slot_name = 'fluxion_slot'",
        ))
    }
}

impl Drop for Postgres {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(self.bin.join("pg_ctl"))
            .args(["-D", &self.data(), "-m", "immediate", "-w", "stop"])
            .output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn run(program: &str, args: &[&str]) -> String {
    let output = Command::new(program).args(args).output().expect(program);
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_string()
}

/// An LSN `X/Y` as a number.
fn lsn(text: &str) -> u64 {
    let (high, low) = text.trim().split_once('/').expect("an LSN");
    (u64::from_str_radix(high, 16).unwrap() << 32) | u64::from_str_radix(low, 16).unwrap()
}

/// The LSN of a batch's position.
fn position_lsn(position: &str) -> u64 {
    let value: serde_json::Value = serde_json::from_str(position).unwrap();
    lsn(value["lsn"].as_str().unwrap())
}

fn field(name: &str, data_type: DataType, nullable: bool) -> Field {
    Field::new(name, data_type, nullable)
}

fn context(
    tables: &[(&str, SchemaRef, Option<Vec<usize>>)],
    resume: Option<String>,
) -> SourceContext {
    let mut context = SourceContext::new(postgres_cdc_schema());
    context
        .outputs
        .extend(tables.iter().map(|(reference, schema, key)| SourceOutput {
            reference: reference.to_string(),
            schema: schema.clone(),
            key: key.clone(),
        }));
    context.resume = resume;
    context
}

fn postgres_cdc_schema() -> SchemaRef {
    connectors::source_schema(&SourceOptions::new([(
        "connector".to_string(),
        "postgres-cdc".to_string(),
    )]))
    .unwrap()
}

fn orders_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        field("id", DataType::Int32, false),
        field("amount", DataType::Decimal128(12, 2), true),
        field("note", DataType::Utf8, true),
    ]))
}

/// A table as a reader's changes have made it: rows by their first column, each value as
/// text (`NULL` for NULL).
#[derive(Debug, Default)]
struct Model {
    rows: BTreeMap<String, Vec<String>>,
}

/// The values of a row as text; a timestamp in UTC without its zone.
fn texts(rows: &RecordBatch, row: usize) -> Vec<String> {
    (0..rows.num_columns())
        .map(|c| {
            let mut column = rows.column(c).clone();
            if let DataType::Timestamp(unit, Some(_)) = column.data_type() {
                column = cast(&column, &DataType::Timestamp(*unit, None)).unwrap();
            }
            if column.is_null(row) {
                "NULL".to_string()
            } else {
                array_value_to_string(&column, row).unwrap()
            }
        })
        .collect()
}

impl Model {
    fn apply(&mut self, batch: &SourceBatch, output: usize) {
        for change in batch.changes.iter().filter(|c| c.output == output) {
            match &change.change {
                Change::Insert(rows) => {
                    for row in 0..rows.num_rows() {
                        let values = texts(rows, row);
                        self.rows.insert(values[0].clone(), values);
                    }
                }
                Change::Upsert { rows, unchanged } => {
                    for row in 0..rows.num_rows() {
                        let mut values = texts(rows, row);
                        for &column in unchanged.get(row).into_iter().flatten() {
                            values[column] = self.rows[&values[0]][column].clone();
                        }
                        self.rows.insert(values[0].clone(), values);
                    }
                }
                Change::Delete(rows) => {
                    for row in 0..rows.num_rows() {
                        self.rows.remove(&texts(rows, row)[0]);
                    }
                }
                Change::Truncate => self.rows.clear(),
            }
        }
    }

    fn lines(&self) -> String {
        self.rows
            .values()
            .map(|row| row.join("|"))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// Reads batches until `done` says so (or fails after 30 s); returns them.
fn read_until(
    reader: &mut dyn SourceReader,
    mut done: impl FnMut(&SourceBatch) -> bool,
) -> Vec<SourceBatch> {
    let started = Instant::now();
    let mut batches = Vec::new();
    loop {
        assert!(started.elapsed() < Duration::from_secs(30), "timed out");
        let batch = reader
            .next_batch()
            .unwrap()
            .expect("the source does not end");
        let is_done = done(&batch);
        batches.push(batch);
        if is_done {
            return batches;
        }
    }
}

fn has_snapshot(batch: &SourceBatch, table: &str) -> bool {
    let value: serde_json::Value = serde_json::from_str(&batch.position).unwrap();
    value["snapshots"].get(table).is_some()
}

/// The ids (first column, an int) each batch's changes to `output` carry.
fn ids(batch: &SourceBatch, output: usize) -> Vec<i32> {
    batch
        .changes
        .iter()
        .filter(|c| c.output == output)
        .flat_map(|c| match &c.change {
            Change::Insert(rows) | Change::Upsert { rows, .. } | Change::Delete(rows) => {
                rows.column(0).as_primitive::<Int32Type>().values().to_vec()
            }
            Change::Truncate => Vec::new(),
        })
        .collect()
}

const ORDERS_QUERY: &str = "SELECT id, coalesce(amount::text, 'NULL'), coalesce(note, 'NULL') \
                            FROM orders ORDER BY id::text COLLATE \"C\"";

/// Opens a CDC source's reader.
fn open_reader(options: &SourceOptions, context: SourceContext) -> Box<dyn SourceReader> {
    match open_source(options, context).unwrap() {
        OpenedSource::Reader(reader) => reader,
        OpenedSource::Webhook(_) => panic!("a CDC source is read, not pushed to"),
    }
}

#[test]
fn snapshot_and_stream_equal_the_upstream_table() {
    let pg = Postgres::start();
    pg.sql(
        "CREATE TABLE orders (id int PRIMARY KEY, amount numeric(12,2), note text);
         INSERT INTO orders VALUES (1, 10.50, 'one'), (2, NULL, 'two'), (3, 3, NULL);",
    );
    let tables = [("public.orders", orders_schema(), Some(vec![0]))];
    let mut reader = open_reader(&pg.options(), context(&tables, None));
    let mut model = Model::default();
    for batch in read_until(reader.as_mut(), |b| has_snapshot(b, "public.orders")) {
        model.apply(&batch, 1);
    }
    assert_eq!(model.lines(), pg.sql(ORDERS_QUERY));

    pg.sql(
        "BEGIN;
         INSERT INTO orders VALUES (10, 1, 'ten'), (11, 2, 'eleven'), (12, 3, 'twelve');
         UPDATE orders SET amount = 99.99 WHERE id = 1;
         DELETE FROM orders WHERE id = 2;
         COMMIT;",
    );
    pg.sql("UPDATE orders SET id = 13, note = 'moved' WHERE id = 3");
    pg.sql("INSERT INTO orders VALUES (20, 0.01, 'twenty')");
    let batches = read_until(reader.as_mut(), |b| ids(b, 1).contains(&20));
    for batch in &batches {
        model.apply(batch, 1);
    }
    assert_eq!(model.lines(), pg.sql(ORDERS_QUERY));
    let whole = batches
        .iter()
        .find(|b| ids(b, 1).contains(&10))
        .expect("the transaction's rows");
    let mut transaction = ids(whole, 1);
    transaction.sort();
    for id in [1, 2, 10, 11, 12] {
        assert!(
            transaction.contains(&id),
            "the transaction is split: {transaction:?}"
        );
    }

    pg.sql("BEGIN; TRUNCATE orders; INSERT INTO orders VALUES (30, 3, 'after'); COMMIT;");
    for batch in read_until(reader.as_mut(), |b| ids(b, 1).contains(&30)) {
        model.apply(&batch, 1);
    }
    assert_eq!(model.lines(), pg.sql(ORDERS_QUERY));
    assert_eq!(model.lines(), "30|3.00|after");

    // Nothing more: an empty batch at the same position, within about half a second.
    let before = Instant::now();
    let idle = reader.next_batch().unwrap().unwrap();
    assert!(idle.changes.is_empty() && idle.errors.is_empty());
    assert!(before.elapsed() < Duration::from_secs(2));
}

#[test]
fn a_restart_resumes_without_loss_or_repeats_and_acks_only_what_is_durable() {
    let pg = Postgres::start();
    pg.sql("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(12,2), note text)");
    pg.sql("CREATE TABLE other (id int PRIMARY KEY)");
    let tables = [("public.orders", orders_schema(), Some(vec![0]))];
    let durable = DurablePosition::default();
    let mut first = context(&tables, None);
    first.durable = durable.clone();
    let mut reader = open_reader(&pg.options(), first);
    let snapshot = read_until(reader.as_mut(), |b| has_snapshot(b, "public.orders"));
    let created_at = pg.confirmed_flush();
    assert!(created_at <= position_lsn(&snapshot.last().unwrap().position));

    let mut positions = Vec::new();
    for id in 1..=3 {
        pg.sql(&format!("INSERT INTO orders VALUES ({id}, {id}, 'n{id}')"));
        pg.sql(&format!("INSERT INTO other VALUES ({id})"));
        let batches = read_until(reader.as_mut(), |b| ids(b, 1).contains(&id));
        positions.push(batches.last().unwrap().position.clone());
    }
    // Nothing is durable yet: the slot has not moved.
    assert_eq!(pg.confirmed_flush(), created_at);
    let after_one = positions[0].clone();
    durable.set(&after_one);
    let started = Instant::now();
    while pg.confirmed_flush() < position_lsn(&after_one) {
        let _ = reader.next_batch().unwrap();
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "never acknowledged"
        );
    }
    assert_eq!(pg.confirmed_flush(), position_lsn(&after_one));

    // A crash: what came after the durable batch is lost downstream.
    drop(reader);
    pg.sql("INSERT INTO orders VALUES (4, 4, 'n4')");
    pg.sql("CREATE TABLE later (id int PRIMARY KEY, name text)");
    pg.sql("INSERT INTO later VALUES (100, 'before')");
    let later_schema = Arc::new(Schema::new(vec![
        field("id", DataType::Int32, false),
        field("name", DataType::Utf8, true),
    ]));
    let tables = [
        ("public.orders", orders_schema(), Some(vec![0])),
        ("public.later", later_schema, Some(vec![0])),
    ];
    let mut reopened = context(&tables, Some(after_one.clone()));
    reopened.durable = durable.clone();
    let mut reader = open_reader(&pg.options(), reopened);
    pg.sql("INSERT INTO later VALUES (101, 'after')");
    pg.sql("INSERT INTO orders VALUES (5, 5, 'n5')");
    let batches = read_until(reader.as_mut(), |b| ids(b, 1).contains(&5));
    let orders: Vec<i32> = batches.iter().flat_map(|b| ids(b, 1)).collect();
    assert_eq!(orders, [2, 3, 4, 5]);
    let mut later = Model::default();
    for batch in &batches {
        later.apply(batch, 2);
    }
    let batches = read_until(reader.as_mut(), |b| b.changes.is_empty());
    for batch in &batches {
        later.apply(batch, 2);
    }
    assert_eq!(later.lines(), "100|before\n101|after");
    assert!(pg.confirmed_flush() <= position_lsn(&after_one));
}

#[test]
fn values_of_many_types_come_through() {
    let pg = Postgres::start();
    pg.sql(
        "CREATE TABLE kinds (id int PRIMARY KEY, amount numeric(12,2), placed timestamptz,
             doc jsonb, counts int[], tags text[], flag bool, day date, raw bytea,
             big text, n int);
         ALTER TABLE kinds ALTER COLUMN big SET STORAGE EXTERNAL;
         INSERT INTO kinds VALUES (1, 12.34, '2024-01-02 03:04:05.123456+00', '{\"a\": [1, 2]}',
             '{1,2,NULL}', '{x,\"y z\",NULL}', true, '2024-02-29', '\\x00ff',
             repeat('abcdefghij', 2000), 0);",
    );
    let list = |item: DataType| DataType::List(Arc::new(Field::new("item", item, true)));
    let schema = Arc::new(Schema::new(vec![
        field("id", DataType::Int32, false),
        field("amount", DataType::Decimal128(12, 2), true),
        field(
            "placed",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
        field("doc", DataType::Utf8, true),
        field("counts", list(DataType::Int32), true),
        field("tags", list(DataType::Utf8), true),
        field("flag", DataType::Boolean, true),
        field("day", DataType::Date32, true),
        field("raw", DataType::Binary, true),
        field("big", DataType::Utf8, true),
        field("n", DataType::Int32, true),
    ]));
    let (upstream, key) = postgres_cdc::upstream_columns(&pg.options(), "public.kinds").unwrap();
    assert_eq!(key, Some(vec![0]));
    assert_eq!(upstream.as_ref(), schema.as_ref());

    let tables = [("public.kinds", schema, Some(vec![0]))];
    let mut reader = open_reader(&pg.options(), context(&tables, None));
    let mut model = Model::default();
    for batch in read_until(reader.as_mut(), |b| has_snapshot(b, "public.kinds")) {
        model.apply(&batch, 1);
    }
    let big = "abcdefghij".repeat(2000);
    let first = |n: i32| {
        format!(
            "1|12.34|2024-01-02T03:04:05.123456|{{\"a\": [1, 2]}}|[1, 2, ]|[x, y z, ]|true|\
             2024-02-29|00ff|{big}|{n}"
        )
    };
    assert_eq!(model.lines(), first(0));

    pg.sql(
        "INSERT INTO kinds (id) VALUES (2);
         INSERT INTO kinds (id, amount) VALUES (3, 'NaN');
         UPDATE kinds SET n = n + 1 WHERE id = 1;
         INSERT INTO kinds (id, placed) VALUES (4, '2024-06-01 12:00:00+02');",
    );
    let batches = read_until(reader.as_mut(), |b| ids(b, 1).contains(&4));
    let mut errors = Vec::new();
    let mut unchanged_seen = false;
    for batch in &batches {
        model.apply(batch, 1);
        errors.extend(batch.errors.iter().cloned());
        for change in &batch.changes {
            if let Change::Upsert { unchanged, .. } = &change.change {
                unchanged_seen |= unchanged.iter().any(|u| u == &vec![9]);
            }
        }
    }
    assert!(
        unchanged_seen,
        "the TOASTed column was not marked unchanged"
    );
    let lines: Vec<String> = model.rows.values().map(|r| r.join("|")).collect();
    assert_eq!(lines[0], first(1));
    assert_eq!(
        lines[1],
        "2|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL"
    );
    assert_eq!(
        lines[2],
        "4|NULL|2024-06-01T10:00:00|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL"
    );
    assert_eq!(lines.len(), 3, "the NaN row is left out");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].error.contains("amount"), "{:?}", errors[0]);
    assert!(errors[0].raw.contains("NaN"), "{:?}", errors[0]);
}

#[test]
fn opening_fails_fast_with_clear_errors() {
    let pg = Postgres::start();
    pg.sql("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(12,2), note text)");
    let open = |tables: &[(&str, SchemaRef, Option<Vec<usize>>)], options: SourceOptions| {
        open_source(&options, context(tables, None))
            .map(|_| ())
            .expect_err("an error")
    };
    let missing = [("public.nope", orders_schema(), Some(vec![0]))];
    assert!(matches!(
        open(&missing, pg.options()),
        ConnectorError::UpstreamTableNotFound(_)
    ));
    let extra = Arc::new(Schema::new(vec![
        field("id", DataType::Int32, false),
        field("colour", DataType::Utf8, true),
    ]));
    let wrong_column = [("public.orders", extra, Some(vec![0]))];
    assert!(matches!(
        open(&wrong_column, pg.options()),
        ConnectorError::UpstreamColumnNotFound { .. }
    ));
    let tables = [("public.orders", orders_schema(), Some(vec![0]))];
    let mut options: Vec<(String, String)> = vec![
        ("connector".into(), "postgres-cdc".into()),
        ("database.name".into(), "shop".into()),
        ("port".into(), pg.port.to_string()),
        ("slot.nmae".into(), "x".into()),
    ];
    assert!(matches!(
        open(&tables, SourceOptions::new(options.clone())),
        ConnectorError::UnknownOption { .. }
    ));
    options.pop();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    options[2].1 = closed.to_string();
    assert!(matches!(
        open(&tables, SourceOptions::new(options)),
        ConnectorError::Upstream(_)
    ));

    pg.pg_ctl_with("restart", "replica");
    assert!(matches!(
        open(&tables, pg.options()),
        ConnectorError::WalLevelNotLogical(level) if level == "replica"
    ));
}

#[test]
fn dropping_the_slot_removes_it() {
    let pg = Postgres::start();
    pg.sql("CREATE TABLE orders (id int PRIMARY KEY, amount numeric(12,2), note text)");
    let tables = [("public.orders", orders_schema(), Some(vec![0]))];
    let reader = open_reader(&pg.options(), context(&tables, None));
    drop(reader);
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_replication_slots WHERE slot_name = 'fluxion_slot'"),
        "1"
    );
    postgres_cdc::drop_slot(&pg.options()).unwrap();
    assert_eq!(pg.sql("SELECT count(*) FROM pg_replication_slots"), "0");
    postgres_cdc::drop_slot(&pg.options()).unwrap();
}

/// Applies the changes of `batch` to `output` (inserts only, and the snapshot's truncate)
/// to `into`, the output's ids (an int first column).
fn inserted_ids(batch: &SourceBatch, output: usize, into: &mut Vec<i32>) {
    for change in batch.changes.iter().filter(|c| c.output == output) {
        match &change.change {
            Change::Insert(rows) | Change::Upsert { rows, .. } => {
                into.extend(rows.column(0).as_primitive::<Int32Type>().values());
            }
            Change::Truncate => into.clear(),
            Change::Delete(_) => panic!("only inserts were made"),
        }
    }
}

/// Starts inserting `range` into tables `a` and `b`, one transaction per row each, while
/// the test goes on.
fn start_writing(pg: &Postgres, range: std::ops::RangeInclusive<i32>) -> std::process::Child {
    let script: String = range
        .map(|i| {
            format!(
                "INSERT INTO a VALUES ({i});\nINSERT INTO b VALUES ({i});\nSELECT pg_sleep(0.01);\n"
            )
        })
        .collect();
    let path = pg.dir.join("writes.sql");
    std::fs::write(&path, script).unwrap();
    Command::new(pg.bin.join("psql"))
        .args(["-X", "-q", "-h", "127.0.0.1", "-p", &pg.port.to_string()])
        .args(["-U", "postgres", "-d", "shop", "-o", "/dev/null", "-f"])
        .arg(&path)
        .spawn()
        .unwrap()
}

/// Reads until `writer` has ended and every upstream row of each `(output, table)` has
/// arrived; returns the ids per output.
fn read_while_writing(
    pg: &Postgres,
    reader: &mut dyn SourceReader,
    writer: &mut std::process::Child,
    tables: &[(usize, &str)],
    ids: &mut [Vec<i32>],
) -> String {
    let started = Instant::now();
    loop {
        assert!(started.elapsed() < Duration::from_secs(60), "timed out");
        let batch = reader.next_batch().unwrap().unwrap();
        for (i, (output, _)) in tables.iter().enumerate() {
            inserted_ids(&batch, *output, &mut ids[i]);
        }
        if writer.try_wait().unwrap().is_some()
            && tables.iter().enumerate().all(|(i, (_, table))| {
                ids[i].len()
                    >= pg
                        .sql(&format!("SELECT count(*) FROM {table}"))
                        .parse()
                        .unwrap()
            })
        {
            let idle = reader.next_batch().unwrap().unwrap();
            assert!(idle.changes.is_empty(), "more rows than upstream has");
            return batch.position;
        }
    }
}

/// Ids of `table` upstream, in order.
fn upstream_ids(pg: &Postgres, table: &str) -> Vec<i32> {
    pg.sql(&format!("SELECT id FROM {table} ORDER BY id"))
        .lines()
        .map(|line| line.parse().unwrap())
        .collect()
}

#[test]
fn snapshots_taken_during_writes_join_the_stream_exactly() {
    let pg = Postgres::start();
    pg.sql(
        "CREATE TABLE a (id int); CREATE TABLE b (id int);
         INSERT INTO a SELECT generate_series(1, 50); INSERT INTO b SELECT generate_series(1, 50);",
    );
    let schema = Arc::new(Schema::new(vec![field("id", DataType::Int32, true)]));
    let durable = DurablePosition::default();

    // The slot and its snapshot are made while rows are being written.
    let mut writer = start_writing(&pg, 51..=200);
    std::thread::sleep(Duration::from_millis(100));
    let mut first = context(&[("public.a", schema.clone(), None)], None);
    first.durable = durable.clone();
    let mut reader = open_reader(&pg.options(), first);
    let mut a_ids = vec![Vec::new()];
    let position = read_while_writing(&pg, reader.as_mut(), &mut writer, &[(1, "a")], &mut a_ids);
    let mut a_ids = a_ids.remove(0);
    a_ids.sort();
    assert_eq!(a_ids, upstream_ids(&pg, "a"));
    durable.set(&position);
    drop(reader);

    // Table b joins the source later: its snapshot comes from a temporary slot, again
    // while rows are being written.
    let mut writer = start_writing(&pg, 201..=350);
    std::thread::sleep(Duration::from_millis(100));
    let tables = [
        ("public.a", schema.clone(), None),
        ("public.b", schema, None),
    ];
    let mut second = context(&tables, Some(position));
    second.durable = durable;
    let mut reader = open_reader(&pg.options(), second);
    let mut ids = vec![a_ids, Vec::new()];
    read_while_writing(
        &pg,
        reader.as_mut(),
        &mut writer,
        &[(1, "a"), (2, "b")],
        &mut ids,
    );
    for (mut ids, table) in ids.into_iter().zip(["a", "b"]) {
        ids.sort();
        assert_eq!(ids, upstream_ids(&pg, table), "table {table}");
    }
    assert_eq!(
        pg.sql("SELECT count(*) FROM pg_replication_slots"),
        "1",
        "the temporary slot is gone"
    );
}

#[test]
fn a_table_read_without_a_key_gets_whole_old_rows_deleted() {
    let pg = Postgres::start();
    pg.sql(
        "CREATE TABLE notes (id int, body text);
         ALTER TABLE notes REPLICA IDENTITY FULL;
         INSERT INTO notes VALUES (1, 'one'), (2, 'two');",
    );
    let schema = Arc::new(Schema::new(vec![
        field("id", DataType::Int32, true),
        field("body", DataType::Utf8, true),
    ]));
    let tables = [("public.notes", schema, None)];
    let mut reader = open_reader(&pg.options(), context(&tables, None));
    let mut model = Model::default();
    for batch in read_until(reader.as_mut(), |b| has_snapshot(b, "public.notes")) {
        model.apply(&batch, 1);
    }
    pg.sql("UPDATE notes SET body = 'uno' WHERE id = 1");
    pg.sql("DELETE FROM notes WHERE id = 2");
    pg.sql("INSERT INTO notes VALUES (3, 'three')");
    let batches = read_until(reader.as_mut(), |b| ids(b, 1).contains(&3));
    let mut kinds = Vec::new();
    for batch in &batches {
        model.apply(batch, 1);
        kinds.extend(batch.changes.iter().map(|c| match &c.change {
            Change::Insert(_) => "insert",
            Change::Delete(rows) => {
                assert!(rows.column(1).null_count() == 0, "the whole old row");
                "delete"
            }
            _ => "other",
        }));
    }
    assert_eq!(kinds, ["delete", "insert", "delete", "insert"]);
    assert_eq!(model.lines(), "1|uno\n3|three");
}
