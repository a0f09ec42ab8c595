//! Lookups of PostgreSQL's built-in functions (the rows of `pg_proc`), for `regproc` values
//! and `pg_get_function_result` / `pg_get_function_arguments`.

use crate::builtin_rows::builtin_rows;
use crate::column_types::known_relation;
use crate::rows::Value;

/// The position of a `pg_proc` column.
fn column(name: &str) -> usize {
    known_relation("pg_catalog", "pg_proc")
        .columns
        .iter()
        .position(|c| c.name == name)
        .expect("invariant: pg_proc has the column")
}

fn int(value: &Value) -> Option<u32> {
    match value {
        Value::Int(i) => u32::try_from(*i).ok(),
        _ => None,
    }
}

/// The oid of the built-in function called `name` (the first, for overloaded names).
pub(crate) fn builtin_function_named(name: &str) -> Option<u32> {
    let (oid, proname) = (column("oid"), column("proname"));
    builtin_rows("pg_proc")
        .iter()
        .find(|row| row[proname] == Value::Text(name.to_string()))
        .and_then(|row| int(&row[oid]))
}

/// The name of the built-in function with this oid.
pub(crate) fn builtin_function_name(oid: u32) -> Option<String> {
    let (oid_column, proname) = (column("oid"), column("proname"));
    builtin_rows("pg_proc")
        .iter()
        .find(|row| int(&row[oid_column]) == Some(oid))
        .and_then(|row| match &row[proname] {
            Value::Text(name) => Some(name.clone()),
            _ => None,
        })
}

/// The result type and argument types of the built-in function with this oid.
pub(crate) fn builtin_function_types(oid: u32) -> Option<(u32, Vec<u32>)> {
    let (oid_column, result, arguments) =
        (column("oid"), column("prorettype"), column("proargtypes"));
    let row = builtin_rows("pg_proc")
        .iter()
        .find(|row| int(&row[oid_column]) == Some(oid))?;
    let arguments = match &row[arguments] {
        Value::List(values) => values.iter().filter_map(int).collect(),
        _ => Vec::new(),
    };
    Some((int(&row[result])?, arguments))
}
