//! Postgres's names for unnamed result columns: `count(*)` is `count`, `x::text` is `x`,
//! anything else `?column?`. DataFusion would name them after the whole expression.

use std::collections::HashSet;

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr};

/// Separates a result column's name from the suffix that keeps a repeated name unique while
/// DataFusion plans (Postgres allows `SELECT a, a`; DataFusion requires distinct names).
const REPEAT_MARKER: char = '\u{1f}';

/// The name a client sees for a planned result column.
pub(crate) fn display_name(planned: &str) -> &str {
    planned.split(REPEAT_MARKER).next().unwrap_or(planned)
}

/// `schema` with the names clients see.
pub(crate) fn display_schema(schema: &SchemaRef) -> SchemaRef {
    if !schema
        .fields()
        .iter()
        .any(|f| f.name().contains(REPEAT_MARKER))
    {
        return schema.clone();
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| f.as_ref().clone().with_name(display_name(f.name())))
        .collect();
    Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()))
}

/// Names the query's top-level SELECT list as Postgres does: an unnamed expression gets its
/// Postgres name (`count(*)` is `count`), and a name that repeats gets a hidden suffix (see
/// [`display_name`]).
pub(crate) fn name_result_columns(query: &mut Query) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let mut used: HashSet<String> = HashSet::new();
    for (position, item) in select.projection.iter_mut().enumerate() {
        let (expr, name, is_column) = match item {
            SelectItem::UnnamedExpr(expr) => {
                let is_column = matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_));
                let name = postgres_name(expr);
                (expr.clone(), name, is_column)
            }
            SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), fold_ident(alias), true),
            _ => continue,
        };
        let alias = if used.insert(name.to_lowercase()) {
            if is_column {
                continue;
            }
            name
        } else {
            format!("{name}{REPEAT_MARKER}{position}")
        };
        *item = SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', alias),
        };
    }
}

fn postgres_name(expr: &Expr) -> String {
    match expr {
        Expr::Identifier(ident) => ident.value.to_lowercase(),
        Expr::CompoundIdentifier(parts) => parts
            .last()
            .map(|p| p.value.to_lowercase())
            .unwrap_or_else(|| "?column?".into()),
        Expr::Function(function) => function
            .name
            .0
            .last()
            .map(|part| part.to_string().trim_matches('"').to_lowercase())
            .unwrap_or_else(|| "?column?".into()),
        Expr::Cast {
            expr, data_type, ..
        } => match expr.as_ref() {
            Expr::Value(_) => data_type.to_string().to_lowercase(),
            inner => postgres_name(inner),
        },
        Expr::Nested(inner) => postgres_name(inner),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Subquery(_) => "?column?".into(),
        _ => "?column?".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::sql::sqlparser::ast::Statement;
    use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
    use datafusion::sql::sqlparser::parser::Parser;

    fn named(sql: &str) -> String {
        let mut statements = Parser::parse_sql(&PostgreSqlDialect {}, sql).unwrap();
        let Statement::Query(query) = &mut statements[0] else {
            panic!("not a query")
        };
        name_result_columns(query);
        query.to_string()
    }

    #[test]
    fn aggregates_are_named_after_their_function() {
        assert_eq!(
            named("SELECT a, count(*), sum(b) FROM t GROUP BY a"),
            "SELECT a, count(*) AS \"count\", sum(b) AS \"sum\" FROM t GROUP BY a"
        );
    }

    #[test]
    fn a_repeated_name_gets_a_hidden_suffix() {
        assert_eq!(
            named("SELECT count(*), count(b) FROM t"),
            "SELECT count(*) AS \"count\", count(b) AS \"count\u{1f}1\" FROM t"
        );
        assert_eq!(display_name("count\u{1f}1"), "count");
    }
}

/// An identifier as Postgres folds it: quoted identifiers keep their case, others are lower
/// case.
pub(crate) fn fold_ident(ident: &Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// The object a (possibly `public.`-qualified) name refers to.
pub(crate) fn object_name(
    name: &datafusion::sql::sqlparser::ast::ObjectName,
) -> Result<String, crate::error::CoordError> {
    use datafusion::sql::sqlparser::ast::ObjectNamePart;
    let parts = name
        .0
        .iter()
        .map(|part| match part {
            ObjectNamePart::Identifier(ident) => Ok(fold_ident(ident)),
            ObjectNamePart::Function(_) => Err(crate::error::CoordError::Unsupported(format!(
                "object name {name}"
            ))),
        })
        .collect::<Result<Vec<_>, _>>()?;
    match parts.as_slice() {
        [object] => Ok(object.clone()),
        [schema, object] if schema == sql::session::DEFAULT_SCHEMA => Ok(object.clone()),
        [database, schema, object]
            if database == sql::session::DATABASE && schema == sql::session::DEFAULT_SCHEMA =>
        {
            Ok(object.clone())
        }
        _ => Err(crate::error::CoordError::UnknownObject {
            kind: "schema",
            name: parts[..parts.len().saturating_sub(1)].join("."),
        }),
    }
}
