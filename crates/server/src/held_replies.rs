//! Replies to the extended query protocol held until Sync, as PostgreSQL holds them.
//!
//! A client pipelines Parse, Bind, Execute and Sync and reads nothing until ReadyForQuery,
//! so the replies before it need no socket write of their own: [`HeldReplies`] passes every
//! message to the connection's buffer but lets a flush through only while COPY FROM STDIN
//! waits for the client (which sends nothing until it sees CopyInResponse), and after a
//! NoticeResponse, which PostgreSQL too sends at once (a long statement's progress). Sync
//! and Flush flush as before, and a full buffer is still written out when it fills.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures::Sink;
use pgwire::api::{ClientInfo, ClientPortalStore, PgWireConnectionState, SessionExtensions};
use pgwire::messages::response::TransactionStatus;
use pgwire::messages::startup::SecretKey;
use pgwire::messages::{PgWireBackendMessage, ProtocolVersion};
use pgwire::tokio::tokio_rustls::rustls::pki_types::CertificateDer;

/// A client connection whose flushes wait for Sync; see the module documentation.
pub(crate) struct HeldReplies<'a, C> {
    client: &'a mut C,
    /// A notice went into the buffer: the next flush goes through.
    notice_waits: bool,
}

impl<'a, C> HeldReplies<'a, C> {
    pub(crate) fn new(client: &'a mut C) -> Self {
        HeldReplies {
            client,
            notice_waits: false,
        }
    }
}

impl<C: Sink<PgWireBackendMessage> + ClientInfo + Unpin> Sink<PgWireBackendMessage>
    for HeldReplies<'_, C>
{
    type Error = C::Error;

    fn poll_ready(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.client).poll_ready(cx)
    }

    fn start_send(mut self: Pin<&mut Self>, item: PgWireBackendMessage) -> Result<(), C::Error> {
        if matches!(item, PgWireBackendMessage::NoticeResponse(_)) {
            self.notice_waits = true;
        }
        Pin::new(&mut *self.client).start_send(item)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        if self.notice_waits
            || matches!(
                self.client.state(),
                PgWireConnectionState::CopyInProgress(_)
            )
        {
            let flushed = Pin::new(&mut *self.client).poll_flush(cx);
            if matches!(flushed, Poll::Ready(Ok(()))) {
                self.notice_waits = false;
            }
            return flushed;
        }
        Poll::Ready(Ok(()))
    }

    fn poll_close(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<(), C::Error>> {
        Pin::new(&mut *self.client).poll_close(cx)
    }
}

impl<C: ClientPortalStore> ClientPortalStore for HeldReplies<'_, C> {
    type PortalStore = C::PortalStore;

    fn portal_store(&self) -> &Self::PortalStore {
        self.client.portal_store()
    }
}

impl<C: ClientInfo> ClientInfo for HeldReplies<'_, C> {
    fn socket_addr(&self) -> SocketAddr {
        self.client.socket_addr()
    }

    fn is_secure(&self) -> bool {
        self.client.is_secure()
    }

    fn protocol_version(&self) -> ProtocolVersion {
        self.client.protocol_version()
    }

    fn set_protocol_version(&mut self, version: ProtocolVersion) {
        self.client.set_protocol_version(version)
    }

    fn pid_and_secret_key(&self) -> (i32, SecretKey) {
        self.client.pid_and_secret_key()
    }

    fn set_pid_and_secret_key(&mut self, pid: i32, secret_key: SecretKey) {
        self.client.set_pid_and_secret_key(pid, secret_key)
    }

    fn state(&self) -> PgWireConnectionState {
        self.client.state()
    }

    fn set_state(&mut self, new_state: PgWireConnectionState) {
        self.client.set_state(new_state)
    }

    fn transaction_status(&self) -> TransactionStatus {
        self.client.transaction_status()
    }

    fn set_transaction_status(&mut self, new_status: TransactionStatus) {
        self.client.set_transaction_status(new_status)
    }

    fn metadata(&self) -> &HashMap<String, String> {
        self.client.metadata()
    }

    fn metadata_mut(&mut self) -> &mut HashMap<String, String> {
        self.client.metadata_mut()
    }

    fn session_extensions(&self) -> &SessionExtensions {
        self.client.session_extensions()
    }

    fn sni_server_name(&self) -> Option<&str> {
        self.client.sni_server_name()
    }

    fn client_certificates<'a>(&self) -> Option<&[CertificateDer<'a>]> {
        self.client.client_certificates()
    }
}
