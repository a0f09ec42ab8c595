//! Peeks: reading an arrangement's contents as of a time.
//!
//! A peek at time `t` is served once the arrangement's upper frontier has passed `t` (every
//! update at or before `t` is in it): the worker walks its part of the trace and sums, per
//! row, the diffs of updates at times `<= t`, a bounded number of rows per turn (see
//! [`PeekRead`]). Each worker answers for the keys it owns; the controller gathers the
//! answers.

use std::sync::Arc;
use std::time::{Duration, Instant};

use differential_dataflow::trace::cursor::{cursor_list, CursorList};
use differential_dataflow::trace::{Cursor, Navigable, TraceReader};
use repr::{Diff, Row, Timestamp};
use timely::progress::Antichain;

use crate::arrangement::{ArrangementLayout, ExportedArrangement, RowTrace};
use crate::command::{PeekFilter, PeekRequest};
use crate::controller::ComputeError;
use crate::row_container::RowRef;

/// Whether the arrangement holds every update at or before `time`.
pub(crate) fn is_complete_at(arrangement: &mut ExportedArrangement, time: Timestamp) -> bool {
    let mut upper = Antichain::new();
    arrangement.trace.read_upper(&mut upper);
    !upper.less_equal(&time)
}

/// The batches of an arrangement's trace.
type RowBatch = <RowTrace as TraceReader>::Batch;

/// A cursor over several of an arrangement's batches at once.
type RowCursor = CursorList<<RowBatch as Navigable>::Cursor>;

/// A peek being answered: its batches, taken when the read began, and how far it has got.
///
/// A whole-arrangement read of millions of rows takes a while, and the worker has other
/// work: key lookups (every write to a table with a primary key makes one), appends, other
/// reads, and stepping its dataflows, which is how the arrangements' frontiers (and with
/// them every later read) move on. So a read takes at most [`TURN`] at a time and the worker
/// turns to its other work in between. The batches are immutable and held here, so a read sees the
/// arrangement as it was when it began, however the trace merges or compacts meanwhile.
pub(crate) struct PeekRead {
    request: Arc<PeekRequest>,
    layout: ArrangementLayout,
    cursor: RowCursor,
    storage: Vec<RowBatch>,
    rows: Vec<(Row, Diff)>,
}

/// How long one read runs before the worker looks at its other work.
const TURN: Duration = Duration::from_millis(1);

/// Keys read between looks at the clock.
const KEYS_PER_CLOCK_CHECK: usize = 256;

impl PeekRead {
    /// Begins reading `arrangement` at the request's time. The caller has checked that the
    /// arrangement is complete at that time.
    pub(crate) fn begin(
        arrangement: &mut ExportedArrangement,
        request: Arc<PeekRequest>,
    ) -> Result<Self, (Arc<PeekRequest>, ComputeError)> {
        let time = request.time;
        let since = arrangement.trace.get_logical_compaction().to_owned();
        let compacted = || ComputeError::Compacted {
            id: request.target,
            time,
            since: since.elements().first().copied().unwrap_or(Timestamp::MAX),
        };
        if !since.less_equal(&time) {
            let error = compacted();
            return Err((request, error));
        }
        let mut upper = Antichain::new();
        arrangement.trace.read_upper(&mut upper);
        let Some(batches) = arrangement.trace.batches_through(upper.borrow()) else {
            let error = compacted();
            return Err((request, error));
        };
        let (cursor, storage) = cursor_list(batches);
        Ok(Self {
            request,
            layout: arrangement.layout.clone(),
            cursor,
            storage,
            rows: Vec::new(),
        })
    }

    /// The time the read is at.
    pub(crate) fn time(&self) -> Timestamp {
        self.request.time
    }

    /// Reads on for one turn; answers the request and returns `true` once the read is done.
    pub(crate) fn step(&mut self) -> bool {
        let time = self.request.time;
        let (cursor, storage, layout, rows) = (
            &mut self.cursor,
            &self.storage,
            &self.layout,
            &mut self.rows,
        );
        match &self.request.filter {
            PeekFilter::Key(key) => {
                let key = RowRef::from(key);
                cursor.seek_key(storage, key);
                if cursor.get_key(storage) == Some(key) {
                    read_values(cursor, storage, key, time, layout, rows);
                }
            }
            PeekFilter::Keys(keys) => {
                let mut keys: Vec<RowRef> = keys.iter().map(RowRef::from).collect();
                keys.sort();
                keys.dedup();
                for key in keys {
                    cursor.seek_key(storage, key);
                    if cursor.get_key(storage) == Some(key) {
                        read_values(cursor, storage, key, time, layout, rows);
                    }
                }
            }
            PeekFilter::All => {
                let started = Instant::now();
                let mut keys = 0;
                while let Some(key) = cursor.get_key(storage) {
                    keys += 1;
                    if keys % KEYS_PER_CLOCK_CHECK == 0 && started.elapsed() >= TURN {
                        return false;
                    }
                    read_values(cursor, storage, key, time, layout, rows);
                    cursor.step_key(storage);
                }
            }
        }
        let _ = self.request.reply.send(Ok(std::mem::take(rows)));
        true
    }
}

/// Appends the rows stored under the cursor's current key, with their multiplicity at `time`.
fn read_values<C>(
    cursor: &mut C,
    storage: &C::Storage,
    key: RowRef,
    time: Timestamp,
    layout: &ArrangementLayout,
    rows: &mut Vec<(Row, Diff)>,
) where
    C: for<'a> Cursor<Key<'a> = RowRef<'a>, Val<'a> = RowRef<'a>, Time = Timestamp, Diff = Diff>,
    for<'a> C::TimeGat<'a>: std::ops::Deref<Target = Timestamp>,
    for<'a> C::DiffGat<'a>: std::ops::Deref<Target = Diff>,
{
    values_at(cursor, storage, time, |value, count| {
        rows.push((layout.row(key, value).to_row(), count))
    });
}

/// Steps through the values stored under the cursor's current key, calling `each` with every
/// one whose multiplicity at `time` (the diffs of its updates at times `<= time`) is not zero.
pub(crate) fn values_at<'s, C>(
    cursor: &mut C,
    storage: &'s C::Storage,
    time: Timestamp,
    mut each: impl FnMut(RowRef<'s>, Diff),
) where
    C: for<'a> Cursor<Key<'a> = RowRef<'a>, Val<'a> = RowRef<'a>, Time = Timestamp, Diff = Diff>,
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
            each(value, count);
        }
        cursor.step_val(storage);
    }
}
