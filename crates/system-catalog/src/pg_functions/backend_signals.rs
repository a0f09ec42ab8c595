//! `pg_cancel_backend` and `pg_terminate_backend`: cancel another session's statement, or end
//! its connection. As in PostgreSQL, each returns whether a backend with that pid was found,
//! and a role may signal only its own backends (superusers: any; only superusers signal a
//! superuser's).

use std::sync::Arc;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ScalarUDF, Volatility};

use datafusion::error::Result;
use sql::SqlError;

use super::{any_arity, int_arg, row_function, sql_error, FunctionEnv};
use crate::backends::Backends;

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    vec![
        signal(
            "pg_cancel_backend",
            &[1],
            Signal {
                env: env.clone(),
                superuser_only: "must be a superuser to cancel superuser query",
                other_role: "must be a member of the role whose query is being canceled or \
                             member of pg_signal_backend",
            },
            |b, pid| b.cancel(pid),
        ),
        // The optional second argument is how long to wait for the backend to end; the
        // connection is told to end at once, which is what the wait would be for.
        signal(
            "pg_terminate_backend",
            &[1, 2],
            Signal {
                env: env.clone(),
                superuser_only: "must be a superuser to terminate superuser process",
                other_role: "must be a member of the role whose process is being terminated \
                             or member of pg_signal_backend",
            },
            |b, pid| b.terminate(pid),
        ),
    ]
}

/// Who may send a signal, and PostgreSQL 15's refusals.
struct Signal {
    env: FunctionEnv,
    superuser_only: &'static str,
    other_role: &'static str,
}

impl Signal {
    /// Whether the session may signal the backend of role `target` (42501 if not).
    fn check(&self, target: &str) -> Result<()> {
        let snapshot = self.env.snapshot();
        let caller = self.env.session.rights(&snapshot);
        if caller.superuser {
            return Ok(());
        }
        let target_is_superuser = snapshot
            .rights_of_role_named(target)
            .is_some_and(|rights| rights.superuser);
        let refusal = if target_is_superuser {
            self.superuser_only
        } else if target != self.env.session.user {
            self.other_role
        } else {
            return Ok(());
        };
        Err(sql_error(SqlError::InsufficientPrivilege(refusal.into())))
    }
}

/// A function that sends `send` to the backend its first argument names.
fn signal(
    name: &str,
    arities: &[usize],
    who: Signal,
    send: impl Fn(&dyn Backends, i32) -> bool + Send + Sync + 'static,
) -> ScalarUDF {
    let backends: Option<Arc<dyn Backends>> = who.env.session.backends.clone();
    row_function(
        name,
        any_arity(arities, Volatility::Volatile),
        DataType::Boolean,
        move |args| {
            let Some(pid) = int_arg(&args[0]) else {
                return Ok(ScalarValue::Boolean(None));
            };
            let (Some(backends), Ok(pid)) = (&backends, i32::try_from(pid)) else {
                return Ok(ScalarValue::Boolean(Some(false)));
            };
            let target = backends
                .activity()
                .into_iter()
                .find(|backend| backend.pid == pid);
            let Some(target) = target else {
                return Ok(ScalarValue::Boolean(Some(false)));
            };
            who.check(&target.user)?;
            let found = send(backends.as_ref(), pid);
            Ok(ScalarValue::Boolean(Some(found)))
        },
    )
}
