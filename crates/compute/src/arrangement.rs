//! Arrangements: the indexed, multi-versioned collections every reader reads.
//!
//! All exported arrangements share one trace type, `(key: Row, value: Row)` pairs at `u64`
//! times with `i64` diffs, whose batches keep their rows flat (see `row_container`): a batch
//! is a few buffers, not a heap allocation per row. The joins and reductions inside dataflows
//! arrange their inputs the same way. An
//! arrangement "by self" keeps the whole row as its key and an empty value; an arrangement by
//! columns keeps those columns as its key and the whole row as its value.

use std::collections::BTreeMap;
use std::rc::Rc;

use differential_dataflow::batcher::merge::vec::VecMerger;
use differential_dataflow::batcher::merge::MergeBatcher;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::ord_neu::{OrdValBatch, OrdValBuilder};
use differential_dataflow::trace::implementations::spine_fueled::Spine;
use differential_dataflow::trace::implementations::{ContainerChunker, OffsetList};
use differential_dataflow::VecCollection;
use repr::{Diff, GlobalId, Row, Timestamp};

use crate::memory_meters;
use crate::row_chunk::{RowChunk, RowChunkMerger};
use crate::row_container::{RowContainer, RowRef};

/// How batches keyed by rows are laid out: keys flat, values in `VC`, times and diffs (of
/// type `R`) in vectors.
pub(crate) type FlatLayout<VC, R> = (RowContainer, VC, Vec<Timestamp>, Vec<R>, OffsetList);

/// The updates a batch keyed by rows is built from: `((key, value), time, diff)`.
pub(crate) type Updates<V, R> = Vec<((Row, V), Timestamp, R)>;

/// Seals sorted updates into batches keyed by rows.
pub(crate) type FlatBuilder<VC, V, R> = OrdValBuilder<FlatLayout<VC, R>, Updates<V, R>>;

/// Sorts and consolidates incoming updates, and seals them into batches keyed by rows.
pub(crate) type FlatBatcher<VC, V, R> = MergeBatcher<
    ContainerChunker<Updates<V, R>>,
    VecMerger<(Row, V), Timestamp, R>,
    FlatBuilder<VC, V, R>,
>;

/// A trace of batches keyed by rows.
pub(crate) type FlatSpine<VC, R> = Spine<Rc<OrdValBatch<FlatLayout<VC, R>>>>;

/// Seals `(key row, value row)` updates into flat batches.
pub(crate) type RowBuilder = FlatBuilder<RowContainer, Row, Diff>;

/// Sorts and consolidates `(key row, value row)` updates into flat batches, holding them in
/// flat chunks with their keys' prefixes inline while it does (see `row_chunk`).
pub(crate) type RowBatcher = MergeBatcher<
    ContainerChunker<RowChunk>,
    RowChunkMerger,
    OrdValBuilder<FlatLayout<RowContainer, Diff>, RowChunk>,
>;

/// The trace type of every exported arrangement, and of the row-keyed ones inside dataflows
/// (join inputs, reductions): keys and values both flat.
pub(crate) type RowSpine = FlatSpine<RowContainer, Diff>;

/// Turns a reduction's new `(value, time, diff)` results for `key` into the updates its
/// output arrangement seals.
pub(crate) fn reduction_updates(
    updates: &mut Updates<Row, Diff>,
    key: RowRef,
    results: &mut Vec<(Row, Timestamp, Diff)>,
) {
    updates.clear();
    updates.extend(
        results
            .drain(..)
            .map(|(value, time, diff)| ((key.to_row(), value), time, diff)),
    );
}

/// A handle to an arrangement's trace, shared by the dataflows that read it.
pub(crate) type RowTrace = TraceAgent<RowSpine>;

/// Arranges `(key, value)` rows by key into flat batches (operator `name`), and meters the
/// spine as part of the dataflow's memory (see `memory_meters`).
pub(crate) fn arrange_rows<'s>(
    pairs: VecCollection<'s, Timestamp, (Row, Row), Diff>,
    name: &str,
) -> Arranged<'s, RowTrace> {
    let arranged = pairs.arrange_named::<RowBatcher, RowSpine>(name, RowBatcher::new);
    memory_meters::meter_spine(&arranged.trace);
    arranged
}

/// Reduces `(key, value)` rows by key (operator `name`): `logic` turns one key's values, with
/// their counts, into its results. Input and results are both kept in flat arrangements,
/// metered as part of the dataflow's memory (see `memory_meters`).
pub(crate) fn reduce_rows<'s>(
    pairs: VecCollection<'s, Timestamp, (Row, Row), Diff>,
    name: &str,
    logic: impl FnMut(RowRef<'_>, &[(RowRef<'_>, Diff)], &mut Vec<(Row, Diff)>) + 'static,
) -> VecCollection<'s, Timestamp, (Row, Row), Diff> {
    let arranged = arrange_rows(pairs, &format!("Arrange: {name}"));
    let reduced = arranged.reduce_abelian::<_, RowBuilder, RowSpine, RowContainer, _>(
        name,
        logic,
        reduction_updates,
    );
    memory_meters::meter_spine(&reduced.trace);
    reduced.as_collection(|key, value| (key.to_row(), value.to_row()))
}

/// How rows are laid out in an arrangement's `(key, value)` pairs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ArrangementLayout {
    /// The key is the whole row; the value is empty.
    BySelf,
    /// The key holds these columns of the row, in this order; the value is the whole row.
    ByColumns(Vec<usize>),
}

impl ArrangementLayout {
    /// The row stored in a `(key, value)` pair of this layout.
    pub(crate) fn row<'a>(&self, key: RowRef<'a>, value: RowRef<'a>) -> RowRef<'a> {
        match self {
            ArrangementLayout::BySelf => key,
            ArrangementLayout::ByColumns(_) => value,
        }
    }
}

/// An arrangement a worker maintains and exports to readers.
pub(crate) struct ExportedArrangement {
    pub trace: RowTrace,
    pub layout: ArrangementLayout,
    /// The timely dataflow that maintains it, dropped with it.
    pub dataflow_index: usize,
}

/// The arrangements of one worker, by the catalog id of what they materialize.
pub(crate) type ArrangementRegistry = BTreeMap<GlobalId, ExportedArrangement>;
