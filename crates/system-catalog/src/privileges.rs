//! Who may do what to the catalog's relations and schemas, as PostgreSQL decides it: a
//! superuser holds every privilege, an owner may always grant, and any other role holds what
//! the object's ACL grants it or `PUBLIC`.
//!
//! The system relations and schemas have the ACLs PostgreSQL 15's initdb gives them: every
//! role may read a system relation (but not those that hold passwords or statistics) and use
//! a system schema.

use std::sync::Arc;

use repr::{AclItem, Ownership, Privileges, Recurse, Role, BOOTSTRAP_ROLE_OID, PUBLIC_ROLE};

use crate::session::SessionInfo;
use crate::snapshot::CatalogSnapshot;
use crate::PG_CATALOG;

/// The privileges a column has (`has_column_privilege` asks only of these).
pub(crate) fn column_privileges() -> Privileges {
    Privileges::SELECT | Privileges::INSERT | Privileges::UPDATE | Privileges::REFERENCES
}

/// The `pg_catalog` relations PostgreSQL 15 revokes from `PUBLIC`: only superusers read them.
const OWNER_ONLY_SYSTEM_RELATIONS: [&str; 11] = [
    "pg_authid",
    "pg_config",
    "pg_file_settings",
    "pg_hba_file_rules",
    "pg_largeobject",
    "pg_shadow",
    "pg_shmem_allocations",
    "pg_statistic",
    "pg_statistic_ext_data",
    "pg_subscription",
    "pg_user_mapping",
];

/// A role as privilege checks see it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct RoleRights {
    /// Its OID; `None` for `PUBLIC` (what a role the catalog does not know holds).
    pub oid: Option<u32>,
    /// Whether it is a superuser, which holds every privilege.
    pub superuser: bool,
    /// Its OID and those of the roles whose privileges it has (through memberships, as
    /// INHERIT allows).
    held: Arc<[u32]>,
    /// Its OID and those of every role it is a member of, directly or not.
    member_of: Arc<[u32]>,
}

impl RoleRights {
    /// `PUBLIC`: what every role holds.
    pub fn public() -> RoleRights {
        RoleRights {
            oid: None,
            superuser: false,
            held: Arc::from([PUBLIC_ROLE]),
            member_of: Arc::from([PUBLIC_ROLE]),
        }
    }

    /// The rights of role `oid` among `roles`.
    pub fn of<'a>(oid: u32, roles: impl IntoIterator<Item = &'a Role> + Clone) -> RoleRights {
        RoleRights {
            oid: Some(oid),
            superuser: roles
                .clone()
                .into_iter()
                .any(|r| r.oid == oid && r.superuser),
            held: repr::memberships(roles.clone(), oid, Recurse::Privileges).into(),
            member_of: repr::memberships(roles, oid, Recurse::Membership).into(),
        }
    }

    /// Whether it has the privileges of role `role` (`pg_has_role(role, 'USAGE')`): it is
    /// that role, a member of it that inherits its privileges, or a superuser.
    pub fn acts_as(&self, role: u32) -> bool {
        self.superuser || self.held.contains(&role)
    }

    /// Whether it is role `role` or a member of it, directly or not, or a superuser
    /// (`pg_has_role(role, 'MEMBER')`: it may `SET ROLE` to it).
    pub fn is_member_of(&self, role: u32) -> bool {
        self.superuser || self.member_of.contains(&role)
    }

    /// Whether it may grant role `role` (`pg_has_role(role, 'MEMBER WITH ADMIN OPTION')`): a
    /// superuser may; another role if it, or a role it is a member of, holds `role` WITH
    /// ADMIN OPTION (`roles` are every role).
    pub fn has_admin_option(&self, role: u32, roles: &[Role]) -> bool {
        self.superuser
            || self
                .oid
                .is_some_and(|oid| repr::holds_admin_option(roles, oid, role))
    }

    /// The privileges it holds on an object with every privilege in `all`.
    pub fn privileges(&self, ownership: &Ownership, all: Privileges) -> Privileges {
        if self.superuser {
            return all;
        }
        ownership.privileges_of_any(&self.held, all)
    }

    /// The privileges it may grant on an object with every privilege in `all` (an owner
    /// always may).
    pub fn grant_options(&self, ownership: &Ownership, all: Privileges) -> Privileges {
        if self.acts_as(ownership.owner) {
            return all;
        }
        ownership.grant_options_of_any(&self.held, all)
    }

    /// Whether it owns the object or holds any of `wanted` on it: what `information_schema`
    /// asks before it shows an object.
    pub fn may_see(&self, ownership: &Ownership, all: Privileges, wanted: Privileges) -> bool {
        self.acts_as(ownership.owner)
            || !self
                .privileges(ownership, all)
                .intersection(wanted)
                .is_empty()
    }
}

