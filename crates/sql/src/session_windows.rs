//! Session windows as window functions: what `SESSION(relation, time, gap, key…)` plans to.
//!
//! A session is a maximal run of a key's rows, in time order, in which each row comes less
//! than `gap` after the one before; it spans `[its first time, its last time + gap)`. The
//! `SESSION` table function (see [`crate::rewrite::windows`]) becomes two window functions
//! over the relation, partitioned by the key and ordered by time: [`SESSION_START`] and
//! [`SESSION_END`] give each row its session's bounds (NULL for a NULL time). DataFusion runs
//! them for a one-off query; lowering turns them into the incremental session operator.

use std::sync::Arc;

use datafusion::arrow::array::{Array, ArrayRef, AsArray, TimestampMicrosecondArray};
use datafusion::arrow::compute::cast;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, TimeUnit, TimestampMicrosecondType};
use datafusion::common::{exec_err, plan_err, Result, ScalarValue};
use datafusion::logical_expr::function::{PartitionEvaluatorArgs, WindowUDFFieldArgs};
use datafusion::logical_expr::{
    PartitionEvaluator, Signature, Volatility, WindowUDF, WindowUDFImpl,
};

/// The window function giving each row the start of its session.
pub const SESSION_START: &str = "__fluxion_session_start";
/// The window function giving each row the end of its session.
pub const SESSION_END: &str = "__fluxion_session_end";

/// Which bound of its session a function gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Bound {
    Start,
    End,
}

/// `SESSION_START(time, gap)` or `SESSION_END(time, gap)`.
#[derive(Debug, PartialEq, Eq, Hash)]
struct SessionBound {
    bound: Bound,
    signature: Signature,
}

/// The two session window functions, to register with a session state.
pub fn session_window_functions() -> [WindowUDF; 2] {
    [Bound::Start, Bound::End].map(|bound| {
        WindowUDF::new_from_impl(SessionBound {
            bound,
            signature: Signature::any(2, Volatility::Immutable),
        })
    })
}

impl WindowUDFImpl for SessionBound {
    fn name(&self) -> &str {
        match self.bound {
            Bound::Start => SESSION_START,
            Bound::End => SESSION_END,
        }
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn partition_evaluator(
        &self,
        _args: PartitionEvaluatorArgs,
    ) -> Result<Box<dyn PartitionEvaluator>> {
        Ok(Box::new(SessionEvaluator { bound: self.bound }))
    }

    fn field(&self, field_args: WindowUDFFieldArgs) -> Result<FieldRef> {
        match field_args.input_fields().first().map(|f| f.data_type()) {
            Some(DataType::Timestamp(_, tz)) => Ok(Arc::new(Field::new(
                field_args.name(),
                DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
                true,
            ))),
            _ => plan_err!("SESSION needs a timestamp column"),
        }
    }
}

#[derive(Debug)]
struct SessionEvaluator {
    bound: Bound,
}

impl PartitionEvaluator for SessionEvaluator {
    /// `values` are the partition's times, in order, and the gap.
    fn evaluate_all(&mut self, values: &[ArrayRef], num_rows: usize) -> Result<ArrayRef> {
        let [times, gap] = values else {
            return exec_err!("SESSION bounds take a time and a gap");
        };
        let DataType::Timestamp(_, tz) = times.data_type() else {
            return exec_err!("SESSION needs a timestamp column");
        };
        let gap = match gap.len() {
            0 => 0,
            _ => gap_micros(&ScalarValue::try_from_array(gap, 0)?)?,
        };
        let micros = cast(
            times,
            &DataType::Timestamp(TimeUnit::Microsecond, tz.clone()),
        )?;
        let times = micros.as_primitive::<TimestampMicrosecondType>();
        let times: Vec<Option<i64>> = (0..num_rows)
            .map(|i| times.is_valid(i).then(|| times.value(i)))
            .collect();
        let bounds = plan::session_bounds(&times, gap);
        let values = bounds.into_iter().map(|b| {
            b.map(|(start, end)| match self.bound {
                Bound::Start => start,
                Bound::End => end,
            })
        });
        Ok(Arc::new(
            TimestampMicrosecondArray::from_iter(values).with_timezone_opt(tz.clone()),
        ))
    }
}

/// A session gap (a positive interval of days or less) in microseconds.
pub fn gap_micros(gap: &ScalarValue) -> Result<i64> {
    let is_interval = matches!(
        gap,
        ScalarValue::IntervalMonthDayNano(_) | ScalarValue::IntervalDayTime(_)
    );
    match plan::window_close::scalar_micros(gap) {
        Some(micros) if is_interval && micros > 0 => Ok(micros),
        _ => plan_err!("a SESSION gap must be a positive interval of days or less, not {gap}"),
    }
}
