//! Compute: renders dataflow plans as differential dataflows on timely worker threads.
//!
//! The [`ComputeController`] owns the workers. It broadcasts commands (create an input, a
//! stream or a dataflow, append updates, advance time, peek, allow compaction, drop) that every
//! worker applies in the same order, and gathers the workers' answers. Every collection a
//! reader can see ends in an arrangement: an indexed, multi-versioned trace of `(key, value,
//! time, diff)` updates, registered under the catalog id of the object it materializes. Streams
//! (append-only sources) are the exception: they are not arranged, but fed to each dataflow
//! that reads them. A subscription's dataflow ends in a sink that sends its changes, with
//! the frontier that closes their times, to one subscriber. Workers report how far each
//! arrangement has got to one [`Frontiers`] table, which is how anyone waits for progress, and
//! how much each collection's arrangements hold to one [`ArrangementSizes`] table.
//!
//! This crate knows plans (from `plan`) and rows (from `repr`); it knows nothing of SQL text,
//! the catalog, storage or clients, and no type of timely or differential leaves it.

mod arrangement;
mod arrangement_sizes;
mod command;
mod controller;
mod errors;
mod frontier;
mod memory_meters;
mod peek;
mod render;
mod row_chunk;
mod row_container;
mod stream;
mod subscribe;
mod watermarks;
mod worker;

pub use arrangement::ArrangementLayout;
pub use arrangement_sizes::{ArrangementSize, ArrangementSizes, InputSize};
pub use command::{DataflowDesc, PeekFilter};
pub use controller::{ComputeController, ComputeError};
pub use errors::{DataflowErrorCounts, DataflowErrors};
pub use frontier::{Frontier, Frontiers};
pub use subscribe::{ClosedTime, SubscriptionProgress, SubscriptionUpdates};

/// An update of an arranged input: a `(key, value)` pair and its change in multiplicity.
pub type KeyedUpdate = ((repr::Row, repr::Row), repr::Diff);
