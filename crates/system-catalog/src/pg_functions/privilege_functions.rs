//! The privilege checks clients call while browsing a schema: `has_table_privilege`,
//! `has_any_column_privilege`, `has_column_privilege`, `has_schema_privilege` and
//! `pg_has_role`, answered as PostgreSQL answers them from the owners and ACLs of the catalog.
//!
//! Each takes the role checked first, or checks the session's role when it is left out; a
//! role is a name or an OID, an object a name (an error when nothing has it) or an OID (NULL
//! when nothing has it), and the privileges a comma-separated list of names, any of which is
//! enough.

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::error::{DataFusionError, Result};
use datafusion::logical_expr::{ScalarUDF, Volatility};
use repr::{Ownership, Privileges};
use sql::{RegKind, SqlError};

use super::reg_types::{find_by_name, name_parts};
use super::{any_arity, oid_arg, row_function, sql_error, text_arg, FunctionEnv};
use crate::catalog_input::CatalogInput;
use crate::privileges::{column_privileges, RoleRights};
use crate::snapshot::CatalogSnapshot;

/// The suffix that asks for the right to grant a privilege rather than the privilege.
const GRANT_OPTION: &str = " WITH GRANT OPTION";
/// The suffix that asks for the right to grant a role (`pg_has_role`).
const ADMIN_OPTION: &str = " WITH ADMIN OPTION";

pub(super) fn functions(env: &FunctionEnv) -> Vec<ScalarUDF> {
    let checks = [
        ("has_table_privilege", TABLE),
        ("has_any_column_privilege", ANY_COLUMN),
        ("has_column_privilege", COLUMN),
        ("has_schema_privilege", SCHEMA),
        ("pg_has_role", ROLE),
    ];
    let mut functions: Vec<ScalarUDF> = checks
        .into_iter()
        .map(|(name, check)| check.function(env, name))
        .collect();
    functions.extend(unchecked_functions());
    functions
}

/// Privileges on objects Fluxion has one of (the database) or only built-in ones of
/// (functions, types …): every role holds them.
fn unchecked_functions() -> Vec<ScalarUDF> {
    [
        "has_database_privilege",
        "has_function_privilege",
        "has_sequence_privilege",
        "has_foreign_data_wrapper_privilege",
        "has_server_privilege",
        "has_tablespace_privilege",
        "has_type_privilege",
    ]
    .into_iter()
    .map(|name| {
        row_function(
            name,
            any_arity(&[2, 3, 4], Volatility::Stable),
            DataType::Boolean,
            |args| {
                let any_null = args.iter().any(ScalarValue::is_null);
                Ok(ScalarValue::Boolean((!any_null).then_some(true)))
            },
        )
    })
    .collect()
}

/// How a check reads the role it checks, when given.
#[derive(Clone, Copy)]
enum RoleArg {
    /// A role, or `public` for what every role holds (`has_*_privilege`).
    OrPublic,
    /// A role (`pg_has_role`).
    Role,
}

/// Answers a check for `rights`, from the arguments after the role: NULL when an object
/// given by OID does not exist.
type Answer = fn(&Lookup, RoleRights, &[ScalarValue]) -> Result<Option<bool>>;

/// A privilege check: it takes `arity` arguments, or one more with the role checked first.
#[derive(Clone, Copy)]
struct Check {
    arity: usize,
    role: RoleArg,
    answer: Answer,
}

/// `has_table_privilege`.
const TABLE: Check = Check {
    arity: 2,
    role: RoleArg::OrPublic,
    answer: table,
};
/// `has_any_column_privilege`.
const ANY_COLUMN: Check = Check {
    arity: 2,
    role: RoleArg::OrPublic,
    answer: any_column,
};
/// `has_column_privilege`.
const COLUMN: Check = Check {
    arity: 3,
    role: RoleArg::OrPublic,
    answer: column,
};
/// `has_schema_privilege`.
const SCHEMA: Check = Check {
    arity: 2,
    role: RoleArg::OrPublic,
    answer: schema,
};
/// `pg_has_role`.
const ROLE: Check = Check {
    arity: 2,
    role: RoleArg::Role,
    answer: role,
};

