//! The `kafka` sink: each closed time's changes produced to a topic, exactly once.
//!
//! rskafka has no transactions, so delivery is idempotent by construction instead. A time's
//! records (from [`encode_changes`], always in the same order) go to partitions chosen
//! deterministically: by an FNV-1a hash of the key, or round-robin by the record's index in
//! the time (starting one partition further each time) when there is no key. Every record carries headers naming the sink
//! (`fluxion.sink`), its time (`fluxion.timestamp`) and its sequence among the records of
//! that time in the same partition (`fluxion.sequence`). A partition is written in
//! (time, sequence) order, so its last record says how far it got; after a restart,
//! [`KafkaSink::resume`] reads it back from every partition, and [`KafkaSink::deliver`]
//! skips, per partition, every record at or before it. Delivering a time again, whole or
//! in part, adds nothing.
//!
//! Produce requests are never retried inside rskafka (a retry after a lost answer would
//! write the records twice): a failed produce is an error, after which the next delivery
//! (or the caller reopening the sink) reads the positions again. A connection the brokers
//! closed while the sink was idle is therefore one failed delivery, not a repeat.
//!
//! The partition count is read when the sink opens: adding partitions to the topic moves
//! keys to other partitions, which the positions of a delivery stopped halfway cannot tell.

use std::collections::BTreeMap;
use std::future::Future;
use std::num::NonZeroUsize;
use std::ops::Range;
use std::time::Duration;

use repr::{ChangeBatch, Timestamp};
use rskafka::chrono::{DateTime, Utc};
use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{Compression, OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::record::{Record, RecordAndOffset};
use rskafka::BackoffConfig;

use super::encode::{encode_changes, KeyedChange};
use super::SinkSpec;
use crate::{ConnectorError, SourceOptions};

/// The connector's name in `connector = '…'`.
pub(crate) const CONNECTOR: &str = "kafka";

/// The header naming the sink that wrote a record ([`SinkSpec::identity`]).
const SINK_HEADER: &str = "fluxion.sink";
/// The header holding a record's time, in decimal.
const TIMESTAMP_HEADER: &str = "fluxion.timestamp";
/// The header holding a record's sequence within its time and partition, in decimal.
const SEQUENCE_HEADER: &str = "fluxion.sequence";

/// How long a metadata, topic or fetch request is retried before it fails.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How long opening the sink, or reading the partitions' positions, may take.
const OPEN_DEADLINE: Duration = Duration::from_secs(15);
/// How long one produce request may take.
const PRODUCE_DEADLINE: Duration = Duration::from_secs(30);
/// How many bytes of keys, values and headers one produce request carries at most (a larger
/// record goes alone).
const MAX_REQUEST_BYTES: usize = 1 << 20;
/// How many records one produce request carries at most.
const MAX_REQUEST_RECORDS: usize = 10_000;
/// How many bytes reading a partition's last record asks for at most.
const MAX_FETCH_BYTES: i32 = 1 << 20;

/// Where a `kafka` sink produces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KafkaSinkConfig {
    /// The `topic` option.
    pub topic: String,
    /// The brokers of `properties.bootstrap.server` (`host:port`, comma-separated).
    pub brokers: Vec<String>,
    /// `topic.partitions`: how many partitions the topic gets if the sink creates it.
    pub partitions: i32,
}

impl KafkaSinkConfig {
    /// Reads the options of a `kafka` sink.
    pub fn from_options(_spec: &SinkSpec, options: &SourceOptions) -> Result<Self, ConnectorError> {
        let topic = options.required(CONNECTOR, "topic")?.to_string();
        let brokers = crate::kafka::brokers(options, CONNECTOR)?;
        let partitions = options.parsed::<i32>("topic.partitions")?.unwrap_or(1);
        if partitions < 1 {
            return Err(ConnectorError::InvalidOption {
                option: "topic.partitions".into(),
                reason: format!("{partitions}: a topic has at least one partition"),
            });
        }
        // Read by `open_sink` and `SinkSpec::new`; named here so they are not unknown.
        options.connector();
        options.text("key");
        options.reject_unknown(CONNECTOR)?;
        Ok(Self {
            topic,
            brokers,
            partitions,
        })
    }
}

