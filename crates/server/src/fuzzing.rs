//! The protocol decoder as a fuzz target sees it (feature `fuzzing`).
//!
//! [`frontend_messages`] runs bytes a client could send through what a connection runs them
//! through before any handler sees them: the message checks of [`crate::frame_check`], then
//! pgwire's decoder, the startup message first.

use bytes::BytesMut;
use futures::executor::block_on;
use pgwire::messages::{DecodeContext, PgWireFrontendMessage};
use tokio::io::AsyncReadExt;

use crate::frame_check::{CheckedStream, InvalidText, Rejection};

/// Decodes `bytes` as a client's stream after SSL negotiation and returns how many messages
/// were decoded. Panics if pgwire's decoder panics on a message the checks let through, or
/// does not read exactly the messages they let through.
pub fn frontend_messages(bytes: &[u8]) -> usize {
    let mut checked = CheckedStream::new(
        tokio::io::empty(),
        BytesMut::from(bytes),
        Rejection::default(),
        InvalidText::default(),
    );
    let mut passed = Vec::new();
    block_on(checked.read_to_end(&mut passed)).expect("reading from memory does not fail");
    let mut buffer = BytesMut::from(&passed[..]);
    let mut context = DecodeContext::default();
    context.awaiting_frontend_ssl = false;
    let mut decoded = 0;
    while !buffer.is_empty() {
        let message = match PgWireFrontendMessage::decode(&mut buffer, &context) {
            Ok(Some(message)) => message,
            // A message pgwire refuses (an unknown type) ends a connection with 08P01.
            Err(_) => return decoded,
            Ok(None) => panic!("pgwire waits for more of a message the checks passed whole"),
        };
        decoded += 1;
        match message {
            PgWireFrontendMessage::Startup(_) => context.awaiting_frontend_startup = false,
            PgWireFrontendMessage::CancelRequest(_) => return decoded,
            _ => {}
        }
    }
    decoded
}

/// Client streams for [`frontend_messages`]: a startup, then simple and extended queries,
/// COPY data and a goodbye; and a cancel request.
pub fn message_seeds() -> Vec<Vec<u8>> {
    let typed = |kind: u8, body: &[u8]| {
        let mut message = vec![kind];
        message.extend(((body.len() + 4) as u32).to_be_bytes());
        message.extend(body);
        message
    };
    let mut startup_body = 196_608u32.to_be_bytes().to_vec();
    startup_body.extend(b"user\0fluxion\0database\0fluxion\0\0");
    let mut startup = ((startup_body.len() + 4) as u32).to_be_bytes().to_vec();
    startup.extend(startup_body);
    let mut parse = b"s1\0SELECT $1::int4[], $2\0".to_vec();
    parse.extend(1u16.to_be_bytes());
    parse.extend(1007u32.to_be_bytes());
    let mut bind = b"\0s1\0".to_vec();
    bind.extend(2u16.to_be_bytes());
    bind.extend([0, 1, 0, 0]);
    bind.extend(2u16.to_be_bytes());
    let array: Vec<u8> = [1i32, 0, 23, 2, 1, 4, 7, 4, 8]
        .iter()
        .flat_map(|n| n.to_be_bytes())
        .collect();
    bind.extend((array.len() as i32).to_be_bytes());
    bind.extend(&array);
    bind.extend(2i32.to_be_bytes());
    bind.extend(b"hi");
    bind.extend(1u16.to_be_bytes());
    bind.extend(0u16.to_be_bytes());
    let mut execute = b"\0".to_vec();
    execute.extend(10i32.to_be_bytes());
    let stream = [
        startup,
        typed(b'Q', b"SELECT 1; COPY t FROM STDIN\0"),
        typed(b'd', b"1\t{1,2}\n"),
        typed(b'c', b""),
        typed(b'P', &parse),
        typed(b'B', &bind),
        typed(b'D', b"P\0"),
        typed(b'E', &execute),
        typed(b'H', b""),
        typed(b'C', b"Ss1\0"),
        typed(b'S', b""),
        typed(b'f', b"stopped\0"),
        typed(b'X', b""),
    ]
    .concat();
    let mut cancel = 16u32.to_be_bytes().to_vec();
    cancel.extend(80_877_102u32.to_be_bytes());
    cancel.extend(42u32.to_be_bytes());
    cancel.extend(7u32.to_be_bytes());
    vec![stream, cancel]
}
