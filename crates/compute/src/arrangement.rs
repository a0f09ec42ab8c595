//! Arrangements: the indexed, multi-versioned collections every reader reads.
//!
//! All arrangements share one trace type, `(key: Row, value: Row)` pairs at `u64` times with
//! `i64` diffs. An arrangement "by self" keeps the whole row as its key and an empty value; an
//! arrangement by columns keeps those columns as its key and the whole row as its value.

use std::collections::BTreeMap;

use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::ValSpine;
use repr::{Diff, GlobalId, Row, Timestamp};

/// The trace type of every arrangement.
pub(crate) type RowSpine = ValSpine<Row, Row, Timestamp, Diff>;

/// A handle to an arrangement's trace, shared by the dataflows that read it.
pub(crate) type RowTrace = TraceAgent<RowSpine>;

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
    pub(crate) fn row<'a>(&self, key: &'a Row, value: &'a Row) -> &'a Row {
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
