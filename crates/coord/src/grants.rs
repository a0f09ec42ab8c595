//! `GRANT`, `REVOKE` and `ALTER … OWNER TO`: changes to owners and access control lists,
//! kept with the items in the durable catalog (the `public` schema's under its own key) and
//! undone by ROLLBACK like other definitions.

use repr::{GlobalId, ItemKind, Ownership, Privileges, Recurse, Role, PUBLIC_ROLE};
use sql::session::DEFAULT_SCHEMA;
use sql::{AlterOwner, ObjectKind, PrivilegeAction, PrivilegeChange, PrivilegeTarget, RoleSpec};
use storage::CatalogOp;

use crate::catalog::{read, write, Item};
use crate::coordinator::Coordinator;
use crate::ddl::item_kind;
use crate::error::CoordError;
use crate::privileges::{all_privileges, not_owner, PUBLIC_SCHEMA_KEY};
use crate::response::ExecuteResponse;
use crate::session::Session;
use crate::transactional_ddl::DdlChange;

/// An object whose owner or ACL a statement changes: an item, or the `public` schema.
#[derive(Clone, Debug)]
struct Target {
    /// The item (`None`: the `public` schema).
    id: Option<GlobalId>,
    kind: ItemKind,
    name: String,
}

impl Target {
    fn public_schema() -> Target {
        Target {
            id: None,
            kind: ItemKind::Schema,
            name: DEFAULT_SCHEMA.into(),
        }
    }

    fn of(item: &Item) -> Target {
        Target {
            id: Some(item.id),
            kind: item.kind,
            name: item.name.clone(),
        }
    }
}

fn is_relation(kind: ItemKind) -> bool {
    matches!(
        kind,
        ItemKind::Table | ItemKind::View | ItemKind::MaterializedView | ItemKind::Source
    )
}

impl Coordinator {
    /// Loads the owners and ACLs of the stored items and of the `public` schema.
    pub(crate) fn load_ownership(&self, items: &[storage::CatalogItem]) -> Result<(), CoordError> {
        let public = match self.durable.get_setting(PUBLIC_SCHEMA_KEY)? {
            Some(json) => serde_json::from_str(&json).map_err(|e| {
                CoordError::Storage(format!(
                    "the public schema's privileges are unreadable: {e}"
                ))
            })?,
            None => Ownership::public_schema(),
        };
        let mut catalog = write(&self.catalog);
        catalog.public_schema = public;
        for item in items {
            catalog.set_ownership(item.id, item.ownership.clone());
        }
        Ok(())
    }

    /// `GRANT … ON … TO …` / `REVOKE … ON … FROM …`.
    pub(crate) async fn change_privileges(
        &self,
        session: &mut Session,
        change: PrivilegeChange,
    ) -> Result<ExecuteResponse, CoordError> {
        let _sequencer = self.lock_sequencer().await?;
        let acting = self.acting_role(session)?;
        let grantees = change
            .grantees
            .iter()
            .map(|grantee| self.role_oid(grantee, session))
            .collect::<Result<Vec<u32>, CoordError>>()?;
        if let Some(granted_by) = &change.granted_by {
            if self.role_oid(granted_by, session)? != acting.oid {
                return Err(CoordError::unsupported(
                    "GRANTED BY a role other than the current user",
                ));
            }
        }
        if matches!(
            change.action,
            PrivilegeAction::Grant {
                with_grant_option: true
            }
        ) && grantees.contains(&PUBLIC_ROLE)
        {
            return Err(CoordError::InvalidGrant(
                "grant options can only be granted to roles".into(),
            ));
        }
        let targets = match &change.target {
            PrivilegeTarget::Databases(names) => {
                return self.database_privileges(&change, names);
            }
            target => self.privilege_targets(session, target)?,
        };
        let mut changed = Vec::new();
        for target in targets {
            let all = all_privileges(target.kind);
            let wanted = wanted_privileges(change.privileges.as_deref(), target.kind, "table")?;
            let mut ownership = self.ownership(target.id);
            let Some((grantor, privileges)) =
                self.grantor(session, &acting, &ownership, &target, wanted, change.action)?
            else {
                continue;
            };
            for grantee in &grantees {
                match change.action {
                    PrivilegeAction::Grant { with_grant_option } => {
                        ownership.grant(all, *grantee, grantor, privileges, with_grant_option)
                    }
                    PrivilegeAction::Revoke {
                        grant_option_only,
                        cascade,
                    } => revoke(
                        &mut ownership,
                        all,
                        *grantee,
                        grantor,
                        privileges,
                        grant_option_only,
                        cascade,
                    )?,
                }
            }
            changed.push((target, ownership));
        }
        self.store_ownership(session, changed)?;
        Ok(ExecuteResponse::command(change.tag()))
    }

