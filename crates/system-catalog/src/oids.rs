//! Object identifiers as Postgres clients see them (`pg_class.oid`, `pg_namespace.oid`, …).
//!
//! Catalog items get stable OIDs derived from their never-reused ids, above Postgres's first
//! user OID, so an OID stays the same across restarts. Each item owns a block of four:
//! the relation itself, its primary-key constraint, the index behind that constraint, and its
//! row type.

use repr::GlobalId;

/// `pg_catalog`.
pub(crate) const PG_CATALOG_NAMESPACE: u32 = 11;
/// `pg_toast`.
pub(crate) const PG_TOAST_NAMESPACE: u32 = 99;
/// `public`.
pub(crate) const PUBLIC_NAMESPACE: u32 = 2200;
/// `information_schema` (the OID PostgreSQL 15's initdb gives it).
pub(crate) const INFORMATION_SCHEMA_NAMESPACE: u32 = 13_207;
/// `fluxion_catalog`; its relations take the OIDs just above it. (PostgreSQL's built-in
/// objects stay below 16000.)
pub(crate) const FLUXION_CATALOG_NAMESPACE: u32 = 16_000;
/// The database (`pg_database.oid`).
pub(crate) const DATABASE_OID: u32 = 16_383;
/// The foreign-data wrapper every source belongs to (`pg_foreign_data_wrapper`: `fluxion`).
pub(crate) const SOURCE_WRAPPER_OID: u32 = 15_998;
/// The foreign server every source belongs to (`pg_foreign_server`: `fluxion`), so clients
/// that describe foreign tables (psql's `\d`) find one.
pub(crate) const SOURCE_SERVER_OID: u32 = 15_999;
/// Postgres's first OID for user objects.
const FIRST_USER_OID: u32 = 16_384;

/// The OID of a catalog item (table, view, materialized view, index, source, sink).
pub fn item_oid(id: GlobalId) -> u32 {
    FIRST_USER_OID + 4 * id.0 as u32
}

/// The OID of an item's primary-key constraint (`pg_constraint.oid`).
pub(crate) fn primary_key_constraint_oid(id: GlobalId) -> u32 {
    item_oid(id) + 1
}

/// The OID of the index that backs an item's primary key (`<table>_pkey` in `pg_class`).
pub(crate) fn primary_key_index_oid(id: GlobalId) -> u32 {
    item_oid(id) + 2
}

/// The OID of an item's row type (`pg_class.reltype`).
pub(crate) fn row_type_oid(id: GlobalId) -> u32 {
    item_oid(id) + 3
}
