//! Roles: `CREATE ROLE | USER`, `ALTER ROLE`, `DROP ROLE`, checked as PostgreSQL 15 checks
//! them, and what the server needs to let a client log in ([`LoginRole`]).
//!
//! Roles live in the durable catalog ([`storage::Catalog::roles`]) and, for the server and the
//! system catalogs, in memory ([`Roles`]). The bootstrap role `fluxion` (OID 10, as
//! PostgreSQL's bootstrap superuser) always exists and is always a superuser. A password is
//! kept only as its SCRAM-SHA-256 verifier ([`ScramVerifier`]). Role statements take effect at
//! once and cannot run inside a transaction block (PostgreSQL undoes them at ROLLBACK).

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use repr::{Recurse, Role, BOOTSTRAP_ROLE_OID};
use sql::{AlterRole, CreateRole, DropRole, RoleOptions};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::password_verifiers::ScramVerifier;
use crate::response::ExecuteResponse;
use crate::session::Session;

/// The bootstrap superuser: the one role of a new data directory.
pub const BOOTSTRAP_ROLE: &str = "fluxion";

/// The roles, by name, shared by the coordinator, the server and the system catalogs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Roles {
    by_name: Arc<RwLock<BTreeMap<String, Role>>>,
}

impl Roles {
    /// The roles of the durable catalog; a catalog without the bootstrap role gets it.
    pub(crate) fn load(durable: &storage::Catalog) -> Result<Roles, CoordError> {
        let mut stored = durable.roles()?;
        if !stored.iter().any(|role| role.oid == BOOTSTRAP_ROLE_OID) {
            let bootstrap = bootstrap_role();
            durable.put_role(&bootstrap)?;
            stored.push(bootstrap);
        }
        let by_name = stored.into_iter().map(|r| (r.name.clone(), r)).collect();
        Ok(Roles {
            by_name: Arc::new(RwLock::new(by_name)),
        })
    }

    /// The role called `name`.
    pub(crate) fn get(&self, name: &str) -> Option<Role> {
        self.read().get(name).cloned()
    }

    /// The OID of the role called `name` and whether it is a superuser (without copying
    /// the role: asked before every statement).
    pub(crate) fn oid_and_superuser(&self, name: &str) -> Option<(u32, bool)> {
        self.read().get(name).map(|role| (role.oid, role.superuser))
    }

    /// Whether the role with OID `oid` exists and is a superuser.
    pub(crate) fn is_superuser(&self, oid: u32) -> bool {
        self.read()
            .values()
            .any(|role| role.oid == oid && role.superuser)
    }

    /// Role `oid` and the roles it is a member of, as `recurse` says (see
    /// [`repr::memberships`]).
    pub(crate) fn memberships(&self, oid: u32, recurse: Recurse) -> Vec<u32> {
        repr::memberships(self.read().values(), oid, recurse)
    }

    /// Whether role `member` may grant role `role` by an admin option (see
    /// [`repr::holds_admin_option`]).
    pub(crate) fn holds_admin_option(&self, member: u32, role: u32) -> bool {
        repr::holds_admin_option(self.read().values(), member, role)
    }

    /// The role with OID `oid`.
    pub(crate) fn by_oid(&self, oid: u32) -> Option<Role> {
        self.read().values().find(|role| role.oid == oid).cloned()
    }

