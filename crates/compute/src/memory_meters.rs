//! Memory meters: the bytes a dataflow's state holds, where differential's log does not say.
//!
//! Differential logs how many updates each spine holds and how many bytes each batcher holds
//! (see `arrangement_sizes`), but not the bytes of the batches a spine holds; and Fluxion's own
//! stateful operators (the running totals of GROUP BY) keep state differential never sees. A
//! [`Meter`] reads one such holder when asked: a spine by summing its batches' buffers, an
//! operator by the count it keeps of its state ([`StateMeter`]).
//!
//! A meter belongs to the dataflow being built when it is made. A worker builds one dataflow
//! at a time, on its own thread, so meters are gathered in a list of that thread's, and the
//! worker takes them when the dataflow is built ([`take_built`]); they go when it goes.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::ord_neu::OrdValBatch;
use differential_dataflow::trace::implementations::{Layout, OffsetList};
use differential_dataflow::trace::TraceReader;
use timely::progress::frontier::AntichainRef;

use crate::arrangement::{FlatLayout, FlatSpine};
use crate::row_container::RowContainer;

thread_local! {
    /// The meters of the dataflow this thread is building.
    static BUILDING: RefCell<Vec<Meter>> = const { RefCell::new(Vec::new()) };
}

/// Reads the bytes one holder of state holds; `None` once the holder is gone.
pub(crate) struct Meter(Box<dyn FnMut() -> Option<usize>>);

impl Meter {
    /// The bytes held now, or `None` if the holder is gone (its operator shut down).
    pub(crate) fn read(&mut self) -> Option<usize> {
        (self.0)()
    }
}

/// The meters made since the last call: those of the dataflow just built.
pub(crate) fn take_built() -> Vec<Meter> {
    BUILDING.with(|building| std::mem::take(&mut *building.borrow_mut()))
}

fn add(meter: Meter) {
    BUILDING.with(|building| building.borrow_mut().push(meter));
}

/// A container of a flat batch's values, whose buffers a meter reads.
pub(crate) trait ValueBytes {
    /// The bytes its buffers have allocated.
    fn heap_bytes(&self) -> usize;
}

impl ValueBytes for RowContainer {
    fn heap_bytes(&self) -> usize {
        RowContainer::heap_bytes(self)
    }
}

/// No values (a set of keys): nothing is allocated for them.
impl ValueBytes for Vec<()> {
    fn heap_bytes(&self) -> usize {
        0
    }
}

/// The layout of a flat batch, spelled out so that its buffers can be read.
pub(crate) trait FlatBatchLayout<VC, R>:
    Layout<
    KeyContainer = RowContainer,
    ValContainer = VC,
    TimeContainer = Vec<repr::Timestamp>,
    DiffContainer = Vec<R>,
    OffsetContainer = OffsetList,
>
{
}

impl<VC, R, L> FlatBatchLayout<VC, R> for L where
    L: Layout<
        KeyContainer = RowContainer,
        ValContainer = VC,
        TimeContainer = Vec<repr::Timestamp>,
        DiffContainer = Vec<R>,
        OffsetContainer = OffsetList,
    >
{
}

/// Meters the spine behind `trace`: the bytes of every batch it holds, merges in progress
/// included. The meter's handle holds back no compaction, and it reads nothing once it is the
/// spine's last reader (the operators that kept the spine have shut down).
pub(crate) fn meter_spine<VC, R>(trace: &TraceAgent<FlatSpine<VC, R>>)
where
    FlatLayout<VC, R>: FlatBatchLayout<VC, R> + 'static,
    VC: ValueBytes,
    R: Ord + Clone + 'static,
{
    let mut handle = trace.clone();
    handle.set_logical_compaction(AntichainRef::new(&[]));
    handle.set_physical_compaction(AntichainRef::new(&[]));
    add(Meter(Box::new(move || {
        // This handle and the count's own: no one else reads the spine, which may be closed.
        if Rc::strong_count(&handle.trace_box_unstable()) <= 2 {
            return None;
        }
        let batches = handle.batches_through(AntichainRef::new(&[]))?;
        Some(batches.iter().map(|batch| batch_bytes(batch)).sum())
    })));
}

/// The bytes of one batch's buffers (allocated, not only used).
fn batch_bytes<VC, R>(batch: &OrdValBatch<FlatLayout<VC, R>>) -> usize
where
    FlatLayout<VC, R>: FlatBatchLayout<VC, R>,
    VC: ValueBytes,
{
    let storage = &batch.storage;
    storage.keys.heap_bytes()
        + offset_bytes(&storage.vals.offs)
        + storage.vals.vals.heap_bytes()
        + offset_bytes(&storage.upds.offs)
        + storage.upds.times.capacity() * std::mem::size_of::<repr::Timestamp>()
        + storage.upds.diffs.capacity() * std::mem::size_of::<R>()
}

/// The bytes of an offset list's buffers.
pub(crate) fn offset_bytes(offsets: &OffsetList) -> usize {
    offsets.smol.capacity() * std::mem::size_of::<u32>()
        + offsets.chonk.capacity() * std::mem::size_of::<u64>()
}

/// The bytes an operator says its state holds, which it sets as the state changes.
pub(crate) struct StateMeter(Rc<Cell<usize>>);

impl StateMeter {
    /// A meter of the dataflow being built, reading zero until set.
    pub(crate) fn new() -> Self {
        let bytes = Rc::new(Cell::new(0));
        let read = Rc::downgrade(&bytes);
        add(Meter(Box::new(move || {
            read.upgrade().map(|bytes| bytes.get())
        })));
        StateMeter(bytes)
    }

    /// Records that the state holds `bytes` now.
    pub(crate) fn set(&self, bytes: usize) {
        self.0.set(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_meters_read_what_was_set_until_dropped() {
        let meter = StateMeter::new();
        let mut built = take_built();
        assert_eq!(built.len(), 1);
        assert!(take_built().is_empty(), "taking empties the list");
        meter.set(1234);
        assert_eq!(built[0].read(), Some(1234));
        drop(meter);
        assert_eq!(built[0].read(), None);
    }
}
