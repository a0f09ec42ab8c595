//! Name resolution: which schema an unqualified relation name means.
//!
//! Postgres looks an unqualified name up in `pg_catalog` first, then in each schema of the
//! session's `search_path` in turn. DataFusion only knows one default schema, so before a
//! statement is planned every relation it reads or writes is qualified with the schema the
//! search path picks ([`qualify_relations`]). Stored SQL (views) is kept qualified, so it
//! means the same under any search path and after a restart.

use std::collections::HashSet;
use std::ops::ControlFlow;

use datafusion::sql::sqlparser::ast::{
    CopySource, ObjectName, ObjectNamePart, Query, Select, SelectItem,
    SelectItemQualifiedWildcardKind, Statement, TableFactor, TableObject, VisitMut, VisitorMut,
};

use crate::names::{fold_ident, sql_ident};

/// Qualifies every unqualified relation `statement` reads or writes with the schema `resolve`
/// finds for it (names `resolve` does not know, and names of CTEs, stay as they are).
pub(crate) fn qualify_relations(
    statement: &mut Statement,
    resolve: &dyn Fn(&str) -> Option<String>,
) {
    let reads_relations = matches!(
        statement,
        Statement::Query(_)
            | Statement::Insert(_)
            | Statement::Update(_)
            | Statement::Delete(_)
            | Statement::Copy { .. }
            | Statement::Explain { .. }
            | Statement::CreateView(_)
            | Statement::Declare { .. }
    );
    if !reads_relations {
        return;
    }
    let mut ctes = HashSet::new();
    let _ = statement.visit(&mut CteNames(&mut ctes));
    let mut qualifier = Qualifier { resolve, ctes };
    match statement {
        Statement::Insert(insert) => {
            if let TableObject::TableName(name) = &mut insert.table {
                qualifier.qualify(name);
            }
        }
        Statement::Copy {
            source: CopySource::Table { table_name, .. },
            ..
        } => qualifier.qualify(table_name),
        _ => {}
    }
    let _ = statement.visit(&mut qualifier);
}

/// Collects the names of every CTE a statement defines.
struct CteNames<'a>(&'a mut HashSet<String>);

impl VisitorMut for CteNames<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            for cte in &with.cte_tables {
                self.0.insert(fold_ident(&cte.alias.name));
            }
        }
        ControlFlow::Continue(())
    }
}

struct Qualifier<'a> {
    resolve: &'a dyn Fn(&str) -> Option<String>,
    ctes: HashSet<String>,
}

impl Qualifier<'_> {
    fn qualify(&self, name: &mut ObjectName) {
        let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else {
            return;
        };
        let bare = fold_ident(ident);
        if self.ctes.contains(&bare) {
            return;
        }
        if let Some(schema) = (self.resolve)(&bare) {
            name.0
                .insert(0, ObjectNamePart::Identifier(sql_ident(&schema)));
        }
    }
}

impl VisitorMut for Qualifier<'_> {
    type Break = ();

    /// `t.*` over an unaliased relation `t` names it as it will be qualified (`public.t.*`):
    /// DataFusion matches a wildcard's qualifier to the relation's whole name. (Columns,
    /// `t.c`, already match by the relation's last name.)
    fn pre_visit_select(&mut self, select: &mut Select) -> ControlFlow<()> {
        let factors = select.from.iter().flat_map(|from| {
            std::iter::once(&from.relation).chain(from.joins.iter().map(|j| &j.relation))
        });
        let mut unaliased: Vec<ObjectName> = Vec::new();
        for factor in factors {
            if let TableFactor::Table {
                name,
                alias: None,
                args: None,
                ..
            } = factor
            {
                let mut qualified = name.clone();
                self.qualify(&mut qualified);
                unaliased.push(qualified);
            }
        }
        for item in &mut select.projection {
            let SelectItem::QualifiedWildcard(SelectItemQualifiedWildcardKind::ObjectName(name), _) =
                item
            else {
                continue;
            };
            let [ObjectNamePart::Identifier(ident)] = name.0.as_slice() else {
                continue;
            };
            let bare = fold_ident(ident);
            let relation = unaliased.iter().find(|qualified| {
                matches!(qualified.0.last(), Some(ObjectNamePart::Identifier(last)) if fold_ident(last) == bare)
            });
            if let Some(relation) = relation {
                *name = relation.clone();
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table {
            name, args: None, ..
        } = factor
        {
            self.qualify(name);
        }
        ControlFlow::Continue(())
    }
}