/// How far a partition holds a sink's records: the time and sequence of its last one.
/// Ordered by time, then sequence, which is the order a partition is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct Position {
    /// The record's time.
    time: Timestamp,
    /// The record's place among the records of its time in its partition, from 0.
    sequence: u64,
}

/// One partition of the topic.
#[derive(Debug)]
struct SinkPartition {
    /// The partition's id.
    id: i32,
    /// Reads the partition's last record (its requests are retried).
    reader: PartitionClient,
    /// Produces to the partition (its requests are never retried).
    writer: PartitionClient,
    /// The last record of the sink the partition holds; `None`: none yet.
    position: Option<Position>,
}

/// An open `kafka` sink.
#[derive(Debug)]
pub struct KafkaSink {
    spec: SinkSpec,
    config: KafkaSinkConfig,
    /// The topic's partitions, by ascending id.
    partitions: Vec<SinkPartition>,
    /// Whether the partitions' positions must be read from the topic before delivering:
    /// after opening, and after a produce that may or may not have written its records.
    is_stale: bool,
    /// The last time all of whose records are in the topic, as far as this sink knows.
    delivered_through: Option<Timestamp>,
}

impl KafkaSink {
    /// Connects to the brokers, creates the topic with `topic.partitions` partitions
    /// (replication factor 1) if it does not exist, and finds its partitions.
    pub(crate) async fn open(
        spec: SinkSpec,
        config: KafkaSinkConfig,
    ) -> Result<Self, ConnectorError> {
        let what = format!("opening kafka topic \"{}\"", config.topic);
        let partitions = within(OPEN_DEADLINE, &what, connect(&config)).await?;
        Ok(Self {
            spec,
            config,
            partitions,
            is_stale: true,
            delivered_through: None,
        })
    }

    /// Reads every partition's last record of this sink, and returns the earliest time among
    /// them: [`deliver`](Self::deliver) must then be given every time from it on, and skips
    /// what the partitions already hold. `None` (deliver everything) if some partition holds
    /// nothing of this sink.
    pub async fn resume(&mut self) -> Result<Option<Timestamp>, ConnectorError> {
        self.read_positions().await?;
        Ok(self.resume_time())
    }

    /// Produces the records of `batches` (one per time, in ascending time order) that the
    /// partitions do not hold yet, partition by partition. On an error some partitions may
    /// have received their records and others not; delivering the same batches again is
    /// exact.
    pub async fn deliver(&mut self, batches: &[ChangeBatch]) -> Result<(), ConnectorError> {
        if self.is_stale {
            self.read_positions().await?;
        }
        let count = NonZeroUsize::new(self.partitions.len())
            .expect("invariant: `connect` refuses a topic without partitions");
        let mut outgoing: Vec<Vec<(Position, Record)>> =
            self.partitions.iter().map(|_| Vec::new()).collect();
        for batch in batches {
            let changes = encode_changes(&self.spec, batch)?;
            let routes = route(batch.time, &changes, count);
            for (change, (index, position)) in changes.into_iter().zip(routes) {
                let partition = &self.partitions[index];
                if !is_delivered(partition.position, position) {
                    let record = to_record(&self.spec.identity, position, change);
                    outgoing[index].push((position, record));
                }
            }
        }
        for (index, records) in outgoing.into_iter().enumerate() {
            self.produce(index, records).await?;
        }
        if let Some(last) = batches.last() {
            self.delivered_through = self.delivered_through.max(Some(last.time));
        }
        Ok(())
    }

    /// The last time all of whose records are in the topic: the last time this sink
    /// delivered, or, if later, the time before the one [`resume`](Self::resume) returned
    /// (that one may be in the topic only in part).
    pub fn delivered_through(&self) -> Option<Timestamp> {
        self.delivered_through
    }

    /// The earliest time a later [`resume`](Self::resume) could return: the changes from it
    /// on must stay available one time at a time.
    pub fn history_needed_from(&self) -> Timestamp {
        self.resume_time().unwrap_or(0)
    }

