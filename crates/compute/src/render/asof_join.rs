//! ASOF joins: each left row with the right rows of its key at the closest time on one side
//! of its own (see [`plan::Plan::AsOfJoin`]).
//!
//! Semantics on `(row, t, d)` updates: both sides are keyed by the join key and arranged
//! together, tagged by side; when a key changes at `t`, its consolidated right rows are
//! sorted by time and each of its left rows is emitted with the right rows at the closest
//! time the match allows (multiplicity `d_l * d_r`), or padded with NULLs in the outer form,
//! replacing the key's previous output. A new right row so moves exactly the left rows it
//! becomes closest to. Left rows whose key holds a NULL match nothing and skip the
//! arrangement. State: the arranged input and output, per key: the work of a change is that
//! of its key's rows.

use std::cmp::Ordering;
use std::sync::Arc;

use datafusion::arrow::array::{
    make_comparator, new_null_array, Array, ArrayRef, DynComparator, UInt32Array,
};
use datafusion::arrow::compute::{sort_to_indices, take, SortOptions};
use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use plan::{AsOfMatch, ScalarExpr};
use repr::{Diff, GlobalId, Row};

use super::evaluate::RowEvaluator;
use super::join::{JoinSides, KeyedSides};
use super::{codec, RenderError, RowCollection};
use crate::errors::DataflowErrors;

/// What rendering an ASOF join needs.
pub(crate) struct AsOfSpec<'p> {
    pub sides: JoinSides<'p>,
    pub outer: bool,
    pub left_time: &'p ScalarExpr,
    pub right_time: &'p ScalarExpr,
    pub matches: AsOfMatch,
}

/// The side a keyed row comes from; left rows sort first.
const LEFT: u8 = 0;
const RIGHT: u8 = 1;

/// Renders an ASOF join of the already rendered inputs.
pub(crate) fn render<'s>(
    left: RowCollection<'s>,
    right: RowCollection<'s>,
    spec: AsOfSpec<'_>,
    errors: (GlobalId, DataflowErrors),
) -> Result<RowCollection<'s>, RenderError> {
    let KeyedSides {
        left,
        left_null_keyed,
        right,
        padding,
    } = spec.sides.key(left, right, errors)?;
    let matcher = Matcher {
        left_times: TimeEvaluator::new(spec.sides.left_schema, spec.left_time)?,
        right_times: TimeEvaluator::new(spec.sides.right_schema, spec.right_time)?,
        matches: spec.matches,
        padding: spec.outer.then(|| padding.clone()),
    };
    let tagged = left
        .map(|(key, row)| (key, (LEFT, row)))
        .concat(right.map(|(key, row)| (key, (RIGHT, row))));
    let mut joined = tagged
        .reduce_named(
            "AsOfJoin",
            move |_key, input: &[(&(u8, Row), Diff)], out: &mut Vec<(Row, Diff)>| {
                matcher.join(input, out);
            },
        )
        .map(|(_, row)| row);
    if spec.outer {
        joined = joined.concat(left_null_keyed.map(move |row| row.concat(&padding)));
    }
    Ok(joined)
}

/// Evaluates one side's time expression over its rows.
struct TimeEvaluator {
    evaluator: RowEvaluator,
    data_type: datafusion::arrow::datatypes::DataType,
}

impl TimeEvaluator {
    fn new(schema: &SchemaRef, time: &ScalarExpr) -> Result<Self, RenderError> {
        let data_type = time
            .data_type(schema.as_ref())
            .map_err(|e| RenderError(e.to_string()))?;
        let output = Arc::new(Schema::new(vec![Field::new(
            "time",
            data_type.clone(),
            true,
        )]));
        Ok(Self {
            evaluator: RowEvaluator::new(codec(schema)?, codec(&output)?, None, vec![time.clone()]),
            data_type,
        })
    }

