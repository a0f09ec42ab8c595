//! Join: equi-joins of two collections, with every SQL join kind.
//!
//! Semantics on `(row, t, d)` updates: both inputs are arranged by their join key (state: the
//! two arrangements); a change on one side meets the other side's arrangement, so matched
//! pairs `(l, r)` change with multiplicity `d_l * d_r` (differential dataflow's bilinear join).
//! A residual `filter` over `l ++ r` drops pairs afterwards.
//!
//! The other kinds are built from matched pairs, never by recomputing:
//! - semi: left rows that have a match (`left ⋉ distinct(matched keys or rows)`);
//! - anti: `left − semi`, so a left row appears and disappears as its last match comes and
//!   goes;
//! - outer: inner pairs `∪` unmatched rows (the anti join) padded with a NULL row;
//! - null-aware anti (`NOT IN`): the anti join, emptied while the right side holds a NULL key,
//!   with NULL-keyed left rows kept only while the right side is empty.
//!
//! Rows with a NULL in their key never match (`=` is not true for NULL) unless the join says
//! NULLs are equal (set operations); such rows still count as unmatched for anti and outer
//! joins.

use std::sync::Arc;

use datafusion::arrow::datatypes::{Schema, SchemaRef};
use differential_dataflow::lattice::Lattice;
use differential_dataflow::{AsCollection, VecCollection};
use plan::{JoinKind, Plan, ScalarExpr};
use repr::{Diff, GlobalId, Row, RowCodec};
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::Operator;
use timely::order::Product;
use timely::progress::Timestamp;

use super::evaluate::RowEvaluator;
use super::{codec, cross_join, RenderError, RowCollection, Rows, Update};
use crate::arrangement::arrange_rows;
use crate::errors::DataflowErrors;
use crate::row_container::RowRef;

/// Rows with their join key.
pub(super) type KeyedRows<'s, T = repr::Timestamp> = VecCollection<'s, T, (Row, Row), Diff>;
/// Rows with their join key, `None` where the key holds a NULL that matches nothing.
type MaybeKeyedRows<'s, T> = VecCollection<'s, T, (Option<Row>, Row), Diff>;
/// Matched `(left, right)` rows.
pub(super) type Pairs<'s, T = repr::Timestamp> = VecCollection<'s, T, (Row, Row), Diff>;

/// The times rows are joined at: a dataflow's own, or those of an iteration inside it.
pub(crate) trait JoinTime: Timestamp + Lattice {
    /// The pairs of `left` and `right` rows with equal keys, both sides arranged by key;
    /// `cross`: the keys are empty, every row pairs with every row.
    fn matched_pairs<'s>(
        left: KeyedRows<'s, Self>,
        right: KeyedRows<'s, Self>,
        cross: bool,
    ) -> Pairs<'s, Self>;
}

impl JoinTime for repr::Timestamp {
    fn matched_pairs<'s>(
        left: KeyedRows<'s, Self>,
        right: KeyedRows<'s, Self>,
        cross: bool,
    ) -> Pairs<'s, Self> {
        if cross {
            return cross_join::cross_pairs(left, right);
        }
        arrange_rows(left, "JoinLeft").join_core(
            arrange_rows(right, "JoinRight"),
            |_key, l: RowRef, r: RowRef| Some((l.to_row(), r.to_row())),
        )
    }
}

impl JoinTime for Product<repr::Timestamp, u64> {
    fn matched_pairs<'s>(
        left: KeyedRows<'s, Self>,
        right: KeyedRows<'s, Self>,
        _cross: bool,
    ) -> Pairs<'s, Self> {
        left.join_map(right, |_key, l, r| (l.clone(), r.clone()))
    }
}

