//! Postgres's names for unnamed result columns: `count(*)` is `count`, `x::text` is `x`,
//! anything else `?column?`. DataFusion would name them after the whole expression.

use std::collections::HashSet;

use datafusion::sql::sqlparser::ast::{Expr, Ident, Query, SelectItem, SetExpr};

/// Gives each unnamed expression of the query's top-level SELECT list its Postgres name, as
/// long as that name is not taken in the list.
pub(crate) fn name_result_columns(query: &mut Query) {
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    let mut used: HashSet<String> = select
        .projection
        .iter()
        .filter_map(|item| match item {
            SelectItem::ExprWithAlias { alias, .. } => Some(alias.value.to_lowercase()),
            SelectItem::UnnamedExpr(Expr::Identifier(ident)) => Some(ident.value.to_lowercase()),
            SelectItem::UnnamedExpr(Expr::CompoundIdentifier(parts)) => {
                parts.last().map(|p| p.value.to_lowercase())
            }
            _ => None,
        })
        .collect();
    for item in select.projection.iter_mut() {
        let SelectItem::UnnamedExpr(expr) = item else {
            continue;
        };
        if matches!(expr, Expr::Identifier(_) | Expr::CompoundIdentifier(_)) {
            continue;
        }
        let name = postgres_name(expr);
        if used.insert(name.clone()) {
            *item = SelectItem::ExprWithAlias {
                expr: expr.clone(),
                alias: Ident::with_quote('"', name),
            };
        }
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
    fn a_taken_name_is_left_alone() {
        assert_eq!(
            named("SELECT count(*), count(b) FROM t"),
            "SELECT count(*) AS \"count\", count(b) FROM t"
        );
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