    /// The time of each of `rows`; NULL where it is NULL or could not be computed.
    fn times<'a>(&self, rows: impl ExactSizeIterator<Item = &'a Row> + Clone) -> ArrayRef {
        let count = rows.len();
        let evaluated = self.evaluator.evaluate_columns(rows);
        let computed = evaluated.batch.column(0).clone();
        if evaluated.indices.len() == count {
            return computed;
        }
        // Some rows failed: put NULLs in their places.
        let mut positions: Vec<Option<u32>> = vec![None; count];
        for (position, index) in evaluated.indices.iter().enumerate() {
            positions[*index] = Some(position as u32);
        }
        let positions = UInt32Array::from(positions);
        take(computed.as_ref(), &positions, None)
            .unwrap_or_else(|_| new_null_array(&self.data_type, count))
    }
}

/// Matches one key's left rows with its right rows.
struct Matcher {
    left_times: TimeEvaluator,
    right_times: TimeEvaluator,
    matches: AsOfMatch,
    /// The NULL right row that pads unmatched left rows, in the outer form.
    padding: Option<Row>,
}

impl Matcher {
    /// `input` is one key's rows, left rows first, with their multiplicities.
    fn join(&self, input: &[(&(u8, Row), Diff)], out: &mut Vec<(Row, Diff)>) {
        let split = input.partition_point(|((side, _), _)| *side == LEFT);
        let (lefts, rights) = input.split_at(split);
        if lefts.is_empty() {
            return;
        }
        let left_times = self.left_times.times(lefts.iter().map(|((_, row), _)| row));
        let right_times = self
            .right_times
            .times(rights.iter().map(|((_, row), _)| row));
        let Some(candidates) = Candidates::new(&left_times, &right_times) else {
            return;
        };
        for (i, ((_, left), left_diff)) in lefts.iter().enumerate() {
            let matched = candidates.closest(i, self.matches);
            for &j in matched {
                let ((_, right), right_diff) = rights[j as usize];
                out.push((left.concat(right), left_diff * right_diff));
            }
            if matched.is_empty() {
                if let Some(padding) = &self.padding {
                    out.push((left.concat(padding), *left_diff));
                }
            }
        }
    }
}

/// A key's right rows in time order, to search from its left rows' times.
struct Candidates {
    /// Positions of the right rows with a time, in ascending time order.
    sorted: Vec<u32>,
    /// Compares a left time with a right time.
    left_to_right: DynComparator,
    /// Compares two right times.
    right_to_right: DynComparator,
    left_times: ArrayRef,
}

impl Candidates {
    fn new(left_times: &ArrayRef, right_times: &ArrayRef) -> Option<Self> {
        let options = SortOptions {
            descending: false,
            nulls_first: false,
        };
        let order = sort_to_indices(right_times.as_ref(), Some(options), None).ok()?;
        let with_time = order.len() - right_times.null_count();
        Some(Self {
            sorted: order.values()[..with_time].to_vec(),
            left_to_right: make_comparator(left_times.as_ref(), right_times.as_ref(), options)
                .ok()?,
            right_to_right: make_comparator(right_times.as_ref(), right_times.as_ref(), options)
                .ok()?,
            left_times: left_times.clone(),
        })
    }

    /// The right rows left row `left` matches: those at the closest time `matches` allows.
    fn closest(&self, left: usize, matches: AsOfMatch) -> &[u32] {
        if self.left_times.is_null(left) {
            return &[];
        }
        // Right rows before the left time (at it too, when equal times match) come first.
        let before = |j: &u32| match (self.left_to_right)(left, *j as usize) {
            Ordering::Greater => true,
            Ordering::Equal => matches.includes_equal() == matches.takes_latest(),
            Ordering::Less => false,
        };
        let split = self.sorted.partition_point(before);
        let same_time = |a: u32, b: u32| (self.right_to_right)(a as usize, b as usize).is_eq();
        if matches.takes_latest() {
            let Some(&best) = self.sorted[..split].last() else {
                return &[];
            };
            let start = self.sorted[..split].partition_point(|&j| !same_time(j, best));
            &self.sorted[start..split]
        } else {
            let Some(&best) = self.sorted.get(split) else {
                return &[];
            };
            let tail = &self.sorted[split..];
            &tail[..tail.partition_point(|&j| same_time(j, best))]
        }
    }
}
