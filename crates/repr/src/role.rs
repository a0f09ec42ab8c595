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
}
