//! The `WITH (…)` options of `CREATE MATERIALIZED VIEW`:
//!
//! ```sql
//! CREATE MATERIALIZED VIEW v WITH (memory_budget = '256MB') AS SELECT …;
//! ```
//!
//! `memory_budget` bounds the memory the view's dataflow may hold; a view that needs more is
//! stopped (see the coordinator's `view_memory`). Sizes are written as PostgreSQL writes
//! memory settings, with a unit (`B`, `kB`, `MB`, `GB`, `TB`, powers of 1024).

use datafusion::sql::sqlparser::ast::{self, CreateTableOptions, Expr, SqlOption};

use crate::names::fold_ident;
use crate::SqlError;

/// The option naming a view's memory budget.
pub const MEMORY_BUDGET_OPTION: &str = "memory_budget";

/// What a materialized view's `WITH (…)` options set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewOptions {
    /// The most bytes the view's dataflow may hold (`None`: the server's default).
    pub memory_budget: Option<usize>,
}

impl ViewOptions {
    /// The options of `options`, as written after a materialized view's name.
    pub(crate) fn from_sql(options: &CreateTableOptions) -> Result<ViewOptions, SqlError> {
        let listed = match options {
            CreateTableOptions::None => return Ok(ViewOptions::default()),
            CreateTableOptions::With(listed) => listed,
            _ => {
                return Err(SqlError::Syntax(
                    "a materialized view takes its options as WITH (name = value, …)".into(),
                ))
            }
        };
        let mut parsed = ViewOptions::default();
        for option in listed {
            let SqlOption::KeyValue { key, value } = option else {
                return Err(SqlError::Syntax(format!(
                    "a materialized view option is written name = value, not {option}"
                )));
            };
            let name = fold_ident(key);
            if name != MEMORY_BUDGET_OPTION {
                return Err(SqlError::InvalidParameterValue(format!(
                    "unrecognized parameter \"{name}\""
                )));
            }
            if parsed.memory_budget.is_some() {
                return Err(SqlError::InvalidParameterValue(format!(
                    "parameter \"{name}\" specified more than once"
                )));
            }
            parsed.memory_budget = Some(memory_size(&name, value)?);
        }
        Ok(parsed)
    }
}

/// The bytes a memory size such as `'256MB'` stands for.
fn memory_size(option: &str, value: &Expr) -> Result<usize, SqlError> {
    let text = match value {
        Expr::Value(value) => match &value.value {
            ast::Value::SingleQuotedString(text) => text.clone(),
            ast::Value::Number(number, _) => number.clone(),
            other => other.to_string(),
        },
        other => other.to_string(),
    };
    parse_memory_size(&text).ok_or_else(|| {
        SqlError::InvalidParameterValue(format!(
            "invalid value for parameter \"{option}\": \"{text}\"; it is a size with a unit \
             (B, kB, MB, GB or TB), such as '256MB', of at least 1 MB"
        ))
    })
}

/// Parses `<whole number><unit>` (spaces allowed between them) into bytes; `None` for text
/// without a unit, with an unknown unit, under 1 MB or beyond `usize`.
pub fn parse_memory_size(text: &str) -> Option<usize> {
    let text = text.trim();
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(digits);
    let number: usize = number.parse().ok()?;
    let shift = match unit.trim() {
        "B" => 0,
        "kB" => 10,
        "MB" => 20,
        "GB" => 30,
        "TB" => 40,
        _ => return None,
    };
    let bytes = number.checked_mul(1usize.checked_shl(shift)?)?;
    (bytes >= 1 << 20).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_need_a_unit_and_a_megabyte() {
        assert_eq!(parse_memory_size("256MB"), Some(256 << 20));
        assert_eq!(parse_memory_size(" 2 GB "), Some(2 << 30));
        assert_eq!(parse_memory_size("1024kB"), Some(1 << 20));
        assert_eq!(parse_memory_size("1048576B"), Some(1 << 20));
        assert_eq!(parse_memory_size("100"), None, "no unit");
        assert_eq!(parse_memory_size("1mb"), None, "units are PostgreSQL's");
        assert_eq!(parse_memory_size("512kB"), None, "under a megabyte");
        assert_eq!(parse_memory_size("-1MB"), None);
        assert_eq!(parse_memory_size("99999999999999999999TB"), None);
        assert_eq!(parse_memory_size("MB"), None);
    }
}
