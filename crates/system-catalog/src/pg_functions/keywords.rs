//! `pg_get_keywords()`: PostgreSQL 15's SQL keywords, as a table function (DBeaver and psql's
//! tab completion read it).

use std::sync::Arc;

use datafusion::arrow::array::{BooleanArray, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::Result;

use crate::builtin_rows::keyword_rows;
use crate::rows::Value;

/// The `pg_get_keywords()` table function.
#[derive(Debug)]
pub(crate) struct KeywordsFunction;

impl TableFunctionImpl for KeywordsFunction {
    fn call_with_args(&self, _args: TableFunctionArgs) -> Result<Arc<dyn TableProvider>> {
        let text = |name: &str| Field::new(name, DataType::Utf8, true);
        let schema = Arc::new(Schema::new(vec![
            text("word"),
            text("catcode"),
            Field::new("barelabel", DataType::Boolean, true),
            text("catdesc"),
            text("baredesc"),
        ]));
        let rows = keyword_rows();
        let column = |i: usize| -> StringArray {
            rows.iter()
                .map(|row| match &row[i] {
                    Value::Text(t) => Some(t.as_str()),
                    _ => None,
                })
                .collect()
        };
        let bare: BooleanArray = rows
            .iter()
            .map(|row| match row[2] {
                Value::Bool(b) => Some(b),
                _ => None,
            })
            .collect();
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(column(0)),
                Arc::new(column(1)),
                Arc::new(bare),
                Arc::new(column(3)),
                Arc::new(column(4)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}
