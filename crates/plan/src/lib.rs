//! The dataflow plan: what `sql` lowers a query into and `compute` renders.
//!
//! This crate is plain data below both: it knows rows (`repr`) and DataFusion's physical
//! expressions, and nothing of SQL text, catalogs or dataflow execution.
//!
//! A plan is a small tree of incremental operators over collections of `(row, time, diff)`
//! updates. Every node knows the Arrow schema of the rows it produces; scalar work is carried
//! as DataFusion physical expressions bound to the schema of the node's input, evaluated a
//! batch at a time. Plans are plain data: they print (see [`explain`]) and compare in
//! tests, and carry no state.

use std::sync::Arc;

use arrow::datatypes::{DataType, SchemaRef};
use datafusion::physical_expr::window::WindowExpr;
use datafusion::physical_expr::PhysicalExpr;
use repr::{Diff, GlobalId, Row};

use datafusion::arrow;

mod explain;
pub mod window_close;

pub use explain::explain;
pub use window_close::{closing_columns, emit_on_window_close, ClosingColumn};

/// A scalar expression evaluated over the columns of an operator's input.
pub type ScalarExpr = Arc<dyn PhysicalExpr>;

/// An incremental operator tree producing one collection.
#[derive(Debug, Clone)]
pub enum Plan {
    /// The contents of a collection: an arranged one (a table, materialized view or index)
    /// or a stream (an append-only source, fed to each dataflow that reads it).
    Get {
        /// The collection to read.
        id: GlobalId,
        /// Its row schema.
        schema: SchemaRef,
    },
    /// A fixed collection, present from the beginning of time.
    Constant {
        /// The rows and their multiplicities.
        rows: Vec<(Row, Diff)>,
        /// The row schema.
        schema: SchemaRef,
    },
    /// Keeps rows whose predicate is true, then computes one expression per output column.
    Map {
        /// The input collection.
        input: Box<Plan>,
        /// Rows where this is false or NULL are dropped.
        predicate: Option<ScalarExpr>,
        /// One expression per output column, over the input's columns.
        projection: Vec<ScalarExpr>,
        /// The output schema.
        schema: SchemaRef,
    },
    /// UNNEST: each row becomes one row per element of its list column `column`, the other
    /// columns repeated (no row for an empty list; for a NULL list, one row with a NULL
    /// element if `keep_null`, none otherwise).
    Unnest {
        /// The input collection.
        input: Box<Plan>,
        /// The list column, replaced in place by its elements.
        column: usize,
        /// Whether a NULL list gives a row (with a NULL element).
        keep_null: bool,
        /// The output schema.
        schema: SchemaRef,
    },
    /// An equi-join of two collections (keys may be empty: a cross join).
    Join {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Which rows survive and how unmatched rows are padded.
        kind: JoinKind,
        /// Key expressions over the left input's columns.
        left_key: Vec<ScalarExpr>,
        /// Key expressions over the right input's columns, pairwise comparable with `left_key`.
        right_key: Vec<ScalarExpr>,
        /// The schema of encoded keys (the left key's types).
        key_schema: SchemaRef,
        /// An extra condition over the concatenated `left ++ right` columns that a match must
        /// also satisfy.
        filter: Option<ScalarExpr>,
        /// Whether NULL keys match each other (set operations) or nothing (SQL `=`).
        nulls_equal: bool,
        /// The output schema: `left ++ right` for inner and outer joins, `left` for semi and
        /// anti joins.
        schema: SchemaRef,
    },
    /// An ASOF join: each left row with the right rows of its key whose time is the closest
    /// to the left row's on the side `matches` names (every right row at that time matches).
    /// A left row with a NULL key or time, or no such right row, matches nothing.
    AsOfJoin {
        /// The left input.
        left: Box<Plan>,
        /// The right input.
        right: Box<Plan>,
        /// Left rows without a match are kept, padded with NULLs (`ASOF LEFT JOIN`).
        outer: bool,
        /// Key expressions over the left input's columns.
        left_key: Vec<ScalarExpr>,
        /// Key expressions over the right input's columns, of the left key's types.
        right_key: Vec<ScalarExpr>,
        /// The schema of encoded keys (the left key's types).
        key_schema: SchemaRef,
        /// The left row's time, over the left input's columns.
        left_time: ScalarExpr,
        /// The right row's time, over the right input's columns, of `left_time`'s type.
        right_time: ScalarExpr,
        /// Where a matching right row's time lies from the left row's.
        matches: AsOfMatch,
        /// The output schema: `left ++ right`.
        schema: SchemaRef,
    },
    /// A lookup join (`FOR SYSTEM_TIME AS OF PROCTIME()`): each left update joins the right
    /// rows of its key as they stand at the update's time; later changes of the right side
    /// change nothing already joined.
    LookupJoin {
        /// The left input, whose updates look rows up.
        left: Box<Plan>,
        /// The right input, looked up.
        right: Box<Plan>,
        /// `Inner`, `LeftOuter` (left updates without a match padded with NULLs) or
        /// `LeftSemi` (each left update once if it has a match, alone).
        kind: JoinKind,
        /// Key expressions over the left input's columns.
        left_key: Vec<ScalarExpr>,
        /// Key expressions over the right input's columns, of the left key's types.
        right_key: Vec<ScalarExpr>,
        /// The schema of encoded keys (the left key's types).
        key_schema: SchemaRef,
        /// The output schema: `left ++ right`, or `left` for `LeftSemi`.
        schema: SchemaRef,
    },
    /// Groups by the first `group_len` input columns and computes aggregates over the rest.
    Reduce {
        /// The input, whose columns are `group columns ++ aggregate arguments`.
        input: Box<Plan>,
        /// How many leading input columns form the group key.
        group_len: usize,
        /// The aggregates, each reading argument columns of the input.
        aggregates: Vec<AggregateExpr>,
        /// No GROUP BY: the result is one row even when the input is empty.
        is_global: bool,
        /// Output schema: `group columns ++ one column per aggregate`.
        schema: SchemaRef,
    },
    /// Every distinct row once.
    Distinct {
        /// The input collection.
        input: Box<Plan>,
    },
    /// The multiset sum of the inputs (UNION ALL).
    Union {
        /// Inputs of one schema.
        inputs: Vec<Plan>,
        /// The common schema.
        schema: SchemaRef,
    },
    /// The first rows per group in a sort order (`ORDER BY … LIMIT` / `OFFSET`).
    TopK {
        /// The input collection.
        input: Box<Plan>,
        /// Columns forming the groups (empty: the whole collection is one group).
        group_by: Vec<usize>,
        /// The order within a group.
        order_by: Vec<SortColumn>,
        /// Rows skipped at the start of each group.
        offset: usize,
        /// Rows kept after the offset (`None`: all).
        limit: Option<usize>,
    },
    /// `EMIT ON WINDOW CLOSE`: each row of the input once, when it is closed (see
    /// [`window_close`]): its value in one of the closing columns has fallen below that
    /// column's bound. Changes to a row after it closed (from late rows) are dropped, so the
    /// output only grows.
    EmitOnWindowClose {
        /// The input collection.
        input: Box<Plan>,
        /// The columns that close its rows.
        closing: Vec<ClosingColumn>,
    },
    /// A temporal filter: each input row is in the output while the clock (the timeline's
    /// time, milliseconds since the epoch) satisfies every bound: it enters at the first time
    /// they all hold (or its own time, if later) and leaves at the first time one fails.
    TemporalFilter {
        /// The input collection.
        input: Box<Plan>,
        /// The bounds, each comparing the clock with an expression of the row.
        bounds: Vec<TemporalBound>,
    },
    /// SESSION windows: each input row with the bounds of its session appended, one column
    /// per entry of `bounds`. A session is a maximal run of a key's rows, in time order, each
    /// less than `gap` after the one before; it spans `[first time, last time + gap)`. A row
    /// with a NULL time has NULL bounds.
    Session {
        /// The input collection.
        input: Box<Plan>,
        /// The columns forming the key (sessions are per key).
        partition: Vec<usize>,
        /// The time column (a timestamp).
        time: usize,
        /// The gap, in microseconds (positive).
        gap: i64,
        /// The bound each appended column holds.
        bounds: Vec<SessionBound>,
        /// The output schema: the input's columns, then the bounds.
        schema: SchemaRef,
    },
    /// Window functions (`OVER`): each input row with one more column per function, computed
    /// over the row's partition (the rows with its values in `partition_by`) sorted by
    /// `order_by`, ties broken by the rows' bytes so that the result is deterministic.
    Window {
        /// The input collection.
        input: Box<Plan>,
        /// The columns forming the partitions (empty: the whole collection is one).
        partition_by: Vec<usize>,
        /// The order within a partition.
        order_by: Vec<SortColumn>,
        /// The functions, one output column each, all over this partitioning and order.
        functions: Vec<WindowFunction>,
        /// Only the first rows of each partition in the order are kept (a filter such as
        /// `row_number() … <= k` above it): the rows of other positions are left out.
        limit: Option<usize>,
        /// The output schema: the input's columns, then one per function.
        schema: SchemaRef,
    },
    /// `WITH RECURSIVE`: the least fixed point of `rows = base ∪ step(rows)`, where `step`
    /// reads `rows` through [`Plan::RecursiveRef`] nodes naming this query. With `distinct`
    /// (`UNION`) every row is kept once; without it (`UNION ALL`) `step` must be linear in its
    /// reference (PostgreSQL's rules for a recursive term ensure it), so the result is
    /// `base`, `step(base)`, `step(step(base))`, … added up, as PostgreSQL computes it.
    Recursive {
        /// The query's name, which the references in `step` carry.
        name: String,
        /// The non-recursive term.
        base: Box<Plan>,
        /// The recursive term.
        step: Box<Plan>,
        /// `UNION` (each row once) rather than `UNION ALL`.
        distinct: bool,
        /// The output schema (the base's).
        schema: SchemaRef,
    },
    /// The rows of the enclosing [`Plan::Recursive`] named `name`, as of its previous
    /// iteration.
    RecursiveRef {
        /// The recursive query's name.
        name: String,
        /// Its schema.
        schema: SchemaRef,
    },
    /// The input's updates, and each row retracted just after it closes (see
    /// [`window_close`]); changes to closed rows are dropped. Below the aggregation of an
    /// `EMIT ON WINDOW CLOSE`, it makes the aggregation forget the windows emitted.
    ForgetClosed {
        /// The input collection.
        input: Box<Plan>,
        /// The columns that close its rows.
        closing: Vec<ClosingColumn>,
    },
}

