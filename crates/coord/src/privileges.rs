//! Privileges, checked before a statement runs: a role reads and writes only the relations
//! it was granted (or owns), creates only in schemas it may create in, and changes or drops
//! only what it owns; superusers pass every check, as in PostgreSQL. A view reads its
//! relations with its owner's privileges, so a role granted a view needs nothing on what the
//! view reads. System relations are readable by every role, but the bad and late records of
//! sources (`fluxion_catalog.source_errors`, `late_events`) show a role only those of the
//! sources and tables it may read, and only superusers maintain dataflows over them.

use std::collections::HashSet;
use std::sync::{Arc, OnceLock, RwLock};

use repr::{GlobalId, ItemKind, Ownership, Privileges, Recurse};
use sql::{Access, ObjectKind, ObjectRef, Statement};

use crate::catalog::{Catalog, Item};
use crate::coordinator::Coordinator;
use crate::ddl::item_kind;
use crate::error::CoordError;
use crate::roles::{role_gone, Roles};
use crate::session::Session;

/// The durable key of the `public` schema's owner and ACL (it is not a catalog item).
pub(crate) const PUBLIC_SCHEMA_KEY: &str = "privileges/public";

/// The privileges a kind of object has (none for indexes, sinks and subscriptions, which
/// only their owner uses).
pub(crate) fn all_privileges(kind: ItemKind) -> Privileges {
    match kind {
        ItemKind::Table | ItemKind::View | ItemKind::MaterializedView | ItemKind::Source => {
            Privileges::ALL_ON_RELATION
        }
        ItemKind::Schema => Privileges::ALL_ON_SCHEMA,
        ItemKind::Index | ItemKind::Sink | ItemKind::Subscription => Privileges::NONE,
    }
}

/// 42501 for a privilege lacking on `item` (`permission denied for table t`).
fn denied(item: &Item) -> CoordError {
    CoordError::insufficient_privilege(format!(
        "permission denied for {} {}",
        item.kind.name(),
        item.name
    ))
}

/// 42501 for a change only `item`'s owner may make (`must be owner of table t`).
pub(crate) fn not_owner(kind: ItemKind, name: &str) -> CoordError {
    CoordError::insufficient_privilege(format!("must be owner of {} {name}", kind.name()))
}

impl Coordinator {
    /// Checks that the session's role may run `statement` (42501 if not).
    pub(crate) fn check_access(
        &self,
        session: &Session,
        statement: &Statement,
    ) -> Result<(), CoordError> {
        let role = self.roles.oid_and_superuser(session.current_user());
        if matches!(role, Some((_, true))) {
            return Ok(());
        }
        let access = statement.access();
        let role = match role {
            Some((oid, _)) => oid,
            // A session whose role was dropped or renamed still runs what touches nothing
            // (ROLLBACK, SET, SELECT 1).
            None if access == Access::default() => return Ok(()),
            None => return Err(role_gone(session)),
        };
        if access.server_files {
            return Err(CoordError::insufficient_privilege(
                "permission denied to use the file connector: only superusers may read or \
                 write files on the server",
            ));
        }
        let search_path = session.search_path();
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let check = Checker {
            catalog: &catalog,
            held: self.roles.memberships(role, Recurse::Privileges),
            roles: &self.roles,
            search_path: &search_path,
        };
        for name in &access.reads {
            check.relation(name, Privileges::SELECT)?;
        }
        for (name, privileges) in &access.writes {
            check.relation(name, *privileges)?;
        }
        for (kind, name) in &access.owned {
            check.owns(*kind, name)?;
        }
        if let Some((kind, name)) = &access.creates {
            check.may_create(*kind, name)?;
        }
        Ok(())
    }