    /// Reads every partition's position from its last record.
    async fn read_positions(&mut self) -> Result<(), ConnectorError> {
        self.is_stale = true;
        let what = format!(
            "reading the last records of kafka topic \"{}\"",
            self.config.topic
        );
        let topic = &self.config.topic;
        let identity = &self.spec.identity;
        let partitions = &mut self.partitions;
        within(OPEN_DEADLINE, &what, async {
            for partition in partitions {
                partition.position = last_position(&partition.reader, topic, identity).await?;
            }
            Ok(())
        })
        .await?;
        self.is_stale = false;
        let complete = self.resume_time().and_then(|time| time.checked_sub(1));
        self.delivered_through = self.delivered_through.max(complete);
        Ok(())
    }

    /// The earliest position's time over all partitions; `None` if one has no position.
    fn resume_time(&self) -> Option<Timestamp> {
        self.partitions
            .iter()
            .map(|p| p.position.map(|position| position.time))
            .collect::<Option<Vec<_>>>()?
            .into_iter()
            .min()
    }

    /// Produces `records` to partition `index` in requests of bounded size, advancing its
    /// position after each.
    async fn produce(
        &mut self,
        index: usize,
        records: Vec<(Position, Record)>,
    ) -> Result<(), ConnectorError> {
        let topic = &self.config.topic;
        let partition = &mut self.partitions[index];
        for request in into_requests(records) {
            let Some(&(last, _)) = request.last() else {
                continue;
            };
            let records = request.into_iter().map(|(_, record)| record).collect();
            let what = format!(
                "producing to partition {} of kafka topic \"{}\"",
                partition.id, topic
            );
            let produced = within(PRODUCE_DEADLINE, &what, async {
                partition
                    .writer
                    .produce(records, Compression::NoCompression)
                    .await
                    .map_err(|e| request_failed(topic, partition.id, "produce to", e))
            })
            .await;
            if let Err(e) = produced {
                self.is_stale = true;
                return Err(e);
            }
            partition.position = Some(last);
        }
        Ok(())
    }
}

/// Connects to the brokers and opens every partition of the topic, creating it first if
/// it does not exist.
async fn connect(config: &KafkaSinkConfig) -> Result<Vec<SinkPartition>, ConnectorError> {
    let retrying = client(config, Some(REQUEST_DEADLINE)).await?;
    let ids = ensure_topic(&retrying, config).await?;
    let once = client(config, Some(Duration::ZERO)).await?;
    let topic = &config.topic;
    let mut partitions = Vec::with_capacity(ids.len());
    for id in ids {
        let reader = partition_client(&retrying, topic, id).await?;
        let writer = partition_client(&once, topic, id).await?;
        partitions.push(SinkPartition {
            id,
            reader,
            writer,
            position: None,
        });
    }
    Ok(partitions)
}

/// A client of the brokers whose requests are retried until `deadline` (`ZERO`: never).
async fn client(
    config: &KafkaSinkConfig,
    deadline: Option<Duration>,
) -> Result<Client, ConnectorError> {
    let brokers = config.brokers.join(",");
    ClientBuilder::new(config.brokers.clone())
        .client_id("fluxion")
        .backoff_config(BackoffConfig {
            deadline,
            ..BackoffConfig::default()
        })
        .build()
        .await
        .map_err(|e| {
            ConnectorError::Upstream(format!("cannot connect to kafka brokers {brokers}: {e}"))
        })
}

/// A client of partition `id` of `topic`, connected to its leader.
async fn partition_client(
    client: &Client,
    topic: &str,
    id: i32,
) -> Result<PartitionClient, ConnectorError> {
    client
        .partition_client(topic, id, UnknownTopicHandling::Retry)
        .await
        .map_err(|e| request_failed(topic, id, "find the leader of", e))
}