    /// Every role, by name.
    pub(crate) fn all(&self) -> Vec<Role> {
        self.read().values().cloned().collect()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<String, Role>> {
        self.by_name.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<String, Role>> {
        self.by_name.write().unwrap_or_else(|p| p.into_inner())
    }
}

fn bootstrap_role() -> Role {
    Role {
        superuser: true,
        create_role: true,
        create_db: true,
        can_login: true,
        replication: true,
        bypass_rls: true,
        ..Role::new(BOOTSTRAP_ROLE_OID, BOOTSTRAP_ROLE)
    }
}

/// What the server needs to let a client log in as a role.
#[derive(Debug, Clone)]
pub struct LoginRole {
    /// `LOGIN`.
    pub can_login: bool,
    /// The verifier of its password, if it has one (a stored value that is not a SCRAM
    /// verifier counts as none).
    pub password: Option<ScramVerifier>,
    /// Until when its password is valid (microseconds since the Unix epoch; `None`: always).
    pub valid_until: Option<i64>,
    /// The most sessions it may have at once (−1: no limit).
    pub connection_limit: i32,
}

impl LoginRole {
    /// Whether its password may still be used at `now_micros`.
    pub fn password_valid_at(&self, now_micros: i64) -> bool {
        self.valid_until.is_none_or(|until| now_micros <= until)
    }
}

impl Coordinator {
    /// The role a client asks to log in as, if it exists.
    pub fn login_role(&self, name: &str) -> Option<LoginRole> {
        let role = self.roles.get(name)?;
        Some(LoginRole {
            can_login: role.can_login,
            password: role.password.as_deref().and_then(ScramVerifier::parse),
            valid_until: role.valid_until,
            connection_limit: role.connection_limit,
        })
    }

    /// Whether a client may connect to the database called `name` (there is one).
    pub fn database_exists(&self, name: &str) -> bool {
        name == sql::session::DATABASE
    }

    /// `CREATE ROLE`.
    pub(crate) fn create_role(
        &self,
        session: &mut Session,
        mut create: CreateRole,
    ) -> Result<ExecuteResponse, CoordError> {
        session.refuse_in_block("CREATE ROLE")?;
        let acting = self.acting_role(session)?;
        if !(acting.superuser || acting.create_role) {
            return Err(CoordError::insufficient_privilege(
                "permission denied to create role",
            ));
        }
        clear_empty_password(session, &mut create.options);
        let options = &create.options;
        if !acting.superuser {
            refuse_superuser_attributes(options)?;
        }
        check_role_name(&create.name)?;
        if self.roles.get(&create.name).is_some() {
            return Err(role_exists(&create.name));
        }
        let oid = system_catalog::item_oid(self.durable.allocate_id()?);
        let mut role = Role::new(oid, &create.name);
        apply_options(&mut role, options)?;
        let in_roles = self.roles_granted_on_create(&acting, &create)?;
        self.store_role(None, role.clone())?;
        self.grant_on_create(session, &acting, role, in_roles, &create)?;
        Ok(ExecuteResponse::command("CREATE ROLE"))
    }

    /// `ALTER ROLE`.
    pub(crate) fn alter_role(
        &self,
        session: &mut Session,
        alter: AlterRole,
    ) -> Result<ExecuteResponse, CoordError> {
        session.refuse_in_block("ALTER ROLE")?;
        let acting = self.acting_role(session)?;
        match alter {
            AlterRole::Options { name, mut options } => {
                clear_empty_password(session, &mut options);
                let mut role = self
                    .roles
                    .get(&name)
                    .ok_or_else(|| CoordError::unknown("role", &name))?;
                check_alter_privilege(&acting, &role, &options)?;
                if role.oid == BOOTSTRAP_ROLE_OID && options.superuser == Some(false) {
                    return Err(CoordError::insufficient_privilege(
                        "permission denied: bootstrap user must be superuser",
                    ));
                }
                apply_options(&mut role, &options)?;
                self.store_role(Some(&name), role)?;
            }
            AlterRole::Rename { name, new_name } => {
                let mut role = self
                    .roles
                    .get(&name)
                    .ok_or_else(|| CoordError::unknown("role", &name))?;
                for (user, which) in [
                    (session.user(), "session"),
                    (acting.name.as_str(), "current"),
                ] {
                    if role.name == user {
                        return Err(CoordError::unsupported(format!(
                            "{which} user cannot be renamed"
                        )));
                    }
                }
                check_role_name(&new_name)?;
                if self.roles.get(&new_name).is_some() {
                    return Err(role_exists(&new_name));
                }
                if role.superuser && !acting.superuser {
                    return Err(CoordError::insufficient_privilege(
                        "must be superuser to rename superusers",
                    ));
                }
                if !(acting.superuser || acting.create_role) {
                    return Err(CoordError::insufficient_privilege(
                        "permission denied to rename role",
                    ));
                }
                role.name = new_name;
                self.store_role(Some(&name), role)?;
            }
        }
        Ok(ExecuteResponse::command("ALTER ROLE"))
    }

    /// `DROP ROLE`: every named role, or none.
    pub(crate) fn drop_role(
        &self,
        session: &mut Session,
        drop: DropRole,
    ) -> Result<ExecuteResponse, CoordError> {
        session.refuse_in_block("DROP ROLE")?;
        let acting = self.acting_role(session)?;
        if !(acting.superuser || acting.create_role) {
            return Err(CoordError::insufficient_privilege(
                "permission denied to drop role",
            ));
        }
        let mut dropped = Vec::new();
        for name in &drop.names {
            let Some(role) = self.roles.get(name) else {
                if drop.if_exists {
                    session.notice(
                        "NOTICE",
                        "00000",
                        format!("role \"{name}\" does not exist, skipping"),
                    );
                    continue;
                }
                return Err(CoordError::unknown("role", name));
            };
            for (user, which) in [
                (acting.name.as_str(), "current"),
                (session.user(), "session"),
            ] {
                if role.name == user {
                    return Err(CoordError::ObjectInUse(format!(
                        "{which} user cannot be dropped"
                    )));
                }
            }
            if role.superuser && !acting.superuser {
                return Err(CoordError::insufficient_privilege(
                    "must be superuser to drop superusers",
                ));
            }
            if role.oid == BOOTSTRAP_ROLE_OID {
                return Err(CoordError::RequiredBySystem(format!("role {name}")));
            }
            let dependents = self.role_dependents(role.oid);
            if !dependents.is_empty() {
                return Err(CoordError::RoleInUse {
                    role: role.name,
                    dependents,
                });
            }
            dropped.push(role);
        }
        for role in dropped {
            self.durable.delete_role(role.oid)?;
            self.roles.write().remove(&role.name);
            self.forget_memberships_in(role.oid)?;
        }
        Ok(ExecuteResponse::command("DROP ROLE"))
    }

    /// Runs `change`, a change of roles, under the sequencer: role changes are ordered with
    /// one another (each reads a role's record and writes it back) and with definitions (a
    /// role dropped while it creates a table would leave the table owned by no role).
    pub(crate) async fn sequenced<T>(
        &self,
        change: impl FnOnce() -> Result<T, CoordError>,
    ) -> Result<T, CoordError> {
        let _sequencer = self.lock_sequencer().await?;
        change()
    }

    /// The role the session acts as (`current_user`).
    pub(crate) fn acting_role(&self, session: &Session) -> Result<Role, CoordError> {
        self.roles
            .get(session.current_user())
            .ok_or_else(|| role_gone(session))
    }

    /// Stores `role` durably, then in memory in place of the role called `old_name`.
    pub(crate) fn store_role(&self, old_name: Option<&str>, role: Role) -> Result<(), CoordError> {
        self.durable.put_role(&role)?;
        let mut roles = self.roles.write();
        if let Some(old_name) = old_name {
            roles.remove(old_name);
        }
        roles.insert(role.name.clone(), role);
        Ok(())
    }
}

/// 42501 for a session whose role was dropped or renamed.
pub(crate) fn role_gone(session: &Session) -> CoordError {
    CoordError::insufficient_privilege(format!(
        "role \"{}\" no longer exists",
        session.current_user()
    ))
}

/// Sets the attributes `options` names.
fn apply_options(role: &mut Role, options: &RoleOptions) -> Result<(), CoordError> {
    let flags = [
        (options.superuser, &mut role.superuser),
        (options.create_db, &mut role.create_db),
        (options.create_role, &mut role.create_role),
        (options.inherit, &mut role.inherit),
        (options.login, &mut role.can_login),
        (options.replication, &mut role.replication),
        (options.bypass_rls, &mut role.bypass_rls),
    ];
    for (given, flag) in flags {
        if let Some(value) = given {
            *flag = value;
        }
    }
    if let Some(limit) = options.connection_limit {
        role.connection_limit = limit;
    }
    if let Some(valid_until) = options.valid_until {
        role.valid_until = valid_until;
    }
    if let Some(password) = &options.password {
        role.password = password.as_deref().map(verifier_of).transpose()?;
    }
    Ok(())
}

/// What is stored for a password given in `CREATE | ALTER ROLE … PASSWORD`: a SCRAM verifier
/// as it is (psql's `\password` sends one), anything else hashed into one. An MD5 hash
/// cannot be used to log in with SCRAM, so it is refused.
fn verifier_of(password: &str) -> Result<String, CoordError> {
    if let Some(verifier) = ScramVerifier::parse(password) {
        return Ok(verifier.to_string());
    }
    let is_md5_hash = password.len() == 35
        && password.starts_with("md5")
        && password[3..].bytes().all(|b| b.is_ascii_hexdigit());
    if is_md5_hash {
        return Err(CoordError::unsupported(
            "MD5 password hashes are not supported: give the password, or its SCRAM-SHA-256 verifier",
        ));
    }
    Ok(ScramVerifier::of_password(password).to_string())
}

/// `PASSWORD ''` clears the password, with PostgreSQL's notice.
fn clear_empty_password(session: &mut Session, options: &mut RoleOptions) {
    if matches!(&options.password, Some(Some(password)) if password.is_empty()) {
        session.notice(
            "NOTICE",
            "00000",
            "empty string is not a valid password, clearing password",
        );
        options.password = Some(None);
    }
}

/// Refuses, to a role that is not a superuser, creating a role with what only a superuser
/// may give (PostgreSQL 15's checks and wording).
fn refuse_superuser_attributes(options: &RoleOptions) -> Result<(), CoordError> {
    let attributes = [
        (options.superuser, "must be superuser to create superusers"),
        (
            options.replication,
            "must be superuser to create replication users",
        ),
        (
            options.bypass_rls,
            "must be superuser to create bypassrls users",
        ),
    ];
    match attributes
        .into_iter()
        .find(|(given, _)| given == &Some(true))
    {
        Some((_, message)) => Err(CoordError::insufficient_privilege(message)),
        None => Ok(()),
    }
}

/// Whether `acting` may change `options` of `role`, in PostgreSQL 15's order of checks: only a
/// superuser touches a superuser, replication or bypassrls role or attribute; a role without
/// CREATEROLE may only change its own password.
fn check_alter_privilege(
    acting: &Role,
    role: &Role,
    options: &RoleOptions,
) -> Result<(), CoordError> {
    if acting.superuser {
        return Ok(());
    }
    let refusal = if role.superuser || options.superuser.is_some() {
        Some("must be superuser to alter superuser roles or change superuser attribute")
    } else if role.replication || options.replication.is_some() {
        Some("must be superuser to alter replication roles or change replication attribute")
    } else if options.bypass_rls.is_some() {
        Some("must be superuser to change bypassrls attribute")
    } else {
        let own_password_only = role.oid == acting.oid
            && *options
                == RoleOptions {
                    password: options.password.clone(),
                    ..RoleOptions::default()
                };
        (!acting.create_role && !own_password_only).then_some("permission denied")
    };
    match refusal {
        Some(message) => Err(CoordError::insufficient_privilege(message)),
        None => Ok(()),
    }
}

/// Refuses names PostgreSQL reserves.
fn check_role_name(name: &str) -> Result<(), CoordError> {
    if name.starts_with("pg_") {
        return Err(CoordError::ReservedName {
            message: format!("role name \"{name}\" is reserved"),
            detail: Some("Role names starting with \"pg_\" are reserved.".into()),
        });
    }
    if matches!(name, "public" | "none") {
        return Err(CoordError::ReservedName {
            message: format!("role name \"{name}\" is reserved"),
            detail: None,
        });
    }
    Ok(())
}

fn role_exists(name: &str) -> CoordError {
    CoordError::DuplicateObject {
        kind: "role",
        name: name.to_string(),
    }
}
