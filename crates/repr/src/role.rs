//! Roles, as the catalog keeps them and the system catalogs show them.

use serde::{Deserialize, Serialize};

/// The bootstrap superuser's OID (PostgreSQL's `BOOTSTRAP_SUPERUSERID`): it owns the
/// database, the `public` schema and what was created before roles existed.
pub const BOOTSTRAP_ROLE_OID: u32 = 10;

/// A role: a name that may own objects and log in, its attributes (`pg_authid`), and the
/// verifier of its password, never the password itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    /// Its OID (`pg_authid.oid`), never reused.
    pub oid: u32,
    /// Its name.
    pub name: String,
    /// `SUPERUSER`.
    pub superuser: bool,
    /// `INHERIT`.
    pub inherit: bool,
    /// `CREATEROLE`.
    pub create_role: bool,
    /// `CREATEDB`.
    pub create_db: bool,
    /// `LOGIN`.
    pub can_login: bool,
    /// `REPLICATION`.
    pub replication: bool,
    /// `BYPASSRLS`.
    pub bypass_rls: bool,
    /// `CONNECTION LIMIT` (−1: none).
    pub connection_limit: i32,
    /// The password's verifier (`SCRAM-SHA-256$…`), if the role has a password.
    pub password: Option<String>,
    /// `VALID UNTIL`, in microseconds since the Unix epoch (`None`: forever).
    pub valid_until: Option<i64>,
    /// The roles it was granted (`GRANT role TO it`), as `pg_auth_members` lists them.
    #[serde(default)]
    pub member_of: Vec<RoleMembership>,
}

impl Role {
    /// A role as `CREATE ROLE name` makes it with no options: `INHERIT`, no connection
    /// limit, no password, a member of no role, and no other attribute.
    pub fn new(oid: u32, name: &str) -> Role {
        Role {
            oid,
            name: name.to_string(),
            superuser: false,
            inherit: true,
            create_role: false,
            create_db: false,
            can_login: false,
            replication: false,
            bypass_rls: false,
            connection_limit: -1,
            password: None,
            valid_until: None,
            member_of: Vec::new(),
        }
    }

    /// Whether it inherits what the roles it is a member of hold, as `recurse` asks.
    fn follows(&self, recurse: Recurse) -> bool {
        recurse == Recurse::Membership || self.inherit
    }
}

/// A role's membership in another role: one row of `pg_auth_members`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleMembership {
    /// The OID of the role it is a member of.
    pub role: u32,
    /// The OID of the role that granted it.
    pub grantor: u32,
    /// `WITH ADMIN OPTION`: the member may grant the role to others and revoke it.
    pub admin_option: bool,
}

/// How far [`memberships`] follows memberships.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Recurse {
    /// Through the roles whose privileges a role has: a role that is `NOINHERIT` holds only
    /// its own, so its memberships are not followed (what privilege checks and ownership use).
    Privileges,
    /// Through every membership (what `SET ROLE` and `pg_has_role(…, 'MEMBER')` use).
    Membership,
}

/// Role `start` and every role it is a member of, directly or through others, as `recurse`
/// says, among `roles`; each once, `start` first. Memberships cannot form cycles (GRANT
/// refuses them), but a cycle would end here all the same. Asked before every statement of
/// a role that is not a superuser: a role that is a member of none costs one look.
pub fn memberships<'a>(
    roles: impl IntoIterator<Item = &'a Role> + Clone,
    start: u32,
    recurse: Recurse,
) -> Vec<u32> {
    let alone = roles
        .clone()
        .into_iter()
        .find(|role| role.oid == start)
        .is_none_or(|role| role.member_of.is_empty() || !role.follows(recurse));
    if alone {
        return vec![start];
    }
    let by_oid: std::collections::HashMap<u32, &Role> =
        roles.into_iter().map(|role| (role.oid, role)).collect();
    let mut found = vec![start];
    let mut next = 0;
    while let Some(&oid) = found.get(next) {
        next += 1;
        let Some(role) = by_oid.get(&oid).filter(|role| role.follows(recurse)) else {
            continue;
        };
        for membership in &role.member_of {
            if !found.contains(&membership.role) {
                found.push(membership.role);
            }
        }
    }
    found
}

/// Whether role `member`, or a role it is a member of (directly or not), holds role `role`
/// WITH ADMIN OPTION, among `roles`: whether it may grant `role` (superusers and CREATEROLE
/// aside). A role never holds itself so.
pub fn holds_admin_option<'a>(
    roles: impl IntoIterator<Item = &'a Role> + Clone,
    member: u32,
    role: u32,
) -> bool {
    let member_of = memberships(roles.clone(), member, Recurse::Membership);
    member != role
        && roles.into_iter().any(|holder| {
            member_of.contains(&holder.oid)
                && holder
                    .member_of
                    .iter()
                    .any(|m| m.role == role && m.admin_option)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(oid: u32, inherit: bool, member_of: &[u32]) -> Role {
        Role {
            inherit,
            member_of: member_of
                .iter()
                .map(|&role| RoleMembership {
                    role,
                    grantor: BOOTSTRAP_ROLE_OID,
                    admin_option: role == 3,
                })
                .collect(),
            ..Role::new(oid, &format!("r{oid}"))
        }
    }

    #[test]
    fn privileges_stop_at_a_role_that_does_not_inherit() {
        // 1 is in 2, 2 (NOINHERIT) is in 3, 3 is in 1: a cycle, which must still end.
        let roles = [
            role(1, true, &[2]),
            role(2, false, &[3]),
            role(3, true, &[1]),
        ];
        assert_eq!(memberships(&roles, 1, Recurse::Privileges), [1, 2]);
        assert_eq!(memberships(&roles, 1, Recurse::Membership), [1, 2, 3]);
        assert_eq!(memberships(&roles, 2, Recurse::Privileges), [2]);
        assert_eq!(memberships(&roles, 9, Recurse::Membership), [9]);
    }

    #[test]
    fn the_admin_option_is_held_through_memberships() {
        // 1 is in 2, which holds 3 WITH ADMIN OPTION.
        let roles = [
            role(1, false, &[2]),
            role(2, true, &[3]),
            role(3, true, &[]),
        ];
        assert!(holds_admin_option(&roles, 2, 3));
        assert!(
            holds_admin_option(&roles, 1, 3),
            "through 2, whatever INHERIT says"
        );
        assert!(!holds_admin_option(&roles, 3, 3));
        assert!(!holds_admin_option(&roles, 1, 2));
    }
}
