//! The rows of `information_schema`'s views, as PostgreSQL 15 computes them from its catalogs.
//!
//! As in PostgreSQL, `tables`, `columns` and `table_privileges` cover tables, views and
//! foreign tables (sources) but not materialized views; clients that know PostgreSQL
//! (Metabase, DBeaver) read those from `pg_class`/`pg_attribute` and `pg_matviews`. And as in
//! PostgreSQL, each view shows only the objects the querying role owns or holds a privilege
//! on (a superuser sees every one).

use datafusion::arrow::array::RecordBatch;
use datafusion::error::Result;
use repr::{Privileges, PUBLIC_ROLE};

use crate::column_types::known_relation;
use crate::privileges::{column_privileges, RoleRights};
use crate::rows::{RelationRows, Value};
use crate::schemas::RowsFn;
use crate::session::SessionInfo;
use crate::snapshot::{CatalogSnapshot, Relation};
use crate::types::{datetime_precision, information_schema_data_type, numeric_facts, type_info};
use crate::{INFORMATION_SCHEMA, PG_CATALOG};

/// The function building `relation`'s rows (`None`: the relation is always empty).
pub(crate) fn rows_of(relation: &str) -> Option<RowsFn> {
    Some(match relation {
        "information_schema_catalog_name" => catalog_name,
        "schemata" => schemata,
        "tables" => tables,
        "columns" => columns,
        "views" => views,
        "table_constraints" => table_constraints,
        "key_column_usage" => key_column_usage,
        "constraint_column_usage" => constraint_column_usage,
        "check_constraints" => check_constraints,
        "enabled_roles" => enabled_roles,
        "table_privileges" => table_privileges,
        "role_table_grants" => role_table_grants,
        "applicable_roles" => |_, _| rows("applicable_roles").into_batch(),
        _ => return None,
    })
}

fn rows(relation: &'static str) -> RelationRows {
    RelationRows::new(known_relation(INFORMATION_SCHEMA, relation))
}

fn database() -> Value {
    sql::session::DATABASE.into()
}

fn yes_no(b: bool) -> Value {
    (if b { "YES" } else { "NO" }).into()
}

fn catalog_name(_: &CatalogSnapshot, _: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("information_schema_catalog_name");
    out.push(&[("catalog_name", database())]);
    out.into_batch()
}

/// `schemata`: the schemas the session's role owns or may use or create in.
fn schemata(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("schemata");
    let rights = session.rights(snapshot);
    let all = Privileges::ALL_ON_SCHEMA;
    for namespace in &snapshot.namespaces {
        if !rights.may_see(&namespace.ownership, all, all) {
            continue;
        }
        out.push(&[
            ("catalog_name", database()),
            ("schema_name", namespace.name.as_str().into()),
            (
                "schema_owner",
                snapshot.owner_name(namespace.ownership.owner).into(),
            ),
        ]);
    }
    out.into_batch()
}

/// Whether the role may see `relation` where PostgreSQL asks that it own it or hold any of
/// `wanted` on it.
fn may_see(rights: &RoleRights, relation: &Relation, wanted: Privileges) -> bool {
    rights.may_see(&relation.ownership, Privileges::ALL_ON_RELATION, wanted)
}

/// The relations `tables` and `columns` describe (tables, views and sources) that the role
/// owns or holds any of `wanted` on.
fn described<'a>(
    snapshot: &'a CatalogSnapshot,
    rights: RoleRights,
    wanted: Privileges,
) -> impl Iterator<Item = &'a Relation> + 'a {
    snapshot
        .relations
        .iter()
        .filter(|r| matches!(r.kind, 'r' | 'v' | 'f' | 'p'))
        .filter(move |r| may_see(&rights, r, wanted))
}

/// `tables`: the relations the session's role owns or holds any privilege on.
fn tables(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("tables");
    let rights = session.rights(snapshot);
    for relation in described(snapshot, rights, Privileges::ALL_ON_RELATION) {
        let table_type = match (relation.kind, relation.namespace.as_str()) {
            ('v', _) => "VIEW",
            ('f', _) => "FOREIGN",
            (_, "pg_temp") => "LOCAL TEMPORARY",
            _ => "BASE TABLE",
        };
        out.push(&[
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("table_type", table_type.into()),
            (
                "is_insertable_into",
                yes_no(relation.kind == 'r' && relation.item.is_some()),
            ),
            ("is_typed", "NO".into()),
        ]);
    }
    out.into_batch()
}

