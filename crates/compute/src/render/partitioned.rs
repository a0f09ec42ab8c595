//! Rows keyed by their partition, and operators that take each time's updates of a partition
//! together (window functions, the monotonic top-k).

use std::collections::BTreeMap;

use differential_dataflow::hashable::Hashable;
use differential_dataflow::{AsCollection, VecCollection};
use repr::{Diff, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::generic::Operator;

/// Rows keyed by their partition.
pub(super) type Partitioned<'s> = VecCollection<'s, Timestamp, (Row, Row), Diff>;

/// One update of [`Partitioned`].
type PartitionedUpdate = ((Row, Row), Timestamp, Diff);

/// An operator named `name` over `rows`, exchanged by partition, that passes the updates of
/// each time to `apply` once the input frontier has passed that time (in time order), and
/// sends what `apply` returns at the same time.
pub(super) fn apply_by_time<'s, D, F>(
    rows: Partitioned<'s>,
    name: &str,
    mut apply: F,
) -> VecCollection<'s, Timestamp, D, Diff>
where
    D: timely::ExchangeData,
    F: FnMut(Vec<((Row, Row), Diff)>) -> Vec<(D, Diff)> + 'static,
{
    let by_partition = Exchange::new(|((key, _), _, _): &PartitionedUpdate| key.hashed());
    rows.inner
        .unary_frontier::<CapacityContainerBuilder<Vec<(D, Timestamp, Diff)>>, _, _, _>(
            by_partition,
            name,
            move |_, _| {
                let mut pending = BTreeMap::new();
                move |(input, frontier), output| {
                    input.for_each(|capability, data| {
                        for (pair, time, diff) in data.drain(..) {
                            pending
                                .entry(time)
                                .or_insert_with(|| (capability.delayed(&time, 0), Vec::new()))
                                .1
                                .push((pair, diff));
                        }
                    });
                    while let Some(entry) = pending.first_entry() {
                        if frontier.frontier().less_equal(entry.key()) {
                            break;
                        }
                        let (time, (capability, updates)) = entry.remove_entry();
                        let mut session = output.session(&capability);
                        for (data, diff) in apply(updates) {
                            session.give((data, time, diff));
                        }
                    }
                }
            },
        )
        .as_collection()
}
