//! A small catalog with owners and grants, for the tests of the catalogs and functions that
//! answer by privilege.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::common::ScalarValue;
use repr::{GlobalId, ItemKind, Ownership, Privileges, Role, BOOTSTRAP_ROLE_OID, PUBLIC_ROLE};

use crate::catalog_input::{CatalogInput, CatalogItem, CatalogReader, ItemDetails};
use crate::session::SessionInfo;

/// A role that owns the user objects.
pub(crate) const ALICE: u32 = 30_000;
/// A role that owns nothing and was granted SELECT on `orders`, with the grant option.
pub(crate) const BOB: u32 = 30_001;
/// The superuser.
pub(crate) const ADMIN: &str = "fluxion";

/// `public.orders`, alice's, on which bob may SELECT and grant it on.
pub(crate) const ORDERS: GlobalId = GlobalId(1);
/// `public.secrets`, alice's, with the default ACL.
pub(crate) const SECRETS: GlobalId = GlobalId(2);
/// `public.menu`, alice's view, which every role may SELECT.
pub(crate) const MENU: GlobalId = GlobalId(3);
/// The schema `sales`, alice's.
pub(crate) const SALES: GlobalId = GlobalId(4);

/// A role that logs in and inherits (a superuser with every attribute).
pub(crate) fn role(oid: u32, name: &str, superuser: bool) -> Role {
    Role {
        superuser,
        create_role: superuser,
        create_db: superuser,
        can_login: true,
        ..Role::new(oid, name)
    }
}

fn item(name: &str, kind: ItemKind, create_sql: &str, ownership: Ownership) -> CatalogItem {
    let columns = Arc::new(Schema::new(vec![Field::new("id", DataType::Int32, false)]));
    let (schema, details) = match kind {
        ItemKind::Schema => ("", ItemDetails::Schema),
        ItemKind::View => ("public", ItemDetails::View { columns }),
        _ => (
            "public",
            ItemDetails::Relation {
                columns,
                primary_key: Some(vec![0]),
            },
        ),
    };
    CatalogItem {
        name: name.into(),
        schema: schema.into(),
        kind,
        create_sql: create_sql.into(),
        ownership,
        details,
    }
}

/// The catalog: the roles `fluxion` (superuser), `alice` and `bob`, and alice's objects.
pub(crate) fn catalog() -> CatalogInput {
    let all = Privileges::ALL_ON_RELATION;
    let mut orders = Ownership::new(ALICE);
    orders.grant(all, BOB, ALICE, Privileges::SELECT, true);
    let mut menu = Ownership::new(ALICE);
    menu.grant(all, PUBLIC_ROLE, ALICE, Privileges::SELECT, false);
    let items = BTreeMap::from([
        (
            ORDERS,
            item(
                "orders",
                ItemKind::Table,
                "CREATE TABLE orders (id int PRIMARY KEY)",
                orders,
            ),
        ),
        (
            SECRETS,
            item(
                "secrets",
                ItemKind::Table,
                "CREATE TABLE secrets (id int PRIMARY KEY)",
                Ownership::new(ALICE),
            ),
        ),
        (
            MENU,
            item(
                "menu",
                ItemKind::View,
                "CREATE VIEW menu AS SELECT 1 AS id",
                menu,
            ),
        ),
        (
            SALES,
            item(
                "sales",
                ItemKind::Schema,
                "CREATE SCHEMA sales",
                Ownership::new(ALICE),
            ),
        ),
    ]);
    CatalogInput {
        schemas: BTreeMap::from([("sales".to_string(), SALES)]),
        items,
        roles: vec![
            role(BOOTSTRAP_ROLE_OID, ADMIN, true),
            role(ALICE, "alice", false),
            role(BOB, "bob", false),
        ],
        public_schema: Ownership::public_schema(),
        ..CatalogInput::default()
    }
}

/// A session of `user`, searching `public`.
pub(crate) fn session(user: &str) -> SessionInfo {
    SessionInfo {
        user: user.into(),
        session_user: user.into(),
        search_path: vec!["public".into()],
        ..SessionInfo::default()
    }
}

/// Gives [`catalog`].
#[derive(Debug)]
pub(crate) struct Reader;

impl CatalogReader for Reader {
    fn catalog(&self) -> Arc<CatalogInput> {
        Arc::new(catalog())
    }
}

/// The values of column `name` of `batch`, as text (`None` for NULL).
pub(crate) fn column_text(batch: &RecordBatch, name: &str) -> Vec<Option<String>> {
    let column = batch
        .column_by_name(name)
        .unwrap_or_else(|| panic!("a column {name}"));
    (0..batch.num_rows())
        .map(|row| {
            let value = ScalarValue::try_from_array(column, row).expect("a value");
            (!value.is_null()).then(|| value.to_string())
        })
        .collect()
}

/// The rows of `batch` whose column `key` is `value`, as the text of column `name`.
pub(crate) fn where_column(
    batch: &RecordBatch,
    key: &str,
    value: &str,
    name: &str,
) -> Vec<Option<String>> {
    let keys = column_text(batch, key);
    column_text(batch, name)
        .into_iter()
        .zip(keys)
        .filter(|(_, k)| k.as_deref() == Some(value))
        .map(|(v, _)| v)
        .collect()
}

/// One row's text, as [`where_column`] gives it.
pub(crate) fn one(text: impl ToString) -> Vec<Option<String>> {
    vec![Some(text.to_string())]
}