impl CatalogSnapshot {
    /// The rights of the role with this OID (a role the catalog does not know is no
    /// superuser but still holds what `PUBLIC` does, as in PostgreSQL).
    pub(crate) fn role_rights(&self, oid: u32) -> RoleRights {
        RoleRights::of(oid, self.roles.iter())
    }

    /// The rights of the role called `name`, if there is one.
    pub(crate) fn rights_of_role_named(&self, name: &str) -> Option<RoleRights> {
        let role = self.roles.iter().find(|r| r.name == name)?;
        Some(RoleRights::of(role.oid, self.roles.iter()))
    }

    /// The owner and ACL of the relation or index `oid`.
    pub(crate) fn class_ownership(&self, oid: u32) -> Option<Ownership> {
        if let Some(relation) = self.relation(oid) {
            return Some(relation.ownership.clone());
        }
        self.index(oid).map(|index| Ownership::new(index.owner))
    }

    /// The name `aclitem` output and ownership columns give role `oid`: its name, or its OID
    /// when no role has it.
    pub(crate) fn acl_role_name(&self, oid: u32) -> String {
        self.role_name(oid).unwrap_or_else(|| oid.to_string())
    }

    /// An object's ACL as an `aclitem[]` column holds it, each entry as PostgreSQL prints
    /// it (`alice=arwdDxt/alice`); `None`, NULL, while the default applies.
    pub(crate) fn acl_items(&self, ownership: &Ownership) -> Option<Vec<String>> {
        let acl = ownership.acl.as_ref()?;
        let item_text = |item: &AclItem| {
            let single = Ownership {
                owner: ownership.owner,
                acl: Some(vec![*item]),
            };
            let text = single
                .acl_text(|oid| self.acl_role_name(oid))
                .unwrap_or_default();
            text.strip_prefix('{')
                .and_then(|t| t.strip_suffix('}'))
                .unwrap_or(&text)
                .to_string()
        };
        Some(acl.iter().map(item_text).collect())
    }

    /// The owner's name, as `pg_get_userbyid` gives it (`unknown (OID=n)` for no role).
    pub(crate) fn owner_name(&self, oid: u32) -> String {
        self.role_name(oid)
            .unwrap_or_else(|| format!("unknown (OID={oid})"))
    }
}

impl SessionInfo {
    /// The rights of the session's role; a session whose role the catalog does not know
    /// holds only what `PUBLIC` does.
    pub(crate) fn rights(&self, snapshot: &CatalogSnapshot) -> RoleRights {
        snapshot
            .rights_of_role_named(&self.user)
            .unwrap_or_else(RoleRights::public)
    }
}

/// An object of the bootstrap superuser on which every role holds `privilege`.
fn granted_to_public(all: Privileges, privilege: Privileges) -> Ownership {
    let mut ownership = Ownership::new(BOOTSTRAP_ROLE_OID);
    ownership.grant(all, PUBLIC_ROLE, BOOTSTRAP_ROLE_OID, privilege, false);
    ownership
}

/// Whether the system relation `name` (in `schema`, or unqualified) is one only superusers
/// may read.
pub fn is_superuser_only_relation(schema: Option<&str>, name: &str) -> bool {
    schema.is_none_or(|schema| schema == PG_CATALOG) && OWNER_ONLY_SYSTEM_RELATIONS.contains(&name)
}

