//! The brokers' side of a `kafka` source: connecting, finding the topic's partitions and
//! where to start in each, and fetching the next records of every partition at once.
//!
//! Every partition has a client of its own (rskafka's `PartitionClient`, which follows the
//! partition's leader); a fetch round asks all of them concurrently and waits at most a
//! bounded time for records, so that an idle topic costs one round per wait.

use std::collections::BTreeMap;
use std::ops::Range;
use std::sync::Arc;
use std::time::Duration;

use rskafka::client::error::{Error as KafkaError, ProtocolError};
use rskafka::client::partition::{OffsetAt, PartitionClient, UnknownTopicHandling};
use rskafka::client::{Client, ClientBuilder};
use rskafka::BackoffConfig;
use tokio::task::JoinSet;

use super::config::{KafkaConfig, Startup};
use super::position::Position;
use crate::ConnectorError;

/// How long opening may take, and how long a request is retried before it fails.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);
/// How many bytes one fetch asks of one partition at most.
const MAX_FETCH_BYTES: i32 = 1 << 20;

/// One record read from a partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KafkaRecord {
    /// The partition it was read from.
    pub partition: i32,
    /// Its offset within the partition.
    pub offset: i64,
    /// Its key, if it has one.
    pub key: Option<Vec<u8>>,
    /// Its value; `None` for a tombstone.
    pub value: Option<Vec<u8>>,
    /// Its timestamp, in microseconds since 1970-01-01 00:00 UTC.
    pub timestamp_micros: i64,
}

impl KafkaRecord {
    /// Where it was, as a bad record reports it: `partition 2 offset 41`.
    pub fn position(&self) -> String {
        format!("partition {} offset {}", self.partition, self.offset)
    }
}

/// One partition being read.
struct PartitionReader {
    client: Arc<PartitionClient>,
    /// The offset of the next record to read.
    next: i64,
    /// The partition's high watermark (the offset after its last record), as last reported.
    high_watermark: i64,
}

/// The partitions of the topic, each with where its next record is.
pub(crate) struct TopicReader {
    topic: String,
    partitions: BTreeMap<i32, PartitionReader>,
}

impl TopicReader {
    /// Connects to the brokers, finds every partition of the topic and where to start in each:
    /// at `resume`'s offset for a partition it lists, else where `config.startup` says.
    pub async fn open(
        config: &KafkaConfig,
        resume: Option<&Position>,
    ) -> Result<Self, ConnectorError> {
        let brokers = config.brokers.join(",");
        let opened = tokio::time::timeout(REQUEST_DEADLINE, Self::connect(config, resume)).await;
        match opened {
            Ok(Ok(reader)) => Ok(reader),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(ConnectorError::Upstream(format!(
                "kafka brokers {brokers} did not answer within {}s",
                REQUEST_DEADLINE.as_secs()
            ))),
        }
    }

    async fn connect(
        config: &KafkaConfig,
        resume: Option<&Position>,
    ) -> Result<Self, ConnectorError> {
        let brokers = config.brokers.join(",");
        let topic = &config.topic;
        let client = ClientBuilder::new(config.brokers.clone())
            .client_id("fluxion")
            .backoff_config(BackoffConfig {
                deadline: Some(REQUEST_DEADLINE),
                ..BackoffConfig::default()
            })
            .build()
            .await
            .map_err(|e| {
                ConnectorError::Upstream(format!("cannot connect to kafka brokers {brokers}: {e}"))
            })?;
        let ids = partition_ids(&client, topic, &brokers).await?;
        if let Some(resume) = resume {
            if let Some(missing) = resume.partitions.keys().find(|p| !ids.contains(p)) {
                return Err(ConnectorError::Upstream(format!(
                    "the source's position reads partition {missing} of topic \"{topic}\", \
                     which has no such partition now (was the topic recreated?)"
                )));
            }
        }
        if let Startup::Offsets(offsets) = &config.startup {
            if let Some(missing) = offsets.keys().find(|p| !ids.contains(p)) {
                return Err(ConnectorError::InvalidOption {
                    option: "scan.startup.specific.offsets".into(),
                    reason: format!("topic \"{topic}\" has no partition {missing}"),
                });
            }
        }
        let mut partitions = BTreeMap::new();
        for id in ids {
            let client = client
                .partition_client(topic.clone(), id, UnknownTopicHandling::Retry)
                .await
                .map_err(|e| request_failed(topic, id, "find the leader of", e))?;
            let earliest = offset_of(&client, topic, OffsetAt::Earliest).await?;
            let high_watermark = high_watermark(&client, topic, earliest).await?;
            let resumed = resume.and_then(|r| r.partitions.get(&id).copied());
            let next = match (resumed, &config.startup) {
                (Some(next), _) => next,
                (None, Startup::Latest) => high_watermark,
                (None, Startup::Offsets(offsets)) if offsets.contains_key(&id) => offsets[&id],
                (None, _) => earliest,
            };
            partitions.insert(
                id,
                PartitionReader {
                    client: Arc::new(client),
                    next,
                    high_watermark,
                },
            );
        }
        Ok(Self {
            topic: topic.clone(),
            partitions,
        })
    }