/// Renders a [`Plan::Join`] over the already rendered inputs.
pub(crate) fn render<'s, T: JoinTime>(
    left: Rows<'s, T>,
    right: Rows<'s, T>,
    plan: &Plan,
    errors: (GlobalId, DataflowErrors),
) -> Result<Rows<'s, T>, RenderError> {
    let Plan::Join {
        left: left_plan,
        right: right_plan,
        kind,
        left_key,
        right_key,
        key_schema,
        filter,
        nulls_equal,
        ..
    } = plan
    else {
        return Err(RenderError("join renderer given a non-join plan".into()));
    };
    let left_schema = left_plan.schema();
    let right_schema = right_plan.schema();
    let keyer = |rows: Rows<'s, T>, schema: &SchemaRef, exprs: &[ScalarExpr]| {
        key_by(
            rows,
            codec(schema)?,
            codec(key_schema)?,
            exprs.to_vec(),
            *nulls_equal,
            errors.clone(),
        )
    };
    let left_keyed = keyer(left.clone(), left_schema, left_key)?;
    let right_keyed = keyer(right.clone(), right_schema, right_key)?;
    let (left_matchable, left_null_keyed) = split_null_keys(left_keyed);
    let (right_matchable, right_null_keyed) = split_null_keys(right_keyed);

    let pair_schema = concat_schema(left_schema, right_schema);
    let matched_pairs =
        |left: KeyedRows<'s, T>, right: KeyedRows<'s, T>| -> Result<Pairs<'s, T>, RenderError> {
            let pairs = T::matched_pairs(left, right, key_schema.fields().is_empty());
            match filter {
                Some(filter) => {
                    filter_pairs(pairs, codec(&pair_schema)?, filter.clone(), errors.clone())
                }
                None => Ok(pairs),
            }
        };
    // Left rows with at least one match, with their multiplicity in `left`.
    let semi = |left_all: Rows<'s, T>,
                left_matchable: KeyedRows<'s, T>,
                pairs: Option<Pairs<'s, T>>,
                right_matchable: KeyedRows<'s, T>|
     -> Rows<'s, T> {
        match pairs {
            Some(pairs) if filter.is_some() => {
                let matched_rows = pairs.map(|(l, _)| l).distinct_core::<Diff>();
                left_all
                    .map(|l| (l, ()))
                    .semijoin(matched_rows)
                    .map(|(l, ())| l)
            }
            _ => {
                let matched_keys = right_matchable.map(|(key, _)| key).distinct_core::<Diff>();
                left_matchable.semijoin(matched_keys).map(|(_, l)| l)
            }
        }
    };

    Ok(match kind {
        JoinKind::Inner | JoinKind::LeftOuter | JoinKind::RightOuter | JoinKind::FullOuter => {
            let pairs = matched_pairs(left_matchable.clone(), right_matchable.clone())?;
            let mut result = pairs.clone().map(|(l, r)| l.concat(&r));
            if matches!(kind, JoinKind::LeftOuter | JoinKind::FullOuter) {
                let matched = semi(
                    left.clone(),
                    left_matchable.clone(),
                    Some(pairs.clone()),
                    right_matchable.clone(),
                );
                let padding = codec(right_schema)?
                    .null_row()
                    .map_err(|e| RenderError(e.to_string()))?;
                let unmatched = left.clone().concat(matched.negate());
                result = result.concat(unmatched.map(move |l| l.concat(&padding)));
            }
            if matches!(kind, JoinKind::RightOuter | JoinKind::FullOuter) {
                let swapped = pairs.map(|(l, r)| (r, l));
                let matched = semi(
                    right.clone(),
                    right_matchable,
                    Some(swapped),
                    left_matchable,
                );
                let padding = codec(left_schema)?
                    .null_row()
                    .map_err(|e| RenderError(e.to_string()))?;
                let unmatched = right.concat(matched.negate());
                result = result.concat(unmatched.map(move |r| padding.concat(&r)));
            }
            result
        }
        JoinKind::LeftSemi => {
            let pairs = filter
                .is_some()
                .then(|| matched_pairs(left_matchable.clone(), right_matchable.clone()))
                .transpose()?;
            semi(left, left_matchable, pairs, right_matchable)
        }
        JoinKind::LeftAnti => {
            let pairs = filter
                .is_some()
                .then(|| matched_pairs(left_matchable.clone(), right_matchable.clone()))
                .transpose()?;
            let matched = semi(left.clone(), left_matchable, pairs, right_matchable);
            left.concat(matched.negate())
        }
        JoinKind::LeftAntiNullAware => {
            if filter.is_some() {
                return Err(RenderError("NOT IN with a correlated condition".into()));
            }
            let right_keys = right_matchable.map(|(key, _)| key).distinct_core::<Diff>();
            let right_has_null = right_null_keyed.map(|_| ()).distinct_core::<Diff>();
            let right_is_nonempty = right.map(|_| ()).distinct_core::<Diff>();
            let unmatched = left_matchable
                .antijoin(right_keys)
                .map(|(_, l)| ((), l))
                .antijoin(right_has_null)
                .map(|((), l)| l);
            let null_keyed_kept = left_null_keyed
                .map(|l| ((), l))
                .antijoin(right_is_nonempty)
                .map(|((), l)| l);
            unmatched.concat(null_keyed_kept)
        }
    })
}

