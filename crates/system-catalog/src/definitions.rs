//! The DDL text PostgreSQL prints for indexes and constraints (`pg_get_indexdef`,
//! `pg_get_constraintdef`, `pg_indexes.indexdef`). Clients parse it (SQLAlchemy reads the
//! columns of a key from it), so it is real, re-runnable DDL.

use crate::snapshot::{CatalogSnapshot, Constraint, Index};
use sql::quote_ident;

/// The name of column `attnum` of the relation `table_oid`, quoted as needed.
fn column_name(snapshot: &CatalogSnapshot, table_oid: u32, attnum: i16) -> Option<String> {
    snapshot
        .relation(table_oid)?
        .columns
        .iter()
        .find(|c| c.attnum == attnum)
        .map(|c| quote_ident(&c.name))
}

fn column_list(snapshot: &CatalogSnapshot, table_oid: u32, attnums: &[i16]) -> String {
    attnums
        .iter()
        .filter_map(|a| column_name(snapshot, table_oid, *a))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `CREATE [UNIQUE] INDEX name ON schema.table USING btree (columns)`.
pub(crate) fn index_definition(snapshot: &CatalogSnapshot, index: &Index) -> String {
    let Some(table) = snapshot.relation(index.table_oid) else {
        return String::new();
    };
    format!(
        "CREATE {}INDEX {} ON {}.{} USING btree ({})",
        if index.is_unique { "UNIQUE " } else { "" },
        quote_ident(&index.name),
        quote_ident(&table.namespace),
        quote_ident(&table.name),
        column_list(snapshot, index.table_oid, &index.columns)
    )
}

/// `pg_get_indexdef(index, column, pretty)`: the whole definition for column 0, else the
/// name of the index's `column`-th key column.
pub(crate) fn index_column_definition(
    snapshot: &CatalogSnapshot,
    index: &Index,
    column: i64,
) -> Option<String> {
    if column == 0 {
        return Some(index_definition(snapshot, index));
    }
    let attnum = *index
        .columns
        .get(usize::try_from(column).ok()?.checked_sub(1)?)?;
    column_name(snapshot, index.table_oid, attnum)
}

/// `PRIMARY KEY (columns)`.
pub(crate) fn constraint_definition(snapshot: &CatalogSnapshot, constraint: &Constraint) -> String {
    format!(
        "PRIMARY KEY ({})",
        column_list(snapshot, constraint.table_oid, &constraint.columns)
    )
}
