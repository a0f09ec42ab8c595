//! Result columns as PostgreSQL shows them. Unnamed columns get Postgres's names
//! (`count(*)` is `count`, `x::text` is `x`, anything else `?column?`; DataFusion would name
//! them after the whole expression), and columns of a reg type (`regclass`, …) are shown as
//! the names of their objects.

use std::collections::HashSet;
use std::ops::ControlFlow;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::sql::sqlparser::ast::{
    AccessExpr, Expr, FunctionArg, FunctionArgExpr, FunctionArguments, Ident, Query, Select,
    SelectItem, SetExpr, TrimWhereField, VisitMut, VisitorMut,
};
use repr::pg_type::PG_TYPE_OID_KEY;

use crate::names::fold_ident;
use crate::reg_types::RegKind;
use crate::rewrite::postgres_syntax::is_current_role;
use crate::types::postgres_type_name;

/// Separates a result column's name from the suffix that keeps a repeated name unique while
/// DataFusion plans (Postgres allows `SELECT a, a`; DataFusion requires distinct names).
const REPEAT_MARKER: char = '\u{1f}';

/// The name a client sees for a planned result column.
pub fn display_name(planned: &str) -> &str {
    planned.split(REPEAT_MARKER).next().unwrap_or(planned)
}

/// `schema` with the names clients see (see [`displayed_schema`]).
fn display_schema(schema: &SchemaRef) -> SchemaRef {
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

/// The reg type a column holds, if any.
pub fn reg_kind_of(field: &Field) -> Option<RegKind> {
    let oid = field.metadata().get(PG_TYPE_OID_KEY)?.parse().ok()?;
    RegKind::from_type_oid(oid).filter(|_| field.data_type() == &DataType::Int64)
}

/// The schema of a result as clients see it: Postgres's column names, and reg-type columns as
/// the text of their names.
pub fn displayed_schema(schema: &SchemaRef) -> SchemaRef {
    let named = display_schema(schema);
    if !named.fields().iter().any(|f| reg_kind_of(f).is_some()) {
        return named;
    }
    let fields: Vec<Field> = named
        .fields()
        .iter()
        .map(|f| match reg_kind_of(f) {
            Some(_) => Field::new(f.name(), DataType::Utf8, true),
            None => f.as_ref().clone(),
        })
        .collect();
    Arc::new(Schema::new_with_metadata(fields, named.metadata().clone()))
}

/// Names the SELECT lists of a query (and of its subqueries) as Postgres does: an unnamed
/// expression gets its Postgres name (`count(*)` is `count`), and a name that repeats gets a
/// hidden suffix (see [`display_name`]), as do the columns listed beside a `*` in the
/// query's own result. Inside a subquery, a column or a name given with `AS` beside a `*`
/// keeps its name, so that the query around it can read it (a name the `*` also gives is then
/// refused as a duplicate).
pub(crate) fn name_result_columns(query: &mut Query) {
    let _ = query.visit(&mut SelectNamer { depth: 0 });
}

/// Visits SELECT lists, knowing how deep in subqueries each is.
struct SelectNamer {
    /// Queries entered and not left: 1 in the query's own SELECT lists.
    depth: usize,
}

impl VisitorMut for SelectNamer {
    type Break = ();

    fn pre_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth += 1;
        ControlFlow::Continue(())
    }

    fn post_visit_query(&mut self, _query: &mut Query) -> ControlFlow<()> {
        self.depth -= 1;
        ControlFlow::Continue(())
    }

    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        name_select_list(select, self.depth > 1);
        ControlFlow::Continue(())
    }
}

