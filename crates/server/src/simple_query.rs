//! The simple query protocol's message flow: run the statements of one Query message, send
//! each one's response before the next runs, and end with ReadyForQuery carrying the session's own transaction
//! status (so ROLLBACK TO SAVEPOINT out of a failed block reports `T`, which pgwire's default
//! flow, deriving the status from the responses alone, cannot).

use std::fmt::Debug;
use std::sync::Arc;

use futures::{Sink, SinkExt};
use pgwire::api::query::{send_execution_response, send_query_response, send_ready_for_query};
use pgwire::api::results::Response;
use pgwire::api::{ClientInfo, ConnectionHandle, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::response::{EmptyQueryResponse, TransactionStatus};
use pgwire::messages::PgWireBackendMessage;

/// Sends the response of one statement of a Query message (rows as they are computed);
/// returns whether a COPY FROM STDIN started (the COPY handlers then finish the message's
/// flow).
pub(crate) async fn send_response<C>(client: &mut C, response: Response) -> PgWireResult<bool>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    match response {
        Response::EmptyQuery => {
            client
                .feed(PgWireBackendMessage::EmptyQueryResponse(
                    EmptyQueryResponse::new(),
                ))
                .await?;
        }
        Response::Query(results) => send_query_response(client, results, true).await?,
        Response::Execution(tag)
        | Response::TransactionStart(tag)
        | Response::TransactionEnd(tag) => send_execution_response(client, tag).await?,
        Response::Error(error) => {
            client
                .feed(PgWireBackendMessage::ErrorResponse((*error).into()))
                .await?;
        }
        Response::CopyIn(copy) => {
            pgwire::api::copy::send_copy_in_response(client, copy).await?;
            client.set_state(PgWireConnectionState::CopyInProgress(false));
            return Ok(true);
        }
        Response::CopyOut(copy) => crate::copy_out::send_copy_out(client, copy).await?,
        Response::CopyBoth(copy) => {
            pgwire::api::copy::send_copy_both_response(client, copy).await?;
            client.set_state(PgWireConnectionState::CopyInProgress(false));
            return Ok(true);
        }
    }
    Ok(false)
}

/// A receiver that fires when the client cancels the query now starting.
pub(crate) async fn cancel_receiver<C: ClientInfo>(
    client: &C,
) -> Option<futures::channel::oneshot::Receiver<()>> {
    let handle = client.session_extensions().get::<Arc<ConnectionHandle>>()?;
    Some(handle.start_query().await)
}

/// The ReadyForQuery status of a session.
pub(crate) fn wire_status(status: coord::TransactionStatus) -> TransactionStatus {
    match status {
        coord::TransactionStatus::Idle => TransactionStatus::Idle,
        coord::TransactionStatus::InBlock => TransactionStatus::Transaction,
        coord::TransactionStatus::Failed => TransactionStatus::Error,
    }
}

/// Ends a Query message's flow (unless a COPY took it over) with ReadyForQuery in `status`.
pub(crate) async fn finish_query<C>(
    client: &mut C,
    copy_started: bool,
    status: TransactionStatus,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    if !copy_started {
        client.set_state(PgWireConnectionState::ReadyForQuery);
        client.set_transaction_status(status);
        send_ready_for_query(client, status).await?;
    }
    Ok(())
}
