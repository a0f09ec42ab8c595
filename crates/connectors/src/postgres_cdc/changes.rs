//! Changes collected row by row, in order, and handed over as [`OutputChange`]s.
//!
//! Consecutive rows of the same kind to the same output become one change of one batch, so
//! a transaction of a thousand inserts is one `Upsert` of a thousand rows; the order of
//! changes across outputs and kinds is kept.

use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;

use super::columns::to_batch;
use super::value::Value;
use crate::{Change, OutputChange};

/// What a row does to its output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RowKind {
    /// A new row of an output without a key.
    Insert,
    /// The new value of its key.
    Upsert,
    /// Deletes the row of its key (all its columns for an output without a key).
    Delete,
}

/// A run of changes of one kind to one output.
#[derive(Debug)]
enum Run {
    Rows {
        output: usize,
        kind: RowKind,
        rows: Vec<Vec<Value>>,
        unchanged: Vec<Vec<usize>>,
    },
    Truncate(usize),
}

/// Changes in the order they happened.
#[derive(Debug, Default)]
pub(crate) struct ChangeList {
    runs: Vec<Run>,
    rows: usize,
}

impl ChangeList {
    /// Adds a row to `output`; `unchanged` lists the columns (of an upsert) to keep.
    pub fn push(&mut self, output: usize, kind: RowKind, row: Vec<Value>, unchanged: Vec<usize>) {
        self.rows += 1;
        self.add(Run::Rows {
            output,
            kind,
            rows: vec![row],
            unchanged: vec![unchanged],
        });
    }

    /// Adds `run`, joining it to the last run if that has the same output and kind.
    fn add(&mut self, run: Run) {
        match (self.runs.last_mut(), run) {
            (
                Some(Run::Rows {
                    output: last_output,
                    kind: last_kind,
                    rows: last_rows,
                    unchanged: last_unchanged,
                }),
                Run::Rows {
                    output,
                    kind,
                    rows,
                    unchanged,
                },
            ) if *last_output == output && *last_kind == kind => {
                last_rows.extend(rows);
                last_unchanged.extend(unchanged);
            }
            (_, run) => self.runs.push(run),
        }
    }

    /// Empties `output`.
    pub fn truncate(&mut self, output: usize) {
        self.runs.push(Run::Truncate(output));
    }

    /// Adds `later`'s changes after these.
    pub fn append(&mut self, later: ChangeList) {
        self.rows += later.rows;
        for run in later.runs {
            self.add(run);
        }
    }

    /// The number of rows.
    pub fn row_count(&self) -> usize {
        self.rows
    }

    /// The changes as batches; `schema(output)` is each output's schema.
    pub fn finish(
        self,
        schema: impl Fn(usize) -> SchemaRef,
    ) -> Result<Vec<OutputChange>, ArrowError> {
        self.runs
            .into_iter()
            .map(|run| match run {
                Run::Truncate(output) => Ok(OutputChange {
                    output,
                    change: Change::Truncate,
                }),
                Run::Rows {
                    output,
                    kind,
                    rows,
                    unchanged,
                } => {
                    let batch = to_batch(&schema(output), &rows)?;
                    let change = match kind {
                        RowKind::Insert => Change::Insert(batch),
                        RowKind::Delete => Change::Delete(batch),
                        RowKind::Upsert if unchanged.iter().all(Vec::is_empty) => Change::Upsert {
                            rows: batch,
                            unchanged: Vec::new(),
                        },
                        RowKind::Upsert => Change::Upsert {
                            rows: batch,
                            unchanged,
                        },
                    };
                    Ok(OutputChange { output, change })
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::datatypes::{DataType, Field, Schema};

    use super::*;

    #[test]
    fn groups_consecutive_rows_and_keeps_the_order() {
        let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
        let mut list = ChangeList::default();
        list.push(1, RowKind::Upsert, vec![Value::Int32(1)], vec![]);
        list.push(1, RowKind::Upsert, vec![Value::Int32(2)], vec![]);
        list.push(2, RowKind::Upsert, vec![Value::Int32(3)], vec![]);
        let mut later = ChangeList::default();
        later.push(2, RowKind::Upsert, vec![Value::Int32(4)], vec![0]);
        later.truncate(1);
        later.push(1, RowKind::Delete, vec![Value::Int32(1)], vec![]);
        list.append(later);
        assert_eq!(list.row_count(), 5);
        let changes = list.finish(|_| Arc::clone(&schema)).unwrap();
        let shape: Vec<(usize, usize)> = changes
            .iter()
            .map(|c| (c.output, c.change.row_count()))
            .collect();
        assert_eq!(shape, [(1, 2), (2, 2), (1, 0), (1, 1)]);
        match &changes[0].change {
            Change::Upsert { unchanged, .. } => assert!(unchanged.is_empty()),
            other => panic!("{other:?}"),
        }
        match &changes[1].change {
            Change::Upsert { unchanged, .. } => assert_eq!(unchanged, &[vec![], vec![0]]),
            other => panic!("{other:?}"),
        }
        assert!(matches!(changes[2].change, Change::Truncate));
        assert!(matches!(changes[3].change, Change::Delete(_)));
    }
}
