//! PostgreSQL syntax that DataFusion's planner does not accept, rewritten into equivalents it
//! does. These are rewrites of the syntax tree by meaning, never keyed on a client's text:
//!
//! - `a OPERATOR(pg_catalog.~) b` is `a ~ b`; `x COLLATE "C"` is `x` (Fluxion compares text
//!   bytewise, which is the `C` collation);
//! - schema-qualified function names (`pg_catalog.format_type`) name the function;
//! - `x::regclass` (and `regtype`, `regproc`, `regnamespace`, `regrole`) looks the name up,
//!   `x::regclass::text` prints it (see [`crate::reg_types`]), `oids::regtype[]` is the
//!   array of their names; `::oid` and `::name` are
//!   bigint and text, the types Fluxion holds them in;
//! - `'{a,b}'::text[]` is an array, and `x = ANY('{a,b}')` is `x IN ('a', 'b')`; `x LIKE p
//!   ESCAPE '/'` escapes with `/`;
//! - `ARRAY(SELECT e …)` is the `array_agg` of the subquery (in the subquery's order);
//! - `current_role` is the function, as `current_user` is;
//! - `(composite).field` reads the field; `FROM unnest(a) x` names the column `x` too;
//! - `generate_subscripts(a, 1)`, `information_schema._pg_expandarray(a)` and
//!   `generate_series(…)` in a select list are unnested lists, so they give rows and stay in
//!   lockstep with other set-returning functions of the select list;
//! - a scalar subquery that does not aggregate takes its value through `__single_value`,
//!   which DataFusion can decorrelate and which keeps Postgres's error when the subquery
//!   returns more than one row (in a view, see `lower::single_values`).

use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::visit_expressions_mut as visit_expressions;
use datafusion::sql::sqlparser::ast::{
    self, BinaryOperator, CastKind, DataType as SqlType, Expr, Function, FunctionArg,
    FunctionArgExpr, FunctionArgumentList, FunctionArguments, Ident, ObjectName, ObjectNamePart,
    OrderByKind, Query, Select, SelectItem, SetExpr, Statement, TableAliasColumnDef, TableFactor,
    Value, VisitMut, VisitorMut,
};

use crate::reg_types::RegKind;
use crate::single_value::SINGLE_VALUE;

/// Where a statement will run, which decides the rewrites that apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Target {
    /// A query run once (SELECT, the query of a write, DECLARE …).
    Read,
    /// The query of a view or materialized view, which must stay incremental.
    View,
}

/// Rewrites `statement` for DataFusion (see the module documentation). `is_aggregate` tells
/// whether a function name is an aggregate.
pub(crate) fn rewrite_postgres_syntax(
    statement: &mut Statement,
    target: Target,
    is_aggregate: &dyn Fn(&str) -> bool,
) {
    let _ = statement.visit(&mut Rewriter {
        target,
        is_aggregate,
    });
    if let (Statement::Query(query), Target::Read) = (statement, target) {
        sort_by_subqueries(query);
    }
}

/// `ORDER BY` an expression holding a subquery, which DataFusion cannot plan in a sort: the
/// sort keys become hidden columns of the select list, sorted by outside it.
fn sort_by_subqueries(query: &mut Query) {
    let Some(ast::OrderBy {
        kind: OrderByKind::Expressions(order),
        ..
    }) = &query.order_by
    else {
        return;
    };
    if !order.iter().any(|o| contains_subquery(&o.expr)) {
        return;
    }
    let order = order.clone();
    let SetExpr::Select(select) = query.body.as_mut() else {
        return;
    };
    if select.distinct.is_some() {
        return;
    }
    let mut hidden = Vec::new();
    let mut outer_order = Vec::new();
    for (position, key) in order.iter().enumerate() {
        let name = format!("__order_{position}");
        let expr =
            select_list_expr(&key.expr, &select.projection).unwrap_or_else(|| key.expr.clone());
        select.projection.push(SelectItem::ExprWithAlias {
            expr,
            alias: Ident::with_quote('"', name.clone()),
        });
        hidden.push(ObjectName::from(vec![Ident::with_quote('"', name.clone())]));
        outer_order.push(ast::OrderByExpr {
            expr: Expr::Identifier(Ident::with_quote('"', name)),
            options: key.options,
            with_fill: None,
        });
    }
    query.order_by = None;
    let limit = query.limit_clause.take();
    let inner = query.clone();
    let Some(Statement::Query(mut outer)) =
        crate::parse::parse_sql(&format!("SELECT * FROM ({inner}) AS __ordered"))
            .ok()
            .and_then(|mut s| s.pop())
    else {
        return;
    };
    if let SetExpr::Select(outer_select) = outer.body.as_mut() {
        if let Some(SelectItem::Wildcard(options)) = outer_select.projection.first_mut() {
            options.opt_exclude = Some(ast::ExcludeSelectItem::Multiple(hidden));
        }
    }
    outer.order_by = Some(ast::OrderBy {
        kind: OrderByKind::Expressions(outer_order),
        interpolate: None,
    });
    outer.limit_clause = limit;
    *query = *outer;
}