    /// Which sources' rows of `fluxion_catalog.source_errors` and `late_events` the session's
    /// role may see (`None`: every one, for a superuser). Bad and late records hold upstream
    /// data, which the role may only see where it may see the relation they were meant for.
    pub(crate) fn source_visibility(&self, session: &Session) -> Option<Arc<SourceVisibility>> {
        let role = match self.roles.oid_and_superuser(session.current_user()) {
            Some((_, true)) => return None,
            Some((oid, false)) => Some(oid),
            None => None,
        };
        Some(Arc::new(SourceVisibility {
            catalog: self.catalog.clone(),
            roles: self.roles.clone(),
            role,
            visible: OnceLock::new(),
        }))
    }

    /// Refuses a role that is not a superuser a dataflow (a materialized view, a subscription,
    /// a sink) that reads `fluxion_catalog.source_errors` or `late_events`: it would hold
    /// every source's bad and late records, where a query shows the role only those of the
    /// sources it may read (see [`Self::source_visibility`]).
    pub(crate) fn check_maintained_reads(
        &self,
        session: &Session,
        plan: &plan::Plan,
    ) -> Result<(), CoordError> {
        if matches!(
            self.roles.oid_and_superuser(session.current_user()),
            Some((_, true))
        ) {
            return Ok(());
        }
        let records = [
            (
                system_catalog::SOURCE_ERRORS,
                system_catalog::SOURCE_ERRORS_NAME,
            ),
            (
                system_catalog::LATE_EVENTS,
                system_catalog::LATE_EVENTS_NAME,
            ),
        ];
        let imports = plan.imports();
        match records.iter().find(|(id, _)| imports.contains(id)) {
            Some((_, name)) => Err(CoordError::insufficient_privilege(format!(
                "permission denied to maintain a dataflow over {name}: only superusers may; \
                 SELECT from it shows the records of the sources you may read"
            ))),
            None => Ok(()),
        }
    }

    /// The owner and ACL of item `id` (of the `public` schema for `None`).
    pub(crate) fn ownership(&self, id: Option<GlobalId>) -> Ownership {
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        match id {
            Some(id) => catalog.ownership(id).clone(),
            None => catalog.public_schema.clone(),
        }
    }
}

/// The sources and tables whose bad and late records one role may see, by name: those it may
/// read. Worked out the first time a query reads such a record, as most queries never do.
#[derive(Debug)]
pub(crate) struct SourceVisibility {
    catalog: Arc<RwLock<Catalog>>,
    roles: Roles,
    /// The role (`None`: it was dropped, and sees none).
    role: Option<u32>,
    visible: OnceLock<HashSet<String>>,
}

impl SourceVisibility {
    /// Whether the role may see the records of source (or table) `name`.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.visible.get_or_init(|| self.readable()).contains(name)
    }

    /// The names of the sources and tables the role may read.
    fn readable(&self) -> HashSet<String> {
        let Some(role) = self.role else {
            return HashSet::new();
        };
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let held = self.roles.memberships(role, Recurse::Privileges);
        let check = Checker {
            catalog: &catalog,
            held,
            roles: &self.roles,
            search_path: &[],
        };
        catalog
            .items()
            .filter(|item| matches!(item.kind, ItemKind::Source | ItemKind::Table))
            .filter(|item| {
                check.on_schema(&item.schema, Privileges::USAGE).is_ok()
                    && check.holds(item, &check.held, Privileges::SELECT).is_ok()
            })
            .map(|item| item.name.clone())
            .collect()
    }
}

/// The checks of one statement, for one role.
struct Checker<'a> {
    catalog: &'a Catalog,
    /// The acting role's OID and those of the roles whose privileges it has.
    held: Vec<u32>,
    roles: &'a Roles,
    search_path: &'a [String],
}

