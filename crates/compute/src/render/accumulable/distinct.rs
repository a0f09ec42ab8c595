//! DISTINCT count, sum and avg inside the accumulating reduction.
//!
//! Semantics on `(row, t, d)` updates: the DISTINCT aggregates that read the same argument
//! column the same way form a [`Share`] (`count(DISTINCT bidder)` with and without FILTERs,
//! say). For each share whose argument is not NULL in the row, the row yields a *presence*
//! `group key ++ share ++ value` whose difference counts, per member aggregate, `d` if the row
//! passes the member's FILTER and 0 if not. Differential dataflow adds up each presence's
//! counts; a thresholding operator sees a member's count of a value go from zero to positive
//! (the value enters the aggregate: its accumulation is count 1 and, for sum and avg, the
//! value) or back (the accumulation taken back), and otherwise emits nothing. So a change costs
//! O(1) whatever the size of its group (recomputing a group's distinct values cost O(group)
//! per change, so a growing group made the total quadratic). The accumulations join the rows'
//! own in the accumulating reduction. State: one arranged presence per (group, share, value),
//! in flat batches: its bytes in the batch's buffer and its counts a fixed-width array (a share
//! has at most [`MEMBERS`] members; more aggregates over one argument make more shares).

use std::rc::Rc;

use datafusion::arrow::array::{Array, ArrayRef, RecordBatch};
use datafusion::arrow::row::{RowConverter, SortField};
use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::VecCollection;
use plan::{AggregateExpr, AggregateFunc};
use repr::{Diff, Row, Timestamp};
use serde::{Deserialize, Serialize};
use smallvec::{smallvec, SmallVec};

use super::super::aggregate::integer_values;
use super::super::RenderError;
use super::threshold::threshold_presences;
use super::{passes_filter, Accumulation, AccumulationUpdates};
use crate::arrangement::{FlatBatcher, FlatSpine};

/// The most member aggregates one share counts for.
const MEMBERS: usize = 4;

/// A presence's difference: per member aggregate of its share, the rows holding the value
/// that pass the member's FILTER.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub(super) struct MemberCounts([Diff; MEMBERS]);

impl IsZero for MemberCounts {
    fn is_zero(&self) -> bool {
        self.0.iter().all(|count| *count == 0)
    }
}

impl Semigroup for MemberCounts {
    fn plus_equals(&mut self, rhs: &Self) {
        for (count, more) in self.0.iter_mut().zip(rhs.0) {
            *count += more;
        }
    }
}

/// Sorts and consolidates presences into flat batches.
type PresenceBatcher = FlatBatcher<Vec<()>, (), MemberCounts>;

/// The arranged presences: keys flat, no values, fixed-width counts.
type PresenceSpine = FlatSpine<Vec<()>, MemberCounts>;

/// A handle to the arranged presences.
pub(super) type PresenceTrace = TraceAgent<PresenceSpine>;

/// Whether `aggregate` is counted through presences rather than through its rows.
pub(super) fn counts_values(aggregate: &AggregateExpr) -> bool {
    aggregate.distinct
        && matches!(
            aggregate.func,
            AggregateFunc::Count | AggregateFunc::Sum | AggregateFunc::Avg
        )
}

/// How the distinct values of an argument are told apart.
enum DistinctValues {
    /// For `count(DISTINCT x)`: values of any type, by their arrow row encoding.
    Counted(RowConverter),
    /// For `sum`/`avg(DISTINCT x)` of integers or decimals: by the exact value (16 bytes,
    /// big-endian), which the aggregates also need.
    Summed,
}

impl DistinctValues {
    /// Per row of `column`: the value's distinguishing bytes, `None` where it is NULL.
    fn encode(&self, column: &ArrayRef) -> Vec<Option<Vec<u8>>> {
        let rows = column.len();
        match self {
            DistinctValues::Counted(converter) => {
                let Ok(encoded) = converter.convert_columns(std::slice::from_ref(column)) else {
                    return vec![None; rows];
                };
                (0..rows)
                    .map(|i| column.is_valid(i).then(|| encoded.row(i).data().to_vec()))
                    .collect()
            }
            DistinctValues::Summed => integer_values(column)
                .unwrap_or_else(|_| vec![None; rows])
                .into_iter()
                .map(|v| v.map(|v| v.to_be_bytes().to_vec()))
                .collect(),
        }
    }
}

/// DISTINCT aggregates (at most [`MEMBERS`]) that read one argument column the same way, and
/// so share presences.
pub(super) struct Share {
    /// The argument column.
    column: usize,
    values: DistinctValues,
    /// The member aggregates, as positions among the reduction's aggregates.
    members: Vec<usize>,
}