    /// `ALTER … OWNER TO role`.
    pub(crate) async fn alter_owner(
        &self,
        session: &mut Session,
        alter: AlterOwner,
    ) -> Result<ExecuteResponse, CoordError> {
        let _sequencer = self.lock_sequencer().await?;
        let acting = self.acting_role(session)?;
        let Some(target) = self.owned_target(session, &alter)? else {
            return Ok(ExecuteResponse::command(alter.tag()));
        };
        if target.kind == ItemKind::Index {
            session.notice(
                "WARNING",
                "42809",
                format!(
                    "cannot change owner of index \"{}\"; change the ownership of the index's \
                     table instead",
                    target.name
                ),
            );
            return Ok(ExecuteResponse::command(alter.tag()));
        }
        let new_owner = self.role_oid(&alter.new_owner, session)?;
        let mut ownership = self.ownership(target.id);
        if !acting.superuser {
            let held = self.roles.memberships(acting.oid, Recurse::Privileges);
            if !held.contains(&ownership.owner) {
                return Err(not_owner(target.kind, &target.name));
            }
            let member_of = self.roles.memberships(acting.oid, Recurse::Membership);
            if !member_of.contains(&new_owner) {
                let name = self.role_name(new_owner);
                return Err(CoordError::insufficient_privilege(format!(
                    "must be member of role \"{name}\""
                )));
            }
        }
        ownership.change_owner(new_owner);
        let mut changed = vec![(target.clone(), ownership)];
        if let Some(id) = target.id {
            let catalog = read(&self.catalog);
            for index in catalog.items().filter(|item| {
                matches!(item.details, crate::catalog::ItemDetails::Index { on } if on == id)
            }) {
                let mut ownership = catalog.ownership(index.id).clone();
                ownership.change_owner(new_owner);
                changed.push((Target::of(index), ownership));
            }
        }
        self.store_ownership(session, changed)?;
        Ok(ExecuteResponse::command(alter.tag()))
    }

    /// The roles `role` depends on: what it owns and where it holds or granted privileges
    /// (`owner of table t`, `privileges for view v`), for DROP ROLE.
    pub(crate) fn role_dependents(&self, role: u32) -> Vec<String> {
        let catalog = read(&self.catalog);
        let mut dependents = Vec::new();
        let mut describe = |kind: ItemKind, name: &str, ownership: &Ownership| {
            if ownership.owner == role {
                dependents.push(format!("owner of {} {name}", kind.name()));
            } else if ownership.mentions(role) {
                dependents.push(format!("privileges for {} {name}", kind.name()));
            }
        };
        describe(ItemKind::Schema, DEFAULT_SCHEMA, &catalog.public_schema);
        for item in catalog.items() {
            describe(item.kind, &item.name, catalog.ownership(item.id));
        }
        drop(catalog);
        dependents.extend(self.default_privileges_depending_on(role));
        dependents
    }