impl Check {
    /// The check as the SQL function `name`.
    fn function(self, env: &FunctionEnv, name: &str) -> ScalarUDF {
        let env = env.clone();
        row_function(
            name,
            any_arity(&[self.arity, self.arity + 1], Volatility::Stable),
            DataType::Boolean,
            move |args| Ok(ScalarValue::Boolean(self.evaluate(&env, args)?)),
        )
    }

    /// The answer for one row of arguments (NULL when one of them is).
    fn evaluate(&self, env: &FunctionEnv, args: &[ScalarValue]) -> Result<Option<bool>> {
        if args.iter().any(ScalarValue::is_null) {
            return Ok(None);
        }
        let catalog = env.catalog.catalog();
        let lookup = Lookup {
            catalog: &catalog,
            snapshot: CatalogSnapshot::of(&catalog),
            env,
        };
        let (rights, rest) = if args.len() > self.arity {
            (lookup.rights_arg(&args[0], self.role)?, &args[1..])
        } else {
            (env.session.rights(&lookup.snapshot), args)
        };
        (self.answer)(&lookup, rights, rest)
    }
}

/// `has_table_privilege([role,] relation, privileges)`.
fn table(lookup: &Lookup, rights: RoleRights, args: &[ScalarValue]) -> Result<Option<bool>> {
    let relation = lookup.relation_arg(&args[0])?;
    let wanted = Wanted::parse(&text(&args[1]), Privileges::ALL_ON_RELATION)?;
    Ok(relation.and_then(|oid| lookup.holds_on_relation(rights, oid, wanted)))
}

/// `has_any_column_privilege([role,] relation, privileges)`: a column privilege is the
/// relation's (Fluxion grants none on columns alone).
fn any_column(lookup: &Lookup, rights: RoleRights, args: &[ScalarValue]) -> Result<Option<bool>> {
    let relation = lookup.relation_arg(&args[0])?;
    let wanted = Wanted::parse(&text(&args[1]), column_privileges())?;
    Ok(relation.and_then(|oid| lookup.holds_on_relation(rights, oid, wanted)))
}

/// `has_column_privilege([role,] relation, column, privileges)`: the column is a name (an
/// error when the relation has none of it) or a number (NULL when it has none).
fn column(lookup: &Lookup, rights: RoleRights, args: &[ScalarValue]) -> Result<Option<bool>> {
    let relation = lookup.relation_arg(&args[0])?;
    let column = match relation {
        Some(oid) => lookup.column_arg(oid, &args[1])?,
        None => None,
    };
    let wanted = Wanted::parse(&text(&args[2]), column_privileges())?;
    Ok(relation
        .filter(|_| column.is_some())
        .and_then(|oid| lookup.holds_on_relation(rights, oid, wanted)))
}

/// `has_schema_privilege([role,] schema, privileges)`.
fn schema(lookup: &Lookup, rights: RoleRights, args: &[ScalarValue]) -> Result<Option<bool>> {
    let ownership = lookup.schema_arg(&args[0])?;
    let all = Privileges::ALL_ON_SCHEMA;
    let wanted = Wanted::parse(&text(&args[1]), all)?;
    Ok(ownership.map(|ownership| wanted.held_by(rights, &ownership, all)))
}

