//! Frontend messages checked before pgwire decodes them.
//!
//! pgwire's decoder reads the fields of a message (a Parse's parameter types, a Bind's values
//! and formats) from where the message before ended, without checking them against the
//! message's length: it panics when counts overrun it (a Parse declaring 1,000 types in 2
//! bytes, a Bind value claiming 1 GiB), and decodes bytes left over inside a message as the
//! next message. [`CheckedStream`] sits between the socket and pgwire's decoder, reads whole
//! messages, and lets through only those whose fields fill their length exactly; at the first
//! that does not, the stream ends there and [`Rejection`] says why, for the connection to
//! answer with 08P01 as PostgreSQL does. A message whose text (a query, a statement or portal
//! name) is not valid UTF-8 passes, noted in [`InvalidText`], for the connection to answer it
//! with 22021 as PostgreSQL does, where pgwire would read it with the bad bytes replaced.

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

/// The invalid UTF-8 in the text of the message a [`CheckedStream`] last passed on, as
/// PostgreSQL shows it (`0xc3 0x28`), if it has any.
///
/// The stream checks a message only once the one before has been read whole, and pgwire's
/// decoder reads only when it has no whole message left: when a message has been decoded,
/// this describes that message.
#[derive(Clone, Debug, Default)]
pub(crate) struct InvalidText(Arc<Mutex<Option<String>>>);

impl InvalidText {
    /// The invalid bytes of the message last passed on, if it has any.
    pub(crate) fn take(&self) -> Option<String> {
        self.0.lock().ok().and_then(|mut bytes| bytes.take())
    }

    fn note(&self, bytes: Option<String>) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = bytes;
        }
    }
}

/// A client stream that passes on only messages whose fields fill their length exactly.
pub(crate) struct CheckedStream<S> {
    inner: S,
    /// Bytes read from `inner` and not yet passed on.
    pending: BytesMut,
    /// How many bytes at the front of `pending` are checked and may be passed on.
    checked: usize,
    /// Whether the next message is the untyped startup message.
    awaiting_startup: bool,
    rejection: Rejection,
    invalid_text: InvalidText,
}

