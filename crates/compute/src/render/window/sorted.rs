//! One partition's rows in the window's order, and the walks that find which rows a change
//! reaches.
//!
//! A row's place is its [`Position`]: the memcomparable encoding of its order columns, then
//! its own bytes (ties are broken by the rows' bytes). Every walk counts a row with several
//! copies once per copy, as the window functions count them.

use std::borrow::Borrow;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;

use plan::{Extent, WindowReach};
use repr::Diff;

/// Where a row sits in its partition: its order key, then its bytes.
#[derive(Debug, Clone)]
pub(super) struct Position {
    bytes: Box<[u8]>,
    /// The length of the order key at the front of `bytes`.
    split: u32,
}

impl Position {
    /// The position of the row `row` whose order columns encode to `order`.
    pub(super) fn new(order: &[u8], row: &[u8]) -> Self {
        let mut bytes = Vec::with_capacity(order.len() + row.len());
        bytes.extend_from_slice(order);
        bytes.extend_from_slice(row);
        Self {
            bytes: bytes.into(),
            split: u32::try_from(order.len()).expect("invariant: order keys are under 4 GiB"),
        }
    }

    /// The encoded order columns.
    fn order(&self) -> &[u8] {
        &self.bytes[..self.split as usize]
    }

    /// The row's own bytes.
    pub(super) fn row(&self) -> &[u8] {
        &self.bytes[self.split as usize..]
    }
}

// The order key is a prefix-free encoding, so the bytes alone determine the split.
impl PartialEq for Position {
    fn eq(&self, other: &Self) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for Position {}

impl PartialOrd for Position {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Position {
    fn cmp(&self, other: &Self) -> Ordering {
        self.bytes.cmp(&other.bytes)
    }
}

impl Borrow<[u8]> for Position {
    fn borrow(&self) -> &[u8] {
        &self.bytes
    }
}

/// A range of positions, bounds included; `None` is the partition's start (for `from`) or
/// end (for `to`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Span {
    pub from: Option<Position>,
    pub to: Option<Position>,
}

impl Span {
    /// The whole partition.
    pub(super) const WHOLE: Span = Span {
        from: None,
        to: None,
    };

    /// The smallest span holding both.
    fn join(self, other: Span) -> Span {
        Span {
            from: self.from.zip(other.from).map(|(a, b)| a.min(b)),
            to: self.to.zip(other.to).map(|(a, b)| a.max(b)),
        }
    }

    /// Whether the spans share a position (`self` starting no later than `next`).
    fn overlaps(&self, next: &Span) -> bool {
        match (&self.to, &next.from) {
            (Some(to), Some(from)) => from <= to,
            _ => true,
        }
    }

    /// The range of keys the span covers in a map keyed by [`Position`].
    fn range(&self) -> (Bound<&[u8]>, Bound<&[u8]>) {
        fn bound(position: &Option<Position>) -> Bound<&[u8]> {
            match position {
                Some(p) => Bound::Included(&p.bytes[..]),
                None => Bound::Unbounded,
            }
        }
        (bound(&self.from), bound(&self.to))
    }
}

/// What one row's entry holds besides its bytes: its place in the map's node, its count and
/// its position's header (an estimate: a B-tree node is shared by up to eleven entries).
const ENTRY_BYTES: usize = std::mem::size_of::<(Position, Diff)>() + 8;

/// One partition's rows with their multiplicities, in order.
#[derive(Debug, Default)]
pub(super) struct SortedRows {
    rows: BTreeMap<Position, Diff>,
    /// The bytes the rows hold.
    bytes: usize,
}

/// The direction of a walk.
#[derive(Clone, Copy)]
enum Towards {
    Start,
    End,
}

impl SortedRows {
    /// Whether the partition holds no row.
    pub(super) fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// The number of distinct rows.
    pub(super) fn len(&self) -> usize {
        self.rows.len()
    }

    /// The number of copies of all rows.
    pub(super) fn copies(&self) -> i64 {
        self.rows.values().sum()
    }

    /// Adds `diff` copies of the row at `position`.
    pub(super) fn update(&mut self, position: Position, diff: Diff) {
        let entry_bytes = ENTRY_BYTES + position.bytes.len();
        match self.rows.get_mut(&position.bytes[..]) {
            Some(copies) => {
                *copies += diff;
                if *copies == 0 {
                    self.rows.remove(&position.bytes[..]);
                    self.bytes -= entry_bytes;
                }
            }
            None => {
                self.rows.insert(position, diff);
                self.bytes += entry_bytes;
            }
        }
    }

