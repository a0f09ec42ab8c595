//! Frontend messages checked before pgwire decodes them.
//!
//! pgwire's decoder reads the counts inside a message (a Parse's parameter types, a Bind's
//! values and formats) without checking them against the message's length, and panics when
//! they overrun it: a Parse declaring 1,000 types in 2 bytes, a Bind value claiming 1 GiB.
//! [`CheckedStream`] sits between the socket and pgwire's decoder, reads whole messages, and
//! lets through only those whose contents fit their length; at the first that does not, the
//! stream ends there and [`Rejection`] says why, for the connection to answer with 08P01 as
//! PostgreSQL does.

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, BytesMut};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::io::poll_read_buf;

/// The longest startup message PostgreSQL accepts (`MAX_STARTUP_PACKET_LENGTH`).
const MAX_STARTUP_MESSAGE: usize = 10_000;

/// The longest message PostgreSQL accepts (`PQ_LARGE_MESSAGE_LIMIT`): a longer claimed length
/// is refused as soon as it is read, before anything waits for or holds the bytes.
const MAX_MESSAGE: usize = (1 << 30) - 1;

/// The room made in the buffer for each read from the socket.
const READ_CHUNK: usize = 8192;

/// Why a [`CheckedStream`] ended early, if it did.
#[derive(Clone, Debug, Default)]
pub(crate) struct Rejection(Arc<Mutex<Option<String>>>);

impl Rejection {
    /// The reason the stream ended early, if it did.
    pub(crate) fn reason(&self) -> Option<String> {
        self.0.lock().ok().and_then(|reason| reason.clone())
    }

    fn reject(&self, reason: String) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(reason);
        }
    }
}

/// A client stream that passes on only messages whose contents fit their length.
pub(crate) struct CheckedStream<S> {
    inner: S,
    /// Bytes read from `inner` and not yet passed on.
    pending: BytesMut,
    /// How many bytes at the front of `pending` are checked and may be passed on.
    checked: usize,
    /// Whether the next message is the untyped startup message.
    awaiting_startup: bool,
    rejection: Rejection,
}

impl<S> CheckedStream<S> {
    /// Checks the messages read from `inner`, after `buffered` (bytes already read from it),
    /// starting with the untyped startup message.
    pub(crate) fn new(inner: S, buffered: BytesMut, rejection: Rejection) -> Self {
        CheckedStream {
            inner,
            pending: buffered,
            checked: 0,
            awaiting_startup: true,
            rejection,
        }
    }

