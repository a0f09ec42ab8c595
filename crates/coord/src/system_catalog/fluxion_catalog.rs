//! `fluxion_catalog`: relations describing the running system, built when a query reads them.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use compute::ComputeController;
use datafusion::arrow::array::{Int64Array, RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::Result as DfResult;

use crate::catalog::Catalog;

/// The relations of `fluxion_catalog` and their columns.
pub(crate) fn relations() -> Vec<(&'static str, SchemaRef)> {
    vec![("view_errors", view_errors_schema())]
}

/// `view_errors (view_name, rows_left_out, failures, last_error)`.
fn view_errors_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("view_name", DataType::Utf8, false),
        Field::new("rows_left_out", DataType::Int64, false),
        Field::new("failures", DataType::UInt64, false),
        Field::new("last_error", DataType::Utf8, false),
    ]))
}

/// The `fluxion_catalog` schema.
#[derive(Debug)]
pub(crate) struct SystemSchema {
    catalog: Arc<RwLock<Catalog>>,
    compute: Arc<ComputeController>,
}

impl SystemSchema {
    pub fn new(catalog: Arc<RwLock<Catalog>>, compute: Arc<ComputeController>) -> Self {
        Self { catalog, compute }
    }

    /// `view_errors (view_name, rows_left_out, failures, last_error)`: rows left out of
    /// materialized views because an expression failed on them (division by zero, a bad cast).
    fn view_errors(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = view_errors_schema();
        let errors = self.compute.errors().snapshot();
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let mut names = Vec::new();
        let mut rows = Vec::new();
        let mut failures = Vec::new();
        let mut messages = Vec::new();
        for (id, counts) in errors {
            let name = catalog.get(id).map(|i| i.name.clone());
            names.push(name.unwrap_or_else(|| id.to_string()));
            rows.push(counts.rows_left_out);
            failures.push(counts.failures);
            messages.push(counts.last_error);
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(names)),
                Arc::new(Int64Array::from(rows)),
                Arc::new(UInt64Array::from(failures)),
                Arc::new(StringArray::from(messages)),
            ],
        )?;
        Ok(Arc::new(MemTable::try_new(schema, vec![vec![batch]])?))
    }
}

#[async_trait]
impl SchemaProvider for SystemSchema {
    fn table_names(&self) -> Vec<String> {
        vec!["view_errors".to_string()]
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        match name {
            "view_errors" => self.view_errors().map(Some),
            _ => Ok(None),
        }
    }

    fn table_exist(&self, name: &str) -> bool {
        name == "view_errors"
    }
}
