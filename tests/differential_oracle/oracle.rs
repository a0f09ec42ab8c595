//! The oracle: DataFusion batch execution over in-memory tables holding the model's rows.
//!
//! It plans with the same Postgres-like settings Fluxion uses (so both sides agree on types and
//! name resolution) but shares nothing else with the engine: the rows come from the test's
//! model, and the result is computed from scratch every time.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use datafusion::arrow::datatypes::{
    DataType, Decimal128Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    SchemaRef, TimeUnit, TimestampMicrosecondType, TimestampMillisecondType,
    TimestampNanosecondType, TimestampSecondType, UInt64Type,
};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::config::Dialect;
use datafusion::datasource::{MemTable, TableType};
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{SessionConfig, SessionContext};

use super::compare::{Cell, ColumnKind, ResultSet};
use super::model::{timestamp_text, Table};

/// A DataFusion session over the model's tables, and views over them.
pub struct Oracle {
    context: SessionContext,
    /// The registered tables by name, whose rows [`Oracle::load`] replaces.
    tables: Mutex<HashMap<String, Arc<ModelTable>>>,
}

impl Oracle {
    /// A session configured like Fluxion's planner (Postgres dialect, identifiers folded to
    /// lower case, strings as Utf8, UTC).
    pub fn new() -> Self {
        let mut config = SessionConfig::new()
            .with_target_partitions(1)
            .with_information_schema(false);
        let options = config.options_mut();
        options.sql_parser.dialect = Dialect::PostgreSQL;
        options.sql_parser.map_string_types_to_utf8view = false;
        options.sql_parser.enable_ident_normalization = true;
        options.execution.time_zone = Some("+00:00".to_string());
        Self {
            context: SessionContext::new_with_config(config),
            tables: Mutex::new(HashMap::new()),
        }
    }

    /// Makes the oracle's tables hold the model's current rows (registering new tables).
    pub fn load(&self, tables: &[Table]) {
        let mut registered = self.tables.lock().unwrap();
        for table in tables {
            match registered.get(&table.name) {
                Some(provider) => *provider.batch.write().unwrap() = table.record_batch(),
                None => {
                    let provider = Arc::new(ModelTable {
                        schema: table.arrow_schema(),
                        batch: RwLock::new(table.record_batch()),
                    });
                    self.context
                        .register_table(table.name.as_str(), provider.clone())
                        .expect("registering a table cannot fail");
                    registered.insert(table.name.clone(), provider);
                }
            }
        }
    }

    /// Defines a (non-materialized) view: queries naming it recompute it from the tables.
    pub async fn create_view(&self, name: &str, sql: &str) -> Result<(), String> {
        self.context
            .sql(&format!("CREATE VIEW {name} AS {sql}"))
            .await
            .map_err(|e| e.to_string())?
            .collect()
            .await
            .map(|_| ())
            .map_err(|e| e.to_string())
    }

    /// Forgets `views` and `tables`.
    pub fn unload(&self, views: &[String], tables: &[Table]) {
        let mut registered = self.tables.lock().unwrap();
        for name in views {
            let _ = self.context.deregister_table(name.as_str());
        }
        for table in tables {
            let _ = self.context.deregister_table(table.name.as_str());
            registered.remove(&table.name);
        }
    }

    /// Runs `sql` from scratch; the error text if DataFusion rejects or fails it.
    pub async fn run(&self, sql: &str) -> Result<ResultSet, String> {
        let frame = self.context.sql(sql).await.map_err(|e| e.to_string())?;
        let schema = frame.schema().inner().clone();
        let batches = frame.collect().await.map_err(|e| e.to_string())?;
        let columns: Vec<ColumnKind> = schema
            .fields()
            .iter()
            .map(|f| match f.data_type() {
                DataType::Float32 | DataType::Float64 => ColumnKind::Float,
                t if t.is_integer() || matches!(t, DataType::Decimal128(..)) => ColumnKind::Number,
                _ => ColumnKind::Text,
            })
            .collect();
        let mut rows = Vec::new();
        for batch in &batches {
            for row in 0..batch.num_rows() {
                rows.push(
                    batch
                        .columns()
                        .iter()
                        .map(|column| render(column, row))
                        .collect::<Result<Vec<Cell>, String>>()?,
                );
            }
        }
        Ok(ResultSet { columns, rows })
    }
}

/// A table whose rows are swapped in place, so views defined over it see the latest rows.
#[derive(Debug)]
struct ModelTable {
    schema: SchemaRef,
    batch: RwLock<RecordBatch>,
}

#[async_trait::async_trait]
impl TableProvider for ModelTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> datafusion::error::Result<Arc<dyn ExecutionPlan>> {
        let batch = self.batch.read().unwrap().clone();
        MemTable::try_new(self.schema.clone(), vec![vec![batch]])?
            .scan(state, projection, filters, limit)
            .await
    }
}

/// One value in Postgres's text format, as Fluxion sends it.
fn render(array: &ArrayRef, row: usize) -> Result<Cell, String> {
    if array.is_null(row) {
        return Ok(None);
    }
    let text = match array.data_type() {
        DataType::Boolean => if array.as_boolean().value(row) {
            "t"
        } else {
            "f"
        }
        .to_string(),
        DataType::Int8 => array.as_primitive::<Int8Type>().value(row).to_string(),
        DataType::Int16 => array.as_primitive::<Int16Type>().value(row).to_string(),
        DataType::Int32 => array.as_primitive::<Int32Type>().value(row).to_string(),
        DataType::Int64 => array.as_primitive::<Int64Type>().value(row).to_string(),
        DataType::UInt64 => array.as_primitive::<UInt64Type>().value(row).to_string(),
        DataType::Float32 => array.as_primitive::<Float32Type>().value(row).to_string(),
        DataType::Float64 => array.as_primitive::<Float64Type>().value(row).to_string(),
        DataType::Decimal128(_, scale) => {
            decimal_text(array.as_primitive::<Decimal128Type>().value(row), *scale)
        }
        DataType::Utf8 => array.as_string::<i32>().value(row).to_string(),
        DataType::LargeUtf8 => array.as_string::<i64>().value(row).to_string(),
        DataType::Utf8View => array.as_string_view().value(row).to_string(),
        DataType::Timestamp(unit, None) => {
            let micros = match unit {
                TimeUnit::Second => {
                    array.as_primitive::<TimestampSecondType>().value(row) * 1_000_000
                }
                TimeUnit::Millisecond => {
                    array.as_primitive::<TimestampMillisecondType>().value(row) * 1_000
                }
                TimeUnit::Microsecond => {
                    array.as_primitive::<TimestampMicrosecondType>().value(row)
                }
                TimeUnit::Nanosecond => {
                    array.as_primitive::<TimestampNanosecondType>().value(row) / 1_000
                }
            };
            timestamp_text(micros)
        }
        other => return Err(format!("the oracle cannot render {other} values")),
    };
    Ok(Some(text))
}

/// `unscaled · 10^-scale` with exactly `scale` decimals, as Postgres prints numeric.
fn decimal_text(unscaled: i128, scale: i8) -> String {
    if scale <= 0 {
        return (unscaled * 10i128.pow(scale.unsigned_abs() as u32)).to_string();
    }
    let digits = unscaled.unsigned_abs().to_string();
    let scale = scale as usize;
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    let sign = if unscaled < 0 { "-" } else { "" };
    format!("{sign}{whole}.{fraction}")
}
