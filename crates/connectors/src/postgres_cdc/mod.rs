//! `postgres-cdc`: the tables of a PostgreSQL database, as an initial snapshot followed by
//! their changes, read by logical replication with the `pgoutput` plugin.
//!
//! ```sql
//! CREATE SOURCE pg WITH (connector = 'postgres-cdc', hostname = '127.0.0.1', port = '5432',
//!     username = 'postgres', password = '', database.name = 'shop',
//!     publication.name = 'fluxion_pub', slot.name = 'fluxion_slot');
//! CREATE TABLE orders (id int PRIMARY KEY, amount numeric(12,2), placed timestamptz)
//!     FROM pg TABLE 'public.orders';
//! ```
//!
//! Options: `hostname` (default `127.0.0.1`), `port` (5432), `username` (`postgres`),
//! `password` (empty), `database.name` (required), `publication.name`
//! (`fluxion_publication`: created for the source's tables if missing, extended with any it
//! lacks), `slot.name` (`fluxion_slot`: created if missing, reused otherwise). The upstream
//! needs `wal_level = logical`.
//!
//! Output 0, the source's own relation, has one column `lsn` and gets no rows. Every other
//! output reads the upstream table its reference names; its declared columns are matched
//! to the table's by name. Each upstream transaction becomes changes of one batch; the
//! position (see [`position`]) is the LSN after the batch's last transaction and the LSN of
//! each output's snapshot. Upstream is acknowledged only as far as the coordinator reports
//! durable, so the slot keeps every change a restart may need.

mod catalog;
mod changes;
mod columns;
mod config;
mod output;
pub(crate) mod pgoutput;
mod position;
mod reader;
mod session;
mod snapshot;
pub(crate) mod value;

use std::future::Future;
use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef};

pub(crate) use config::CONNECTOR;
pub(crate) use reader::CdcReader;

use crate::{ConnectorError, SourceOptions};

/// The columns of a `postgres-cdc` source's own relation: `lsn`.
pub(crate) fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![Field::new("lsn", DataType::Utf8, true)]))
}

/// The columns of upstream table `reference` (`schema.table`) as Arrow fields, typed as the
/// connector reads them, and the indexes of its primary key columns if it has one: what
/// `CREATE TABLE t FROM source TABLE 'reference'` declares when it lists no columns.
///
/// ```no_run
/// # use connectors::{postgres_cdc, SourceOptions};
/// let options = SourceOptions::new([
///     ("connector".to_string(), "postgres-cdc".to_string()),
///     ("database.name".to_string(), "shop".to_string()),
/// ]);
/// let (schema, key) = postgres_cdc::upstream_columns(&options, "public.orders")?;
/// # Ok::<(), connectors::ConnectorError>(())
/// ```
pub fn upstream_columns(
    options: &SourceOptions,
    reference: &str,
) -> Result<(SchemaRef, Option<Vec<usize>>), ConnectorError> {
    let config = config::CdcConfig::from_options(options)?;
    run(async {
        let client = catalog::connect(&config).await?;
        let table = catalog::UpstreamTable::describe(&client, reference).await?;
        Ok((table.schema(), table.key))
    })
}

/// Drops the source's replication slot (`DROP SOURCE … WITH (drop_slot = true)`), so the
/// upstream stops keeping WAL for it; nothing happens if it does not exist. The source must
/// not be running.
pub fn drop_slot(options: &SourceOptions) -> Result<(), ConnectorError> {
    let config = config::CdcConfig::from_options(options)?;
    run(async {
        let client = catalog::connect(&config).await?;
        catalog::drop_slot(&client, &config.slot).await
    })
}

/// Runs `work` on a runtime of its own (the callers are not async).
fn run<T>(work: impl Future<Output = Result<T, ConnectorError>>) -> Result<T, ConnectorError> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| ConnectorError::Upstream(format!("cannot start a runtime: {e}")))?
        .block_on(work)
}