/// `columns`: the columns of the relations the session's role owns or holds a column
/// privilege on.
fn columns(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("columns");
    let rights = session.rights(snapshot);
    for relation in described(snapshot, rights, column_privileges()) {
        for column in &relation.columns {
            let info = type_info(column.type_oid);
            let (precision, radix, scale) = numeric_facts(column.type_oid, column.typmod);
            let is_character = matches!(column.type_oid, 1042 | 1043);
            let length = (is_character && column.typmod >= 4).then(|| i64::from(column.typmod - 4));
            let octets = match column.type_oid {
                25 | 1042 | 1043 => Some(length.map_or(1_073_741_824, |n| n * 4)),
                _ => None,
            };
            let collatable = info.is_some_and(|t| t.collation != 0);
            let udt_schema = match info {
                Some(_) => PG_CATALOG.to_string(),
                None => relation.namespace.clone(),
            };
            out.push(&[
                ("table_catalog", database()),
                ("table_schema", relation.namespace.as_str().into()),
                ("table_name", relation.name.as_str().into()),
                ("column_name", column.name.as_str().into()),
                ("ordinal_position", i64::from(column.attnum).into()),
                ("column_default", column.default.clone().into()),
                ("is_nullable", yes_no(!column.not_null)),
                (
                    "data_type",
                    information_schema_data_type(column.type_oid).into(),
                ),
                ("character_maximum_length", length.into()),
                ("character_octet_length", octets.into()),
                ("numeric_precision", precision.into()),
                ("numeric_precision_radix", radix.into()),
                ("numeric_scale", scale.into()),
                (
                    "datetime_precision",
                    datetime_precision(column.type_oid, column.typmod).into(),
                ),
                ("collation_catalog", collatable.then(database).into()),
                ("collation_schema", collatable.then_some(PG_CATALOG).into()),
                ("collation_name", collatable.then_some("default").into()),
                ("udt_catalog", database()),
                ("udt_schema", udt_schema.into()),
                (
                    "udt_name",
                    info.map(|t| t.name.clone())
                        .unwrap_or_else(|| column.type_text.clone())
                        .into(),
                ),
                (
                    "dtd_identifier",
                    i64::from(column.attnum).to_string().into(),
                ),
                ("is_self_referencing", "NO".into()),
                ("is_identity", "NO".into()),
                ("identity_cycle", "NO".into()),
                ("is_generated", "NEVER".into()),
                (
                    "is_updatable",
                    yes_no(relation.kind == 'r' && relation.item.is_some()),
                ),
            ]);
        }
    }
    out.into_batch()
}

/// `views`: the views the session's role owns or holds any privilege on, with their queries
/// shown to their owners only.
fn views(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("views");
    let rights = session.rights(snapshot);
    for relation in described(snapshot, rights.clone(), Privileges::ALL_ON_RELATION) {
        if relation.kind != 'v' {
            continue;
        }
        let definition = relation
            .view_query
            .clone()
            .filter(|_| rights.acts_as(relation.ownership.owner));
        out.push(&[
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("view_definition", definition.into()),
            ("check_option", "NONE".into()),
            ("is_updatable", "NO".into()),
            ("is_insertable_into", "NO".into()),
            ("is_trigger_updatable", "NO".into()),
            ("is_trigger_deletable", "NO".into()),
            ("is_trigger_insertable_into", "NO".into()),
        ]);
    }
    out.into_batch()
}

/// The name PostgreSQL gives the NOT NULL check of a column.
fn not_null_name(relation: &Relation, attnum: i16) -> String {
    format!(
        "{}_{}_{}_not_null",
        relation.namespace_oid, relation.oid, attnum
    )
}

/// User tables (the relations with constraints) the role owns or holds any of `wanted` on.
fn constrained<'a>(
    snapshot: &'a CatalogSnapshot,
    rights: RoleRights,
    wanted: Privileges,
) -> impl Iterator<Item = &'a Relation> + 'a {
    snapshot
        .relations
        .iter()
        .filter(|r| r.kind == 'r' && r.item.is_some())
        .filter(move |r| may_see(&rights, r, wanted))
}

