//! Turning a source batch's changes into updates of its output relations.
//!
//! (Batches that only insert into a relation without a key are appended as they are, see
//! `ingest`.) Upserts, deletes, truncates and inserts into a keyed relation are folded, in order, over the relation's
//! current rows for the keys they touch (read at the last committed time, under the
//! sequencer): each touched key ends with one value or none, and the updates are the
//! difference between that and what the relation holds. A key upserted twice in one batch
//! therefore yields one retraction and one insertion, never a duplicate.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use compute::PeekFilter;
use connectors::Change;
use datafusion::arrow::array::{ArrayRef, RecordBatch};
use repr::{consolidate, Diff, GlobalId, Row};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

/// One output's current rows, as changed so far by the batch.
struct Overlay {
    /// Keyed relations: per touched key, the committed row and the row now.
    keyed: HashMap<Row, (Option<Row>, Option<Row>)>,
    /// Updates of a relation without a key.
    unkeyed: Vec<(Row, Diff)>,
}

impl Coordinator {
    /// The updates `changes` make to relation `id` (a source's output), from its contents at
    /// the last committed time. The caller holds the sequencer.
    pub(super) async fn source_updates(
        &self,
        id: GlobalId,
        codecs: &TableCodecs,
        changes: Vec<Change>,
    ) -> Result<Vec<(Row, Diff)>, CoordError> {
        let keyed = codecs.key.is_some();
        let time = self.oracle.read_time();
        let mut overlay = Overlay {
            keyed: HashMap::new(),
            unkeyed: Vec::new(),
        };
        for change in changes {
            match change {
                Change::Truncate => {
                    let all = self.compute.peek(id, time, PeekFilter::All).await?;
                    if keyed {
                        let rows: Vec<(Row, Diff)> =
                            all.into_iter().filter(|(_, d)| *d > 0).collect();
                        let keys = row_keys(codecs, &rows)?;
                        for (key, (row, _)) in keys.into_iter().zip(rows) {
                            overlay.keyed.entry(key).or_insert((Some(row), None));
                        }
                        for (_, now) in overlay.keyed.values_mut() {
                            *now = None;
                        }
                    } else {
                        // Whatever the batch did before, the relation ends empty.
                        overlay.unkeyed = all.into_iter().map(|(row, d)| (row, -d)).collect();
                    }
                }
                Change::Insert(rows) if !keyed => {
                    overlay
                        .unkeyed
                        .extend(encode(codecs, &rows)?.into_iter().map(|row| (row, 1)));
                }
                Change::Upsert { rows, .. } if !keyed => {
                    overlay
                        .unkeyed
                        .extend(encode(codecs, &rows)?.into_iter().map(|row| (row, 1)));
                }
                Change::Delete(rows) if !keyed => {
                    self.delete_unkeyed(id, codecs, &rows, &mut overlay.unkeyed)
                        .await?;
                }
                Change::Insert(rows) => {
                    self.upsert_rows(id, codecs, &rows, &[], &mut overlay.keyed)
                        .await?;
                }
                Change::Upsert { rows, unchanged } => {
                    self.upsert_rows(id, codecs, &rows, &unchanged, &mut overlay.keyed)
                        .await?;
                }
                Change::Delete(rows) => {
                    let keys = codecs.keys_of(&rows)?;
                    self.load_keys(id, codecs, &keys, &mut overlay.keyed)
                        .await?;
                    for key in keys {
                        if let Some((_, now)) = overlay.keyed.get_mut(&key) {
                            *now = None;
                        }
                    }
                }
            }
        }
        let mut updates = overlay.unkeyed;
        for (before, now) in overlay.keyed.into_values() {
            if before == now {
                continue;
            }
            updates.extend(before.map(|row| (row, -1)));
            updates.extend(now.map(|row| (row, 1)));
        }
        Ok(consolidate(updates))
    }

