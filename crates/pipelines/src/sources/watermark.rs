//! Event time: a source's watermark, and the rows that arrive behind it.
//!
//! A source declared with `WATERMARK FOR ts AS ts - INTERVAL 'd'` has a watermark: the
//! largest event time seen, minus `d`. A source read from several partitions (Kafka) keeps
//! that per partition and takes the least over the partitions that are not idle: a partition
//! that has sent nothing for the idle timeout stops holding the watermark back, and rejoins
//! when it sends again (when all are idle, the most advanced one sets it). The watermark never moves backwards, and it moves only when a batch
//! commits: it is logged with the batch, so a restart resumes from it.
//!
//! A row whose event time is below the watermark as it stood when its batch arrived is late.
//! It still reaches the source (a view corrects the affected result), and it is also
//! recorded in `fluxion_catalog.late_events` (and in the user table the source's `late_table`
//! option names), so it is never silently lost.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use datafusion::arrow::array::{
    Array, AsArray, RecordBatch, StringArray, TimestampMicrosecondArray, UInt32Array,
};
use datafusion::arrow::compute::{cast, take_record_batch};
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::arrow::json::LineDelimitedWriter;
use system_catalog::late_events_desc;

use crate::error::PipelineError;

/// The option that says how long a partition may send nothing before it stops holding the
/// watermark back.
pub const IDLE_TIMEOUT_OPTION: &str = "watermark.idle_timeout";

/// The option naming a user table that also receives a source's late rows.
pub const LATE_TABLE_OPTION: &str = "late_table";

/// Whether a table's columns can hold late rows (those of `late_events`, in order).
pub fn fits_late_table(schema: &datafusion::arrow::datatypes::SchemaRef) -> bool {
    crate::sources::errors::same_columns(schema, &late_events_desc().schema)
}

/// The idle timeout when the option is not given.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5);

/// The partition of the rows of a source that is one sequence.
const ONLY_PARTITION: i32 = 0;

/// One partition's progress in event time.
#[derive(Debug, Clone, Copy)]
struct PartitionClock {
    /// The largest event time it has sent (microseconds).
    max_event_time: i64,
    /// When it last sent a row.
    last_row_at: Instant,
}

/// A source's watermark, kept as its batches are committed.
#[derive(Debug)]
pub struct WatermarkTracker {
    /// The event-time column of the source's rows.
    column: usize,
    /// How far the watermark trails the event times seen (microseconds).
    delay_micros: i64,
    /// How long a partition may send nothing before it stops holding the watermark back.
    idle_timeout: Duration,
    /// The watermark (microseconds), once there is one.
    watermark: Option<i64>,
    partitions: BTreeMap<i32, PartitionClock>,
}

/// What a batch's rows say about event time.
#[derive(Debug, Default)]
pub struct Observed {
    /// The positions of the late rows among the rows observed.
    pub late: Vec<u32>,
    /// The watermark the late rows were behind.
    pub watermark: Option<i64>,
}

impl WatermarkTracker {
    /// A tracker of event-time column `column`, resuming at watermark `recovered`.
    pub fn new(
        column: usize,
        delay_micros: i64,
        idle_timeout: Duration,
        recovered: Option<i64>,
    ) -> Self {
        Self {
            column,
            delay_micros,
            idle_timeout,
            watermark: recovered,
            partitions: BTreeMap::new(),
        }
    }

    /// Resumes at `watermark` (logged before a restart), unless it is already past it.
    pub fn resume(&mut self, watermark: i64) {
        self.watermark = self.watermark.max(Some(watermark));
    }

    /// The event-time column.
    pub fn column(&self) -> usize {
        self.column
    }

    /// The watermark (microseconds since the epoch, in the column's own time zone).
    pub fn watermark(&self) -> Option<i64> {
        self.watermark
    }

