//! The rows of `pg_catalog`'s relations.
//!
//! Relations describing objects Fluxion has (namespaces, classes, attributes, types, indexes,
//! constraints, comments, settings, the database and its role) are built from the catalog
//! snapshot; relations of built-in objects (functions, operators, access methods …) hold
//! PostgreSQL 15's own rows; relations of features Fluxion does not have (triggers, rules,
//! sequences, inheritance, policies …) are empty, with all their columns, so that a client's
//! joins against them plan and return nothing.

use std::time::{SystemTime, UNIX_EPOCH};

use datafusion::arrow::array::RecordBatch;
use datafusion::error::Result;

use crate::builtin_rows::{builtin_batch, builtin_rows, rows_with_builtins};
use crate::column_types::known_relation;
use crate::oids::{DATABASE_OID, SOURCE_SERVER_OID, SOURCE_WRAPPER_OID};
use crate::rows::{RelationRows, Value};
use crate::schemas::RowsFn;
use crate::session::SessionInfo;
use crate::snapshot::{CatalogSnapshot, Column, Relation};
use crate::types::type_info;
use crate::PG_CATALOG;
use repr::{Privileges, Role, BOOTSTRAP_ROLE_OID};

/// `pg_am.oid` of heap, the access method of tables and materialized views.
const HEAP_AM: u32 = 2;
/// `pg_am.oid` of btree, the access method of indexes.
pub(crate) const BTREE_AM: u32 = 403;
/// `pg_tablespace.oid` of `pg_default`.
const DEFAULT_TABLESPACE: u32 = 1663;
/// The `default` collation.
const DEFAULT_COLLATION: u32 = 100;
/// The `C` collation, of `name` columns.
const C_COLLATION: u32 = 950;

/// The function building `relation`'s rows (`None`: the relation is always empty).
pub(crate) fn rows_of(relation: &str) -> Option<RowsFn> {
    Some(match relation {
        "pg_namespace" => pg_namespace,
        "pg_class" => pg_class,
        "pg_attribute" => pg_attribute,
        "pg_attrdef" => pg_attrdef,
        "pg_type" => pg_type,
        "pg_index" => pg_index,
        "pg_constraint" => pg_constraint,
        "pg_description" => pg_description,
        "pg_database" => pg_database,
        "pg_roles" => pg_roles,
        "pg_authid" => pg_authid,
        "pg_auth_members" => pg_auth_members,
        "pg_default_acl" => pg_default_acl,
        "pg_user" => pg_user,
        "pg_shadow" => pg_shadow,
        "pg_settings" => pg_settings,
        "pg_tables" => pg_tables,
        "pg_views" => pg_views,
        "pg_matviews" => pg_matviews,
        "pg_foreign_data_wrapper" => pg_foreign_data_wrapper,
        "pg_foreign_server" => pg_foreign_server,
        "pg_foreign_table" => pg_foreign_table,
        "pg_indexes" => pg_indexes,
        "pg_stat_user_tables" | "pg_stat_all_tables" => pg_stat_tables,
        "pg_statio_user_tables" | "pg_statio_all_tables" => pg_statio_tables,
        "pg_stat_user_indexes" | "pg_stat_all_indexes" => pg_stat_indexes,
        "pg_stat_activity" => pg_stat_activity,
        "pg_am" => |_, _| Ok(builtin_batch("pg_am")),
        "pg_cast" => |_, _| Ok(builtin_batch("pg_cast")),
        "pg_collation" => |_, _| Ok(builtin_batch("pg_collation")),
        "pg_language" => |_, _| Ok(builtin_batch("pg_language")),
        "pg_opclass" => |_, _| Ok(builtin_batch("pg_opclass")),
        "pg_operator" => |_, _| Ok(builtin_batch("pg_operator")),
        "pg_proc" => |_, _| Ok(builtin_batch("pg_proc")),
        "pg_range" => |_, _| Ok(builtin_batch("pg_range")),
        "pg_tablespace" => |_, _| Ok(builtin_batch("pg_tablespace")),
        _ => return None,
    })
}

fn rows(relation: &'static str) -> RelationRows {
    RelationRows::new(known_relation(PG_CATALOG, relation))
}

