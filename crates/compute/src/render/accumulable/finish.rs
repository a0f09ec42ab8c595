//! Finishing group totals into rows, a batch of groups at a time.
//!
//! The totals that changed at one time are finished together: per aggregate one column (the
//! extremes decoded in one call, the sums turned into values), then every row encoded in one
//! call. Finishing group by group built arrays of one element and encoded them one row at a
//! time, which cost a fifth of a GROUP BY's CPU.

use std::rc::Rc;
use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, Int64Array};
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use plan::{AggregateExpr, AggregateFunc};
use repr::{GlobalId, Row, RowCodec};

use super::{finish, Accumulation, ExtremeCodec};
use crate::errors::DataflowErrors;

/// Turns group totals into the rows of their aggregates' values.
pub(super) struct Finisher {
    pub aggregates: Rc<Vec<AggregateExpr>>,
    /// Per aggregate, the codec of its extremes (min and max only).
    pub extremes: Rc<Vec<Option<ExtremeCodec>>>,
    /// The codec of the aggregates' row.
    pub output: RowCodec,
    /// Where a total that cannot be finished is counted.
    pub errors: (GlobalId, DataflowErrors),
}

impl Finisher {
    /// The row of each of `totals`, in order; `None` for a group without rows, or one whose
    /// values could not be computed (counted as an error of the view).
    pub fn finish(&self, totals: &[&Accumulation]) -> Vec<Option<Row>> {
        let live: Vec<&Accumulation> = totals
            .iter()
            .copied()
            .filter(|t| t.sums.first().copied().unwrap_or(0) > 0)
            .collect();
        if live.is_empty() {
            return vec![None; totals.len()];
        }
        let mut failed = vec![false; live.len()];
        let rows = self
            .columns(&live, &mut failed)
            .and_then(|columns| {
                self.output
                    .encode_columns(&columns, live.len())
                    .map_err(|e| e.to_string())
            })
            .unwrap_or_else(|error| {
                self.record(live.len(), &error);
                failed.iter_mut().for_each(|f| *f = true);
                Vec::new()
            });
        let mut rows = rows.into_iter().zip(failed);
        totals
            .iter()
            .map(|t| {
                if t.sums.first().copied().unwrap_or(0) <= 0 {
                    return None;
                }
                rows.next()
                    .and_then(|(row, failed)| (!failed).then_some(row))
            })
            .collect()
    }

    /// One column per aggregate over `live`; a group whose value fails is marked in `failed`
    /// (its column holds NULL there) and counted.
    fn columns(
        &self,
        live: &[&Accumulation],
        failed: &mut [bool],
    ) -> Result<Vec<ArrayRef>, String> {
        self.aggregates
            .iter()
            .enumerate()
            .map(|(i, aggregate)| match &self.extremes[i] {
                Some(codec) => codec.decode_all(live.iter().map(|t| t.extremes[i].as_ref())),
                None if aggregate.output_type == DataType::Int64 => {
                    match int64_column(aggregate, i, live) {
                        Some(column) => Ok(column),
                        None => self.scalar_column(aggregate, i, live, failed),
                    }
                }
                None => self.scalar_column(aggregate, i, live, failed),
            })
            .collect()
    }

    /// Aggregate `i`'s column over `live`, finished value by value.
    fn scalar_column(
        &self,
        aggregate: &AggregateExpr,
        i: usize,
        live: &[&Accumulation],
        failed: &mut [bool],
    ) -> Result<ArrayRef, String> {
        let values = live.iter().zip(failed.iter_mut()).map(|(t, failed)| {
            finish(aggregate, t.sums[1 + 2 * i], t.sums[2 + 2 * i]).or_else(|error| {
                self.record(1, &error);
                *failed = true;
                ScalarValue::try_from(&aggregate.output_type).map_err(|e| e.to_string())
            })
        });
        let values = values.collect::<Result<Vec<_>, _>>()?;
        ScalarValue::iter_to_array(values).map_err(|e| e.to_string())
    }

    fn record(&self, groups: usize, error: &str) {
        let (dataflow, errors) = &self.errors;
        errors.record(*dataflow, 0, groups as u64, error);
    }
}

/// Aggregate `i`'s `bigint` column over `totals` (a count, or a sum that is NULL without
/// values), built directly; `None` if it is neither or a value is out of range (the
/// value-by-value path then reports it).
fn int64_column(aggregate: &AggregateExpr, i: usize, totals: &[&Accumulation]) -> Option<ArrayRef> {
    let (sums, counts) = (1 + 2 * i, 2 + 2 * i);
    let values: Option<Vec<Option<i64>>> = match aggregate.func {
        AggregateFunc::Count => totals
            .iter()
            .map(|t| i64::try_from(t.sums[counts]).ok().map(Some))
            .collect(),
        AggregateFunc::Sum => totals
            .iter()
            .map(|t| match t.sums[counts] {
                0 => Some(None),
                _ => i64::try_from(t.sums[sums]).ok().map(Some),
            })
            .collect(),
        _ => None,
    };
    Some(Arc::new(Int64Array::from(values?)))
}
