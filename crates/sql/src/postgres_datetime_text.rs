//! Timestamps and intervals cast to text read as PostgreSQL prints them: `2024-01-01
//! 10:00:00.5`, with `+00` for a `timestamptz` (sessions run in UTC), and `1 day -01:30:00`.
//! DataFusion's cast writes ISO 8601 (`2024-01-01T10:00:00.500`) and its own interval text
//! (`0 days 1 hours 30 mins 0.000000000 secs`), which `ts::text`, `ts || ''` and everything
//! comparing or storing such text would then see.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, StringArray};
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

/// Rewrites casts of timestamps and intervals to text into [`DateTimeText`]. Runs after type
/// coercion, which adds casts of its own.
#[derive(Debug, Default)]
pub struct DateTimeTextCasts;

impl AnalyzerRule for DateTimeTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_casts(plan, |from, to| {
            let form = match (from.data_type(), to) {
                (DataType::Timestamp(_, zone), DataType::Utf8) => TextForm::Timestamp {
                    with_zone: zone.is_some(),
                },
                (DataType::Interval(_), DataType::Utf8) => TextForm::Interval,
                (DataType::Duration(_), DataType::Utf8) => TextForm::Duration,
                _ => return None,
            };
            Some(ScalarUDF::from(DateTimeText {
                form,
                signature: Signature::any(1, Volatility::Immutable),
            }))
        })
    }

    fn name(&self) -> &str {
        "datetime_text_casts"
    }
}

/// What [`DateTimeText`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TextForm {
    /// A timestamp; a `timestamptz` ends in the zone, `+00`.
    Timestamp { with_zone: bool },
    /// An interval.
    Interval,
    /// A duration (the difference of two timestamps), as the interval PostgreSQL makes of it.
    Duration,
}

/// `__datetime_out(x)`: a timestamp or interval as PostgreSQL's text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct DateTimeText {
    form: TextForm,
    signature: Signature,
}

impl ScalarUDFImpl for DateTimeText {
    fn name(&self) -> &str {
        "__datetime_out"
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
        let texts: StringArray = match self.form {
            TextForm::Timestamp { with_zone } => {
                let micros = cast(&input, &DataType::Timestamp(TimeUnit::Microsecond, None))?;
                let micros = micros.as_primitive::<TimestampMicrosecondType>();
                let zone = if with_zone { "+00" } else { "" };
                micros
                    .iter()
                    .map(|v| v.map(|v| format!("{}{zone}", timestamp_text(v))))
                    .collect()
            }
            TextForm::Interval => {
                let intervals = cast(&input, &DataType::Interval(IntervalUnit::MonthDayNano))?;
                intervals
                    .as_primitive::<IntervalMonthDayNanoType>()
                    .iter()
                    .map(|v| v.map(|v| interval_text(v.months, v.days, v.nanoseconds / 1000)))
                    .collect()
            }
            TextForm::Duration => {
                let micros = cast(&input, &DataType::Duration(TimeUnit::Microsecond))?;
                micros
                    .as_primitive::<DurationMicrosecondType>()
                    .iter()
                    .map(|v| {
                        v.map(|v| {
                            let (days, rest) = duration_interval(v);
                            interval_text(0, days, rest)
                        })
                    })
                    .collect()
            }
        };
        Ok(ColumnarValue::Array(Arc::new(texts)))
    }
}
