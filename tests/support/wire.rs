//! A raw PostgreSQL wire-protocol client, for messages real drivers refuse to send.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A connection that has finished its startup and waits for messages.
pub struct RawConnection {
    stream: TcpStream,
}

/// One backend message: its type byte and its body.
pub struct Message {
    pub kind: u8,
    pub body: Vec<u8>,
}

impl Message {
    /// The SQLSTATE of an ErrorResponse (`None` for any other message).
    pub fn error_code(&self) -> Option<String> {
        if self.kind != b'E' {
            return None;
        }
        self.body
            .split(|b| *b == 0)
            .find(|field| field.first() == Some(&b'C'))
            .map(|field| String::from_utf8_lossy(&field[1..]).into_owned())
    }
}

impl RawConnection {
    /// Connects to `127.0.0.1:port` as `fluxion` and reads until the first ReadyForQuery.
    pub fn connect(port: u16) -> Self {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("set a read timeout");
        let mut connection = RawConnection { stream };
        let mut startup = Vec::new();
        startup.extend_from_slice(&196608u32.to_be_bytes());
        for text in ["user", "fluxion", "database", "fluxion", ""] {
            startup.extend_from_slice(text.as_bytes());
            startup.push(0);
        }
        let mut message = ((startup.len() + 4) as u32).to_be_bytes().to_vec();
        message.extend_from_slice(&startup);
        connection.stream.write_all(&message).expect("startup");
        connection.read_until_ready();
        connection
    }

    /// Sends one frontend message of type `kind` with `body`.
    pub fn send(&mut self, kind: u8, body: &[u8]) {
        let mut message = vec![kind];
        message.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        message.extend_from_slice(body);
        self.stream.write_all(&message).expect("send a message");
    }

    /// Sends `bytes` as they are, framed or not.
    pub fn send_raw(&mut self, bytes: &[u8]) {
        self.stream.write_all(bytes).expect("send bytes");
    }

    /// Reads messages up to and including the next ReadyForQuery.
    pub fn read_until_ready(&mut self) -> Vec<Message> {
        let mut messages = Vec::new();
        loop {
            let message = self.read_message();
            let done = message.kind == b'Z';
            messages.push(message);
            if done {
                return messages;
            }
        }
    }

    /// Reads one message, waiting up to the connection's read timeout.
    pub fn read_message(&mut self) -> Message {
        let mut header = [0u8; 5];
        self.stream
            .read_exact(&mut header)
            .expect("a message header");
        let length = u32::from_be_bytes(header[1..5].try_into().unwrap()) as usize;
        let mut body = vec![0u8; length - 4];
        self.stream.read_exact(&mut body).expect("a message body");
        Message {
            kind: header[0],
            body,
        }
    }

    /// Whether any byte arrives within `wait`.
    pub fn receives_within(&mut self, wait: Duration) -> bool {
        self.stream.set_read_timeout(Some(wait)).expect("a timeout");
        let mut byte = [0u8; 1];
        let received = matches!(self.stream.peek(&mut byte), Ok(n) if n > 0);
        self.stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a timeout");
        received
    }
}

/// The body of a Parse of `sql` as the unnamed statement, its parameter types left to infer.
pub fn parse_body(sql: &str) -> Vec<u8> {
    let mut body = vec![0];
    body.extend_from_slice(sql.as_bytes());
    body.extend_from_slice(&[0, 0, 0]);
    body
}

/// The body of a Bind of the unnamed statement to the unnamed portal with `values` as text.
pub fn bind_body(values: &[&str]) -> Vec<u8> {
    let mut body = vec![0, 0, 0, 0];
    body.extend_from_slice(&(values.len() as u16).to_be_bytes());
    for value in values {
        body.extend_from_slice(&(value.len() as u32).to_be_bytes());
        body.extend_from_slice(value.as_bytes());
    }
    body.extend_from_slice(&[0, 0]);
    body
}

/// The body of an Execute of the unnamed portal, all rows.
pub fn execute_body() -> Vec<u8> {
    vec![0, 0, 0, 0, 0]
}
