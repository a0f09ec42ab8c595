//! Correlated subqueries that DataFusion cannot turn into joins, evaluated once per distinct
//! outer row (a nested-loop "apply").
//!
//! DataFusion decorrelates the common shapes (equality correlation in the subquery's filters
//! under an aggregate, EXISTS / IN with equality predicates) into joins. Others — an outer
//! column in the subquery's select list or aggregate, `unnest(outer.column)` in its FROM, a
//! correlation through `<>` — it cannot plan. This optimizer rule, for one-off reads only,
//! replaces such a subquery with a function of its outer columns that substitutes their values
//! into the subquery's plan and runs it. It runs twice: first (before DataFusion's
//! decorrelation) for subqueries whose outer columns appear outside filters, which
//! DataFusion would mis-decorrelate, and last for whatever DataFusion left. Catalog queries
//! are the typical case: small inputs, where a per-row evaluation costs microseconds.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use datafusion::arrow::array::{new_empty_array, RecordBatch};
use datafusion::arrow::datatypes::{DataType, FieldRef};
use datafusion::common::tree_node::{Transformed, TreeNode, TreeNodeRecursion};
use datafusion::common::{Column, ScalarValue};
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::session_state::SessionStateBuilder;
use datafusion::logical_expr::expr::{Exists, InSubquery};
use datafusion::logical_expr::expr_rewriter::NamePreserver;
use datafusion::logical_expr::{
    ColumnarValue, Expr, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
    Subquery, Volatility,
};
use datafusion::optimizer::{OptimizerConfig, OptimizerRule};

/// Which correlated subqueries a rule evaluates per row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ApplyScope {
    /// Those with outer columns outside the subquery's filters (DataFusion cannot
    /// decorrelate them); run before DataFusion's decorrelation.
    OuterColumnsOutsideFilters,
    /// All that are still correlated; run after DataFusion's decorrelation.
    Remaining,
}

/// How deeply correlated subqueries nest inside each other before a nested one is left to
/// DataFusion alone.
const MAX_NESTING: usize = 4;

/// The state to run `plan` once in: if `plan` has a subquery, `state` with the two rules of
/// this module around its optimizer rules, so that its correlated subqueries are evaluated per
/// row where DataFusion cannot decorrelate them; otherwise `state` itself (building a state
/// with other rules costs more than planning a point query).
pub fn state_for<'a>(state: &'a SessionState, plan: &LogicalPlan) -> Cow<'a, SessionState> {
    if has_subquery(plan) {
        Cow::Owned(with_rules(state.clone(), MAX_NESTING))
    } else {
        Cow::Borrowed(state)
    }
}