/// One function of a [`Plan::Window`].
#[derive(Debug, Clone)]
pub struct WindowFunction {
    /// DataFusion's evaluation of the function over one sorted partition.
    pub expr: Arc<dyn WindowExpr>,
    /// What the function computes, as far as planning cares.
    pub kind: WindowFunctionKind,
    /// The rows around a row in its partition's order that its value depends on.
    pub reach: WindowReach,
}

/// What a window function computes, as far as planning cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowFunctionKind {
    /// `row_number()`: the row's position in its partition, from 1.
    RowNumber,
    /// Anything else (ranks, aggregates over frames, `lag`, `lead`, …).
    Other,
}

/// The rows around a row, in its partition's order, that a window function's value for the
/// row depends on (besides the row itself): a change to any other row leaves the value as it
/// was. `rank()` reaches every row before and none after; `lag(x, 2)` two rows before; a sum
/// over `ROWS BETWEEN 1 PRECEDING AND CURRENT ROW` one row before; one over the default
/// `RANGE` frame every row before and the row's peers after.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowReach {
    /// How far it reaches towards the partition's start.
    pub preceding: Extent,
    /// How far it reaches towards the partition's end.
    pub following: Extent,
}

impl WindowReach {
    /// Every row of the partition (`ntile`, `cume_dist`, a frame to the partition's end).
    pub const WHOLE_PARTITION: WindowReach = WindowReach {
        preceding: Extent::Unbounded,
        following: Extent::Unbounded,
    };

