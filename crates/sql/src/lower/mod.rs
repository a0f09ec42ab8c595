//! Lowering: DataFusion's optimized `LogicalPlan` into a dataflow [`Plan`].
//!
//! Each logical operator maps onto incremental operators whose results, at every time, equal
//! what the logical operator would compute from scratch over the inputs at that time. Scalar
//! expressions are compiled once here into DataFusion physical expressions against the
//! schema of the rows they will see. Anything without an incremental counterpart is refused
//! with an error naming the construct, never recomputed silently.

mod aggregate;
mod asof;
mod join;
mod mark_join;
mod projections;
mod recursive;
mod session;
mod single_values;
mod sort;
mod window;

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::common::{DFSchema, DFSchemaRef};
use datafusion::datasource::source_as_provider;
use datafusion::execution::context::SessionState;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{
    Distinct, Expr, Filter, LogicalPlan, Projection, TableScan, Unnest,
};
use repr::RowCodec;

use crate::catalog::as_relation;
use crate::SqlError;
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::Operator;
use plan::{ClockComparison, Plan, ScalarExpr, TemporalBound};

use crate::temporal_filters::{clock_comparison, reads_clock};

/// Functions whose value depends on when they run: a view using them cannot be maintained by
/// reacting to changes of its inputs alone.
const TIME_DEPENDENT_FUNCTIONS: &[&str] = &[
    "now",
    "current_timestamp",
    "current_date",
    "current_time",
    "localtimestamp",
    "localtime",
    "random",
    "uuid",
    "mz_now",
];

/// Lowers an analyzed (not yet optimized) logical plan: it is checked for constructs that
/// cannot be maintained, optimized by `state`, and lowered.
pub fn lower(state: &SessionState, plan: &LogicalPlan) -> Result<Plan, SqlError> {
    let plan = crate::temporal_filters::mark_clock_in_filters(plan.clone())?;
    reject_time_dependent_functions(&plan)?;
    mark_join::reject_three_valued_in(&plan)?;
    crate::processing_time::check_append_only_inputs(&plan)?;
    let optimized = single_values::checked_where_used(state.optimize(&plan)?)?;
    Lowerer { state }.lower(&optimized)
}

fn reject_time_dependent_functions(plan: &LogicalPlan) -> Result<(), SqlError> {
    let mut found = None;
    plan.apply_with_subqueries(|node| {
        node.apply_expressions(|expr| {
            expr.apply(|e| {
                if let Expr::ScalarFunction(ScalarFunction { func, .. }) = e {
                    if TIME_DEPENDENT_FUNCTIONS.contains(&func.name()) {
                        found = Some(func.name().to_string());
                        return Ok(TreeNodeRecursion::Stop);
                    }
                }
                Ok(TreeNodeRecursion::Continue)
            })
        })
    })?;
    match found {
        Some(name) => Err(SqlError::not_incremental(
            format!("{name}()"),
            "its value changes with the clock, not with the view's inputs",
        )),
        None => Ok(()),
    }
}

pub(crate) struct Lowerer<'a> {
    state: &'a SessionState,
}