    /// Makes each row of `rows` the value of its key; the columns `unchanged[i]` of row `i`
    /// keep the key's current value.
    async fn upsert_rows(
        &self,
        id: GlobalId,
        codecs: &TableCodecs,
        rows: &RecordBatch,
        unchanged: &[Vec<usize>],
        overlay: &mut HashMap<Row, (Option<Row>, Option<Row>)>,
    ) -> Result<(), CoordError> {
        let keys = codecs.keys_of(rows)?;
        self.load_keys(id, codecs, &keys, overlay).await?;
        let encoded = encode(codecs, rows)?;
        for (index, (key, row)) in keys.into_iter().zip(encoded).enumerate() {
            let keep = unchanged.get(index).filter(|columns| !columns.is_empty());
            let Some(entry) = overlay.get_mut(&key) else {
                continue;
            };
            entry.1 = match (keep, &entry.1) {
                (Some(columns), Some(current)) => {
                    Some(merge_unchanged(codecs, rows, index, current, columns)?)
                }
                _ => Some(row),
            };
        }
        Ok(())
    }

    /// Puts the committed rows of `keys` not yet in `overlay` into it.
    async fn load_keys(
        &self,
        id: GlobalId,
        codecs: &TableCodecs,
        keys: &[Row],
        overlay: &mut HashMap<Row, (Option<Row>, Option<Row>)>,
    ) -> Result<(), CoordError> {
        let missing: Vec<Row> = keys
            .iter()
            .filter(|k| !overlay.contains_key(*k))
            .cloned()
            .collect::<HashSet<_>>()
            .into_iter()
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        let time = self.oracle.read_time();
        let found = self
            .compute
            .peek(id, time, PeekFilter::Keys(missing.clone()))
            .await?;
        let found: Vec<(Row, Diff)> = found.into_iter().filter(|(_, d)| *d > 0).collect();
        let found_keys = row_keys(codecs, &found)?;
        for (key, (row, _)) in found_keys.into_iter().zip(found) {
            overlay.insert(key, (Some(row.clone()), Some(row)));
        }
        for key in missing {
            overlay.entry(key).or_insert((None, None));
        }
        Ok(())
    }

    /// Retracts one copy of each row of `rows` that the relation (as changed so far) holds.
    async fn delete_unkeyed(
        &self,
        id: GlobalId,
        codecs: &TableCodecs,
        rows: &RecordBatch,
        pending: &mut Vec<(Row, Diff)>,
    ) -> Result<(), CoordError> {
        let time = self.oracle.read_time();
        for row in encode(codecs, rows)? {
            let committed: Diff = self
                .compute
                .peek(id, time, PeekFilter::Key(row.clone()))
                .await?
                .iter()
                .map(|(_, d)| *d)
                .sum();
            let changed: Diff = pending
                .iter()
                .filter(|(r, _)| *r == row)
                .map(|(_, d)| *d)
                .sum();
            if committed + changed > 0 {
                pending.push((row, -1));
            }
        }
        Ok(())
    }
}

/// The rows of `batch` in the relation's encoding.
fn encode(codecs: &TableCodecs, batch: &RecordBatch) -> Result<Vec<Row>, CoordError> {
    codecs
        .rows
        .encode(batch)
        .map_err(|e| CoordError::Internal(e.to_string()))
}

/// The key of each of `rows`.
fn row_keys(codecs: &TableCodecs, rows: &[(Row, Diff)]) -> Result<Vec<Row>, CoordError> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    codecs.keys_of(&codecs.decode(rows)?)
}

/// Row `index` of `rows`, with `columns` taken from `current` instead.
fn merge_unchanged(
    codecs: &TableCodecs,
    rows: &RecordBatch,
    index: usize,
    current: &Row,
    columns: &[usize],
) -> Result<Row, CoordError> {
    let current = codecs.decode(&[(current.clone(), 1)])?;
    let new = rows.slice(index, 1);
    let merged: Vec<ArrayRef> = (0..new.num_columns())
        .map(|c| {
            if columns.contains(&c) {
                current.column(c).clone()
            } else {
                new.column(c).clone()
            }
        })
        .collect();
    let merged = RecordBatch::try_new(Arc::clone(&codecs.schema), merged)
        .map_err(|e| CoordError::Internal(e.to_string()))?;
    encode(codecs, &merged)?
        .pop()
        .ok_or_else(|| CoordError::Internal("a merged row vanished".into()))
}
