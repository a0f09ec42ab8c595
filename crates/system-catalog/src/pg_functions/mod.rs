//! PostgreSQL's catalog, session and compatibility functions as DataFusion functions.
//!
//! Clients call these while browsing a schema (`format_type`, `pg_get_indexdef`,
//! `pg_table_is_visible`, `current_schemas`, `has_table_privilege` …). Each is registered per
//! query ([`register_functions`]) with the catalog and the querying session ([`FunctionEnv`]),
//! so session-dependent functions (`current_setting`, `current_schema`) see that session.
//!
//! Most take and return plain values and are evaluated row by row ([`row_function`]); catalog
//! data is small, and clarity beats vectorization here.

mod arrays;
mod backend_signals;
mod catalog_info;
mod keywords;
mod options_to_table;
mod privilege_functions;
mod reg_types;
mod session_functions;
mod text_functions;

use std::sync::Arc;

use datafusion::arrow::array::new_empty_array;
use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::context::SessionState;
use datafusion::execution::FunctionRegistry;
use datafusion::logical_expr::{
    ColumnarValue, ScalarFunctionImplementation, ScalarUDF, Signature, SimpleScalarUDF,
    TypeSignature, Volatility,
};
use sql::SqlError;

use crate::catalog_input::CatalogReader;
use crate::session::SessionInfo;
use crate::snapshot::CatalogSnapshot;

pub use reg_types::display_reg_types;

/// What the functions of one query see: the catalog and the querying session.
#[derive(Debug, Clone)]
struct FunctionEnv {
    catalog: Arc<dyn CatalogReader>,
    session: Arc<SessionInfo>,
}

impl FunctionEnv {
    /// A snapshot of the catalog as the catalog relations describe it.
    fn snapshot(&self) -> CatalogSnapshot {
        CatalogSnapshot::of(&self.catalog.catalog())
    }
}

/// Registers every function of this module in `state`, for one query of `session` over the
/// catalog `catalog` gives.
pub fn register_functions(
    state: &mut SessionState,
    catalog: Arc<dyn CatalogReader>,
    session: Arc<SessionInfo>,
) {
    let env = FunctionEnv { catalog, session };
    let mut functions = Vec::new();
    functions.extend(catalog_info::functions(&env));
    functions.extend(session_functions::functions(&env));
    functions.extend(privilege_functions::functions(&env));
    functions.extend(backend_signals::functions(&env));
    functions.extend(reg_types::functions(&env));
    functions.extend(arrays::functions());
    functions.extend(text_functions::functions());
    for function in functions {
        // Registering replaces DataFusion's function of the same name (`version`).
        let _ = state.register_udf(Arc::new(function));
    }
    state.register_udtf("pg_get_keywords", Arc::new(keywords::KeywordsFunction));
    state.register_udtf(
        "pg_options_to_table",
        Arc::new(options_to_table::OptionsToTableFunction),
    );
}

/// A signature accepting any argument types, with any of the given numbers of arguments.
pub(crate) fn any_arity(counts: &[usize], volatility: Volatility) -> Signature {
    let signatures = counts
        .iter()
        .map(|n| {
            if *n == 0 {
                TypeSignature::Nullary
            } else {
                TypeSignature::Any(*n)
            }
        })
        .collect();
    Signature::one_of(signatures, volatility)
}