fn pg_namespace(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_namespace");
    for namespace in &snapshot.namespaces {
        out.push(&[
            ("oid", namespace.oid.into()),
            ("nspname", namespace.name.as_str().into()),
            ("nspowner", namespace.ownership.owner.into()),
            ("nspacl", snapshot.acl_items(&namespace.ownership).into()),
        ]);
    }
    out.into_batch()
}

/// `pg_class.relam`, `relfilenode` and whether the relation has storage.
fn access_method(kind: char) -> u32 {
    match kind {
        'r' | 'm' => HEAP_AM,
        'i' => BTREE_AM,
        _ => 0,
    }
}

fn pg_class(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_class");
    for relation in &snapshot.relations {
        let has_index = snapshot.indexes.iter().any(|i| i.table_oid == relation.oid);
        let stored = matches!(relation.kind, 'r' | 'm');
        out.push(&[
            ("oid", relation.oid.into()),
            ("relname", relation.name.as_str().into()),
            ("relnamespace", relation.namespace_oid.into()),
            ("reltype", relation.row_type_oid.into()),
            ("relowner", relation.ownership.owner.into()),
            ("relacl", relacl(snapshot, relation)),
            ("relam", access_method(relation.kind).into()),
            (
                "relfilenode",
                (if stored { relation.oid } else { 0 }).into(),
            ),
            ("reltuples", reltuples(snapshot, relation.oid)),
            ("relhasindex", has_index.into()),
            ("relpersistence", 'p'.into()),
            ("relkind", relation.kind.into()),
            ("relnatts", (relation.columns.len() as i64).into()),
            ("relhasrules", (relation.kind == 'v').into()),
            ("relispopulated", true.into()),
            (
                "relreplident",
                (if matches!(relation.kind, 'r' | 'm') {
                    'd'
                } else {
                    'n'
                })
                .into(),
            ),
        ]);
    }
    for index in &snapshot.indexes {
        out.push(&[
            ("oid", index.oid.into()),
            ("relname", index.name.as_str().into()),
            ("relnamespace", index.namespace_oid.into()),
            ("relowner", index.owner.into()),
            ("relam", BTREE_AM.into()),
            ("relfilenode", index.oid.into()),
            ("reltuples", reltuples(snapshot, index.table_oid)),
            ("relpersistence", 'p'.into()),
            ("relkind", 'i'.into()),
            ("relnatts", (index.columns.len() as i64).into()),
            ("relispopulated", true.into()),
            ("relreplident", 'n'.into()),
        ]);
    }
    out.into_batch()
}

/// `pg_class.relacl`: a user relation's ACL (NULL for the system relations, whose privileges
/// are built in).
fn relacl(snapshot: &CatalogSnapshot, relation: &Relation) -> Value {
    match relation.item {
        Some(_) => snapshot.acl_items(&relation.ownership).into(),
        None => Value::Null,
    }
}

/// `pg_class.reltuples` of a table or of an index on it: its estimated rows (-1, "never
/// counted", for other relations).
fn reltuples(snapshot: &CatalogSnapshot, table_oid: u32) -> Value {
    Value::Float(
        snapshot
            .table_rows
            .get(&table_oid)
            .map_or(-1.0, |rows| *rows as f64),
    )
}

/// The collation of a column of this type: `default` for collatable types, `C` for `name`.
fn collation_of(type_oid: u32) -> u32 {
    match type_info(type_oid).map(|t| t.collation) {
        Some(C_COLLATION) => C_COLLATION,
        Some(0) | None => 0,
        Some(_) => DEFAULT_COLLATION,
    }
}

fn push_attribute(out: &mut RelationRows, relation_oid: u32, column: &Column, has_default: bool) {
    let info = type_info(column.type_oid);
    let is_array = info.is_some_and(|t| t.category == "A" && t.element != 0);
    out.push(&[
        ("attrelid", relation_oid.into()),
        ("attname", column.name.as_str().into()),
        ("atttypid", column.type_oid.into()),
        ("attstattarget", Value::Int(-1)),
        ("attlen", i64::from(column.type_len).into()),
        ("attnum", i64::from(column.attnum).into()),
        ("attndims", i64::from(is_array).into()),
        ("attcacheoff", Value::Int(-1)),
        ("atttypmod", column.typmod.into()),
        ("attbyval", info.is_some_and(|t| t.by_value).into()),
        (
            "attalign",
            info.map_or("i".to_string(), |t| t.align.clone()).into(),
        ),
        (
            "attstorage",
            info.map_or("p".to_string(), |t| t.storage.clone()).into(),
        ),
        ("attcompression", "".into()),
        ("attnotnull", column.not_null.into()),
        ("atthasdef", has_default.into()),
        ("attidentity", "".into()),
        ("attgenerated", "".into()),
        ("attislocal", true.into()),
        ("attcollation", collation_of(column.type_oid).into()),
    ]);
}

