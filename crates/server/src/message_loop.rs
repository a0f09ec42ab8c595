//! One connection's message loop: pgwire's own, except for messages pgwire cannot decode.
//!
//! pgwire closes a connection without a word when its decoder rejects a message, and its
//! decoder panics on a Parse or Bind whose counts overrun the message. Here messages are
//! checked before they are decoded ([`crate::frame_check`]), and a malformed one is answered
//! as PostgreSQL answers it, with a FATAL 08P01 ErrorResponse, before the connection closes.

use std::io;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::ErrorInfo;
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{negotiate_tls, process_error, process_message};
use tokio::net::TcpStream;
use tokio_util::codec::{Framed, FramedParts};

use crate::connection::Prepared;
use crate::frame_check::{CheckedStream, Rejection};
use crate::ConnectionHandlers;

/// How long a client has to complete its startup, as in pgwire's own loop.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs the connection on `socket` until the client leaves, a FATAL error ends it, or it
/// sends a message that cannot be decoded.
pub(crate) async fn process_socket(
    socket: TcpStream,
    handlers: &ConnectionHandlers,
) -> io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        () = &mut startup_timeout => return Ok(()),
        negotiated = negotiate_tls::<Prepared>(socket, None) => negotiated?,
    };
    let Some(negotiated) = negotiated else {
        return Ok(());
    };
    let rejection = Rejection::default();
    let parts = negotiated.into_parts();
    let checked = CheckedStream::new(parts.io, parts.read_buf, rejection.clone());
    let mut checked_parts = FramedParts::new(checked, parts.codec);
    checked_parts.write_buf = parts.write_buf;
    let mut socket = Framed::from_parts(checked_parts);
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let next = AssertUnwindSafe(socket.next()).catch_unwind();
        let decoded = if starting {
            tokio::select! {
                () = &mut startup_timeout => break,
                decoded = next => decoded,
            }
        } else {
            next.await
        };
        let message = match decoded {
            Ok(Some(Ok(message))) => message,
            Ok(None) => {
                if let Some(reason) = rejection.reason() {
                    reject(&mut socket, &format!("invalid frontend message: {reason}")).await;
                }
                break;
            }
            Ok(Some(Err(error))) => {
                reject(&mut socket, &format!("invalid frontend message: {error}")).await;
                break;
            }
            Err(_panic) => {
                reject(
                    &mut socket,
                    "invalid frontend message: its contents overrun its length",
                )
                .await;
                break;
            }
        };
        // The client is leaving; some wait for the server to close the socket.
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            break;
        }
        let is_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(is_extended_query) => is_extended_query,
            _ => message.is_extended_query(),
        };
        // A CancelRequest comes on a connection of its own, which it ends.
        let is_cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let processed = process_message(
            message,
            &mut socket,
            handlers.startup.clone(),
            handlers.connection.clone(),
            handlers.connection.clone(),
            handlers.connection.clone(),
            handlers.cancel.clone(),
        )
        .await;
        if let Err(error) = processed {
            let is_fatal = error.is_fatal();
            process_error(&mut socket, error, is_extended_query).await?;
            if is_fatal {
                break;
            }
        }
        if is_cancel_request {
            break;
        }
    }
    Ok(())
}

/// Tells the client its message was malformed; the connection closes after it.
async fn reject<S>(socket: &mut S, message: &str)
where
    S: futures::Sink<PgWireBackendMessage> + Unpin,
{
    let error = ErrorInfo::new("FATAL".into(), "08P01".into(), message.into());
    tracing::debug!(
        message,
        "closing a connection that sent a malformed message"
    );
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(error.into()))
        .await;
}
