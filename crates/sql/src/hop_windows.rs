//! The starts of the `HOP` windows holding a time, computed in one pass per batch.
//!
//! `HOP(relation, time, slide, size [, offset])` gives each row one row per window holding its
//! time (see [`crate::rewrite::windows`]). [`HOP_STARTS`]`(time, slide, size, origin)` is the
//! list of their starts: the points of the grid `origin + k · slide` in `(time - size, time]`,
//! in order; NULL for a NULL time. It stands for `generate_series(date_bin(slide, time - size,
//! origin) + slide, date_bin(slide, time, origin), slide)`, which builds each row's list with
//! interval arithmetic (a fifth of a HOP query's CPU); here each start is one integer step.
//! Slides and sizes of months (which vary in length) are refused; the rewrite keeps
//! `generate_series` for them.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, Int64Array, ListArray};
use datafusion::arrow::buffer::OffsetBuffer;
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, TimeUnit};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};

pub use plan::window_close::HOP_STARTS;

/// The most windows one row may fall in (a slide this much smaller than the size is refused).
const MAX_WINDOWS_PER_ROW: i64 = 10_000;

/// [`HOP_STARTS`], to register with a session.
pub fn hop_starts() -> ScalarUDF {
    ScalarUDF::new_from_impl(HopStarts {
        signature: Signature::any(4, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct HopStarts {
    signature: Signature,
}

impl ScalarUDFImpl for HopStarts {
    fn name(&self) -> &str {
        HOP_STARTS
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, arguments: &[DataType]) -> Result<DataType> {
        match arguments.first() {
            Some(time @ DataType::Timestamp(..)) => Ok(DataType::List(Arc::new(Field::new(
                "item",
                time.clone(),
                true,
            )))),
            other => plan_err!("HOP needs a timestamp column, not {other:?}"),
        }
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let [time, slide, size, origin] = args.args.as_slice() else {
            return exec_err!("{HOP_STARTS} takes four arguments");
        };
        let DataType::Timestamp(unit, _) = time.data_type() else {
            return exec_err!("HOP needs a timestamp column");
        };
        let nanos_per_unit = match unit {
            TimeUnit::Second => 1_000_000_000,
            TimeUnit::Millisecond => 1_000_000,
            TimeUnit::Microsecond => 1_000,
            TimeUnit::Nanosecond => 1,
        };
        let slide = duration(slide, nanos_per_unit)?;
        let size = duration(size, nanos_per_unit)?;
        if slide <= 0 || size <= 0 {
            return exec_err!("HOP needs a positive slide and size");
        }
        if size / slide > MAX_WINDOWS_PER_ROW {
            return exec_err!("HOP puts each row in more than {MAX_WINDOWS_PER_ROW} windows");
        }
        let origin = match origin {
            ColumnarValue::Scalar(origin) => scalar_time(origin, &unit)?,
            ColumnarValue::Array(_) => return exec_err!("HOP needs a constant offset"),
        };
        let times = time.to_array(args.number_rows)?;
        let values = cast(&times, &DataType::Int64)?;
        let values = values.as_primitive::<Int64Type>();
        let grid = |t: i64| origin + (t - origin).div_euclid(slide) * slide;
        let mut offsets = Vec::with_capacity(values.len() + 1);
        offsets.push(0i32);
        let mut starts = Vec::with_capacity(values.len() * (size / slide).max(1) as usize);
        for i in 0..values.len() {
            if values.is_valid(i) {
                let t = values.value(i);
                let mut start = grid(t - size) + slide;
                let last = grid(t);
                while start <= last {
                    starts.push(start);
                    start += slide;
                }
            }
            let end = i32::try_from(starts.len())
                .or_else(|_| exec_err!("HOP made too many windows for one batch"))?;
            offsets.push(end);
        }
        let starts: ArrayRef = cast(&Int64Array::from(starts), times.data_type())?;
        let field = Arc::new(Field::new("item", times.data_type().clone(), true));
        let list = ListArray::try_new(
            field,
            OffsetBuffer::new(offsets.into()),
            starts,
            times.nulls().cloned(),
        )?;
        Ok(ColumnarValue::Array(Arc::new(list)))
    }
}

/// A constant interval of whole days and time, in the time column's unit.
fn duration(value: &ColumnarValue, nanos_per_unit: i64) -> Result<i64> {
    let nanos = match value {
        ColumnarValue::Scalar(ScalarValue::IntervalMonthDayNano(Some(v))) if v.months == 0 => {
            i64::from(v.days) * 86_400_000_000_000 + v.nanoseconds
        }
        ColumnarValue::Scalar(ScalarValue::IntervalDayTime(Some(v))) => {
            (i64::from(v.days) * 86_400_000 + i64::from(v.milliseconds)) * 1_000_000
        }
        _ => return exec_err!("HOP needs a constant slide and size of days and time"),
    };
    Ok(nanos / nanos_per_unit)
}

/// A constant timestamp, in `unit`.
fn scalar_time(value: &ScalarValue, unit: &TimeUnit) -> Result<i64> {
    match value.cast_to(&DataType::Timestamp(*unit, None))? {
        ScalarValue::TimestampSecond(Some(t), _)
        | ScalarValue::TimestampMillisecond(Some(t), _)
        | ScalarValue::TimestampMicrosecond(Some(t), _)
        | ScalarValue::TimestampNanosecond(Some(t), _) => Ok(t),
        other => exec_err!("HOP needs a constant offset, not {other}"),
    }
}

/// Whether an interval written as `text` has a fixed length (no months or years), so that
/// [`HOP_STARTS`] can take it.
pub(crate) fn is_fixed_length(text: &str) -> bool {
    let upper = text.to_uppercase();
    !upper
        .split(|c: char| !c.is_ascii_alphanumeric())
        .map(|word| word.trim_start_matches(|c: char| c.is_ascii_digit()))
        .any(|word| {
            ["MON", "Y", "YR", "YRS", "DECADE", "CENTUR", "MILLEN"]
                .iter()
                .any(|unit| word == *unit || (unit.len() > 2 && word.starts_with(unit)))
                || word.starts_with("YEAR")
        })
}

#[cfg(test)]
mod tests {
    use super::is_fixed_length;

    #[test]
    fn months_and_years_have_no_fixed_length() {
        assert!(is_fixed_length("INTERVAL '10' SECOND"));
        assert!(is_fixed_length("INTERVAL '1' DAY"));
        assert!(is_fixed_length("INTERVAL '1 day 02:00:00'"));
        assert!(!is_fixed_length("INTERVAL '1' MONTH"));
        assert!(!is_fixed_length("INTERVAL '2 mons'"));
        assert!(!is_fixed_length("INTERVAL '1y'"));
        assert!(!is_fixed_length("INTERVAL '1' YEAR"));
    }
}