fn pg_attribute(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_attribute");
    for relation in &snapshot.relations {
        for column in &relation.columns {
            push_attribute(&mut out, relation.oid, column, column.default.is_some());
        }
    }
    for index in &snapshot.indexes {
        let Some(table) = snapshot.relation(index.table_oid) else {
            continue;
        };
        for (position, attnum) in index.columns.iter().enumerate() {
            if let Some(column) = table.columns.iter().find(|c| c.attnum == *attnum) {
                let mut column = column.clone();
                column.attnum = position as i16 + 1;
                push_attribute(&mut out, index.oid, &column, false);
            }
        }
    }
    out.into_batch()
}

/// The oid of the DEFAULT of column `attnum` of a relation.
pub(crate) fn attrdef_oid(relation_oid: u32, attnum: i16) -> u32 {
    0x4000_0000 | (relation_oid << 10) | attnum as u32
}

fn pg_attrdef(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_attrdef");
    for relation in &snapshot.relations {
        for column in &relation.columns {
            if let Some(default) = &column.default {
                out.push(&[
                    ("oid", attrdef_oid(relation.oid, column.attnum).into()),
                    ("adrelid", relation.oid.into()),
                    ("adnum", i64::from(column.attnum).into()),
                    ("adbin", default.as_str().into()),
                ]);
            }
        }
    }
    out.into_batch()
}

fn pg_type(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows_with_builtins("pg_type");
    for relation in snapshot.relations.iter().filter(|r| r.row_type_oid != 0) {
        out.push(&[
            ("oid", relation.row_type_oid.into()),
            ("typname", relation.name.as_str().into()),
            ("typnamespace", relation.namespace_oid.into()),
            ("typowner", relation.ownership.owner.into()),
            ("typlen", Value::Int(-1)),
            ("typtype", 'c'.into()),
            ("typcategory", 'C'.into()),
            ("typisdefined", true.into()),
            ("typdelim", ','.into()),
            ("typrelid", relation.oid.into()),
            ("typinput", Value::Int(2290)),
            ("typoutput", Value::Int(2291)),
            ("typreceive", Value::Int(2402)),
            ("typsend", Value::Int(2403)),
            ("typalign", 'd'.into()),
            ("typstorage", 'x'.into()),
            ("typtypmod", Value::Int(-1)),
        ]);
    }
    out.into_batch()
}

/// The default btree operator class of a type (what `pg_index.indclass` names).
fn default_opclass(type_oid: u32) -> u32 {
    let def = known_relation(PG_CATALOG, "pg_opclass");
    let column = |name: &str| def.columns.iter().position(|c| c.name == name);
    let (Some(method), Some(input), Some(default), Some(oid)) = (
        column("opcmethod"),
        column("opcintype"),
        column("opcdefault"),
        column("oid"),
    ) else {
        return 0;
    };
    let wanted = match type_info(type_oid) {
        Some(t) if t.category == "A" => 2277,
        Some(t) if t.category == "S" && type_oid != 19 => 25,
        _ => type_oid,
    };
    builtin_rows("pg_opclass")
        .iter()
        .find(|row| {
            row[method] == Value::Int(i64::from(BTREE_AM))
                && row[input] == Value::Int(i64::from(wanted))
                && row[default] == Value::Bool(true)
        })
        .and_then(|row| match row[oid] {
            Value::Int(oid) => Some(oid as u32),
            _ => None,
        })
        .unwrap_or(0)
}

