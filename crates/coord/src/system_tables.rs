//! `fluxion_catalog`: relations describing the running system, built when a query reads them.

use std::sync::{Arc, RwLock};

use async_trait::async_trait;
use compute::ComputeController;
use datafusion::arrow::array::{RecordBatch, StringArray, UInt64Array};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::catalog::{SchemaProvider, TableProvider};
use datafusion::datasource::MemTable;
use datafusion::error::Result as DfResult;

use crate::catalog::Catalog;

/// The schema name of the system relations.
pub(crate) const SYSTEM_SCHEMA: &str = "fluxion_catalog";

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

    /// `view_errors (view_name, failed_rows, last_error)`: rows left out of materialized
    /// views because an expression failed on them (division by zero, a bad cast).
    fn view_errors(&self) -> DfResult<Arc<dyn TableProvider>> {
        let schema = Arc::new(Schema::new(vec![
            Field::new("view_name", DataType::Utf8, false),
            Field::new("failed_rows", DataType::UInt64, false),
            Field::new("last_error", DataType::Utf8, false),
        ]));
        let errors = self.compute.errors().snapshot();
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let (mut names, mut counts, mut messages) = (Vec::new(), Vec::new(), Vec::new());
        for (id, counts_of_view) in errors {
            names.push(
                catalog
                    .get(id)
                    .map(|i| i.name.clone())
                    .unwrap_or_else(|| id.to_string()),
            );
            counts.push(counts_of_view.failed_rows);
            messages.push(counts_of_view.last_error);
        }
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                Arc::new(StringArray::from(names)),
                Arc::new(UInt64Array::from(counts)),
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
