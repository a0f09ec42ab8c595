//! While the server starts (the coordinator recovers its catalog and replays its log),
//! clients that connect are told so, as PostgreSQL tells them (57P03), instead of waiting
//! without a word until recovery ends.

use std::future::Future;
use std::io;
use std::time::Duration;

use futures::StreamExt;
use pgwire::messages::PgWireFrontendMessage;
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;

use crate::message_loop::{end_with, negotiate};
use crate::Security;

/// How long a client that connects while the server starts has to send its startup message.
const STARTUP_MESSAGE_WAIT: Duration = Duration::from_secs(10);

/// Runs `starting` to its end while answering every client that connects to `listener`
/// meanwhile with FATAL 57P03 (in TLS if it asks and `security` has a certificate); then
/// gives the listener back, to serve.
pub async fn refuse_while_starting<T>(
    listener: TcpListener,
    security: &Security,
    starting: impl Future<Output = T>,
) -> io::Result<(TcpListener, T)> {
    let tls = security.tls.as_ref().map(|tls| tls.acceptor.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    // A task of its own: `starting` may compute for long without yielding.
    let refusing = tokio::spawn(async move {
        tokio::pin!(stopped);
        loop {
            tokio::select! {
                _ = &mut stopped => return listener,
                accepted = listener.accept() => match accepted {
                    Ok((socket, _)) => {
                        tokio::spawn(refuse(socket, tls.clone()));
                    }
                    Err(e) => tracing::warn!(error = %e, "accept failed"),
                },
            }
        }
    });
    let value = starting.await;
    let _ = stop.send(());
    let listener = refusing.await.map_err(io::Error::other)?;
    Ok((listener, value))
}

/// Reads the client's startup message and answers it with 57P03.
async fn refuse(socket: TcpStream, tls: Option<TlsAcceptor>) {
    let refusal = async {
        let Some((mut socket, _)) = negotiate(socket, tls).await? else {
            return Ok::<(), io::Error>(());
        };
        if let Some(Ok(PgWireFrontendMessage::Startup(_))) = socket.next().await {
            end_with(&mut socket, "57P03", "the database system is starting up").await;
        }
        Ok(())
    };
    if let Ok(Err(e)) = tokio::time::timeout(STARTUP_MESSAGE_WAIT, refusal).await {
        tracing::debug!(error = %e, "a client that connected while starting went away");
    }
}
