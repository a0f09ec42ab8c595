//! One connection's message loop: pgwire's own, except for messages pgwire cannot decode.
//!
//! pgwire closes a connection without a word when its decoder rejects a message, and its
//! decoder panics on a Parse or Bind whose counts overrun the message. Here messages are
//! checked before they are decoded ([`crate::frame_check`]), and a malformed one is answered
//! as PostgreSQL answers it, with a FATAL 08P01 ErrorResponse, before the connection closes.
//! The loop also ends a connection the server ends: one `pg_terminate_backend` names (57P01,
//! stopping the statement it runs), or one idle past `idle_in_transaction_session_timeout`
//! (25P03) or `idle_session_timeout` (57P05).

use std::io;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use coord::IdleTimeout;
use futures::{FutureExt, SinkExt, StreamExt};
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use pgwire::tokio::server::{
    negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec,
};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;
use tokio_util::codec::{Framed, FramedParts};

use crate::backends::Registration;
use crate::connection::Prepared;
use crate::frame_check::{CheckedStream, InvalidText, Rejection};
use crate::ConnectionHandlers;

/// How long a client has to complete its startup, as in pgwire's own loop.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// A client's connection after SSL negotiation, its messages checked before pgwire decodes
/// them (see [`crate::frame_check`]).
pub(crate) type ClientSocket = Framed<CheckedStream<MaybeTls>, PgWireMessageServerCodec<Prepared>>;

/// Answers the client's SSLRequest, if it sends one (with TLS if `tls` is given, else it
/// goes on in the clear), and frames the connection; `None` if the client left. What the
/// checks find is noted in the returned [`Checks`].
pub(crate) async fn negotiate(
    socket: TcpStream,
    tls: Option<TlsAcceptor>,
) -> io::Result<Option<(ClientSocket, Checks)>> {
    let Some(negotiated) = negotiate_tls::<Prepared>(socket, tls).await? else {
        return Ok(None);
    };
    let checks = Checks::default();
    let parts = negotiated.into_parts();
    let checked = CheckedStream::new(
        parts.io,
        parts.read_buf,
        checks.rejection.clone(),
        checks.invalid_text.clone(),
    );
    let mut checked_parts = FramedParts::new(checked, parts.codec);
    checked_parts.write_buf = parts.write_buf;
    Ok(Some((Framed::from_parts(checked_parts), checks)))
}

/// What the checks of a connection's messages find.
#[derive(Default)]
pub(crate) struct Checks {
    /// Why the connection's stream ended early, if it did.
    rejection: Rejection,
    /// Invalid UTF-8 in the text of the message last decoded.
    invalid_text: InvalidText,
}

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
        negotiated = negotiate(socket, handlers.tls.clone()) => negotiated?,
    };
    let Some((mut socket, checks)) = negotiated else {
        return Ok(());
    };
    // The client's backend, once its startup has registered one.
    let mut registration = None;
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        if registration.is_none() && !starting {
            registration = crate::startup::registration_of(&socket);
        }
        let idle_timeout = match (socket.state(), &registration) {
            (PgWireConnectionState::ReadyForQuery, Some(registration)) => {
                registration.backend().idle_timeout()
            }
            _ => None,
        };
        let next = AssertUnwindSafe(socket.next()).catch_unwind();
        let waited = tokio::select! {
            () = &mut startup_timeout, if starting => break,
            () = terminated(registration.as_deref()) => Waited::Ended(Ending::Terminated),
            timeout = idle(idle_timeout) => Waited::Ended(Ending::Idle(timeout)),
            decoded = next => Waited::Message(decoded),
        };
        let decoded = match waited {
            Waited::Message(decoded) => decoded,
            Waited::Ended(ending) => {
                end_with(&mut socket, ending.code(), ending.message()).await;
                break;
            }
        };
        let message = match decoded {
            Ok(Some(Ok(message))) => message,
            Ok(None) => {
                if let Some(reason) = checks.rejection.reason() {
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
        // pgwire has read the text with the invalid bytes replaced: the statement is refused
        // as PostgreSQL refuses it, and the connection goes on (after an error in a batch,
        // the rest of the batch up to Sync is skipped as it is).
        let invalid_text = checks.invalid_text.take();
        let skipping = matches!(socket.state(), PgWireConnectionState::AwaitingSync);
        if let Some(bytes) = invalid_text.filter(|_| !skipping) {
            handlers.connection.fail_transaction().await;
            let error = ErrorInfo::new(
                "ERROR".into(),
                "22021".into(),
                format!("invalid byte sequence for encoding \"UTF8\": {bytes}"),
            );
            let error = PgWireError::UserError(Box::new(error));
            process_error(&mut socket, error, is_extended_query).await?;
            continue;
        }
        // A CancelRequest comes on a connection of its own, which it ends.
        let is_cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let processing = process_message(
            message,
            &mut socket,
            handlers.startup.clone(),
            handlers.connection.clone(),
            handlers.connection.clone(),
            handlers.connection.clone(),
            handlers.backends.clone(),
        );
        // Ending the connection stops the statement it runs.
        let processed = tokio::select! {
            processed = processing => Some(processed),
            () = terminated(registration.as_deref()) => None,
        };
        let Some(processed) = processed else {
            let ending = Ending::Terminated;
            end_with(&mut socket, ending.code(), ending.message()).await;
            break;
        };
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

/// What waiting for the client's next message ended with.
enum Waited<M> {
    Message(M),
    Ended(Ending),
}

/// Why the server ends a connection its client did not end.
enum Ending {
    /// `pg_terminate_backend`.
    Terminated,
    /// The client left its session idle for longer than it allows.
    Idle(IdleTimeout),
}

impl Ending {
    fn code(&self) -> &'static str {
        match self {
            Ending::Terminated => "57P01",
            Ending::Idle(IdleTimeout::InTransaction(_)) => "25P03",
            Ending::Idle(IdleTimeout::Session(_)) => "57P05",
        }
    }

    fn message(&self) -> &'static str {
        match self {
            Ending::Terminated => "terminating connection due to administrator command",
            Ending::Idle(IdleTimeout::InTransaction(_)) => {
                "terminating connection due to idle-in-transaction timeout"
            }
            Ending::Idle(IdleTimeout::Session(_)) => {
                "terminating connection due to idle-session timeout"
            }
        }
    }
}

/// Completes when the backend is told to end (never without one).
async fn terminated(registration: Option<&Registration>) {
    match registration {
        Some(registration) => registration.backend().terminated().cancelled().await,
        None => std::future::pending().await,
    }
}

/// Completes, with `timeout`, when its limit has passed (never without one).
async fn idle(timeout: Option<IdleTimeout>) -> IdleTimeout {
    match timeout {
        Some(timeout) => {
            tokio::time::sleep(timeout.limit()).await;
            timeout
        }
        None => std::future::pending().await,
    }
}

/// Tells the client its message was malformed; the connection closes after it.
async fn reject<S>(socket: &mut S, message: &str)
where
    S: futures::Sink<PgWireBackendMessage> + Unpin,
{
    tracing::debug!(
        message,
        "closing a connection that sent a malformed message"
    );
    end_with(socket, "08P01", message).await;
}

/// Tells the client why its connection ends (a FATAL error); it closes after it.
pub(crate) async fn end_with<S>(socket: &mut S, code: &str, message: &str)
where
    S: futures::Sink<PgWireBackendMessage> + Unpin,
{
    let error = ErrorInfo::new("FATAL".into(), code.into(), message.into());
    let _ = socket
        .send(PgWireBackendMessage::ErrorResponse(error.into()))
        .await;
}
