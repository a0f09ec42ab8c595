//! Functions about the session and the server: `version()`, `current_schema()`,
//! `current_setting()`, `set_config()`, the visibility checks, …

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ScalarUDF, Volatility};

use super::{
    any_arity, bool_arg, invalid_argument, oid_arg, row_function, text, text_arg, FunctionEnv,
};
use crate::snapshot::CatalogSnapshot;
use crate::SERVER_VERSION;

/// What `version()` returns: PostgreSQL's banner shape, which clients parse for the version.
pub(crate) fn version_banner() -> String {
    format!(
        "PostgreSQL {} (Fluxion {}) on {}-pc-linux-gnu, compiled by rustc, 64-bit",
        SERVER_VERSION,
        env!("CARGO_PKG_VERSION"),
        std::env::consts::ARCH
    )
}

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let stable = Volatility::Stable;
    let session = env.session.clone();
    let mut functions = vec![
        row_function("version", any_arity(&[0], stable), DataType::Utf8, |_| {
            Ok(text(Some(version_banner())))
        }),
        row_function(
            "current_database",
            any_arity(&[0], stable),
            DataType::Utf8,
            |_| Ok(text(Some(sql::session::DATABASE.to_string()))),
        ),
        row_function(
            "current_catalog",
            any_arity(&[0], stable),
            DataType::Utf8,
            |_| Ok(text(Some(sql::session::DATABASE.to_string()))),
        ),
        row_function(
            "pg_backend_pid",
            any_arity(&[0], stable),
            DataType::Int32,
            {
                let session = session.clone();
                move |_| Ok(ScalarValue::Int32(Some(session.backend_pid)))
            },
        ),
        row_function(
            "pg_is_in_recovery",
            any_arity(&[0], stable),
            DataType::Boolean,
            |_| Ok(ScalarValue::Boolean(Some(false))),
        ),
        row_function(
            "inet_server_addr",
            any_arity(&[0], stable),
            DataType::Utf8,
            |_| Ok(text(Some("127.0.0.1".into()))),
        ),
        row_function(
            "inet_client_addr",
            any_arity(&[0], stable),
            DataType::Utf8,
            |_| Ok(text(Some("127.0.0.1".into()))),
        ),
        row_function(
            "inet_server_port",
            any_arity(&[0], stable),
            DataType::Int32,
            {
                let session = session.clone();
                move |_| {
                    Ok(ScalarValue::Int32(
                        session.setting("port").and_then(|p| p.parse().ok()),
                    ))
                }
            },
        ),
        row_function(
            "pg_postmaster_start_time",
            any_arity(&[0], stable),
            DataType::Timestamp(
                datafusion::arrow::datatypes::TimeUnit::Microsecond,
                Some("UTC".into()),
            ),
            |_| {
                Ok(ScalarValue::TimestampMicrosecond(
                    Some(server_start_micros()),
                    Some("UTC".into()),
                ))
            },
        ),
        row_function(
            "current_setting",
            any_arity(&[1, 2], stable),
            DataType::Utf8,
            {
                let session = session.clone();
                move |args| {
                    let Some(name) = text_arg(&args[0]) else {
                        return Ok(text(None));
                    };
                    let missing_ok = args.get(1).and_then(bool_arg).unwrap_or(false);
                    match session.setting(&name) {
                        Some(value) => Ok(text(Some(value))),
                        None if missing_ok => Ok(text(None)),
                        None => Err(invalid_argument(format!(
                            "unrecognized configuration parameter \"{name}\""
                        ))),
                    }
                }
            },
        ),
        row_function(
            "set_config",
            any_arity(&[3], Volatility::Volatile),
            DataType::Utf8,
            {
                let session = session.clone();
                move |args| {
                    let (Some(name), Some(value)) = (text_arg(&args[0]), text_arg(&args[1])) else {
                        return Ok(text(None));
                    };
                    session
                        .changed_settings
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .push((name.to_lowercase(), value.clone()));
                    Ok(text(Some(value)))
                }
            },
        ),
    ];
    for name in ["current_user", "session_user", "user", "current_role"] {
        let session = session.clone();
        functions.push(row_function(
            name,
            any_arity(&[0], stable),
            DataType::Utf8,
            move |_| {
                let user = match name {
                    "session_user" => &session.session_user,
                    _ => &session.user,
                };
                Ok(text(Some(user.clone())))
            },
        ));
    }
    functions.extend(schema_functions(env));
    functions
}

/// When this server process started (for `pg_postmaster_start_time`).
fn server_start_micros() -> i64 {
    static START: std::sync::OnceLock<i64> = std::sync::OnceLock::new();
    *START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64)
    })
}

fn schema_functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let stable = Volatility::Stable;
    let schemas = |env: &FunctionEnv, implicit: bool| -> Vec<String> {
        env.session
            .current_schemas(&env.catalog.catalog(), implicit)
    };
    let text_list = DataType::List(Arc::new(Field::new("item", DataType::Utf8, true)));
    let mut functions = vec![
        row_function("current_schema", any_arity(&[0], stable), DataType::Utf8, {
            let env = env.clone();
            move |_| Ok(text(schemas(&env, false).into_iter().next()))
        }),
        row_function("current_schemas", any_arity(&[1], stable), text_list, {
            let env = env.clone();
            move |args| {
                let implicit = bool_arg(&args[0]).unwrap_or(false);
                let values: Vec<ScalarValue> = schemas(&env, implicit)
                    .into_iter()
                    .map(|s| ScalarValue::Utf8(Some(s)))
                    .collect();
                Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    &values,
                    &DataType::Utf8,
                )))
            }
        }),
        row_function(
            "pg_table_is_visible",
            any_arity(&[1], stable),
            DataType::Boolean,
            {
                let env = env.clone();
                move |args| {
                    Ok(ScalarValue::Boolean(
                        oid_arg(&args[0]).map(|oid| is_relation_visible(&env, oid)),
                    ))
                }
            },
        ),
    ];
    // Types, functions, operators … all live in pg_catalog, which is always searched.
    for name in [
        "pg_type_is_visible",
        "pg_function_is_visible",
        "pg_operator_is_visible",
        "pg_opclass_is_visible",
        "pg_opfamily_is_visible",
        "pg_collation_is_visible",
        "pg_conversion_is_visible",
        "pg_statistics_obj_is_visible",
        "pg_ts_config_is_visible",
        "pg_ts_dict_is_visible",
        "pg_ts_parser_is_visible",
        "pg_ts_template_is_visible",
    ] {
        functions.push(row_function(
            name,
            any_arity(&[1], stable),
            DataType::Boolean,
            |args| Ok(ScalarValue::Boolean(oid_arg(&args[0]).map(|_| true))),
        ));
    }
    functions
}

/// Whether an unqualified name finds relation `oid` (its schema is searched, and no schema
/// searched before has a relation of that name).
fn is_relation_visible(env: &FunctionEnv, oid: u32) -> bool {
    let catalog = env.catalog.catalog();
    let snapshot = CatalogSnapshot::of(&catalog);
    let Some((namespace, name)) = snapshot.class_name(oid) else {
        return false;
    };
    let searched = env.session.current_schemas(&catalog, true);
    snapshot.is_visible(&searched, namespace, name)
}