    /// Checks the next whole message in `pending`, if there is one: `Some(Ok(length))` to
    /// pass it on, `Some(Err(reason))` to stop, `None` to read more first.
    fn check_next(&mut self) -> Option<Result<usize, String>> {
        let unchecked = &self.pending[self.checked..];
        let (header, kind) = match self.awaiting_startup {
            true => (0, None),
            false => (1, Some(*unchecked.first()?)),
        };
        let length_bytes: [u8; 4] = unchecked.get(header..header + 4)?.try_into().ok()?;
        let length = u32::from_be_bytes(length_bytes) as usize;
        let longest = match kind {
            None => MAX_STARTUP_MESSAGE,
            Some(_) => MAX_MESSAGE,
        };
        if !(4..=longest).contains(&length) {
            return Some(Err(format!("invalid message length {length}")));
        }
        let body = unchecked.get(header + 4..header + length)?;
        if let Some(kind) = kind {
            if !contents_fit(kind, body) {
                return Some(Err(format!(
                    "the contents of a '{}' message overrun its length",
                    kind as char
                )));
            }
        }
        self.awaiting_startup = false;
        Some(Ok(header + length))
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for CheckedStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if this.checked > 0 {
                let n = this.checked.min(buf.remaining());
                buf.put_slice(&this.pending[..n]);
                this.pending.advance(n);
                this.checked -= n;
                return Poll::Ready(Ok(()));
            }
            if this.rejection.reason().is_some() {
                return Poll::Ready(Ok(()));
            }
            match this.check_next() {
                Some(Ok(length)) => this.checked = length,
                Some(Err(reason)) => this.rejection.reject(reason),
                None => {
                    this.pending.reserve(READ_CHUNK);
                    match poll_read_buf(Pin::new(&mut this.inner), cx, &mut this.pending) {
                        Poll::Pending => return Poll::Pending,
                        Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                        // The client is gone: what it left is no whole message.
                        Poll::Ready(Ok(0)) => return Poll::Ready(Ok(())),
                        Poll::Ready(Ok(_)) => {}
                    }
                }
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for CheckedStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// Whether the counts and lengths inside a message of type `kind` fit its `body`, for the
/// messages whose decoding reads them (others pass as they are).
fn contents_fit(kind: u8, body: &[u8]) -> bool {
    let mut reader = Reader(body);
    match kind {
        // Parse: name, query, parameter types.
        b'P' => reader.cstring() && reader.cstring() && reader.counted(4),
        // Bind: portal, statement, parameter formats, values, result formats.
        b'B' => {
            reader.cstring()
                && reader.cstring()
                && reader.counted(2)
                && reader.values()
                && reader.counted(2)
        }
        // Execute: portal, row limit.
        b'E' => reader.cstring() && reader.take(4),
        // Describe and Close: target, name.
        b'D' | b'C' => reader.take(1) && reader.cstring(),
        _ => true,
    }
}

/// Reads the fields of a message body front to back, each only if it is there.
struct Reader<'a>(&'a [u8]);

impl Reader<'_> {
    fn take(&mut self, n: usize) -> bool {
        match self.0.get(n..) {
            Some(rest) => {
                self.0 = rest;
                true
            }
            None => false,
        }
    }

    fn cstring(&mut self) -> bool {
        match self.0.iter().position(|b| *b == 0) {
            Some(end) => self.take(end + 1),
            None => false,
        }
    }

    fn count(&mut self) -> Option<usize> {
        let bytes: [u8; 2] = self.0.get(..2)?.try_into().ok()?;
        self.take(2);
        Some(usize::from(u16::from_be_bytes(bytes)))
    }

    /// A 16-bit count followed by that many items of `size` bytes.
    fn counted(&mut self, size: usize) -> bool {
        self.count().is_some_and(|n| self.take(n * size))
    }

    /// A Bind's values: a 16-bit count, then each a 32-bit length (-1 for NULL) and its bytes.
    fn values(&mut self) -> bool {
        let Some(n) = self.count() else {
            return false;
        };
        (0..n).all(|_| {
            let Some(bytes) = self.0.get(..4).and_then(|b| <[u8; 4]>::try_from(b).ok()) else {
                return false;
            };
            self.take(4);
            match i32::from_be_bytes(bytes) {
                -1 => true,
                length => usize::try_from(length).is_ok_and(|length| self.take(length)),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(types_declared: u16, types_given: usize) -> Vec<u8> {
        let mut body = b"\0SELECT $1\0".to_vec();
        body.extend(types_declared.to_be_bytes());
        body.extend(vec![0; 4 * types_given]);
        body
    }

    #[test]
    fn counts_that_overrun_a_message_are_caught() {
        assert!(contents_fit(b'P', &parse(1, 1)));
        assert!(!contents_fit(b'P', &parse(1000, 0)));
        assert!(!contents_fit(b'P', b"\0SELECT 1"));
        let mut bind = vec![0, 0, 0, 0, 0, 1];
        bind.extend(1i32.to_be_bytes());
        bind.push(b'7');
        bind.extend([0, 0]);
        assert!(contents_fit(b'B', &bind));
        let mut lying = vec![0, 0, 0, 0, 0, 1];
        lying.extend((1i32 << 30).to_be_bytes());
        lying.extend(b"abc");
        assert!(!contents_fit(b'B', &lying));
        assert!(!contents_fit(b'E', b"\0\0"));
        assert!(contents_fit(b'Q', b"anything"));
    }
}