/// The select-list expression an ORDER BY key names by position (`ORDER BY 2`) or by alias.
fn select_list_expr(key: &Expr, projection: &[SelectItem]) -> Option<Expr> {
    let item = match key {
        Expr::Value(v) => match &v.value {
            Value::Number(n, _) => projection.get(n.parse::<usize>().ok()?.checked_sub(1)?)?,
            _ => return None,
        },
        Expr::Identifier(name) => projection.iter().find(|item| {
            matches!(item, SelectItem::ExprWithAlias { alias, .. }
                if crate::names::fold_ident(alias) == crate::names::fold_ident(name))
        })?,
        _ => return None,
    };
    match item {
        SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => Some(e.clone()),
        _ => None,
    }
}

/// Whether an expression holds a subquery.
fn contains_subquery(expr: &Expr) -> bool {
    let mut found = false;
    let mut expr = expr.clone();
    let _ = visit_expressions(&mut expr, |e| {
        if matches!(
            e,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
        ) {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// `generate_series(…)` as an item of a select list is a set-returning function, one row per
/// value, where DataFusion's returns the list of them: it is unnested (several stay in
/// lockstep, as in PostgreSQL), and named `generate_series` as PostgreSQL names it.
fn unnest_series_in_select_lists(body: &mut SetExpr) {
    match body {
        SetExpr::Select(select) => {
            for item in &mut select.projection {
                let (SelectItem::UnnamedExpr(expr) | SelectItem::ExprWithAlias { expr, .. }) = item
                else {
                    continue;
                };
                let Expr::Function(function) = expr else {
                    continue;
                };
                let mut name = function.name.clone();
                strip_catalog_schema(&mut name);
                if custom_name(&name) != "generate_series" {
                    continue;
                }
                let unnested = call("unnest", vec![expr.clone()]);
                *item = match item {
                    SelectItem::ExprWithAlias { alias, .. } => SelectItem::ExprWithAlias {
                        expr: unnested,
                        alias: alias.clone(),
                    },
                    _ => SelectItem::ExprWithAlias {
                        expr: unnested,
                        alias: Ident::with_quote('"', "generate_series"),
                    },
                };
            }
        }
        SetExpr::SetOperation { left, right, .. } => {
            unnest_series_in_select_lists(left);
            unnest_series_in_select_lists(right);
        }
        _ => {}
    }
}

struct Rewriter<'a> {
    target: Target,
    is_aggregate: &'a dyn Fn(&str) -> bool,
}

impl VisitorMut for Rewriter<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        unnest_series_in_select_lists(&mut query.body);
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name,
            args: Some(args),
            alias,
            ..
        } = factor
        {
            strip_catalog_schema(name);
            match custom_name(name).as_str() {
                // `pg_catalog.unnest(…)` is the UNNEST table factor once unqualified.
                "unnest" => {
                    let array_exprs = args
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e.clone()),
                            _ => None,
                        })
                        .collect();
                    *factor = TableFactor::UNNEST {
                        alias: alias.take(),
                        array_exprs,
                        with_offset: false,
                        with_offset_alias: None,
                        with_ordinality: false,
                    };
                }
                // DataFusion's generate_series table function takes constant bounds; with
                // others (a column of an enclosing query), unnest the series as a list.
                "generate_series" if !args.args.iter().all(is_constant_argument) => {
                    let bounds: Vec<Expr> = args
                        .args
                        .iter()
                        .filter_map(|arg| match arg {
                            FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => {
                                Some(cast(e.clone(), SqlType::BigInt(None)))
                            }
                            _ => None,
                        })
                        .collect();
                    *factor = TableFactor::UNNEST {
                        alias: alias.take(),
                        array_exprs: vec![call("generate_series", bounds)],
                        with_offset: false,
                        with_offset_alias: None,
                        with_ordinality: false,
                    };
                }
                name if !is_table_function(name) && alias.is_some() => {
                    // A function returning one value is a relation of one row and column,
                    // named after the alias (`FROM string_to_array(…) s`).
                    let column = alias
                        .as_ref()
                        .map(|a| a.name.value.clone())
                        .unwrap_or_default();
                    let arguments: Vec<String> =
                        args.args.iter().map(ToString::to_string).collect();
                    let call = format!(
                        "SELECT {name}({}) AS {}",
                        arguments.join(", "),
                        sql_quoted(&column)
                    );
                    if let Some(Statement::Query(subquery)) = crate::parse::parse_sql(&call)
                        .ok()
                        .and_then(|mut s| s.pop())
                    {
                        *factor = TableFactor::Derived {
                            lateral: false,
                            subquery,
                            alias: alias.take(),
                            sample: None,
                        };
                    }
                }
                _ => {}
            }
        }
        // A function returning a scalar names its column after the table alias.
        let scalar_alias = match factor {
            TableFactor::Table {
                name,
                args: Some(_),
                alias: Some(alias),
                ..
            } if returns_scalar(name) => Some(alias),
            TableFactor::UNNEST {
                alias: Some(alias),
                array_exprs,
                ..
            } if array_exprs.len() == 1 => Some(alias),
            _ => None,
        };
        if let Some(alias) = scalar_alias {
            if alias.columns.is_empty() {
                alias
                    .columns
                    .push(TableAliasColumnDef::from_name(alias.name.value.clone()));
            }
        }
        ControlFlow::Continue(())
    }

    fn post_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        let replacement = match expr {
            Expr::BinaryOp { left, op, right } => builtin_operator(op).map(|op| match op {
                Rewritten::Binary(op) => Expr::BinaryOp {
                    left: left.clone(),
                    op,
                    right: right.clone(),
                },
                Rewritten::Like { negated } => Expr::Like {
                    negated,
                    any: false,
                    expr: left.clone(),
                    pattern: right.clone(),
                    escape_char: None,
                },
            }),
            Expr::Collate { expr: inner, .. } => Some(inner.as_ref().clone()),
            Expr::Cast {
                expr: inner,
                data_type,
                ..
            } => rewrite_cast(inner, data_type),
            Expr::Like {
                pattern,
                escape_char: Some(escape),
                ..
            }
            | Expr::ILike {
                pattern,
                escape_char: Some(escape),
                ..
            } => {
                let escape_text = match &escape.value {
                    Value::SingleQuotedString(s) => s.clone(),
                    other => other.to_string(),
                };
                if escape_text != "\\" {
                    **pattern = call(
                        "__like_escape",
                        vec![*pattern.clone(), string(&escape_text)],
                    );
                }
                clear_escape(expr);
                None
            }
            Expr::Function(function) => self.rewrite_function(function),
            Expr::AnyOp {
                left,
                compare_op: BinaryOperator::Eq,
                right,
                ..
            } => untyped_array_membership(left, right, false),
            Expr::AllOp {
                left,
                compare_op: BinaryOperator::NotEq,
                right,
            } => untyped_array_membership(left, right, true),
            Expr::CompoundFieldAccess { root, access_chain } => field_access(root, access_chain),
            Expr::Subquery(query) => {
                self.take_single_value(query);
                None
            }
            // A keyword that is a function, as `current_user` is (sqlparser reads that one).
            Expr::Identifier(ident) if is_current_role(ident) => Some(Expr::Function(Function {
                name: ObjectName::from(vec![ident.clone()]),
                uses_odbc_syntax: false,
                parameters: FunctionArguments::None,
                args: FunctionArguments::None,
                filter: None,
                null_treatment: None,
                over: None,
                within_group: Vec::new(),
            })),
            _ => None,
        };
        if let Some(replacement) = replacement {
            *expr = replacement;
        }
        ControlFlow::Continue(())
    }
}