impl Lowerer<'_> {
    fn lower(&self, plan: &LogicalPlan) -> Result<Plan, SqlError> {
        match plan {
            LogicalPlan::Projection(Projection {
                expr,
                input,
                schema,
                ..
            }) => {
                let (input_plan, predicate) = match input.as_ref() {
                    LogicalPlan::Filter(filter) if reads_clock(&filter.predicate) => (
                        self.lower_predicate(
                            self.lower_filtered(filter)?,
                            filter.input.schema(),
                            &filter.predicate,
                        )?,
                        None,
                    ),
                    LogicalPlan::Filter(filter) => (
                        self.lower_filtered(filter)?,
                        Some(self.physical(&filter.predicate, filter.input.schema())?),
                    ),
                    other => (self.lower(other)?, None),
                };
                let input_schema = match input.as_ref() {
                    LogicalPlan::Filter(filter) => filter.input.schema(),
                    other => other.schema(),
                };
                Ok(projections::map(
                    input_plan,
                    predicate,
                    self.physical_all(expr, input_schema)?,
                    arrow_schema(schema),
                ))
            }
            LogicalPlan::Filter(filter) => {
                let input = self.lower_filtered(filter)?;
                self.lower_predicate(input, filter.input.schema(), &filter.predicate)
            }
            LogicalPlan::TableScan(scan) => self.lower_scan(scan),
            LogicalPlan::SubqueryAlias(alias) => {
                let input = self.lower(&alias.input)?;
                Ok(with_schema(input, arrow_schema(&alias.schema)))
            }
            LogicalPlan::Repartition(repartition) => self.lower(&repartition.input),
            LogicalPlan::Join(join) => self.lower_join(join),
            LogicalPlan::Aggregate(aggregate) => self.lower_aggregate(aggregate),
            LogicalPlan::Distinct(Distinct::All(input)) => Ok(Plan::Distinct {
                input: Box::new(self.lower(input)?),
            }),
            LogicalPlan::Distinct(Distinct::On(_)) => Err(SqlError::not_incremental(
                "DISTINCT ON",
                "use ROW_NUMBER() or ORDER BY … LIMIT per group instead",
            )),
            LogicalPlan::Union(union) => Ok(Plan::Union {
                inputs: union
                    .inputs
                    .iter()
                    .map(|i| self.lower(i))
                    .collect::<Result<_, _>>()?,
                schema: arrow_schema(&union.schema),
            }),
            LogicalPlan::Sort(sort) => self.lower_sort(sort, 0, sort.fetch),
            LogicalPlan::Limit(limit) => self.lower_limit(limit),
            LogicalPlan::EmptyRelation(empty) => Ok(Plan::Constant {
                rows: if empty.produce_one_row {
                    vec![(repr::Row::default(), 1)]
                } else {
                    Vec::new()
                },
                schema: arrow_schema(&empty.schema),
            }),
            LogicalPlan::Values(values) => self.lower_values(&values.values, &values.schema),
            LogicalPlan::Window(window) => self.lower_window(window),
            LogicalPlan::Unnest(unnest) => self.lower_unnest(unnest),
            LogicalPlan::RecursiveQuery(query) => self.lower_recursive(query),
            LogicalPlan::Subquery(_) => Err(SqlError::not_incremental(
                "this subquery",
                "it could not be turned into a join",
            )),
            other => Err(SqlError::not_incremental(
                format!("{}", other.display()),
                "it is not a query over relations",
            )),
        }
    }

    /// UNNEST of one list column, one level deep (what a set-returning function in a select
    /// list, such as `unnest(generate_series(…))`, plans to).
    fn lower_unnest(&self, unnest: &Unnest) -> Result<Plan, SqlError> {
        let columns = unnest.input.schema().fields().len();
        let in_place = unnest.dependency_indices.iter().copied().eq(0..columns);
        match (
            unnest.list_type_columns.as_slice(),
            unnest.struct_type_columns.is_empty(),
        ) {
            ([(column, list)], true) if list.depth == 1 && in_place => Ok(Plan::Unnest {
                input: Box::new(self.lower(&unnest.input)?),
                column: *column,
                keep_null: unnest.options.preserve_nulls(),
                schema: arrow_schema(&unnest.schema),
            }),
            _ => Err(SqlError::not_incremental(
                "this UNNEST",
                "only one list, one level deep, is unnested incrementally",
            )),
        }
    }

    fn lower_scan(&self, scan: &TableScan) -> Result<Plan, SqlError> {
        let provider = source_as_provider(&scan.source)?;
        let full_schema = provider.schema();
        let mut plan = match crate::recursive_queries::working_table_of(scan) {
            Some(name) => Plan::RecursiveRef {
                name,
                schema: full_schema.clone(),
            },
            None => {
                let relation = as_relation(provider.as_ref()).ok_or_else(|| {
                    SqlError::not_incremental(
                        format!("relation \"{}\"", scan.table_name),
                        "it is not a table, source or materialized view",
                    )
                })?;
                Plan::Get {
                    id: relation.id,
                    schema: full_schema.clone(),
                }
            }
        };
        let full_df_schema =
            DFSchema::try_from_qualified_schema(scan.table_name.clone(), &full_schema)?;
        // The filters DataFusion pushed into the scan are ignored here: relations take them
        // as inexact (`catalog.rs`), so each stays in a Filter above the scan, lowered once.
        if let Some(projection) = &scan.projection {
            let columns = projection
                .iter()
                .map(|&i| Expr::Column(full_df_schema.columns()[i].clone()))
                .collect::<Vec<_>>();
            plan = projections::map(
                plan,
                None,
                self.physical_all(&columns, &full_df_schema)?,
                arrow_schema(&scan.projected_schema),
            );
        }
        let plan = with_schema(plan, arrow_schema(&scan.projected_schema));
        Ok(match scan.fetch {
            Some(limit) => Plan::TopK {
                input: Box::new(plan),
                group_by: Vec::new(),
                order_by: Vec::new(),
                offset: 0,
                limit: Some(limit),
            },
            None => plan,
        })
    }

    fn lower_values(&self, rows: &[Vec<Expr>], schema: &DFSchemaRef) -> Result<Plan, SqlError> {
        let arrow = arrow_schema(schema);
        let codec = RowCodec::new(arrow.clone())
            .map_err(|e| SqlError::Unsupported(format!("{e} is not supported")))?;
        let empty = DFSchema::empty();
        let one_row = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &datafusion::arrow::array::RecordBatchOptions::new().with_row_count(Some(1)),
        )
        .map_err(datafusion::error::DataFusionError::from)?;
        let mut encoded = Vec::with_capacity(rows.len());
        for row in rows {
            let columns = row
                .iter()
                .zip(arrow.fields())
                .map(|(expr, field)| {
                    let value = self
                        .physical(expr, &empty)?
                        .evaluate(&one_row)?
                        .into_array(1)?;
                    Ok(datafusion::arrow::compute::cast(&value, field.data_type())
                        .map_err(datafusion::error::DataFusionError::from)?)
                })
                .collect::<Result<Vec<ArrayRef>, SqlError>>()?;
            let row = codec
                .encode_columns(&columns, 1)
                .map_err(|e| SqlError::Unsupported(format!("{e} is not supported")))?;
            encoded.extend(row.into_iter().map(|r| (r, 1)));
        }
        Ok(Plan::Constant {
            rows: encoded,
            schema: arrow,
        })
    }

    /// `input` restricted to rows where `predicate` holds.
    fn filter(
        &self,
        input: Plan,
        schema: &DFSchema,
        predicate: ScalarExpr,
    ) -> Result<Plan, SqlError> {
        let identity = schema
            .columns()
            .into_iter()
            .map(Expr::Column)
            .collect::<Vec<_>>();
        Ok(Plan::Map {
            projection: self.physical_all(&identity, schema)?,
            schema: input.schema().clone(),
            input: Box::new(input),
            predicate: Some(predicate),
        })
    }

    /// `input` (rows of `schema`) filtered by `predicate`: the conjuncts that compare with the
    /// clock become a temporal filter over the others.
    /// The input of `filter`, its windows limited to the rows the filter keeps by row number.
    fn lower_filtered(&self, filter: &Filter) -> Result<Plan, SqlError> {
        let mut input = self.lower(&filter.input)?;
        window::limit_by_row_number(&mut input, &filter.predicate, filter.input.schema());
        Ok(input)
    }

    fn lower_predicate(
        &self,
        input: Plan,
        schema: &DFSchema,
        predicate: &Expr,
    ) -> Result<Plan, SqlError> {
        let (temporal, rest): (Vec<&Expr>, Vec<&Expr>) = split_conjunction(predicate)
            .into_iter()
            .partition(|c| reads_clock(c));
        let plan = match rest.into_iter().cloned().reduce(Expr::and) {
            Some(rest) => {
                let rest = self.physical(&rest, schema)?;
                self.filter(input, schema, rest)?
            }
            None => input,
        };
        if temporal.is_empty() {
            return Ok(plan);
        }
        let bounds = temporal
            .into_iter()
            .map(|conjunct| {
                let (expr, op) = clock_comparison(conjunct).ok_or_else(|| {
                    let shown = conjunct
                        .to_string()
                        .replace(&format!("{}()", crate::temporal_filters::CLOCK), "now()");
                    SqlError::not_incremental(
                        format!("the clock in {shown}"),
                        "a view compares now() with an expression of its rows only by <, <=, > \
                         or >=, as a conjunct of its WHERE",
                    )
                })?;
                let clock = match op {
                    Operator::Lt => ClockComparison::Before,
                    Operator::LtEq => ClockComparison::AtOrBefore,
                    Operator::Gt => ClockComparison::After,
                    _ => ClockComparison::AtOrAfter,
                };
                Ok(TemporalBound {
                    expr: self.physical(&expr, schema)?,
                    clock,
                })
            })
            .collect::<Result<Vec<_>, SqlError>>()?;
        Ok(Plan::TemporalFilter {
            input: Box::new(plan),
            bounds,
        })
    }

    /// Compiles `expr` against rows of `schema`.
    pub(crate) fn physical(&self, expr: &Expr, schema: &DFSchema) -> Result<ScalarExpr, SqlError> {
        Ok(self.state.create_physical_expr(expr.clone(), schema)?)
    }

    pub(crate) fn physical_all(
        &self,
        exprs: &[Expr],
        schema: &DFSchema,
    ) -> Result<Vec<ScalarExpr>, SqlError> {
        exprs.iter().map(|e| self.physical(e, schema)).collect()
    }
}

