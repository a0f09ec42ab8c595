//! A real Kafka-protocol broker for tests: tansu (Apache-2.0), on a free port of 127.0.0.1
//! with in-memory storage, killed when dropped. Shared by the connector's own tests and the
//! server's end-to-end tests.
//!
//! The binary is cached outside the checkout, at `~/.cache/fluxion/tansu/bin/tansu`; when it
//! is missing, the first test to need it builds it (`cargo install tansu --features
//! dynostore`, about 16 CPU-minutes) under a lock, so parallel tests build it once.

// Each test crate that includes this module uses only part of it.
#![allow(dead_code)]

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use rskafka::client::partition::{Compression, UnknownTopicHandling};
use rskafka::client::ClientBuilder;
use rskafka::record::Record;

/// A running broker.
pub struct Broker {
    child: Child,
    /// `127.0.0.1:<port>`.
    pub address: String,
}

impl Broker {
    /// Starts a broker (building tansu first if it is missing).
    pub fn start() -> Self {
        let binary = tansu_binary();
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let url = format!("tcp://127.0.0.1:{port}");
        let child = Command::new(&binary)
            .args([
                "broker",
                "--listener-url",
                &url,
                "--advertised-listener-url",
                &url,
            ])
            .args(["--storage-engine", "memory://tansu/"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("tansu starts");
        let broker = Self {
            child,
            address: format!("127.0.0.1:{port}"),
        };
        let socket: SocketAddr = broker.address.parse().expect("an address");
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect_timeout(&socket, Duration::from_millis(200)).is_err() {
            assert!(
                Instant::now() < deadline,
                "tansu did not listen on {socket}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        broker
    }

    /// Creates `topic` with `partitions` partitions.
    pub fn create_topic(&self, topic: &str, partitions: i32) {
        let address = self.address.clone();
        let topic = topic.to_string();
        run(async move {
            let client = ClientBuilder::new(vec![address])
                .build()
                .await
                .expect("connect");
            client
                .controller_client()
                .expect("controller")
                .create_topic(&topic, partitions, 1, 5_000)
                .await
                .expect("create topic");
        });
    }

    /// Produces `records` to `partition` of `topic`, in order.
    pub fn produce(&self, topic: &str, partition: i32, records: Vec<Record>) {
        let address = self.address.clone();
        let topic = topic.to_string();
        run(async move {
            let client = ClientBuilder::new(vec![address])
                .build()
                .await
                .expect("connect");
            let partition = client
                .partition_client(&topic, partition, UnknownTopicHandling::Retry)
                .await
                .expect("partition client");
            for chunk in records.chunks(500) {
                partition
                    .produce(chunk.to_vec(), Compression::NoCompression)
                    .await
                    .expect("produce");
            }
        });
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A record read back from a topic, with its partition.
#[derive(Debug)]
pub struct Produced {
    /// The partition it is in.
    pub partition: i32,
    /// The record.
    pub record: Record,
}

/// Every record of `topic`, partition by partition, in offset order.
pub async fn read_topic(address: &str, topic: &str) -> Vec<Produced> {
    let client = ClientBuilder::new(vec![address.to_string()])
        .build()
        .await
        .expect("connect");
    let partitions = client
        .list_topics()
        .await
        .expect("the topics")
        .into_iter()
        .find(|t| t.name == topic)
        .expect("the topic exists")
        .partitions;
    let mut produced = Vec::new();
    for partition in partitions {
        let client = client
            .partition_client(topic, partition, UnknownTopicHandling::Retry)
            .await
            .expect("a partition client");
        let mut next = 0;
        loop {
            let (records, high_watermark) = client
                .fetch_records(next, 1..1 << 20, 0)
                .await
                .expect("a fetch");
            if next >= high_watermark {
                break;
            }
            assert!(!records.is_empty(), "no records below the high watermark");
            // tansu 0.6 may answer with a batch more than once: keep each offset once.
            for record in records {
                if record.offset < next {
                    continue;
                }
                next = record.offset + 1;
                produced.push(Produced {
                    partition,
                    record: record.record,
                });
            }
        }
    }
    produced
}

/// Runs `work` to completion on a runtime of its own, on a thread of its own, so that tests
/// may call the broker from inside or outside an async runtime.
fn run(work: impl std::future::Future<Output = ()> + Send + 'static) {
    std::thread::spawn(move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
            .block_on(work)
    })
    .join()
    .expect("the broker client");
}

/// The tansu binary, built into the cache first if it is missing.
fn tansu_binary() -> PathBuf {
    let cache = PathBuf::from(std::env::var("HOME").expect("HOME is set")).join(".cache/fluxion");
    let binary = cache.join("tansu/bin/tansu");
    if binary.exists() {
        return binary;
    }
    std::fs::create_dir_all(&cache).expect("the cache directory");
    let install = format!(
        "test -x '{binary}' || cargo install tansu --version '^0.6' --features dynostore \
         --locked --root '{root}' --target-dir '{target}'",
        binary = binary.display(),
        root = cache.join("tansu").display(),
        target = cache.join("tansu-target").display(),
    );
    let status = Command::new("flock")
        .arg(cache.join("tansu.lock"))
        .args(["sh", "-c", &install])
        .env_remove("CARGO_TARGET_DIR")
        .status()
        .expect("flock and cargo run");
    assert!(
        status.success() && binary.exists(),
        "building the tansu broker failed; build it by hand with: cargo install tansu \
         --version '^0.6' --features dynostore --root $HOME/.cache/fluxion/tansu"
    );
    binary
}