/// `pg_has_role([role,] role, 'MEMBER' | 'USAGE')`: a role is a member of itself and of the
/// roles it was granted, directly or through others, and has the privileges of those it
/// inherits from; a superuser is a member of every role. `… WITH ADMIN OPTION`: it may grant
/// the role.
fn role(lookup: &Lookup, rights: RoleRights, args: &[ScalarValue]) -> Result<Option<bool>> {
    let role = lookup.role_oid_arg(&args[0])?;
    let asked = parse_list(&text(&args[1]), &[GRANT_OPTION, ADMIN_OPTION], |name| {
        if name.eq_ignore_ascii_case("MEMBER") {
            Some(true)
        } else if name.eq_ignore_ascii_case("USAGE") {
            Some(false)
        } else {
            None
        }
    })?;
    Ok(Some(asked.iter().any(|(member, admin)| {
        match (member, admin) {
            (_, true) => rights.has_admin_option(role, &lookup.snapshot.roles),
            (true, false) => rights.is_member_of(role),
            (false, false) => rights.acts_as(role),
        }
    })))
}

/// An argument known not to be NULL, as text.
fn text(value: &ScalarValue) -> String {
    text_arg(value).unwrap_or_default()
}

/// Whether an argument is text (a name) rather than a number (an OID).
fn is_text(value: &ScalarValue) -> bool {
    matches!(
        value,
        ScalarValue::Utf8(_) | ScalarValue::LargeUtf8(_) | ScalarValue::Utf8View(_)
    )
}

/// `unrecognized privilege type: "x"` (22023).
fn unrecognized_privilege(name: &str) -> DataFusionError {
    sql_error(SqlError::InvalidParameterValue(format!(
        "unrecognized privilege type: \"{name}\""
    )))
}

/// `<kind> "name" does not exist`.
fn unknown(kind: &'static str, name: impl Into<String>) -> DataFusionError {
    sql_error(SqlError::UnknownObject {
        kind,
        name: name.into(),
    })
}

/// The entries of a privilege list (`'SELECT, insert WITH GRANT OPTION'`): each what `named`
/// finds of its name, ignoring case, and whether one of the `options` suffixes followed it.
fn parse_list<T>(
    list: &str,
    options: &[&str],
    named: impl Fn(&str) -> Option<T>,
) -> Result<Vec<(T, bool)>> {
    list.split(',')
        .map(|entry| {
            let entry = entry.trim();
            let (name, with_option) = options
                .iter()
                .find_map(|option| strip_suffix_ignoring_case(entry, option))
                .map_or((entry, false), |name| (name, true));
            let found = named(name).ok_or_else(|| unrecognized_privilege(entry))?;
            Ok((found, with_option))
        })
        .collect()
}

/// `text` without `suffix`, compared ignoring ASCII case.
fn strip_suffix_ignoring_case<'a>(text: &'a str, suffix: &str) -> Option<&'a str> {
    let start = text.len().checked_sub(suffix.len())?;
    let (head, tail) = (text.get(..start)?, text.get(start..)?);
    tail.eq_ignore_ascii_case(suffix).then_some(head)
}

/// What a check asks: any of `privileges`, or the right to grant any of `grant_options`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Wanted {
    privileges: Privileges,
    grant_options: Privileges,
}

impl Wanted {
    /// The privileges a list names, each of them one of `allowed` (`RULE`, a relation
    /// privilege PostgreSQL no longer has, is accepted and asks for nothing).
    fn parse(list: &str, allowed: Privileges) -> Result<Wanted> {
        let named = |name: &str| {
            if allowed == Privileges::ALL_ON_RELATION && name.eq_ignore_ascii_case("RULE") {
                return Some(Privileges::NONE);
            }
            Privileges::from_name(name).filter(|p| allowed.contains(*p))
        };
        let mut wanted = Wanted::default();
        for (privilege, grant_option) in parse_list(list, &[GRANT_OPTION], named)? {
            if grant_option {
                wanted.grant_options |= privilege;
            } else {
                wanted.privileges |= privilege;
            }
        }
        Ok(wanted)
    }