    /// Looks at `rows` (the batch's rows, in order; `partitions` gives each one's partition,
    /// or is empty for a source that is one sequence), received at `now`: which are late
    /// against the watermark as it stands, and what each partition has now seen. The
    /// watermark itself moves in [`advance`](Self::advance).
    pub fn observe(
        &mut self,
        rows: &RecordBatch,
        partitions: &[i32],
        now: Instant,
    ) -> Result<Observed, PipelineError> {
        let times = event_times(rows, self.column)?;
        let times = times.as_primitive::<TimestampMicrosecondType>();
        let mut late = Vec::new();
        for (index, time) in times.iter().enumerate() {
            let Some(time) = time else {
                continue;
            };
            if self.watermark.is_some_and(|watermark| time < watermark) {
                late.push(index as u32);
            }
            let partition = partitions.get(index).copied().unwrap_or(ONLY_PARTITION);
            let clock = self.partitions.entry(partition).or_insert(PartitionClock {
                max_event_time: time,
                last_row_at: now,
            });
            clock.max_event_time = clock.max_event_time.max(time);
            clock.last_row_at = now;
        }
        Ok(Observed {
            late,
            watermark: self.watermark,
        })
    }

    /// Moves the watermark to where the partitions seen now put it, never backwards: the
    /// least over the partitions not idle at `now` of their largest event time, minus the
    /// delay. When every partition is idle, none holds it back: the largest event time seen
    /// anywhere, minus the delay. Returns it if it moved.
    pub fn advance(&mut self, now: Instant) -> Option<i64> {
        let clocks = self.partitions.values();
        let slowest_active = clocks
            .clone()
            .filter(|clock| now.saturating_duration_since(clock.last_row_at) < self.idle_timeout)
            .map(|clock| clock.max_event_time)
            .min();
        let bound = slowest_active.or_else(|| clocks.map(|clock| clock.max_event_time).max())?;
        let candidate = bound.saturating_sub(self.delay_micros);
        if self.watermark.is_some_and(|current| candidate <= current) {
            return None;
        }
        self.watermark = Some(candidate);
        self.watermark
    }
}

/// Column `column` of `rows` as microsecond timestamps.
fn event_times(rows: &RecordBatch, column: usize) -> Result<Arc<dyn Array>, PipelineError> {
    let values = rows.columns().get(column).ok_or_else(|| {
        PipelineError::Internal(format!(
            "the event-time column {column} is not among the batch's {} columns",
            rows.num_columns()
        ))
    })?;
    cast(values, &DataType::Timestamp(TimeUnit::Microsecond, None))
        .map_err(|e| PipelineError::Internal(format!("event times: {e}")))
}

