//! Random wire-protocol messages against a live server: startup packets, Parse, Bind,
//! Describe, Execute, Close, Sync, Flush, Query and COPY messages with random counts,
//! lengths, formats and bytes, some well formed and some lying about their sizes. Whatever a
//! client sends, the server answers or closes that one connection; it never panics, and
//! other clients are served throughout.
//!
//! `FLUXION_RANDOM_PROTOCOL_SECONDS` sets how long it runs (default 20),
//! `FLUXION_RANDOM_PROTOCOL_SEED` replays a run (its seed is printed).

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use support::TestServer;

/// SQL texts the Parse and Query messages carry.
const SQL: &[&str] = &[
    "SELECT 1",
    "SELECT $1::int + $2::int",
    "SELECT $1::text, $2::int[], $3::numeric",
    "INSERT INTO t VALUES ($1, $2)",
    "SELECT * FROM t WHERE id = $1",
    "COPY t FROM STDIN",
    "COPY t TO STDOUT",
    "BEGIN",
    "COMMIT",
    "SELECT pg_sleep(0.01)",
    "",
];

/// A length as a wire field: mostly small and true, sometimes extreme.
fn length(rng: &mut StdRng, actual: usize) -> i32 {
    match rng.random_range(0..10) {
        0 => -1,
        1 => i32::MAX,
        2 => rng.random_range(-5..5_000),
        _ => actual as i32,
    }
}

fn count(rng: &mut StdRng, actual: usize) -> i16 {
    match rng.random_range(0..10) {
        0 => -1,
        1 => i16::MAX,
        2 => rng.random_range(0..100),
        _ => actual as i16,
    }
}

fn cstring(out: &mut Vec<u8>, text: &str) {
    out.extend_from_slice(text.as_bytes());
    out.push(0);
}

fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let n = rng.random_range(0..=max);
    (0..n).map(|_| rng.random()).collect()
}

fn name(rng: &mut StdRng) -> &'static str {
    ["", "s1", "p1"][rng.random_range(0..3)]
}

fn parse(rng: &mut StdRng) -> Vec<u8> {
    let mut body = Vec::new();
    cstring(&mut body, name(rng));
    cstring(&mut body, SQL[rng.random_range(0..SQL.len())]);
    let types: Vec<u32> = (0..rng.random_range(0..4))
        .map(|_| [0, 23, 25, 1007, 1700, 99_999][rng.random_range(0..6)])
        .collect();
    body.extend_from_slice(&count(rng, types.len()).to_be_bytes());
    for oid in types {
        body.extend_from_slice(&oid.to_be_bytes());
    }
    body
}

fn bind(rng: &mut StdRng) -> Vec<u8> {
    let mut body = Vec::new();
    cstring(&mut body, name(rng));
    cstring(&mut body, name(rng));
    let formats: Vec<i16> = (0..rng.random_range(0..3))
        .map(|_| rng.random_range(-1..3))
        .collect();
    body.extend_from_slice(&count(rng, formats.len()).to_be_bytes());
    for format in &formats {
        body.extend_from_slice(&format.to_be_bytes());
    }
    let values: Vec<Vec<u8>> = (0..rng.random_range(0..4))
        .map(|_| match rng.random_range(0..4) {
            0 => b"42".to_vec(),
            1 => b"{1,2,3}".to_vec(),
            2 => vec![
                0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 23, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 1,
            ],
            _ => random_bytes(rng, 16),
        })
        .collect();
    body.extend_from_slice(&count(rng, values.len()).to_be_bytes());
    for value in values {
        body.extend_from_slice(&length(rng, value.len()).to_be_bytes());
        body.extend_from_slice(&value);
    }
    body.extend_from_slice(&count(rng, 1).to_be_bytes());
    body.extend_from_slice(&rng.random_range(-1i16..3).to_be_bytes());
    body
}

