//! Catalog objects as DataFusion sees them.
//!
//! Every table, materialized view and index-backed object is a [`RelationTable`]: a schema
//! for planning, and a scan that reads a consistent snapshot through the [`SnapshotReader`]
//! the caller put into the session for this one query (so all relations of a query are read
//! at the same time). Equality filters on an arrangement's key columns turn a scan into a
//! point lookup.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::{Session, TableProvider};
use datafusion::common::{Constraint, Constraints, ScalarValue};
use datafusion::datasource::memory::MemorySourceConfig;
use datafusion::datasource::TableType;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{BinaryExpr, Expr, Operator, TableProviderFilterPushDown};
use datafusion::physical_plan::streaming::{PartitionStream, StreamingTableExec};
use datafusion::physical_plan::ExecutionPlan;
use repr::pg_type::{ATTNUM_KEY, TABLE_OID_KEY};
use repr::{GlobalId, RelationDesc};

/// An arrangement of a relation by some of its columns, usable for point lookups.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyedArrangement {
    /// The arrangement's id (the relation itself, or an index on it).
    pub arrangement: GlobalId,
    /// The relation's columns forming the key, in key order.
    pub columns: Vec<usize>,
}

/// A unique index of a table: no two of its rows may have the same key without a NULL in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UniqueKey {
    /// The index's arrangement, keyed by `columns`.
    pub index: GlobalId,
    /// The index's name, for the error that names it.
    pub name: String,
    /// The table's columns forming the key, in key order.
    pub columns: Vec<usize>,
}

/// A point lookup: the arrangement to search and the key values, in key order.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyLookup {
    /// Where to look.
    pub arrangement: KeyedArrangement,
    /// The key's values, cast to the key columns' types.
    pub values: Vec<ScalarValue>,
}

/// Reads snapshots of relations for one query, all at the same time.
#[async_trait]
pub trait SnapshotReader: Send + Sync + fmt::Debug {
    /// The rows of `relation`, or only those matching `lookup`.
    async fn read(
        &self,
        relation: &RelationTable,
        lookup: Option<KeyLookup>,
    ) -> Result<Vec<RecordBatch>>;

    /// All rows of `relation` as a stream read while the query runs, for a relation too
    /// large to collect first (`None`: use [`Self::read`]).
    fn scan_lazily(&self, relation: &RelationTable) -> Option<Arc<dyn PartitionStream>>;
}

/// The per-query session extension through which scans reach a [`SnapshotReader`].
#[derive(Debug)]
pub struct SnapshotContext(pub Arc<dyn SnapshotReader>);

/// A table, materialized view or source as a DataFusion table.
#[derive(Debug)]
pub struct RelationTable {
    /// The catalog id; also the id of the relation's primary arrangement.
    pub id: GlobalId,
    /// The qualified name, for messages.
    pub name: String,
    /// Columns and primary key.
    pub desc: RelationDesc,
    /// Arrangements that can answer point lookups.
    pub lookups: Vec<KeyedArrangement>,
    /// The unique indexes every write is checked against.
    pub unique_keys: Vec<UniqueKey>,
    /// The column of its `WATERMARK`: its rows' event time (sources and tables that declare
    /// one).
    pub event_time: Option<String>,
    /// Rows are only ever appended to it (a source without a key: a stream).
    pub append_only: bool,
    /// Column defaults for INSERT.
    pub defaults: HashMap<String, Expr>,
    constraints: Constraints,
    /// The schema DataFusion plans with: every column nullable. NOT NULL is enforced when
    /// rows are written, with Postgres's error; DataFusion would reject NULLs earlier with
    /// an error naming its own intermediate columns.
    planning_schema: SchemaRef,
}

impl RelationTable {
    /// A relation with the given description.
    pub fn new(id: GlobalId, name: String, desc: RelationDesc) -> Self {
        let constraints = match &desc.primary_key {
            Some(key) => Constraints::new_unverified(vec![Constraint::PrimaryKey(key.clone())]),
            None => Constraints::default(),
        };
        let planning_schema = Arc::new(datafusion::arrow::datatypes::Schema::new_with_metadata(
            desc.schema
                .fields()
                .iter()
                .map(|f| f.as_ref().clone().with_nullable(true))
                .collect::<Vec<_>>(),
            desc.schema.metadata().clone(),
        ));
        Self {
            id,
            name,
            desc,
            lookups: Vec::new(),
            unique_keys: Vec::new(),
            event_time: None,
            append_only: false,
            defaults: HashMap::new(),
            constraints,
            planning_schema,
        }
    }