impl Rewriter<'_> {
    fn rewrite_function(&self, function: &mut Function) -> Option<Expr> {
        let qualified_by_expandarray = function.name.0.len() == 2
            && part_name(&function.name.0[0]) == "information_schema"
            && part_name(&function.name.0[1]) == "_pg_expandarray";
        strip_catalog_schema(&mut function.name);
        let name = function.name.to_string().to_lowercase();
        match (&function.args, name.as_str()) {
            // An empty subquery's array is `{}`, where array_agg gives NULL.
            (FunctionArguments::Subquery(query), "array") => Some(call(
                "coalesce",
                vec![
                    array_subquery(query.as_ref().clone(), self.is_aggregate),
                    call("make_array", Vec::new()),
                ],
            )),
            (FunctionArguments::List(_), "_pg_expandarray") if qualified_by_expandarray => {
                Some(call("unnest", vec![Expr::Function(function.clone())]))
            }
            // PostgreSQL's `mod(x, y)` is `x % y` (the remainder takes the dividend's sign).
            (FunctionArguments::List(list), "mod") => match list.args.as_slice() {
                [FunctionArg::Unnamed(FunctionArgExpr::Expr(x)), FunctionArg::Unnamed(FunctionArgExpr::Expr(y))] => {
                    Some(Expr::Nested(Box::new(Expr::BinaryOp {
                        left: Box::new(x.clone()),
                        op: BinaryOperator::Modulo,
                        right: Box::new(y.clone()),
                    })))
                }
                _ => None,
            },
            (FunctionArguments::List(_), "generate_subscripts") => {
                let mut subscripts = function.clone();
                subscripts.name = ObjectName::from(vec![Ident::new("__subscripts")]);
                Some(call("unnest", vec![Expr::Function(subscripts)]))
            }
            _ => None,
        }
    }

    /// Makes a non-aggregating scalar subquery's value that of `__single_value`.
    fn take_single_value(&self, query: &mut Query) {
        if query.limit_clause.is_some() || query.fetch.is_some() {
            return;
        }
        let SetExpr::Select(select) = query.body.as_mut() else {
            return;
        };
        if !is_plain_select(select) || aggregates(select, self.is_aggregate) {
            return;
        }
        let (expr, alias) = match select.projection.as_slice() {
            [SelectItem::UnnamedExpr(expr)] => (expr.clone(), None),
            [SelectItem::ExprWithAlias { expr, alias }] => (expr.clone(), Some(alias.clone())),
            _ => return,
        };
        query.order_by = None;
        if needs_derived_table(&expr, select) {
            if self.target == Target::View {
                // Evaluated per outer row, which a view cannot maintain.
                return;
            }
            // DataFusion cannot plan an aggregate over outer columns or subqueries: take the
            // single value of a derived table instead (evaluated per outer row).
            let inner = query.clone();
            let outer =
                format!("SELECT {SINGLE_VALUE}(__single) FROM ({inner}) AS __single_row(__single)");
            if let Some(Statement::Query(outer)) = crate::parse::parse_sql(&outer)
                .ok()
                .and_then(|mut s| s.pop())
            {
                *query = *outer;
            }
            return;
        }
        let wrapped = call(SINGLE_VALUE, vec![expr]);
        let item = match alias {
            Some(alias) => SelectItem::ExprWithAlias {
                expr: wrapped,
                alias,
            },
            None => SelectItem::UnnamedExpr(wrapped),
        };
        if let SetExpr::Select(select) = query.body.as_mut() {
            select.projection = vec![item];
        }
    }
}