    /// The bytes the rows hold, an estimate of the map's own included.
    pub(super) fn bytes(&self) -> usize {
        self.bytes
    }

    /// The rows, with their multiplicities, in `span` (in order).
    pub(super) fn in_span(&self, span: &Span) -> impl Iterator<Item = (&Position, Diff)> {
        self.rows
            .range::<[u8], _>(span.range())
            .map(|(p, c)| (p, *c))
    }

    /// The rows whose values may change when the row at `position` changes, with functions
    /// of `reach`: those within reach of it (a row reaching `n` rows before it is affected by
    /// a change up to `n` rows after it), and its peers if any function reaches peers.
    pub(super) fn affected_by(&self, position: &Position, reach: WindowReach) -> Span {
        let peers = has_peers(reach.preceding) || has_peers(reach.following);
        Span {
            from: self.reach_from(position, reach.following, peers, Towards::Start),
            to: self.reach_from(position, reach.preceding, peers, Towards::End),
        }
    }

    /// The rows that the values of the rows in `span` depend on, with functions of `reach`,
    /// and `slack` rows more on each side that the functions reach at all.
    pub(super) fn context_of(&self, span: &Span, reach: WindowReach, slack: usize) -> Span {
        let around = |position: &Option<Position>, extent: Extent, towards: Towards| {
            let position = position.as_ref()?;
            let widened = match extent {
                Extent::NONE => extent,
                Extent::Bounded { rows, peers } => Extent::Bounded {
                    rows: rows.saturating_add(slack),
                    peers,
                },
                Extent::Unbounded => return None,
            };
            self.reach_from(position, widened, has_peers(widened), towards)
        };
        Span {
            from: around(&span.from, reach.preceding, Towards::Start),
            to: around(&span.to, reach.following, Towards::End),
        }
    }

    /// The position of the `k`-th copy from the start (the last one a limit of `k` keeps),
    /// or `None` if there are no more than `k` copies.
    pub(super) fn last_within(&self, k: usize) -> Option<Position> {
        let mut seen = 0usize;
        for (position, copies) in &self.rows {
            seen = seen.saturating_add(usize::try_from(*copies).unwrap_or(0));
            if seen >= k {
                return Some(position.clone());
            }
        }
        None
    }

    /// The furthest position `extent` reaches from `position` towards `towards` (`None`:
    /// the partition's end that way), also taking `position`'s peers when `peers`.
    fn reach_from(
        &self,
        position: &Position,
        extent: Extent,
        peers: bool,
        towards: Towards,
    ) -> Option<Position> {
        let Extent::Bounded { rows, .. } = extent else {
            return None;
        };
        let bytes: &[u8] = &position.bytes;
        match towards {
            Towards::Start => furthest(
                self.rows
                    .range::<[u8], _>((Bound::Unbounded, Bound::Excluded(bytes)))
                    .rev(),
                position,
                rows,
                peers,
            ),
            Towards::End => furthest(
                self.rows
                    .range::<[u8], _>((Bound::Excluded(bytes), Bound::Unbounded)),
                position,
                rows,
                peers,
            ),
        }
    }
}

/// The last of the rows that `walk` (the rows after `from` in one direction) meets within
/// `rows` copies, or among `from`'s peers when `peers`; `None` if the walk runs out.
fn furthest<'a>(
    walk: impl Iterator<Item = (&'a Position, &'a Diff)>,
    from: &'a Position,
    rows: usize,
    peers: bool,
) -> Option<Position> {
    let mut last = from;
    let mut seen = 0usize;
    for (next, copies) in walk {
        let is_peer = peers && next.order() == from.order();
        if seen >= rows && !is_peer {
            return Some(last.clone());
        }
        seen = seen.saturating_add(usize::try_from(*copies).unwrap_or(0));
        last = next;
    }
    None
}

fn has_peers(extent: Extent) -> bool {
    matches!(extent, Extent::Bounded { peers: true, .. })
}

