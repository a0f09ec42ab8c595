//! Default privileges (`ALTER DEFAULT PRIVILEGES`), as PostgreSQL 15 has them: what a role's
//! new tables, views, materialized views, sources and schemas are granted when it creates
//! them, so that a BI role can read every relation a loader creates from now on.
//!
//! An entry belongs to a role and a kind of object (`r` for relations, `n` for schemas),
//! for objects created in any schema or in one schema. An entry for any schema replaces the
//! built-in default (the owner holds every privilege), so it can also take privileges away;
//! an entry for one schema only adds to it. Entries are kept durably, each under
//! [`DEFAULT_PRIVILEGES_KEY`]`/role/kind/schema`, as its owner and ACL.

use repr::{AclItem, ItemKind, Ownership, Recurse};
use sql::{DefaultObjects, DefaultPrivilegesChange, PrivilegeAction};

use crate::catalog::{read, write};
use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::grants::wanted_privileges;
use crate::privileges::all_privileges;
use crate::response::ExecuteResponse;
use crate::session::Session;

/// The prefix of the durable keys of default privileges.
const DEFAULT_PRIVILEGES_KEY: &str = "default_privileges";

/// What an entry is for: its role, the schema (`None`: any) and the kind of object (`r`
/// relations, `n` schemas, as `pg_default_acl.defaclobjtype`).
pub(crate) type DefaultAclKey = (u32, Option<String>, char);

impl Coordinator {
    /// Loads the entries kept durably (at startup).
    pub(crate) fn load_default_privileges(&self) -> Result<(), CoordError> {
        let stored = self
            .durable
            .settings_with_prefix(&format!("{DEFAULT_PRIVILEGES_KEY}/"))?;
        let mut catalog = write(&self.catalog);
        for (key, json) in stored {
            let entry = parse_key(&key).ok_or_else(|| {
                CoordError::Internal(format!("bad key of default privileges: {key}"))
            })?;
            let ownership: Ownership = serde_json::from_str(&json).map_err(|e| {
                CoordError::Internal(format!("default privileges {key} do not decode: {e}"))
            })?;
            catalog.default_privileges.insert(entry, ownership);
        }
        Ok(())
    }

    /// `ALTER DEFAULT PRIVILEGES`.
    pub(crate) async fn alter_default_privileges(
        &self,
        session: &mut Session,
        change: DefaultPrivilegesChange,
    ) -> Result<ExecuteResponse, CoordError> {
        session.refuse_in_block("ALTER DEFAULT PRIVILEGES")?;
        let _sequencer = self.lock_sequencer().await?;
        let acting = self.acting_role(session)?;
        let member_of = self.roles.memberships(acting.oid, Recurse::Membership);
        let mut roles = Vec::new();
        for spec in &change.for_roles {
            let role = self.role_oid(spec, session)?;
            if !acting.superuser && !member_of.contains(&role) {
                return Err(CoordError::insufficient_privilege(
                    "permission denied to change default privileges",
                ));
            }
            roles.push(role);
        }
        if roles.is_empty() {
            roles.push(acting.oid);
        }
        let (kind, object_type) = match change.objects {
            DefaultObjects::Tables => (ItemKind::Table, 'r'),
            DefaultObjects::Schemas => (ItemKind::Schema, 'n'),
        };
        if object_type == 'n' && !change.schemas.is_empty() {
            return Err(CoordError::InvalidGrant(
                "cannot use IN SCHEMA clause when using GRANT/REVOKE ON SCHEMAS".into(),
            ));
        }
        for schema in &change.schemas {
            if read(&self.catalog).schema_ownership(schema).is_none() {
                return Err(CoordError::unknown("schema", schema));
            }
        }
        let all = all_privileges(kind);
        let wanted = wanted_privileges(change.privileges.as_deref(), kind, "relation")?;
        let grantees = change
            .grantees
            .iter()
            .map(|spec| self.role_oid(spec, session))
            .collect::<Result<Vec<u32>, CoordError>>()?;
        let schemas: Vec<Option<String>> = if change.schemas.is_empty() {
            vec![None]
        } else {
            change.schemas.iter().cloned().map(Some).collect()
        };
        for role in roles {
            for schema in &schemas {
                let key = (role, schema.clone(), object_type);
                let built_in = built_in_entry(role, schema.is_some());
                let mut entry = read(&self.catalog)
                    .default_privileges
                    .get(&key)
                    .cloned()
                    .unwrap_or_else(|| built_in.clone());
                for grantee in &grantees {
                    match change.action {
                        PrivilegeAction::Grant { with_grant_option } => {
                            entry.grant(all, *grantee, role, wanted, with_grant_option)
                        }
                        PrivilegeAction::Revoke {
                            grant_option_only, ..
                        } => entry.revoke(all, *grantee, role, wanted, grant_option_only),
                    }
                }
                let unchanged = entry.effective_acl(all) == built_in.effective_acl(all);
                self.store_default_privileges(key, (!unchanged).then_some(entry))?;
            }
        }
        Ok(ExecuteResponse::command("ALTER DEFAULT PRIVILEGES"))
    }