/// The partition ids of the topic (ascending), created first with `config.partitions`
/// partitions if it does not exist.
async fn ensure_topic(
    client: &Client,
    config: &KafkaSinkConfig,
) -> Result<Vec<i32>, ConnectorError> {
    let topic = &config.topic;
    if let Some(ids) = partition_ids(client, config).await? {
        return Ok(ids);
    }
    let timeout_ms = i32::try_from(REQUEST_DEADLINE.as_millis()).unwrap_or(i32::MAX);
    let controller = client
        .controller_client()
        .map_err(|e| ConnectorError::Upstream(format!("cannot reach the kafka controller: {e}")))?;
    match controller
        .create_topic(topic.as_str(), config.partitions, 1, timeout_ms)
        .await
    {
        Ok(())
        | Err(KafkaError::ServerError {
            protocol_error: ProtocolError::TopicAlreadyExists,
            ..
        }) => {}
        Err(e) => {
            return Err(ConnectorError::Upstream(format!(
                "cannot create kafka topic \"{topic}\": {e}"
            )))
        }
    }
    // The brokers list a new topic's partitions a moment after creating it; the wait is
    // bounded by `KafkaSink::open`'s deadline.
    loop {
        if let Some(ids) = partition_ids(client, config).await? {
            return Ok(ids);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The partition ids of the topic (ascending); `None` if the brokers do not list it, or
/// list it without partitions yet.
async fn partition_ids(
    client: &Client,
    config: &KafkaSinkConfig,
) -> Result<Option<Vec<i32>>, ConnectorError> {
    let topics = client.list_topics().await.map_err(|e| {
        ConnectorError::Upstream(format!(
            "cannot list the topics of kafka brokers {}: {e}",
            config.brokers.join(",")
        ))
    })?;
    Ok(topics
        .into_iter()
        .find(|t| t.name == config.topic)
        .map(|t| t.partitions.into_iter().collect::<Vec<i32>>())
        .filter(|ids| !ids.is_empty()))
}

/// The position of the partition of `client`: the headers of its last record, if the sink
/// `identity` wrote it. A last record written by someone else leaves the partition without a
/// position (with a warning): the sink cannot tell what of its own it holds before it.
async fn last_position(
    client: &PartitionClient,
    topic: &str,
    identity: &str,
) -> Result<Option<Position>, ConnectorError> {
    let id = client.partition();
    let earliest = client
        .get_offset(OffsetAt::Earliest)
        .await
        .map_err(|e| request_failed(topic, id, "list the offsets of", e))?;
    // A fetch's high watermark, not a `Latest` offset request: tansu 0.6 answers those with
    // the start of the last record batch.
    let (_, high_watermark) = fetch(client, topic, earliest, 1..2).await?;
    if high_watermark <= earliest {
        return Ok(None);
    }
    let last = last_record(client, topic, earliest, high_watermark).await?;
    let position = last.as_ref().and_then(|last| position_of(last, identity));
    if position.is_none() {
        tracing::warn!(
            topic,
            partition = id,
            "the last record of the partition was not written by this sink; \
             all of the sink's changes are produced to it again"
        );
    }
    Ok(position)
}

/// The last record of the partition of `client`, whose records span `earliest` up to
/// `high_watermark`: read from ever further back (1, 2, 4, … records) until a fetch returns
/// some. Kafka answers the first fetch with the batch holding the last record; tansu 0.6
/// answers a fetch from inside a batch with the batches after it only.
async fn last_record(
    client: &PartitionClient,
    topic: &str,
    earliest: i64,
    high_watermark: i64,
) -> Result<Option<Record>, ConnectorError> {
    let mut step: i64 = 1;
    loop {
        let from = high_watermark.saturating_sub(step).max(earliest);
        if let Some(record) = last_record_from(client, topic, from).await? {
            return Ok(Some(record));
        }
        if from == earliest {
            return Ok(None);
        }
        step = step.saturating_mul(2);
    }
}

/// The last of the records fetched from `from` on, fetching until there are no more.
async fn last_record_from(
    client: &PartitionClient,
    topic: &str,
    from: i64,
) -> Result<Option<Record>, ConnectorError> {
    let mut next = from;
    let mut last = None;
    loop {
        let (records, high_watermark) = fetch(client, topic, next, 1..MAX_FETCH_BYTES).await?;
        match records.into_iter().max_by_key(|r| r.offset) {
            Some(newest) if newest.offset >= next => {
                next = newest.offset + 1;
                last = Some(newest.record);
            }
            _ => return Ok(last),
        }
        if next >= high_watermark {
            return Ok(last);
        }
    }
}

/// The records of the partition of `client` from `offset` on, at most `bytes` of them
/// (though at least one batch), and the partition's high watermark.
async fn fetch(
    client: &PartitionClient,
    topic: &str,
    offset: i64,
    bytes: Range<i32>,
) -> Result<(Vec<RecordAndOffset>, i64), ConnectorError> {
    client
        .fetch_records(offset, bytes, 0)
        .await
        .map_err(|e| request_failed(topic, client.partition(), "fetch from", e))
}

/// The position a record of sink `identity` holds in its headers; `None` for any other.
fn position_of(record: &Record, identity: &str) -> Option<Position> {
    let header = |name: &str| record.headers.get(name).map(Vec::as_slice);
    if header(SINK_HEADER) != Some(identity.as_bytes()) {
        return None;
    }
    let number = |name: &str| std::str::from_utf8(header(name)?).ok()?.parse::<u64>().ok();
    Some(Position {
        time: number(TIMESTAMP_HEADER)?,
        sequence: number(SEQUENCE_HEADER)?,
    })
}

/// Each of a time's records' partition (as an index into `count` partitions) and position:
/// a keyed record goes by the FNV-1a hash of its key, an unkeyed one by its index in the
/// time; sequences count the time's records per partition.
fn route(time: Timestamp, changes: &[KeyedChange], count: NonZeroUsize) -> Vec<(usize, Position)> {
    let mut next_sequence = vec![0u64; count.get()];
    changes
        .iter()
        .enumerate()
        .map(|(index, change)| {
            // Unkeyed records go round robin, starting one partition further each time.
            let unkeyed = time.wrapping_add(index as u64);
            let slot = change.key.as_deref().map_or(unkeyed, fnv1a) % count.get() as u64;
            let partition =
                usize::try_from(slot).expect("invariant: a remainder modulo a usize fits a usize");
            let sequence = next_sequence[partition];
            next_sequence[partition] += 1;
            (partition, Position { time, sequence })
        })
        .collect()
}

/// The 64-bit FNV-1a hash of `bytes`: stable across processes and versions, unlike std's.
fn fnv1a(bytes: &[u8]) -> u64 {
    const OFFSET_BASIS: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET_BASIS, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(PRIME)
    })
}

/// Whether a partition at `position` already holds the record at `record`.
fn is_delivered(position: Option<Position>, record: Position) -> bool {
    position.is_some_and(|position| record <= position)
}

/// The Kafka record of `change` at `position`, written by sink `identity`; its timestamp is
/// the change's time (milliseconds since 1970), or now if that is out of range.
fn to_record(identity: &str, position: Position, change: KeyedChange) -> Record {
    let timestamp = i64::try_from(position.time)
        .ok()
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .unwrap_or_else(Utc::now);
    Record {
        key: change.key,
        value: change.value,
        headers: BTreeMap::from([
            (SINK_HEADER.to_string(), identity.as_bytes().to_vec()),
            (
                TIMESTAMP_HEADER.to_string(),
                position.time.to_string().into_bytes(),
            ),
            (
                SEQUENCE_HEADER.to_string(),
                position.sequence.to_string().into_bytes(),
            ),
        ]),
        timestamp,
    }
}

/// `records` cut into produce requests of at most [`MAX_REQUEST_RECORDS`] records and
/// [`MAX_REQUEST_BYTES`] bytes (a larger record alone), in order.
fn into_requests<T>(records: Vec<(T, Record)>) -> Vec<Vec<(T, Record)>> {
    let mut requests: Vec<Vec<(T, Record)>> = Vec::new();
    let mut bytes = 0;
    for (tag, record) in records {
        let size = record.approximate_size();
        let is_full = requests.last().is_none_or(|request| {
            request.len() >= MAX_REQUEST_RECORDS || bytes + size > MAX_REQUEST_BYTES
        });
        if is_full {
            requests.push(Vec::new());
            bytes = 0;
        }
        bytes += size;
        if let Some(request) = requests.last_mut() {
            request.push((tag, record));
        }
    }
    requests
}

/// Runs `work`, failing if it takes longer than `deadline`.
async fn within<T>(
    deadline: Duration,
    what: &str,
    work: impl Future<Output = Result<T, ConnectorError>>,
) -> Result<T, ConnectorError> {
    tokio::time::timeout(deadline, work)
        .await
        .unwrap_or_else(|_| {
            Err(ConnectorError::Upstream(format!(
                "{what} took longer than {}s",
                deadline.as_secs()
            )))
        })
}

/// A failed request about one partition, for the user.
fn request_failed(topic: &str, partition: i32, what: &str, error: KafkaError) -> ConnectorError {
    ConnectorError::Upstream(format!(
        "cannot {what} partition {partition} of kafka topic \"{topic}\": {error}"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(n: usize) -> NonZeroUsize {
        NonZeroUsize::new(n).expect("a non-zero count")
    }

    fn keyed(key: &str) -> KeyedChange {
        KeyedChange {
            key: Some(key.as_bytes().to_vec()),
            value: None,
        }
    }

    fn unkeyed() -> KeyedChange {
        KeyedChange {
            key: None,
            value: Some(b"{}".to_vec()),
        }
    }

    fn at(time: Timestamp, sequence: u64) -> Position {
        Position { time, sequence }
    }

    #[test]
    fn fnv1a_matches_the_reference_vectors() {
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn unkeyed_records_go_round_robin_with_sequences_per_partition() {
        let changes = vec![unkeyed(); 5];
        assert_eq!(
            route(6, &changes, count(3)),
            [
                (0, at(6, 0)),
                (1, at(6, 0)),
                (2, at(6, 0)),
                (0, at(6, 1)),
                (1, at(6, 1))
            ]
        );
    }

    #[test]
    fn a_key_always_goes_to_the_same_partition() {
        let changes = [keyed("a"), keyed("b"), keyed("a"), keyed("c"), keyed("a")];
        let routes = route(1, &changes, count(4));
        assert_eq!(routes, route(1, &changes, count(4)));
        let of_a: Vec<_> = [0, 2, 4].iter().map(|&i| routes[i]).collect();
        assert!(of_a.iter().all(|(p, _)| *p == of_a[0].0), "{routes:?}");
        assert_eq!(
            of_a.iter().map(|(_, pos)| pos.sequence).collect::<Vec<_>>(),
            [0, 1, 2]
        );
    }

    #[test]
    fn skips_what_the_partition_holds_and_nothing_after() {
        assert!(!is_delivered(None, at(0, 0)));
        let position = Some(at(10, 2));
        assert!(is_delivered(position, at(9, 7)));
        assert!(is_delivered(position, at(10, 0)));
        assert!(is_delivered(position, at(10, 2)));
        assert!(!is_delivered(position, at(10, 3)));
        assert!(!is_delivered(position, at(11, 0)));
    }

    #[test]
    fn headers_give_back_the_position_of_the_sinks_own_records_only() {
        let record = to_record("s/1", at(12, 3), unkeyed());
        assert_eq!(position_of(&record, "s/1"), Some(at(12, 3)));
        assert_eq!(position_of(&record, "s/2"), None);
        let mut foreign = record.clone();
        foreign.headers.remove(SEQUENCE_HEADER);
        assert_eq!(position_of(&foreign, "s/1"), None);
        assert_eq!(record.timestamp.timestamp_millis(), 12);
    }

    #[test]
    fn requests_are_bounded_in_records_and_bytes() {
        let small = |tag: usize| (tag, to_record("s", at(1, 0), unkeyed()));
        let requests = into_requests((0..MAX_REQUEST_RECORDS + 1).map(small).collect());
        assert_eq!(
            requests.iter().map(Vec::len).collect::<Vec<_>>(),
            [MAX_REQUEST_RECORDS, 1]
        );
        let big = |tag: usize| {
            let mut record = to_record("s", at(1, 0), unkeyed());
            record.value = Some(vec![b'x'; MAX_REQUEST_BYTES / 2]);
            (tag, record)
        };
        let requests = into_requests((0..3).map(big).collect());
        let tags: Vec<Vec<usize>> = requests
            .iter()
            .map(|r| r.iter().map(|(tag, _)| *tag).collect())
            .collect();
        assert_eq!(tags, [vec![0], vec![1], vec![2]]);
    }
}
