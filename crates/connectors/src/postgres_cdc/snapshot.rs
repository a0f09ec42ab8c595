//! Reading the initial snapshot: each table as it was at a slot's consistent point, read in
//! chunks through a cursor, in a transaction that imported the slot's exported snapshot.

use std::collections::VecDeque;

use pgwire_replication::Lsn;
use tokio_postgres::{Client, SimpleQueryMessage};

use super::catalog::upstream;
use crate::{ConnectorError, SnapshotProgress};

/// Rows fetched per chunk (per batch).
const CHUNK_ROWS: usize = 10_000;

/// A snapshot being read, table by table.
pub(crate) struct SnapshotRead {
    client: Client,
    /// The outputs (indexes of the reader's table outputs) still to read, the first one
    /// being read when `cursor_open`.
    pending: VecDeque<usize>,
    cursor_open: bool,
    /// The LSN the snapshot shows the database at.
    pub lsn: Lsn,
    /// Rows read so far, and about how many there are (from the upstream's statistics).
    rows_read: u64,
    rows_estimated: Option<u64>,
}

/// Rows of one output's snapshot.
pub(crate) struct Chunk {
    /// The output (index of the reader's table outputs).
    pub output: usize,
    /// Per row, the text of each selected column (`None` for NULL).
    pub rows: Vec<Vec<Option<String>>>,
    /// Whether these are the output's first rows.
    pub is_first: bool,
    /// Whether these are its last rows.
    pub is_last: bool,
}

impl SnapshotRead {
    /// Opens a read-only transaction on `client` that sees exported snapshot `name` (taken at
    /// `lsn`), to read the snapshot of `outputs`, which read `tables` (quoted names, one per
    /// output).
    pub async fn begin(
        client: Client,
        name: &str,
        lsn: Lsn,
        outputs: VecDeque<usize>,
        tables: &[String],
    ) -> Result<Self, ConnectorError> {
        let rows_estimated = estimate_rows(&client, tables).await?;
        client
            .batch_execute(&format!(
                "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY; SET TRANSACTION SNAPSHOT '{}'",
                name.replace('\'', "''")
            ))
            .await
            .map_err(upstream("importing the replication slot's snapshot"))?;
        Ok(Self {
            client,
            pending: outputs,
            cursor_open: false,
            lsn,
            rows_read: 0,
            rows_estimated,
        })
    }

    /// How far the snapshot has got.
    pub fn progress(&self) -> SnapshotProgress {
        SnapshotProgress {
            rows_read: self.rows_read,
            rows_estimated: self.rows_estimated,
            done: self.pending.is_empty(),
        }
    }

    /// Whether `output` is still to be read, or being read.
    pub fn is_pending(&self, output: usize) -> bool {
        self.pending.contains(&output)
    }

    /// The next rows; `select(output)` is the query of an output's rows. `None` once every
    /// output has been read.
    pub async fn next_chunk(
        &mut self,
        select: impl Fn(usize) -> String,
    ) -> Result<Option<Chunk>, ConnectorError> {
        let Some(&output) = self.pending.front() else {
            return Ok(None);
        };
        let doing = "reading the snapshot";
        let is_first = !self.cursor_open;
        if is_first {
            self.client
                .batch_execute(&format!(
                    "DECLARE fluxion_snapshot NO SCROLL CURSOR FOR {}",
                    select(output)
                ))
                .await
                .map_err(upstream(doing))?;
            self.cursor_open = true;
        }
        let rows: Vec<Vec<Option<String>>> = self
            .client
            .simple_query(&format!("FETCH {CHUNK_ROWS} FROM fluxion_snapshot"))
            .await
            .map_err(upstream(doing))?
            .iter()
            .filter_map(|message| match message {
                SimpleQueryMessage::Row(row) => Some(
                    (0..row.len())
                        .map(|i| row.get(i).map(str::to_string))
                        .collect(),
                ),
                _ => None,
            })
            .collect();
        self.rows_read += rows.len() as u64;
        let is_last = rows.len() < CHUNK_ROWS;
        if is_last {
            self.client
                .batch_execute("CLOSE fluxion_snapshot")
                .await
                .map_err(upstream(doing))?;
            self.cursor_open = false;
            self.pending.pop_front();
        }
        Ok(Some(Chunk {
            output,
            rows,
            is_first,
            is_last,
        }))
    }

    /// Ends the snapshot's transaction.
    pub async fn finish(self) -> Result<(), ConnectorError> {
        self.client
            .batch_execute("COMMIT")
            .await
            .map_err(upstream("ending the snapshot"))
    }
}

/// About how many rows `tables` (quoted names) hold, by the upstream's statistics
/// (`pg_class.reltuples`); `None` if a table has never been analyzed or vacuumed.
async fn estimate_rows(client: &Client, tables: &[String]) -> Result<Option<u64>, ConnectorError> {
    let mut total = 0u64;
    for table in tables {
        let estimate: f64 = client
            .query_one(
                "SELECT reltuples::float8 FROM pg_class WHERE oid = $1::text::regclass",
                &[table],
            )
            .await
            .map_err(upstream("estimating the snapshot's rows"))?
            .get(0);
        if estimate < 0.0 {
            return Ok(None);
        }
        total += estimate as u64;
    }
    Ok(Some(total))
}
