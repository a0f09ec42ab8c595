//! Batches shared by the WAL's tests.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::{
    Array, Decimal128Array, DictionaryArray, Int32Array, Int64Array, ListArray, RecordBatch,
    StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Int32Type, Schema, TimeUnit};
use repr::{ChangeBatch, Diff, GlobalId, Timestamp};

use super::WalRecord;

/// A batch exercising nulls, decimals, strings, time zones, lists, dictionaries, field and
/// schema metadata, and non-nullable columns.
pub(super) fn rich_batch() -> RecordBatch {
    let declared = HashMap::from([("fluxion.pg_type".to_string(), "varchar(20)".to_string())]);
    let schema = Schema::new_with_metadata(
        vec![
            Field::new("id", DataType::Int32, false),
            Field::new("name", DataType::Utf8, true).with_metadata(declared),
            Field::new("price", DataType::Decimal128(12, 2), true),
            Field::new(
                "at",
                DataType::Timestamp(TimeUnit::Microsecond, Some("Europe/Paris".into())),
                true,
            ),
            Field::new(
                "tags",
                DataType::List(Arc::new(Field::new("item", DataType::Int32, true))),
                true,
            ),
            Field::new(
                "color",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new("__diff", DataType::Utf8, true),
        ],
        HashMap::from([("origin".to_string(), "test".to_string())]),
    );
    let tags = ListArray::from_iter_primitive::<Int32Type, _, _>(vec![
        Some(vec![Some(1), None]),
        None,
        Some(vec![]),
    ]);
    let color: DictionaryArray<Int32Type> =
        vec![Some("red"), None, Some("red")].into_iter().collect();
    RecordBatch::try_new(
        Arc::new(schema),
        vec![
            Arc::new(Int32Array::from(vec![1, 2, 3])),
            Arc::new(StringArray::from(vec![Some("ä ü"), None, Some("")])),
            Arc::new(
                Decimal128Array::from(vec![Some(12_345), None, Some(-1)])
                    .with_precision_and_scale(12, 2)
                    .unwrap(),
            ),
            Arc::new(
                TimestampMicrosecondArray::from(vec![Some(1_700_000_000_000_000), None, Some(0)])
                    .with_timezone("Europe/Paris"),
            ),
            Arc::new(tags),
            Arc::new(color),
            Arc::new(StringArray::from(vec![Some("not"), Some("the"), None])),
        ],
    )
    .unwrap()
}

/// The schema of the simple `(k bigint, v text)` tables the log tests write.
pub(crate) fn kv_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("k", DataType::Int64, false),
        Field::new("v", DataType::Utf8, true),
    ]))
}

/// One `(k, v)` row with its diff.
pub(crate) type KvRow<'a> = (i64, &'a str, Diff);

/// A change to a `(k, v)` table: one row per `(k, v, diff)`.
pub(crate) fn kv_change(time: Timestamp, rows: &[KvRow]) -> ChangeBatch {
    let rows_batch = RecordBatch::try_new(
        kv_schema(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
        ],
    )
    .unwrap();
    ChangeBatch {
        time,
        rows: rows_batch,
        diffs: rows.iter().map(|r| r.2).collect(),
    }
}

/// A record of `(k, v)` changes to several tables at one time.
pub(super) fn kv_record(time: Timestamp, changes: &[(u64, &[KvRow])]) -> WalRecord {
    WalRecord {
        progress: Vec::new(),
        stream_ends: Vec::new(),
        watermarks: Vec::new(),
        time,
        changes: changes
            .iter()
            .map(|(id, rows)| (GlobalId(*id), kv_change(time, rows)))
            .collect(),
    }
}

/// The net contents of `(k, v)` tables after applying `records`: `(table, k, v) → multiplicity`,
/// zero multiplicities removed.
pub(super) fn kv_contents(records: &[WalRecord]) -> BTreeMap<(u64, i64, String), Diff> {
    let mut contents = BTreeMap::new();
    for record in records {
        for (id, batch) in &record.changes {
            assert_eq!(batch.rows.schema(), kv_schema());
            let k = batch
                .rows
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            let v = batch
                .rows
                .column(1)
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap();
            for (row, diff) in batch.diffs.iter().enumerate() {
                *contents
                    .entry((id.0, k.value(row), v.value(row).to_string()))
                    .or_insert(0) += diff;
            }
        }
    }
    contents.retain(|_, diff| *diff != 0);
    contents
}

/// The `(time, table, k)` of every row in `records`, in log order: pins down order and times.
pub(super) fn kv_keys(records: &[WalRecord]) -> Vec<(Timestamp, u64, i64)> {
    let mut keys = Vec::new();
    for record in records {
        for (id, batch) in &record.changes {
            assert_eq!(batch.time, record.time);
            let k = batch
                .rows
                .column(0)
                .as_any()
                .downcast_ref::<Int64Array>()
                .unwrap();
            keys.extend(k.values().iter().map(|k| (record.time, id.0, *k)));
        }
    }
    keys
}
