//! TopK: the first `limit` rows after `offset` of each group, in a sort order
//! (`ORDER BY … LIMIT … OFFSET …`, per group for `ROW_NUMBER() … <= k` shapes).
//!
//! Semantics on `(row, t, d)` updates: rows are arranged by group; when a group changes at
//! `t`, its consolidated rows are sorted (ties broken by the row's bytes, so the choice is
//! deterministic) and the selected rows, with multiplicities clipped at the window's edges,
//! replace the previous selection. Deleting a selected row pulls the next one in.
//! State: the arranged input and the selected rows, per group; over an append-only input, only
//! the rows that can still be selected are arranged ([`super::monotonic_top_k`]).

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, RecordBatch, UInt32Array};
use datafusion::arrow::compute::{lexsort_to_indices, SortColumn as ArrowSortColumn, SortOptions};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::error::ArrowError;
use plan::SortColumn;
use repr::{Diff, GlobalId, Row};

use super::{codec, monotonic_top_k, render_key_by, RenderError, RowCollection};
use crate::arrangement::reduce_rows;
use crate::errors::DataflowErrors;
use crate::row_container::RowRef;

/// What a top-k selects, and from what.
pub(crate) struct TopKSpec<'a> {
    pub schema: &'a SchemaRef,
    pub group_by: &'a [usize],
    pub order_by: &'a [SortColumn],
    pub offset: usize,
    pub limit: Option<usize>,
    /// No row of the input is ever retracted.
    pub append_only: bool,
}

/// Renders a top-k over `rows`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    spec: TopKSpec<'_>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let row_codec = codec(spec.schema)?;
    let order_by = spec.order_by.to_vec();
    let (offset, limit) = (spec.offset, spec.limit);
    let mut pairs = render_key_by(rows, spec.schema, spec.group_by, None)?;
    if let (Some(limit), true) = (limit, spec.append_only) {
        let kept = offset.saturating_add(limit);
        pairs = monotonic_top_k::render(pairs, spec.schema, spec.order_by, kept, errors)?;
    }
    Ok(reduce_rows(
        pairs,
        "TopK",
        move |_group, input: &[(RowRef, Diff)], out: &mut Vec<(Row, Diff)>| {
            let batch = row_codec
                .decode(input.iter().map(|(row, _)| *row))
                .expect("invariant: rows decode with the codec that encoded them");
            let Ok(order) = sorted_positions(&batch, &order_by) else {
                return;
            };
            select_window(order.iter().map(|&i| input[i as usize]), offset, limit, out);
        },
    )
    .map(|(_, row)| row))
}

/// The positions of `batch`'s rows sorted by `order_by`, ties broken by position: rows that
/// arrive sorted by their bytes are thereby ordered deterministically.
fn sorted_positions(batch: &RecordBatch, order_by: &[SortColumn]) -> Result<Vec<u32>, ArrowError> {
    let mut columns: Vec<ArrowSortColumn> = order_by
        .iter()
        .map(|c| ArrowSortColumn {
            values: batch.column(c.column).clone(),
            options: Some(SortOptions {
                descending: c.descending,
                nulls_first: c.nulls_first,
            }),
        })
        .collect();
    let position: ArrayRef = Arc::new(UInt32Array::from_iter_values(0..batch.num_rows() as u32));
    columns.push(ArrowSortColumn {
        values: position,
        options: None,
    });
    Ok(lexsort_to_indices(&columns, None)?.values().to_vec())
}

/// Walks rows in order and keeps those inside `[offset, offset + limit)`, counting each row
/// as many times as its multiplicity.
fn select_window<'a>(
    ordered: impl Iterator<Item = (RowRef<'a>, Diff)>,
    offset: usize,
    limit: Option<usize>,
    out: &mut Vec<(Row, Diff)>,
) {
    let end = limit
        .map(|l| offset.saturating_add(l))
        .unwrap_or(usize::MAX) as i128;
    let start = offset as i128;
    let mut position: i128 = 0;
    for (row, count) in ordered {
        if position >= end {
            break;
        }
        let count = count.max(0) as i128;
        let from = position.max(start);
        let to = (position + count).min(end);
        if to > from {
            out.push((row.to_row(), (to - from) as Diff));
        }
        position += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_clips_multiplicities_at_both_edges() {
        let a = Row::from_bytes(b"a");
        let b = Row::from_bytes(b"b");
        let c = Row::from_bytes(b"c");
        let mut out = Vec::new();
        select_window(
            [(&a, 2), (&b, 3), (&c, 1)]
                .into_iter()
                .map(|(row, count)| (RowRef::from(row), count)),
            1,
            Some(3),
            &mut out,
        );
        assert_eq!(out, vec![(a, 1), (b, 2)]);
    }
}
