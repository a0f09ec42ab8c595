//! The bytes of one WAL record.
//!
//! ```text
//! payload = [version: u8 = 4][time: u64 LE][changes: u32 LE]
//!           changes × ([collection id: u64 LE][ipc length: u64 LE][Arrow IPC stream])
//!           [positions: u32 LE] positions × ([source id: u64 LE][length: u32 LE][UTF-8])
//!           [stream ends: u32 LE] stream ends × ([stream id: u64 LE][length: u64 LE])
//!           [watermarks: u32 LE] watermarks × ([source id: u64 LE][microseconds: i64 LE])
//! ```
//!
//! Older records still decode: version 3 has no watermarks, version 2 no stream ends either,
//! version 1 (written before sources existed) no positions either.
//!
//! Each change batch is one Arrow IPC *stream* (schema message, one batch, end marker) of the
//! batch's rows with an extra non-null `Int64` column `__diff` appended last. The IPC schema
//! carries names, types, nullability and field and schema metadata, so a batch decodes to
//! exactly the batch that was encoded. The column is stripped by position, not by name, so a
//! user column called `__diff` is harmless.

use std::io::Cursor;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, Int64Array, RecordBatch, RecordBatchOptions};
use arrow::datatypes::{DataType, Field, Schema};
use arrow::ipc::reader::StreamReader;
use arrow::ipc::writer::StreamWriter;
use repr::{ChangeBatch, GlobalId};

use super::WalRecord;
use crate::StorageError;

/// The payload format this code writes.
const FORMAT_VERSION: u8 = 4;
/// The format before watermarks; still read.
const FORMAT_VERSION_WITHOUT_WATERMARKS: u8 = 3;
/// The format before stream logs; still read.
const FORMAT_VERSION_WITHOUT_STREAM_ENDS: u8 = 2;
/// The format before source positions; still read.
const FORMAT_VERSION_WITHOUT_POSITIONS: u8 = 1;
/// The name of the diff column appended to every encoded batch.
const DIFF_COLUMN: &str = "__diff";

/// Encodes `record` as a payload. Each batch is stored at the record's time; the batches' own
/// `time` fields are not stored.
pub(crate) fn encode_record(record: &WalRecord) -> Result<Vec<u8>, StorageError> {
    let count = u32::try_from(record.changes.len()).map_err(|_| StorageError::RecordTooLarge {
        size_bytes: usize::MAX,
    })?;
    let mut out = Vec::with_capacity(64);
    out.push(FORMAT_VERSION);
    out.extend_from_slice(&record.time.to_le_bytes());
    out.extend_from_slice(&count.to_le_bytes());
    for (id, batch) in &record.changes {
        let ipc = encode_change_batch(*id, batch)?;
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&(ipc.len() as u64).to_le_bytes());
        out.extend_from_slice(&ipc);
    }
    let too_large = || StorageError::RecordTooLarge {
        size_bytes: usize::MAX,
    };
    let positions = u32::try_from(record.progress.len()).map_err(|_| too_large())?;
    out.extend_from_slice(&positions.to_le_bytes());
    for (id, position) in &record.progress {
        let len = u32::try_from(position.len()).map_err(|_| too_large())?;
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(position.as_bytes());
    }
    let ends = u32::try_from(record.stream_ends.len()).map_err(|_| too_large())?;
    out.extend_from_slice(&ends.to_le_bytes());
    for (id, end) in &record.stream_ends {
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&end.to_le_bytes());
    }
    let watermarks = u32::try_from(record.watermarks.len()).map_err(|_| too_large())?;
    out.extend_from_slice(&watermarks.to_le_bytes());
    for (id, watermark) in &record.watermarks {
        out.extend_from_slice(&id.0.to_le_bytes());
        out.extend_from_slice(&watermark.to_le_bytes());
    }
    Ok(out)
}

/// Decodes a payload written by [`encode_record`]; the error says what is wrong.
pub(crate) fn decode_record(payload: &[u8]) -> Result<WalRecord, String> {
    decode_record_without(payload, None)
}

