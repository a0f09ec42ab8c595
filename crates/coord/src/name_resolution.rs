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
    CopySource, ObjectName, ObjectNamePart, Query, Statement, TableFactor, TableObject, VisitMut,
    VisitorMut,
};
use storage::ItemKind;

use crate::catalog::{read, Item};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::naming::{object_ref, ObjectRef};
use crate::session::Session;
use crate::system_catalog;

impl Coordinator {
    /// The relation, view or index `name` refers to for this session.
    pub(crate) fn resolve_item(
        &self,
        session: &Session,
        name: &ObjectName,
    ) -> Result<Item, CoordError> {
        let name = object_ref(name)?;
        let catalog = read(&self.catalog);
        if let Some(schema) = &name.schema {
            if !catalog.has_schema(schema) && !system_catalog::is_system_schema(schema) {
                return Err(CoordError::UnknownObject {
                    kind: "schema",
                    name: schema.clone(),
                });
            }
        }
        catalog
            .resolve(&name, &session.search_path())
            .cloned()
            .ok_or(CoordError::UnknownObject {
                kind: "relation",
                name: name.name,
            })
    }

    /// The schema a new item called `name` is created in, and its name there: the named
    /// schema, else the first schema of the search path that exists.
    pub(crate) fn name_for_new_item(
        &self,
        session: &Session,
        name: &ObjectName,
    ) -> Result<ObjectRef, CoordError> {
        let name = object_ref(name)?;
        let catalog = read(&self.catalog);
        let schema = match name.schema {
            Some(schema) if system_catalog::is_system_schema(&schema) => {
                return Err(CoordError::InvalidStatement(format!(
                    "permission denied to create \"{schema}.{}\": system schemas are read-only",
                    name.name
                )))
            }
            Some(schema) if catalog.has_schema(&schema) => schema,
            Some(schema) => {
                return Err(CoordError::UnknownObject {
                    kind: "schema",
                    name: schema,
                })
            }
            None => session
                .search_path()
                .into_iter()
                .find(|s| catalog.has_schema(s))
                .ok_or(CoordError::NoSchemaSelected)?,
        };
        Ok(ObjectRef {
            schema: Some(schema),
            name: name.name,
        })
    }

    /// Qualifies the relations `statement` reads and writes for this session's search path.
    pub(crate) fn qualify_statement(&self, session: &Session, statement: &mut Statement) {
        let search_path = session.search_path();
        let catalog = read(&self.catalog);
        let resolve = |name: &str| -> Option<String> {
            if system_catalog::is_pg_catalog_relation(name) {
                return Some(system_catalog::PG_CATALOG.to_string());
            }
            search_path
                .iter()
                .find(|schema| {
                    catalog
                        .by_name(schema, name)
                        .is_some_and(|item| item.kind != ItemKind::Index)
                })
                .cloned()
        };
        qualify_relations(statement, &resolve);
    }
}

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
                self.0.insert(crate::naming::fold_ident(&cte.alias.name));
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
        let bare = crate::naming::fold_ident(ident);
        if self.ctes.contains(&bare) {
            return;
        }
        if let Some(schema) = (self.resolve)(&bare) {
            name.0.insert(
                0,
                ObjectNamePart::Identifier(crate::naming::sql_ident(&schema)),
            );
        }
    }
}

impl VisitorMut for Qualifier<'_> {
    type Break = ();

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