/// Whether an aggregate of `expr` over `select`'s rows must be computed over a derived table:
/// when `expr` holds a subquery or names a column through a qualifier that is not a relation
/// of `select`'s FROM (a column of an enclosing query), which DataFusion cannot aggregate.
fn needs_derived_table(expr: &Expr, select: &Select) -> bool {
    let mut local: Vec<String> = Vec::new();
    for table in &select.from {
        let factors =
            std::iter::once(&table.relation).chain(table.joins.iter().map(|j| &j.relation));
        for factor in factors {
            match factor {
                TableFactor::Table { name, alias, .. } => {
                    local.extend(name.0.iter().map(part_name));
                    if let Some(alias) = alias {
                        local.push(crate::names::fold_ident(&alias.name));
                    }
                }
                TableFactor::Derived { alias, .. }
                | TableFactor::UNNEST { alias, .. }
                | TableFactor::Function { alias, .. } => {
                    if let Some(alias) = alias {
                        local.push(crate::names::fold_ident(&alias.name));
                    }
                }
                _ => return false,
            }
        }
    }
    let mut found = false;
    let mut expr = expr.clone();
    let _ = visit_expressions(&mut expr, |e| {
        let outer = match e {
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. } => true,
            Expr::CompoundIdentifier(parts) if parts.len() >= 2 => {
                !local.contains(&crate::names::fold_ident(&parts[parts.len() - 2]))
            }
            _ => false,
        };
        if outer {
            found = true;
            return ControlFlow::Break(());
        }
        ControlFlow::Continue(())
    });
    found
}

/// Whether a SELECT has no grouping, no DISTINCT and no window functions.
fn is_plain_select(select: &Select) -> bool {
    let grouped = match &select.group_by {
        ast::GroupByExpr::All(_) => true,
        ast::GroupByExpr::Expressions(exprs, _) => !exprs.is_empty(),
    };
    !grouped && select.having.is_none() && select.distinct.is_none()
}

/// Whether a SELECT's list calls an aggregate or window function (its subqueries' calls are
/// their own).
fn aggregates(select: &Select, is_aggregate: &dyn Fn(&str) -> bool) -> bool {
    let mut found = false;
    let mut projection = select.projection.clone();
    let _ = visit_expressions(&mut projection, |e| {
        if matches!(
            e,
            Expr::Subquery(_) | Expr::Exists { .. } | Expr::InSubquery { .. }
        ) {
            *e = Expr::Value(Value::Null.into());
        }
        ControlFlow::<()>::Continue(())
    });
    let _ = projection.visit(&mut FunctionFinder {
        found: &mut found,
        is_aggregate,
    });
    found
}

struct FunctionFinder<'a> {
    found: &'a mut bool,
    is_aggregate: &'a dyn Fn(&str) -> bool,
}

