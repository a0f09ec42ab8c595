//! Peeks: reading an arrangement's contents as of a time.
//!
//! A peek at time `t` is served once the arrangement's upper frontier has passed `t` (every
//! update at or before `t` is in it): the worker walks its part of the trace and sums, per
//! row, the diffs of updates at times `<= t`. Each worker answers for the keys it owns; the
//! controller gathers the answers.

use differential_dataflow::trace::cursor::cursor_list;
use differential_dataflow::trace::{Cursor, TraceReader};
use repr::{Diff, Row, Timestamp};
use timely::progress::Antichain;

use crate::arrangement::ExportedArrangement;
use crate::command::{PeekFilter, PeekRequest};
use crate::controller::ComputeError;

/// Whether the arrangement holds every update at or before `time`.
pub(crate) fn is_complete_at(arrangement: &mut ExportedArrangement, time: Timestamp) -> bool {
    let mut upper = Antichain::new();
    arrangement.trace.read_upper(&mut upper);
    !upper.less_equal(&time)
}

/// Reads the rows of `arrangement` at the request's time. The caller has checked that the
/// arrangement is complete at that time.
pub(crate) fn read_at(
    arrangement: &mut ExportedArrangement,
    request: &PeekRequest,
) -> Result<Vec<(Row, Diff)>, ComputeError> {
    let time = request.time;
    let since = arrangement.trace.get_logical_compaction().to_owned();
    if !since.less_equal(&time) {
        return Err(ComputeError::Compacted {
            id: request.target,
            time,
            since: since.elements().first().copied().unwrap_or(Timestamp::MAX),
        });
    }
    let mut upper = Antichain::new();
    arrangement.trace.read_upper(&mut upper);
    let Some(batches) = arrangement.trace.batches_through(upper.borrow()) else {
        return Err(ComputeError::Compacted {
            id: request.target,
            time,
            since: since.elements().first().copied().unwrap_or(Timestamp::MAX),
        });
    };
    let (mut cursor, storage) = cursor_list(batches);
    let layout = &arrangement.layout;
    let mut rows = Vec::new();
    match &request.filter {
        PeekFilter::Key(key) => {
            cursor.seek_key(&storage, key);
            if cursor.get_key(&storage) == Some(key) {
                read_values(&mut cursor, &storage, key, time, layout, &mut rows);
            }
        }
        PeekFilter::Keys(keys) => {
            let mut keys: Vec<&Row> = keys.iter().collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                cursor.seek_key(&storage, key);
                if cursor.get_key(&storage) == Some(key) {
                    read_values(&mut cursor, &storage, key, time, layout, &mut rows);
                }
            }
        }
        PeekFilter::All => {
            while let Some(key) = cursor.get_key(&storage) {
                read_values(&mut cursor, &storage, key, time, layout, &mut rows);
                cursor.step_key(&storage);
            }
        }
    }
    Ok(rows)
}

/// Appends the rows stored under the cursor's current key, with their multiplicity at `time`.
fn read_values<C>(
    cursor: &mut C,
    storage: &C::Storage,
    key: &Row,
    time: Timestamp,
    layout: &crate::arrangement::ArrangementLayout,
    rows: &mut Vec<(Row, Diff)>,
) where
    C: for<'a> Cursor<Key<'a> = &'a Row, Val<'a> = &'a Row, Time = Timestamp, Diff = Diff>,
    for<'a> C::TimeGat<'a>: std::ops::Deref<Target = Timestamp>,
    for<'a> C::DiffGat<'a>: std::ops::Deref<Target = Diff>,
{
    while let Some(value) = cursor.get_val(storage) {
        let mut count: Diff = 0;
        cursor.map_times(storage, |t, d| {
            if *t <= time {
                count += *d;
            }
        });
        if count != 0 {
            rows.push((layout.row(key, value).clone(), count));
        }
        cursor.step_val(storage);
    }
}
