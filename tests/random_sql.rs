//! Random SQL against a live server, in the spirit of SQLsmith: for a bounded time, random
//! queries, writes and view definitions over a schema of every common type, with NULLs and
//! edge values (extreme integers, NaN and infinities, empty and quoted strings). Whatever a
//! statement does, the server must answer it: rows, or an error with a SQLSTATE that is not
//! an internal error (XX000); it never drops the connection, never panics, never stops.
//!
//! `FLUXION_RANDOM_SQL_SECONDS` sets how long it runs (default 45), `FLUXION_RANDOM_SQL_SEED`
//! replays a run (its seed is printed).

mod support;

use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::TestServer;

/// The tables, their columns and the columns' types.
const TABLES: &[(&str, &[(&str, &str)])] = &[
    (
        "t1",
        &[
            ("id", "int"),
            ("i", "int"),
            ("b", "bigint"),
            ("s", "text"),
            ("f", "double precision"),
            ("n", "numeric(10,2)"),
            ("ok", "boolean"),
            ("ts", "timestamp"),
            ("d", "date"),
        ],
    ),
    (
        "t2",
        &[
            ("id", "int"),
            ("i", "int"),
            ("s", "text"),
            ("f", "real"),
            ("n", "numeric"),
            ("iv", "interval"),
        ],
    ),
];

const SCHEMA: &str = "
CREATE TABLE t1 (id int PRIMARY KEY, i int, b bigint, s text, f double precision,
                 n numeric(10,2), ok boolean, ts timestamp, d date);
CREATE TABLE t2 (id int PRIMARY KEY, i int, s text, f real, n numeric, iv interval);
INSERT INTO t1 VALUES
  (1, 0, 0, '', 0, 0, true, '2024-01-01 00:00:00', '2024-01-01'),
  (2, -1, -9223372036854775808, 'it''s', -1.5, -99999999.99, false, '1970-01-01', '1970-01-01'),
  (3, 2147483647, 9223372036854775807, 'ümlaut ✓', 'NaN', 12.34, NULL, '2038-01-19 03:14:07', '9999-12-31'),
  (4, -2147483648, 42, 'a%b_c', 'Infinity', 0.01, true, NULL, NULL),
  (5, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (6, 7, 7, 'seven', '-Infinity', 7, false, '2000-02-29 12:00:00', '2000-02-29');
INSERT INTO t2 VALUES
  (1, 1, 'one', 1.5, 1.000001, '1 day'),
  (2, 2, 'two', -0.0, -2, '-1 hour'),
  (3, NULL, NULL, NULL, NULL, NULL),
  (4, 7, 'seven', 'NaN', 123456789.123456789, '1 year 2 months'),
  (5, 0, '', 3.4e38, 0, '0 seconds');
CREATE MATERIALIZED VIEW v1 AS SELECT i, count(*) AS c, sum(b) AS sb FROM t1 GROUP BY i;
CREATE VIEW v2 AS SELECT t1.id, t1.s, t2.iv FROM t1 JOIN t2 ON t1.i = t2.i;
";

/// The types expressions are generated in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ty {
    Int,
    Float,
    Numeric,
    Text,
    Bool,
    Date,
    Timestamp,
    Interval,
}

const TYPES: [Ty; 8] = [
    Ty::Int,
    Ty::Float,
    Ty::Numeric,
    Ty::Text,
    Ty::Bool,
    Ty::Date,
    Ty::Timestamp,
    Ty::Interval,
];

/// The generator's type of a column type of [`TABLES`].
fn ty_of(column_type: &str) -> Ty {
    match column_type {
        "int" | "bigint" => Ty::Int,
        "double precision" | "real" => Ty::Float,
        "text" => Ty::Text,
        "boolean" => Ty::Bool,
        "timestamp" => Ty::Timestamp,
        "date" => Ty::Date,
        "interval" => Ty::Interval,
        _ => Ty::Numeric,
    }
}

/// The columns a query may name, with their types.
type Scope = Vec<(String, Ty)>;

/// Generates statements over [`TABLES`]: mostly well typed, so that they run deep into
/// planning, views and evaluation, with one subexpression in ten of a random type.
struct Generator {
    rng: StdRng,
    /// Views this run created and has not dropped.
    views: Vec<String>,
    next_view: u32,
    next_id: i64,
}

