//! Replication sessions (`replication=database`): creating a slot that exports its starting
//! snapshot, and streaming a slot's changes.
//!
//! A slot created with `SNAPSHOT 'export'` returns its consistent point and the name of a
//! snapshot that shows the database exactly as of that point; the snapshot stays importable
//! while the creating session is idle, so the session is kept until an ordinary connection
//! has imported it (`SET TRANSACTION SNAPSHOT`), then dropped.

use std::time::Duration;

use pgwire_replication::{Lsn, PgWireError, ReplicationClient};

use super::config::CdcConfig;
use crate::ConnectorError;

/// How long to wait for a slot still held by a session that is going away.
const SLOT_BUSY_RETRIES: u32 = 20;
/// The wait between tries.
const SLOT_BUSY_WAIT: Duration = Duration::from_millis(250);

/// A replication session idle after creating a slot, keeping its snapshot importable.
pub(crate) struct ExportedSnapshot {
    /// The session; dropping it ends the snapshot (and a temporary slot).
    pub session: ReplicationClient,
    /// The snapshot shows every transaction that committed before this LSN, and none
    /// after.
    pub consistent_point: Lsn,
    /// The snapshot's name for `SET TRANSACTION SNAPSHOT`.
    pub name: String,
}

/// Creates logical slot `slot` (session-scoped if `temporary`) and exports its snapshot.
pub(crate) async fn create_slot(
    config: &CdcConfig,
    slot: &str,
    temporary: bool,
) -> Result<ExportedSnapshot, ConnectorError> {
    let failed = |e: PgWireError| {
        ConnectorError::Upstream(format!(
            "creating replication slot \"{slot}\" on {}: {e}",
            config.address()
        ))
    };
    let mut session =
        ReplicationClient::connect_gated(config.replication(slot, Lsn::ZERO, Lsn::ZERO))
            .await
            .map_err(failed)?;
    let scope = if temporary { " TEMPORARY" } else { "" };
    let rows = session
        .simple_query(&format!(
            "CREATE_REPLICATION_SLOT {slot}{scope} LOGICAL pgoutput (SNAPSHOT 'export')"
        ))
        .await
        .map_err(failed)?;
    let text = |i: usize| {
        rows.first()
            .and_then(|row| row.get(i))
            .and_then(|value| value.as_ref())
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
    };
    let answer = || {
        failed(PgWireError::Protocol(
            "unexpected CREATE_REPLICATION_SLOT answer".into(),
        ))
    };
    let consistent_point = text(1)
        .and_then(|lsn| Lsn::parse(&lsn).ok())
        .ok_or_else(answer)?;
    let name = text(2).ok_or_else(answer)?;
    Ok(ExportedSnapshot {
        session,
        consistent_point,
        name,
    })
}

/// Starts streaming slot `slot` from `start`, acknowledging `acknowledged` until told
/// more is durable. Waits while another session that is ending still holds the slot.
pub(crate) async fn start_stream(
    config: &CdcConfig,
    start: Lsn,
    acknowledged: Lsn,
) -> Result<ReplicationClient, ConnectorError> {
    let mut tries = 0;
    loop {
        let mut client =
            ReplicationClient::connect(config.replication(&config.slot, start, acknowledged))
                .await
                .map_err(|e| stream_failed(config, e))?;
        match client.wait_started().await {
            Ok(()) => return Ok(client),
            Err(e) if is_slot_busy(&e) && tries < SLOT_BUSY_RETRIES => {
                tries += 1;
                tokio::time::sleep(SLOT_BUSY_WAIT).await;
            }
            Err(e) => return Err(stream_failed(config, e)),
        }
    }
}

/// The error of a replication stream that failed.
pub(crate) fn stream_failed(config: &CdcConfig, e: PgWireError) -> ConnectorError {
    ConnectorError::Upstream(format!(
        "replication from slot \"{}\" on {}: {e}",
        config.slot,
        config.address()
    ))
}

/// Whether `e` says that another session holds the slot.
fn is_slot_busy(e: &PgWireError) -> bool {
    matches!(e, PgWireError::Server(message) if message.contains("is active for PID"))
}
