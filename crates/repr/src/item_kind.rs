//! The kinds of objects a catalog holds.

use serde::{Deserialize, Serialize};

/// What sort of object a catalog item is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ItemKind {
    /// A table written by INSERT/UPDATE/DELETE.
    Table,
    /// A view: a named query, not maintained.
    View,
    /// A view whose results are maintained incrementally.
    MaterializedView,
    /// An index (arrangement) on another item.
    Index,
    /// An ingestion from the outside world.
    Source,
    /// An export to the outside world.
    Sink,
    /// A durable subscription: a view's changes, kept for a while (`CREATE SUBSCRIPTION`).
    Subscription,
    /// A namespace for the other items (`CREATE SCHEMA`).
    Schema,
}

impl ItemKind {
    /// The kind's name in messages and system relations (`materialized view`).
    pub fn name(self) -> &'static str {
        match self {
            ItemKind::Table => "table",
            ItemKind::View => "view",
            ItemKind::MaterializedView => "materialized view",
            ItemKind::Index => "index",
            ItemKind::Source => "source",
            ItemKind::Sink => "sink",
            ItemKind::Subscription => "subscription",
            ItemKind::Schema => "schema",
        }
    }

    /// The kind with its article, for errors naming what was expected ("a table").
    pub fn with_article(self) -> &'static str {
        match self {
            ItemKind::Table => "a table",
            ItemKind::View => "a view",
            ItemKind::MaterializedView => "a materialized view",
            ItemKind::Index => "an index",
            ItemKind::Source => "a source",
            ItemKind::Sink => "a sink",
            ItemKind::Subscription => "a subscription",
            ItemKind::Schema => "a schema",
        }
    }
}