    /// The reach of several functions computed together.
    pub fn join(self, other: WindowReach) -> WindowReach {
        WindowReach {
            preceding: self.preceding.join(other.preceding),
            following: self.following.join(other.following),
        }
    }

    /// Whether a row's value depends on no row after it, so that the first rows of a
    /// partition can be computed without the rest.
    pub fn is_prefix_determined(self) -> bool {
        self.following == Extent::NONE
    }
}

/// How far, in one direction, a window function reaches from a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// `rows` rows (each copy of a duplicate row counting once), and with `peers` every row
    /// with the same values in the order's columns.
    Bounded {
        /// The number of rows.
        rows: usize,
        /// Also the row's peers.
        peers: bool,
    },
    /// To the partition's end.
    Unbounded,
}

impl Extent {
    /// No other row.
    pub const NONE: Extent = Extent::Bounded {
        rows: 0,
        peers: false,
    };

    /// What reaches as far as both.
    pub fn join(self, other: Extent) -> Extent {
        match (self, other) {
            (Extent::Bounded { rows: a, peers: p }, Extent::Bounded { rows: b, peers: q }) => {
                Extent::Bounded {
                    rows: a.max(b),
                    peers: p || q,
                }
            }
            _ => Extent::Unbounded,
        }
    }
}

/// How a join treats unmatched rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JoinKind {
    /// Matched pairs only.
    Inner,
    /// Matched pairs, plus unmatched left rows padded with NULLs.
    LeftOuter,
    /// Matched pairs, plus unmatched right rows padded with NULLs.
    RightOuter,
    /// Matched pairs, plus unmatched rows of both sides padded with NULLs.
    FullOuter,
    /// Left rows with at least one match (EXISTS, IN, INTERSECT).
    LeftSemi,
    /// Left rows with no match (NOT EXISTS, EXCEPT).
    LeftAnti,
    /// `NOT IN` semantics: left rows with no match, none at all if the right side holds a NULL
    /// key, and a NULL left key only survives an empty right side.
    LeftAntiNullAware,
}