impl<S> CheckedStream<S> {
    /// Checks the messages read from `inner`, after `buffered` (bytes already read from it),
    /// starting with the untyped startup message.
    pub(crate) fn new(
        inner: S,
        buffered: BytesMut,
        rejection: Rejection,
        invalid_text: InvalidText,
    ) -> Self {
        CheckedStream {
            inner,
            pending: buffered,
            checked: 0,
            awaiting_startup: true,
            rejection,
            invalid_text,
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
        match kind {
            Some(kind) if !fields_fill(kind, body) => {
                return Some(Err(format!(
                    "the fields of a '{}' message do not fill its length",
                    kind as char
                )));
            }
            Some(kind) => self.invalid_text.note(invalid_utf8(text_of(kind, body))),
            None if !startup_fields_fill(body) => {
                return Some(Err("invalid startup packet layout".to_owned()));
            }
            None => {}
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

/// Whether the fields of a message of type `kind` fill its `body` exactly, for the messages
/// pgwire decodes field by field (others it reads by their length, or refuses). pgwire reads
/// such a message from where the one before ended, not from its length: counts that overrun
/// it would panic, and bytes left over (a Sync with a body, a Query with text after its
/// terminator) would be decoded as the start of the next message.
fn fields_fill(kind: u8, body: &[u8]) -> bool {
    let mut reader = Reader(body);
    let fits = match kind {
        // Query and CopyFail: one string.
        b'Q' | b'f' => reader.cstring(),
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
        // Sync, Flush, Terminate and CopyDone: nothing.
        b'S' | b'H' | b'X' | b'c' => true,
        _ => return true,
    };
    fits && reader.0.is_empty()
}

/// Whether a startup message's `body` is laid out as pgwire reads it: a protocol version,
/// then name and value strings in pairs, ended by an empty name that is its last byte. A
/// CancelRequest (a code and two keys) is the one other message a client may start with.
fn startup_fields_fill(body: &[u8]) -> bool {
    const CANCEL_REQUEST_CODE: [u8; 4] = 80_877_102u32.to_be_bytes();
    if body.starts_with(&CANCEL_REQUEST_CODE) {
        return body.len() == 12;
    }
    let mut reader = Reader(body);
    if !reader.take(4) {
        return false;
    }
    loop {
        match reader.0.first() {
            Some(0) => return reader.0.len() == 1,
            _ if !(reader.cstring() && reader.cstring()) => return false,
            _ => {}
        }
    }
}

/// The part of a message of type `kind` that is text: a Query's query; a Parse's name and
/// query; the names of a Bind, Execute, Describe or Close. (Bind values are read by their
/// types' input functions.) The contents are known to fit.
fn text_of(kind: u8, body: &[u8]) -> &[u8] {
    let cstrings_from = |start: usize, count: usize| {
        let mut reader = Reader(&body[start.min(body.len())..]);
        for _ in 0..count {
            reader.cstring();
        }
        let end = body.len() - reader.0.len();
        &body[start.min(end)..end]
    };
    match kind {
        b'Q' => body,
        b'P' | b'B' => cstrings_from(0, 2),
        b'E' => cstrings_from(0, 1),
        b'D' | b'C' => cstrings_from(1, 1),
        _ => &[],
    }
}

/// The first invalid UTF-8 sequence in `text`, as PostgreSQL shows it: the bytes its first
/// byte announces (`0xc3 0x28`), or that byte alone.
fn invalid_utf8(text: &[u8]) -> Option<String> {
    let error = std::str::from_utf8(text).err()?;
    let rest = &text[error.valid_up_to()..];
    let announced = match rest.first()? {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    };
    let shown: Vec<String> = rest
        .iter()
        .take(announced)
        .map(|b| format!("0x{b:02x}"))
        .collect();
    Some(shown.join(" "))
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
        assert!(fields_fill(b'P', &parse(1, 1)));
        assert!(!fields_fill(b'P', &parse(1000, 0)));
        assert!(!fields_fill(b'P', b"\0SELECT 1"));
        let mut bind = vec![0, 0, 0, 0, 0, 1];
        bind.extend(1i32.to_be_bytes());
        bind.push(b'7');
        bind.extend([0, 0]);
        assert!(fields_fill(b'B', &bind));
        let mut lying = vec![0, 0, 0, 0, 0, 1];
        lying.extend((1i32 << 30).to_be_bytes());
        lying.extend(b"abc");
        assert!(!fields_fill(b'B', &lying));
        assert!(!fields_fill(b'E', b"\0\0"));
        assert!(fields_fill(b'Q', b"anything\0"));
        assert!(fields_fill(b'd', b"any bytes"));
    }

    #[test]
    fn bytes_left_over_in_a_message_are_caught() {
        assert!(!fields_fill(b'Q', b"no terminator"));
        assert!(!fields_fill(b'Q', b"SELECT 1\0P\0\0\0\x04"));
        assert!(!fields_fill(b'P', &[parse(1, 1), vec![0]].concat()));
        assert!(fields_fill(b'S', b""));
        assert!(!fields_fill(b'S', b"\0"));
        assert!(!fields_fill(b'D', b"Sname\0\0"));
        assert!(!fields_fill(b'E', b"\0\0\0\0\0\0"));
    }

    #[test]
    fn startup_messages_end_with_their_parameters() {
        let version = 196_608u32.to_be_bytes();
        let startup = [&version[..], b"user\0fluxion\0\0"].concat();
        assert!(startup_fields_fill(&startup));
        assert!(startup_fields_fill(&[&version[..], b"\0"].concat()));
        assert!(!startup_fields_fill(&[&startup[..], b"x"].concat()));
        assert!(!startup_fields_fill(
            &[&version[..], b"user\0fluxion\0"].concat()
        ));
        assert!(!startup_fields_fill(&[&version[..], b"user\0\0"].concat()));
        assert!(!startup_fields_fill(&version[..2]));
        assert!(!startup_fields_fill(
            &[&version[..], b"user\0fluxion\0\0name\0value\0\0"].concat()
        ));
        let cancel = [
            80_877_102u32.to_be_bytes(),
            7u32.to_be_bytes(),
            9u32.to_be_bytes(),
        ]
        .concat();
        assert!(startup_fields_fill(&cancel));
    }

    #[test]
    fn invalid_text_is_shown_as_postgres_shows_it() {
        assert_eq!(invalid_utf8(text_of(b'Q', b"SELECT 'caf\xc3\xa9'\0")), None);
        assert_eq!(
            invalid_utf8(text_of(b'Q', b"SELECT '\xff'\0")),
            Some("0xff".into())
        );
        assert_eq!(
            invalid_utf8(text_of(b'Q', b"SELECT '\xc3('\0")),
            Some("0xc3 0x28".into())
        );
        let mut parse = b"name\0SELECT '\xe2\x82'\0".to_vec();
        parse.extend([0, 0]);
        assert_eq!(
            invalid_utf8(text_of(b'P', &parse)),
            Some("0xe2 0x82 0x27".into())
        );
        // A Bind's values are not its text.
        let mut bind = b"\0\0\0\0\0\x01".to_vec();
        bind.extend(1i32.to_be_bytes());
        bind.push(0xff);
        bind.extend([0, 0]);
        assert_eq!(invalid_utf8(text_of(b'B', &bind)), None);
        assert_eq!(invalid_utf8(text_of(b'D', b"S\xff\0")), Some("0xff".into()));
    }
}
