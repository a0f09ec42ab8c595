//! Thresholding arranged presences: what a change of a presence's member counts adds to its
//! group.
//!
//! Semantics: for every `(presence, t, counts)` update in a new batch, in time order per
//! presence, `thresh(presence, after, before)` sees the presence's member counts before the
//! update (`None` if it never had any) and after it, and its answer (if any) is emitted at `t`.
//! The counts before the batch come from the presences' trace as of the batch's lower bound.
//! This is differential's `threshold_semigroup`, over a trace whose keys are flat rows (which
//! differential's own operator, asking for owned keys, cannot read).

use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::operators::arrange::Arranged;
use differential_dataflow::trace::cursor::cursor_list;
use differential_dataflow::trace::{Cursor, TraceReader};
use differential_dataflow::AsCollection;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::CapabilitySet;
use timely::progress::Antichain;

use super::distinct::{MemberCounts, PresenceTrace};
use super::{Accumulation, AccumulationUpdates};
use crate::row_container::RowRef;

/// Emits, for each update of each new batch of `presences`, what `thresh` makes of the
/// presence's counts before and after it, keyed by what `key` makes of the presence.
pub(super) fn threshold_presences<'s, K, F>(
    presences: Arranged<'s, PresenceTrace>,
    mut key: K,
    mut thresh: F,
) -> AccumulationUpdates<'s>
where
    K: FnMut(RowRef<'_>) -> repr::Row + 'static,
    F: FnMut(RowRef<'_>, &MemberCounts, Option<&MemberCounts>) -> Option<Accumulation> + 'static,
{
    let mut trace = presences.trace.clone();
    presences
        .stream
        .unary_frontier(Pipeline, "ThresholdPresences", move |_, _| {
            // Batches arrive in order; the trace holds everything before `lower`.
            let mut upper = Antichain::from_elem(0);
            move |(input, _frontier), output| {
                let lower = upper.clone();
                let mut batches = Vec::new();
                let mut capabilities = CapabilitySet::new();
                input.for_each(|capability, spans| {
                    for capability in capability.retain_stamp(0).iter() {
                        capabilities.insert(capability.clone());
                    }
                    for span in spans.drain(..) {
                        upper.clone_from(span.upper());
                        batches.extend(span.inner);
                    }
                });
                if !capabilities.is_empty() {
                    let mut session = output.session(&capabilities);
                    let (mut new, new_storage) = cursor_list(batches);
                    let (mut old, old_storage) = cursor_list(
                        trace
                            .batches_through(lower.borrow())
                            .expect("invariant: the trace is not compacted past what is read"),
                    );
                    while let Some(presence) = new.get_key(&new_storage) {
                        let mut counts: Option<MemberCounts> = None;
                        old.seek_key(&old_storage, presence);
                        if old.get_key(&old_storage) == Some(presence) {
                            old.map_times(&old_storage, |_, diff| add(&mut counts, diff));
                        }
                        new.map_times(&new_storage, |time, diff| {
                            let before = counts;
                            add(&mut counts, diff);
                            let after = counts.unwrap_or_default();
                            if let Some(change) = thresh(presence, &after, before.as_ref()) {
                                if !change.is_zero() {
                                    session.give(((key(presence), ()), *time, change));
                                }
                            }
                        });
                        new.step_key(&new_storage);
                    }
                }
                // Everything before `upper` is read (and empty spans after it need no reading):
                // the trace may forget the distinctions.
                trace.advance_upper(&mut upper);
                trace.set_logical_compaction(upper.borrow());
                trace.set_physical_compaction(upper.borrow());
            }
        })
        .as_collection()
}

/// Adds `diff` to the running `counts`.
fn add(counts: &mut Option<MemberCounts>, diff: &MemberCounts) {
    match counts {
        Some(counts) => counts.plus_equals(diff),
        None => *counts = Some(*diff),
    }
}