    /// The OID a role specification names in `session` (PUBLIC: [`PUBLIC_ROLE`]).
    pub(crate) fn role_oid(&self, spec: &RoleSpec, session: &Session) -> Result<u32, CoordError> {
        let name = match spec {
            RoleSpec::Public => return Ok(PUBLIC_ROLE),
            RoleSpec::CurrentUser => session.current_user(),
            RoleSpec::SessionUser => session.user(),
            RoleSpec::Name(name) => name,
        };
        self.roles
            .get(name)
            .map(|role| role.oid)
            .ok_or_else(|| CoordError::unknown("role", name))
    }

    /// A role's name by OID (its number if it is gone).
    pub(crate) fn role_name(&self, oid: u32) -> String {
        self.roles
            .by_oid(oid)
            .map_or_else(|| oid.to_string(), |role| role.name)
    }

    /// The objects a GRANT or REVOKE names.
    fn privilege_targets(
        &self,
        session: &Session,
        target: &PrivilegeTarget,
    ) -> Result<Vec<Target>, CoordError> {
        let catalog = read(&self.catalog);
        let schema = |name: &str| -> Result<Target, CoordError> {
            if name == DEFAULT_SCHEMA {
                return Ok(Target::public_schema());
            }
            catalog
                .schema_item(name)
                .map(Target::of)
                .ok_or_else(|| CoordError::unknown("schema", name))
        };
        match target {
            PrivilegeTarget::Relations(names) => {
                let search_path = session.search_path();
                names
                    .iter()
                    .map(|name| {
                        let item = catalog
                            .resolve(name, &search_path)
                            .ok_or_else(|| CoordError::unknown("relation", name.name.clone()))?;
                        if is_relation(item.kind) {
                            Ok(Target::of(item))
                        } else {
                            Err(CoordError::WrongObjectType {
                                name: item.name.clone(),
                                expected: "a table, view, materialized view or source",
                                hint: None,
                            })
                        }
                    })
                    .collect()
            }
            PrivilegeTarget::AllRelationsInSchemas(schemas) => {
                let mut targets = Vec::new();
                for name in schemas {
                    schema(name)?;
                    targets.extend(
                        catalog
                            .items_in(name)
                            .filter(|item| is_relation(item.kind))
                            .map(Target::of),
                    );
                }
                Ok(targets)
            }
            PrivilegeTarget::Schemas(names) => names.iter().map(|name| schema(name)).collect(),
            PrivilegeTarget::Databases(_) => Ok(Vec::new()),
        }
    }

    /// `GRANT … ON DATABASE`: every role may connect and create temporary objects already
    /// (the access rules decide who connects), so granting those changes nothing; anything
    /// else is not supported.
    fn database_privileges(
        &self,
        change: &PrivilegeChange,
        names: &[String],
    ) -> Result<ExecuteResponse, CoordError> {
        for name in names {
            if !self.database_exists(name) {
                return Err(CoordError::unknown("database", name));
            }
        }
        let harmless = matches!(change.action, PrivilegeAction::Grant { .. })
            && change.privileges.as_ref().is_some_and(|names| {
                names
                    .iter()
                    .all(|p| matches!(p.as_str(), "CONNECT" | "TEMPORARY" | "TEMP"))
            });
        if !harmless {
            return Err(CoordError::unsupported(
                "privileges on the database other than granting CONNECT and TEMPORARY, which \
                 every role holds: the access rule file decides who connects",
            ));
        }
        Ok(ExecuteResponse::command(change.tag()))
    }