fn pg_index(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_index");
    for index in &snapshot.indexes {
        let table = snapshot.relation(index.table_oid);
        let column_type = |attnum: &i16| {
            table
                .and_then(|t| t.columns.iter().find(|c| c.attnum == *attnum))
                .map_or(0, |c| c.type_oid)
        };
        let keys: Vec<Value> = index.columns.iter().map(|a| i64::from(*a).into()).collect();
        let collations: Vec<Value> = index
            .columns
            .iter()
            .map(|a| collation_of(column_type(a)).into())
            .collect();
        let classes: Vec<Value> = index
            .columns
            .iter()
            .map(|a| default_opclass(column_type(a)).into())
            .collect();
        let options: Vec<Value> = index.columns.iter().map(|_| Value::Int(0)).collect();
        out.push(&[
            ("indexrelid", index.oid.into()),
            ("indrelid", index.table_oid.into()),
            ("indnatts", (index.columns.len() as i64).into()),
            ("indnkeyatts", (index.columns.len() as i64).into()),
            ("indisunique", index.is_unique.into()),
            ("indisprimary", index.is_primary.into()),
            ("indimmediate", true.into()),
            ("indisvalid", true.into()),
            ("indisready", true.into()),
            ("indislive", true.into()),
            ("indkey", Value::List(keys)),
            ("indcollation", Value::List(collations)),
            ("indclass", Value::List(classes)),
            ("indoption", Value::List(options)),
        ]);
    }
    out.into_batch()
}

fn pg_constraint(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_constraint");
    for constraint in &snapshot.constraints {
        let keys: Vec<Value> = constraint
            .columns
            .iter()
            .map(|a| i64::from(*a).into())
            .collect();
        out.push(&[
            ("oid", constraint.oid.into()),
            ("conname", constraint.name.as_str().into()),
            ("connamespace", constraint.namespace_oid.into()),
            ("contype", 'p'.into()),
            ("convalidated", true.into()),
            ("conrelid", constraint.table_oid.into()),
            ("conindid", constraint.index_oid.into()),
            ("confupdtype", ' '.into()),
            ("confdeltype", ' '.into()),
            ("confmatchtype", ' '.into()),
            ("conislocal", true.into()),
            ("connoinherit", true.into()),
            ("conkey", Value::List(keys)),
        ]);
    }
    out.into_batch()
}

fn pg_description(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_description");
    for comment in &snapshot.comments {
        out.push(&[
            ("objoid", comment.object_oid.into()),
            ("classoid", comment.class_oid.into()),
            ("objsubid", comment.sub_id.into()),
            ("description", comment.text.as_str().into()),
        ]);
    }
    out.into_batch()
}

fn pg_database(_: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_database");
    out.push(&[
        ("oid", DATABASE_OID.into()),
        ("datname", sql::session::DATABASE.into()),
        ("datdba", BOOTSTRAP_ROLE_OID.into()),
        ("encoding", Value::Int(6)),
        ("datlocprovider", 'c'.into()),
        ("datallowconn", true.into()),
        ("datconnlimit", Value::Int(-1)),
        ("dattablespace", DEFAULT_TABLESPACE.into()),
        ("datcollate", "C.UTF-8".into()),
        ("datctype", "C.UTF-8".into()),
    ]);
    out.into_batch()
}

/// A role's attributes, as `pg_roles` and `pg_authid` name them.
fn role_columns(role: &Role) -> Vec<(&'static str, Value)> {
    vec![
        ("oid", role.oid.into()),
        ("rolname", role.name.as_str().into()),
        ("rolsuper", role.superuser.into()),
        ("rolinherit", role.inherit.into()),
        ("rolcreaterole", role.create_role.into()),
        ("rolcreatedb", role.create_db.into()),
        ("rolcanlogin", role.can_login.into()),
        ("rolreplication", role.replication.into()),
        ("rolbypassrls", role.bypass_rls.into()),
        ("rolconnlimit", Value::Int(i64::from(role.connection_limit))),
        ("rolvaliduntil", valid_until(role)),
    ]
}

/// `rolvaliduntil`: NULL for a role whose password never expires.
fn valid_until(role: &Role) -> Value {
    role.valid_until.map(Value::Int).into()
}

/// `pg_roles`: every role, the password hidden (as PostgreSQL hides it from everyone).
fn pg_roles(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_roles");
    for role in &snapshot.roles {
        let mut columns = role_columns(role);
        columns.push(("rolpassword", "********".into()));
        out.push(&columns);
    }
    out.into_batch()
}

/// `pg_authid`: every role with its password verifier.
fn pg_authid(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_authid");
    for role in &snapshot.roles {
        let mut columns = role_columns(role);
        columns.push(("rolpassword", role.password.as_deref().into()));
        out.push(&columns);
    }
    out.into_batch()
}