/// The schema of `left ++ right` rows.
fn concat_schema(left: &SchemaRef, right: &SchemaRef) -> SchemaRef {
    let fields: Vec<_> = left
        .fields()
        .iter()
        .chain(right.fields().iter())
        .cloned()
        .collect();
    Arc::new(Schema::new(fields))
}

/// Pairs each row with its join key; the key is `None` when it holds a NULL and NULLs match
/// nothing.
fn key_by<'s, T: Timestamp>(
    rows: Rows<'s, T>,
    input: RowCodec,
    key: RowCodec,
    exprs: Vec<ScalarExpr>,
    nulls_equal: bool,
    errors: (GlobalId, DataflowErrors),
) -> Result<MaybeKeyedRows<'s, T>, RenderError> {
    let (dataflow, errors) = errors;
    let key_schema = key.schema().clone();
    let evaluator = RowEvaluator::new(input, key, None, exprs);
    let null_key_detector = codec(&key_schema)?;
    Ok(rows
        .inner
        .unary::<CapacityContainerBuilder<Vec<((Option<Row>, Row), T, Diff)>>, _, _, _>(
            Pipeline,
            "JoinKey",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let evaluated = evaluator.evaluate(data.iter().map(|(row, _, _)| row));
                        if let Some((_, error)) = evaluated.failures.first() {
                            let rows: i64 =
                                evaluated.failures.iter().map(|(i, _)| data[*i].2).sum();
                            errors.record(dataflow, rows, evaluated.failures.len() as u64, error);
                        }
                        let null_keys = if nulls_equal {
                            vec![false; evaluated.rows.len()]
                        } else {
                            has_null(&null_key_detector, evaluated.rows.iter().map(|(_, k)| k))
                        };
                        let mut session = output.session(&time);
                        for ((index, key), is_null) in evaluated.rows.into_iter().zip(null_keys) {
                            let (row, t, d) = &data[index];
                            session.give((
                                (if is_null { None } else { Some(key) }, row.clone()),
                                t.clone(),
                                *d,
                            ));
                        }
                    });
                }
            },
        )
        .as_collection())
}

/// The two sides of an equi-join, as the joins in time (ASOF, lookup) key them.
pub(crate) struct JoinSides<'p> {
    pub left_schema: &'p SchemaRef,
    pub right_schema: &'p SchemaRef,
    pub left_key: &'p [ScalarExpr],
    pub right_key: &'p [ScalarExpr],
    pub key_schema: &'p SchemaRef,
}

impl<'p> JoinSides<'p> {
    /// The sides of a join of `left` and `right` on `left_key = right_key` (rows of
    /// `key_schema`).
    pub fn of(
        left: &'p Plan,
        right: &'p Plan,
        (left_key, right_key): (&'p [ScalarExpr], &'p [ScalarExpr]),
        key_schema: &'p SchemaRef,
    ) -> Self {
        Self {
            left_schema: left.schema(),
            right_schema: right.schema(),
            left_key,
            right_key,
            key_schema,
        }
    }
}

