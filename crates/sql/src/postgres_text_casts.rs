//! Timestamps, intervals and floats cast to text read as PostgreSQL prints them: `2024-01-01
//! 10:00:00.5`, with `+00` for a `timestamptz` (sessions run in UTC), `1 day -01:30:00`, and
//! `5` for the float 5. DataFusion's cast writes ISO 8601 (`2024-01-01T10:00:00.500`), its own
//! interval text (`0 days 1 hours 30 mins 0.000000000 secs`) and `5.0`, which `x::text`,
//! `x || ''` and everything comparing or storing such text would then see.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{
    DataType, DurationMicrosecondType, Float64Type, IntervalMonthDayNanoType, IntervalUnit,
    TimeUnit, TimestampMicrosecondType,
};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use repr::pg_text::{duration_interval, float_text, interval_text, timestamp_text};

use crate::postgres_arrays::rewrite_casts;

/// Rewrites casts of timestamps, intervals and floats to text into [`PostgresText`]. Runs
/// after type coercion, which adds casts of its own.
#[derive(Debug, Default)]
pub struct PostgresTextCasts;

impl AnalyzerRule for PostgresTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_casts(plan, |from, to| {
            let form = match (from.data_type(), to) {
                (DataType::Timestamp(_, zone), DataType::Utf8) => TextForm::Timestamp {
                    with_zone: zone.is_some(),
                },
                (DataType::Interval(_), DataType::Utf8) => TextForm::Interval,
                (DataType::Duration(_), DataType::Utf8) => TextForm::Duration,
                (DataType::Float32, DataType::Utf8) => TextForm::Float { single: true },
                (DataType::Float64, DataType::Utf8) => TextForm::Float { single: false },
                _ => return None,
            };
            Some(ScalarUDF::from(PostgresText {
                form,
                signature: Signature::any(1, Volatility::Immutable),
            }))
        })
    }

    fn name(&self) -> &str {
        "postgres_text_casts"
    }
}

/// What [`PostgresText`] prints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum TextForm {
    /// A timestamp; a `timestamptz` ends in the zone, `+00`.
    Timestamp { with_zone: bool },
    /// An interval.
    Interval,
    /// A duration (the difference of two timestamps), as the interval PostgreSQL makes of it.
    Duration,
    /// A `double precision`, or (`single`) a `real`.
    Float { single: bool },
}

/// `__pg_text_out(x)`: a timestamp, interval or float as PostgreSQL's text.
#[derive(Debug, PartialEq, Eq, Hash)]
struct PostgresText {
    form: TextForm,
    signature: Signature,
}

impl ScalarUDFImpl for PostgresText {
    fn name(&self) -> &str {
        "__pg_text_out"
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
            TextForm::Float { single } => cast(&input, &DataType::Float64)?
                .as_primitive::<Float64Type>()
                .iter()
                .map(|v| v.map(|v| float_text(v, single)))
                .collect(),
        };
        Ok(ColumnarValue::Array(Arc::new(texts)))
    }
}