impl Share {
    /// The shares of `aggregates`' DISTINCT count, sum and avg (none if there are none).
    pub(super) fn all(aggregates: &[AggregateExpr]) -> Result<Vec<Share>, RenderError> {
        let mut shares: Vec<Share> = Vec::new();
        for (position, aggregate) in aggregates.iter().enumerate() {
            let (true, Some(column)) = (counts_values(aggregate), aggregate.arg) else {
                continue;
            };
            let summed = aggregate.func != AggregateFunc::Count;
            let same = |share: &&mut Share| {
                share.column == column
                    && matches!(share.values, DistinctValues::Summed) == summed
                    && share.members.len() < MEMBERS
            };
            if let Some(share) = shares.iter_mut().find(same) {
                share.members.push(position);
                continue;
            }
            let values = if summed {
                DistinctValues::Summed
            } else {
                let data_type = aggregate
                    .input_type
                    .clone()
                    .ok_or_else(|| RenderError("count(DISTINCT) without an argument".into()))?;
                let converter = RowConverter::new(vec![SortField::new(data_type)])
                    .map_err(|e| RenderError(e.to_string()))?;
                DistinctValues::Counted(converter)
            };
            shares.push(Share {
                column,
                values,
                members: vec![position],
            });
        }
        Ok(shares)
    }
}

/// Presence updates: `(presence, ())` weighted by its members' counts.
pub(super) type PresenceUpdates<'s> = VecCollection<'s, Timestamp, (Row, ()), MemberCounts>;

/// The accumulations the distinct values behind `presences` add to their groups: the
/// presences arranged, and thresholded into what each change of a member's count adds.
pub(super) fn value_accumulations<'s>(
    presences: PresenceUpdates<'s>,
    shares: Rc<Vec<Share>>,
    width: usize,
) -> AccumulationUpdates<'s> {
    let arranged = presences.arrange_named::<PresenceBatcher, PresenceSpine>(
        "Arrange: DistinctValues",
        PresenceBatcher::new,
    );
    crate::memory_meters::meter_spine(&arranged.trace);
    threshold_presences(
        arranged,
        |presence| group_key(presence.as_ref()),
        move |presence, counts, before| {
            value_accumulation(presence.as_ref(), &shares, width, counts, before)
        },
    )
}

/// `((presence, ()), time, counts)` for every share each row of `batch` takes part in. A
/// presence is the group key's length (4 bytes, big-endian), the group key, the share's
/// position (4 bytes, big-endian) and the value's bytes; its counts hold, per member, the
/// row's diff if the row passes the member's FILTER, else 0.
pub(super) fn presences(
    aggregates: &[AggregateExpr],
    shares: &[Share],
    batch: &RecordBatch,
    keys: &[Row],
    updates: &[(Timestamp, Diff)],
) -> Vec<((Row, ()), Timestamp, MemberCounts)> {
    let mut presences = Vec::new();
    for (s, share) in shares.iter().enumerate() {
        let passes: Vec<Vec<bool>> = share
            .members
            .iter()
            .map(|&m| passes_filter(&aggregates[m], batch))
            .collect();
        let position = u32::try_from(s)
            .expect("invariant: fewer than 2^32 shares")
            .to_be_bytes();
        for (i, value) in share
            .values
            .encode(batch.column(share.column))
            .into_iter()
            .enumerate()
        {
            let Some(value) = value else { continue };
            let mut counts = MemberCounts::default();
            for (count, member) in counts.0.iter_mut().zip(&passes) {
                if member[i] {
                    *count = updates[i].1;
                }
            }
            if counts.is_zero() {
                continue;
            }
            let key = keys[i].as_bytes();
            let key_len = u32::try_from(key.len())
                .expect("invariant: group keys are shorter than 4 GiB")
                .to_be_bytes();
            let presence = [&key_len[..], key, &position[..], &value].concat();
            presences.push(((Row::from_bytes(&presence), ()), updates[i].0, counts));
        }
    }
    presences
}

/// The group key a presence belongs to.
fn group_key(presence: &[u8]) -> Row {
    let (key_len, rest) = presence.split_at(4);
    let key_len = u32::from_be_bytes(key_len.try_into().expect("invariant: 4-byte length"));
    Row::from_bytes(&rest[..key_len as usize])
}

/// What a presence's change of counts from `before` to `counts` adds to its group: for each
/// member whose count turned positive, a count of one and, for sum and avg, the value; for each
/// whose count fell to zero, the same taken back. `None` when no member changed.
fn value_accumulation(
    presence: &[u8],
    shares: &[Share],
    width: usize,
    counts: &MemberCounts,
    before: Option<&MemberCounts>,
) -> Option<Accumulation> {
    let (key_len, rest) = presence.split_at(4);
    let key_len = u32::from_be_bytes(key_len.try_into().expect("invariant: 4-byte length"));
    let (position, value) = rest[key_len as usize..].split_at(4);
    let share =
        &shares[u32::from_be_bytes(position.try_into().expect("invariant: 4 bytes")) as usize];
    let value = match share.values {
        DistinctValues::Summed => {
            i128::from_be_bytes(value.try_into().expect("invariant: 16-byte summed value"))
        }
        DistinctValues::Counted(_) => 1,
    };
    let mut sums: SmallVec<[i128; 5]> = smallvec![0i128; 1 + 2 * width];
    let mut changed = false;
    for (j, &member) in share.members.iter().enumerate() {
        let present = counts.0[j] > 0;
        let was_present = before.is_some_and(|b| b.0[j] > 0);
        let delta = i128::from(present) - i128::from(was_present);
        if delta != 0 {
            sums[1 + 2 * member] = value * delta;
            sums[2 + 2 * member] = delta;
            changed = true;
        }
    }
    changed.then(|| Accumulation {
        sums,
        extremes: smallvec![None; width],
    })
}
