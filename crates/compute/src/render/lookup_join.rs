//! Lookup joins: each left update joins the right rows of its key as they stand at its time
//! (see [`plan::Plan::LookupJoin`]).
//!
//! Semantics on `(row, t, d)` updates: the right side is arranged by key; a left update
//! `(l, t, d)` waits until the arrangement is complete through `t`, then meets the right rows
//! `r` of its key accumulated at `t` (multiplicity `m_r`): `(l ++ r, t, d * m_r)`, or, in the
//! outer form, `(l ++ NULLs, t, d)` when there are none (in the semi form, `(l, t, d)` when
//! there is one). Changes of the right side emit
//! nothing: what was joined stays joined. State: the right side's arrangement (kept readable
//! back to the oldest left update still waiting), and the left updates waiting for it; the
//! left side is not kept.

use std::collections::BTreeMap;

use differential_dataflow::hashable::Hashable;
use differential_dataflow::trace::cursor::cursor_list;
use differential_dataflow::trace::{Cursor, TraceReader};
use differential_dataflow::AsCollection;
use plan::JoinKind;
use repr::{Diff, GlobalId, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::progress::Antichain;

use super::join::{JoinSides, KeyedRows, KeyedSides};
use super::{RenderError, RowCollection};
use crate::arrangement::arrange_rows;
use crate::errors::DataflowErrors;
use crate::peek::values_at;
use crate::row_container::RowRef;

/// Left updates waiting for the right side to be complete through their time.
type Waiting = BTreeMap<Timestamp, (Capability<Timestamp>, Vec<((Row, Row), Diff)>)>;

/// What rendering a lookup join needs.
pub(crate) struct LookupSpec<'p> {
    pub sides: JoinSides<'p>,
    /// `Inner`, `LeftOuter` or `LeftSemi`.
    pub kind: JoinKind,
}

/// What a lookup join emits for a left update.
enum Output {
    /// The update with each matching right row.
    Pairs,
    /// The same, and the update padded with this (NULL) right row when nothing matches.
    Padded(Row),
    /// The update alone, once, if anything matches (a semi join).
    Matched,
}

/// Renders a lookup join of the already rendered inputs.
pub(crate) fn render<'s>(
    left: RowCollection<'s>,
    right: RowCollection<'s>,
    spec: LookupSpec<'_>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let KeyedSides {
        left,
        left_null_keyed,
        right,
        padding,
    } = spec.sides.key(left, right, errors)?;
    let output = match spec.kind {
        JoinKind::Inner => Output::Pairs,
        JoinKind::LeftOuter => Output::Padded(padding.clone()),
        JoinKind::LeftSemi => Output::Matched,
        other => return Err(RenderError(format!("a {other:?} lookup join"))),
    };
    let joined = look_up(left, right, output);
    Ok(match spec.kind {
        JoinKind::LeftOuter => joined.concat(left_null_keyed.map(move |row| row.concat(&padding))),
        _ => joined,
    })
}

/// Each update of `left` joined, as `output` says, with the rows of its key that `right`
/// holds at its time.
fn look_up<'s>(
    left: KeyedRows<'s>,
    right: KeyedRows<'s>,
    output_kind: Output,
) -> RowCollection<'s> {
    let arranged = arrange_rows(right, "LookupRight");
    let mut trace = arranged.trace.clone();
    // The left updates go where the arrangement keeps their key.
    let by_key = Exchange::new(|((key, _), _, _): &((Row, Row), Timestamp, Diff)| key.hashed());
    left.inner
        .binary_frontier::<_, CapacityContainerBuilder<Vec<(Row, Timestamp, Diff)>>, _, _, _, _>(
            arranged.stream.clone(),
            by_key,
            Pipeline,
            "LookupJoin",
            move |_, _| {
                let mut waiting: Waiting = BTreeMap::new();
                move |(lefts, left_frontier), (batches, right_frontier), output| {
                    lefts.for_each(|capability, data| {
                        for (pair, time, diff) in data.drain(..) {
                            waiting
                                .entry(time)
                                .or_insert_with(|| (capability.delayed(&time, 0), Vec::new()))
                                .1
                                .push((pair, diff));
                        }
                    });
                    batches.for_each(|_, _| {});
                    let complete: Antichain<Timestamp> =
                        right_frontier.frontier().iter().copied().collect();
                    let ready: Vec<Timestamp> = waiting
                        .keys()
                        .copied()
                        .filter(|time| !complete.less_equal(time))
                        .collect();
                    if !ready.is_empty() {
                        let spine = trace.batches_through(complete.borrow()).unwrap_or_default();
                        let (mut cursor, storage) = cursor_list(spine);
                        for time in ready {
                            let Some((capability, mut updates)) = waiting.remove(&time) else {
                                continue;
                            };
                            // In key order, so that one pass of the cursor finds every key.
                            updates.sort_by(|((a, _), _), ((b, _), _)| a.cmp(b));
                            cursor.rewind_keys(&storage);
                            let mut session = output.session(&capability);
                            for ((key, row), diff) in updates {
                                let mut matches = Vec::new();
                                let key = RowRef::from(&key);
                                cursor.seek_key(&storage, key);
                                if cursor.get_key(&storage) == Some(key) {
                                    cursor.rewind_vals(&storage);
                                    values_at(&mut cursor, &storage, time, |value, count| {
                                        matches.push((value.to_row(), count))
                                    });
                                }
                                match &output_kind {
                                    Output::Matched if !matches.is_empty() => {
                                        session.give((row, time, diff))
                                    }
                                    Output::Matched => {}
                                    Output::Padded(padding) if matches.is_empty() => {
                                        session.give((row.concat(padding), time, diff))
                                    }
                                    Output::Pairs | Output::Padded(_) => {
                                        for (value, count) in matches {
                                            let joined = row.concat(&value);
                                            session.give((joined, time, diff * count));
                                        }
                                    }
                                }
                            }
                        }
                    }
                    // Keep the right side readable at every time a left update may still
                    // come or wait at.
                    let mut readable: Antichain<Timestamp> =
                        left_frontier.frontier().iter().copied().collect();
                    if let Some(oldest) = waiting.keys().next() {
                        readable.insert(*oldest);
                    }
                    trace.set_logical_compaction(readable.borrow());
                    trace.set_physical_compaction(complete.borrow());
                }
            },
        )
        .as_collection()
}