/// Whether `plan` has a subquery: as an expression or as a node (a lateral input).
fn has_subquery(plan: &LogicalPlan) -> bool {
    let mut found = false;
    let _ = plan.apply_with_subqueries(|node| {
        found = matches!(node, LogicalPlan::Subquery(_))
            || node.expressions().iter().any(|expr| {
                expr.exists(|e| {
                    Ok(matches!(
                        e,
                        Expr::ScalarSubquery(_) | Expr::Exists(_) | Expr::InSubquery(_)
                    ))
                })
                .unwrap_or(true)
            });
        Ok(if found {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    });
    found
}

fn with_rules(state: SessionState, nesting: usize) -> SessionState {
    let early: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(ApplyCorrelatedSubqueries {
        base: state.clone(),
        scope: ApplyScope::OuterColumnsOutsideFilters,
        nesting,
    });
    let late: Arc<dyn OptimizerRule + Send + Sync> = Arc::new(ApplyCorrelatedSubqueries {
        base: state.clone(),
        scope: ApplyScope::Remaining,
        nesting,
    });
    let mut rules = vec![early];
    rules.extend(state.optimizers().iter().cloned());
    rules.push(late);
    SessionStateBuilder::new_from_existing(state)
        .with_optimizer_rules(rules)
        .build()
}

/// The optimizer rule. Subqueries run in `base` (the query's state without these rules),
/// itself given the rules again for subqueries nested in them, `nesting` levels deep.
struct ApplyCorrelatedSubqueries {
    base: SessionState,
    scope: ApplyScope,
    nesting: usize,
}

impl ApplyCorrelatedSubqueries {
    /// The state the subqueries run in.
    fn subquery_state(&self) -> SessionState {
        match self.nesting {
            0 | 1 => self.base.clone(),
            n => with_rules(self.base.clone(), n - 1),
        }
    }

    /// Whether this rule takes `subquery`.
    fn takes(&self, subquery: &Subquery, kind: ApplyKind) -> bool {
        if subquery.outer_ref_columns.is_empty() {
            // DataFusion runs uncorrelated scalar subqueries itself; EXISTS and IN it only
            // turns into joins in filters, and leaves the rest (in a select list) to this rule.
            return self.scope == ApplyScope::Remaining && kind != ApplyKind::Scalar;
        }
        match self.scope {
            ApplyScope::Remaining => true,
            ApplyScope::OuterColumnsOutsideFilters => {
                has_outer_columns_outside_filters(&subquery.subquery)
            }
        }
    }
}

/// Whether DataFusion's decorrelation cannot handle `plan`'s outer columns: they appear
/// outside filter predicates, or in a filter it cannot pull up to the subquery's top (one
/// below a derived table, a join, a union …).
fn has_outer_columns_outside_filters(plan: &LogicalPlan) -> bool {
    fn visit(node: &LogicalPlan, below_barrier: bool) -> bool {
        let pull_up_reachable = !below_barrier && matches!(node, LogicalPlan::Filter(_));
        let mut outer_here = false;
        let _ = node.apply_expressions(|expr| {
            outer_here |= expr.contains_outer();
            Ok(if outer_here {
                TreeNodeRecursion::Stop
            } else {
                TreeNodeRecursion::Continue
            })
        });
        if outer_here && !pull_up_reachable {
            return true;
        }
        let barrier = below_barrier
            || !matches!(
                node,
                LogicalPlan::Projection(_)
                    | LogicalPlan::Filter(_)
                    | LogicalPlan::Aggregate(_)
                    | LogicalPlan::Sort(_)
                    | LogicalPlan::Limit(_)
            );
        node.inputs().into_iter().any(|input| visit(input, barrier))
    }
    visit(plan, false)
}

impl fmt::Debug for ApplyCorrelatedSubqueries {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApplyCorrelatedSubqueries")
    }
}

impl OptimizerRule for ApplyCorrelatedSubqueries {
    fn name(&self) -> &str {
        match self.scope {
            ApplyScope::OuterColumnsOutsideFilters => "apply_undecorrelatable_subqueries",
            ApplyScope::Remaining => "apply_remaining_correlated_subqueries",
        }
    }

    fn supports_rewrite(&self) -> bool {
        true
    }

    fn rewrite(
        &self,
        plan: LogicalPlan,
        _config: &dyn OptimizerConfig,
    ) -> Result<Transformed<LogicalPlan>> {
        plan.transform_up(|node| {
            let names = NamePreserver::new(&node);
            node.map_expressions(|expr| {
                let name = names.save(&expr);
                let rewritten = expr.transform_up(|e| self.replace(e))?;
                Ok(rewritten.update_data(|e| name.restore(e)))
            })
        })
    }
}

impl ApplyCorrelatedSubqueries {
    fn replace(&self, expr: Expr) -> Result<Transformed<Expr>> {
        let (kind, subquery, probe) = match expr {
            Expr::ScalarSubquery(subquery) if self.takes(&subquery, ApplyKind::Scalar) => {
                (ApplyKind::Scalar, subquery, None)
            }
            Expr::Exists(Exists { subquery, negated })
                if self.takes(&subquery, ApplyKind::Exists { negated }) =>
            {
                (ApplyKind::Exists { negated }, subquery, None)
            }
            Expr::InSubquery(InSubquery {
                expr,
                subquery,
                negated,
            }) if self.takes(&subquery, ApplyKind::In { negated }) => {
                (ApplyKind::In { negated }, subquery, Some(*expr))
            }
            other => return Ok(Transformed::no(other)),
        };
        let function = CorrelatedSubquery::new(kind, &subquery, self.subquery_state())?;
        let mut args: Vec<Expr> = probe.into_iter().collect();
        args.extend(function.outer.iter().map(|(c, _)| Expr::Column(c.clone())));
        Ok(Transformed::yes(ScalarUDF::from(function).call(args)))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum ApplyKind {
    Scalar,
    Exists { negated: bool },
    In { negated: bool },
}

/// One correlated subquery, as a function of its outer columns (and, for IN, of the probed
/// value first).
struct CorrelatedSubquery {
    kind: ApplyKind,
    plan: Arc<LogicalPlan>,
    outer: Vec<(Column, FieldRef)>,
    return_type: DataType,
    state: SessionState,
    signature: Signature,
}

impl CorrelatedSubquery {
    fn new(kind: ApplyKind, subquery: &Subquery, state: SessionState) -> Result<Self> {
        let mut outer = Vec::new();
        for column in &subquery.outer_ref_columns {
            if let Expr::OuterReferenceColumn(field, column) = column {
                if !outer.iter().any(|(c, _): &(Column, FieldRef)| c == column) {
                    outer.push((column.clone(), field.clone()));
                }
            }
        }
        let return_type = match kind {
            ApplyKind::Scalar => subquery.subquery.schema().field(0).data_type().clone(),
            _ => DataType::Boolean,
        };
        Ok(Self {
            kind,
            plan: subquery.subquery.clone(),
            outer,
            return_type,
            state,
            signature: Signature::variadic_any(Volatility::Volatile),
        })
    }

    /// The subquery with the outer columns replaced by `values`.
    fn bound_plan(&self, values: &[ScalarValue]) -> Result<LogicalPlan> {
        let bindings: HashMap<&Column, &ScalarValue> =
            self.outer.iter().map(|(c, _)| c).zip(values).collect();
        // A subquery node among the plan's inputs (DataFusion's lateral input) is plain input
        // once bound. (Subquery expressions keep theirs: only their outer columns change.)
        let plan = self
            .plan
            .as_ref()
            .clone()
            .transform_up(|node| match node {
                LogicalPlan::Subquery(subquery) => {
                    Ok(Transformed::yes(Arc::unwrap_or_clone(subquery.subquery)))
                }
                other => Ok(Transformed::no(other)),
            })?
            .data;
        plan.transform_up_with_subqueries(|node| {
            node.map_expressions(|expr| {
                expr.transform(|e| match &e {
                    Expr::OuterReferenceColumn(field, column) => match bindings.get(column) {
                        Some(value) => Ok(Transformed::yes(Expr::Literal(
                            value.cast_to(field.data_type())?,
                            None,
                        ))),
                        None => Ok(Transformed::no(e)),
                    },
                    _ => Ok(Transformed::no(e)),
                })
            })
        })
        .map(|t| t.data)
    }

    /// Runs the subquery for `values` and collects its rows.
    async fn run(&self, values: &[ScalarValue]) -> Result<Vec<RecordBatch>> {
        let plan = self.state.optimize(&self.bound_plan(values)?)?;
        let physical = self.state.create_physical_plan(&plan).await?;
        datafusion::physical_plan::collect(physical, self.state.task_ctx()).await
    }

    /// The first column of the subquery's rows for one outer row.
    async fn rows(&self, values: &[ScalarValue]) -> Result<Vec<ScalarValue>> {
        let batches = self.run(values).await?;
        let mut column = Vec::new();
        for batch in &batches {
            for row in 0..batch.num_rows() {
                column.push(ScalarValue::try_from_array(batch.column(0), row)?);
            }
        }
        Ok(column)
    }

    /// The subquery's value given its rows (`probe` is the IN operand).
    fn evaluate(&self, probe: Option<&ScalarValue>, column: &[ScalarValue]) -> Result<ScalarValue> {
        Ok(match self.kind {
            ApplyKind::Scalar => match column.len() {
                0 => ScalarValue::try_from(&self.return_type)?,
                1 => column[0].clone(),
                _ => {
                    return Err(DataFusionError::Execution(
                        "more than one row returned by a subquery used as an expression".into(),
                    ))
                }
            },
            ApplyKind::Exists { negated } => {
                ScalarValue::Boolean(Some(column.is_empty() == negated))
            }
            ApplyKind::In { negated } => {
                let probe = probe.cloned().unwrap_or(ScalarValue::Null);
                let found = if column.is_empty() {
                    Some(false)
                } else if probe.is_null() {
                    None
                } else if column.iter().any(|v| v == &probe || cast_equal(v, &probe)) {
                    Some(true)
                } else if column.iter().any(ScalarValue::is_null) {
                    None
                } else {
                    Some(false)
                };
                ScalarValue::Boolean(found.map(|f| f != negated))
            }
        })
    }
}

/// Whether two values are equal once `b` takes `a`'s type.
fn cast_equal(a: &ScalarValue, b: &ScalarValue) -> bool {
    b.cast_to(&a.data_type()).is_ok_and(|b| &b == a)
}

impl fmt::Debug for CorrelatedSubquery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CorrelatedSubquery")
            .field("kind", &self.kind)
            .field("outer", &self.outer)
            .finish_non_exhaustive()
    }
}

impl PartialEq for CorrelatedSubquery {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.plan, &other.plan) && self.kind == other.kind
    }
}

