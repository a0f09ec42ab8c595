//! Owners and access privileges, as PostgreSQL keeps them: an object's owner holds every
//! privilege of its kind, and its access control list (`relacl`, `nspacl`) records what was
//! granted to whom, by whom, and whether the grantee may grant it on.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::BOOTSTRAP_ROLE_OID;

/// The OID that stands for `PUBLIC`, every role, in an ACL.
pub const PUBLIC_ROLE: u32 = 0;

/// A set of privileges, one bit each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Privileges(u16);

impl Privileges {
    /// `INSERT` (`a`).
    pub const INSERT: Privileges = Privileges(1);
    /// `SELECT` (`r`).
    pub const SELECT: Privileges = Privileges(1 << 1);
    /// `UPDATE` (`w`).
    pub const UPDATE: Privileges = Privileges(1 << 2);
    /// `DELETE` (`d`).
    pub const DELETE: Privileges = Privileges(1 << 3);
    /// `TRUNCATE` (`D`).
    pub const TRUNCATE: Privileges = Privileges(1 << 4);
    /// `REFERENCES` (`x`).
    pub const REFERENCES: Privileges = Privileges(1 << 5);
    /// `TRIGGER` (`t`).
    pub const TRIGGER: Privileges = Privileges(1 << 6);
    /// `USAGE` (`U`).
    pub const USAGE: Privileges = Privileges(1 << 7);
    /// `CREATE` (`C`).
    pub const CREATE: Privileges = Privileges(1 << 8);

    /// No privilege.
    pub const NONE: Privileges = Privileges(0);
    /// Every privilege a table, view, materialized view or source has (`arwdDxt`).
    pub const ALL_ON_RELATION: Privileges = Privileges(0b111_1111);
    /// Every privilege a schema has (`UC`).
    pub const ALL_ON_SCHEMA: Privileges = Privileges(0b1_1000_0000);

    /// Every privilege, with its ACL letter and its SQL name, in PostgreSQL's order.
    pub const NAMED: [(Privileges, char, &'static str); 9] = [
        (Privileges::INSERT, 'a', "INSERT"),
        (Privileges::SELECT, 'r', "SELECT"),
        (Privileges::UPDATE, 'w', "UPDATE"),
        (Privileges::DELETE, 'd', "DELETE"),
        (Privileges::TRUNCATE, 'D', "TRUNCATE"),
        (Privileges::REFERENCES, 'x', "REFERENCES"),
        (Privileges::TRIGGER, 't', "TRIGGER"),
        (Privileges::USAGE, 'U', "USAGE"),
        (Privileges::CREATE, 'C', "CREATE"),
    ];

    /// The privilege an SQL name (`select`, `SELECT`) names.
    pub fn from_name(name: &str) -> Option<Privileges> {
        Self::NAMED
            .iter()
            .find(|(_, _, sql)| sql.eq_ignore_ascii_case(name))
            .map(|(privilege, _, _)| *privilege)
    }

    /// Whether every privilege of `other` is in this set.
    pub fn contains(self, other: Privileges) -> bool {
        self.0 & other.0 == other.0
    }

    /// Whether the set is empty.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// The privileges in both sets.
    pub fn intersection(self, other: Privileges) -> Privileges {
        Privileges(self.0 & other.0)
    }

    /// The privileges of this set that are not in `other`.
    pub fn without(self, other: Privileges) -> Privileges {
        Privileges(self.0 & !other.0)
    }

    /// Each privilege of the set on its own, in PostgreSQL's order.
    pub fn each(self) -> impl Iterator<Item = (Privileges, char, &'static str)> {
        Self::NAMED
            .into_iter()
            .filter(move |(privilege, _, _)| self.contains(*privilege))
    }
}

impl std::ops::BitOr for Privileges {
    type Output = Privileges;

    fn bitor(self, other: Privileges) -> Privileges {
        Privileges(self.0 | other.0)
    }
}

impl std::ops::BitOrAssign for Privileges {
    fn bitor_assign(&mut self, other: Privileges) {
        self.0 |= other.0;
    }
}

/// One entry of an ACL: what `grantor` granted `grantee` (`aclitem`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AclItem {
    /// The role granted to ([`PUBLIC_ROLE`]: every role).
    pub grantee: u32,
    /// The role that granted.
    pub grantor: u32,
    /// The privileges granted.
    pub privileges: Privileges,
    /// Those of them the grantee may grant on (`WITH GRANT OPTION`).
    pub grant_options: Privileges,
}

/// An object's owner and access control list.
///
/// `acl` is `None` until the first GRANT or REVOKE, as `relacl` is NULL in PostgreSQL: then
/// the owner holds every privilege (and, for the `public` schema, every role holds USAGE).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ownership {
    /// The owner's OID.
    pub owner: u32,
    /// The ACL, if one was ever set.
    pub acl: Option<Vec<AclItem>>,
}

