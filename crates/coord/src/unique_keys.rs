//! Unique indexes: no write may leave two rows of a table with the same key, unless the key
//! holds a NULL (NULLs are distinct, as in PostgreSQL).
//!
//! A write is checked against the rows its snapshot sees, read through each unique index by
//! the keys the write adds, with the commits in flight and the write's own changes laid over
//! them. The read is recorded like any other, so an optimistic write that raced with another
//! write to the table is run again ([`crate::write_conflicts`]). An index being created is
//! checked against every row of its table.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use compute::PeekFilter;
use datafusion::arrow::array::{Array, RecordBatch};
use repr::{consolidate, Diff, Row, RowCodec};
use sql::catalog::UniqueKey;
use sql::{ConflictArbiter, OnConflict, SqlError};

use crate::catalog::Item;
use crate::commit::WriteSnapshot;
use crate::coordinator::Coordinator;
use crate::ddl::PlannedIndex;
use crate::error::CoordError;
use crate::table_rows::TableCodecs;

impl Coordinator {
    /// Checks that `writes` to `table`, read as `snapshot` says, keep the keys of each of
    /// its unique indexes unique.
    pub(crate) async fn check_unique_keys(
        &self,
        table: &Item,
        codecs: &TableCodecs,
        writes: &[(Row, Diff)],
        snapshot: &WriteSnapshot,
    ) -> Result<(), CoordError> {
        let Some(relation) = table.relation().filter(|r| !r.unique_keys.is_empty()) else {
            return Ok(());
        };
        let added: Vec<(Row, Diff)> = writes.iter().filter(|(_, d)| *d > 0).cloned().collect();
        if added.is_empty() {
            return Ok(());
        }
        if let Some(reads) = &snapshot.reads {
            reads.all(table.id);
        }
        let added = codecs.decode(&added)?;
        for unique in &relation.unique_keys {
            let key = KeyColumns::new(codecs, &unique.columns)?;
            let wanted: HashSet<Row> = key.keys(&added)?.into_iter().flatten().collect();
            if wanted.is_empty() {
                continue;
            }
            let present = self
                .present_keys(table, codecs, unique, &wanted, writes, snapshot)
                .await?;
            let mut counts: HashMap<&Row, Diff> = HashMap::new();
            for (row, key_row, diff) in &present.keys {
                let count = counts.entry(key_row).or_default();
                *count += diff;
                if *count > 1 {
                    return Err(CoordError::UniqueViolation {
                        constraint: unique.name.clone(),
                        detail: format!(
                            "{} already exists.",
                            codecs.describe_columns(&present.rows, *row, &unique.columns)
                        ),
                    });
                }
            }
        }
        Ok(())
    }

    /// The rows of `table` whose `unique` key is one of `wanted`, as `snapshot` reads them
    /// with `writes` laid over them.
    async fn present_keys(
        &self,
        table: &Item,
        codecs: &TableCodecs,
        unique: &UniqueKey,
        wanted: &HashSet<Row>,
        writes: &[(Row, Diff)],
        snapshot: &WriteSnapshot,
    ) -> Result<PresentKeys, CoordError> {
        let filter = PeekFilter::Keys(wanted.iter().cloned().collect());
        let mut rows = self
            .compute
            .peek(unique.index, snapshot.read_time, filter)
            .await?;
        if let Some(pending) = snapshot.overlay.tables.get(&table.id) {
            rows.extend(pending.iter().cloned());
        }
        rows.extend(writes.iter().cloned());
        let rows: Vec<(Row, Diff)> = consolidate(rows)
            .into_iter()
            .filter(|(_, d)| *d > 0)
            .collect();
        let batch = codecs.decode(&rows)?;
        let keys = KeyColumns::new(codecs, &unique.columns)?
            .keys(&batch)?
            .into_iter()
            .zip(&rows)
            .enumerate()
            .filter_map(|(row, (key, (_, diff)))| {
                key.filter(|k| wanted.contains(k)).map(|k| (row, k, *diff))
            })
            .collect();
        Ok(PresentKeys { rows: batch, keys })
    }