impl VisitorMut for FunctionFinder<'_> {
    type Break = ();

    fn pre_visit_expr(&mut self, expr: &mut Expr) -> ControlFlow<()> {
        match expr {
            Expr::Function(function) => {
                let name = function.name.0.last().map(part_name).unwrap_or_default();
                if function.over.is_some() || (self.is_aggregate)(&name) {
                    *self.found = true;
                    return ControlFlow::Break(());
                }
                ControlFlow::Continue(())
            }
            _ => ControlFlow::Continue(()),
        }
    }
}

/// `ARRAY(SELECT e FROM … ORDER BY o)` as `(SELECT array_agg(e ORDER BY o) FROM …)`, or, for
/// queries of other shapes, `array_agg` over the query as a derived table.
fn array_subquery(mut query: Query, is_aggregate: &dyn Fn(&str) -> bool) -> Expr {
    let order_by = query.order_by.take();
    let simple = query.limit_clause.is_none()
        && query.fetch.is_none()
        && matches!(query.body.as_ref(), SetExpr::Select(select)
            if is_plain_select(select)
                && !aggregates(select, is_aggregate)
                && matches!(select.projection.as_slice(),
                    [SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. }]
                        if !needs_derived_table(e, select)));
    let mut order_exprs: Vec<ast::OrderByExpr> = match &order_by {
        Some(ast::OrderBy {
            kind: OrderByKind::Expressions(exprs),
            ..
        }) => exprs.clone(),
        _ => Vec::new(),
    };
    if simple {
        if let SetExpr::Select(select) = query.body.as_mut() {
            let element = match &select.projection[0] {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => {
                    Some(e.clone())
                }
                _ => None,
            };
            if let Some(element) = element {
                // `ORDER BY 1` names the select list's only column.
                for order in &mut order_exprs {
                    if matches!(&order.expr, Expr::Value(v) if matches!(v.value, Value::Number(..)))
                    {
                        order.expr = element.clone();
                    }
                }
                select.projection = vec![SelectItem::UnnamedExpr(array_agg(element, order_exprs))];
                return Expr::Subquery(Box::new(query));
            }
        }
    }
    query.order_by = order_by;
    let element = Expr::Identifier(Ident::new("__array_element"));
    let outer = format!(
        "SELECT array_agg(__array_element) FROM ({query}) AS __array_subquery(__array_element)"
    );
    match crate::parse::parse_sql(&outer)
        .ok()
        .and_then(|mut s| s.pop())
    {
        Some(Statement::Query(outer)) => Expr::Subquery(outer),
        _ => call("array_agg", vec![element]),
    }
}

fn array_agg(element: Expr, order_by: Vec<ast::OrderByExpr>) -> Expr {
    let mut function = match call("array_agg", vec![element]) {
        Expr::Function(function) => function,
        _ => unreachable!("call builds a function"),
    };
    if let FunctionArguments::List(list) = &mut function.args {
        if !order_by.is_empty() {
            list.clauses
                .push(ast::FunctionArgumentClause::OrderBy(order_by));
        }
    }
    Expr::Function(function)
}

/// `(root).a.b` as `get_field(get_field(root, 'a'), 'b')`; subscripts stay subscripts. (A
/// name such as `t.a[1]` is a column reference, not a field access.)
fn field_access(root: &Expr, chain: &[ast::AccessExpr]) -> Option<Expr> {
    if !matches!(root, Expr::Nested(_) | Expr::Function(_)) {
        return None;
    }
    if !chain
        .iter()
        .any(|a| matches!(a, ast::AccessExpr::Dot(Expr::Identifier(_))))
    {
        return None;
    }
    let mut current = root.clone();
    for access in chain {
        current = match access {
            ast::AccessExpr::Dot(Expr::Identifier(field)) => call(
                "get_field",
                vec![current, string(&crate::names::fold_ident(field))],
            ),
            other => Expr::CompoundFieldAccess {
                root: Box::new(current),
                access_chain: vec![other.clone()],
            },
        };
    }
    Some(current)
}

enum Rewritten {
    Binary(BinaryOperator),
    Like { negated: bool },
}

