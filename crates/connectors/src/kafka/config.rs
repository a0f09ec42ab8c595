//! The `WITH (…)` options of a `kafka` source.

use std::collections::BTreeMap;

use crate::{ConnectorError, SourceOptions};

/// The connector's name in `connector = '…'`.
pub(crate) const CONNECTOR: &str = "kafka";

/// What a `kafka` source reads and where it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KafkaConfig {
    /// The `topic` option.
    pub topic: String,
    /// The brokers of `properties.bootstrap.server` (`host:port`, comma-separated).
    pub brokers: Vec<String>,
    /// `scan.startup.mode`: where a source without a resume position starts.
    pub startup: Startup,
}

/// Where a source without a resume position starts reading each partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Startup {
    /// At the oldest record still kept (`earliest`, the default).
    Earliest,
    /// After the records there are at open (`latest`).
    Latest,
    /// At the given offset per partition (`offset`, with `scan.startup.specific.offsets`);
    /// a partition not listed starts at its oldest record.
    Offsets(BTreeMap<i32, i64>),
}

/// The brokers of option `properties.bootstrap.server` (`host:port`, comma-separated) of a
/// `connector` source or sink.
pub(crate) fn brokers(
    options: &SourceOptions,
    connector: &str,
) -> Result<Vec<String>, ConnectorError> {
    let brokers: Vec<String> = options
        .required(connector, "properties.bootstrap.server")?
        .split(',')
        .map(str::trim)
        .filter(|broker| !broker.is_empty())
        .map(str::to_string)
        .collect();
    if brokers.is_empty() {
        return Err(ConnectorError::InvalidOption {
            option: "properties.bootstrap.server".into(),
            reason: "it lists no host:port".into(),
        });
    }
    Ok(brokers)
}

impl KafkaConfig {
    /// Reads the options of a `kafka` source.
    pub fn from_options(options: &SourceOptions) -> Result<Self, ConnectorError> {
        let topic = options.required(CONNECTOR, "topic")?.to_string();
        let brokers = brokers(options, CONNECTOR)?;
        let mode = options
            .text("scan.startup.mode")
            .map(|mode| mode.trim().to_ascii_lowercase());
        let specific = options.text("scan.startup.specific.offsets");
        let startup = match (mode.as_deref(), specific) {
            (None | Some("earliest"), None) => Startup::Earliest,
            (Some("latest"), None) => Startup::Latest,
            (Some("offset"), Some(text)) => Startup::Offsets(parse_offsets(text)?),
            (Some("offset"), None) => {
                return Err(ConnectorError::MissingOption {
                    connector: CONNECTOR.into(),
                    option: "scan.startup.specific.offsets".into(),
                })
            }
            (_, Some(_)) => {
                return Err(ConnectorError::InvalidOption {
                    option: "scan.startup.specific.offsets".into(),
                    reason: "it needs scan.startup.mode = 'offset'".into(),
                })
            }
            (Some(other), None) => {
                return Err(ConnectorError::InvalidOption {
                    option: "scan.startup.mode".into(),
                    reason: format!("\"{other}\" (known: earliest, latest, offset)"),
                })
            }
        };
        Ok(Self {
            topic,
            brokers,
            startup,
        })
    }
}

/// `0:42,1:17`: the offset to start at for each listed partition.
fn parse_offsets(text: &str) -> Result<BTreeMap<i32, i64>, ConnectorError> {
    let invalid = |reason: String| ConnectorError::InvalidOption {
        option: "scan.startup.specific.offsets".into(),
        reason,
    };
    let mut offsets = BTreeMap::new();
    for entry in text.split(',').map(str::trim).filter(|e| !e.is_empty()) {
        let parsed = entry.split_once(':').and_then(|(partition, offset)| {
            let partition = partition.trim().parse::<i32>().ok()?;
            let offset = offset.trim().parse::<i64>().ok()?;
            (partition >= 0 && offset >= 0).then_some((partition, offset))
        });
        let (partition, offset) = parsed.ok_or_else(|| {
            invalid(format!(
                "\"{entry}\" is not partition:offset (two non-negative integers)"
            ))
        })?;
        if offsets.insert(partition, offset).is_some() {
            return Err(invalid(format!("partition {partition} is listed twice")));
        }
    }
    if offsets.is_empty() {
        return Err(invalid("no partition:offset is listed".into()));
    }
    Ok(offsets)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(pairs: &[(&str, &str)]) -> SourceOptions {
        SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    #[test]
    fn reads_topic_brokers_and_startup_mode() {
        let config = KafkaConfig::from_options(&options(&[
            ("topic", "clicks"),
            ("properties.bootstrap.server", "a:9092, b:9093,"),
            ("scan.startup.mode", "offset"),
            ("scan.startup.specific.offsets", "0:42,1:17"),
        ]))
        .unwrap();
        assert_eq!(config.topic, "clicks");
        assert_eq!(config.brokers, ["a:9092", "b:9093"]);
        assert_eq!(
            config.startup,
            Startup::Offsets(BTreeMap::from([(0, 42), (1, 17)]))
        );
        let config = KafkaConfig::from_options(&options(&[
            ("topic", "t"),
            ("properties.bootstrap.server", "a:1"),
        ]))
        .unwrap();
        assert_eq!(config.startup, Startup::Earliest);
    }

    #[test]
    fn rejects_missing_and_bad_options() {
        const BASE: [(&str, &str); 2] = [("topic", "t"), ("properties.bootstrap.server", "a:1")];
        let cases: Vec<Vec<(&str, &str)>> = vec![
            vec![("properties.bootstrap.server", "a:1")],
            vec![("topic", "t")],
            [&BASE[..], &[("scan.startup.mode", "newest")]].concat(),
            [&BASE[..], &[("scan.startup.mode", "offset")]].concat(),
            [&BASE[..], &[("scan.startup.specific.offsets", "0:1")]].concat(),
            [
                &BASE[..],
                &[
                    ("scan.startup.mode", "offset"),
                    ("scan.startup.specific.offsets", "0:x"),
                ],
            ]
            .concat(),
            [
                &BASE[..],
                &[
                    ("scan.startup.mode", "offset"),
                    ("scan.startup.specific.offsets", "0:1,0:2"),
                ],
            ]
            .concat(),
        ];
        for pairs in cases {
            assert!(
                KafkaConfig::from_options(&options(&pairs)).is_err(),
                "{pairs:?}"
            );
        }
    }
}