/// `table_constraints`: the constraints of the tables the session's role owns or holds a
/// privilege other than SELECT on.
fn table_constraints(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("table_constraints");
    let rights = session.rights(snapshot);
    let wanted = Privileges::ALL_ON_RELATION.without(Privileges::SELECT);
    let mut push = |relation: &Relation, name: String, kind: &str| {
        out.push(&[
            ("constraint_catalog", database()),
            ("constraint_schema", relation.namespace.as_str().into()),
            ("constraint_name", name.into()),
            ("table_catalog", database()),
            ("table_schema", relation.namespace.as_str().into()),
            ("table_name", relation.name.as_str().into()),
            ("constraint_type", kind.into()),
            ("is_deferrable", "NO".into()),
            ("initially_deferred", "NO".into()),
            ("enforced", "YES".into()),
        ]);
    };
    for relation in constrained(snapshot, rights, wanted) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            push(relation, constraint.name.clone(), "PRIMARY KEY");
        }
        for column in relation.columns.iter().filter(|c| c.not_null) {
            push(relation, not_null_name(relation, column.attnum), "CHECK");
        }
    }
    out.into_batch()
}

/// `key_column_usage`: the key columns of the tables the session's role owns or holds a
/// column privilege on.
fn key_column_usage(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("key_column_usage");
    let rights = session.rights(snapshot);
    for relation in constrained(snapshot, rights, column_privileges()) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            for (position, attnum) in constraint.columns.iter().enumerate() {
                let Some(column) = relation.columns.iter().find(|c| c.attnum == *attnum) else {
                    continue;
                };
                out.push(&[
                    ("constraint_catalog", database()),
                    ("constraint_schema", relation.namespace.as_str().into()),
                    ("constraint_name", constraint.name.as_str().into()),
                    ("table_catalog", database()),
                    ("table_schema", relation.namespace.as_str().into()),
                    ("table_name", relation.name.as_str().into()),
                    ("column_name", column.name.as_str().into()),
                    ("ordinal_position", (position as i64 + 1).into()),
                ]);
            }
        }
    }
    out.into_batch()
}

/// `constraint_column_usage`: the constrained columns of the tables the session's role owns.
fn constraint_column_usage(
    snapshot: &CatalogSnapshot,
    session: &SessionInfo,
) -> Result<RecordBatch> {
    let mut out = rows("constraint_column_usage");
    let rights = session.rights(snapshot);
    for relation in constrained(snapshot, rights, Privileges::NONE) {
        for constraint in snapshot
            .constraints
            .iter()
            .filter(|c| c.table_oid == relation.oid)
        {
            for attnum in &constraint.columns {
                let Some(column) = relation.columns.iter().find(|c| c.attnum == *attnum) else {
                    continue;
                };
                out.push(&[
                    ("table_catalog", database()),
                    ("table_schema", relation.namespace.as_str().into()),
                    ("table_name", relation.name.as_str().into()),
                    ("column_name", column.name.as_str().into()),
                    ("constraint_catalog", database()),
                    ("constraint_schema", relation.namespace.as_str().into()),
                    ("constraint_name", constraint.name.as_str().into()),
                ]);
            }
        }
    }
    out.into_batch()
}

/// `check_constraints`: the checks of the tables the session's role owns.
fn check_constraints(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("check_constraints");
    let rights = session.rights(snapshot);
    for relation in constrained(snapshot, rights, Privileges::NONE) {
        for column in relation.columns.iter().filter(|c| c.not_null) {
            out.push(&[
                ("constraint_catalog", database()),
                ("constraint_schema", relation.namespace.as_str().into()),
                (
                    "constraint_name",
                    not_null_name(relation, column.attnum).into(),
                ),
                (
                    "check_clause",
                    format!("{} IS NOT NULL", sql::quote_ident(&column.name)).into(),
                ),
            ]);
        }
    }
    out.into_batch()
}

/// `enabled_roles`: the roles whose privileges the session's role has: itself (roles are not
/// members of one another), or every role for a superuser.
fn enabled_roles(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let mut out = rows("enabled_roles");
    let rights = session.rights(snapshot);
    for role in snapshot.roles.iter().filter(|r| rights.acts_as(r.oid)) {
        out.push(&[("role_name", role.name.as_str().into())]);
    }
    out.into_batch()
}