/// `pg_auth_members`: which role is a member of which (`GRANT role TO member`).
fn pg_auth_members(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_auth_members");
    for member in &snapshot.roles {
        for membership in &member.member_of {
            out.push(&[
                ("roleid", membership.role.into()),
                ("member", member.oid.into()),
                ("grantor", membership.grantor.into()),
                ("admin_option", membership.admin_option.into()),
            ]);
        }
    }
    out.into_batch()
}

/// The first OID of `pg_default_acl`'s rows, numbered in the order of the entries.
const FIRST_DEFAULT_ACL_OID: u32 = 0x7000_0000;

/// `pg_default_acl`: default privileges (psql's `\ddp`); `defaclnamespace` 0 for an entry
/// about any schema.
fn pg_default_acl(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_default_acl");
    for (n, entry) in (0u32..).zip(&snapshot.default_acls) {
        let namespace = entry
            .schema
            .as_deref()
            .and_then(|name| snapshot.namespace(name))
            .map_or(0, |namespace| namespace.oid);
        let all = if entry.object_type == 'n' {
            Privileges::ALL_ON_SCHEMA
        } else {
            Privileges::ALL_ON_RELATION
        };
        let mut ownership = entry.ownership.clone();
        ownership.acl = Some(ownership.effective_acl(all));
        out.push(&[
            ("oid", (FIRST_DEFAULT_ACL_OID + n).into()),
            ("defaclrole", entry.role.into()),
            ("defaclnamespace", namespace.into()),
            ("defaclobjtype", entry.object_type.to_string().into()),
            ("defaclacl", snapshot.acl_items(&ownership).into()),
        ]);
    }
    out.into_batch()
}

/// A login role's attributes, as `pg_user` and `pg_shadow` name them.
fn user_columns(role: &Role) -> Vec<(&'static str, Value)> {
    vec![
        ("usename", role.name.as_str().into()),
        ("usesysid", role.oid.into()),
        ("usecreatedb", role.create_db.into()),
        ("usesuper", role.superuser.into()),
        ("userepl", role.replication.into()),
        ("usebypassrls", role.bypass_rls.into()),
        ("valuntil", valid_until(role)),
    ]
}

/// `pg_user`: the roles that may log in, the password hidden.
fn pg_user(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_user");
    for role in snapshot.roles.iter().filter(|r| r.can_login) {
        let mut columns = user_columns(role);
        columns.push(("passwd", "********".into()));
        out.push(&columns);
    }
    out.into_batch()
}

/// `pg_shadow`: the roles that may log in, with their password verifiers.
fn pg_shadow(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_shadow");
    for role in snapshot.roles.iter().filter(|r| r.can_login) {
        let mut columns = user_columns(role);
        columns.push(("passwd", role.password.as_deref().into()));
        out.push(&columns);
    }
    out.into_batch()
}

/// Settings every session reports that cannot be changed: (name, value, unit, description).
const STATIC_SETTINGS: &[(&str, &str, &str, &str)] = &[
    ("block_size", "8192", "", "Shows the size of a disk block."),
    (
        "default_table_access_method",
        "heap",
        "",
        "Sets the default table access method for new tables.",
    ),
    (
        "max_index_keys",
        "32",
        "",
        "Shows the maximum number of index keys.",
    ),
    (
        "max_identifier_length",
        "63",
        "",
        "Shows the maximum identifier length.",
    ),
    (
        "max_function_args",
        "100",
        "",
        "Shows the maximum number of function arguments.",
    ),
    (
        "max_connections",
        "100",
        "",
        "Sets the maximum number of concurrent connections.",
    ),
    (
        "lc_collate",
        "C.UTF-8",
        "",
        "Shows the collation order locale.",
    ),
    (
        "lc_ctype",
        "C.UTF-8",
        "",
        "Shows the character classification and case conversion locale.",
    ),
    (
        "data_directory_mode",
        "0700",
        "",
        "Shows the mode of the data directory.",
    ),
    (
        "bytea_output",
        "hex",
        "",
        "Sets the output format for bytea.",
    ),
    (
        "lock_timeout",
        "0",
        "ms",
        "Sets the maximum allowed duration of any wait for a lock.",
    ),
    (
        "statement_timeout",
        "0",
        "ms",
        "Sets the maximum allowed duration of any statement.",
    ),
    (
        "wal_level",
        "replica",
        "",
        "Sets the level of information written to the WAL.",
    ),
];

