//! PostgreSQL's bound on the size of one value (1 GB), for the functions whose result can be
//! far larger than their input: `repeat`, `lpad` and `rpad`. `repeat('x', 2000000000)` would
//! otherwise allocate two gigabytes at once and could take the server down; PostgreSQL
//! refuses it with 54000 (`requested length too large`), and so does Fluxion, before
//! anything is allocated. Each function is DataFusion's own, with the bound checked first.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray};
use datafusion::arrow::compute::kernels::length::length;
use datafusion::arrow::compute::{cast, max};
use datafusion::arrow::datatypes::FieldRef;
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::common::{DataFusionError, Result};
use datafusion::logical_expr::{
    ColumnarValue, ReturnFieldArgs, ScalarFunctionArgs, ScalarUDF, ScalarUDFImpl, Signature,
};

use crate::SqlError;

/// The largest value PostgreSQL makes, in bytes (`MaxAllocSize`).
const MAX_VALUE_BYTES: i64 = (1 << 30) - 1;

/// The most bytes one character takes in UTF-8: a padded string of `n` characters may take
/// `n` times this (PostgreSQL bounds padding the same way).
const MAX_CHARACTER_BYTES: i64 = 4;

/// `repeat`, `lpad` and `rpad`, each refusing a result past [`MAX_VALUE_BYTES`].
pub(crate) fn bounded_text_functions() -> Vec<ScalarUDF> {
    vec![
        bounded(datafusion::functions::string::repeat(), Growth::Repeat),
        bounded(datafusion::functions::unicode::lpad(), Growth::Pad),
        bounded(datafusion::functions::unicode::rpad(), Growth::Pad),
    ]
}

fn bounded(inner: Arc<ScalarUDF>, growth: Growth) -> ScalarUDF {
    ScalarUDF::new_from_impl(BoundedTextFunction { inner, growth })
}

/// How a function's result grows with its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Growth {
    /// The first argument's bytes times the second (`repeat(text, count)`).
    Repeat,
    /// The second argument's characters (`lpad(text, length [, fill])`).
    Pad,
}

/// A DataFusion text function whose result size is checked before it runs.
#[derive(Debug, PartialEq, Eq, Hash)]
struct BoundedTextFunction {
    inner: Arc<ScalarUDF>,
    growth: Growth,
}

impl ScalarUDFImpl for BoundedTextFunction {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn aliases(&self) -> &[String] {
        self.inner.aliases()
    }

    fn signature(&self) -> &Signature {
        self.inner.signature()
    }

    fn return_type(&self, args: &[DataType]) -> Result<DataType> {
        self.inner.return_type(args)
    }

    fn return_field_from_args(&self, args: ReturnFieldArgs) -> Result<FieldRef> {
        self.inner.return_field_from_args(args)
    }

    fn coerce_types(&self, args: &[DataType]) -> Result<Vec<DataType>> {
        self.inner.coerce_types(args)
    }

    fn invoke_with_args(&self, args: ScalarFunctionArgs) -> Result<ColumnarValue> {
        if self.largest_result(&args.args)? > MAX_VALUE_BYTES {
            return Err(DataFusionError::External(Box::new(
                SqlError::ProgramLimitExceeded("requested length too large".into()),
            )));
        }
        self.inner.invoke_with_args(args)
    }
}

impl BoundedTextFunction {
    /// The most bytes one row's result could take.
    fn largest_result(&self, args: &[ColumnarValue]) -> Result<i64> {
        let (Some(text), Some(count)) = (args.first(), args.get(1)) else {
            return Ok(0);
        };
        let counts = as_array(count)?;
        let counts = cast(&counts, &DataType::Int64)?;
        let counts = counts.as_primitive::<Int64Type>();
        Ok(match self.growth {
            Growth::Pad => max(counts).unwrap_or(0).saturating_mul(MAX_CHARACTER_BYTES),
            Growth::Repeat => {
                let lengths = cast(&length(&as_array(text)?)?, &DataType::Int64)?;
                let lengths = lengths.as_primitive::<Int64Type>();
                match (lengths.len(), counts.len()) {
                    // One side constant: the largest of the other times it.
                    (1, _) | (_, 1) => max(lengths)
                        .unwrap_or(0)
                        .saturating_mul(max(counts).unwrap_or(0)),
                    _ => lengths
                        .iter()
                        .zip(counts.iter())
                        .map(|(length, count)| match (length, count) {
                            (Some(length), Some(count)) => length.saturating_mul(count),
                            _ => 0,
                        })
                        .max()
                        .unwrap_or(0),
                }
            }
        })
    }
}

/// An argument's values as an array (one row for a constant).
fn as_array(value: &ColumnarValue) -> Result<ArrayRef> {
    match value {
        ColumnarValue::Array(array) => Ok(Arc::clone(array)),
        ColumnarValue::Scalar(scalar) => scalar.to_array_of_size(1),
    }
}

#[cfg(test)]
mod tests {
    use datafusion::arrow::util::display::array_value_to_string;
    use datafusion::prelude::SessionContext;

    /// The first column of every row `sql` returns, as text; or its error's message.
    async fn run(sql: &str) -> std::result::Result<Vec<String>, String> {
        let context = SessionContext::new_with_state(crate::session::empty_state());
        let batches = async { context.sql(sql).await?.collect().await }
            .await
            .map_err(|e| crate::SqlError::from(e).to_string())?;
        let mut values = Vec::new();
        for batch in &batches {
            for row in 0..batch.num_rows() {
                values
                    .push(array_value_to_string(batch.column(0), row).map_err(|e| e.to_string())?);
            }
        }
        Ok(values)
    }

    #[tokio::test]
    async fn results_past_a_gigabyte_are_refused_before_they_are_made() {
        for sql in [
            "SELECT repeat('x', 2000000000)",
            "SELECT repeat('abc', 400000000)",
            "SELECT lpad('x', 300000000)",
            "SELECT rpad('x', 300000000, 'y')",
            "SELECT repeat(s, 1000000000) FROM (VALUES ('a'), ('bb')) AS t(s)",
        ] {
            assert_eq!(
                run(sql).await,
                Err("requested length too large".to_string()),
                "{sql}"
            );
        }
    }

    #[tokio::test]
    async fn results_within_the_bound_are_datafusions_own() {
        let cases = [
            ("SELECT length(repeat('ab', 1000))", vec!["2000"]),
            ("SELECT lpad('x', 4, '-')", vec!["---x"]),
            ("SELECT rpad('x', 3)", vec!["x  "]),
            (
                "SELECT repeat(s, n) FROM (VALUES ('a', 3), ('bb', -1), ('c', 0)) AS t(s, n)",
                vec!["aaa", "", ""],
            ),
        ];
        for (sql, expected) in cases {
            assert_eq!(
                run(sql).await,
                Ok(expected.iter().map(|v| v.to_string()).collect()),
                "{sql}"
            );
        }
    }
}