    /// `INSERT … ON CONFLICT DO NOTHING` without a target: the rows of `batch` that conflict
    /// with no row of `table` (nor with an earlier row of `batch`) on the primary key or any
    /// unique index, to insert.
    pub(crate) async fn rows_without_conflicts(
        &self,
        table: &Item,
        codecs: &TableCodecs,
        batch: &RecordBatch,
        snapshot: &WriteSnapshot,
    ) -> Result<Vec<(Row, Diff)>, CoordError> {
        let rows = codecs.encode(batch)?;
        if let Some(reads) = &snapshot.reads {
            reads.all(table.id);
        }
        // Each key's value in every row (`None`: a NULL, which conflicts with nothing), and
        // the values the table holds already.
        let mut keys: Vec<(Vec<Option<Row>>, HashSet<Row>)> = Vec::new();
        if codecs.key.is_some() {
            let values = codecs.keys_of(batch)?;
            let existing = self
                .existing_keys(snapshot, codecs, table.id, &values)
                .await?;
            keys.push((
                values.into_iter().map(Some).collect(),
                existing.into_keys().collect(),
            ));
        }
        let unique_keys = table
            .relation()
            .map(|r| r.unique_keys.clone())
            .unwrap_or_default();
        for unique in &unique_keys {
            let key = KeyColumns::new(codecs, &unique.columns)?;
            let values = key.keys(batch)?;
            let wanted: HashSet<Row> = values.iter().flatten().cloned().collect();
            let present = self
                .present_keys(table, codecs, unique, &wanted, &[], snapshot)
                .await?;
            let taken = present.keys.into_iter().map(|(_, key, _)| key).collect();
            keys.push((values, taken));
        }
        let mut inserted = Vec::new();
        for (row_index, row) in rows.into_iter().enumerate() {
            let conflicts = keys.iter().any(|(values, taken)| {
                values[row_index]
                    .as_ref()
                    .is_some_and(|value| taken.contains(value))
            });
            if conflicts {
                continue;
            }
            for (values, taken) in &mut keys {
                if let Some(value) = &values[row_index] {
                    taken.insert(value.clone());
                }
            }
            inserted.push((row, 1));
        }
        Ok(inserted)
    }

    /// Checks that the rows of the table `index` is planned on have unique keys, at the
    /// latest time. The caller holds the sequencer.
    pub(crate) async fn check_rows_unique(&self, index: &PlannedIndex) -> Result<(), CoordError> {
        let codecs = self
            .table_codecs
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .get(&index.on)
            .cloned()
            .ok_or_else(|| CoordError::Internal(format!("no codecs for table {}", index.on)))?;
        let rows = self
            .compute
            .peek(index.on, self.oracle.read_time(), PeekFilter::All)
            .await?;
        let counts: Vec<Diff> = rows.iter().map(|(_, count)| *count).collect();
        let rows = codecs.decode(&rows)?;
        let mut seen = HashSet::new();
        for (row, key) in KeyColumns::new(&codecs, &index.columns)?
            .keys(&rows)?
            .into_iter()
            .enumerate()
        {
            // A table without a primary key may hold a row twice, as one row counted twice.
            if key.is_some_and(|key| !seen.insert(key) || counts[row] > 1) {
                return Err(CoordError::UniqueIndexBroken {
                    index: index.name.clone(),
                    detail: format!(
                        "{} is duplicated.",
                        codecs.describe_columns(&rows, row, &index.columns)
                    ),
                });
            }
        }
        Ok(())
    }
}

/// Which key an INSERT's `ON CONFLICT` arbitrates on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Arbiter {
    /// The primary key.
    PrimaryKey,
    /// None: `DO NOTHING` on a table without unique keys inserts every row.
    Nothing,
    /// Every key: `DO NOTHING` without a target skips a row that conflicts on any.
    AnyKey,
}

