//! The system schemas as DataFusion sees them: `pg_catalog` and `information_schema`, whose
//! relations build their rows when scanned, and `fluxion_catalog`.

use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::catalog::SchemaProvider;
use datafusion::catalog::{Session, TableProvider};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::Expr;
use datafusion::physical_plan::ExecutionPlan;

use crate::catalog_input::CatalogReader;
use crate::column_types::{relation_def, relation_schema};
use crate::fluxion_catalog::FluxionCatalog;
use crate::pg15_relations::{relations, RelationDef};
use crate::session::SessionInfo;
use crate::snapshot::CatalogSnapshot;
use crate::status::SystemStatus;
use crate::{information_schema, pg_catalog, rows, INFORMATION_SCHEMA, PG_CATALOG, SYSTEM_SCHEMA};

/// The read-only system schemas, by name.
#[derive(Debug)]
pub struct SystemSchemas {
    schemas: Vec<(&'static str, Arc<dyn SchemaProvider>)>,
}

impl SystemSchemas {
    /// The system schemas of the catalog `catalog` gives, in a system whose live state
    /// `status` gives.
    pub fn new(catalog: Arc<dyn CatalogReader>, status: Arc<dyn SystemStatus>) -> Self {
        let pg_catalog = SystemRelations {
            schema: PG_CATALOG,
            catalog: catalog.clone(),
            rows_of: pg_catalog::rows_of,
        };
        let information_schema = SystemRelations {
            schema: INFORMATION_SCHEMA,
            catalog: catalog.clone(),
            rows_of: information_schema::rows_of,
        };
        Self {
            schemas: vec![
                (
                    SYSTEM_SCHEMA,
                    Arc::new(FluxionCatalog::new(catalog, status)),
                ),
                (PG_CATALOG, Arc::new(pg_catalog)),
                (INFORMATION_SCHEMA, Arc::new(information_schema)),
            ],
        }
    }

    /// The names of the system schemas.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.schemas.iter().map(|(name, _)| *name)
    }

    /// The system schema called `name`.
    pub fn get(&self, name: &str) -> Option<Arc<dyn SchemaProvider>> {
        self.schemas
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, schema)| schema.clone())
    }
}

/// Builds the rows of one system relation at scan time.
pub(crate) type RowsFn = fn(&CatalogSnapshot, &SessionInfo) -> DfResult<RecordBatch>;

/// A system relation whose rows are built from the catalog each time a query scans it.
struct SystemRelation {
    def: &'static RelationDef,
    schema: SchemaRef,
    kind: TableType,
    catalog: Arc<dyn CatalogReader>,
    /// Builds the rows; `None` for a relation that is always empty.
    rows: Option<RowsFn>,
}

impl std::fmt::Debug for SystemRelation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SystemRelation")
            .field("relation", &self.def.name)
            .finish_non_exhaustive()
    }
}

#[async_trait]
impl TableProvider for SystemRelation {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        self.kind
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        _filters: &[Expr],
        _limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let session = state
            .config()
            .get_extension::<SessionInfo>()
            .map(|info| info.as_ref().clone())
            .unwrap_or_default();
        let batch = match self.rows {
            Some(rows) => rows(&CatalogSnapshot::of(&self.catalog.catalog()), &session)?,
            None => rows::empty_batch(self.def)?,
        };
        Ok(MemorySourceConfig::try_new_exec(
            &[vec![batch]],
            self.schema.clone(),
            projection.cloned(),
        )?)
    }
}

/// A schema of system relations, each built by a [`RowsFn`].
#[derive(Debug)]
struct SystemRelations {
    schema: &'static str,
    catalog: Arc<dyn CatalogReader>,
    rows_of: fn(&str) -> Option<RowsFn>,
}

#[async_trait]
impl SchemaProvider for SystemRelations {
    fn table_names(&self) -> Vec<String> {
        relations()
            .iter()
            .filter(|r| r.schema == self.schema)
            .map(|r| r.name.to_string())
            .collect()
    }

    async fn table(&self, name: &str) -> DfResult<Option<Arc<dyn TableProvider>>> {
        let Some(def) = relation_def(self.schema, name) else {
            return Ok(None);
        };
        let kind = if def.kind == 'v' {
            TableType::View
        } else {
            TableType::Base
        };
        Ok(Some(Arc::new(SystemRelation {
            def,
            schema: relation_schema(def),
            kind,
            catalog: self.catalog.clone(),
            rows: (self.rows_of)(name),
        })))
    }

    fn table_exist(&self, name: &str) -> bool {
        relation_def(self.schema, name).is_some()
    }
}
