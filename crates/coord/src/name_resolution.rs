//! Name resolution: the catalog item a name means for a session (through its search path),
//! and the schema a new item is created in.

use sql::ObjectRef;
use system_catalog::is_system_schema;

use crate::catalog::{read, Item};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::session::Session;

impl Coordinator {
    /// The relation, view or index `name` refers to for this session.
    pub(crate) fn resolve_item(
        &self,
        session: &Session,
        name: &ObjectRef,
    ) -> Result<Item, CoordError> {
        let catalog = read(&self.catalog);
        if let Some(schema) = &name.schema {
            if !catalog.has_schema(schema) && !is_system_schema(schema) {
                return Err(CoordError::unknown("schema", schema.clone()));
            }
        }
        catalog
            .resolve(name, &session.search_path())
            .cloned()
            .ok_or_else(|| CoordError::unknown("relation", name.name.clone()))
    }

    /// The relation `name` refers to, or with `if_exists` `None` (and PostgreSQL's notice)
    /// when there is none, for `ALTER … IF EXISTS`.
    pub(crate) fn resolve_item_if_exists(
        &self,
        session: &mut Session,
        name: &ObjectRef,
        if_exists: bool,
    ) -> Result<Option<Item>, CoordError> {
        match self.resolve_item(session, name) {
            Ok(item) => Ok(Some(item)),
            Err(_) if if_exists => {
                session.notice(
                    "NOTICE",
                    "00000",
                    format!("relation \"{}\" does not exist, skipping", name.name),
                );
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The schema a new item called `name` is created in, and its name there: the named
    /// schema, else the first schema of the search path that exists.
    pub(crate) fn name_for_new_item(
        &self,
        session: &Session,
        name: &ObjectRef,
    ) -> Result<ObjectRef, CoordError> {
        let schema = read(&self.catalog).schema_for_new_item(name, &session.search_path())?;
        Ok(ObjectRef {
            schema: Some(schema),
            name: name.name.clone(),
        })
    }
}
