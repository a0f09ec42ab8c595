//! The SQL front end as a fuzz target: statement text parsed, each query planned, and each
//! view prepared, planned and lowered into a dataflow plan, as the coordinator does, over a
//! catalog of two tables.

use std::sync::{Arc, OnceLock};

use arrow::datatypes::{DataType, Field, Schema, TimeUnit};
use datafusion::catalog::{
    CatalogProvider, MemoryCatalogProvider, MemorySchemaProvider, SchemaProvider,
};
use datafusion::execution::SessionState;
use futures::executor::block_on;
use repr::{GlobalId, RelationDesc};
use sql::catalog::RelationTable;
use sql::session::{new_state, DEFAULT_SCHEMA};
use sql::{PlanContext, Statement};

/// Plans the statements of `text` (if it is UTF-8 and parses) on a thread with the stack a
/// statement thread has; returns whether it parsed.
pub(crate) fn plan_text(text: &[u8]) -> bool {
    let Ok(text) = std::str::from_utf8(text) else {
        return false;
    };
    let text = text.to_owned();
    std::thread::Builder::new()
        .stack_size(sql::STATEMENT_STACK_BYTES)
        .spawn(move || plan_statements(&text))
        .expect("a statement thread")
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

fn plan_statements(text: &str) -> bool {
    let Ok(statements) = sql::parse(text) else {
        return false;
    };
    let state = planning_state();
    let search_path = [DEFAULT_SCHEMA.to_owned()];
    let ctx = PlanContext::new(state, &search_path);
    for statement in statements {
        match statement {
            Statement::Select(query) => {
                let _ = block_on(query.plan(&ctx));
            }
            Statement::CreateView(mut view) => {
                if view.prepare(&ctx).is_err() {
                    continue;
                }
                let prepared = PlanContext::new(state, &[]);
                if let Ok(plan) = block_on(view.plan(&prepared)) {
                    let _ = sql::lower(state, &plan);
                }
            }
            _ => {}
        }
    }
    true
}

/// A session whose `public` schema holds `t` and `u`, built once.
fn planning_state() -> &'static SessionState {
    static STATE: OnceLock<SessionState> = OnceLock::new();
    STATE.get_or_init(|| {
        let schema = MemorySchemaProvider::new();
        let tables = [
            (
                "t",
                vec![
                    Field::new("a", DataType::Int32, true),
                    Field::new("b", DataType::Utf8, true),
                    Field::new("c", DataType::Float64, true),
                    Field::new("d", DataType::Timestamp(TimeUnit::Microsecond, None), true),
                    Field::new("e", DataType::Decimal128(10, 2), true),
                ],
            ),
            (
                "u",
                vec![
                    Field::new("a", DataType::Int64, false),
                    Field::new("g", DataType::Utf8, true),
                    Field::new("h", DataType::Boolean, true),
                ],
            ),
        ];
        for (id, (name, fields)) in tables.into_iter().enumerate() {
            let desc = RelationDesc::new(Arc::new(Schema::new(fields)));
            let table = RelationTable::new(GlobalId(id as u64 + 1), name.to_owned(), desc);
            schema
                .register_table(name.to_owned(), Arc::new(table))
                .expect("a new table name");
        }
        let catalog = MemoryCatalogProvider::new();
        catalog
            .register_schema(DEFAULT_SCHEMA, Arc::new(schema))
            .expect("a new schema");
        new_state(Arc::new(catalog))
    })
}

/// Queries and views over `t` and `u` that reach deep into planning and lowering, and the
/// statements of the SQL logic tests.
pub(crate) fn seeds() -> Vec<Vec<u8>> {
    let mut seeds: Vec<String> = [
        "SELECT a, count(*), sum(c) FROM t WHERE b LIKE 'x%' GROUP BY a HAVING count(*) > 1 ORDER BY 2 DESC LIMIT 3",
        "CREATE MATERIALIZED VIEW v AS SELECT t.a, max(u.g) FROM t JOIN u ON t.a = u.a GROUP BY t.a",
        "CREATE VIEW w AS SELECT a, row_number() OVER (PARTITION BY b ORDER BY c) AS n FROM t",
        "CREATE MATERIALIZED VIEW r AS WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 5) SELECT * FROM r",
        "SELECT * FROM t WHERE a IN (SELECT a FROM u) OR EXISTS (SELECT 1 FROM u WHERE u.a = t.a)",
        "CREATE VIEW s AS SELECT (SELECT count(*) FROM u WHERE u.a < t.a), b || 'x', c::text, d + interval '1 day' FROM t",
        "CREATE MATERIALIZED VIEW x AS SELECT window_start, count(*) FROM TUMBLE(t, d, INTERVAL '1 minute') GROUP BY window_start",
        "CREATE VIEW y AS SELECT a FROM t INTERSECT ALL SELECT a FROM u EXCEPT SELECT 1",
        "CREATE VIEW l AS SELECT * FROM t, LATERAL (SELECT * FROM u WHERE u.a = t.a ORDER BY u.a LIMIT 2) l",
        "SELECT CASE WHEN h THEN -a ELSE a % 7 END, coalesce(g, 'none'), e * 2.5, date_trunc('hour', d) FROM u, t",
    ]
    .map(str::to_owned)
    .to_vec();
    let tests = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sql-tests");
    let files = std::fs::read_dir(tests).into_iter().flatten().flatten();
    for file in files {
        if let Ok(text) = std::fs::read_to_string(file.path()) {
            seeds.extend(logic_test_statements(&text));
        }
    }
    seeds.into_iter().map(String::into_bytes).collect()
}

/// The SQL of each `statement` and `query` record of a sqllogictest file.
fn logic_test_statements(text: &str) -> Vec<String> {
    let mut statements = Vec::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        if !(line.starts_with("statement ") || line.starts_with("query ")) {
            continue;
        }
        let sql: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.trim().is_empty() && *l != "----")
            .collect();
        statements.push(sql.join("\n"));
    }
    statements
}
