//! A minimal HTTP/1.1 client for webhook and metrics tests: one request per connection.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// How long a request waits for its answer before the test fails.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(120);

/// `GET path` from `127.0.0.1:port`; the status and the body of the answer.
pub fn get(port: u16, path: &str) -> (u16, String) {
    request(
        port,
        &format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"),
        b"",
    )
}

/// `POST path` with `body` and extra `headers` to `127.0.0.1:port`; the status and the body
/// of the answer.
pub fn post(port: u16, path: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    post_announcing(port, path, headers, body.len(), body)
}

/// `POST path` announcing a body of `content_length` bytes but sending `body` (which may be
/// shorter, as a stalled or lying client's is); the status and the body of the answer. A
/// server that answers before reading the whole body may close early: write errors are left
/// to show in the answer.
pub fn post_announcing(
    port: u16,
    path: &str,
    headers: &[(&str, &str)],
    content_length: usize,
    body: &[u8],
) -> (u16, String) {
    let mut head = format!(
        "POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {content_length}\r\nConnection: close\r\n"
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    request(port, &head, body)
}

/// Sends `head` then `body` to `127.0.0.1:port`; the status and the body of the answer. A
/// server that answers before reading the whole body may close early: write errors are left
/// to show in the answer.
fn request(port: u16, head: &str, body: &[u8]) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the HTTP port");
    stream
        .set_read_timeout(Some(ANSWER_TIMEOUT))
        .expect("set a read timeout");
    stream.write_all(head.as_bytes()).expect("send the request");
    let _ = stream.write_all(body);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_string())
        .unwrap_or_default();
    (status, body)
}
