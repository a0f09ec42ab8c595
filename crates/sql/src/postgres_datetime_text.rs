//! Timestamps and intervals cast to text read as PostgreSQL prints them: `2024-01-01
//! 10:00:00.5`, with `+00` for a `timestamptz` (sessions run in UTC), and `1 day -01:30:00`.
//! DataFusion's cast writes ISO 8601 (`2024-01-01T10:00:00.500`) and its own interval text
//! (`0 days 1 hours 30 mins 0.000000000 secs`), which `ts::text`, `ts || ''` and everything
//! comparing or storing such text would then see.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, DurationMicrosecondType, IntervalMonthDayNanoType, IntervalUnit, TimeUnit,
    TimestampMicrosecondType,
};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use repr::pg_text::{duration_interval, interval_text, timestamp_text};

use crate::postgres_arrays::rewrite_casts;

/// Rewrites casts of timestamps to text into [`TimestampText`] and of intervals into
/// [`IntervalText`]. Runs after type coercion, which adds casts of its own.
#[derive(Debug, Default)]
pub struct DateTimeTextCasts;

impl AnalyzerRule for DateTimeTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_casts(plan, |from, to| match (from.data_type(), to) {
            (DataType::Timestamp(_, zone), DataType::Utf8) => {
                Some(ScalarUDF::from(TimestampText {
                    with_zone: zone.is_some(),
                    signature: Signature::any(1, Volatility::Immutable),
                }))
            }
            (DataType::Interval(_) | DataType::Duration(_), DataType::Utf8) => {
                Some(ScalarUDF::from(IntervalText {
                    signature: Signature::any(1, Volatility::Immutable),
                }))
            }
            _ => None,
        })
    }

    fn name(&self) -> &str {
        "datetime_text_casts"
    }
}

/// `__timestamp_out(ts)`: a timestamp as PostgreSQL's text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct TimestampText {
    /// A `timestamptz`: the text ends in the zone, `+00`.
    with_zone: bool,
    signature: Signature,
}

impl ScalarUDFImpl for TimestampText {
    fn name(&self) -> &str {
        "__timestamp_out"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        // A constant argument makes one value; DataFusion reads a one-row result of constant
        // arguments as a constant.
        let rows = match args.args[0] {
            ColumnarValue::Scalar(_) => 1,
            ColumnarValue::Array(_) => args.number_rows,
        };
        let input = args.args[0].to_array(rows)?;
        let micros = cast(&input, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
        let micros = micros.as_primitive::<TimestampMicrosecondType>();
        let zone = if self.with_zone { "+00" } else { "" };
        let texts: StringArray = (0..micros.len())
            .map(|i| {
                micros
                    .is_valid(i)
                    .then(|| format!("{}{zone}", timestamp_text(micros.value(i))))
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(texts)))
    }
}

/// `__interval_out(i)`: an interval (or a duration, the difference of two timestamps, as the
/// interval PostgreSQL makes of it) as PostgreSQL's text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct IntervalText {
    signature: Signature,
}

impl ScalarUDFImpl for IntervalText {
    fn name(&self) -> &str {
        "__interval_out"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, _: &[DataType]) -> Result<DataType> {
        Ok(DataType::Utf8)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = match args.args[0] {
            ColumnarValue::Scalar(_) => 1,
            ColumnarValue::Array(_) => args.number_rows,
        };
        let input = args.args[0].to_array(rows)?;
        if let DataType::Duration(_) = input.data_type() {
            let micros = cast(&input, &DataType::Duration(TimeUnit::Microsecond))?;
            let micros = micros.as_primitive::<DurationMicrosecondType>();
            let texts: StringArray = (0..micros.len())
                .map(|i| {
                    micros.is_valid(i).then(|| {
                        let (days, rest) = duration_interval(micros.value(i));
                        interval_text(0, days, rest)
                    })
                })
                .collect();
            return Ok(ColumnarValue::Array(Arc::new(texts)));
        }
        let intervals = cast(&input, &DataType::Interval(IntervalUnit::MonthDayNano))?;
        let intervals = intervals.as_primitive::<IntervalMonthDayNanoType>();
        let texts: StringArray = (0..intervals.len())
            .map(|i| {
                intervals.is_valid(i).then(|| {
                    let v = intervals.value(i);
                    interval_text(v.months, v.days, v.nanoseconds / 1000)
                })
            })
            .collect();
        Ok(ColumnarValue::Array(Arc::new(texts)))
    }
}
