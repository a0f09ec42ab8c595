//! Timestamps cast to text read as PostgreSQL prints them: `2024-01-01 10:00:00.5`, with
//! `+00` for a `timestamptz` (sessions run in UTC). DataFusion's cast writes ISO 8601
//! (`2024-01-01T10:00:00.500`), which `ts::text`, `ts || ''` and everything comparing or
//! storing such text would then see.

use std::sync::Arc;

use datafusion::arrow::array::{Array, AsArray, StringArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
use datafusion::common::config::ConfigOptions;
use datafusion::error::Result;
use datafusion::logical_expr::{
    ColumnarValue, LogicalPlan, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature, Volatility,
};
use datafusion::optimizer::AnalyzerRule;
use repr::pg_text::timestamp_text;

use crate::postgres_arrays::rewrite_casts;

/// Rewrites casts of timestamps to text into [`TimestampText`]. Runs after type coercion,
/// which adds casts of its own.
#[derive(Debug, Default)]
pub struct TimestampTextCasts;

impl AnalyzerRule for TimestampTextCasts {
    fn analyze(&self, plan: LogicalPlan, _config: &ConfigOptions) -> Result<LogicalPlan> {
        rewrite_casts(plan, |from, to| match (from.data_type(), to) {
            (DataType::Timestamp(_, zone), DataType::Utf8) => {
                Some(ScalarUDF::from(TimestampText {
                    with_zone: zone.is_some(),
                    signature: Signature::any(1, Volatility::Immutable),
                }))
            }
            _ => None,
        })
    }

    fn name(&self) -> &str {
        "timestamp_text_casts"
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