/// The Arrow schema of a DataFusion schema.
pub(crate) fn arrow_schema(schema: &DFSchemaRef) -> SchemaRef {
    schema.inner().clone()
}

/// The same rows under another schema (new names or qualifiers, same types).
fn with_schema(plan: Plan, schema: SchemaRef) -> Plan {
    match plan {
        Plan::Get { id, .. } => Plan::Get { id, schema },
        Plan::Constant { rows, .. } => Plan::Constant { rows, schema },
        Plan::Map {
            input,
            predicate,
            projection,
            ..
        } => Plan::Map {
            input,
            predicate,
            projection,
            schema,
        },
        Plan::Unnest {
            input,
            column,
            keep_null,
            ..
        } => Plan::Unnest {
            input,
            column,
            keep_null,
            schema,
        },
        Plan::Join {
            left,
            right,
            kind,
            left_key,
            right_key,
            key_schema,
            filter,
            nulls_equal,
            ..
        } => Plan::Join {
            left,
            right,
            kind,
            left_key,
            right_key,
            key_schema,
            filter,
            nulls_equal,
            schema,
        },
        Plan::Reduce {
            input,
            group_len,
            aggregates,
            is_global,
            ..
        } => Plan::Reduce {
            input,
            group_len,
            aggregates,
            is_global,
            schema,
        },
        Plan::Union { inputs, .. } => Plan::Union { inputs, schema },
        Plan::Recursive {
            name,
            base,
            step,
            distinct,
            ..
        } => Plan::Recursive {
            name,
            base,
            step,
            distinct,
            schema,
        },
        Plan::RecursiveRef { name, .. } => Plan::RecursiveRef { name, schema },
        mut join @ (Plan::AsOfJoin { .. } | Plan::LookupJoin { .. }) => {
            if let Plan::AsOfJoin { schema: old, .. } | Plan::LookupJoin { schema: old, .. } =
                &mut join
            {
                *old = schema;
            }
            join
        }
        Plan::Distinct { input } => Plan::Distinct {
            input: Box::new(with_schema(*input, schema)),
        },
        Plan::EmitOnWindowClose { input, closing } => Plan::EmitOnWindowClose {
            input: Box::new(with_schema(*input, schema)),
            closing,
        },
        Plan::ForgetClosed { input, closing } => Plan::ForgetClosed {
            input: Box::new(with_schema(*input, schema)),
            closing,
        },
        Plan::TemporalFilter { input, bounds } => Plan::TemporalFilter {
            input: Box::new(with_schema(*input, schema)),
            bounds,
        },
        Plan::Session {
            input,
            partition,
            time,
            gap,
            bounds,
            ..
        } => Plan::Session {
            input,
            partition,
            time,
            gap,
            bounds,
            schema,
        },
        Plan::TopK {
            input,
            group_by,
            order_by,
            offset,
            limit,
        } => Plan::TopK {
            input: Box::new(with_schema(*input, schema)),
            group_by,
            order_by,
            offset,
            limit,
        },
        Plan::Window {
            input,
            partition_by,
            order_by,
            functions,
            limit,
            ..
        } => Plan::Window {
            input,
            partition_by,
            order_by,
            functions,
            limit,
            schema,
        },
    }
}
