//! Constant: a fixed multiset of rows, all at the minimum time, introduced by worker 0 only
//! (every worker builds the same dataflow; the rows must enter once). Stateless.

use differential_dataflow::AsCollection;
use repr::{Diff, Row, Timestamp};
use timely::dataflow::operators::ToStream;
use timely::dataflow::Scope;

use super::RowCollection;

/// Renders the constant collection `rows`.
pub(crate) fn render<'s>(scope: Scope<'s, Timestamp>, rows: &[(Row, Diff)]) -> RowCollection<'s> {
    let updates: Vec<(Row, Timestamp, Diff)> = if scope.index() == 0 {
        rows.iter()
            .map(|(row, diff)| (row.clone(), 0, *diff))
            .collect()
    } else {
        Vec::new()
    };
    updates.to_stream(scope).as_collection()
}