/// The built-in operator a schema-qualified `OPERATOR(pg_catalog.op)` names.
fn builtin_operator(op: &BinaryOperator) -> Option<Rewritten> {
    let BinaryOperator::PGCustomBinaryOperator(parts) = op else {
        return None;
    };
    let symbol = parts.last()?.as_str();
    Some(Rewritten::Binary(match symbol {
        "~" => BinaryOperator::PGRegexMatch,
        "~*" => BinaryOperator::PGRegexIMatch,
        "!~" => BinaryOperator::PGRegexNotMatch,
        "!~*" => BinaryOperator::PGRegexNotIMatch,
        "~~" => return Some(Rewritten::Like { negated: false }),
        "!~~" => return Some(Rewritten::Like { negated: true }),
        "=" => BinaryOperator::Eq,
        "<>" | "!=" => BinaryOperator::NotEq,
        "<" => BinaryOperator::Lt,
        ">" => BinaryOperator::Gt,
        "<=" => BinaryOperator::LtEq,
        ">=" => BinaryOperator::GtEq,
        "+" => BinaryOperator::Plus,
        "-" => BinaryOperator::Minus,
        "*" => BinaryOperator::Multiply,
        "/" => BinaryOperator::Divide,
        "%" => BinaryOperator::Modulo,
        "||" => BinaryOperator::StringConcat,
        "&" => BinaryOperator::BitwiseAnd,
        "|" => BinaryOperator::BitwiseOr,
        "@>" => BinaryOperator::AtArrow,
        "<@" => BinaryOperator::ArrowAt,
        "&&" => BinaryOperator::PGOverlap,
        _ => return None,
    }))
}

/// The rewrite of `CAST(inner AS data_type)`, if it needs one.
fn rewrite_cast(inner: &Expr, data_type: &SqlType) -> Option<Expr> {
    // json and jsonb values are their text; `->` and `->>` read it.
    if matches!(data_type, SqlType::JSON | SqlType::JSONB) {
        return Some(cast(inner.clone(), SqlType::Text));
    }
    if let Some(kind) = reg_kind(data_type) {
        return Some(call(&kind.cast_function(), vec![inner.clone()]));
    }
    if let SqlType::Array(
        ast::ArrayElemTypeDef::SquareBracket(element, _)
        | ast::ArrayElemTypeDef::AngleBracket(element),
    ) = data_type
    {
        if let Some(kind) = reg_kind(element) {
            return Some(call(&kind.names_function(), vec![inner.clone()]));
        }
    }
    if is_text_type(data_type) {
        if let Some(kind) = reg_cast_of(inner) {
            return Some(call(&kind.name_function(), vec![inner.clone()]));
        }
    }
    if let (Expr::Value(value), SqlType::Array(_)) = (inner, data_type) {
        if let Value::SingleQuotedString(text) = &value.value {
            return Some(cast(array_literal(text), normalize_type(data_type)));
        }
    }
    let normalized = normalize_type(data_type);
    (normalized != *data_type).then(|| match normalized {
        // int2vector and oidvector are lists already.
        SqlType::Custom(ref name, _) if is_vector_type(name) => inner.clone(),
        other => cast(inner.clone(), other),
    })
}

/// The reg type a cast target names.
fn reg_kind(data_type: &SqlType) -> Option<RegKind> {
    match data_type {
        SqlType::Regclass => Some(RegKind::Class),
        SqlType::Custom(name, _) => RegKind::from_type_name(&name.to_string().replace('"', "")),
        _ => None,
    }
}

/// The reg kind of a `__to_regX(…)` call (or of `pg_typeof(…)`, a `regtype`), if `expr` is one.
fn reg_cast_of(expr: &Expr) -> Option<RegKind> {
    let Expr::Function(function) = expr else {
        return None;
    };
    let name = function.name.to_string();
    if name.eq_ignore_ascii_case("pg_typeof") {
        return Some(RegKind::Type);
    }
    let type_name = name.strip_prefix("__to_")?;
    RegKind::from_type_name(type_name)
}

fn is_text_type(data_type: &SqlType) -> bool {
    match data_type {
        SqlType::Text | SqlType::Varchar(_) | SqlType::CharacterVarying(_) | SqlType::String(_) => {
            true
        }
        SqlType::Custom(name, _) => matches!(
            custom_name(name).as_str(),
            "text" | "name" | "varchar" | "character varying"
        ),
        _ => false,
    }
}

fn is_vector_type(name: &ObjectName) -> bool {
    matches!(custom_name(name).as_str(), "int2vector" | "oidvector")
}

/// A custom type's name without a `pg_catalog.` qualifier.
fn custom_name(name: &ObjectName) -> String {
    name.0
        .last()
        .map(part_name)
        .unwrap_or_default()
        .to_lowercase()
}