/// A setting that is the same for every session (`current_setting` falls back to these).
pub(crate) fn static_setting(name: &str) -> Option<&'static str> {
    STATIC_SETTINGS
        .iter()
        .find(|(n, ..)| *n == name)
        .map(|(_, value, ..)| *value)
}

fn pg_settings(_: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_settings");
    let mut settings: Vec<(String, String, &str, &str, &str)> = session
        .settings
        .iter()
        .map(|(name, value)| {
            let value = session.setting(name).unwrap_or_else(|| value.clone());
            (name.clone(), value, "", "", "user")
        })
        .collect();
    for (name, value, unit, description) in STATIC_SETTINGS {
        if !session.settings.contains_key(*name) {
            settings.push((
                name.to_string(),
                value.to_string(),
                unit,
                description,
                "internal",
            ));
        }
    }
    settings.sort();
    for (name, value, unit, description, context) in settings {
        let unit = if unit.is_empty() {
            Value::Null
        } else {
            unit.into()
        };
        out.push(&[
            ("name", name.as_str().into()),
            ("setting", value.as_str().into()),
            ("unit", unit),
            ("category", "Client Connection Defaults".into()),
            ("short_desc", description.into()),
            ("context", context.into()),
            ("vartype", "string".into()),
            ("source", "default".into()),
            ("boot_val", value.as_str().into()),
            ("reset_val", value.as_str().into()),
            ("pending_restart", false.into()),
        ]);
    }
    out.into_batch()
}

/// The relations of the given kinds, with their schema names.
fn relations_of<'a>(
    snapshot: &'a CatalogSnapshot,
    kinds: &'a [char],
) -> impl Iterator<Item = &'a Relation> + 'a {
    snapshot
        .relations
        .iter()
        .filter(move |r| kinds.contains(&r.kind))
}

/// The name of a relation's owner, as `pg_tables` and its kin show it.
fn owner_name(snapshot: &CatalogSnapshot, relation: &Relation) -> Value {
    snapshot.owner_name(relation.ownership.owner).into()
}

fn pg_tables(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_tables");
    for relation in relations_of(snapshot, &['r', 'p']) {
        out.push(&[
            ("schemaname", relation.namespace.as_str().into()),
            ("tablename", relation.name.as_str().into()),
            ("tableowner", owner_name(snapshot, relation)),
            (
                "hasindexes",
                snapshot
                    .indexes
                    .iter()
                    .any(|i| i.table_oid == relation.oid)
                    .into(),
            ),
            ("hasrules", false.into()),
            ("hastriggers", false.into()),
            ("rowsecurity", false.into()),
        ]);
    }
    out.into_batch()
}

fn pg_views(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_views");
    for relation in relations_of(snapshot, &['v']) {
        out.push(&[
            ("schemaname", relation.namespace.as_str().into()),
            ("viewname", relation.name.as_str().into()),
            ("viewowner", owner_name(snapshot, relation)),
            ("definition", relation.view_query.clone().into()),
        ]);
    }
    out.into_batch()
}

fn pg_matviews(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_matviews");
    for relation in relations_of(snapshot, &['m']) {
        out.push(&[
            ("schemaname", relation.namespace.as_str().into()),
            ("matviewname", relation.name.as_str().into()),
            ("matviewowner", owner_name(snapshot, relation)),
            (
                "hasindexes",
                snapshot
                    .indexes
                    .iter()
                    .any(|i| i.table_oid == relation.oid)
                    .into(),
            ),
            ("ispopulated", true.into()),
            ("definition", relation.view_query.clone().into()),
        ]);
    }
    out.into_batch()
}

/// The one foreign-data wrapper, `fluxion`, that sources (foreign tables) belong to.
fn pg_foreign_data_wrapper(_: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_foreign_data_wrapper");
    out.push(&[
        ("oid", SOURCE_WRAPPER_OID.into()),
        ("fdwname", "fluxion".into()),
        ("fdwowner", BOOTSTRAP_ROLE_OID.into()),
        ("fdwhandler", 0u32.into()),
        ("fdwvalidator", 0u32.into()),
    ]);
    out.into_batch()
}

