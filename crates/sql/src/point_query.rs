//! Point queries: a SELECT of one relation whose WHERE clause pins the whole key of one of its
//! arrangements (`SELECT price FROM items WHERE id = 7`, and the reads behind `UPDATE … WHERE
//! id = 7` and `DELETE … WHERE id = 7`), run without DataFusion's optimizer and physical
//! planner.
//!
//! Such a query reads the rows of one key, filters them and computes its select list: planning
//! it the general way costs a hundred times more than running it. Here the plan is analyzed
//! (type coercion and Fluxion's own analyzer rules, exactly as for any query), its shape
//! matched (a projection of a filter of one scan, with no subquery, aggregate or window
//! anywhere), and its expressions simplified (as the optimizer would: some functions exist
//! only as rewrites) and turned into DataFusion physical expressions evaluated over the
//! looked-up rows: the same expressions, with the same semantics, the general path would run.
//! Any other plan, or one whose analysis fails, is left to the general path.
//!
//! A prepared statement's point query is analyzed and matched once, with its `$n` parameters
//! in it ([`PointQueryTemplate`]); each execution puts its values in, finds the key and makes
//! the physical expressions.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::config::ConfigOptions;
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{DFSchema, DFSchemaRef, ScalarValue};
use datafusion::datasource::source_as_provider;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::execution_props::ExecutionProps;
use datafusion::logical_expr::expr::Placeholder;
use datafusion::logical_expr::physical_planning_context::PhysicalPlanningContext;
use datafusion::logical_expr::{Expr, LogicalPlan, Projection};
use datafusion::optimizer::simplify_expressions::{ExprSimplifier, SimplifyContext};
use datafusion::physical_expr::{create_physical_expr, PhysicalExpr};

use repr::GlobalId;

use crate::catalog::{as_relation, KeyLookup, SnapshotContext, SnapshotReader};

/// A query that reads the rows of one key of one relation, ready to run.
#[derive(Debug)]
pub struct PointQuery {
    /// The relation read (a [`crate::catalog::RelationTable`]).
    relation: Arc<dyn TableProvider>,
    lookup: KeyLookup,
    predicate: Arc<dyn PhysicalExpr>,
    select_list: Vec<Arc<dyn PhysicalExpr>>,
    schema: SchemaRef,
}

/// A point query planned with its `$n` parameters in it: the generic plan of a prepared
/// statement, analyzed and matched once and made a [`PointQuery`] for each execution's
/// values.
#[derive(Debug)]
pub struct PointQueryTemplate {
    relation: Arc<dyn TableProvider>,
    predicate: Expr,
    select_list: Vec<Expr>,
    input_schema: DFSchemaRef,
    output: DFSchemaRef,
    /// The options the plan was analyzed with, for simplifying and evaluating expressions.
    config: Arc<ConfigOptions>,
}

impl PointQuery {
    /// `plan` as a point query, if it is one (`None`: plan and run it the general way).
    pub fn from_plan(state: &SessionState, plan: &LogicalPlan) -> Option<PointQuery> {
        PointQueryTemplate::from_plan(state, plan)?.instantiate(&[], state.execution_props())
    }

    /// The catalog id of the relation read.
    pub fn relation_id(&self) -> Option<GlobalId> {
        as_relation(self.relation.as_ref()).map(|relation| relation.id)
    }