    /// The relation, its columns marked as coming from the relation with oid `table_oid`
    /// (so result columns that are plain column references say so to clients).
    pub fn with_origin(mut self, table_oid: u32) -> Self {
        let fields: Vec<Field> = self
            .planning_schema
            .fields()
            .iter()
            .enumerate()
            .map(|(i, f)| {
                let mut metadata = f.metadata().clone();
                metadata.insert(TABLE_OID_KEY.to_string(), table_oid.to_string());
                metadata.insert(ATTNUM_KEY.to_string(), (i + 1).to_string());
                f.as_ref().clone().with_metadata(metadata)
            })
            .collect();
        self.planning_schema = Arc::new(Schema::new_with_metadata(
            fields,
            self.planning_schema.metadata().clone(),
        ));
        self
    }

    /// The lookup that equality `filters` allow, if any arrangement's whole key is pinned.
    pub fn lookup_for(&self, filters: &[Expr]) -> Option<KeyLookup> {
        let pinned = pinned_columns(filters, &self.desc.schema);
        self.lookups.iter().find_map(|arrangement| {
            let values = arrangement
                .columns
                .iter()
                .map(|c| {
                    let value = pinned.get(c)?;
                    value.cast_to(self.desc.schema.field(*c).data_type()).ok()
                })
                .collect::<Option<Vec<_>>>()?;
            Some(KeyLookup {
                arrangement: arrangement.clone(),
                values,
            })
        })
    }
}

/// Columns that `column = literal` filters pin to a value.
fn pinned_columns(filters: &[Expr], schema: &SchemaRef) -> HashMap<usize, ScalarValue> {
    let mut pinned = HashMap::new();
    for filter in filters {
        collect_pins(filter, schema, &mut pinned);
    }
    pinned
}

fn collect_pins(filter: &Expr, schema: &SchemaRef, pinned: &mut HashMap<usize, ScalarValue>) {
    let Expr::BinaryExpr(BinaryExpr { left, op, right }) = filter else {
        return;
    };
    match op {
        Operator::And => {
            collect_pins(left, schema, pinned);
            collect_pins(right, schema, pinned);
        }
        Operator::Eq => {
            let (column, value) = match (strip_cast(left), strip_cast(right)) {
                (Expr::Column(c), Expr::Literal(v, _)) | (Expr::Literal(v, _), Expr::Column(c)) => {
                    (c, v)
                }
                _ => return,
            };
            if value.is_null() {
                return;
            }
            if let Ok(index) = schema.index_of(&column.name) {
                pinned.insert(index, value.clone());
            }
        }
        _ => {}
    }
}

fn strip_cast(expr: &Expr) -> &Expr {
    match expr {
        Expr::Cast(cast) => strip_cast(&cast.expr),
        other => other,
    }
}

#[async_trait]
impl TableProvider for RelationTable {
    fn schema(&self) -> SchemaRef {
        self.planning_schema.clone()
    }

    fn constraints(&self) -> Option<&Constraints> {
        Some(&self.constraints)
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn get_column_default(&self, column: &str) -> Option<&Expr> {
        self.defaults.get(column)
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> Result<Vec<TableProviderFilterPushDown>> {
        Ok(vec![TableProviderFilterPushDown::Inexact; filters.len()])
    }

    async fn scan(
        &self,
        state: &dyn Session,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        _limit: Option<usize>,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let reader = state
            .config()
            .get_extension::<SnapshotContext>()
            .ok_or_else(|| {
                DataFusionError::Plan(format!("relation \"{}\" cannot be read here", self.name))
            })?;
        let lookup = self.lookup_for(filters);
        if let Some(partition) = lookup
            .is_none()
            .then(|| reader.0.scan_lazily(self))
            .flatten()
        {
            return Ok(Arc::new(StreamingTableExec::try_new(
                self.planning_schema.clone(),
                vec![partition],
                projection,
                [],
                false,
                None,
            )?));
        }
        let batches = reader
            .0
            .read(self, lookup)
            .await?
            .into_iter()
            .map(|b| b.with_schema(self.planning_schema.clone()))
            .collect::<std::result::Result<Vec<_>, _>>()?;
        Ok(MemorySourceConfig::try_new_exec(
            &[batches],
            self.planning_schema.clone(),
            projection.cloned(),
        )?)
    }
}

/// The [`RelationTable`] behind a DataFusion table provider, if it is one.
pub fn as_relation(provider: &dyn TableProvider) -> Option<&RelationTable> {
    let any: &dyn Any = provider;
    any.downcast_ref::<RelationTable>()
}