/// `spans` (in order of their starts) with those that overlap merged into one.
pub(super) fn merge_spans(spans: Vec<Span>) -> Vec<Span> {
    let mut merged: Vec<Span> = Vec::with_capacity(spans.len());
    for span in spans {
        match merged.last_mut() {
            Some(last) if last.overlaps(&span) => {
                let joined = std::mem::replace(last, Span::WHOLE).join(span);
                *last = joined;
            }
            _ => merged.push(span),
        }
    }
    merged
}

/// The spans that changes affect, each joining what the change affects among the rows before
/// it (`before`) and after it (`after`).
pub(super) fn join_spans(before: Vec<Span>, after: Vec<Span>) -> Vec<Span> {
    before
        .into_iter()
        .zip(after)
        .map(|(before, after)| before.join(after))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn position(order: u8, row: u8) -> Position {
        Position::new(&[order], &[row])
    }

    fn rows(entries: &[(u8, u8, Diff)]) -> SortedRows {
        let mut sorted = SortedRows::default();
        for &(order, row, copies) in entries {
            sorted.update(position(order, row), copies);
        }
        sorted
    }

    fn rows_reach(preceding: usize, following: usize, peers: bool) -> WindowReach {
        WindowReach {
            preceding: Extent::Bounded {
                rows: preceding,
                peers,
            },
            following: Extent::Bounded {
                rows: following,
                peers,
            },
        }
    }

    #[test]
    fn a_lag_of_one_affects_the_changed_row_and_the_one_after_it() {
        let sorted = rows(&[(1, 0, 1), (2, 0, 1), (3, 0, 1), (4, 0, 1)]);
        let span = sorted.affected_by(&position(2, 0), rows_reach(1, 0, false));
        assert_eq!(span.from, Some(position(2, 0)));
        assert_eq!(span.to, Some(position(3, 0)));
    }

    #[test]
    fn copies_count_once_each_in_a_walk() {
        let sorted = rows(&[(1, 0, 1), (2, 0, 1), (3, 0, 3), (4, 0, 1), (5, 0, 1)]);
        let span = sorted.affected_by(&position(2, 0), rows_reach(3, 0, false));
        assert_eq!(span.to, Some(position(3, 0)));
        let span = sorted.affected_by(&position(2, 0), rows_reach(4, 0, false));
        assert_eq!(span.to, Some(position(4, 0)));
    }

    #[test]
    fn a_walk_past_the_end_reaches_the_partitions_end() {
        let sorted = rows(&[(1, 0, 1), (2, 0, 1)]);
        let span = sorted.affected_by(&position(2, 0), rows_reach(1, 5, false));
        assert_eq!(span, Span::WHOLE);
    }

    #[test]
    fn peers_extend_a_walk_over_every_row_with_the_same_order_key() {
        let sorted = rows(&[(1, 0, 1), (2, 0, 1), (2, 1, 1), (2, 2, 1), (3, 0, 1)]);
        let span = sorted.affected_by(&position(2, 1), rows_reach(0, 0, true));
        assert_eq!(span.from, Some(position(2, 0)));
        assert_eq!(span.to, Some(position(2, 2)));
    }

    #[test]
    fn a_row_not_present_still_bounds_its_own_span() {
        let sorted = rows(&[(1, 0, 1), (3, 0, 1)]);
        let span = sorted.affected_by(&position(2, 0), rows_reach(0, 0, false));
        assert_eq!(span.from, Some(position(2, 0)));
        assert_eq!(span.to, Some(position(2, 0)));
    }

    #[test]
    fn the_last_row_within_a_limit_counts_copies() {
        let sorted = rows(&[(1, 0, 2), (2, 0, 1)]);
        assert_eq!(sorted.last_within(2), Some(position(1, 0)));
        assert_eq!(sorted.last_within(3), Some(position(2, 0)));
        assert_eq!(sorted.last_within(4), None);
    }

    #[test]
    fn overlapping_spans_merge_and_disjoint_ones_do_not() {
        let span = |a, b| Span {
            from: Some(position(a, 0)),
            to: Some(position(b, 0)),
        };
        let merged = merge_spans(vec![span(1, 3), span(2, 4), span(6, 7)]);
        assert_eq!(merged, vec![span(1, 4), span(6, 7)]);
    }

    #[test]
    fn a_row_back_to_no_copies_is_forgotten() {
        let mut sorted = rows(&[(1, 0, 1)]);
        sorted.update(position(1, 0), -1);
        assert!(sorted.is_empty());
        assert_eq!(sorted.copies(), 0);
    }
}