/// The owner and ACL of a system relation: every role may read it
/// (`{fluxion=arwdDxt/fluxion,=r/fluxion}`) unless PostgreSQL keeps it from them.
pub(crate) fn system_relation_ownership(schema: &str, name: &str) -> Ownership {
    if schema == PG_CATALOG && OWNER_ONLY_SYSTEM_RELATIONS.contains(&name) {
        return Ownership::new(BOOTSTRAP_ROLE_OID);
    }
    granted_to_public(Privileges::ALL_ON_RELATION, Privileges::SELECT)
}

/// The owner and ACL of a system schema: every role may use it
/// (`{fluxion=UC/fluxion,=U/fluxion}`), but for `pg_toast`, which only its owner may.
pub(crate) fn system_schema_ownership(name: &str) -> Ownership {
    if name == "pg_toast" {
        return Ownership::new(BOOTSTRAP_ROLE_OID);
    }
    granted_to_public(Privileges::ALL_ON_SCHEMA, Privileges::USAGE)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: u32 = 16_384;
    const READERS: u32 = 16_385;

    fn role(oid: u32, superuser: bool) -> Role {
        crate::test_catalog::role(oid, &format!("r{oid}"), superuser)
    }

    #[test]
    fn a_member_holds_what_its_roles_hold_unless_it_does_not_inherit() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(BOOTSTRAP_ROLE_OID);
        table.grant(all, READERS, BOOTSTRAP_ROLE_OID, Privileges::SELECT, false);
        let mut alice = role(ALICE, false);
        alice.member_of.push(repr::RoleMembership {
            role: READERS,
            grantor: BOOTSTRAP_ROLE_OID,
            admin_option: false,
        });
        let roles = [alice.clone(), role(READERS, false)];
        let rights = RoleRights::of(ALICE, &roles);
        assert_eq!(rights.privileges(&table, all), Privileges::SELECT);
        assert!(rights.acts_as(READERS) && rights.is_member_of(READERS));
        alice.inherit = false;
        let roles = [alice, role(READERS, false)];
        let rights = RoleRights::of(ALICE, &roles);
        assert_eq!(rights.privileges(&table, all), Privileges::NONE);
        assert!(!rights.acts_as(READERS) && rights.is_member_of(READERS));
    }

    #[test]
    fn a_superuser_holds_everything_and_others_what_is_granted() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(BOOTSTRAP_ROLE_OID);
        let roles = [role(BOOTSTRAP_ROLE_OID + 1, true), role(ALICE, false)];
        let superuser = RoleRights::of(BOOTSTRAP_ROLE_OID + 1, &roles);
        let alice = RoleRights::of(ALICE, &roles);
        assert_eq!(superuser.privileges(&table, all), all);
        assert!(!alice.may_see(&table, all, all));
        table.grant(
            all,
            PUBLIC_ROLE,
            BOOTSTRAP_ROLE_OID,
            Privileges::SELECT,
            false,
        );
        assert_eq!(alice.privileges(&table, all), Privileges::SELECT);
        assert_eq!(alice.grant_options(&table, all), Privileges::NONE);
        assert_eq!(
            RoleRights::public().privileges(&table, all),
            Privileges::SELECT
        );
    }

    #[test]
    fn an_owner_may_grant_what_it_revoked_from_itself() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(ALICE);
        table.revoke(all, ALICE, ALICE, all, false);
        let alice = RoleRights::of(ALICE, &[role(ALICE, false)]);
        assert_eq!(alice.privileges(&table, all), Privileges::NONE);
        assert_eq!(alice.grant_options(&table, all), all);
        assert!(alice.may_see(&table, all, all));
    }

    #[test]
    fn system_relations_are_readable_but_for_the_secret_ones() {
        let public = RoleRights::public();
        let all = Privileges::ALL_ON_RELATION;
        let pg_class = system_relation_ownership(PG_CATALOG, "pg_class");
        let pg_authid = system_relation_ownership(PG_CATALOG, "pg_authid");
        assert_eq!(public.privileges(&pg_class, all), Privileges::SELECT);
        assert_eq!(public.privileges(&pg_authid, all), Privileges::NONE);
    }
}
