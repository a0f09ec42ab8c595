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
/// refuses them), but a cycle would end here all the same.
pub fn memberships<'a>(
    roles: impl IntoIterator<Item = &'a Role>,
    start: u32,
    recurse: Recurse,
) -> Vec<u32> {
    let by_oid: std::collections::HashMap<u32, &Role> =
        roles.into_iter().map(|role| (role.oid, role)).collect();
    let mut found = vec![start];
    let mut next = 0;
    while let Some(&oid) = found.get(next) {
        next += 1;
        let Some(role) = by_oid.get(&oid) else {
            continue;
        };
        if recurse == Recurse::Privileges && !role.inherit {
            continue;
        }
        for membership in &role.member_of {
            if !found.contains(&membership.role) {
                found.push(membership.role);
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn role(oid: u32, inherit: bool, member_of: &[u32]) -> Role {
        Role {
            oid,
            name: format!("r{oid}"),
            superuser: false,
            inherit,
            create_role: false,
            create_db: false,
            can_login: true,
            replication: false,
            bypass_rls: false,
            connection_limit: -1,
            password: None,
            valid_until: None,
            member_of: member_of
                .iter()
                .map(|&role| RoleMembership {
                    role,
                    grantor: BOOTSTRAP_ROLE_OID,
                    admin_option: false,
                })
                .collect(),
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
}