/// What was created before privileges existed: the bootstrap superuser's, default ACL.
impl Default for Ownership {
    fn default() -> Ownership {
        Ownership::new(BOOTSTRAP_ROLE_OID)
    }
}

impl Ownership {
    /// An object newly created by `owner`, with the default ACL.
    pub const fn new(owner: u32) -> Ownership {
        Ownership { owner, acl: None }
    }

    /// The built-in `public` schema as PostgreSQL 15 creates it: owned by the database's
    /// owner (here the bootstrap superuser), which holds USAGE and CREATE, and every role
    /// may use it (`{fluxion=UC/fluxion,=U/fluxion}`) but not create in it.
    pub fn public_schema() -> Ownership {
        let owner = BOOTSTRAP_ROLE_OID;
        let mut ownership = Ownership::new(owner);
        ownership.grant(
            Privileges::ALL_ON_SCHEMA,
            PUBLIC_ROLE,
            owner,
            Privileges::USAGE,
            false,
        );
        ownership
    }

    /// The ACL in force: the one set, or the default of an object with `all` privileges
    /// (the owner holds them all; it may grant them as the owner, not by grant options).
    pub fn effective_acl(&self, all: Privileges) -> Vec<AclItem> {
        self.acl.clone().unwrap_or_else(|| {
            vec![AclItem {
                grantee: self.owner,
                grantor: self.owner,
                privileges: all,
                grant_options: Privileges::NONE,
            }]
        })
    }

    /// The privileges `role` holds, directly or through `PUBLIC` (ownership aside: an owner
    /// that revoked its own privileges does not hold them).
    pub fn privileges_of(&self, role: u32, all: Privileges) -> Privileges {
        self.held(role, all, |item| item.privileges)
    }

    /// The privileges `role` may grant on.
    pub fn grant_options_of(&self, role: u32, all: Privileges) -> Privileges {
        self.held(role, all, |item| item.grant_options)
    }

    /// The privileges any of `roles` holds (a role and those whose privileges it has,
    /// see [`crate::memberships`]).
    pub fn privileges_of_any(&self, roles: &[u32], all: Privileges) -> Privileges {
        roles.iter().fold(Privileges::NONE, |held, role| {
            held | self.privileges_of(*role, all)
        })
    }

    /// The privileges any of `roles` may grant on.
    pub fn grant_options_of_any(&self, roles: &[u32], all: Privileges) -> Privileges {
        roles.iter().fold(Privileges::NONE, |held, role| {
            held | self.grant_options_of(*role, all)
        })
    }

    fn held(
        &self,
        role: u32,
        all: Privileges,
        part: impl Fn(&AclItem) -> Privileges,
    ) -> Privileges {
        let mut held = Privileges::NONE;
        for item in self.effective_acl(all) {
            if item.grantee == role || item.grantee == PUBLIC_ROLE {
                held |= part(&item);
            }
        }
        held
    }

    /// Grants `privileges` (and with `grant_option`, the right to grant them on) to
    /// `grantee`, by `grantor`; entries are kept one per grantee and grantor, in order.
    pub fn grant(
        &mut self,
        all: Privileges,
        grantee: u32,
        grantor: u32,
        privileges: Privileges,
        grant_option: bool,
    ) {
        let mut acl = self.effective_acl(all);
        let options = if grant_option {
            privileges
        } else {
            Privileges::NONE
        };
        match acl
            .iter_mut()
            .find(|item| item.grantee == grantee && item.grantor == grantor)
        {
            Some(item) => {
                item.privileges |= privileges;
                item.grant_options |= options;
            }
            None => acl.push(AclItem {
                grantee,
                grantor,
                privileges,
                grant_options: options,
            }),
        }
        self.acl = Some(acl);
    }

    /// Revokes `privileges` that `grantor` granted `grantee` (with `grant_option_only`, only
    /// the right to grant them on); entries left empty go.
    pub fn revoke(
        &mut self,
        all: Privileges,
        grantee: u32,
        grantor: u32,
        privileges: Privileges,
        grant_option_only: bool,
    ) {
        let mut acl = self.effective_acl(all);
        for item in acl
            .iter_mut()
            .filter(|item| item.grantee == grantee && item.grantor == grantor)
        {
            item.grant_options = item.grant_options.without(privileges);
            if !grant_option_only {
                item.privileges = item.privileges.without(privileges);
            }
        }
        acl.retain(|item| !item.privileges.is_empty());
        self.acl = Some(acl);
    }