/// Decodes a payload written by [`encode_record`] but the changes of `skipped`, which are
/// passed over undecoded (a stream log's scan at recovery needs a frame's position and bad
/// records, not the stream's rows).
pub(crate) fn decode_record_without(
    payload: &[u8],
    skipped: Option<GlobalId>,
) -> Result<WalRecord, String> {
    let mut input = payload;
    let version = take(&mut input, 1)?[0];
    if !(FORMAT_VERSION_WITHOUT_POSITIONS..=FORMAT_VERSION).contains(&version) {
        return Err(format!("unknown record format version {version}"));
    }
    let time = u64::from_le_bytes(take_array(&mut input)?);
    let count = u32::from_le_bytes(take_array(&mut input)?);
    let mut changes = Vec::new();
    for _ in 0..count {
        let id = GlobalId(u64::from_le_bytes(take_array(&mut input)?));
        let len = u64::from_le_bytes(take_array(&mut input)?);
        let len = usize::try_from(len).map_err(|_| format!("batch length {len} too large"))?;
        let ipc = take(&mut input, len)?;
        if skipped == Some(id) {
            continue;
        }
        let (rows, diffs) =
            decode_change_batch(ipc).map_err(|reason| format!("batch for {id}: {reason}"))?;
        changes.push((id, ChangeBatch { time, rows, diffs }));
    }
    let mut progress = Vec::new();
    if version >= FORMAT_VERSION_WITHOUT_STREAM_ENDS {
        let count = u32::from_le_bytes(take_array(&mut input)?);
        for _ in 0..count {
            let id = GlobalId(u64::from_le_bytes(take_array(&mut input)?));
            let len = u32::from_le_bytes(take_array(&mut input)?) as usize;
            let text = std::str::from_utf8(take(&mut input, len)?)
                .map_err(|e| format!("position of {id}: {e}"))?;
            progress.push((id, text.to_string()));
        }
    }
    let mut stream_ends = Vec::new();
    if version >= FORMAT_VERSION_WITHOUT_WATERMARKS {
        let count = u32::from_le_bytes(take_array(&mut input)?);
        for _ in 0..count {
            let id = GlobalId(u64::from_le_bytes(take_array(&mut input)?));
            let end = u64::from_le_bytes(take_array(&mut input)?);
            stream_ends.push((id, end));
        }
    }
    let mut watermarks = Vec::new();
    if version >= FORMAT_VERSION {
        let count = u32::from_le_bytes(take_array(&mut input)?);
        for _ in 0..count {
            let id = GlobalId(u64::from_le_bytes(take_array(&mut input)?));
            let watermark = i64::from_le_bytes(take_array(&mut input)?);
            watermarks.push((id, watermark));
        }
    }
    if !input.is_empty() {
        return Err(format!("{} trailing bytes", input.len()));
    }
    Ok(WalRecord {
        time,
        changes,
        progress,
        stream_ends,
        watermarks,
    })
}

/// One Arrow IPC stream of `batch.rows` plus the `__diff` column.
fn encode_change_batch(id: GlobalId, batch: &ChangeBatch) -> Result<Vec<u8>, StorageError> {
    let rows = &batch.rows;
    if batch.diffs.len() != rows.num_rows() {
        return Err(StorageError::InvalidChangeBatch {
            id,
            reason: format!("{} diffs for {} rows", batch.diffs.len(), rows.num_rows()),
        });
    }
    let row_schema = rows.schema();
    let mut fields: Vec<Arc<Field>> = row_schema.fields().iter().cloned().collect();
    fields.push(Arc::new(Field::new(DIFF_COLUMN, DataType::Int64, false)));
    let schema = Arc::new(Schema::new_with_metadata(
        fields,
        row_schema.metadata().clone(),
    ));
    let mut columns: Vec<ArrayRef> = rows.columns().to_vec();
    columns.push(Arc::new(Int64Array::from(batch.diffs.clone())));
    let with_diffs = RecordBatch::try_new(schema.clone(), columns)?;

    let mut writer = StreamWriter::try_new(Vec::new(), &schema)?;
    writer.write(&with_diffs)?;
    writer.finish()?;
    Ok(writer.into_inner()?)
}

/// The rows and diffs of one IPC stream written by [`encode_change_batch`].
///
/// Arrow's IPC reader panics on some malformed buffers (an offset past its buffer's end)
/// where it would better return an error: a payload that passed its checksum yet does not
/// decode is reported as corrupt, like any other, never a panic during recovery.
fn decode_change_batch(ipc: &[u8]) -> Result<(RecordBatch, Vec<i64>), String> {
    check_message_lengths(ipc)?;
    std::panic::catch_unwind(|| read_change_batch(ipc))
        .unwrap_or_else(|_| Err("malformed Arrow IPC data".into()))
}

