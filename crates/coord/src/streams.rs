//! Hydration: a dataflow that reads streams (append-only sources, whose logs `pipelines`
//! keeps, see [`pipelines::Streams`]) is fed their history once, when it is built. How far
//! each build has got is kept in [`crate::hydration`].

use std::collections::HashMap;
use std::time::Instant;

use repr::{Diff, GlobalId, Row, Timestamp};
use tokio::sync::MutexGuard;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::hydration::{describe, PROGRESS_INTERVAL};

/// Rows of history sent to compute at a time while a dataflow is hydrated.
const HYDRATION_CHUNK_ROWS: usize = 64 * 1024;

impl Coordinator {
    /// Feeds dataflow `dataflow`, just built, the history of every stream among `imports` (the
    /// collections its plan reads) through the last committed time, each row at its commit
    /// time but no earlier than `start` (the dataflow's start: a view starts at the read
    /// time, a subscription may start earlier), then lets its inputs of the streams advance
    /// past the read time.
    ///
    /// The caller holds the sequencer while it builds the dataflow, so that no commit falls
    /// between the build and the read time; if it hands it over as `sequencer`, it is let go
    /// once the read time is taken, and commits go on while the history is fed (they reach
    /// the dataflow at their later times, see `compute::stream`).
    pub(crate) async fn hydrate_streams(
        &self,
        dataflow: GlobalId,
        imports: Vec<GlobalId>,
        start: Timestamp,
        sequencer: Option<MutexGuard<'_, ()>>,
    ) -> Result<(), CoordError> {
        let time = self.oracle.read_time();
        drop(sequencer);
        self.begin_hydration(dataflow, &imports);
        let fed = self.feed_streams(dataflow, imports, start, time).await;
        self.compute.finish_hydration(dataflow, time + 1);
        fed?;
        self.hydrations.fed_all(dataflow, time);
        Ok(())
    }

    /// Starts tracking the build of `dataflow`, which reads `imports`: the rows of the
    /// arranged ones are its at once, the streams' history is still to feed.
    fn begin_hydration(&self, dataflow: GlobalId, imports: &[GlobalId]) {
        let sizes = self.compute.arrangement_sizes().all();
        let mut arranged_rows = 0;
        let mut stream_bytes = 0;
        for import in imports {
            match self.streams.get(*import) {
                Some(log) => stream_bytes += log.len_bytes(),
                None => {
                    let records = sizes.get(import).map_or(0, |size| size.records);
                    arranged_rows += u64::try_from(records).unwrap_or(0);
                }
            }
        }
        self.hydrations.begin(
            dataflow,
            arranged_rows,
            stream_bytes,
            self.compute.frontiers(),
        );
    }

    /// Feeds a new materialized view's dataflow `dataflow`, whose plan reads `imports`. A
    /// view that waits for watermarks (`waits_for`, the sources whose watermarks close its
    /// windows) is fed the streams' history at the times it was committed, from the start,
    /// with each source's watermark history, so that its windows close as they did when the
    /// rows arrived (a row that came after its window closed stays out of it). A source that
    /// is not a stream has no history of its watermark: its latest (in `watermarks`) holds
    /// from `start` on. Any other view is fed as [`Self::hydrate_streams`] does, which also
    /// says what becomes of `sequencer`.
    pub(crate) async fn hydrate_view(
        &self,
        dataflow: GlobalId,
        imports: Vec<GlobalId>,
        waits_for: &[GlobalId],
        start: Timestamp,
        watermarks: &HashMap<GlobalId, i64>,
        sequencer: Option<MutexGuard<'_, ()>>,
    ) -> Result<(), CoordError> {
        if waits_for.is_empty() {
            return self
                .hydrate_streams(dataflow, imports, start, sequencer)
                .await;
        }
        let time = self.oracle.read_time();
        drop(sequencer);
        self.begin_hydration(dataflow, &imports);
        let fed = self.feed_streams(dataflow, imports, 0, time).await;
        let mut histories = match fed {
            Ok(histories) => histories,
            Err(e) => {
                self.compute.finish_hydration(dataflow, time + 1);
                return Err(e);
            }
        };
        for &source in waits_for {
            let steps = histories.remove(&source).unwrap_or_else(|| {
                watermarks
                    .get(&source)
                    .map(|watermark| vec![(start, *watermark)])
                    .unwrap_or_default()
            });
            self.compute.hydrate_watermarks(dataflow, source, steps);
        }
        self.compute.finish_hydration(dataflow, time + 1);
        self.hydrations.fed_all(dataflow, time);
        Ok(())
    }

    /// Feeds `dataflow` the history through `time` of the streams among `imports`, rows no
    /// earlier than `start`; returns each stream's watermark history, as `(time, watermark)`
    /// steps, by stream.
    async fn feed_streams(
        &self,
        dataflow: GlobalId,
        mut imports: Vec<GlobalId>,
        start: Timestamp,
        time: Timestamp,
    ) -> Result<HashMap<GlobalId, Vec<(Timestamp, i64)>>, CoordError> {
        imports.sort();
        imports.dedup();
        let mut histories = HashMap::new();
        let mut bytes_before = 0;
        let mut logged_at = Instant::now();
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
            let mut reader = log.read_through(time)?;
            while let Some(batch) = reader.next() {
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
                    let fed = part.len() as u64;
                    self.compute.hydrate_stream(dataflow, stream, part).await?;
                    self.hydrations
                        .fed(dataflow, fed, bytes_before + reader.offset());
                    if logged_at.elapsed() >= PROGRESS_INTERVAL {
                        logged_at = Instant::now();
                        self.log_hydration(dataflow);
                    }
                }
            }
            rows += chunk.len();
            let fed = chunk.len() as u64;
            if !chunk.is_empty() {
                self.compute.hydrate_stream(dataflow, stream, chunk).await?;
            }
            bytes_before += reader.offset();
            self.hydrations.fed(dataflow, fed, bytes_before);
            tracing::info!(%dataflow, %stream, rows, "dataflow fed the stream's history");
            histories.insert(stream, reader.watermark_steps().to_vec());
        }
        Ok(histories)
    }

    fn log_hydration(&self, dataflow: GlobalId) {
        let status = self.hydrations.status(self.compute.frontiers());
        if let Some(status) = status.iter().find(|status| status.id == dataflow) {
            tracing::info!(%dataflow, progress = %describe(status), "building a dataflow");
        }
    }
}
