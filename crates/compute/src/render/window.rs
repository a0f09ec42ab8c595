//! Window functions (`OVER`): each row with its functions' values over its partition (see
//! [`plan::Plan::Window`]).
//!
//! Semantics on `(row, t, d)` updates: rows are arranged by partition; when a partition
//! changes at `t`, its consolidated rows (each as many times as its multiplicity) are sorted
//! by the window's order, ties broken by the rows' bytes, the functions are evaluated over the
//! sorted partition by DataFusion, and the rows with their values replace the partition's
//! previous output. With a limit only the first rows are output, and when every function's
//! value for a row depends only on the rows before it (`row_number`, `rank`), only those rows
//! are sorted and computed.
//!
//! Cost: a change recomputes its partition, O(n log n) in the partition's size (O(n log k)
//! with a limit k). State: the arranged input and the output, per partition; with a limit
//! over an append-only input, only the rows that can still be among the first k are arranged
//! ([`super::monotonic_top_k`]). A function that fails on a partition leaves the partition
//! out and is counted as a view error.

use datafusion::arrow::array::{ArrayRef, UInt32Array};
use datafusion::arrow::compute::take_record_batch;
use datafusion::arrow::datatypes::SchemaRef;
use differential_dataflow::consolidation::consolidate;
use plan::{SortColumn, WindowFunction};
use repr::{Diff, GlobalId, Row, RowCodec};

use super::{codec, monotonic_top_k, render_key_by, top_k, RenderError, RowCollection};
use crate::errors::DataflowErrors;

/// Everything a window node needs to know about its input and output.
pub(crate) struct WindowSpec<'a> {
    pub input_schema: &'a SchemaRef,
    pub partition_by: &'a [usize],
    pub order_by: &'a [SortColumn],
    pub functions: &'a [WindowFunction],
    pub limit: Option<usize>,
    pub output_schema: &'a SchemaRef,
    /// No row of the input is ever retracted.
    pub append_only: bool,
}

/// Renders the window functions of `spec` over `rows`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    spec: WindowSpec<'_>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let width = spec.input_schema.fields().len();
    let value_columns: Vec<usize> = (width..spec.output_schema.fields().len()).collect();
    let partition = Partition {
        rows: codec(spec.input_schema)?,
        values: codec(&super::map_filter::project_schema(
            spec.output_schema,
            &value_columns,
        )?)?,
        order_by: spec.order_by.to_vec(),
        functions: spec.functions.to_vec(),
        limit: spec.limit,
        prefix_only: spec.functions.iter().all(|f| f.kind.is_prefix_determined()),
    };
    let mut pairs = render_key_by(rows, spec.input_schema, spec.partition_by, None)?;
    if let (Some(limit), true, true) = (spec.limit, partition.prefix_only, spec.append_only) {
        pairs = monotonic_top_k::render(
            pairs,
            spec.input_schema,
            spec.order_by,
            limit,
            errors.clone(),
        )?;
    }
    let (dataflow, errors) = errors;
    Ok(pairs
        .reduce_named(
            "Window",
            move |_partition, input: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| match partition
                .compute(input)
            {
                Ok(rows) => out.extend(rows),
                Err(error) => errors.record(dataflow, 0, 1, &error),
            },
        )
        .map(|(_, row)| row))
}

/// How one partition is computed.
struct Partition {
    /// The codec of the input rows.
    rows: RowCodec,
    /// The codec of the functions' values, appended to each row.
    values: RowCodec,
    order_by: Vec<SortColumn>,
    functions: Vec<WindowFunction>,
    limit: Option<usize>,
    /// Every function's value for a row depends only on the rows before it.
    prefix_only: bool,
}

impl Partition {
    /// The output rows of a partition holding `input` (consolidated, sorted by their bytes).
    fn compute(&self, input: &[(&Row, Diff)]) -> Result<Vec<(Row, Diff)>, String> {
        let batch = self
            .rows
            .decode(input.iter().map(|(row, _)| *row))
            .map_err(|e| e.to_string())?;
        let needed = self.limit.filter(|_| self.prefix_only);
        let order =
            top_k::sorted_positions(&batch, &self.order_by, needed).map_err(|e| e.to_string())?;
        let mut copies: Vec<u32> = Vec::with_capacity(order.len());
        for i in order {
            let multiplicity = input[i as usize].1.max(0) as usize;
            let room = needed.map_or(usize::MAX, |n| n - copies.len());
            copies.extend(std::iter::repeat_n(i, multiplicity.min(room)));
            if needed.is_some_and(|n| copies.len() >= n) {
                break;
            }
        }
        let copies = UInt32Array::from(copies);
        let sorted = take_record_batch(&batch, &copies).map_err(|e| e.to_string())?;
        let values = self
            .functions
            .iter()
            .map(|f| f.expr.evaluate(&sorted))
            .collect::<Result<Vec<ArrayRef>, _>>()
            .map_err(|e| e.to_string())?;
        let kept = self.limit.unwrap_or(usize::MAX).min(copies.len());
        let values: Vec<ArrayRef> = values.iter().map(|v| v.slice(0, kept)).collect();
        let encoded = self
            .values
            .encode_columns(&values, kept)
            .map_err(|e| e.to_string())?;
        let mut out: Vec<(Row, Diff)> = copies
            .values()
            .iter()
            .zip(encoded)
            .map(|(&i, value)| (input[i as usize].0.concat(&value), 1))
            .collect();
        consolidate(&mut out);
        Ok(out)
    }
}