/// The arbiter `arbiter` names on `table`: the primary key; or for `DO NOTHING` without a
/// target, every key (nothing on a table without keys). A unique index named as the arbiter
/// is not supported yet.
pub(crate) fn conflict_arbiter(
    table: &Item,
    codecs: &TableCodecs,
    arbiter: &ConflictArbiter,
    action: &OnConflict,
) -> Result<Arbiter, CoordError> {
    let unique_keys = table
        .relation()
        .map(|r| r.unique_keys.as_slice())
        .unwrap_or_default();
    let names = |columns: &[usize]| -> Vec<String> {
        let mut names: Vec<String> = columns
            .iter()
            .map(|&c| codecs.schema.field(c).name().clone())
            .collect();
        names.sort();
        names
    };
    let primary_key = codecs.key.as_ref().map(|(columns, _)| names(columns));
    let other_index = |index: &UniqueKey| {
        Err(CoordError::unsupported(format!(
            "ON CONFLICT on unique index \"{}\" (only the primary key arbitrates conflicts)",
            index.name
        )))
    };
    match arbiter {
        ConflictArbiter::Any => match action {
            OnConflict::DoUpdate(_) => Err(CoordError::Sql(SqlError::Syntax(
                "ON CONFLICT DO UPDATE requires inference specification or constraint name".into(),
            ))),
            OnConflict::DoNothing => match (&primary_key, unique_keys.is_empty()) {
                (_, false) => Ok(Arbiter::AnyKey),
                (Some(_), true) => Ok(Arbiter::PrimaryKey),
                (None, true) => Ok(Arbiter::Nothing),
            },
        },
        ConflictArbiter::Columns(columns) => {
            let mut columns = columns.clone();
            columns.sort();
            if primary_key.as_ref() == Some(&columns) {
                return Ok(Arbiter::PrimaryKey);
            }
            match unique_keys.iter().find(|k| names(&k.columns) == columns) {
                Some(index) => other_index(index),
                None => Err(CoordError::NoConflictArbiter),
            }
        }
        ConflictArbiter::Constraint(name) => {
            if primary_key.is_some() && *name == format!("{}_pkey", table.name) {
                return Ok(Arbiter::PrimaryKey);
            }
            match unique_keys.iter().find(|k| k.name == *name) {
                Some(index) => other_index(index),
                None => Err(CoordError::Sql(SqlError::UnknownObject {
                    kind: "constraint",
                    name: format!("{name}\" for table \"{}", table.name),
                })),
            }
        }
    }
}

/// Rows of a table read by a unique key: the rows, and for each whose key was asked for, its
/// position, key and count.
struct PresentKeys {
    rows: RecordBatch,
    keys: Vec<(usize, Row, Diff)>,
}

/// The key columns of a unique index, encoded as its arrangement encodes them.
struct KeyColumns<'a> {
    columns: &'a [usize],
    codec: RowCodec,
}

impl<'a> KeyColumns<'a> {
    fn new(codecs: &TableCodecs, columns: &'a [usize]) -> Result<Self, CoordError> {
        let schema = codecs
            .schema
            .project(columns)
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        let codec =
            RowCodec::new(Arc::new(schema)).map_err(|e| CoordError::Internal(e.to_string()))?;
        Ok(Self { columns, codec })
    }

    /// Each row's key, `None` where the key holds a NULL.
    fn keys(&self, batch: &RecordBatch) -> Result<Vec<Option<Row>>, CoordError> {
        let columns = batch
            .project(self.columns)
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        let keys = self
            .codec
            .encode_columns(columns.columns(), columns.num_rows())
            .map_err(|e| CoordError::Internal(e.to_string()))?;
        Ok(keys
            .into_iter()
            .enumerate()
            .map(|(row, key)| {
                let has_null = columns.columns().iter().any(|c| c.is_null(row));
                (!has_null).then_some(key)
            })
            .collect())
    }
}