fn name_select_list(select: &mut Select, nested: bool) {
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
                let is_column = match expr {
                    Expr::Identifier(ident) => !is_current_role(ident),
                    Expr::CompoundIdentifier(_) => true,
                    _ => false,
                };
                let name = postgres_name(expr);
                if nested && has_wildcard && is_column {
                    used.insert(name);
                    continue;
                }
                (expr.clone(), name, is_column)
            }
            SelectItem::ExprWithAlias { alias, .. } if nested && has_wildcard => {
                used.insert(fold_ident(alias).to_lowercase());
                continue;
            }
            SelectItem::ExprWithAlias { expr, alias } => (expr.clone(), fold_ident(alias), true),
            _ => continue,
        };
        // A `*` may expand to the same names, which DataFusion would refuse. (The columns a
        // window table function adds beside its relation's `*` keep their names: they are
        // read by name, and a relation that has them already cannot be windowed.)
        let keeps_name = has_wildcard && is_window_column(&name);
        let alias = if used.insert(name.to_lowercase()) && (!has_wildcard || keeps_name) {
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

/// Whether `name` is a column that window table functions add.
fn is_window_column(name: &str) -> bool {
    crate::rewrite::windows::WINDOW_COLUMNS.contains(&name)
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
            Expr::Value(_) => postgres_type_name(data_type),
            inner => postgres_name(inner),
        },
        Expr::TypedString(typed) => postgres_type_name(&typed.data_type),
        Expr::Interval(_) => "interval".into(),
        Expr::Nested(inner) => postgres_name(inner),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Subquery(query) => subquery_name(query),
        Expr::Substring { shorthand, .. } => match shorthand {
            true => "substr".into(),
            false => "substring".into(),
        },
        Expr::Trim { trim_where, .. } => match trim_where {
            Some(TrimWhereField::Leading) => "ltrim".into(),
            Some(TrimWhereField::Trailing) => "rtrim".into(),
            _ => "btrim".into(),
        },
        Expr::Position { .. } => "position".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Ceil { .. } => "ceil".into(),
        Expr::Floor { .. } => "floor".into(),
        Expr::Overlay { .. } => "overlay".into(),
        Expr::AtTimeZone { .. } => "timezone".into(),
        Expr::Array(_) => "array".into(),
        Expr::CompoundFieldAccess { root, access_chain } => match access_chain.last() {
            Some(AccessExpr::Dot(field)) => postgres_name(field),
            _ => postgres_name(root),
        },
        _ => "?column?".into(),
    }
}

/// A scalar subquery is named after its one column, as PostgreSQL names it (through the
/// `__single_value` a read wraps a non-aggregating subquery's value in).
fn subquery_name(query: &Query) -> String {
    let SetExpr::Select(select) = query.body.as_ref() else {
        return "?column?".into();
    };
    match select.projection.first() {
        Some(SelectItem::ExprWithAlias { alias, .. }) => fold_ident(alias),
        Some(SelectItem::UnnamedExpr(Expr::Function(function)))
            if function.name.to_string() == crate::single_value::SINGLE_VALUE =>
        {
            match &function.args {
                FunctionArguments::List(list) => match list.args.first() {
                    Some(FunctionArg::Unnamed(FunctionArgExpr::Expr(arg))) => postgres_name(arg),
                    _ => "?column?".into(),
                },
                _ => "?column?".into(),
            }
        }
        Some(SelectItem::UnnamedExpr(expr)) => postgres_name(expr),
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
    fn scalar_subqueries_are_named_after_their_column() {
        assert_eq!(
            named("SELECT (SELECT o.amount FROM o), (SELECT max(x) AS top FROM t), (SELECT 1)"),
            "SELECT (SELECT o.amount FROM o) AS \"amount\", (SELECT max(x) AS top FROM t) AS \"top\", \
             (SELECT 1 AS \"?column?\") AS \"?column?\""
        );
        assert_eq!(
            named("SELECT (SELECT __single_value(o.amount) FROM o WHERE o.c = a.c) FROM a"),
            "SELECT (SELECT __single_value(o.amount) AS \"__single_value\" FROM o WHERE o.c = a.c) \
             AS \"amount\" FROM a"
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

    #[test]
    fn special_forms_are_named_as_postgres_names_them() {
        let mut statements = Parser::parse_sql(
            &PostgreSqlDialect {},
            "SELECT substr(s, 2), substring(s FROM 2), trim(s), trim(LEADING ' ' FROM s), \
             position('a' IN s), extract(year FROM d), ceil(x), (ARRAY[1, 2])[1], a[1], \
             1::int, 'x'::varchar(3), 2::double precision, DATE '2024-01-01', \
             INTERVAL '1 day', d AT TIME ZONE 'UTC', 1::smallint, 1::real, true::boolean, \
             '2020-01-01'::timestamptz, 'x'::char(2), '{1}'::int[], '1'::numeric(5,2), \
             '12:00'::time, '1'::json FROM t",
        )
        .unwrap();
        let Statement::Query(query) = &mut statements[0] else {
            panic!("not a query")
        };
        name_result_columns(query);
        let SetExpr::Select(select) = query.body.as_ref() else {
            panic!("not a select")
        };
        let names: Vec<String> = select
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::ExprWithAlias { alias, .. } => display_name(&alias.value).to_string(),
                other => panic!("unnamed: {other}"),
            })
            .collect();
        assert_eq!(
            names,
            [
                "substr",
                "substring",
                "btrim",
                "ltrim",
                "position",
                "extract",
                "ceil",
                "array",
                "a",
                "int4",
                "varchar",
                "float8",
                "date",
                "interval",
                "timezone",
                "int2",
                "float4",
                "bool",
                "timestamptz",
                "bpchar",
                "int4",
                "numeric",
                "time",
                "json"
            ]
        );
    }
}