/// The one foreign server, `fluxion`, that sources belong to.
fn pg_foreign_server(_: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_foreign_server");
    out.push(&[
        ("oid", SOURCE_SERVER_OID.into()),
        ("srvname", "fluxion".into()),
        ("srvowner", BOOTSTRAP_ROLE_OID.into()),
        ("srvfdw", SOURCE_WRAPPER_OID.into()),
    ]);
    out.into_batch()
}

/// A row per source: the foreign table of server `fluxion` (its options are in its
/// `CREATE SOURCE` text, not here).
fn pg_foreign_table(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_foreign_table");
    for relation in relations_of(snapshot, &['f']) {
        out.push(&[
            ("ftrelid", relation.oid.into()),
            ("ftserver", SOURCE_SERVER_OID.into()),
        ]);
    }
    out.into_batch()
}

fn pg_indexes(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_indexes");
    for index in &snapshot.indexes {
        let Some(table) = snapshot.relation(index.table_oid) else {
            continue;
        };
        out.push(&[
            ("schemaname", table.namespace.as_str().into()),
            ("tablename", table.name.as_str().into()),
            ("indexname", index.name.as_str().into()),
            (
                "indexdef",
                crate::definitions::index_definition(snapshot, index).into(),
            ),
        ]);
    }
    out.into_batch()
}

/// User relations with statistics (tables and materialized views).
fn stat_relations(snapshot: &CatalogSnapshot) -> impl Iterator<Item = &Relation> + '_ {
    snapshot
        .relations
        .iter()
        .filter(|r| r.item.is_some() && matches!(r.kind, 'r' | 'm'))
}

fn pg_stat_tables(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_stat_user_tables");
    for relation in stat_relations(snapshot) {
        out.push(&[
            ("relid", relation.oid.into()),
            ("schemaname", relation.namespace.as_str().into()),
            ("relname", relation.name.as_str().into()),
            ("seq_scan", Value::Int(0)),
            ("seq_tup_read", Value::Int(0)),
            ("idx_scan", Value::Int(0)),
            ("idx_tup_fetch", Value::Int(0)),
            ("n_tup_ins", Value::Int(0)),
            ("n_tup_upd", Value::Int(0)),
            ("n_tup_del", Value::Int(0)),
            ("n_tup_hot_upd", Value::Int(0)),
            (
                "n_live_tup",
                Value::Int(snapshot.table_rows.get(&relation.oid).copied().unwrap_or(0)),
            ),
            ("n_dead_tup", Value::Int(0)),
            ("n_mod_since_analyze", Value::Int(0)),
            ("n_ins_since_vacuum", Value::Int(0)),
            ("vacuum_count", Value::Int(0)),
            ("autovacuum_count", Value::Int(0)),
            ("analyze_count", Value::Int(0)),
            ("autoanalyze_count", Value::Int(0)),
        ]);
    }
    out.into_batch()
}

fn pg_statio_tables(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_statio_user_tables");
    for relation in stat_relations(snapshot) {
        out.push(&[
            ("relid", relation.oid.into()),
            ("schemaname", relation.namespace.as_str().into()),
            ("relname", relation.name.as_str().into()),
            ("heap_blks_read", Value::Int(0)),
            ("heap_blks_hit", Value::Int(0)),
        ]);
    }
    out.into_batch()
}

fn pg_stat_indexes(snapshot: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_stat_user_indexes");
    for index in &snapshot.indexes {
        let Some(table) = snapshot.relation(index.table_oid) else {
            continue;
        };
        out.push(&[
            ("relid", table.oid.into()),
            ("indexrelid", index.oid.into()),
            ("schemaname", table.namespace.as_str().into()),
            ("relname", table.name.as_str().into()),
            ("indexrelname", index.name.as_str().into()),
            ("idx_scan", Value::Int(0)),
            ("idx_tup_read", Value::Int(0)),
            ("idx_tup_fetch", Value::Int(0)),
        ]);
    }
    out.into_batch()
}

