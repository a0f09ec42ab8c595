//! Lowering ORDER BY … LIMIT / OFFSET into top-k. A view's rows have no order, so an ORDER BY
//! without a limit lowers to its input.

use datafusion::common::DFSchema;
use datafusion::logical_expr::{Expr, Limit, LogicalPlan, Sort};

use super::Lowerer;
use crate::SqlError;
use plan::{Plan, SortColumn};

impl Lowerer<'_> {
    pub(super) fn lower_limit(&self, limit: &Limit) -> Result<Plan, SqlError> {
        let offset = literal_count(limit.skip.as_deref(), "OFFSET")?.unwrap_or(0);
        let fetch = literal_count(limit.fetch.as_deref(), "LIMIT")?;
        match limit.input.as_ref() {
            LogicalPlan::Sort(sort) => {
                let fetch = match (fetch, sort.fetch) {
                    (Some(a), Some(b)) => Some(a.min(b.saturating_sub(offset))),
                    (a, b) => a.or(b.map(|b| b.saturating_sub(offset))),
                };
                self.lower_sort(sort, offset, fetch)
            }
            input => Ok(Plan::TopK {
                input: Box::new(self.lower(input)?),
                group_by: Vec::new(),
                order_by: Vec::new(),
                offset,
                limit: fetch,
            }),
        }
    }

    /// Lowers `sort`, keeping `limit` rows after `offset` (all rows when both are absent).
    pub(super) fn lower_sort(
        &self,
        sort: &Sort,
        offset: usize,
        limit: Option<usize>,
    ) -> Result<Plan, SqlError> {
        let input = self.lower(&sort.input)?;
        if offset == 0 && limit.is_none() {
            return Ok(input);
        }
        let schema: &DFSchema = sort.input.schema();
        let mut order_by = Vec::with_capacity(sort.expr.len());
        for sort_expr in &sort.expr {
            let column = match &sort_expr.expr {
                Expr::Column(column) => schema.index_of_column(column)?,
                other => {
                    return Err(SqlError::not_incremental(
                        format!("ORDER BY {other} with LIMIT"),
                        "order by output columns only",
                    ))
                }
            };
            order_by.push(SortColumn {
                column,
                descending: !sort_expr.asc,
                nulls_first: sort_expr.nulls_first,
            });
        }
        Ok(Plan::TopK {
            input: Box::new(input),
            group_by: Vec::new(),
            order_by,
            offset,
            limit,
        })
    }
}

fn literal_count(expr: Option<&Expr>, clause: &str) -> Result<Option<usize>, SqlError> {
    match expr {
        None => Ok(None),
        Some(Expr::Literal(value, _)) if value.is_null() => Ok(None),
        Some(Expr::Literal(value, _)) => {
            let n = value
                .cast_to(&datafusion::arrow::datatypes::DataType::Int64)
                .ok()
                .and_then(|v| match v {
                    datafusion::common::ScalarValue::Int64(Some(n)) if n >= 0 => Some(n as usize),
                    _ => None,
                })
                .ok_or_else(|| {
                    SqlError::Unsupported(format!("{clause} {value} is not supported"))
                })?;
            Ok(Some(n))
        }
        Some(other) => Err(SqlError::not_incremental(
            format!("{clause} {other}"),
            "the count must be a constant",
        )),
    }
}