/// Both sides keyed (NULL keys match nothing), and the right side's NULL row.
pub(super) struct KeyedSides<'s> {
    pub left: KeyedRows<'s>,
    /// The left rows whose key holds a NULL.
    pub left_null_keyed: RowCollection<'s>,
    pub right: KeyedRows<'s>,
    /// A right row of NULLs, to pad unmatched left rows with.
    pub padding: Row,
}

impl JoinSides<'_> {
    /// Keys `left` and `right`, rows of these sides.
    pub(super) fn key<'s>(
        &self,
        left: RowCollection<'s>,
        right: RowCollection<'s>,
        errors: (GlobalId, DataflowErrors),
    ) -> Result<KeyedSides<'s>, RenderError> {
        let keyer = |rows, schema: &SchemaRef, exprs: &[ScalarExpr]| {
            let keyed = key_by(
                rows,
                codec(schema)?,
                codec(self.key_schema)?,
                exprs.to_vec(),
                false,
                errors.clone(),
            )?;
            Ok::<_, RenderError>(split_null_keys(keyed))
        };
        let (left, left_null_keyed) = keyer(left, self.left_schema, self.left_key)?;
        let (right, _) = keyer(right, self.right_schema, self.right_key)?;
        let padding = codec(self.right_schema)?
            .null_row()
            .map_err(|e| RenderError(e.to_string()))?;
        Ok(KeyedSides {
            left,
            left_null_keyed,
            right,
            padding,
        })
    }
}

/// For each key, whether any of its columns is NULL.
fn has_null<'a>(key: &RowCodec, keys: impl Iterator<Item = &'a Row>) -> Vec<bool> {
    let batch = key
        .decode(keys)
        .expect("invariant: keys decode with the codec that encoded them");
    (0..batch.num_rows())
        .map(|i| batch.columns().iter().any(|c| c.is_null(i)))
        .collect()
}

/// Separates rows that can match (`(key, row)`) from rows whose key holds a NULL.
fn split_null_keys<'s, T: Timestamp>(
    keyed: MaybeKeyedRows<'s, T>,
) -> (KeyedRows<'s, T>, Rows<'s, T>) {
    let matchable = keyed
        .clone()
        .flat_map(|(key, row)| key.map(|key| (key, row)));
    let null_keyed = keyed.flat_map(|(key, row)| key.is_none().then_some(row));
    (matchable, null_keyed)
}

/// Keeps the pairs whose concatenated row satisfies `filter`.
fn filter_pairs<'s, T: Timestamp>(
    pairs: Pairs<'s, T>,
    pair_codec: RowCodec,
    filter: ScalarExpr,
    errors: (GlobalId, DataflowErrors),
) -> Result<Pairs<'s, T>, RenderError> {
    let (dataflow, errors) = errors;
    let nothing = codec(&Arc::new(Schema::empty()))?;
    let evaluator = RowEvaluator::new(pair_codec, nothing, Some(filter), Vec::new());
    Ok(pairs
        .inner
        .unary::<CapacityContainerBuilder<Vec<((Row, Row), T, Diff)>>, _, _, _>(
            Pipeline,
            "JoinFilter",
            move |_, _| {
                move |input, output| {
                    input.for_each(|time, data| {
                        let joined: Vec<Update<T>> = data
                            .iter()
                            .map(|((l, r), t, d)| (l.concat(r), t.clone(), *d))
                            .collect();
                        let evaluated = evaluator.evaluate(joined.iter().map(|(row, _, _)| row));
                        if let Some((_, error)) = evaluated.failures.first() {
                            let rows: i64 =
                                evaluated.failures.iter().map(|(i, _)| joined[*i].2).sum();
                            errors.record(dataflow, rows, evaluated.failures.len() as u64, error);
                        }
                        let mut session = output.session(&time);
                        for (index, _) in evaluated.rows {
                            session.give(data[index].clone());
                        }
                    });
                }
            },
        )
        .as_collection())
}
