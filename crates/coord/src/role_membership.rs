//! Membership in roles, as PostgreSQL 15 has it: `GRANT role TO member [WITH ADMIN OPTION]`,
//! `REVOKE [ADMIN OPTION FOR] role FROM member`, and `SET ROLE`.
//!
//! A member has the privileges of the roles it belongs to, through any chain of memberships,
//! unless it is `NOINHERIT` (then it must `SET ROLE` to use them); it may `SET ROLE` to any
//! of them either way. Superuser status is never inherited. Memberships are kept with the
//! member ([`repr::Role::member_of`]) and shown in `pg_auth_members`.

use repr::{Recurse, Role, RoleMembership};
use sql::{CreateRole, RoleMembershipChange, NO_ROLE};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;

impl Coordinator {
    /// `GRANT role TO member` / `REVOKE role FROM member`.
    pub(crate) fn change_role_membership(
        &self,
        session: &mut Session,
        change: RoleMembershipChange,
    ) -> Result<ExecuteResponse, CoordError> {
        session.refuse_in_block(change.tag())?;
        let acting = self.acting_role(session)?;
        let grantor = match &change.granted_by {
            Some(spec) => {
                let grantor = self.role_oid(spec, session)?;
                if grantor != acting.oid && !acting.superuser {
                    return Err(CoordError::insufficient_privilege(
                        "must be superuser to set grantor",
                    ));
                }
                grantor
            }
            None => acting.oid,
        };
        let members = change
            .members
            .iter()
            .map(|spec| match self.role_oid(spec, session)? {
                repr::PUBLIC_ROLE => Err(CoordError::unknown("role", "public")),
                oid => self.role_by_oid(oid),
            })
            .collect::<Result<Vec<Role>, CoordError>>()?;
        for name in &change.roles {
            let role = self
                .roles
                .get(name)
                .ok_or_else(|| CoordError::unknown("role", name))?;
            self.check_admin_of(&acting, &role)?;
            for member in &members {
                // Read again: an earlier grant of this statement may have changed it.
                let member = self.role_by_oid(member.oid)?;
                if change.grant {
                    self.add_member(session, &role, member, grantor, change.admin_option)?;
                } else {
                    self.remove_member(session, &role, member, change.admin_option)?;
                }
            }
        }
        Ok(ExecuteResponse::command(change.tag()))
    }

    /// `SET ROLE name` (`none` or `default`: the session's user again): the session's user
    /// must be a superuser or a member of the role.
    pub(crate) fn set_role(&self, session: &mut Session, name: &str) -> Result<(), CoordError> {
        let role = if name.eq_ignore_ascii_case(NO_ROLE) || name.eq_ignore_ascii_case("default") {
            None
        } else {
            let role = self.roles.get(name).ok_or_else(|| {
                sql::SqlError::InvalidParameterValue(format!("role \"{name}\" does not exist"))
            })?;
            let user = self
                .roles
                .get(session.user())
                .ok_or_else(|| crate::roles::role_gone(session))?;
            if !user.superuser
                && !self
                    .roles
                    .memberships(user.oid, Recurse::Membership)
                    .contains(&role.oid)
            {
                return Err(CoordError::insufficient_privilege(format!(
                    "permission denied to set role \"{name}\""
                )));
            }
            Some(role.name)
        };
        session.set_role(role);
        let superuser = self
            .roles
            .get(session.current_user())
            .is_some_and(|role| role.superuser);
        session.set_variable("is_superuser", if superuser { "on" } else { "off" }.into());
        Ok(())
    }

    /// The roles a `CREATE ROLE … IN ROLE` makes the new role a member of, once checked
    /// (before anything is created) that they and its `ROLE` and `ADMIN` members exist and
    /// that `acting` may grant them.
    pub(crate) fn roles_granted_on_create(
        &self,
        acting: &Role,
        create: &CreateRole,
    ) -> Result<Vec<Role>, CoordError> {
        for name in create.members.iter().chain(&create.admins) {
            if self.roles.get(name).is_none() {
                return Err(CoordError::unknown("role", name));
            }
        }
        create
            .in_roles
            .iter()
            .map(|name| {
                let role = self
                    .roles
                    .get(name)
                    .ok_or_else(|| CoordError::unknown("role", name))?;
                self.check_admin_of(acting, &role)?;
                Ok(role)
            })
            .collect()
    }