/// Where the right rows an ASOF join matches lie from the left row's time: the closest
/// such time is taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AsOfMatch {
    /// At or before it (`left.t >= right.t`).
    AtOrBefore,
    /// Strictly before it (`left.t > right.t`).
    Before,
    /// At or after it (`left.t <= right.t`).
    AtOrAfter,
    /// Strictly after it (`left.t < right.t`).
    After,
}

impl AsOfMatch {
    /// Whether the closest time is the latest of the candidates (they lie before).
    pub fn takes_latest(self) -> bool {
        matches!(self, AsOfMatch::AtOrBefore | AsOfMatch::Before)
    }

    /// Whether a right time equal to the left time matches.
    pub fn includes_equal(self) -> bool {
        matches!(self, AsOfMatch::AtOrBefore | AsOfMatch::AtOrAfter)
    }
}

/// One bound of a [`Plan::TemporalFilter`]: the clock compared with `expr` (a timestamp).
#[derive(Debug, Clone)]
pub struct TemporalBound {
    /// An expression of the row's columns.
    pub expr: ScalarExpr,
    /// How the clock must compare with it.
    pub clock: ClockComparison,
}

/// How the clock must compare with a row's expression for the row to be in the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClockComparison {
    /// `now() < expr`: until `expr`.
    Before,
    /// `now() <= expr`: through `expr`.
    AtOrBefore,
    /// `now() > expr`: from just after `expr`.
    After,
    /// `now() >= expr`: from `expr`.
    AtOrAfter,
}

/// Which bound of its session a column of a [`Plan::Session`] holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionBound {
    /// Its first time.
    Start,
    /// Its last time plus the gap.
    End,
}

/// The `(start, end)` of the session of each of `times` (in order; NULLs have none), with
/// sessions split where a time is `gap` or more after the one before.
pub fn session_bounds(times: &[Option<i64>], gap: i64) -> Vec<Option<(i64, i64)>> {
    let mut bounds = vec![None; times.len()];
    let mut run: Vec<usize> = Vec::new();
    let close = |run: &mut Vec<usize>, bounds: &mut Vec<Option<(i64, i64)>>| {
        if let (Some(&first), Some(&last)) = (run.first(), run.last()) {
            if let (Some(start), Some(end)) = (times[first], times[last]) {
                for &i in run.iter() {
                    bounds[i] = Some((start, end.saturating_add(gap)));
                }
            }
        }
        run.clear();
    };
    for (i, time) in times.iter().enumerate() {
        let Some(time) = time else {
            continue;
        };
        let continues = run
            .last()
            .and_then(|&last| times[last])
            .is_some_and(|last| time.saturating_sub(last) < gap);
        if !continues {
            close(&mut run, &mut bounds);
        }
        run.push(i);
    }
    close(&mut run, &mut bounds);
    bounds
}

/// One column of a sort order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SortColumn {
    /// The column position.
    pub column: usize,
    /// Descending instead of ascending.
    pub descending: bool,
    /// NULLs sort before non-NULLs.
    pub nulls_first: bool,
}

/// One aggregate of a [`Plan::Reduce`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AggregateExpr {
    /// The function.
    pub func: AggregateFunc,
    /// The input column holding the argument (`None` for `count(*)`).
    pub arg: Option<usize>,
    /// A boolean input column: only rows where it is true take part (`FILTER (WHERE …)`).
    pub filter: Option<usize>,
    /// Aggregate each distinct argument value once.
    pub distinct: bool,
    /// The type of the argument column (`None` for `count(*)`).
    pub input_type: Option<DataType>,
    /// The type of the result column.
    pub output_type: DataType,
}