/// A function evaluated row by row: `eval` maps one row's argument values to the result.
pub(crate) fn row_function(
    name: &str,
    signature: Signature,
    return_type: DataType,
    eval: impl Fn(&[ScalarValue]) -> Result<ScalarValue> + Send + Sync + 'static,
) -> ScalarUDF {
    let output_type = return_type.clone();
    let fun: ScalarFunctionImplementation = Arc::new(move |args: &[ColumnarValue]| {
        let rows = args.iter().find_map(|arg| match arg {
            ColumnarValue::Array(array) => Some(array.len()),
            ColumnarValue::Scalar(_) => None,
        });
        let Some(rows) = rows else {
            let values: Vec<ScalarValue> = args
                .iter()
                .map(|arg| match arg {
                    ColumnarValue::Scalar(value) => Ok(value.clone()),
                    ColumnarValue::Array(array) => ScalarValue::try_from_array(array, 0),
                })
                .collect::<Result<_>>()?;
            return Ok(ColumnarValue::Scalar(conform(
                eval(&values)?,
                &output_type,
            )?));
        };
        if rows == 0 {
            return Ok(ColumnarValue::Array(new_empty_array(&output_type)));
        }
        let arrays = args
            .iter()
            .map(|arg| arg.to_array(rows))
            .collect::<Result<Vec<_>>>()?;
        let mut results = Vec::with_capacity(rows);
        for row in 0..rows {
            let values = arrays
                .iter()
                .map(|array| ScalarValue::try_from_array(array, row))
                .collect::<Result<Vec<_>>>()?;
            results.push(conform(eval(&values)?, &output_type)?);
        }
        Ok(ColumnarValue::Array(ScalarValue::iter_to_array(results)?))
    });
    ScalarUDF::from(SimpleScalarUDF::new_with_signature(
        name,
        signature,
        return_type,
        fun,
    ))
}

/// `value` as a value of `data_type` (a typeless NULL becomes a typed one).
fn conform(value: ScalarValue, data_type: &DataType) -> Result<ScalarValue> {
    if value.data_type() == *data_type {
        Ok(value)
    } else if value.is_null() {
        ScalarValue::try_from(data_type)
    } else {
        value.cast_to(data_type)
    }
}

/// An argument as an oid (from an integer, or from text holding one).
pub(crate) fn oid_arg(value: &ScalarValue) -> Option<u32> {
    int_arg(value).and_then(|i| u32::try_from(i).ok())
}

/// An argument as an integer (from an integer, or from text holding one).
pub(crate) fn int_arg(value: &ScalarValue) -> Option<i64> {
    match value {
        ScalarValue::Int8(v) => v.map(i64::from),
        ScalarValue::Int16(v) => v.map(i64::from),
        ScalarValue::Int32(v) => v.map(i64::from),
        ScalarValue::Int64(v) => *v,
        ScalarValue::UInt8(v) => v.map(i64::from),
        ScalarValue::UInt16(v) => v.map(i64::from),
        ScalarValue::UInt32(v) => v.map(i64::from),
        ScalarValue::UInt64(v) => v.and_then(|v| i64::try_from(v).ok()),
        ScalarValue::Decimal128(Some(v), _, scale) => {
            i64::try_from(*v / 10i128.pow(*scale as u32)).ok()
        }
        other => text_arg(other).and_then(|t| t.trim().parse().ok()),
    }
}

/// An argument as text.
pub(crate) fn text_arg(value: &ScalarValue) -> Option<String> {
    match value {
        ScalarValue::Utf8(v) | ScalarValue::LargeUtf8(v) | ScalarValue::Utf8View(v) => v.clone(),
        ScalarValue::Null => None,
        other if other.is_null() => None,
        other => Some(other.to_string()),
    }
}

/// An argument as a boolean.
pub(crate) fn bool_arg(value: &ScalarValue) -> Option<bool> {
    match value {
        ScalarValue::Boolean(v) => *v,
        other => text_arg(other).map(|t| matches!(t.as_str(), "t" | "true" | "on" | "1")),
    }
}

/// A text result.
pub(crate) fn text(value: Option<String>) -> ScalarValue {
    ScalarValue::Utf8(value)
}

/// An error a client sees for a bad argument.
pub(crate) fn invalid_argument(message: impl Into<String>) -> DataFusionError {
    DataFusionError::Execution(message.into())
}

/// An error in SQL's own terms, which the client sees with that kind's SQLSTATE.
pub(crate) fn sql_error(error: SqlError) -> DataFusionError {
    DataFusionError::External(Box::new(error))
}