    /// Gives the object to `new_owner`: as in PostgreSQL, what the old owner granted or held
    /// is now granted or held by the new one.
    pub fn change_owner(&mut self, new_owner: u32) {
        let old_owner = self.owner;
        if let Some(acl) = &mut self.acl {
            for item in acl.iter_mut() {
                if item.grantee == old_owner {
                    item.grantee = new_owner;
                }
                if item.grantor == old_owner {
                    item.grantor = new_owner;
                }
            }
        }
        self.owner = new_owner;
    }

    /// Whether `role` owns the object or appears in its ACL (so dropping the role would
    /// leave something depending on it).
    pub fn mentions(&self, role: u32) -> bool {
        self.owner == role
            || self
                .acl
                .iter()
                .flatten()
                .any(|item| item.grantee == role || item.grantor == role)
    }

    /// The ACL as PostgreSQL prints an `aclitem[]` (`{alice=arwdDxt/alice,=r/alice}`), with
    /// `name` giving each role's name; `None` while the default applies (NULL).
    pub fn acl_text(&self, name: impl Fn(u32) -> String) -> Option<String> {
        let acl = self.acl.as_ref()?;
        let items: Vec<String> = acl
            .iter()
            .map(|item| AclItemText { item, name: &name }.to_string())
            .collect();
        Some(format!("{{{}}}", items.join(",")))
    }
}

/// An ACL entry printed as PostgreSQL prints an `aclitem`.
struct AclItemText<'a, F> {
    item: &'a AclItem,
    name: &'a F,
}

impl<F: Fn(u32) -> String> fmt::Display for AclItemText<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.item.grantee != PUBLIC_ROLE {
            write!(f, "{}", quoted_role((self.name)(self.item.grantee)))?;
        }
        f.write_str("=")?;
        for (privilege, letter, _) in self.item.privileges.each() {
            write!(f, "{letter}")?;
            if self.item.grant_options.contains(privilege) {
                f.write_str("*")?;
            }
        }
        write!(f, "/{}", quoted_role((self.name)(self.item.grantor)))
    }
}

/// A role name as `aclitem` output quotes it: in double quotes when it holds anything but
/// letters, digits and underscores.
fn quoted_role(name: String) -> String {
    if name.chars().all(|c| c.is_alphanumeric() || c == '_') {
        name
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: u32 = 16384;
    const BOB: u32 = 16385;

    fn name(oid: u32) -> String {
        match oid {
            ALICE => "alice".into(),
            BOB => "bob smith".into(),
            _ => oid.to_string(),
        }
    }

    #[test]
    fn the_owner_holds_everything_until_an_acl_is_set() {
        let table = Ownership::new(ALICE);
        let all = Privileges::ALL_ON_RELATION;
        assert_eq!(table.privileges_of(ALICE, all), all);
        assert_eq!(table.privileges_of(BOB, all), Privileges::NONE);
        assert_eq!(table.acl_text(name), None);
    }

    #[test]
    fn grants_print_as_postgres_prints_them() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(ALICE);
        table.grant(all, BOB, ALICE, Privileges::SELECT, true);
        table.grant(all, PUBLIC_ROLE, ALICE, Privileges::SELECT, false);
        assert_eq!(
            table.acl_text(name).unwrap(),
            "{alice=arwdDxt/alice,\"bob smith\"=r*/alice,=r/alice}"
        );
        assert_eq!(table.privileges_of(BOB, all), Privileges::SELECT);
        assert_eq!(table.grant_options_of(BOB, all), Privileges::SELECT);
    }

    #[test]
    fn revoking_removes_privileges_and_empty_entries() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(ALICE);
        table.grant(
            all,
            BOB,
            ALICE,
            Privileges::SELECT | Privileges::INSERT,
            true,
        );
        table.revoke(all, BOB, ALICE, Privileges::INSERT, true);
        assert_eq!(
            table.acl_text(name).unwrap(),
            "{alice=arwdDxt/alice,\"bob smith\"=ar*/alice}"
        );
        table.revoke(all, BOB, ALICE, all, false);
        assert_eq!(table.acl_text(name).unwrap(), "{alice=arwdDxt/alice}");
        table.revoke(all, ALICE, ALICE, all, false);
        assert_eq!(table.acl_text(name).unwrap(), "{}");
        assert_eq!(table.privileges_of(ALICE, all), Privileges::NONE);
    }

    #[test]
    fn a_new_owner_takes_over_what_the_old_one_granted() {
        let all = Privileges::ALL_ON_RELATION;
        let mut table = Ownership::new(ALICE);
        table.grant(all, PUBLIC_ROLE, ALICE, Privileges::SELECT, false);
        table.change_owner(BOB);
        assert_eq!(
            table.acl_text(name).unwrap(),
            "{\"bob smith\"=arwdDxt/\"bob smith\",=r/\"bob smith\"}"
        );
        assert!(!table.mentions(ALICE));
        assert!(table.mentions(BOB));
    }
}