    /// Reads the key's rows through the query's snapshot (the state's [`SnapshotContext`])
    /// and computes the result: its schema and rows.
    pub async fn execute(&self, state: &SessionState) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let reader = state
            .config()
            .get_extension::<SnapshotContext>()
            .ok_or_else(|| DataFusionError::Plan("no snapshot to read a point query in".into()))?;
        self.read(reader.0.as_ref()).await
    }

    /// Reads the key's rows through `reader` and computes the result: its schema and rows.
    pub async fn read(&self, reader: &dyn SnapshotReader) -> Result<(SchemaRef, Vec<RecordBatch>)> {
        let relation = as_relation(self.relation.as_ref())
            .ok_or_else(|| DataFusionError::Internal("a point query lost its relation".into()))?;
        let rows = reader.read(relation, Some(self.lookup.clone())).await?;
        let rows = concat_batches(&self.relation.schema(), &rows)?;
        let matches = self
            .predicate
            .evaluate(&rows)?
            .into_array(rows.num_rows())?;
        let rows = filter_record_batch(&rows, matches.as_boolean())?;
        let columns = self
            .select_list
            .iter()
            .map(|expr| expr.evaluate(&rows)?.into_array(rows.num_rows()))
            .collect::<Result<Vec<_>>>()?;
        let options = RecordBatchOptions::new().with_row_count(Some(rows.num_rows()));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), columns, &options)?;
        Ok((self.schema.clone(), vec![batch]))
    }
}

impl PointQueryTemplate {
    /// `plan`, which may have `$n` placeholders, as a point query, if it is one.
    pub fn from_plan(state: &SessionState, plan: &LogicalPlan) -> Option<PointQueryTemplate> {
        if !matches!(plan, LogicalPlan::Projection(_)) {
            return None;
        }
        let analyzed = state
            .analyzer()
            .execute_and_check(plan.clone(), state.config_options(), |_, _| {})
            .ok()?;
        let LogicalPlan::Projection(Projection {
            expr: select_list,
            input,
            schema: output,
            ..
        }) = analyzed
        else {
            return None;
        };
        let LogicalPlan::Filter(filter) = Arc::unwrap_or_clone(input) else {
            return None;
        };
        let relation = scanned_relation(&filter.input)?;
        if !select_list
            .iter()
            .chain(std::iter::once(&filter.predicate))
            .all(is_row_expression)
        {
            return None;
        }
        Some(PointQueryTemplate {
            relation,
            predicate: filter.predicate,
            select_list,
            input_schema: filter.input.schema().clone(),
            output,
            config: state.config_options().clone(),
        })
    }

    /// The point query with `parameters` in place of its placeholders (`$1` is the first),
    /// starting now; `None` if a parameter is missing or of another type than the plan gave
    /// its placeholder, or if the values pin no key.
    pub fn bind(&self, parameters: &[ScalarValue]) -> Option<PointQuery> {
        let mut props = ExecutionProps::new();
        props.mark_start_execution(self.config.clone());
        self.instantiate(parameters, &props)
    }

    fn instantiate(
        &self,
        parameters: &[ScalarValue],
        props: &ExecutionProps,
    ) -> Option<PointQuery> {
        let predicate = with_parameters(&self.predicate, parameters)?;
        let lookup =
            as_relation(self.relation.as_ref())?.lookup_for(std::slice::from_ref(&predicate))?;
        let expressions = PhysicalRowExpressions::new(&self.input_schema, &self.config, props);
        let physical = |expr: Expr| expressions.physical(expr).ok();
        let predicate = physical(predicate)?;
        let select_list = self
            .select_list
            .iter()
            .map(|expr| physical(with_parameters(expr, parameters)?))
            .collect::<Option<Vec<_>>>()?;
        let schema = result_schema(&select_list, &self.input_schema, &self.output)?;
        Some(PointQuery {
            relation: self.relation.clone(),
            lookup,
            predicate,
            select_list,
            schema,
        })
    }
}

/// Analyzed expressions over one schema made physical as the optimizer and the physical
/// planner would make them: simplified first (some functions exist only as rewrites).
pub(crate) struct PhysicalRowExpressions<'a> {
    simplifier: ExprSimplifier,
    schema: &'a DFSchemaRef,
    props: &'a ExecutionProps,
}