/// One frontend message: its type byte and body.
fn message(rng: &mut StdRng) -> (u8, Vec<u8>) {
    match rng.random_range(0..14) {
        0 | 1 => (b'P', parse(rng)),
        2 | 3 => (b'B', bind(rng)),
        4 => {
            let mut body = vec![[b'S', b'P', b'X'][rng.random_range(0..3)]];
            cstring(&mut body, name(rng));
            (b'D', body)
        }
        5 => {
            let mut body = Vec::new();
            cstring(&mut body, name(rng));
            body.extend_from_slice(&rng.random_range(-2i32..5).to_be_bytes());
            (b'E', body)
        }
        6 | 7 => (b'S', Vec::new()),
        8 => (b'H', Vec::new()),
        9 => {
            let mut body = Vec::new();
            cstring(&mut body, SQL[rng.random_range(0..SQL.len())]);
            (b'Q', body)
        }
        10 => (b'd', random_bytes(rng, 64)),
        11 => ([b'c', b'f'][rng.random_range(0..2)], b"x\0".to_vec()),
        12 => {
            let mut body = vec![[b'S', b'P'][rng.random_range(0..2)]];
            cstring(&mut body, name(rng));
            (b'C', body)
        }
        _ => (rng.random(), random_bytes(rng, 32)),
    }
}

/// The bytes of `kind`/`body` on the wire, the length sometimes a lie.
fn framed(rng: &mut StdRng, kind: u8, body: &[u8]) -> Vec<u8> {
    let mut bytes = vec![kind];
    let true_length = body.len() + 4;
    let claimed = match rng.random_range(0..30) {
        0 => rng.random_range(0..true_length as u32 + 8),
        1 => rng.random::<u32>(),
        _ => true_length as u32,
    };
    bytes.extend_from_slice(&claimed.to_be_bytes());
    bytes.extend_from_slice(body);
    bytes
}

/// A startup packet: mostly a good one for `fluxion`, sometimes a random or lying one.
fn startup(rng: &mut StdRng) -> Vec<u8> {
    let mut body = Vec::new();
    let version: u32 = match rng.random_range(0..12) {
        0 => 80_877_103, // SSLRequest
        1 => 80_877_104, // GSSENCRequest
        2 => rng.random(),
        _ => 196_608,
    };
    body.extend_from_slice(&version.to_be_bytes());
    if rng.random_range(0..8) == 0 {
        body.extend(random_bytes(rng, 40));
    } else {
        for text in [
            "user", "fluxion", "database", "fluxion", "options", "-c x=1", "",
        ] {
            cstring(&mut body, text);
        }
    }
    let claimed = length(rng, body.len() + 4) as u32;
    let mut bytes = claimed.to_be_bytes().to_vec();
    bytes.extend(body);
    bytes
}

/// Reads whatever the server sends within a short while; `false` once it closed.
fn drain(stream: &mut TcpStream) -> bool {
    let mut buffer = [0u8; 65_536];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return false,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                return true
            }
            Err(_) => return false,
        }
    }
}

/// One connection's worth of random messages.
fn session(port: u16, rng: &mut StdRng) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        panic!("the server stopped accepting connections");
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(30)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    if stream.write_all(&startup(rng)).is_err() || !drain(&mut stream) {
        return;
    }
    for _ in 0..rng.random_range(1..40) {
        let (kind, body) = message(rng);
        if stream.write_all(&framed(rng, kind, &body)).is_err() || !drain(&mut stream) {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_messages_never_break_the_server() {
    let seconds: u64 = std::env::var("FLUXION_RANDOM_PROTOCOL_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let seed: u64 = std::env::var("FLUXION_RANDOM_PROTOCOL_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(rand::random);
    println!("random protocol seed {seed} ({seconds} s)");
    let server = TestServer::start();
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE t (id int PRIMARY KEY, v int[])")
        .await
        .expect("setup");
    let port = server.port();
    let sessions = tokio::task::spawn_blocking(move || {
        let mut rng = StdRng::seed_from_u64(seed);
        let deadline = Instant::now() + Duration::from_secs(seconds);
        let mut sessions = 0;
        while Instant::now() < deadline {
            session(port, &mut rng);
            sessions += 1;
        }
        sessions
    });
    let mut checks = 0;
    while !sessions.is_finished() {
        let row = client
            .query_one("SELECT count(*) FROM t", &[])
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: another client was not served: {e}"));
        let _: i64 = row.get(0);
        checks += 1;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let sessions = sessions.await.expect("the random sessions ran");
    println!("random protocol: {sessions} connections, {checks} checks from another client");
    assert!(sessions > 20, "only {sessions} connections ran");
    let fresh = server.connect().await;
    assert_eq!(
        fresh
            .query_one("SELECT 1", &[])
            .await
            .expect("a new client")
            .get::<_, i32>(0),
        1
    );
    drop(server);
}
