//! `__single_value(x)`: the value of the one row a scalar subquery returns.
//!
//! A scalar subquery used as a value must return at most one row; with none its value is NULL,
//! with more it is an error (SQLSTATE 21000). Reads wrap a non-aggregating scalar subquery's
//! value in this aggregate, so that DataFusion can decorrelate it (it only decorrelates
//! aggregating subqueries) while Postgres's cardinality rule still holds.
//!
//! A view cannot fail where the aggregate is (its group would just vanish, and an outer join
//! above would show NULL): it counts the rows instead and checks the count where the value is
//! used, with `__single_value_check(rows, value)` (see `lower::single_values`).

use datafusion::arrow::array::ArrayRef;
use datafusion::arrow::datatypes::{DataType, Field, FieldRef};
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, ColumnarValue, ScalarFunctionArgs, ScalarUDF,
    ScalarUDFImpl, Signature, Volatility,
};

/// The name of the aggregate.
pub const SINGLE_VALUE: &str = "__single_value";

/// The `__single_value` aggregate.
pub fn single_value_udaf() -> AggregateUDF {
    AggregateUDF::from(SingleValue {
        signature: Signature::any(1, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SingleValue {
    signature: Signature,
}

impl AggregateUDFImpl for SingleValue {
    fn name(&self) -> &str {
        SINGLE_VALUE
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[0].clone())
    }

    fn return_field(&self, args: &[FieldRef]) -> Result<FieldRef> {
        Ok(std::sync::Arc::new(
            args[0]
                .as_ref()
                .clone()
                .with_name(SINGLE_VALUE)
                .with_nullable(true),
        ))
    }

    fn accumulator(&self, args: AccumulatorArgs) -> Result<Box<dyn Accumulator>> {
        Ok(Box::new(SingleValueAccumulator {
            value: ScalarValue::try_from(args.return_field.data_type())?,
            rows: 0,
        }))
    }

    fn state_fields(&self, args: StateFieldsArgs) -> Result<Vec<FieldRef>> {
        Ok(vec![
            std::sync::Arc::new(Field::new("value", args.return_type().clone(), true)),
            std::sync::Arc::new(Field::new("rows", DataType::UInt64, false)),
        ])
    }
}

#[derive(Debug)]
struct SingleValueAccumulator {
    value: ScalarValue,
    rows: u64,
}

/// `__single_value_check(rows, value)`: `value`, or the error of a scalar subquery that
/// returned more than one row if `rows` (the subquery's row count) is above one.
pub fn single_value_check_udf() -> ScalarUDF {
    ScalarUDF::from(SingleValueCheck {
        signature: Signature::any(2, Volatility::Immutable),
    })
}

#[derive(Debug, PartialEq, Eq, Hash)]
struct SingleValueCheck {
    signature: Signature,
}

impl ScalarUDFImpl for SingleValueCheck {
    fn name(&self) -> &str {
        "__single_value_check"
    }

    fn signature(&self) -> &Signature {
        &self.signature
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        Ok(args[1].clone())
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        let rows = args.args[0].to_array(args.number_rows)?;
        let rows = datafusion::arrow::compute::cast(&rows, &DataType::Int64)?;
        let rows = rows
            .as_any()
            .downcast_ref::<datafusion::arrow::array::Int64Array>()
            .ok_or_else(|| DataFusionError::Internal("row counts of another type".into()))?;
        if rows.iter().any(|n| n.is_some_and(|n| n > 1)) {
            return Err(too_many_rows());
        }
        Ok(args.args[1].clone())
    }
}

fn too_many_rows() -> DataFusionError {
    DataFusionError::Execution(
        "more than one row returned by a subquery used as an expression".into(),
    )
}

impl SingleValueAccumulator {
    fn add(&mut self, value: ScalarValue, rows: u64) -> Result<()> {
        if rows == 0 {
            return Ok(());
        }
        if self.rows + rows > 1 {
            return Err(too_many_rows());
        }
        self.rows += rows;
        self.value = value;
        Ok(())
    }
}

impl Accumulator for SingleValueAccumulator {
    fn update_batch(&mut self, values: &[ArrayRef]) -> Result<()> {
        let values = &values[0];
        for row in 0..values.len() {
            self.add(ScalarValue::try_from_array(values, row)?, 1)?;
        }
        Ok(())
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> Result<()> {
        let counts = states[1]
            .as_any()
            .downcast_ref::<datafusion::arrow::array::UInt64Array>()
            .ok_or_else(|| {
                DataFusionError::Internal("single value state of another type".into())
            })?;
        for row in 0..counts.len() {
            self.add(
                ScalarValue::try_from_array(&states[0], row)?,
                counts.value(row),
            )?;
        }
        Ok(())
    }

    fn state(&mut self) -> Result<Vec<ScalarValue>> {
        Ok(vec![
            self.value.clone(),
            ScalarValue::UInt64(Some(self.rows)),
        ])
    }

    fn evaluate(&mut self) -> Result<ScalarValue> {
        Ok(self.value.clone())
    }

    fn size(&self) -> usize {
        std::mem::size_of_val(self) + self.value.size()
    }
}