/// The rows of `fluxion_catalog.late_events` recording rows `late` of `rows` (event times in
/// column `column`), which arrived at source `source` behind `watermark`.
pub fn late_event_rows(
    source: &str,
    rows: &RecordBatch,
    column: usize,
    observed: &Observed,
) -> Result<RecordBatch, PipelineError> {
    let internal = |e: &dyn std::fmt::Display| PipelineError::Internal(e.to_string());
    let indices = UInt32Array::from(observed.late.clone());
    let late = take_record_batch(rows, &indices).map_err(|e| internal(&e))?;
    let times = event_times(&late, column)?;
    let mut json = LineDelimitedWriter::new(Vec::new());
    json.write(&late).map_err(|e| internal(&e))?;
    json.finish().map_err(|e| internal(&e))?;
    let json = String::from_utf8(json.into_inner()).map_err(|e| internal(&e))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or_default();
    let count = late.num_rows();
    let watermark = observed.watermark.unwrap_or(i64::MIN);
    RecordBatch::try_new(
        late_events_desc().schema,
        vec![
            Arc::new(StringArray::from_iter_values((0..count).map(|_| source))),
            Arc::new(StringArray::from(json.lines().collect::<Vec<_>>())),
            times,
            Arc::new(TimestampMicrosecondArray::from_iter_values(
                (0..count).map(|_| watermark),
            )),
            Arc::new(
                TimestampMicrosecondArray::from_iter_values((0..count).map(|_| now))
                    .with_timezone("UTC"),
            ),
        ],
    )
    .map_err(|e| internal(&e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::Int64Array;
    use datafusion::arrow::datatypes::{Field, Schema};

    const SECOND: i64 = 1_000_000;

    fn batch(seconds: &[i64]) -> RecordBatch {
        let schema = Schema::new(vec![
            Field::new("v", DataType::Int64, false),
            Field::new("ts", DataType::Timestamp(TimeUnit::Millisecond, None), true),
        ]);
        let millis: Vec<i64> = seconds.iter().map(|s| s * 1000).collect();
        RecordBatch::try_new(
            Arc::new(schema),
            vec![
                Arc::new(Int64Array::from_iter_values(0..seconds.len() as i64)),
                Arc::new(
                    datafusion::arrow::array::TimestampMillisecondArray::from_iter_values(millis),
                ),
            ],
        )
        .unwrap()
    }

    #[test]
    fn the_watermark_trails_the_largest_event_time_and_never_moves_back() {
        let now = Instant::now();
        let mut tracker = WatermarkTracker::new(1, 4 * SECOND, DEFAULT_IDLE_TIMEOUT, None);
        let observed = tracker.observe(&batch(&[10, 12, 11]), &[], now).unwrap();
        assert!(
            observed.late.is_empty(),
            "nothing is late before a watermark"
        );
        assert_eq!(tracker.advance(now), Some(8 * SECOND));
        let observed = tracker.observe(&batch(&[9, 7, 20, 8]), &[], now).unwrap();
        assert_eq!(observed.late, [1], "only 7 s is below the 8 s watermark");
        assert_eq!(observed.watermark, Some(8 * SECOND));
        assert_eq!(tracker.advance(now), Some(16 * SECOND));
        tracker.observe(&batch(&[15]), &[], now).unwrap();
        assert_eq!(
            tracker.advance(now),
            None,
            "an older row does not move it back"
        );
        assert_eq!(tracker.watermark(), Some(16 * SECOND));
    }

    #[test]
    fn a_recovered_watermark_is_where_lateness_starts() {
        let now = Instant::now();
        let mut tracker = WatermarkTracker::new(1, 0, DEFAULT_IDLE_TIMEOUT, Some(100 * SECOND));
        let observed = tracker.observe(&batch(&[50, 150]), &[], now).unwrap();
        assert_eq!(observed.late, [0]);
        let rows = late_event_rows("bids", &batch(&[50, 150]), 1, &observed).unwrap();
        assert_eq!(rows.num_rows(), 1);
        let json = rows.column(1).as_string::<i32>().value(0);
        assert!(json.contains("\"v\":0"), "{json}");
        let event_time = rows.column(2).as_primitive::<TimestampMicrosecondType>();
        assert_eq!(event_time.value(0), 50 * SECOND);
    }

    #[test]
    fn the_slowest_partition_holds_the_watermark_until_it_is_idle() {
        let start = Instant::now();
        let timeout = Duration::from_secs(5);
        let mut tracker = WatermarkTracker::new(1, 0, timeout, None);
        tracker.observe(&batch(&[100, 10]), &[0, 1], start).unwrap();
        assert_eq!(tracker.advance(start), Some(10 * SECOND));
        let later = start + Duration::from_secs(3);
        tracker.observe(&batch(&[200]), &[0], later).unwrap();
        assert_eq!(
            tracker.advance(later),
            None,
            "partition 1 still holds it at 10 s"
        );
        let idle = start + Duration::from_secs(6);
        assert_eq!(
            tracker.advance(idle),
            Some(200 * SECOND),
            "partition 1 went idle"
        );
        let mut both = WatermarkTracker::new(1, 0, timeout, None);
        both.observe(&batch(&[100, 10]), &[0, 1], start).unwrap();
        assert_eq!(both.advance(start), Some(10 * SECOND));
        let all_idle = start + Duration::from_secs(9);
        assert_eq!(
            both.advance(all_idle),
            Some(100 * SECOND),
            "no partition holds it back"
        );
        let back = start + Duration::from_secs(7);
        let observed = tracker.observe(&batch(&[20]), &[1], back).unwrap();
        assert_eq!(
            observed.late,
            [0],
            "a partition back from idleness may be late"
        );
        assert_eq!(
            tracker.advance(back),
            None,
            "and it does not move the watermark back"
        );
    }
}
