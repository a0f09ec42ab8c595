//! Lowering joins: every DataFusion join type onto [`JoinKind`]s, swapping sides for the
//! right-hand variants (mark joins, from `EXISTS`/`IN` inside `OR`, are in `mark_join`).

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::common::{DFSchema, ExprSchema, JoinType, NullEquality};
use datafusion::logical_expr::utils::split_conjunction;
use datafusion::logical_expr::{Expr, ExprSchemable, Join, LogicalPlan};

use super::{arrow_schema, Lowerer};
use crate::lookup_joins::is_lookup_marker;
use crate::SqlError;
use plan::{JoinKind, Plan, ScalarExpr};

impl Lowerer<'_> {
    pub(super) fn lower_join(&self, join: &Join) -> Result<Plan, SqlError> {
        let (kind, swap) = match join.join_type {
            JoinType::Inner => (JoinKind::Inner, false),
            JoinType::Left => (JoinKind::LeftOuter, false),
            JoinType::Right => (JoinKind::RightOuter, false),
            JoinType::Full => (JoinKind::FullOuter, false),
            JoinType::LeftSemi => (JoinKind::LeftSemi, false),
            JoinType::RightSemi => (JoinKind::LeftSemi, true),
            JoinType::LeftAnti if join.null_aware => (JoinKind::LeftAntiNullAware, false),
            JoinType::LeftAnti => (JoinKind::LeftAnti, false),
            JoinType::RightAnti => (JoinKind::LeftAnti, true),
            JoinType::LeftMark | JoinType::RightMark => return self.lower_mark_join(join),
        };
        if kind == JoinKind::LeftAntiNullAware && (join.filter.is_some() || join.on.len() > 1) {
            return Err(SqlError::not_incremental(
                "correlated NOT IN",
                "use NOT EXISTS, which has no NULL surprises",
            ));
        }
        let (left, right) = if swap {
            (&join.right, &join.left)
        } else {
            (&join.left, &join.right)
        };
        let (left_exprs, right_exprs): (Vec<Expr>, Vec<Expr>) = join
            .on
            .iter()
            .map(|(l, r)| {
                if swap {
                    (r.clone(), l.clone())
                } else {
                    (l.clone(), r.clone())
                }
            })
            .unzip();
        let keys = self.join_keys(left, right, left_exprs, right_exprs)?;
        if let Some(kind) = lookup_join(join)? {
            return Ok(Plan::LookupJoin {
                left: Box::new(self.lower(left)?),
                right: Box::new(self.lower(right)?),
                kind,
                left_key: keys.left,
                right_key: keys.right,
                key_schema: keys.schema,
                schema: arrow_schema(&join.schema),
            });
        }
        let pair_schema: DFSchema = left.schema().join(right.schema())?;
        let filter = join
            .filter
            .as_ref()
            .map(|f| self.physical(f, &pair_schema))
            .transpose()?;
        Ok(Plan::Join {
            left: Box::new(self.lower(left)?),
            right: Box::new(self.lower(right)?),
            kind,
            left_key: keys.left,
            right_key: keys.right,
            key_schema: keys.schema,
            filter,
            nulls_equal: join.null_equality == NullEquality::NullEqualsNull,
            schema: arrow_schema(&join.schema),
        })
    }

    /// The key expressions `left_exprs = right_exprs` compiled over each side, the right
    /// ones cast to the left ones' types.
    pub(super) fn join_keys(
        &self,
        left: &LogicalPlan,
        right: &LogicalPlan,
        left_exprs: Vec<Expr>,
        right_exprs: Vec<Expr>,
    ) -> Result<JoinKeys, SqlError> {
        let left_schema = left.schema();
        let right_schema = right.schema();
        let key_fields = left_exprs
            .iter()
            .enumerate()
            .map(|(i, e)| {
                let data_type = e.get_type(left_schema.as_ref())?;
                Ok(Field::new(format!("key{i}"), data_type, true))
            })
            .collect::<Result<Vec<_>, datafusion::error::DataFusionError>>()?;
        // Right keys are compared as the left keys' types.
        let right_exprs = right_exprs
            .into_iter()
            .zip(&key_fields)
            .map(|(e, field)| {
                if &e.get_type(right_schema.as_ref() as &dyn ExprSchema)? == field.data_type() {
                    Ok(e)
                } else {
                    e.cast_to(field.data_type(), right_schema.as_ref())
                }
            })
            .collect::<Result<Vec<_>, datafusion::error::DataFusionError>>()?;
        Ok(JoinKeys {
            left: self.physical_all(&left_exprs, left_schema)?,
            right: self.physical_all(&right_exprs, right_schema)?,
            schema: Arc::new(Schema::new(key_fields)),
        })
    }
}

/// For a lookup join (see [`crate::lookup_joins`]), its kind; `None` for other joins.
fn lookup_join(join: &Join) -> Result<Option<JoinKind>, SqlError> {
    let Some(filter) = &join.filter else {
        return Ok(None);
    };
    let conjuncts = split_conjunction(filter);
    if !conjuncts.iter().any(|c| is_lookup_marker(c)) {
        return Ok(None);
    }
    let not_understood = |why: &str| {
        SqlError::not_incremental(
            "this FOR SYSTEM_TIME AS OF PROCTIME() join",
            why.to_string(),
        )
    };
    if conjuncts.len() > 1 || join.on.is_empty() {
        return Err(not_understood("it must look rows up by equalities only"));
    }
    match join.join_type {
        JoinType::Inner => Ok(Some(JoinKind::Inner)),
        JoinType::Left => Ok(Some(JoinKind::LeftOuter)),
        // What an inner lookup becomes when no column of the looked-up side is used.
        JoinType::LeftSemi => Ok(Some(JoinKind::LeftSemi)),
        _ => Err(not_understood("only JOIN and LEFT JOIN look rows up")),
    }
}

/// A join's key expressions over each side, and the schema of the keys they make.
pub(super) struct JoinKeys {
    pub left: Vec<ScalarExpr>,
    pub right: Vec<ScalarExpr>,
    pub schema: SchemaRef,
}
