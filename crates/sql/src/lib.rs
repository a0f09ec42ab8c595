//! The SQL front end: statement text in, typed statements and plans out.
//!
//! [`parse`] turns text into typed [`Statement`]s — PostgreSQL's statements (through
//! sqlparser's PostgreSQL dialect) and Fluxion's own (sources, sinks, subscriptions) — with
//! names folded and literals spelled as DataFusion reads them. The queries and expressions a
//! statement holds are planned through a [`PlanContext`]: qualified by the session's search
//! path, PostgreSQL syntax rewritten ([`rewrite`]), bound and optimized by DataFusion into a
//! `LogicalPlan`, and for views and subscriptions [`lower`]ed into the dataflow plan
//! (`plan::Plan`) that `compute` renders. Catalog objects appear to DataFusion as
//! [`catalog::RelationTable`]s, which read snapshots through a [`catalog::SnapshotReader`]
//! the caller supplies per query. Errors of every kind a client can act on are [`SqlError`]s,
//! DataFusion's and Arrow's sorted into them here.
//!
//! This crate is the only one that knows sqlparser: nothing of its syntax tree leaves it. It
//! knows nothing of dataflow execution, storage, sessions or the wire protocol.

mod asof_joins;
mod bag_set_operations;
mod bind;
pub mod catalog;
mod constant_rows;
pub mod correlated_subqueries;
mod error;
mod expression_rewrites;
mod hop_windows;
mod key_parameters;
mod lateral_top_k;
pub mod literals;
mod lookup_joins;
mod lower;
mod names;
mod parse;
mod planner;
mod point_query;
mod postgres_arrays;
mod postgres_integers;
mod postgres_text_casts;
mod postgres_to_char;
mod postgres_types;
mod printing;
mod processing_time;
mod recursive_queries;
mod reg_types;
mod result_columns;
mod rewrite;
pub mod session;
mod session_time_zone;
mod session_windows;
mod single_value;
mod statement;
mod temporal_filters;
mod text_size_bound;
mod types;

pub use bind::parameter_value;
pub use constant_rows::ConstantRows;
pub use error::SqlError;
pub use expression_rewrites::calls_function;
pub use key_parameters::KeyParameters;
pub use lower::lower;
pub use names::{needs_quotes, quote_ident, ObjectRef, RESERVED_KEYWORDS};
pub use parse::bounds::STATEMENT_STACK_BYTES;
pub use parse::{
    parse, parse_noting_truncations, parse_object_name, TruncatedIdentifier, MAX_IDENTIFIER_BYTES,
};
pub use planner::PlanContext;
pub use point_query::{PointQuery, PointQueryTemplate};
pub use reg_types::RegKind;
pub use result_columns::{display_name, displayed_schema, reg_kind_of};
pub use session_time_zone::SessionTimeZone;
pub use single_value::SINGLE_VALUE;
pub use statement::*;