    /// Who grants (or revokes) on `target`, and which of `wanted` they may: the owner for
    /// superusers and roles with the owner's privileges, otherwise the one among the acting
    /// role and those whose privileges it has that may grant the most of `wanted` (as
    /// PostgreSQL's `select_best_grantor`). `None` (with PostgreSQL's warning) when it may
    /// grant none of them.
    fn grantor(
        &self,
        session: &mut Session,
        acting: &Role,
        ownership: &Ownership,
        target: &Target,
        wanted: Privileges,
        action: PrivilegeAction,
    ) -> Result<Option<(u32, Privileges)>, CoordError> {
        let held = self.roles.memberships(acting.oid, Recurse::Privileges);
        if acting.superuser || held.contains(&ownership.owner) {
            return Ok(Some((ownership.owner, wanted)));
        }
        let all = all_privileges(target.kind);
        let count = |role: u32| {
            let options = ownership.grant_options_of(role, all).intersection(wanted);
            options.each().count()
        };
        let best = held
            .iter()
            .copied()
            .reduce(|best, role| {
                if count(role) > count(best) {
                    role
                } else {
                    best
                }
            })
            .unwrap_or(acting.oid);
        let options = ownership.grant_options_of(best, all);
        if options.is_empty() && ownership.privileges_of_any(&held, all).is_empty() {
            return Err(CoordError::insufficient_privilege(format!(
                "permission denied for {} {}",
                target.kind.name(),
                target.name
            )));
        }
        let granting = matches!(action, PrivilegeAction::Grant { .. });
        let allowed = wanted.intersection(options);
        // PostgreSQL's warning_privilege_not_granted and warning_privilege_not_revoked.
        let (code, none, some) = if granting {
            (
                "01007",
                "no privileges were granted",
                "not all privileges were granted",
            )
        } else {
            (
                "01006",
                "no privileges could be revoked",
                "not all privileges could be revoked",
            )
        };
        if allowed.is_empty() {
            session.notice("WARNING", code, format!("{none} for \"{}\"", target.name));
            return Ok(None);
        }
        if allowed != wanted {
            session.notice("WARNING", code, format!("{some} for \"{}\"", target.name));
        }
        Ok(Some((best, allowed)))
    }

    /// The object an `ALTER … OWNER TO` names; `None` (with a notice) if it is missing and
    /// the statement says IF EXISTS.
    fn owned_target(
        &self,
        session: &mut Session,
        alter: &AlterOwner,
    ) -> Result<Option<Target>, CoordError> {
        let kind = item_kind(alter.kind);
        let found = {
            let catalog = read(&self.catalog);
            if kind == ItemKind::Schema {
                if alter.name.name == DEFAULT_SCHEMA {
                    Some(Target::public_schema())
                } else {
                    catalog.schema_item(&alter.name.name).map(Target::of)
                }
            } else {
                catalog
                    .resolve(&alter.name, &session.search_path())
                    .map(Target::of)
            }
        };
        let Some(target) = found else {
            if alter.if_exists {
                session.notice(
                    "NOTICE",
                    "00000",
                    format!(
                        "{} \"{}\" does not exist, skipping",
                        kind.name(),
                        alter.name.name
                    ),
                );
                return Ok(None);
            }
            return Err(CoordError::unknown(kind.name(), alter.name.name.clone()));
        };
        let fits =
            target.kind == kind || (alter.kind == ObjectKind::Table && is_relation(target.kind));
        if !fits {
            return Err(CoordError::WrongObjectType {
                name: target.name,
                expected: kind.with_article(),
                hint: None,
            });
        }
        Ok(Some(target))
    }

    /// Stores new owners and ACLs: items as definitions of the transaction block (undone by
    /// ROLLBACK), the `public` schema under its key.
    fn store_ownership(
        &self,
        session: &mut Session,
        changed: Vec<(Target, Ownership)>,
    ) -> Result<(), CoordError> {
        let mut ops = Vec::new();
        let mut undo = Vec::new();
        let mut before = Vec::new();
        {
            let catalog = read(&self.catalog);
            for (target, ownership) in &changed {
                let Some(item) = target.id.and_then(|id| catalog.get(id)) else {
                    continue;
                };
                let stored = catalog.stored(item);
                before.push((item.id, stored.ownership.clone()));
                undo.push(CatalogOp::Put(stored.clone()));
                ops.push(CatalogOp::Put(storage::CatalogItem {
                    ownership: ownership.clone(),
                    ..stored
                }));
            }
        }
        if !ops.is_empty() {
            self.apply_ddl(session, &ops, undo, DdlChange::Ownership(before))?;
        }
        for (target, ownership) in changed {
            match target.id {
                Some(id) => write(&self.catalog).set_ownership(id, ownership),
                None => {
                    let old = self.replace_public_schema(ownership)?;
                    session.record_ddl(DdlChange::PublicSchema(old));
                }
            }
        }
        Ok(())
    }

