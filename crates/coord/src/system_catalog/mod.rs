//! The system catalogs: `pg_catalog` and `information_schema` as PostgreSQL 15 has them, and
//! `fluxion_catalog`, Fluxion's own relations about the running system.
//!
//! Every relation has exactly PostgreSQL 15's columns ([`pg15_relations`], generated from a
//! real PostgreSQL 15). Rows are built when a query scans a relation, from a
//! [`snapshot::CatalogSnapshot`] of Fluxion's catalog and the querying session's
//! [`SessionInfo`], so catalog queries run as ordinary DataFusion queries over real relations,
//! never as rewrites of a client's SQL text. Built-in rows (types, functions, operators …)
//! come from PostgreSQL 15 itself ([`builtin_rows`]).

mod builtin_functions;
mod builtin_rows;
mod column_types;
mod definitions;
mod fluxion_catalog;
mod information_schema;
mod pg15_relations;
mod pg_catalog;
mod rows;
mod snapshot;
mod types;

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

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

use crate::catalog::{read, Catalog};

pub(crate) use builtin_functions::{
    builtin_function_name, builtin_function_named, builtin_function_types,
};
pub(crate) use builtin_rows::keyword_rows;
pub(crate) use column_types::relation_def;
pub(crate) use definitions::{constraint_definition, index_column_definition};
pub(crate) use fluxion_catalog::{relations as fluxion_catalog_relations, SystemSchema};
pub(crate) use pg_catalog::OWNER;
pub(crate) use rows::Value;
pub(crate) use snapshot::{CatalogSnapshot, PG_CLASS_OID, PG_NAMESPACE_OID};
pub(crate) use types::{format_type, type_info, type_oid_by_name};

/// The schema of Fluxion's own system relations.
pub(crate) const SYSTEM_SCHEMA: &str = "fluxion_catalog";
/// PostgreSQL's catalog schema.
pub(crate) const PG_CATALOG: &str = "pg_catalog";
/// The SQL standard's catalog schema.
pub(crate) const INFORMATION_SCHEMA: &str = "information_schema";

/// Whether `name` is one of the read-only system schemas.
pub(crate) fn is_system_schema(name: &str) -> bool {
    matches!(
        name,
        SYSTEM_SCHEMA | PG_CATALOG | INFORMATION_SCHEMA | "pg_toast"
    )
}

/// What the catalogs need to know about the session that queries them.
#[derive(Clone, Debug, Default)]
pub(crate) struct SessionInfo {
    /// The user the session authenticated as.
    pub user: String,
    /// The schemas of the search path, in order (existing or not).
    pub search_path: Vec<String>,
    /// The session's settings (`SHOW`), by lower-case name.
    pub settings: BTreeMap<String, String>,
    /// The backend's process id as the client knows it (BackendKeyData).
    pub backend_pid: i32,
    /// Settings changed by `set_config` during the query, to apply to the session after it.
    pub changed_settings: Arc<std::sync::Mutex<Vec<(String, String)>>>,
}

impl SessionInfo {
    /// The schemas `current_schemas(include_implicit)` lists: those of the search path that
    /// exist, after `pg_catalog` when `include_implicit`.
    pub fn current_schemas(&self, catalog: &Catalog, include_implicit: bool) -> Vec<String> {
        let mut schemas: Vec<String> = Vec::new();
        if include_implicit && !self.search_path.iter().any(|s| s == PG_CATALOG) {
            schemas.push(PG_CATALOG.to_string());
        }
        for schema in &self.search_path {
            let exists = catalog.has_schema(schema) || is_system_schema(schema);
            if exists && !schemas.contains(schema) {
                schemas.push(schema.clone());
            }
        }
        schemas
    }

    /// The value of a setting, as `current_setting` returns it.
    pub fn setting(&self, name: &str) -> Option<String> {
        let name = name.to_lowercase();
        if let Some((_, value)) = self
            .changed_settings
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .rev()
            .find(|(n, _)| *n == name)
        {
            return Some(value.clone());
        }
        self.settings
            .get(&name)
            .cloned()
            .or_else(|| pg_catalog::static_setting(&name).map(str::to_string))
    }
}

/// Builds the rows of one system relation at scan time.
type RowsFn = fn(&CatalogSnapshot, &SessionInfo) -> DfResult<RecordBatch>;

/// A system relation whose rows are built from the catalog each time a query scans it.
struct SystemRelation {
    def: &'static pg15_relations::RelationDef,
    schema: SchemaRef,
    kind: TableType,
    catalog: Arc<RwLock<Catalog>>,
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
            Some(rows) => rows(&CatalogSnapshot::of(&read(&self.catalog)), &session)?,
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
    catalog: Arc<RwLock<Catalog>>,
    rows_of: fn(&str) -> Option<RowsFn>,
}

#[async_trait]
impl SchemaProvider for SystemRelations {
    fn table_names(&self) -> Vec<String> {
        pg15_relations::relations()
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
            schema: column_types::relation_schema(def),
            kind,
            catalog: self.catalog.clone(),
            rows: (self.rows_of)(name),
        })))
    }

    fn table_exist(&self, name: &str) -> bool {
        relation_def(self.schema, name).is_some()
    }
}

/// The `pg_catalog` schema.
pub(crate) fn pg_catalog_schema(catalog: Arc<RwLock<Catalog>>) -> Arc<dyn SchemaProvider> {
    Arc::new(SystemRelations {
        schema: PG_CATALOG,
        catalog,
        rows_of: pg_catalog::rows_of,
    })
}

/// The `information_schema` schema.
pub(crate) fn information_schema(catalog: Arc<RwLock<Catalog>>) -> Arc<dyn SchemaProvider> {
    Arc::new(SystemRelations {
        schema: INFORMATION_SCHEMA,
        catalog,
        rows_of: information_schema::rows_of,
    })
}