/// Checks that each message of the IPC stream `ipc` lies within it: Arrow's reader allocates
/// what a message claims (up to 2^63 bytes of body) before it reads it.
fn check_message_lengths(ipc: &[u8]) -> Result<(), String> {
    const CONTINUATION: i32 = -1;
    let mut rest = ipc;
    while !rest.is_empty() {
        let mut length = i32::from_le_bytes(take_array(&mut rest)?);
        if length == CONTINUATION {
            length = i32::from_le_bytes(take_array(&mut rest)?);
        }
        if length == 0 {
            break;
        }
        let length = usize::try_from(length).map_err(|_| format!("message length {length}"))?;
        let metadata = take(&mut rest, length)?;
        let message = arrow::ipc::root_as_message(metadata).map_err(|e| e.to_string())?;
        let body = usize::try_from(message.bodyLength())
            .map_err(|_| format!("message body length {}", message.bodyLength()))?;
        take(&mut rest, body)?;
    }
    Ok(())
}

/// [`decode_change_batch`], but for the panics.
fn read_change_batch(ipc: &[u8]) -> Result<(RecordBatch, Vec<i64>), String> {
    let mut reader = StreamReader::try_new(Cursor::new(ipc), None).map_err(|e| e.to_string())?;
    let batch = match reader.next() {
        Some(batch) => batch.map_err(|e| e.to_string())?,
        None => return Err("stream holds no batch".into()),
    };
    if reader.next().is_some() {
        return Err("stream holds more than one batch".into());
    }
    let schema = batch.schema();
    let Some(diff_index) = schema.fields().len().checked_sub(1) else {
        return Err("batch has no diff column".into());
    };
    let diff_field = schema.field(diff_index);
    if diff_field.name() != DIFF_COLUMN || diff_field.data_type() != &DataType::Int64 {
        return Err(format!("last column is {diff_field}, not the diff column"));
    }
    let diffs = batch
        .column(diff_index)
        .as_any()
        .downcast_ref::<Int64Array>()
        .ok_or("diff column is not Int64")?;
    if diffs.null_count() > 0 {
        return Err("diff column has nulls".into());
    }
    let diffs = diffs.values().to_vec();

    let row_schema = Arc::new(Schema::new_with_metadata(
        schema.fields()[..diff_index].to_vec(),
        schema.metadata().clone(),
    ));
    let options = RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    let rows = RecordBatch::try_new_with_options(
        row_schema,
        batch.columns()[..diff_index].to_vec(),
        &options,
    )
    .map_err(|e| e.to_string())?;
    Ok((rows, diffs))
}

/// Splits `n` bytes off the front of `input`.
fn take<'a>(input: &mut &'a [u8], n: usize) -> Result<&'a [u8], String> {
    if input.len() < n {
        return Err(format!("needs {n} more bytes, has {}", input.len()));
    }
    let (head, tail) = input.split_at(n);
    *input = tail;
    Ok(head)
}