/// The aggregate functions a view can maintain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggregateFunc {
    /// Rows (with `arg`: non-NULL argument values).
    Count,
    /// Sum of the argument.
    Sum,
    /// Mean of the argument.
    Avg,
    /// Smallest argument value.
    Min,
    /// Largest argument value.
    Max,
    /// Argument values joined by a separator, in value order.
    StringAgg {
        /// The separator between values.
        separator: String,
    },
    /// True when every argument is true.
    BoolAnd,
    /// True when some argument is true.
    BoolOr,
}

impl Plan {
    /// The schema of the rows this node produces.
    pub fn schema(&self) -> &SchemaRef {
        match self {
            Plan::Get { schema, .. }
            | Plan::Constant { schema, .. }
            | Plan::Map { schema, .. }
            | Plan::Unnest { schema, .. }
            | Plan::Join { schema, .. }
            | Plan::AsOfJoin { schema, .. }
            | Plan::LookupJoin { schema, .. }
            | Plan::Reduce { schema, .. }
            | Plan::Union { schema, .. }
            | Plan::Session { schema, .. }
            | Plan::Recursive { schema, .. }
            | Plan::RecursiveRef { schema, .. }
            | Plan::Window { schema, .. } => schema,
            Plan::Distinct { input }
            | Plan::TopK { input, .. }
            | Plan::EmitOnWindowClose { input, .. }
            | Plan::ForgetClosed { input, .. }
            | Plan::TemporalFilter { input, .. } => input.schema(),
        }
    }

    /// The plans this node reads, in order.
    pub fn inputs(&self) -> Vec<&Plan> {
        match self {
            Plan::Get { .. } | Plan::Constant { .. } | Plan::RecursiveRef { .. } => Vec::new(),
            Plan::Map { input, .. }
            | Plan::Unnest { input, .. }
            | Plan::Reduce { input, .. }
            | Plan::Distinct { input }
            | Plan::TopK { input, .. }
            | Plan::EmitOnWindowClose { input, .. }
            | Plan::ForgetClosed { input, .. }
            | Plan::TemporalFilter { input, .. }
            | Plan::Session { input, .. }
            | Plan::Window { input, .. } => vec![input],
            Plan::Join { left, right, .. }
            | Plan::AsOfJoin { left, right, .. }
            | Plan::LookupJoin { left, right, .. } => vec![left, right],
            Plan::Recursive { base, step, .. } => vec![base, step],
            Plan::Union { inputs, .. } => inputs.iter().collect(),
        }
    }

    /// The arranged collections the plan reads.
    pub fn imports(&self) -> Vec<GlobalId> {
        let mut ids = Vec::new();
        self.visit(&mut |plan| {
            if let Plan::Get { id, .. } = plan {
                ids.push(*id);
            }
        });
        ids.sort();
        ids.dedup();
        ids
    }

    /// The sources whose watermarks an `EMIT ON WINDOW CLOSE` in the plan waits for.
    pub fn watermark_sources(&self) -> Vec<GlobalId> {
        let mut ids = std::collections::BTreeSet::new();
        self.visit(&mut |plan| {
            if let Plan::EmitOnWindowClose { closing, .. } | Plan::ForgetClosed { closing, .. } =
                plan
            {
                ids.extend(window_close::sources(closing));
            }
        });
        ids.into_iter().collect()
    }

    /// How many times the plan reads the recursive query `name` (references inside a nested
    /// recursive query of the same name read that one instead).
    pub fn recursive_references(&self, name: &str) -> usize {
        match self {
            Plan::RecursiveRef { name: read, .. } => usize::from(read == name),
            Plan::Recursive {
                name: inner, base, ..
            } if inner == name => base.recursive_references(name),
            _ => self
                .inputs()
                .into_iter()
                .map(|input| input.recursive_references(name))
                .sum(),
        }
    }

    /// Calls `f` on this node and every node below it.
    fn visit(&self, f: &mut impl FnMut(&Plan)) {
        f(self);
        for input in self.inputs() {
            input.visit(f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sessions_split_where_the_gap_is_reached() {
        let times = [Some(0), Some(5), Some(9), Some(19), None, Some(20)];
        assert_eq!(
            session_bounds(&times, 10),
            [
                Some((0, 19)),
                Some((0, 19)),
                Some((0, 19)),
                Some((19, 30)),
                None,
                Some((19, 30)),
            ]
        );
        assert_eq!(session_bounds(&[], 10), []);
    }
}