    /// The ACL a new item `id` of `kind`, created by role `owner` in schema `schema`, gets
    /// from default privileges (`None`: the built-in default).
    pub(crate) fn default_acl(
        &self,
        owner: u32,
        schema: &str,
        kind: ItemKind,
    ) -> Option<Vec<AclItem>> {
        let object_type = match kind {
            ItemKind::Table | ItemKind::View | ItemKind::MaterializedView | ItemKind::Source => 'r',
            ItemKind::Schema => 'n',
            ItemKind::Index | ItemKind::Sink | ItemKind::Subscription => return None,
        };
        let catalog = read(&self.catalog);
        let entries = &catalog.default_privileges;
        let for_any_schema = entries.get(&(owner, None, object_type));
        let for_this_schema = (object_type == 'r')
            .then(|| entries.get(&(owner, Some(schema.to_string()), object_type)))
            .flatten();
        if for_any_schema.is_none() && for_this_schema.is_none() {
            return None;
        }
        let all = all_privileges(kind);
        let mut acl = for_any_schema
            .cloned()
            .unwrap_or_else(|| built_in_entry(owner, false));
        for item in for_this_schema
            .and_then(|entry| entry.acl.as_ref())
            .into_iter()
            .flatten()
        {
            let grantable = item.grant_options;
            acl.grant(
                all,
                item.grantee,
                owner,
                item.privileges.without(grantable),
                false,
            );
            acl.grant(all, item.grantee, owner, grantable, true);
        }
        let acl = acl.effective_acl(all);
        (acl != built_in_entry(owner, false).effective_acl(all)).then_some(acl)
    }

    /// Keeps `entry` for `key` durably and in the catalog (`None`: removes it).
    fn store_default_privileges(
        &self,
        key: DefaultAclKey,
        entry: Option<Ownership>,
    ) -> Result<(), CoordError> {
        let (role, schema, object_type) = &key;
        let durable_key = format!(
            "{DEFAULT_PRIVILEGES_KEY}/{role}/{object_type}/{}",
            schema.as_deref().unwrap_or_default()
        );
        // Durable first, outside the catalog's lock, which every query's planning takes.
        match entry {
            Some(entry) => {
                let json = serde_json::to_string(&entry)
                    .map_err(|e| CoordError::Internal(format!("encode default privileges: {e}")))?;
                self.durable.set_setting(&durable_key, &json)?;
                write(&self.catalog).default_privileges.insert(key, entry);
            }
            None => {
                self.durable.delete_setting(&durable_key)?;
                write(&self.catalog).default_privileges.remove(&key);
            }
        }
        Ok(())
    }

    /// The default privileges role `role` owns or is granted something by, as PostgreSQL
    /// lists them when it refuses to drop the role.
    pub(crate) fn default_privileges_depending_on(&self, role: u32) -> Vec<String> {
        let catalog = read(&self.catalog);
        catalog
            .default_privileges
            .iter()
            .filter(|((owner, _, _), entry)| *owner == role || entry.mentions(role))
            .map(|((owner, schema, object_type), _)| {
                let what = if *owner == role {
                    "owner of"
                } else {
                    "privileges for"
                };
                let kind = if *object_type == 'n' {
                    "schemas"
                } else {
                    "relations"
                };
                let owner = self.role_name(*owner);
                let schema = schema
                    .as_ref()
                    .map(|schema| format!(" in schema {schema}"))
                    .unwrap_or_default();
                format!("{what} default privileges on new {kind} belonging to role {owner}{schema}")
            })
            .collect()
    }
}

/// What an entry holds before anything is granted or revoked: for any schema, the built-in
/// default (the owner holds every privilege); for one schema, nothing.
fn built_in_entry(owner: u32, in_one_schema: bool) -> Ownership {
    Ownership {
        owner,
        acl: in_one_schema.then(Vec::new),
    }
}

/// The entry a durable key names.
fn parse_key(key: &str) -> Option<DefaultAclKey> {
    let rest = key
        .strip_prefix(DEFAULT_PRIVILEGES_KEY)?
        .strip_prefix('/')?;
    let mut parts = rest.splitn(3, '/');
    let role = parts.next()?.parse().ok()?;
    let object_type = parts.next()?.chars().next()?;
    let schema = parts.next()?;
    Some((
        role,
        (!schema.is_empty()).then(|| schema.to_string()),
        object_type,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durable_keys_name_their_entries() {
        assert_eq!(
            parse_key("default_privileges/16384/r/sales/2024"),
            Some((16384, Some("sales/2024".to_string()), 'r'))
        );
        assert_eq!(parse_key("default_privileges/10/n/"), Some((10, None, 'n')));
        assert_eq!(parse_key("default_privileges/x/r/"), None);
    }

    use repr::Privileges;

    #[test]
    fn an_entry_for_one_schema_starts_empty() {
        let all = Privileges::ALL_ON_RELATION;
        assert!(built_in_entry(10, true).effective_acl(all).is_empty());
        assert_eq!(built_in_entry(10, false).effective_acl(all).len(), 1);
    }
}
