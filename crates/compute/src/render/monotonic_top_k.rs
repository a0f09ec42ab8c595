//! Monotonic top-k: over an append-only input, only the rows that can still be among the
//! first `k` of their partition go on to the top-k (`ORDER BY … LIMIT` per group, or a window
//! limited by `row_number() <= k`) that arranges them.
//!
//! Semantics on `((partition, row), t, d)` updates with `d > 0` (the input only grows): the
//! updates of each time are taken in time order once the input frontier has passed it. Per
//! partition, the operator keeps the first `k` rows so far in the order (ties broken by the
//! rows' bytes, as the top-k downstream breaks them; a row with several copies counts each).
//! A row that comes after them is dropped; a row that enters them goes on, and the rows it
//! pushes out are retracted at the same time. What goes on is, at every time, the first `k`
//! rows of each partition of the input (and a row that straddles the k-th place), so the
//! arrangement downstream holds about `k` rows per partition instead of the whole input. A
//! retraction reaching this operator breaks the promise; it is dropped and counted as a view
//! error.
//!
//! State: the first `k` rows of each partition, with their order keys.

use std::collections::HashMap;

use datafusion::arrow::datatypes::SchemaRef;
use plan::SortColumn;
use repr::{Diff, GlobalId, Row, RowCodec};

use super::order_keys::OrderEncoder;
use super::partitioned::{apply_by_time, Partitioned};
use super::{codec, RenderError};
use crate::errors::DataflowErrors;

/// Renders the monotonic top-`limit` of `rows` (of `schema`, keyed by partition) in
/// `order_by`.
pub(crate) fn render<'s>(
    rows: Partitioned<'s>,
    schema: &SchemaRef,
    order_by: &[SortColumn],
    limit: usize,
    errors: (GlobalId, DataflowErrors),
) -> Result<Partitioned<'s>, RenderError> {
    let mut top = FirstRows {
        rows: codec(schema)?,
        order: OrderEncoder::new(schema, order_by)?,
        limit,
        partitions: HashMap::new(),
        errors,
    };
    Ok(apply_by_time(rows, "MonotonicTopK", move |updates| {
        top.apply(updates)
    }))
}

/// The first rows of every partition so far.
struct FirstRows {
    rows: RowCodec,
    order: OrderEncoder,
    limit: usize,
    partitions: HashMap<Row, Vec<Kept>>,
    errors: (GlobalId, DataflowErrors),
}

/// A row among the first of its partition.
struct Kept {
    /// Its order key, then its bytes: the order rows are kept in.
    order: Box<[u8]>,
    row: Row,
    copies: Diff,
}

impl Kept {
    fn position(&self) -> (&[u8], &[u8]) {
        (&self.order, self.row.as_bytes())
    }
}

impl FirstRows {
    /// Takes in the updates of one time; returns the updates that go on.
    fn apply(&mut self, updates: Vec<((Row, Row), Diff)>) -> Vec<((Row, Row), Diff)> {
        let batch = self
            .rows
            .decode(updates.iter().map(|((_, row), _)| row))
            .expect("invariant: rows decode with the codec that encoded them");
        let orders = self.order.keys(&batch);
        let mut out = Vec::new();
        for (i, ((partition, row), diff)) in updates.into_iter().enumerate() {
            if diff < 0 {
                let (dataflow, errors) = &self.errors;
                errors.record(
                    *dataflow,
                    0,
                    1,
                    "a row was retracted from an append-only input of a top-k",
                );
                continue;
            }
            let kept = self.partitions.entry(partition.clone()).or_default();
            let order = orders.get(i);
            let probe = (order, row.as_bytes());
            let at = kept.partition_point(|k| k.position() < probe);
            let before: Diff = kept[..at].iter().map(|k| k.copies).sum();
            if before >= self.limit as Diff {
                continue;
            }
            match kept.get_mut(at) {
                Some(same) if same.position() == probe => same.copies += diff,
                _ => kept.insert(
                    at,
                    Kept {
                        order: order.into(),
                        row: row.clone(),
                        copies: diff,
                    },
                ),
            }
            out.push(((partition.clone(), row), diff));
            let mut seen: Diff = 0;
            let cut = kept
                .iter()
                .position(|k| {
                    let past = seen >= self.limit as Diff;
                    seen += k.copies;
                    past
                })
                .unwrap_or(kept.len());
            for pushed_out in kept.drain(cut..) {
                out.push(((partition.clone(), pushed_out.row), -pushed_out.copies));
            }
        }
        out
    }
}
