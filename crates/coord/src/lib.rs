//! The coordinator: the brain between clients and the dataflow engine.
//!
//! It owns the catalog, the timeline (timestamp oracle and read holds), and the durable
//! catalog and log. Statements arrive typed from the SQL front end (`sql`), whose planner it
//! calls with the session's context; DDL changes the catalog and creates or drops
//! dataflows, writes are logged durably and then fed to compute at one timestamp per
//! transaction (append-only sources go to stream logs of their own and are fed to the
//! dataflows that read them), and reads run DataFusion over snapshots peeked from
//! arrangements at one time.
//!
//! Nothing here knows the wire protocol: results are Arrow batches and command tags, errors
//! are [`CoordError`]s that the server maps to SQLSTATEs.

mod abandoned_creates;
mod alter_columns;
mod catalog;
mod catalog_input;
mod checkpoint;
mod comments;
mod commit;
mod coordinator;
mod copy;
mod copy_to;
mod cursors;
mod ddl;
mod default_privileges;
mod describe;
mod durable_subscriptions;
mod error;
mod generic_plans;
mod grants;
mod hydration;
mod in_flight;
mod name_resolution;
mod password_verifiers;
mod postgres_settings;
mod privileges;
mod query_context;
mod query_memory;
mod query_rows;
mod read;
mod recovery;
mod response;
mod role_membership;
mod roles;
mod running_queries;
mod session;
mod show;
mod sinks;
mod sources;
mod streams;
mod subscribe;
mod system_status;
mod table_rows;
mod table_watermarks;
mod timeouts;
mod timestamps;
mod transactional_ddl;
mod transactions;
mod unique_keys;
mod view_memory;
mod write;
mod write_conflicts;

pub use coordinator::{CoordConfig, Coordinator};
pub use describe::StatementDesc;
pub use error::CoordError;
pub use generic_plans::GenericPlan;
pub use password_verifiers::ScramVerifier;
pub use query_rows::QueryRows;
pub use response::ExecuteResponse;
pub use roles::{LoginRole, BOOTSTRAP_ROLE};
pub use session::{LiveNotices, Notice, Session, TransactionStatus, DEFAULT_SETTINGS};
pub use sources::{WebhookError, WebhookReceipt};
pub use storage::{Histogram, WalStats};
pub use system_catalog::{BackendActivity, Backends};
pub use timeouts::IdleTimeout;

pub use pipelines::Subscription;
pub use sql::{
    parse, parse_noting_truncations, CopyFormat, CopyOptions, SqlError, Statement,
    TransactionEffect, STATEMENT_STACK_BYTES,
};