impl Eq for CorrelatedSubquery {}

impl Hash for CorrelatedSubquery {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.kind.hash(state);
        Arc::as_ptr(&self.plan).hash(state);
    }
}

impl ScalarUDFImpl for CorrelatedSubquery {
    fn name(&self) -> &str {
        "__correlated_subquery"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(self.return_type.clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.number_rows;
        if rows == 0 {
            return Ok(ColumnarValue::Array(new_empty_array(&self.return_type)));
        }
        let arrays = args
            .args
            .iter()
            .map(|a| a.to_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let probe_columns = usize::from(matches!(self.kind, ApplyKind::In { .. }));
        let mut keys = Vec::with_capacity(rows);
        for row in 0..rows {
            let key = arrays
                .iter()
                .map(|a| ScalarValue::try_from_array(a, row))
                .collect::<Result<Vec<_>>>()?;
            keys.push(key);
        }
        // The subqueries run on a thread of their own with its own runtime: this function is
        // called synchronously from inside the outer query's execution.
        let results = std::thread::scope(|scope| {
            scope
                .spawn(|| -> Result<Vec<ScalarValue>> {
                    let runtime = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .map_err(|e| DataFusionError::External(Box::new(e)))?;
                    runtime.block_on(async {
                        // The subquery runs once per distinct outer row.
                        let mut rows: HashMap<Vec<ScalarValue>, Vec<ScalarValue>> = HashMap::new();
                        let mut results = Vec::with_capacity(keys.len());
                        for key in &keys {
                            let (probe, outer) = key.split_at(probe_columns);
                            if !rows.contains_key(outer) {
                                rows.insert(outer.to_vec(), self.rows(outer).await?);
                            }
                            results.push(self.evaluate(probe.first(), &rows[outer])?);
                        }
                        Ok(results)
                    })
                })
                .join()
                .map_err(|_| DataFusionError::Internal("a correlated subquery panicked".into()))?
        })?;
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(results)?))
    }
}
