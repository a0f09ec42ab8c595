//! Postgres's names for unnamed result columns: `count(*)` is `count`, `x::text` is `x`,
//! anything else `?column?`. DataFusion would name them after the whole expression.

use std::collections::HashSet;

use std::sync::Arc;

use datafusion::arrow::datatypes::{Field, Schema, SchemaRef};
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    Expr, Ident, Query, Select, SelectItem, VisitMut, VisitorMut,
};

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

/// Names the SELECT lists of a query (and of its subqueries) as Postgres does: an unnamed
/// expression gets its Postgres name (`count(*)` is `count`), and a name that repeats gets a
/// hidden suffix (see [`display_name`]), as do the columns listed beside a `*`.
pub(crate) fn name_result_columns(query: &mut Query) {
    let _ = query.visit(&mut SelectNamer);
}

struct SelectNamer;

impl VisitorMut for SelectNamer {
    type Break = ();

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        name_select_list(select);
        ControlFlow::Continue(())
    }
}

fn name_select_list(select: &mut Select) {
    let has_wildcard = select.projection.iter().any(|item| {
        matches!(
            item,
            SelectItem::Wildcard(_) | SelectItem::QualifiedWildcard(..)
        )
    });
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
        // A `*` may expand to the same names, which DataFusion would refuse.
        let alias = if used.insert(name.to_lowercase()) && !has_wildcard {
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

/// A name as written in a statement: an optional schema and the object's own name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ObjectRef {
    /// The schema, if the name was qualified.
    pub schema: Option<String>,
    /// The object's name within its schema.
    pub name: String,
}

impl std::fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.schema {
            Some(schema) => write!(f, "{schema}.{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// The parts of a (possibly schema- or database-qualified) name, folded as Postgres folds them.
pub(crate) fn object_ref(
    name: &datafusion::sql::sqlparser::ast::ObjectName,
) -> Result<ObjectRef, crate::error::CoordError> {
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
        [object] => Ok(ObjectRef {
            schema: None,
            name: object.clone(),
        }),
        [schema, object] => Ok(ObjectRef {
            schema: Some(schema.clone()),
            name: object.clone(),
        }),
        [database, schema, object] if database == sql::session::DATABASE => Ok(ObjectRef {
            schema: Some(schema.clone()),
            name: object.clone(),
        }),
        [_, _, _] => Err(crate::error::CoordError::Unsupported(format!(
            "cross-database references are not implemented: {name}"
        ))),
        _ => Err(crate::error::CoordError::Syntax(format!(
            "improper qualified name (too many dotted names): {name}"
        ))),
    }
}

/// A column name: the last part of a possibly qualified name.
pub(crate) fn column_name(
    name: &datafusion::sql::sqlparser::ast::ObjectName,
) -> Result<String, crate::error::CoordError> {
    Ok(object_ref(name)?.name)
}

/// An identifier that reads back as `name`: quoted unless it is a lower-case word that needs
/// no quotes (what `quote_ident` decides).
pub(crate) fn sql_ident(name: &str) -> Ident {
    if needs_quotes(name) {
        Ident::with_quote('"', name)
    } else {
        Ident::new(name)
    }
}

/// Whether Postgres needs `name` quoted to read it back unchanged.
pub(crate) fn needs_quotes(name: &str) -> bool {
    let mut chars = name.chars();
    let starts_well = chars
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_');
    !starts_well
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$')
        || crate::system_catalog::is_reserved_keyword(name)
}