    /// The memberships `CREATE ROLE` names for `role`, just created: in `in_roles`, and of
    /// its `ROLE` and `ADMIN` members.
    pub(crate) fn grant_on_create(
        &self,
        session: &mut Session,
        acting: &Role,
        role: Role,
        in_roles: Vec<Role>,
        create: &CreateRole,
    ) -> Result<(), CoordError> {
        for parent in &in_roles {
            let member = self.role_by_oid(role.oid)?;
            self.add_member(session, parent, member, acting.oid, false)?;
        }
        let members = create.members.iter().map(|name| (name, false));
        for (name, admin_option) in members.chain(create.admins.iter().map(|name| (name, true))) {
            let member = self
                .roles
                .get(name)
                .ok_or_else(|| CoordError::unknown("role", name))?;
            self.add_member(session, &role, member, acting.oid, admin_option)?;
        }
        Ok(())
    }

    /// Takes every role's membership in role `oid`, just dropped, away.
    pub(crate) fn forget_memberships_in(&self, oid: u32) -> Result<(), CoordError> {
        for mut member in self.roles.all() {
            let before = member.member_of.len();
            member.member_of.retain(|membership| membership.role != oid);
            if member.member_of.len() != before {
                let name = member.name.clone();
                self.store_role(Some(&name), member)?;
            }
        }
        Ok(())
    }

    /// Whether `acting` may grant and revoke `role`: a superuser may any role; a role with
    /// CREATEROLE any but superusers; any other role only those it holds WITH ADMIN OPTION
    /// (itself or through a role whose membership it has).
    fn check_admin_of(&self, acting: &Role, role: &Role) -> Result<(), CoordError> {
        if acting.superuser {
            return Ok(());
        }
        if role.superuser {
            return Err(CoordError::insufficient_privilege(
                "must be superuser to alter superusers",
            ));
        }
        if acting.create_role {
            return Ok(());
        }
        if self.roles.holds_admin_option(acting.oid, role.oid) {
            Ok(())
        } else {
            Err(CoordError::insufficient_privilege(format!(
                "must have admin option on role \"{}\"",
                role.name
            )))
        }
    }

    /// Makes `member` a member of `role` (or gives it the admin option it lacked).
    fn add_member(
        &self,
        session: &mut Session,
        role: &Role,
        mut member: Role,
        grantor: u32,
        admin_option: bool,
    ) -> Result<(), CoordError> {
        // A role that is already a member of the new member would close a loop.
        if self
            .roles
            .memberships(role.oid, Recurse::Membership)
            .contains(&member.oid)
        {
            return Err(CoordError::InvalidGrant(format!(
                "role \"{}\" is a member of role \"{}\"",
                role.name, member.name
            )));
        }
        match member.member_of.iter_mut().find(|m| m.role == role.oid) {
            Some(existing) if existing.admin_option || !admin_option => {
                session.notice(
                    "NOTICE",
                    "00000",
                    format!(
                        "role \"{}\" is already a member of role \"{}\"",
                        member.name, role.name
                    ),
                );
                return Ok(());
            }
            Some(existing) => {
                existing.admin_option = true;
                existing.grantor = grantor;
            }
            None => member.member_of.push(RoleMembership {
                role: role.oid,
                grantor,
                admin_option,
            }),
        }
        let name = member.name.clone();
        self.store_role(Some(&name), member)
    }

    /// Ends `member`'s membership in `role` (only its admin option with `admin_option_only`).
    fn remove_member(
        &self,
        session: &mut Session,
        role: &Role,
        mut member: Role,
        admin_option_only: bool,
    ) -> Result<(), CoordError> {
        let Some(index) = member.member_of.iter().position(|m| m.role == role.oid) else {
            session.notice(
                "WARNING",
                "01000",
                format!(
                    "role \"{}\" is not a member of role \"{}\"",
                    member.name, role.name
                ),
            );
            return Ok(());
        };
        if admin_option_only {
            member.member_of[index].admin_option = false;
        } else {
            member.member_of.remove(index);
        }
        let name = member.name.clone();
        self.store_role(Some(&name), member)
    }

    /// The role with OID `oid`.
    fn role_by_oid(&self, oid: u32) -> Result<Role, CoordError> {
        self.roles
            .by_oid(oid)
            .ok_or_else(|| CoordError::unknown("role", oid.to_string()))
    }
}