    /// Whether `rights` hold any of it on an object with every privilege in `all`.
    fn held_by(&self, rights: RoleRights, ownership: &Ownership, all: Privileges) -> bool {
        let held = rights
            .privileges(ownership, all)
            .intersection(self.privileges);
        let grantable = rights
            .grant_options(ownership, all)
            .intersection(self.grant_options);
        !held.is_empty() || !grantable.is_empty()
    }
}

/// What a check looks objects up in.
struct Lookup<'a> {
    catalog: &'a CatalogInput,
    snapshot: CatalogSnapshot,
    env: &'a FunctionEnv,
}

impl Lookup<'_> {
    /// The rights of the role an argument names.
    fn rights_arg(&self, value: &ScalarValue, kind: RoleArg) -> Result<RoleRights> {
        if !is_text(value) {
            return Ok(oid_arg(value)
                .map_or_else(RoleRights::public, |oid| self.snapshot.role_rights(oid)));
        }
        let name = text(value);
        match (self.snapshot.rights_of_role_named(&name), kind) {
            (Some(rights), _) => Ok(rights),
            (None, RoleArg::OrPublic) if name == "public" => Ok(RoleRights::public()),
            (None, _) => Err(unknown("role", name)),
        }
    }

    /// The OID of the role an argument names (a number is taken as it is).
    fn role_oid_arg(&self, value: &ScalarValue) -> Result<u32> {
        if !is_text(value) {
            return Ok(oid_arg(value).unwrap_or_default());
        }
        let name = text(value);
        self.snapshot
            .role_oid(&name)
            .ok_or_else(|| unknown("role", name))
    }

    /// The OID of the relation an argument names: by name as an unqualified name is found
    /// (an error when none has it), or by OID (`None` when none has it).
    fn relation_arg(&self, value: &ScalarValue) -> Result<Option<u32>> {
        if !is_text(value) {
            return Ok(oid_arg(value).filter(|oid| self.snapshot.class_name(*oid).is_some()));
        }
        let name = text(value);
        let session = &self.env.session;
        find_by_name(RegKind::Class, &name, self.catalog, &self.snapshot, session)
            .map(Some)
            .ok_or_else(|| unknown("relation", name_parts(&name).join(".")))
    }

    /// The attnum of the column of relation `oid` an argument names: by name (an error when
    /// the relation has none of it) or by number (`None` when it has none).
    fn column_arg(&self, oid: u32, value: &ScalarValue) -> Result<Option<i16>> {
        let columns = self
            .snapshot
            .relation(oid)
            .map_or(&[][..], |r| &r.columns[..]);
        if !is_text(value) {
            let attnum = oid_arg(value).and_then(|n| i16::try_from(n).ok());
            return Ok(attnum.filter(|n| columns.iter().any(|c| c.attnum == *n)));
        }
        let name = text(value);
        match columns.iter().find(|c| c.name == name) {
            Some(column) => Ok(Some(column.attnum)),
            None => {
                let relation = self.snapshot.class_name(oid).map_or("", |(_, r)| r);
                Err(sql_error(SqlError::UnknownColumn(format!(
                    "column \"{name}\" of relation \"{relation}\" does not exist"
                ))))
            }
        }
    }

    /// The owner and ACL of the schema an argument names: by name, as written (an error
    /// when none has it), or by OID (`None` when none has it).
    fn schema_arg(&self, value: &ScalarValue) -> Result<Option<Ownership>> {
        let namespaces = &self.snapshot.namespaces;
        if !is_text(value) {
            let oid = oid_arg(value);
            let found = namespaces.iter().find(|n| Some(n.oid) == oid);
            return Ok(found.map(|n| n.ownership.clone()));
        }
        let name = text(value);
        match namespaces.iter().find(|n| n.name == name) {
            Some(namespace) => Ok(Some(namespace.ownership.clone())),
            None => Err(unknown("schema", name)),
        }
    }

    /// Whether `rights` hold any of `wanted` on relation `oid` (`None` when there is none).
    fn holds_on_relation(&self, rights: RoleRights, oid: u32, wanted: Wanted) -> Option<bool> {
        let ownership = self.snapshot.class_ownership(oid)?;
        Some(wanted.held_by(rights, &ownership, Privileges::ALL_ON_RELATION))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::oids::item_oid;
    use crate::test_catalog::{session, Reader, ADMIN, ALICE, BOB, ORDERS, SECRETS};

    fn env(user: &str) -> FunctionEnv {
        FunctionEnv {
            catalog: Arc::new(Reader),
            session: Arc::new(session(user)),
        }
    }

    fn name(text: &str) -> ScalarValue {
        ScalarValue::Utf8(Some(text.into()))
    }

    fn oid(oid: u32) -> ScalarValue {
        ScalarValue::Int64(Some(i64::from(oid)))
    }

    /// `check` as `user` calls it with `args`.
    fn ask(user: &str, check: Check, args: &[ScalarValue]) -> Result<Option<bool>> {
        check.evaluate(&env(user), args)
    }

    fn table_privilege(user: &str, args: &[ScalarValue]) -> Option<bool> {
        ask(user, TABLE, args).expect("an answer")
    }

    /// The SQLSTATE-bearing error a call fails with.
    fn failure(user: &str, check: Check, args: &[ScalarValue]) -> SqlError {
        match ask(user, check, args) {
            Err(DataFusionError::External(error)) => error
                .downcast_ref::<SqlError>()
                .expect("an SQL error")
                .clone(),
            other => panic!("an error, not {other:?}"),
        }
    }

    #[test]
    fn granted_privileges_are_held_and_others_not() {
        assert_eq!(
            table_privilege("bob", &[name("orders"), name("select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("orders"), name("INSERT")]),
            Some(false)
        );
        assert_eq!(
            table_privilege("bob", &[name("orders"), name("insert, Select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("public.secrets"), name("select")]),
            Some(false)
        );
        assert_eq!(
            table_privilege("alice", &[name("secrets"), name("delete")]),
            Some(true)
        );
    }

    #[test]
    fn the_role_checked_may_be_named_or_given_by_oid() {
        let orders = oid(item_oid(ORDERS));
        assert_eq!(
            table_privilege(ADMIN, &[name("bob"), orders.clone(), name("select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege(ADMIN, &[oid(BOB), orders.clone(), name("update")]),
            Some(false)
        );
        assert_eq!(
            table_privilege("bob", &[oid(ALICE), orders, name("update")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("public"), name("orders"), name("select")]),
            Some(false)
        );
    }

    #[test]
    fn a_grant_option_is_asked_for_by_name() {
        let select_grantable = name("SELECT WITH GRANT OPTION");
        assert_eq!(
            table_privilege("bob", &[name("orders"), select_grantable.clone()]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("orders"), name("insert with grant option")]),
            Some(false)
        );
        let mut revoked = Ownership::new(ALICE);
        revoked.revoke(
            Privileges::ALL_ON_RELATION,
            ALICE,
            ALICE,
            Privileges::SELECT,
            true,
        );
        let wanted = Wanted::parse("select with grant option", Privileges::ALL_ON_RELATION);
        let alice = RoleRights::of(ALICE, &[crate::test_catalog::role(ALICE, "alice", false)]);
        assert!(wanted
            .unwrap()
            .held_by(alice, &revoked, Privileges::ALL_ON_RELATION));
    }

    #[test]
    fn a_superuser_holds_every_privilege() {
        let secrets = oid(item_oid(SECRETS));
        assert_eq!(
            table_privilege(ADMIN, &[secrets.clone(), name("truncate")]),
            Some(true)
        );
        assert_eq!(
            table_privilege(ADMIN, &[secrets, name("trigger with grant option")]),
            Some(true)
        );
    }

    #[test]
    fn what_is_granted_to_public_every_role_holds() {
        assert_eq!(
            table_privilege("bob", &[name("menu"), name("select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("nobody", &[name("menu"), name("select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("menu"), name("insert")]),
            Some(false)
        );
        assert_eq!(
            table_privilege("bob", &[name("pg_catalog.pg_class"), name("select")]),
            Some(true)
        );
        assert_eq!(
            table_privilege("bob", &[name("pg_authid"), name("select")]),
            Some(false)
        );
    }

    #[test]
    fn unknown_names_are_errors_and_unknown_oids_null() {
        assert_eq!(
            failure("bob", TABLE, &[name("orders"), name("select, fly")]),
            SqlError::InvalidParameterValue("unrecognized privilege type: \"fly\"".into())
        );
        assert_eq!(
            failure("bob", TABLE, &[name("Public.\"Nope\""), name("select")]),
            SqlError::UnknownObject {
                kind: "relation",
                name: "public.Nope".into()
            }
        );
        assert_eq!(
            failure(
                "bob",
                TABLE,
                &[name("carol"), name("orders"), name("select")]
            ),
            SqlError::UnknownObject {
                kind: "role",
                name: "carol".into()
            }
        );
        assert_eq!(table_privilege("bob", &[oid(1), name("select")]), None);
        assert_eq!(
            table_privilege("bob", &[ScalarValue::Utf8(None), name("select")]),
            None
        );
    }

    #[test]
    fn column_privileges_are_the_relations() {
        let answer = |args: &[ScalarValue]| ask("bob", COLUMN, args).unwrap();
        assert_eq!(
            answer(&[name("orders"), name("id"), name("select")]),
            Some(true)
        );
        assert_eq!(
            answer(&[name("orders"), oid(1), name("update")]),
            Some(false)
        );
        assert_eq!(answer(&[name("orders"), oid(9), name("select")]), None);
        assert!(matches!(
            failure(
                "bob",
                COLUMN,
                &[name("orders"), name("nope"), name("select")]
            ),
            SqlError::UnknownColumn(_)
        ));
        assert!(matches!(
            failure("bob", COLUMN, &[name("orders"), name("id"), name("delete")]),
            SqlError::InvalidParameterValue(_)
        ));
        let any = ask("bob", ANY_COLUMN, &[name("orders"), name("select")]).unwrap();
        assert_eq!(any, Some(true));
    }

    #[test]
    fn schema_privileges_follow_the_schema_acl() {
        let answer = |user: &str, schema: &str, privilege: &str| {
            ask(user, SCHEMA, &[name(schema), name(privilege)]).unwrap()
        };
        assert_eq!(answer("bob", "public", "USAGE"), Some(true));
        assert_eq!(answer("bob", "public", "create"), Some(false));
        assert_eq!(answer("bob", "sales", "usage"), Some(false));
        assert_eq!(answer("alice", "sales", "create"), Some(true));
        assert_eq!(answer("bob", "pg_catalog", "usage"), Some(true));
        assert!(matches!(
            failure("bob", SCHEMA, &[name("nope"), name("usage")]),
            SqlError::UnknownObject { kind: "schema", .. }
        ));
    }

    #[test]
    fn a_role_has_its_own_privileges_and_a_superuser_every_roles() {
        let answer = |user: &str, args: &[ScalarValue]| ask(user, ROLE, args).unwrap();
        assert_eq!(answer("bob", &[name("bob"), name("MEMBER")]), Some(true));
        assert_eq!(answer("bob", &[name("alice"), name("usage")]), Some(false));
        assert_eq!(answer(ADMIN, &[oid(ALICE), name("usage")]), Some(true));
        assert_eq!(
            answer(
                "bob",
                &[name("bob"), name("bob"), name("member with admin option")]
            ),
            Some(false)
        );
        assert!(matches!(
            failure("bob", ROLE, &[name("public"), name("member")]),
            SqlError::UnknownObject { kind: "role", .. }
        ));
    }
}