/// One privilege granted on a relation, as `table_privileges` shows it.
struct TableGrant<'a> {
    relation: &'a Relation,
    grantor: u32,
    grantee: u32,
    privilege: &'static str,
    /// Whether the grantee may grant it on (an owner always may).
    grantable: bool,
}

/// Every privilege granted on the tables, views and sources, in ACL order.
fn table_grants(snapshot: &CatalogSnapshot) -> Vec<TableGrant<'_>> {
    let all = Privileges::ALL_ON_RELATION;
    let mut grants = Vec::new();
    let relations = snapshot
        .relations
        .iter()
        .filter(|r| r.item.is_some() && matches!(r.kind, 'r' | 'v' | 'f' | 'p'));
    for relation in relations {
        let owner = relation.ownership.owner;
        for item in relation.ownership.effective_acl(all) {
            let grantee_owns =
                item.grantee != PUBLIC_ROLE && snapshot.role_rights(item.grantee).acts_as(owner);
            for (privilege, _, name) in item.privileges.each() {
                grants.push(TableGrant {
                    relation,
                    grantor: item.grantor,
                    grantee: item.grantee,
                    privilege: name,
                    grantable: grantee_owns || item.grant_options.contains(privilege),
                });
            }
        }
    }
    grants
}

/// The rows of `table_privileges` or `role_table_grants`: the grants `shown` keeps, between
/// roles that exist.
fn grant_rows(
    relation: &'static str,
    snapshot: &CatalogSnapshot,
    shown: impl Fn(&TableGrant) -> bool,
) -> Result<RecordBatch> {
    let mut out = rows(relation);
    for grant in table_grants(snapshot).iter().filter(|g| shown(g)) {
        let grantee = match grant.grantee {
            PUBLIC_ROLE => Some("PUBLIC".to_string()),
            oid => snapshot.role_name(oid),
        };
        let (Some(grantor), Some(grantee)) = (snapshot.role_name(grant.grantor), grantee) else {
            continue;
        };
        out.push(&[
            ("grantor", grantor.into()),
            ("grantee", grantee.into()),
            ("table_catalog", database()),
            ("table_schema", grant.relation.namespace.as_str().into()),
            ("table_name", grant.relation.name.as_str().into()),
            ("privilege_type", grant.privilege.into()),
            ("is_grantable", yes_no(grant.grantable)),
            ("with_hierarchy", yes_no(grant.privilege == "SELECT")),
        ]);
    }
    out.into_batch()
}

/// `table_privileges`: the grants the session's role made or received, and those to
/// `PUBLIC`.
fn table_privileges(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let rights = session.rights(snapshot);
    grant_rows("table_privileges", snapshot, |grant| {
        rights.acts_as(grant.grantor)
            || rights.acts_as(grant.grantee)
            || grant.grantee == PUBLIC_ROLE
    })
}