/// Splits a fixed-size array off the front of `input`.
fn take_array<const N: usize>(input: &mut &[u8]) -> Result<[u8; N], String> {
    let mut out = [0; N];
    out.copy_from_slice(take(input, N)?);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wal::test_data::rich_batch;

    #[test]
    fn a_record_decodes_to_exactly_what_was_encoded() {
        let rows = rich_batch();
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 42,
            changes: vec![
                (
                    GlobalId(7),
                    ChangeBatch {
                        time: 42,
                        rows: rows.clone(),
                        diffs: vec![1, -1, 3],
                    },
                ),
                (
                    GlobalId(9),
                    ChangeBatch {
                        time: 42,
                        rows: rows.slice(1, 0),
                        diffs: vec![],
                    },
                ),
            ],
        };
        let decoded = decode_record(&encode_record(&record).unwrap()).unwrap();
        assert_eq!(decoded.time, 42);
        assert_eq!(decoded.changes.len(), 2);
        let (id, batch) = &decoded.changes[0];
        assert_eq!(*id, GlobalId(7));
        assert_eq!(batch.rows, rows);
        assert_eq!(batch.diffs, vec![1, -1, 3]);
        assert_eq!(batch.time, 42);
        assert_eq!(decoded.changes[1].1.rows.schema(), rows.schema());
        assert_eq!(decoded.changes[1].1.rows.num_rows(), 0);
    }

    #[test]
    fn zero_column_batches_keep_their_row_count() {
        let rows = RecordBatch::try_new_with_options(
            Arc::new(Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(2)),
        )
        .unwrap();
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 1,
            changes: vec![(
                GlobalId(1),
                ChangeBatch {
                    time: 1,
                    rows,
                    diffs: vec![5, -2],
                },
            )],
        };
        let decoded = decode_record(&encode_record(&record).unwrap()).unwrap();
        assert_eq!(decoded.changes[0].1.rows.num_rows(), 2);
        assert_eq!(decoded.changes[0].1.diffs, vec![5, -2]);
    }

    #[test]
    fn mismatched_diffs_are_refused() {
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 1,
            changes: vec![(
                GlobalId(3),
                ChangeBatch {
                    time: 1,
                    rows: rich_batch(),
                    diffs: vec![1],
                },
            )],
        };
        let err = encode_record(&record).unwrap_err();
        assert!(
            matches!(
                err,
                StorageError::InvalidChangeBatch {
                    id: GlobalId(3),
                    ..
                }
            ),
            "{err}"
        );
    }

    #[test]
    fn unknown_versions_and_truncations_are_reported() {
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 1,
            changes: vec![(
                GlobalId(3),
                ChangeBatch {
                    time: 1,
                    rows: rich_batch(),
                    diffs: vec![1, 1, 1],
                },
            )],
        };
        let mut payload = encode_record(&record).unwrap();
        let truncated = &payload[..payload.len() - 1];
        assert!(decode_record(truncated).is_err());
        payload[0] = 5;
        assert!(decode_record(&payload).unwrap_err().contains("version 5"));
    }

    #[test]
    fn records_of_the_format_without_positions_still_decode() {
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 4,
            changes: Vec::new(),
        };
        let mut payload = encode_record(&record).unwrap();
        payload.truncate(payload.len() - 12);
        payload[0] = FORMAT_VERSION_WITHOUT_POSITIONS;
        let decoded = decode_record(&payload).unwrap();
        assert_eq!(decoded.time, 4);
        assert!(decoded.progress.is_empty());
    }

    #[test]
    fn records_of_the_format_without_stream_ends_still_decode() {
        let record = WalRecord {
            progress: vec![(GlobalId(5), "17".into())],
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
            time: 6,
            changes: Vec::new(),
        };
        let mut payload = encode_record(&record).unwrap();
        payload.truncate(payload.len() - 8);
        payload[0] = FORMAT_VERSION_WITHOUT_STREAM_ENDS;
        let decoded = decode_record(&payload).unwrap();
        assert_eq!(decoded.progress, vec![(GlobalId(5), "17".to_string())]);
        assert!(decoded.stream_ends.is_empty());
    }

    #[test]
    fn stream_ends_round_trip() {
        let record = WalRecord {
            progress: Vec::new(),
            stream_ends: vec![(GlobalId(8), 4096), (GlobalId(9), 0)],
            watermarks: Vec::new(),
            time: 7,
            changes: Vec::new(),
        };
        let decoded = decode_record(&encode_record(&record).unwrap()).unwrap();
        assert_eq!(decoded.stream_ends, record.stream_ends);
    }

    #[test]
    fn watermarks_round_trip_and_older_records_have_none() {
        let record = WalRecord {
            progress: vec![(GlobalId(5), "17".into())],
            stream_ends: vec![(GlobalId(5), 512)],
            watermarks: vec![(GlobalId(5), -3), (GlobalId(6), 1_700_000_000_000_000)],
            time: 8,
            changes: Vec::new(),
        };
        let mut payload = encode_record(&record).unwrap();
        let decoded = decode_record(&payload).unwrap();
        assert_eq!(decoded.watermarks, record.watermarks);
        payload.truncate(payload.len() - 4 - 2 * 16);
        payload[0] = FORMAT_VERSION_WITHOUT_WATERMARKS;
        let decoded = decode_record(&payload).unwrap();
        assert_eq!(decoded.stream_ends, record.stream_ends);
        assert!(decoded.watermarks.is_empty());
    }
}
