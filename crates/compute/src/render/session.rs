//! Session windows: each row with the bounds of its session (see [`plan::Plan::Session`]).
//!
//! Semantics on `(row, t, d)` updates: rows are arranged by key; when a key changes at `t`,
//! its consolidated rows are sorted by time (ties broken by the row's bytes), split into
//! sessions where a time is the gap or more after the one before, and each row is emitted
//! with its session's bounds, replacing the key's previous output. A row that joins two
//! sessions retracts both and emits their union. State: the arranged input and output, per
//! key: the work of a change is that of its key's rows.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, RecordBatch, TimestampMicrosecondArray};
use datafusion::arrow::compute::{cast, sort_to_indices, take_record_batch};
use datafusion::arrow::datatypes::{DataType, SchemaRef, TimeUnit, TimestampMicrosecondType};
use plan::SessionBound;
use repr::{Diff, Row};

use super::{codec, render_key_by, RenderError, RowCollection};
use crate::arrangement::reduce_rows;
use crate::row_container::RowRef;

/// What rendering a session operator needs.
pub(crate) struct SessionSpec<'p> {
    pub input_schema: &'p SchemaRef,
    pub partition: &'p [usize],
    pub time: usize,
    pub gap: i64,
    pub bounds: &'p [SessionBound],
    pub output_schema: &'p SchemaRef,
}

/// Renders session windows over `rows`.
pub(crate) fn render<'s>(
    rows: RowCollection<'s>,
    spec: SessionSpec<'_>,
) -> Result<RowCollection<'s>, RenderError> {
    let input_codec = codec(spec.input_schema)?;
    let output_codec = codec(spec.output_schema)?;
    let (time, gap, bounds) = (spec.time, spec.gap, spec.bounds.to_vec());
    let bound_types: Vec<DataType> = spec.output_schema.fields()
        [spec.input_schema.fields().len()..]
        .iter()
        .map(|f| f.data_type().clone())
        .collect();
    let pairs = render_key_by(rows, spec.input_schema, spec.partition, None)?;
    Ok(reduce_rows(
        pairs,
        "Session",
        move |_key, input: &[(RowRef, Diff)], out: &mut Vec<(Row, Diff)>| {
            let batch = input_codec
                .decode(input.iter().map(|(row, _)| *row))
                .expect("invariant: rows decode with the codec that encoded them");
            let Ok(sessions) = sessions(&batch, time, gap, &bounds, &bound_types) else {
                return;
            };
            let rows = output_codec
                .encode(&sessions.batch)
                .expect("invariant: session rows have the output's columns");
            for (row, position) in rows.into_iter().zip(sessions.positions) {
                out.push((row, input[position].1));
            }
        },
    )
    .map(|(_, row)| row))
}

/// A key's rows with their sessions' bounds, in time order, and where each came from.
struct Sessions {
    batch: RecordBatch,
    positions: Vec<usize>,
}

/// `batch` (one key's rows) sorted by its time column, with the bounds of each row's session
/// appended as columns of `bound_types`.
fn sessions(
    batch: &RecordBatch,
    time: usize,
    gap: i64,
    bounds: &[SessionBound],
    bound_types: &[DataType],
) -> Result<Sessions, datafusion::arrow::error::ArrowError> {
    let order = sort_to_indices(batch.column(time), None, None)?;
    let sorted = take_record_batch(batch, &order)?;
    let micros = cast(
        sorted.column(time),
        &DataType::Timestamp(TimeUnit::Microsecond, None),
    )?;
    let micros = micros.as_primitive::<TimestampMicrosecondType>();
    let times: Vec<Option<i64>> = (0..micros.len())
        .map(|i| micros.is_valid(i).then(|| micros.value(i)))
        .collect();
    let sessions = plan::session_bounds(&times, gap);
    let mut columns = sorted.columns().to_vec();
    for (bound, data_type) in bounds.iter().zip(bound_types) {
        let values = sessions.iter().map(|s| {
            s.map(|(start, end)| match bound {
                SessionBound::Start => start,
                SessionBound::End => end,
            })
        });
        let column: ArrayRef = Arc::new(TimestampMicrosecondArray::from_iter(values));
        columns.push(cast(&column, data_type)?);
    }
    let schema = Arc::new(datafusion::arrow::datatypes::Schema::new(
        sorted
            .schema()
            .fields()
            .iter()
            .cloned()
            .chain(bound_types.iter().enumerate().map(|(i, t)| {
                Arc::new(datafusion::arrow::datatypes::Field::new(
                    format!("bound{i}"),
                    t.clone(),
                    true,
                ))
            }))
            .collect::<Vec<_>>(),
    ));
    let positions = order
        .values()
        .iter()
        .map(|&i| i as usize)
        .collect::<Vec<_>>();
    Ok(Sessions {
        batch: RecordBatch::try_new(schema, columns)?,
        positions,
    })
}