    /// Puts back the owners and ACLs a rolled-back statement changed.
    pub(crate) fn restore_ownership(&self, before: Vec<(GlobalId, Ownership)>) {
        let mut catalog = write(&self.catalog);
        for (id, ownership) in before {
            catalog.set_ownership(id, ownership);
        }
    }

    /// Gives the `public` schema `ownership`, durably; returns what it had.
    pub(crate) fn replace_public_schema(
        &self,
        ownership: Ownership,
    ) -> Result<Ownership, CoordError> {
        let json =
            serde_json::to_string(&ownership).map_err(|e| CoordError::Internal(e.to_string()))?;
        self.durable.set_setting(PUBLIC_SCHEMA_KEY, &json)?;
        Ok(std::mem::replace(
            &mut write(&self.catalog).public_schema,
            ownership,
        ))
    }
}

/// The privileges a GRANT or REVOKE names (`None`: ALL), checked against what `target`'s
/// kind has (0LP01 `invalid privilege type USAGE for table`).
/// The privileges `names` asks for on an object of `kind` (`None`: `ALL`; 0LP01 for one
/// the kind does not have, calling a relation `relation_noun`, as PostgreSQL words it).
pub(crate) fn wanted_privileges(
    names: Option<&[String]>,
    kind: ItemKind,
    relation_noun: &str,
) -> Result<Privileges, CoordError> {
    let all = all_privileges(kind);
    let Some(names) = names else {
        return Ok(all);
    };
    let mut wanted = Privileges::NONE;
    for name in names {
        match Privileges::from_name(name) {
            Some(privilege) if all.contains(privilege) => wanted |= privilege,
            _ => {
                let kind = match kind {
                    ItemKind::Schema => "schema",
                    _ => relation_noun,
                };
                return Err(CoordError::InvalidGrant(format!(
                    "invalid privilege type {name} for {kind}"
                )));
            }
        }
    }
    Ok(wanted)
}

/// Revokes `privileges` granted by `grantor` to `grantee`; what `grantee` granted on with
/// the options revoked goes too with `cascade`, and is an error (2BP01) without it.
fn revoke(
    ownership: &mut Ownership,
    all: Privileges,
    grantee: u32,
    grantor: u32,
    privileges: Privileges,
    grant_option_only: bool,
    cascade: bool,
) -> Result<(), CoordError> {
    let options_lost = ownership
        .effective_acl(all)
        .iter()
        .filter(|item| item.grantee == grantee && item.grantor == grantor)
        .fold(Privileges::NONE, |lost, item| {
            lost | item.grant_options.intersection(privileges)
        });
    ownership.revoke(all, grantee, grantor, privileges, grant_option_only);
    if grantee == PUBLIC_ROLE || options_lost.is_empty() {
        return Ok(());
    }
    let still_grantable = ownership.grant_options_of(grantee, all);
    let orphaned = options_lost.without(still_grantable);
    let dependents: Vec<u32> = ownership
        .effective_acl(all)
        .iter()
        .filter(|item| {
            item.grantor == grantee && !item.privileges.intersection(orphaned).is_empty()
        })
        .map(|item| item.grantee)
        .collect();
    if dependents.is_empty() {
        return Ok(());
    }
    if !cascade {
        return Err(CoordError::DependentPrivileges);
    }
    for dependent in dependents {
        revoke(ownership, all, dependent, grantee, orphaned, false, true)?;
    }
    Ok(())
}
