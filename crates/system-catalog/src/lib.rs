//! The system catalogs: `pg_catalog` and `information_schema` as PostgreSQL 15 has them,
//! `fluxion_catalog`, Fluxion's own relations about the running system, and the PostgreSQL
//! functions that read them.
//!
//! Every relation has exactly PostgreSQL 15's columns (`pg15_relations`, generated from a
//! real PostgreSQL 15). Rows are built when a query scans a relation, from a snapshot
//! (`snapshot::CatalogSnapshot`) of Fluxion's catalog and the querying session's
//! [`SessionInfo`], so catalog queries run as ordinary DataFusion queries over real relations,
//! never as rewrites of a client's SQL text. Built-in rows (types, functions, operators …)
//! come from PostgreSQL 15 itself (`builtin_rows`).
//!
//! This crate knows nothing of the coordinator. It reads Fluxion's catalog as plain data
//! ([`CatalogInput`], through a [`CatalogReader`]) and the running system through
//! [`SystemStatus`]; the coordinator implements both and registers [`SystemSchemas`] and
//! [`register_functions`] in its DataFusion sessions.

mod backends;
mod builtin_functions;
mod builtin_rows;
mod catalog_input;
mod column_types;
mod definitions;
mod fluxion_catalog;
mod information_schema;
mod late_events;
mod oids;
mod pg15_relations;
mod pg_catalog;
mod pg_functions;
mod privileges;
mod rows;
mod schemas;
mod session;
mod snapshot;
mod source_errors;
mod status;
#[cfg(test)]
mod test_catalog;
mod types;

pub use backends::{BackendActivity, Backends};
pub use catalog_input::{CatalogInput, CatalogItem, CatalogReader, DefaultAcl, ItemDetails};
pub use late_events::{late_events_desc, LATE_EVENTS, LATE_EVENTS_NAME};
pub use oids::item_oid;
pub use pg_functions::{display_reg_types, register_functions};
pub use privileges::is_superuser_only_relation;
pub use schemas::SystemSchemas;
pub use session::SessionInfo;
pub use source_errors::{source_errors_desc, SOURCE_ERRORS, SOURCE_ERRORS_NAME};
pub use status::{
    ArrangementFrontier, ArrangementRecords, HydrationStatus, SinkStatus, SourceSnapshot,
    SourceStatus, SubscriptionStatus, SystemStatus, ViewErrors, ViewStatus,
};

/// The PostgreSQL version Fluxion speaks as (clients pick catalog queries by it).
pub const SERVER_VERSION: &str = "15.8";

/// [`SERVER_VERSION`] as `server_version_num`.
pub const SERVER_VERSION_NUM: &str = "150008";

/// The schema of Fluxion's own system relations.
const SYSTEM_SCHEMA: &str = "fluxion_catalog";
/// PostgreSQL's catalog schema.
const PG_CATALOG: &str = "pg_catalog";
/// The SQL standard's catalog schema.
const INFORMATION_SCHEMA: &str = "information_schema";

/// Whether `name` is one of the read-only system schemas.
pub fn is_system_schema(name: &str) -> bool {
    matches!(
        name,
        SYSTEM_SCHEMA | PG_CATALOG | INFORMATION_SCHEMA | "pg_toast"
    )
}
