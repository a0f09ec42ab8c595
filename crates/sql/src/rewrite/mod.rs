//! Rewrites of the syntax tree before DataFusion plans it, where PostgreSQL's SQL and
//! DataFusion's differ: names qualified by the search path ([`qualify`]), PostgreSQL syntax
//! DataFusion does not plan ([`postgres_syntax`]), checks and reshapes of statements
//! ([`checks`]), aggregates that only casts tell apart ([`cast_aggregates`]), and window
//! table functions, which are relations computed from others
//! ([`windows`]).

pub(crate) mod cast_aggregates;
pub(crate) mod checks;
mod group_windows;
pub(crate) mod postgres_syntax;
pub(crate) mod qualify;
pub(crate) mod windows;
