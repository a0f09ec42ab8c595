//! Temporal filter: rows that are in the view only while the clock is within bounds.
//!
//! Semantics on `(row, t, d)` updates: each bound compares the clock with an expression of the
//! row (a timestamp); the row holds from the first millisecond at which every bound holds and
//! until the first at which one fails. The update becomes `(row, max(t, from), d)` and, if the
//! row ever leaves, `(row, until, -d)`: a retraction at a future time, which readers see once
//! the timeline (milliseconds of the wall clock; it moves every second even without writes)
//! passes it. A row whose bound is NULL or cannot be computed is never in the view.
//! Stateless: the future retractions wait in differential's operators downstream.

use std::collections::BTreeMap;

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit, TimestampMicrosecondType};
use differential_dataflow::AsCollection;
use plan::{ClockComparison, TemporalBound};
use repr::{Diff, GlobalId, Row, Timestamp};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;

use super::{codec, RenderError, RowCollection, Update};
use crate::errors::DataflowErrors;

/// Renders a temporal filter with `bounds` over `input`, rows of `schema`.
pub(crate) fn render<'s>(
    input: RowCollection<'s>,
    schema: &SchemaRef,
    bounds: Vec<TemporalBound>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let codec = codec(schema)?;
    let (dataflow, errors) = errors;
    Ok(input
        .inner
        .unary::<CapacityContainerBuilder<Vec<Update>>, _, _, _>(
            Pipeline,
            "TemporalFilter",
            move |_, _| {
                move |input, output| {
                    input.for_each(|capability, data| {
                        let batch = codec
                            .decode(data.iter().map(|(row, _, _)| row))
                            .expect("invariant: rows decode with the codec of their schema");
                        let mut intervals = vec![(Timestamp::MIN, Timestamp::MAX); data.len()];
                        for bound in &bounds {
                            let values = bound
                                .expr
                                .evaluate(&batch)
                                .and_then(|v| v.into_array(batch.num_rows()))
                                .and_then(|array| {
                                    let micros = DataType::Timestamp(TimeUnit::Microsecond, None);
                                    Ok(cast(&array, &micros)?)
                                });
                            let values = match values {
                                Ok(values) => values,
                                Err(e) => {
                                    let rows = data.iter().map(|(_, _, d)| *d).sum();
                                    errors.record(
                                        dataflow,
                                        rows,
                                        data.len() as u64,
                                        &e.to_string(),
                                    );
                                    return;
                                }
                            };
                            let values = values.as_primitive::<TimestampMicrosecondType>();
                            for (i, interval) in intervals.iter_mut().enumerate() {
                                *interval = match values.is_valid(i) {
                                    true => narrow(*interval, bound.clock, values.value(i)),
                                    false => (Timestamp::MAX, Timestamp::MAX),
                                };
                            }
                        }
                        let mut by_time: BTreeMap<Timestamp, Vec<(Row, Diff)>> = BTreeMap::new();
                        for ((row, time, diff), (from, until)) in data.drain(..).zip(intervals) {
                            let from = from.max(time);
                            if from >= until {
                                continue;
                            }
                            if until != Timestamp::MAX {
                                by_time.entry(until).or_default().push((row.clone(), -diff));
                            }
                            by_time.entry(from).or_default().push((row, diff));
                        }
                        for (time, updates) in by_time {
                            let at = capability.delayed(&time, 0);
                            let mut session = output.session(&at);
                            for (row, diff) in updates {
                                session.give((row, time, diff));
                            }
                        }
                    });
                }
            },
        )
        .as_collection())
}

/// The milliseconds `[from, until)` of `interval` in which the clock also compares with
/// `micros` (a timestamp in microseconds) as `clock` says.
fn narrow(
    (from, until): (Timestamp, Timestamp),
    clock: ClockComparison,
    micros: i64,
) -> (Timestamp, Timestamp) {
    let millis = |ms: i64| Timestamp::try_from(ms).unwrap_or(0);
    let floor = micros.div_euclid(1_000);
    let ceil = floor + i64::from(micros.rem_euclid(1_000) != 0);
    match clock {
        // clock * 1000 < micros: the clock is below ceil(micros / 1000).
        ClockComparison::Before => (from, until.min(millis(ceil))),
        // clock * 1000 <= micros: the clock is at most floor(micros / 1000).
        ClockComparison::AtOrBefore => (from, until.min(millis(floor + 1))),
        // clock * 1000 > micros: the clock is at least floor(micros / 1000) + 1.
        ClockComparison::After => (from.max(millis(floor + 1)), until),
        // clock * 1000 >= micros: the clock is at least ceil(micros / 1000).
        ClockComparison::AtOrAfter => (from.max(millis(ceil)), until),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_round_to_the_milliseconds_that_satisfy_them() {
        let all = (0, Timestamp::MAX);
        assert_eq!(narrow(all, ClockComparison::Before, 5_000), (0, 5));
        assert_eq!(narrow(all, ClockComparison::Before, 5_001), (0, 6));
        assert_eq!(narrow(all, ClockComparison::AtOrBefore, 5_000), (0, 6));
        assert_eq!(
            narrow(all, ClockComparison::After, 5_000),
            (6, Timestamp::MAX)
        );
        assert_eq!(
            narrow(all, ClockComparison::AtOrAfter, 5_000),
            (5, Timestamp::MAX)
        );
        assert_eq!(
            narrow(all, ClockComparison::AtOrAfter, 5_001),
            (6, Timestamp::MAX)
        );
        assert_eq!(narrow(all, ClockComparison::Before, -3), (0, 0));
    }
}
