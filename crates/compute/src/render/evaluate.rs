//! Vectorized evaluation of scalar expressions over a micro-batch of rows.
//!
//! Rows are decoded into one Arrow batch, the expressions run once over the whole batch, and
//! the results are encoded back (or, for an operator that goes on with columns, kept as a
//! batch). If the batch fails (one row divides by zero), the rows are evaluated one at a time
//! so that only the failing rows are left out and reported.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use datafusion::arrow::compute::{concat_batches, filter_record_batch};
use datafusion::arrow::datatypes::{Field, Schema};
use datafusion::error::DataFusionError;
use plan::ScalarExpr;
use repr::{Row, RowCodec};

/// The outcome of evaluating a batch: surviving rows with the index of the input row they
/// came from, and the input rows that failed with their error.
pub(crate) struct Evaluated {
    pub rows: Vec<(usize, Row)>,
    pub failures: Vec<(usize, String)>,
}

/// The outcome of evaluating a batch as columns: the surviving rows as one batch of the
/// output schema, the index of the input row each came from, and the input rows that failed.
pub(crate) struct EvaluatedColumns {
    pub batch: RecordBatch,
    pub indices: Vec<usize>,
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
        let EvaluatedColumns {
            batch,
            indices,
            mut failures,
        } = self.evaluate_columns(rows);
        if let Ok(encoded) = self.output.encode(&batch) {
            return Evaluated {
                rows: indices.into_iter().zip(encoded).collect(),
                failures,
            };
        }
        // Encoding casts to the output's types, which one value can fail: find which.
        let mut rows = Vec::with_capacity(indices.len());
        for (position, index) in indices.into_iter().enumerate() {
            match self.output.encode(&batch.slice(position, 1)) {
                Ok(one) => rows.extend(one.into_iter().map(|row| (index, row))),
                Err(e) => failures.push((index, e.to_string())),
            }
        }
        Evaluated { rows, failures }
    }

    /// Evaluates every row into columns; rows whose predicate is false or NULL are dropped.
    pub fn evaluate_columns<'a>(
        &self,
        rows: impl ExactSizeIterator<Item = &'a Row> + Clone,
    ) -> EvaluatedColumns {
        let nothing = |failures| EvaluatedColumns {
            batch: RecordBatch::new_empty(self.output.schema().clone()),
            indices: Vec::new(),
            failures,
        };
        let batch = match self.input.decode(rows.clone()) {
            Ok(batch) => batch,
            Err(e) => return nothing((0..rows.len()).map(|i| (i, e.to_string())).collect()),
        };
        match self.projected_batch(&batch) {
            Ok((batch, indices)) => EvaluatedColumns {
                batch,
                indices,
                failures: Vec::new(),
            },
            Err(_) if batch.num_rows() > 1 => self.columns_one_by_one(&batch),
            Err(e) => nothing(vec![(0, e.to_string())]),
        }
    }

    fn columns_one_by_one(&self, batch: &RecordBatch) -> EvaluatedColumns {
        let mut batches = Vec::new();
        let mut indices = Vec::new();
        let mut failures = Vec::new();
        for index in 0..batch.num_rows() {
            match self.projected_batch(&batch.slice(index, 1)) {
                Ok((one, survivors)) => {
                    indices.extend(survivors.iter().map(|_| index));
                    batches.push(one);
                }
                Err(e) => failures.push((index, e.to_string())),
            }
        }
        let batch = match batches.first() {
            Some(first) => concat_batches(&first.schema(), &batches)
                .expect("invariant: batches of the same expressions concatenate"),
            None => RecordBatch::new_empty(self.output.schema().clone()),
        };
        EvaluatedColumns {
            batch,
            indices,
            failures,
        }
    }

    /// The rows of `batch` that pass the predicate, projected into one batch, with the index
    /// in `batch` of each. The batch's fields are named as the output schema's and typed as
    /// the expressions' results, all nullable (the operator reading it goes by position).
    fn projected_batch(
        &self,
        batch: &RecordBatch,
    ) -> Result<(RecordBatch, Vec<usize>), DataFusionError> {
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
        let fields: Vec<Field> = self
            .output
            .schema()
            .fields()
            .iter()
            .zip(&columns)
            .map(|(field, column)| Field::new(field.name(), column.data_type().clone(), true))
            .collect();
        let options = RecordBatchOptions::new().with_row_count(Some(indices.len()));
        let batch =
            RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), columns, &options)?;
        Ok((batch, indices))
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