impl Generator {
    fn chance(&mut self, percent: u32) -> bool {
        self.rng.random_range(0..100) < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.rng.random_range(0..items.len())]
    }

    fn statement(&mut self) -> String {
        match self.rng.random_range(0..100) {
            0..=54 => self.query(0),
            55..=66 => self.insert(),
            67..=71 => self.update(),
            72..=76 => self.delete(),
            77..=84 => self.create_view(),
            85..=87 => self.drop_view(),
            88..=93 => self.read_view(),
            94..=96 => format!("EXPLAIN {}", self.query(0)),
            _ => self.setting(),
        }
    }

    fn setting(&mut self) -> String {
        let settings = [
            "SET search_path = public",
            "SET extra_float_digits = 0",
            "SET extra_float_digits = 3",
            "SHOW timezone",
            "SHOW ALL",
            "SET statement_timeout = '2s'",
        ];
        self.pick(&settings).to_string()
    }

    fn table(&mut self) -> (&'static str, &'static [(&'static str, &'static str)]) {
        *self.pick(TABLES)
    }

    fn scope_of(columns: &[(&str, &str)], alias: &str) -> Scope {
        columns
            .iter()
            .map(|(c, t)| (format!("{alias}{c}"), ty_of(t)))
            .collect()
    }

    fn query(&mut self, depth: u32) -> String {
        let (table, columns) = self.table();
        let alias = format!("q{depth}");
        let mut scope = Self::scope_of(columns, &format!("{alias}."));
        let mut from = format!("{table} AS {alias}");
        if depth < 2 && self.chance(35) {
            let (other, other_columns) = self.table();
            let other_alias = format!("j{depth}");
            let kind = self
                .pick(&["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"])
                .to_string();
            let extra = if self.chance(30) {
                format!(" AND {}", self.expr(Ty::Bool, &scope, 1, depth))
            } else {
                String::new()
            };
            from = format!(
                "{from} {kind} {other} AS {other_alias} ON {alias}.i = {other_alias}.i{extra}"
            );
            scope.extend(Self::scope_of(other_columns, &format!("{other_alias}.")));
        }
        let mut query = if self.chance(25) {
            let key_ty = *self.pick(&TYPES);
            let key = self.expr(key_ty, &scope, 1, depth);
            let mut select = vec![key.clone()];
            for _ in 0..self.rng.random_range(1..=3) {
                select.push(self.aggregate(&scope, depth));
            }
            let mut query = format!("SELECT {} FROM {from}", select.join(", "));
            if self.chance(40) {
                query += &format!(" WHERE {}", self.expr(Ty::Bool, &scope, 2, depth));
            }
            query += &format!(" GROUP BY {key}");
            if self.chance(30) {
                query += &format!(" HAVING count(*) > {}", self.rng.random_range(0..3));
            }
            query
        } else {
            let mut select = Vec::new();
            for _ in 0..self.rng.random_range(1..=4) {
                if self.chance(10) {
                    select.push(self.window(&scope, depth));
                } else {
                    let ty = *self.pick(&TYPES);
                    select.push(self.expr(ty, &scope, 3, depth));
                }
            }
            let distinct = if self.chance(10) { "DISTINCT " } else { "" };
            let mut query = format!("SELECT {distinct}{} FROM {from}", select.join(", "));
            if self.chance(60) {
                query += &format!(" WHERE {}", self.expr(Ty::Bool, &scope, 3, depth));
            }
            query
        };
        if depth == 0 && self.chance(15) {
            let op = self
                .pick(&[
                    "UNION",
                    "UNION ALL",
                    "INTERSECT",
                    "EXCEPT",
                    "INTERSECT ALL",
                    "EXCEPT ALL",
                ])
                .to_string();
            query = format!("SELECT 1 AS x FROM ({query}) AS l {op} SELECT 2 FROM t2");
        }
        if self.chance(30) {
            query += " ORDER BY 1";
        }
        if self.chance(25) {
            query += &format!(" LIMIT {}", self.rng.random_range(0..10));
        }
        if depth == 0 && self.chance(10) {
            query = format!("WITH w AS ({query}) SELECT * FROM w");
        }
        query
    }

    fn window(&mut self, scope: &Scope, depth: u32) -> String {
        let partition = self.expr(Ty::Int, scope, 0, depth);
        let order_ty = *self.pick(&[Ty::Int, Ty::Text, Ty::Float]);
        let order = self.expr(order_ty, scope, 0, depth);
        let value = self.expr(Ty::Int, scope, 0, depth);
        let function = match self.rng.random_range(0..7) {
            0 => "row_number()".to_string(),
            1 => "rank()".to_string(),
            2 => "dense_rank()".to_string(),
            3 => format!("lag({value})"),
            4 => format!("lead({value}, 2)"),
            5 => "ntile(3)".to_string(),
            _ => format!("sum({value})"),
        };
        let frame = if self.chance(30) {
            " ROWS BETWEEN 1 PRECEDING AND CURRENT ROW"
        } else {
            ""
        };
        format!("{function} OVER (PARTITION BY {partition} ORDER BY {order}{frame})")
    }

    fn aggregate(&mut self, scope: &Scope, depth: u32) -> String {
        match self.rng.random_range(0..9) {
            0 => "count(*)".to_string(),
            1 => format!("count(DISTINCT {})", self.expr(Ty::Text, scope, 1, depth)),
            2 => format!("sum({})", self.expr(Ty::Int, scope, 1, depth)),
            3 => format!("avg({})", self.expr(Ty::Float, scope, 1, depth)),
            4 => format!("sum({})", self.expr(Ty::Numeric, scope, 1, depth)),
            5 => format!("min({})", self.expr(Ty::Text, scope, 1, depth)),
            6 => format!("max({})", self.expr(Ty::Timestamp, scope, 1, depth)),
            7 => format!("bool_and({})", self.expr(Ty::Bool, scope, 1, depth)),
            _ => format!("string_agg({}, ',')", self.expr(Ty::Text, scope, 1, depth)),
        }
    }

    fn literal(&mut self, ty: Ty) -> String {
        let choices: &[&str] = match ty {
            Ty::Int => &[
                "0",
                "1",
                "-1",
                "7",
                "2147483647",
                "-2147483648",
                "9223372036854775807",
                "NULL",
            ],
            Ty::Float => &[
                "0.5",
                "-0.0",
                "1e308",
                "'NaN'::float8",
                "'Infinity'::float8",
                "'-Infinity'::float8",
                "NULL::float8",
            ],
            Ty::Numeric => &[
                "12.345::numeric(5,2)",
                "0::numeric",
                "-99999999.99",
                "1.000001",
                "NULL::numeric",
            ],
            Ty::Text => &[
                "''",
                "'x'",
                "'it''s'",
                "'%'",
                "'ümlaut ✓'",
                "'a,b'",
                "NULL::text",
            ],
            Ty::Bool => &["true", "false", "NULL::boolean"],
            Ty::Date => &[
                "DATE '2024-02-29'",
                "DATE '1970-01-01'",
                "DATE '9999-12-31'",
                "NULL::date",
            ],
            Ty::Timestamp => &[
                "TIMESTAMP '2024-01-01 10:00:00'",
                "TIMESTAMP '1970-01-01 00:00:00'",
                "NULL::timestamp",
            ],
            Ty::Interval => &[
                "INTERVAL '1 day'",
                "INTERVAL '-1 hour'",
                "INTERVAL '1 year 2 months'",
                "NULL::interval",
            ],
        };
        self.pick(choices).to_string()
    }

    fn leaf(&mut self, ty: Ty, scope: &Scope) -> String {
        let columns: Vec<&String> = scope
            .iter()
            .filter(|(_, t)| *t == ty)
            .map(|(c, _)| c)
            .collect();
        if !columns.is_empty() && self.chance(70) {
            return self.pick(&columns).to_string();
        }
        self.literal(ty)
    }

    fn expr(&mut self, ty: Ty, scope: &Scope, budget: u32, depth: u32) -> String {
        if budget == 0 || self.chance(25) {
            return self.leaf(ty, scope);
        }
        // One subexpression in ten is of a random type: the planner's type errors.
        let ty = if self.chance(10) {
            *self.pick(&TYPES)
        } else {
            ty
        };
        let b = budget - 1;
        if self.chance(10) {
            let condition = self.expr(Ty::Bool, scope, b, depth);
            let then = self.expr(ty, scope, b, depth);
            let otherwise = self.expr(ty, scope, b, depth);
            return format!("CASE WHEN {condition} THEN {then} ELSE {otherwise} END");
        }
        if self.chance(8) {
            let a = self.expr(ty, scope, b, depth);
            let other = self.expr(ty, scope, b, depth);
            let function = self
                .pick(&["coalesce", "nullif", "greatest", "least"])
                .to_string();
            return format!("{function}({a}, {other})");
        }
        match ty {
            Ty::Int => match self.rng.random_range(0..8) {
                0..=2 => {
                    let op = self.pick(&["+", "-", "*", "/", "%"]).to_string();
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Int, scope, b, depth),
                        self.expr(Ty::Int, scope, b, depth)
                    )
                }
                3 => format!("abs({})", self.expr(Ty::Int, scope, b, depth)),
                4 => format!("length({})", self.expr(Ty::Text, scope, b, depth)),
                5 => format!(
                    "extract(year FROM {})::int",
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
                6 => format!("CAST({} AS int)", self.expr(Ty::Float, scope, b, depth)),
                _ if depth < 2 => format!(
                    "(SELECT max(id) FROM t2 WHERE t2.i = {})",
                    self.expr(Ty::Int, scope, b, depth)
                ),
                _ => format!("(-{})", self.expr(Ty::Int, scope, b, depth)),
            },
            Ty::Float => match self.rng.random_range(0..5) {
                0..=1 => {
                    let op = self.pick(&["+", "-", "*", "/"]).to_string();
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Float, scope, b, depth),
                        self.expr(Ty::Float, scope, b, depth)
                    )
                }
                2 => format!("sqrt({})", self.expr(Ty::Float, scope, b, depth)),
                3 => format!("ln({})", self.expr(Ty::Float, scope, b, depth)),
                _ => format!(
                    "CAST({} AS double precision)",
                    self.expr(Ty::Int, scope, b, depth)
                ),
            },
            Ty::Numeric => match self.rng.random_range(0..4) {
                0..=1 => {
                    let op = self.pick(&["+", "-", "*", "/"]).to_string();
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Numeric, scope, b, depth),
                        self.expr(Ty::Numeric, scope, b, depth)
                    )
                }
                2 => format!("round({}, 1)", self.expr(Ty::Numeric, scope, b, depth)),
                _ => format!(
                    "CAST({} AS numeric(12,3))",
                    self.expr(Ty::Int, scope, b, depth)
                ),
            },
            Ty::Text => match self.rng.random_range(0..9) {
                0 => format!(
                    "({} || {})",
                    self.expr(Ty::Text, scope, b, depth),
                    self.expr(Ty::Text, scope, b, depth)
                ),
                1 => format!("upper({})", self.expr(Ty::Text, scope, b, depth)),
                2 => format!("substr({}, 2, 3)", self.expr(Ty::Text, scope, b, depth)),
                3 => format!("lpad({}, 6, '*')", self.expr(Ty::Text, scope, b, depth)),
                4 => format!("md5({})", self.expr(Ty::Text, scope, b, depth)),
                5 => format!("CAST({} AS text)", {
                    let any = *self.pick(&TYPES);
                    self.expr(any, scope, b, depth)
                }),
                6 => format!(
                    "to_char({}, 'YYYY-MM-DD HH24:MI')",
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
                7 => format!(
                    "split_part({}, ',', 1)",
                    self.expr(Ty::Text, scope, b, depth)
                ),
                _ => format!("repeat({}, 2)", self.expr(Ty::Text, scope, b, depth)),
            },
            Ty::Bool => match self.rng.random_range(0..9) {
                0..=2 => {
                    let operand = *self.pick(&[
                        Ty::Int,
                        Ty::Float,
                        Ty::Numeric,
                        Ty::Text,
                        Ty::Date,
                        Ty::Timestamp,
                    ]);
                    let op = self
                        .pick(&["=", "<>", "<", ">=", "IS DISTINCT FROM"])
                        .to_string();
                    format!(
                        "({} {op} {})",
                        self.expr(operand, scope, b, depth),
                        self.expr(operand, scope, b, depth)
                    )
                }
                3 => {
                    let op = self.pick(&["AND", "OR"]).to_string();
                    format!(
                        "({} {op} {})",
                        self.expr(Ty::Bool, scope, b, depth),
                        self.expr(Ty::Bool, scope, b, depth)
                    )
                }
                4 => format!("(NOT {})", self.expr(Ty::Bool, scope, b, depth)),
                5 => format!("({} IS NULL)", {
                    let any = *self.pick(&TYPES);
                    self.expr(any, scope, b, depth)
                }),
                6 => format!(
                    "({} LIKE '%{}%')",
                    self.expr(Ty::Text, scope, b, depth),
                    self.pick(&["a", "x", "_"])
                ),
                7 => format!(
                    "({} BETWEEN {} AND {})",
                    self.expr(Ty::Int, scope, b, depth),
                    self.literal(Ty::Int),
                    self.literal(Ty::Int)
                ),
                _ if depth < 2 => match self.rng.random_range(0..3) {
                    0 => format!("EXISTS ({})", self.query(depth + 1)),
                    1 => format!(
                        "({} IN (SELECT i FROM t2 WHERE t2.s <> {}))",
                        self.expr(Ty::Int, scope, b, depth),
                        self.literal(Ty::Text)
                    ),
                    _ => format!(
                        "({} NOT IN (SELECT i FROM t2))",
                        self.expr(Ty::Int, scope, b, depth)
                    ),
                },
                _ => format!("({} IN (1, 2, NULL))", self.expr(Ty::Int, scope, b, depth)),
            },
            Ty::Date => match self.rng.random_range(0..3) {
                0 => format!(
                    "({} + {})",
                    self.expr(Ty::Date, scope, b, depth),
                    self.expr(Ty::Int, scope, b, depth)
                ),
                1 => format!(
                    "CAST({} AS date)",
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
                _ => format!(
                    "CAST(date_trunc('month', {}) AS date)",
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
            },
            Ty::Timestamp => match self.rng.random_range(0..3) {
                0 => format!(
                    "({} + {})",
                    self.expr(Ty::Timestamp, scope, b, depth),
                    self.expr(Ty::Interval, scope, b, depth)
                ),
                1 => format!(
                    "date_trunc('day', {})",
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
                _ => format!(
                    "CAST({} AS timestamp)",
                    self.expr(Ty::Date, scope, b, depth)
                ),
            },
            Ty::Interval => match self.rng.random_range(0..3) {
                0 => format!("({} * 2)", self.expr(Ty::Interval, scope, b, depth)),
                1 => format!(
                    "({} - {})",
                    self.expr(Ty::Timestamp, scope, b, depth),
                    self.expr(Ty::Timestamp, scope, b, depth)
                ),
                _ => format!(
                    "({} + {})",
                    self.expr(Ty::Interval, scope, b, depth),
                    self.expr(Ty::Interval, scope, b, depth)
                ),
            },
        }
    }

    fn insert(&mut self) -> String {
        let (table, columns) = self.table();
        self.next_id += 1;
        let first = 1000 + self.next_id * 10;
        let rows: Vec<String> = (0..self.rng.random_range(1..=3))
            .map(|row| {
                let values: Vec<String> = columns
                    .iter()
                    .enumerate()
                    .map(|(i, (_, ty))| {
                        if i == 0 {
                            format!("{}", first + row)
                        } else {
                            self.literal(ty_of(ty))
                        }
                    })
                    .collect();
                format!("({})", values.join(", "))
            })
            .collect();
        let conflict = if self.chance(20) {
            " ON CONFLICT (id) DO NOTHING"
        } else {
            ""
        };
        format!("INSERT INTO {table} VALUES {}{conflict}", rows.join(", "))
    }

    fn update(&mut self) -> String {
        let (table, columns) = self.table();
        let scope = Self::scope_of(columns, "");
        let (column, ty) = columns[self.rng.random_range(1..columns.len())];
        let value = self.expr(ty_of(ty), &scope, 1, 1);
        let condition = self.expr(Ty::Bool, &scope, 2, 1);
        format!("UPDATE {table} SET {column} = {value} WHERE {condition}")
    }

    fn delete(&mut self) -> String {
        let (table, columns) = self.table();
        let scope = Self::scope_of(columns, "");
        let condition = self.expr(Ty::Bool, &scope, 2, 1);
        format!("DELETE FROM {table} WHERE id > 1000 AND {condition}")
    }

    fn create_view(&mut self) -> String {
        self.next_view += 1;
        let name = format!("rv{}", self.next_view);
        let materialized = if self.chance(70) { "MATERIALIZED " } else { "" };
        let query = self.query(0);
        self.views.push(name.clone());
        format!("CREATE {materialized}VIEW {name} AS {query}")
    }

    fn read_view(&mut self) -> String {
        if self.views.is_empty() {
            return "SELECT * FROM v1 ORDER BY 1".to_string();
        }
        let name = self.pick(&self.views.clone()).clone();
        format!("SELECT * FROM {name}")
    }

    fn drop_view(&mut self) -> String {
        if self.views.is_empty() {
            return "SELECT * FROM v2".to_string();
        }
        let index = self.rng.random_range(0..self.views.len());
        let name = self.views.swap_remove(index);
        format!("DROP VIEW IF EXISTS {name}; DROP MATERIALIZED VIEW IF EXISTS {name}")
    }
}

/// How many of the last statements a failure shows.
const RECENT_STATEMENTS: usize = 20;

/// The first panic in a server log, with the lines that follow it.
fn panic_in(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    match lines.iter().position(|line| line.contains("panicked")) {
        Some(at) => lines[at..(at + 12).min(lines.len())].join("\n"),
        None => "(no panic in the log)".to_string(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_statements_never_break_the_server() {
    let seconds: u64 = std::env::var("FLUXION_RANDOM_SQL_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(45);
    let seed: u64 = std::env::var("FLUXION_RANDOM_SQL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    eprintln!("random SQL: seed {seed} (FLUXION_RANDOM_SQL_SEED={seed} replays), {seconds} s");
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute(SCHEMA)
        .await
        .expect("the schema loads");
    client
        .batch_execute("SET statement_timeout = '2s'")
        .await
        .unwrap();
    let mut generator = Generator {
        rng: StdRng::seed_from_u64(seed),
        views: Vec::new(),
        next_view: 0,
        next_id: 0,
    };
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let (mut statements, mut succeeded) = (0u64, 0u64);
    let mut internal_errors = Vec::new();
    let mut recent: Vec<String> = Vec::new();
    while Instant::now() < deadline {
        let sql = generator.statement();
        statements += 1;
        if recent.len() == RECENT_STATEMENTS {
            recent.remove(0);
        }
        recent.push(sql.clone());
        match client.simple_query(&sql).await {
            Ok(_) => succeeded += 1,
            Err(error) => {
                let Some(db) = error.as_db_error() else {
                    panic!(
                        "seed {seed}: the connection broke on statement {statements}: {error}\n{sql}\n\
                         --- the statements before it ---\n{}\n--- the server's panic ---\n{}",
                        recent.join("\n"),
                        panic_in(&server.log_tail(100_000))
                    );
                };
                if db.code().code() == "XX000" {
                    internal_errors.push(format!("{}\n  {sql}", db.message()));
                }
            }
        }
    }
    eprintln!("random SQL: {statements} statements, {succeeded} succeeded");
    assert!(
        internal_errors.is_empty(),
        "seed {seed}: {} internal errors (XX000):\n{}",
        internal_errors.len(),
        internal_errors.join("\n")
    );
    let log = server.log_tail(100_000);
    assert!(
        !log.contains("panicked"),
        "seed {seed}: the server panicked:\n{}",
        panic_in(&log)
    );
    let again = server.connect().await;
    assert_eq!(
        support::query::rows(&again, "SELECT 1").await,
        ["1"],
        "the server still answers"
    );
    assert!(statements > 100, "only {statements} statements ran");
}