impl Checker<'_> {
    /// `name`, if it is a relation of the catalog: the role must hold every privilege of
    /// `needed` on it and USAGE on its schema; a view's owner must hold SELECT on what the
    /// view reads. Names the catalog does not have (system relations, mistakes planning
    /// reports) pass.
    fn relation(&self, name: &ObjectRef, needed: Privileges) -> Result<(), CoordError> {
        let Some(item) = self.catalog.resolve(name, self.search_path) else {
            if system_catalog::is_superuser_only_relation(name.schema.as_deref(), &name.name) {
                return Err(CoordError::insufficient_privilege(format!(
                    "permission denied for table {}",
                    name.name
                )));
            }
            return Ok(());
        };
        self.on_schema(&item.schema, Privileges::USAGE)?;
        self.holds(item, &self.held, needed)?;
        if item.kind == ItemKind::View {
            self.view_reads(item, 0)?;
        }
        Ok(())
    }

    /// Whether a role with the privileges of `roles` holds `needed` on `item` (on an item
    /// without privileges, a durable subscription, whether it owns it).
    fn holds(&self, item: &Item, roles: &[u32], needed: Privileges) -> Result<(), CoordError> {
        let ownership = self.catalog.ownership(item.id);
        let all = all_privileges(item.kind);
        let held = if all.is_empty() {
            roles.contains(&ownership.owner)
        } else {
            ownership.privileges_of_any(roles, all).contains(needed)
        };
        if held {
            Ok(())
        } else {
            Err(denied(item))
        }
    }

    /// Whether the owner of `view` holds SELECT on every relation the view reads directly,
    /// and so on through the views among them.
    fn view_reads(&self, view: &Item, depth: usize) -> Result<(), CoordError> {
        const MAX_VIEW_DEPTH: usize = 100;
        if depth > MAX_VIEW_DEPTH {
            return Err(CoordError::insufficient_privilege(format!(
                "views nest deeper than {MAX_VIEW_DEPTH} levels under view {}",
                view.name
            )));
        }
        let owner = self.catalog.ownership(view.id).owner;
        let owner_is_superuser = self.roles.is_superuser(owner);
        let owner_holds = self.roles.memberships(owner, Recurse::Privileges);
        for read in self.catalog.direct_reads(view) {
            if !owner_is_superuser {
                self.holds(read, &owner_holds, Privileges::SELECT)?;
            }
            if read.kind == ItemKind::View {
                self.view_reads(read, depth + 1)?;
            }
        }
        Ok(())
    }

    /// Whether the role holds `needed` on schema `schema` (42501 if not; a schema that does
    /// not exist passes, for the statement to report).
    fn on_schema(&self, schema: &str, needed: Privileges) -> Result<(), CoordError> {
        let Some(ownership) = self.catalog.schema_ownership(schema) else {
            return Ok(());
        };
        if ownership
            .privileges_of_any(&self.held, Privileges::ALL_ON_SCHEMA)
            .contains(needed)
        {
            return Ok(());
        }
        Err(CoordError::insufficient_privilege(format!(
            "permission denied for schema {schema}"
        )))
    }

    /// The object `name` of `kind` (any relation for `None`), if it exists, must be the
    /// role's.
    fn owns(&self, kind: Option<ObjectKind>, name: &ObjectRef) -> Result<(), CoordError> {
        let item = match kind.map(item_kind) {
            Some(ItemKind::Schema) => self.catalog.schema_item(&name.name),
            _ => self.catalog.resolve(name, self.search_path),
        };
        let Some(item) = item else {
            return Ok(());
        };
        if self.held.contains(&self.catalog.ownership(item.id).owner) {
            return Ok(());
        }
        Err(not_owner(item.kind, &item.name))
    }

    /// Whether the role may create an object of `kind` called `name`: CREATE on its schema
    /// (CREATE on the database for a schema, which only its owner holds).
    fn may_create(&self, kind: ObjectKind, name: &ObjectRef) -> Result<(), CoordError> {
        if kind == ObjectKind::Schema {
            return Err(CoordError::insufficient_privilege(format!(
                "permission denied for database {}",
                sql::session::DATABASE
            )));
        }
        // A name no schema can take is the statement's own error to report.
        match self.catalog.schema_for_new_item(name, self.search_path) {
            Ok(schema) => self.on_schema(&schema, Privileges::CREATE),
            Err(_) => Ok(()),
        }
    }
}