    /// Where the next record of each partition is.
    pub fn position(&self) -> Position {
        Position {
            partitions: self
                .partitions
                .iter()
                .map(|(&id, partition)| (id, partition.next))
                .collect(),
        }
    }

    /// The records not read yet, over all partitions, as the brokers last reported.
    pub fn lag(&self) -> u64 {
        self.partitions
            .values()
            .map(|p| u64::try_from(p.high_watermark - p.next).unwrap_or(0))
            .sum()
    }

    /// Fetches the next records of every partition at once, waiting up to `max_wait` for
    /// some to arrive, and takes at most `max_records` of them (partition by partition); the
    /// position then follows the records taken.
    pub async fn fetch(
        &mut self,
        max_wait: Duration,
        max_records: usize,
    ) -> Result<Vec<KafkaRecord>, ConnectorError> {
        let max_wait_ms = i32::try_from(max_wait.as_millis()).unwrap_or(i32::MAX);
        let mut fetches = JoinSet::new();
        for (&id, partition) in &self.partitions {
            let client = Arc::clone(&partition.client);
            let offset = partition.next;
            let bytes: Range<i32> = 1..MAX_FETCH_BYTES;
            fetches.spawn(async move {
                let fetched = client.fetch_records(offset, bytes, max_wait_ms).await;
                (id, fetched)
            });
        }
        let mut fetched = BTreeMap::new();
        while let Some(joined) = fetches.join_next().await {
            let (id, result) = joined
                .map_err(|e| ConnectorError::Upstream(format!("a kafka fetch task failed: {e}")))?;
            let reader = self
                .partitions
                .get(&id)
                .expect("invariant: a fetch is only started for a known partition");
            let (records, high_watermark) = result.map_err(|e| match e {
                KafkaError::ServerError {
                    protocol_error: ProtocolError::OffsetOutOfRange,
                    ..
                } => ConnectorError::Upstream(format!(
                    "offset {} of partition {id} of topic \"{}\" is no longer kept by the \
                     brokers (retention removed records the source had not read)",
                    reader.next, self.topic
                )),
                e => request_failed(&self.topic, id, "fetch from", e),
            })?;
            fetched.insert(id, (records, high_watermark));
        }
        let mut taken = Vec::new();
        for (id, (records, high_watermark)) in fetched {
            let partition = self
                .partitions
                .get_mut(&id)
                .expect("invariant: a fetch is only started for a known partition");
            partition.high_watermark = high_watermark;
            for record in records {
                if taken.len() >= max_records {
                    break;
                }
                if record.offset < partition.next {
                    continue;
                }
                partition.next = record.offset + 1;
                let record_data = record.record;
                taken.push(KafkaRecord {
                    partition: id,
                    offset: record.offset,
                    key: record_data.key,
                    value: record_data.value,
                    timestamp_micros: record_data.timestamp.timestamp_micros(),
                });
            }
        }
        Ok(taken)
    }
}

/// The partitions of `topic`, or an error saying the brokers do not have it.
async fn partition_ids(
    client: &Client,
    topic: &str,
    brokers: &str,
) -> Result<Vec<i32>, ConnectorError> {
    let topics = client.list_topics().await.map_err(|e| {
        ConnectorError::Upstream(format!(
            "cannot list the topics of kafka brokers {brokers}: {e}"
        ))
    })?;
    let found = topics.into_iter().find(|t| t.name == topic);
    match found {
        Some(found) if !found.partitions.is_empty() => Ok(found.partitions.into_iter().collect()),
        Some(_) => Err(ConnectorError::Upstream(format!(
            "kafka topic \"{topic}\" on {brokers} has no partitions"
        ))),
        None => Err(ConnectorError::Upstream(format!(
            "kafka topic \"{topic}\" does not exist on {brokers}"
        ))),
    }
}

/// The offset `at` of the partition of `client`.
async fn offset_of(
    client: &PartitionClient,
    topic: &str,
    at: OffsetAt,
) -> Result<i64, ConnectorError> {
    client
        .get_offset(at)
        .await
        .map_err(|e| request_failed(topic, client.partition(), "list the offsets of", e))
}

/// The high watermark of the partition of `client` (the offset its next record will get), as
/// a fetch from `earliest` reports it: a fetch's high watermark is what lag is measured
/// against, and some Kafka-compatible brokers (tansu 0.6) answer a `Latest` offset request
/// with the start of the last record batch instead.
async fn high_watermark(
    client: &PartitionClient,
    topic: &str,
    earliest: i64,
) -> Result<i64, ConnectorError> {
    let (_, high_watermark) = client
        .fetch_records(earliest, 1..2, 0)
        .await
        .map_err(|e| request_failed(topic, client.partition(), "fetch from", e))?;
    Ok(high_watermark)
}

/// A failed request about one partition, for the user.
fn request_failed(topic: &str, partition: i32, what: &str, error: KafkaError) -> ConnectorError {
    ConnectorError::Upstream(format!(
        "cannot {what} partition {partition} of kafka topic \"{topic}\": {error}"
    ))
}
