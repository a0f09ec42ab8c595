//! Checkpoints: compacting the log into a snapshot of every table.
//!
//! The log grows with every write; replaying all of history on restart would take time
//! proportional to history, not to the data. After enough rows have been logged, the
//! coordinator picks the last committed time as the checkpoint's time: holding the sequencer
//! only for that instant (so no write is half done), it takes a read hold at that time and
//! notes the sources' positions and the streams' log lengths, which belong to it. Then,
//! with writes going on, it reads every table as of that time (the hold keeps compute from
//! compacting it away) and hands the consolidated contents to the log, which writes them as
//! a snapshot and deletes the segments holding only earlier records. Disk use and restart
//! time then follow the tables' size, and writes never wait for a checkpoint. Streams are
//! not in the snapshot: their history is their stream logs.

use std::sync::atomic::Ordering;
use std::time::Instant;

use compute::PeekFilter;
use repr::ChangeBatch;

use crate::coordinator::Coordinator;
use crate::error::CoordError;

impl Coordinator {
    /// Counts `rows` newly logged rows and starts a checkpoint in the background when enough
    /// have accumulated (and none is running).
    pub(crate) fn note_logged_rows(&self, rows: u64) {
        let total = self
            .rows_since_checkpoint
            .fetch_add(rows, Ordering::Relaxed)
            + rows;
        if total < self.checkpoint_after_rows || self.checkpointing.swap(true, Ordering::AcqRel) {
            return;
        }
        let Ok(this) = self.arc() else { return };
        tokio::spawn(async move {
            if let Err(e) = this.checkpoint().await {
                tracing::warn!(error = %e, "checkpoint failed; the log keeps growing until the next one");
            }
            this.checkpointing.store(false, Ordering::Release);
        });
    }

    /// Writes a snapshot of every table at the last committed time and truncates the log;
    /// writes go on meanwhile.
    pub(crate) async fn checkpoint(&self) -> Result<(), CoordError> {
        let started = Instant::now();
        let (hold, logged, tables, positions, stream_ends, watermarks) = {
            let _sequencer = self.lock_sequencer_to_finish().await;
            let tables: Vec<_> = self
                .table_codecs
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .filter(|(id, _)| !self.streams.contains(**id))
                .map(|(id, codecs)| (*id, codecs.clone()))
                .collect();
            (
                self.holds.hold_read_time(&self.oracle),
                self.rows_since_checkpoint.load(Ordering::Relaxed),
                tables,
                self.sources.positions(),
                self.streams.visible_ends(),
                self.watermarks(),
            )
        };
        let time = hold.time();
        let mut contents = Vec::with_capacity(tables.len());
        for (id, codecs) in tables {
            match self.compute.peek(id, time, PeekFilter::All).await {
                Ok(rows) => contents.push((id, codecs, rows)),
                // Dropped since the checkpoint's time: recovery will not look for it.
                Err(compute::ComputeError::UnknownArrangement(_)) => continue,
                Err(e) => return Err(e.into()),
            }
        }
        drop(hold);
        let rows: usize = contents.iter().map(|(_, _, rows)| rows.len()).sum();
        let this = self.arc()?;
        // Decoding and writing millions of rows is blocking work: off the async runtime.
        tokio::task::spawn_blocking(move || {
            let snapshot = contents
                .into_iter()
                .map(|(id, codecs, rows)| {
                    let batch = codecs.decode(&rows)?;
                    let diffs = rows.iter().map(|(_, d)| *d).collect();
                    Ok((
                        id,
                        ChangeBatch {
                            time,
                            rows: batch,
                            diffs,
                        },
                    ))
                })
                .collect::<Result<Vec<_>, CoordError>>()?;
            this.wal
                .checkpoint(time, snapshot, positions, stream_ends, watermarks)
                .map_err(CoordError::from)
        })
        .await
        .map_err(|e| CoordError::Internal(format!("checkpoint task failed: {e}")))??;
        // Rows logged while the checkpoint ran count toward the next one.
        self.rows_since_checkpoint
            .fetch_sub(logged, Ordering::Relaxed);
        tracing::info!(
            through = time,
            rows,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "checkpoint written; the log before it is deleted"
        );
        Ok(())
    }
}
