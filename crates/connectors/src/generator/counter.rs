//! `counter`: one row `(counter bigint)` per tick, counting up from 1.
//!
//! Options: `tick` (default `1s`; `0s` = as fast as possible, in batches), `max` (the last
//! value; the source then ends). The position is the last value emitted.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{Int64Array, RecordBatch};
use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

use crate::duration::parse_duration;
use crate::{ConnectorError, SourceBatch, SourceOptions, SourceReader};

/// Rows per batch when ticking as fast as possible.
const UNPACED_BATCH: i64 = 4096;

/// The counter's one column.
pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new(
        "counter",
        DataType::Int64,
        false,
    )]))
}

/// A running counter.
pub(crate) struct CounterReader {
    tick: Duration,
    max: Option<i64>,
    last: i64,
    next_tick: Instant,
}

impl CounterReader {
    /// Opens a counter that resumes after `resume` (the last value emitted).
    pub fn open(options: &SourceOptions, resume: Option<&str>) -> Result<Self, ConnectorError> {
        let tick = match options.text("tick") {
            Some(text) => parse_duration("tick", text)?,
            None => Duration::from_secs(1),
        };
        let max = options.parsed::<i64>("max")?;
        let last = match resume {
            Some(text) => text
                .parse()
                .map_err(|_| ConnectorError::InvalidPosition(text.to_string()))?,
            None => 0,
        };
        Ok(Self {
            tick,
            max,
            last,
            next_tick: Instant::now(),
        })
    }
}

impl SourceReader for CounterReader {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        let remaining = self.max.map_or(i64::MAX, |max| max - self.last);
        if remaining <= 0 {
            return Ok(None);
        }
        let count = if self.tick.is_zero() {
            UNPACED_BATCH.min(remaining)
        } else {
            std::thread::sleep(self.next_tick.saturating_duration_since(Instant::now()));
            self.next_tick += self.tick;
            1
        };
        let values = Int64Array::from_iter_values(self.last + 1..=self.last + count);
        self.last += count;
        Ok(Some(SourceBatch::inserts(
            RecordBatch::try_new(schema(), vec![Arc::new(values)])?,
            self.last.to_string(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> SourceOptions {
        SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn counts_to_max_and_ends() {
        let mut reader =
            CounterReader::open(&options(&[("tick", "0s"), ("max", "10000")]), None).unwrap();
        let mut total = 0;
        let mut last_position = String::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            total += batch.row_count();
            last_position = batch.position;
        }
        assert_eq!(total, 10000);
        assert_eq!(last_position, "10000");
    }

    #[test]
    fn resumes_after_its_position() {
        let mut reader =
            CounterReader::open(&options(&[("tick", "0s"), ("max", "5")]), Some("3")).unwrap();
        let batch = reader.next_batch().unwrap().unwrap();
        let rows = batch.into_inserted();
        let values = rows
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(values.values(), &[4, 5]);
        assert!(reader.next_batch().unwrap().is_none());
    }

    #[test]
    fn bad_options_are_errors() {
        assert!(CounterReader::open(&options(&[("max", "many")]), None).is_err());
        assert!(CounterReader::open(&options(&[("tick", "soon")]), None).is_err());
        assert!(CounterReader::open(&options(&[]), Some("x")).is_err());
    }
}