/// Postgres type names DataFusion does not know, as the types Fluxion holds them in.
fn normalize_type(data_type: &SqlType) -> SqlType {
    match data_type {
        SqlType::Array(ast::ArrayElemTypeDef::SquareBracket(inner, size)) => SqlType::Array(
            ast::ArrayElemTypeDef::SquareBracket(Box::new(normalize_type(inner)), *size),
        ),
        SqlType::Custom(name, modifiers) => match custom_name(name).as_str() {
            "text" | "name" | "char" | "bpchar" | "unknown" | "sql_identifier"
            | "character_data" | "yes_or_no" | "pg_node_tree" | "aclitem" | "inet" => SqlType::Text,
            "oid" | "xid" | "cid" | "xid8" | "regproc" | "tid" | "cardinal_number" => {
                SqlType::BigInt(None)
            }
            "int2" => SqlType::SmallInt(None),
            "int4" => SqlType::Int(None),
            "int8" => SqlType::BigInt(None),
            "float4" => SqlType::Real,
            "float8" => SqlType::DoublePrecision,
            "bool" => SqlType::Boolean,
            "varchar" => SqlType::Varchar(None),
            "timestamptz" => SqlType::Timestamp(None, ast::TimezoneInfo::WithTimeZone),
            "int2vector" | "oidvector" => data_type.clone(),
            _ if name.0.len() > 1 => SqlType::Custom(
                ObjectName::from(vec![Ident::new(custom_name(name))]),
                modifiers.clone(),
            ),
            _ => data_type.clone(),
        },
        other => other.clone(),
    }
}

/// `'{a,b}'` as `ARRAY['a', 'b']` (a malformed literal stays text, for the cast to reject).
fn array_literal(text: &str) -> Expr {
    let Ok(elements) = repr::pg_array::parse_array_literal(text) else {
        return string(text);
    };
    let elements = elements
        .into_iter()
        .map(|element| match element {
            Some(text) => string(&text),
            None => Expr::Value(Value::Null.into()),
        })
        .collect();
    Expr::Array(ast::Array {
        elem: elements,
        named: true,
    })
}

/// Whether `name` is a function returning rows (a table function), not one value.
fn is_table_function(name: &str) -> bool {
    matches!(
        name,
        "generate_series"
            | "range"
            | "unnest"
            | "generate_subscripts"
            | "pg_get_keywords"
            | "pg_options_to_table"
    )
}