impl<'a> PhysicalRowExpressions<'a> {
    /// Expressions over `schema`, evaluated with `config` in a statement started as `props`
    /// says.
    pub(crate) fn new(
        schema: &'a DFSchemaRef,
        config: &Arc<ConfigOptions>,
        props: &'a ExecutionProps,
    ) -> Self {
        let simplifier = ExprSimplifier::new(
            SimplifyContext::builder()
                .with_schema(schema.clone())
                .with_config_options(config.clone())
                .with_query_execution_start_time(props.query_execution_start_time)
                .build(),
        );
        PhysicalRowExpressions {
            simplifier,
            schema,
            props,
        }
    }

    /// `expr` simplified and made physical.
    pub(crate) fn physical(&self, expr: Expr) -> Result<Arc<dyn PhysicalExpr>> {
        create_physical_expr(
            &self.simplifier.simplify(expr)?,
            self.schema,
            self.props,
            &PhysicalPlanningContext::default(),
        )
    }
}

/// `expr` with each `$n` placeholder replaced by `parameters[n - 1]`; `None` if there is no
/// such parameter or its type is not the placeholder's.
pub(crate) fn with_parameters(expr: &Expr, parameters: &[ScalarValue]) -> Option<Expr> {
    expr.clone()
        .transform(|expr| {
            let Expr::Placeholder(Placeholder { id, field }) = &expr else {
                return Ok(Transformed::no(expr));
            };
            let value = id
                .strip_prefix('$')
                .and_then(|n| n.parse::<usize>().ok())
                .and_then(|n| parameters.get(n.checked_sub(1)?))
                .filter(|value| field.as_ref().map(|f| f.data_type()) == Some(&value.data_type()))
                .ok_or_else(|| DataFusionError::Plan(format!("no value for {id}")))?;
            Ok(Transformed::yes(Expr::Literal(value.clone(), None)))
        })
        .ok()
        .map(|transformed| transformed.data)
}

/// The relation a plan scans whole, unfiltered, possibly under an alias.
fn scanned_relation(plan: &LogicalPlan) -> Option<Arc<dyn TableProvider>> {
    match plan {
        LogicalPlan::SubqueryAlias(alias) => scanned_relation(&alias.input),
        LogicalPlan::TableScan(scan)
            if scan.projection.is_none() && scan.filters.is_empty() && scan.fetch.is_none() =>
        {
            let provider = source_as_provider(&scan.source).ok()?;
            as_relation(provider.as_ref())?;
            Some(provider)
        }
        _ => None,
    }
}

/// Whether `expr` is computed from one row (and parameters) alone: no subquery, aggregate,
/// window, unnest or lambda anywhere in it.
pub(crate) fn is_row_expression(expr: &Expr) -> bool {
    !expr
        .exists(|e| {
            Ok(matches!(
                e,
                Expr::ScalarSubquery(_)
                    | Expr::Exists(_)
                    | Expr::InSubquery(_)
                    | Expr::SetComparison(_)
                    | Expr::OuterReferenceColumn(..)
                    | Expr::AggregateFunction(_)
                    | Expr::WindowFunction(_)
                    | Expr::GroupingSet(_)
                    | Expr::Unnest(_)
                    | Expr::HigherOrderFunction(_)
                    | Expr::Lambda(_)
                    | Expr::LambdaVariable(_)
            ))
        })
        .unwrap_or(true)
}

/// The result's schema as the general path's projection would make it: each column the
/// type (and metadata) its expression returns, named as the plan names it. `None` if a type
/// differs from the one the plan expects.
fn result_schema(
    select_list: &[Arc<dyn PhysicalExpr>],
    input: &DFSchema,
    output: &DFSchema,
) -> Option<SchemaRef> {
    let input = input.as_arrow();
    let fields = select_list
        .iter()
        .zip(output.fields())
        .map(|(expr, planned)| {
            let field = expr.return_field(input).ok()?;
            (field.data_type() == planned.data_type())
                .then(|| Field::clone(&field).with_name(planned.name()))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Arc::new(Schema::new_with_metadata(
        fields,
        output.as_arrow().metadata().clone(),
    )))
}
