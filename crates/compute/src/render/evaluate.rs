//! Vectorized evaluation of scalar expressions over a micro-batch of rows.
//!
//! Rows are decoded into one Arrow batch, the expressions run once over the whole batch, and
//! the results are encoded back. If the batch fails (one row divides by zero), the rows are
//! evaluated one at a time so that only the failing rows are left out and reported.

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use datafusion::arrow::compute::filter_record_batch;
use datafusion::error::DataFusionError;
use plan::ScalarExpr;
use repr::{Row, RowCodec};

/// The outcome of evaluating a batch: surviving rows with the index of the input row they
/// came from, and the input rows that failed with their error.
#[derive(Default)]
pub(crate) struct Evaluated {
    pub rows: Vec<(usize, Row)>,
    pub failures: Vec<(usize, String)>,
}

/// Evaluates an optional predicate and a list of column expressions over rows of one schema.
pub(crate) struct RowEvaluator {
    input: RowCodec,
    output: RowCodec,
    predicate: Option<ScalarExpr>,
    projection: Vec<ScalarExpr>,
}

impl RowEvaluator {
    /// An evaluator from rows of `input` to rows of `output`, one expression per output column.
    pub fn new(
        input: RowCodec,
        output: RowCodec,
        predicate: Option<ScalarExpr>,
        projection: Vec<ScalarExpr>,
    ) -> Self {
        Self {
            input,
            output,
            predicate,
            projection,
        }
    }

    /// Evaluates every row; rows whose predicate is false or NULL are dropped.
    pub fn evaluate<'a>(&self, rows: impl ExactSizeIterator<Item = &'a Row> + Clone) -> Evaluated {
        let batch = match self.input.decode(rows.clone()) {
            Ok(batch) => batch,
            Err(e) => {
                return Evaluated {
                    rows: Vec::new(),
                    failures: (0..rows.len()).map(|i| (i, e.to_string())).collect(),
                }
            }
        };
        match self.evaluate_batch(&batch) {
            Ok(evaluated) => evaluated,
            Err(_) if batch.num_rows() > 1 => self.evaluate_rows_one_by_one(&batch),
            Err(e) => Evaluated {
                rows: Vec::new(),
                failures: vec![(0, e.to_string())],
            },
        }
    }

    fn evaluate_rows_one_by_one(&self, batch: &RecordBatch) -> Evaluated {
        let mut result = Evaluated::default();
        for index in 0..batch.num_rows() {
            match self.evaluate_batch(&batch.slice(index, 1)) {
                Ok(one) => result
                    .rows
                    .extend(one.rows.into_iter().map(|(_, row)| (index, row))),
                Err(e) => result.failures.push((index, e.to_string())),
            }
        }
        result
    }

    fn evaluate_batch(&self, batch: &RecordBatch) -> Result<Evaluated, DataFusionError> {
        let (batch, indices) = match &self.predicate {
            None => (batch.clone(), (0..batch.num_rows()).collect::<Vec<_>>()),
            Some(predicate) => {
                let mask = predicate.evaluate(batch)?.into_array(batch.num_rows())?;
                let mask = as_true_mask(&mask)?;
                let indices = (0..mask.len()).filter(|&i| mask.value(i)).collect();
                (filter_record_batch(batch, &mask)?, indices)
            }
        };
        let columns = self
            .projection
            .iter()
            .map(|e| e.evaluate(&batch)?.into_array(batch.num_rows()))
            .collect::<Result<Vec<ArrayRef>, _>>()?;
        let rows = self
            .output
            .encode_columns(&columns, batch.num_rows())
            .map_err(|e| DataFusionError::Execution(e.to_string()))?;
        Ok(Evaluated {
            rows: indices.into_iter().zip(rows).collect(),
            failures: Vec::new(),
        })
    }
}

/// A boolean mask that is true exactly where `mask` is true (NULL counts as false).
pub(crate) fn as_true_mask(mask: &ArrayRef) -> Result<BooleanArray, DataFusionError> {
    let booleans = mask
        .as_any()
        .downcast_ref::<BooleanArray>()
        .ok_or_else(|| {
            DataFusionError::Internal(format!("predicate is {} not boolean", mask.data_type()))
        })?;
    if booleans.null_count() == 0 {
        return Ok(booleans.clone());
    }
    Ok(booleans.iter().map(|v| Some(v == Some(true))).collect())
}