/// An identifier in double quotes.
fn sql_quoted(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether a function argument is a (possibly negated) number literal.
fn is_constant_argument(arg: &FunctionArg) -> bool {
    let FunctionArg::Unnamed(FunctionArgExpr::Expr(expr)) = arg else {
        return false;
    };
    match expr {
        Expr::Value(v) => matches!(v.value, Value::Number(..)),
        Expr::UnaryOp { expr, .. } => {
            matches!(expr.as_ref(), Expr::Value(v) if matches!(v.value, Value::Number(..)))
        }
        _ => false,
    }
}

/// Whether a table function returns a single column (named after its alias).
fn returns_scalar(name: &ObjectName) -> bool {
    matches!(
        custom_name(name).as_str(),
        "unnest" | "generate_series" | "generate_subscripts"
    )
}

/// Drops a `pg_catalog.` or `information_schema.` qualifier from a function's name.
fn strip_catalog_schema(name: &mut ObjectName) {
    if name.0.len() == 2
        && matches!(
            part_name(&name.0[0]).as_str(),
            "pg_catalog" | "information_schema"
        )
    {
        name.0.remove(0);
    }
}

fn part_name(part: &ObjectNamePart) -> String {
    match part {
        ObjectNamePart::Identifier(ident) => crate::names::fold_ident(ident),
        ObjectNamePart::Function(f) => f.name.value.to_lowercase(),
    }
}

fn clear_escape(expr: &mut Expr) {
    if let Expr::Like { escape_char, .. } | Expr::ILike { escape_char, .. } = expr {
        *escape_char = None;
    }
}

/// `x = ANY('{a,b}')` (`x <> ALL('{a,b}')`), an untyped array literal, as `x IN ('a', 'b')`
/// (`NOT IN`): the quoted elements take `x`'s type, as PostgreSQL's untyped literal takes the
/// array type of `x`, and NULL elements keep their three-valued meaning. An empty array
/// matches nothing (`= ANY` is false, `<> ALL` true, whatever `x` is).
fn untyped_array_membership(left: &Expr, right: &Expr, negated: bool) -> Option<Expr> {
    let Expr::Value(value) = right else {
        return None;
    };
    let Value::SingleQuotedString(text) = &value.value else {
        return None;
    };
    let elements = repr::pg_array::parse_array_literal(text).ok()?;
    if elements.is_empty() {
        return Some(Expr::Value(Value::Boolean(negated).into()));
    }
    let list = elements
        .iter()
        .map(|element| match element {
            Some(text) => string(text),
            None => Expr::Value(Value::Null.into()),
        })
        .collect();
    Some(Expr::InList {
        expr: Box::new(left.clone()),
        list,
        negated,
    })
}

fn string(text: &str) -> Expr {
    Expr::Value(Value::SingleQuotedString(text.to_string()).into())
}

fn cast(expr: Expr, data_type: SqlType) -> Expr {
    Expr::Cast {
        kind: CastKind::Cast,
        expr: Box::new(expr),
        data_type,
        array: false,
        format: None,
    }
}

/// A call of the function `name` with positional arguments.
/// Whether `ident` is the keyword `current_role`, which PostgreSQL reads as a function.
pub(crate) fn is_current_role(ident: &Ident) -> bool {
    ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("current_role")
}

pub(crate) fn call(name: &str, args: Vec<Expr>) -> Expr {
    Expr::Function(Function {
        name: ObjectName::from(vec![Ident::new(name)]),
        uses_odbc_syntax: false,
        parameters: FunctionArguments::None,
        args: FunctionArguments::List(FunctionArgumentList {
            duplicate_treatment: None,
            args: args
                .into_iter()
                .map(|a| FunctionArg::Unnamed(FunctionArgExpr::Expr(a)))
                .collect(),
            clauses: Vec::new(),
        }),
        filter: None,
        null_treatment: None,
        over: None,
        within_group: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rewritten(sql: &str, target: Target) -> String {
        let mut statement = datafusion::sql::sqlparser::parser::Parser::parse_sql(
            &datafusion::sql::sqlparser::dialect::PostgreSqlDialect {},
            sql,
        )
        .unwrap()
        .pop()
        .unwrap();
        crate::literals::normalize_literals(&mut statement);
        rewrite_postgres_syntax(&mut statement, target, &|name| {
            matches!(name, "count" | "max" | "array_agg")
        });
        statement.to_string()
    }

    #[test]
    fn schema_qualified_operators_and_collations_disappear() {
        assert_eq!(
            rewritten(
                "SELECT 1 FROM t WHERE c.relname OPERATOR(pg_catalog.~) '^(t)$' COLLATE pg_catalog.default",
                Target::Read
            ),
            "SELECT 1 FROM t WHERE c.relname ~ '^(t)$'"
        );
    }

    #[test]
    fn reg_casts_become_lookups() {
        assert_eq!(
            rewritten(
                "SELECT 'pg_class'::regclass, c.oid::pg_catalog.regclass::pg_catalog.text FROM c",
                Target::Read
            ),
            "SELECT __to_regclass('pg_class'), __regclass_name(__to_regclass(c.oid)) FROM c"
        );
    }

    #[test]
    fn non_aggregating_scalar_subqueries_take_a_single_value() {
        assert_eq!(
            rewritten(
                "SELECT (SELECT d.adbin FROM d WHERE d.x = a.x) FROM a",
                Target::Read
            ),
            "SELECT (SELECT __single_value(d.adbin) FROM d WHERE d.x = a.x) FROM a"
        );
        assert_eq!(
            rewritten(
                "SELECT (SELECT max(d.adbin) FROM d WHERE d.x = a.x) FROM a",
                Target::Read
            ),
            "SELECT (SELECT max(d.adbin) FROM d WHERE d.x = a.x) FROM a"
        );
        assert_eq!(
            rewritten(
                "SELECT (SELECT d.adbin FROM d WHERE d.x = a.x) FROM a",
                Target::View
            ),
            "SELECT (SELECT __single_value(d.adbin) FROM d WHERE d.x = a.x) FROM a"
        );
        assert_eq!(
            rewritten(
                "SELECT (SELECT d.adbin + a.y FROM d WHERE d.x = a.x) FROM a",
                Target::View
            ),
            "SELECT (SELECT d.adbin + a.y FROM d WHERE d.x = a.x) FROM a"
        );
    }

    #[test]
    fn array_subqueries_aggregate_in_order() {
        assert_eq!(
            rewritten("SELECT ARRAY(SELECT b FROM r WHERE r.m = x.oid ORDER BY 1) FROM x", Target::Read),
            "SELECT coalesce((SELECT array_agg(b ORDER BY b) FROM r WHERE r.m = x.oid), make_array()) FROM x"
        );
    }

    #[test]
    fn set_returning_catalog_functions_unnest() {
        assert_eq!(
            rewritten(
                "SELECT (information_schema._pg_expandarray(i.indkey)).n, generate_subscripts(k, 1) FROM i",
                Target::Read
            ),
            "SELECT get_field((unnest(_pg_expandarray(i.indkey))), 'n'), unnest(__subscripts(k, 1)) FROM i"
        );
    }

    #[test]
    fn like_escapes_translate_and_table_function_aliases_name_columns() {
        assert_eq!(
            rewritten(
                "SELECT x FROM pg_catalog.unnest(a) x WHERE x LIKE 'pg/_%' ESCAPE '/'",
                Target::Read
            ),
            "SELECT x FROM UNNEST(a) x (x) WHERE x LIKE __like_escape('pg/_%', '/')"
        );
        assert_eq!(
            rewritten(
                "SELECT '{a,b}'::text[], NULL::pg_catalog.text",
                Target::Read
            ),
            "SELECT CAST(ARRAY['a', 'b'] AS TEXT[]), CAST(NULL AS TEXT)"
        );
    }
}
