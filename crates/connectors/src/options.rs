//! The `WITH (…)` options of a source, read by name with their types checked.

use std::collections::{BTreeMap, BTreeSet};
use std::str::FromStr;
use std::sync::Mutex;
use std::time::Duration;

use crate::ConnectorError;

/// A source's options (`connector = 'nexmark', nexmark.event.rate = '1000', …`), keys in lower
/// case. A connector reads the options it knows and calls [`SourceOptions::reject_unknown`]
/// so that a misspelt option is an error, not silently ignored.
#[derive(Debug, Default)]
pub struct SourceOptions {
    values: BTreeMap<String, String>,
    read: Mutex<BTreeSet<String>>,
}

impl SourceOptions {
    /// Options from `(name, value)` pairs; names are matched case-insensitively.
    pub fn new(pairs: impl IntoIterator<Item = (String, String)>) -> Self {
        Self {
            values: pairs
                .into_iter()
                .map(|(k, v)| (k.to_lowercase(), v))
                .collect(),
            read: Mutex::new(BTreeSet::new()),
        }
    }

    /// The connector's name (the `connector` option).
    pub fn connector(&self) -> Option<&str> {
        self.text("connector")
    }

    /// The text of option `name`, if given.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.read
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(name.to_string());
        self.values.get(name).map(String::as_str)
    }

    /// Option `name` parsed as a `T`, if given.
    pub fn parsed<T: FromStr>(&self, name: &str) -> Result<Option<T>, ConnectorError>
    where
        T::Err: std::fmt::Display,
    {
        self.text(name)
            .map(|text| {
                text.trim()
                    .parse()
                    .map_err(|e: T::Err| ConnectorError::InvalidOption {
                        option: name.to_string(),
                        reason: format!("\"{text}\": {e}"),
                    })
            })
            .transpose()
    }

    /// Option `name` as a duration (`'1s'`, `'250ms'`, `'2 minutes'`), if given.
    pub fn duration(&self, name: &str) -> Result<Option<Duration>, ConnectorError> {
        self.text(name)
            .map(|text| crate::duration::parse_duration(name, text))
            .transpose()
    }

    /// The options whose names start with `prefix`, with the prefix removed.
    pub fn with_prefix(&self, prefix: &str) -> Vec<(String, String)> {
        let mut read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        self.values
            .iter()
            .filter_map(|(k, v)| {
                let rest = k.strip_prefix(prefix)?;
                read.insert(k.clone());
                Some((rest.to_string(), v.clone()))
            })
            .collect()
    }

    /// The text of option `name`, trimmed; an error naming `connector` if it is missing or
    /// empty.
    pub fn required(&self, connector: &str, name: &str) -> Result<&str, ConnectorError> {
        self.text(name)
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .ok_or_else(|| ConnectorError::MissingOption {
                connector: connector.into(),
                option: name.into(),
            })
    }

    /// Fails on the first option no one has read.
    pub fn reject_unknown(&self, connector: &str) -> Result<(), ConnectorError> {
        let read = self.read.lock().unwrap_or_else(|p| p.into_inner());
        match self.values.keys().find(|k| !read.contains(*k)) {
            Some(option) => Err(ConnectorError::UnknownOption {
                connector: connector.to_string(),
                option: option.clone(),
            }),
            None => Ok(()),
        }
    }
}