/// `pg_stat_activity`: every client backend; as in PostgreSQL, what a backend of another
/// role is doing (its query, state, times and address) only superusers see.
fn pg_stat_activity(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("pg_stat_activity");
    let Some(backends) = &session.backends else {
        return out.into_batch();
    };
    let sees_everything = session.rights(snapshot).superuser;
    for backend in backends.activity() {
        let hidden = !sees_everything && backend.user != session.user;
        let mut row: Vec<(&str, Value)> = vec![
            ("datid", DATABASE_OID.into()),
            ("datname", sql::session::DATABASE.into()),
            ("pid", backend.pid.into()),
            ("usesysid", snapshot.role_oid(&backend.user).into()),
            ("usename", backend.user.into()),
            ("application_name", backend.application_name.into()),
            ("backend_type", "client backend".into()),
        ];
        if hidden {
            row.push(("query", "<insufficient privilege>".into()));
        } else {
            row.extend([
                (
                    "client_addr",
                    backend.client.map(|a| a.ip().to_string()).into(),
                ),
                (
                    "client_port",
                    backend.client.map(|a| i32::from(a.port())).into(),
                ),
                ("backend_start", timestamp(backend.backend_start)),
                (
                    "xact_start",
                    backend.transaction_start.map(timestamp).into(),
                ),
                ("query_start", backend.query_start.map(timestamp).into()),
                ("state_change", timestamp(backend.state_change)),
                ("state", backend.state.into()),
                ("query", backend.query.into()),
            ]);
        }
        out.push(&row);
    }
    out.into_batch()
}

/// `time` as a `timestamptz` column holds it: microseconds since the Unix epoch.
fn timestamp(time: SystemTime) -> Value {
    let micros = match time.duration_since(UNIX_EPOCH) {
        Ok(since) => i64::try_from(since.as_micros()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_micros()).unwrap_or(i64::MAX),
    };
    Value::Int(micros)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog_input::CatalogInput;
    use crate::pg15_relations::relations;
    use crate::rows::empty_batch;
    use crate::test_catalog::{self, one, where_column, ALICE};

    #[test]
    fn every_relation_builds_from_an_empty_catalog() {
        let snapshot = CatalogSnapshot::of(&CatalogInput::default());
        let session = SessionInfo::default();
        for def in relations().iter().filter(|r| r.schema == PG_CATALOG) {
            let batch = match rows_of(def.name) {
                Some(rows) => rows(&snapshot, &session).unwrap(),
                None => empty_batch(def).unwrap(),
            };
            assert_eq!(batch.num_columns(), def.columns.len(), "{}", def.name);
        }
        let classes = pg_class(&snapshot, &session).unwrap();
        assert!(classes.num_rows() > 100, "system relations are in pg_class");
    }

    #[test]
    fn relations_show_their_owners_and_acls() {
        let snapshot = CatalogSnapshot::of(&test_catalog::catalog());
        let classes = pg_class(&snapshot, &test_catalog::session("bob")).unwrap();
        let of = |relation: &str, column: &str| where_column(&classes, "relname", relation, column);
        assert_eq!(of("orders", "relowner"), one(ALICE));
        assert_eq!(
            of("orders", "relacl"),
            one("[alice=arwdDxt/alice, bob=r*/alice]")
        );
        assert_eq!(of("secrets", "relacl"), [None]);
        assert_eq!(of("orders_pkey", "relowner"), one(ALICE));
        assert_eq!(of("orders_pkey", "relacl"), [None]);
        assert_eq!(of("pg_class", "relowner"), one(BOOTSTRAP_ROLE_OID));
        assert_eq!(of("pg_class", "relacl"), [None]);
        let types = pg_type(&snapshot, &SessionInfo::default()).unwrap();
        let owner = where_column(&types, "typname", "orders", "typowner");
        assert_eq!(owner, one(ALICE));
        let tables = pg_tables(&snapshot, &SessionInfo::default()).unwrap();
        let owner = where_column(&tables, "tablename", "orders", "tableowner");
        assert_eq!(owner, one("alice"));
    }

    #[test]
    fn schemas_show_their_owners_and_acls() {
        let snapshot = CatalogSnapshot::of(&test_catalog::catalog());
        let namespaces = pg_namespace(&snapshot, &SessionInfo::default()).unwrap();
        let of = |schema: &str, column: &str| where_column(&namespaces, "nspname", schema, column);
        let usable = "[fluxion=UC/fluxion, =U/fluxion]";
        assert_eq!(of("public", "nspacl"), one(usable));
        assert_eq!(of("pg_catalog", "nspacl"), one(usable));
        assert_eq!(of("information_schema", "nspacl"), one(usable));
        assert_eq!(of("pg_toast", "nspacl"), [None]);
        assert_eq!(of("sales", "nspowner"), one(ALICE));
        assert_eq!(of("sales", "nspacl"), [None]);
    }
}
