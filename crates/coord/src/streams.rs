//! Hydration: a dataflow that reads streams (append-only sources, whose logs `pipelines`
//! keeps, see [`pipelines::Streams`]) is fed their history once, when it is built.

use repr::{Diff, GlobalId, Row, Timestamp};

use crate::coordinator::Coordinator;
use crate::error::CoordError;

/// Rows of history sent to compute at a time while a dataflow is hydrated.
const HYDRATION_CHUNK_ROWS: usize = 64 * 1024;

impl Coordinator {
    /// Feeds dataflow `dataflow`, just built, the history of every stream among `imports` (the
    /// collections its plan reads) through the last committed time, each row at its commit
    /// time but no earlier than `start` (the dataflow's start: a view starts at the read
    /// time, a subscription may start earlier), then lets its inputs advance past the read
    /// time. The caller holds the sequencer, so no commit interleaves.
    pub(crate) async fn hydrate_streams(
        &self,
        dataflow: GlobalId,
        mut imports: Vec<GlobalId>,
        start: Timestamp,
    ) -> Result<(), CoordError> {
        let time = self.oracle.read_time();
        imports.sort();
        imports.dedup();
        let mut hydrated = false;
        for stream in imports {
            let Some(log) = self.streams.get(stream) else {
                continue;
            };
            let codecs = self
                .table_codecs
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&stream)
                .cloned()
                .ok_or_else(|| CoordError::Internal(format!("stream {stream} has no codecs")))?;
            let mut rows = 0usize;
            let mut chunk: Vec<(Row, Timestamp, Diff)> = Vec::new();
            for batch in log.read_through(time)? {
                let batch = batch?;
                let encoded = codecs
                    .rows
                    .encode(&batch.rows)
                    .map_err(|e| CoordError::Internal(e.to_string()))?;
                let at = batch.time.max(start);
                chunk.extend(
                    encoded
                        .into_iter()
                        .zip(batch.diffs)
                        .map(|(row, diff)| (row, at, diff)),
                );
                if chunk.len() >= HYDRATION_CHUNK_ROWS {
                    rows += chunk.len();
                    let part = std::mem::take(&mut chunk);
                    self.compute.hydrate_stream(dataflow, stream, part).await?;
                }
            }
            rows += chunk.len();
            if !chunk.is_empty() {
                self.compute.hydrate_stream(dataflow, stream, chunk).await?;
            }
            tracing::info!(%dataflow, %stream, rows, "dataflow fed the stream's history");
            hydrated = true;
        }
        if hydrated {
            self.compute.advance_inputs(time + 1);
        }
        Ok(())
    }
}