/// `role_table_grants`: the grants the session's role made or received.
fn role_table_grants(snapshot: &CatalogSnapshot, session: &SessionInfo) -> Result<RecordBatch> {
    let rights = session.rights(snapshot);
    grant_rows("role_table_grants", snapshot, |grant| {
        rights.acts_as(grant.grantor) || rights.acts_as(grant.grantee)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog_input::CatalogInput;
    use crate::pg15_relations::relations;
    use crate::rows::empty_batch;
    use crate::test_catalog::{self, column_text, where_column};

    #[test]
    fn every_relation_builds_from_an_empty_catalog() {
        let snapshot = CatalogSnapshot::of(&CatalogInput::default());
        let session = SessionInfo::default();
        for def in relations()
            .iter()
            .filter(|r| r.schema == INFORMATION_SCHEMA)
        {
            let batch = match rows_of(def.name) {
                Some(rows) => rows(&snapshot, &session).unwrap(),
                None => empty_batch(def).unwrap(),
            };
            assert_eq!(batch.num_columns(), def.columns.len(), "{}", def.name);
        }
        let columns = columns(&snapshot, &session).unwrap();
        assert!(columns.num_rows() > 1000, "system columns are described");
    }

    /// The rows `relation` shows `user`, as the text of `column`.
    fn shown(relation: RowsFn, user: &str, column: &str) -> Vec<String> {
        let snapshot = CatalogSnapshot::of(&test_catalog::catalog());
        let batch = relation(&snapshot, &test_catalog::session(user)).unwrap();
        column_text(&batch, column).into_iter().flatten().collect()
    }

    /// The rows of `table_privileges` or `role_table_grants` `user` sees, each as
    /// `grantor grantee table privilege is_grantable with_hierarchy`.
    fn grants(relation: RowsFn, user: &str) -> Vec<String> {
        let snapshot = CatalogSnapshot::of(&test_catalog::catalog());
        let batch = relation(&snapshot, &test_catalog::session(user)).unwrap();
        let columns = [
            "grantor",
            "grantee",
            "table_name",
            "privilege_type",
            "is_grantable",
            "with_hierarchy",
        ]
        .map(|name| column_text(&batch, name));
        (0..batch.num_rows())
            .map(|row| {
                let cells: Vec<String> = columns
                    .iter()
                    .map(|c| c[row].clone().unwrap_or_default())
                    .collect();
                cells.join(" ")
            })
            .collect()
    }

    #[test]
    fn tables_shows_what_the_role_owns_or_holds_a_privilege_on() {
        let bob = shown(tables, "bob", "table_name");
        assert!(bob.contains(&"orders".to_string()));
        assert!(bob.contains(&"menu".to_string()));
        assert!(bob.contains(&"pg_class".to_string()));
        assert!(!bob.contains(&"secrets".to_string()));
        assert!(!bob.contains(&"pg_authid".to_string()));
        assert!(shown(tables, "alice", "table_name").contains(&"secrets".to_string()));
        let admin = shown(tables, test_catalog::ADMIN, "table_name");
        assert!(admin.contains(&"secrets".to_string()));
        assert!(admin.contains(&"pg_authid".to_string()));
        assert!(!shown(columns, "bob", "table_name").contains(&"secrets".to_string()));
    }

    #[test]
    fn views_show_their_queries_to_their_owners() {
        let snapshot = CatalogSnapshot::of(&test_catalog::catalog());
        let definition = |user: &str| {
            let batch = views(&snapshot, &test_catalog::session(user)).unwrap();
            where_column(&batch, "table_name", "menu", "view_definition")
        };
        assert_eq!(definition("bob"), [None]);
        assert!(definition("alice")[0].is_some());
    }

    #[test]
    fn schemata_shows_the_schemas_the_role_may_use() {
        let bob = shown(schemata, "bob", "schema_name");
        assert!(bob.contains(&"public".to_string()));
        assert!(bob.contains(&"pg_catalog".to_string()));
        assert!(!bob.contains(&"sales".to_string()));
        assert!(!bob.contains(&"pg_toast".to_string()));
        assert!(shown(schemata, "alice", "schema_name").contains(&"sales".to_string()));
        let owners = shown(schemata, test_catalog::ADMIN, "schema_owner");
        assert!(owners.contains(&"alice".to_string()));
    }

    #[test]
    fn table_privileges_shows_the_grants_of_the_role_and_to_public() {
        assert_eq!(
            grants(table_privileges, "bob"),
            [
                "alice bob orders SELECT YES YES",
                "alice PUBLIC menu SELECT NO YES"
            ]
        );
        assert_eq!(
            grants(role_table_grants, "bob"),
            ["alice bob orders SELECT YES YES"]
        );
        let alice = grants(table_privileges, "alice");
        assert_eq!(alice.len(), 7 + 1 + 7 + 7 + 1);
        assert!(alice.contains(&"alice alice secrets TRUNCATE YES NO".to_string()));
        assert_eq!(grants(role_table_grants, "alice"), alice);
        assert_eq!(grants(table_privileges, test_catalog::ADMIN), alice);
    }

    #[test]
    fn enabled_roles_are_the_role_or_every_role_for_a_superuser() {
        assert_eq!(shown(enabled_roles, "bob", "role_name"), ["bob"]);
        assert_eq!(
            shown(enabled_roles, test_catalog::ADMIN, "role_name").len(),
            3
        );
    }
}
