//! `pg_cancel_backend` and `pg_terminate_backend`: cancel another session's statement, or end
//! its connection. As in PostgreSQL, each returns whether a backend with that pid was found.

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ScalarUDF, Volatility};

use super::{any_arity, int_arg, row_function, FunctionEnv};
use crate::backends::Backends;

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let backends = env.session.backends.clone();
    vec![
        signal("pg_cancel_backend", &[1], backends.clone(), |b, pid| {
            b.cancel(pid)
        }),
        // The optional second argument is how long to wait for the backend to end; the
        // connection is told to end at once, which is what the wait would be for.
        signal("pg_terminate_backend", &[1, 2], backends, |b, pid| {
            b.terminate(pid)
        }),
    ]
}

/// A function that sends `send` to the backend its first argument names.
fn signal(
    name: &str,
    arities: &[usize],
    backends: Option<Arc<dyn Backends>>,
    send: impl Fn(&dyn Backends, i32) -> bool + Send + Sync + 'static,
) -> ScalarUDF {
    row_function(
        name,
        any_arity(arities, Volatility::Volatile),
        DataType::Boolean,
        move |args| {
            let Some(pid) = int_arg(&args[0]) else {
                return Ok(ScalarValue::Boolean(None));
            };
            let found = match (&backends, i32::try_from(pid)) {
                (Some(backends), Ok(pid)) => send(backends.as_ref(), pid),
                _ => false,
            };
            Ok(ScalarValue::Boolean(Some(found)))
        },
    )
}
