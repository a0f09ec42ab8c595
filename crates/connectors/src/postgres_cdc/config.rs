//! The options of a `postgres-cdc` source, and the connections they describe.

use std::time::Duration;

use pgwire_replication::{Lsn, ReplicationConfig};

use crate::{ConnectorError, SourceOptions};

/// The connector's name, as in `connector = 'postgres-cdc'`.
pub(crate) const CONNECTOR: &str = "postgres-cdc";

/// Settings of every upstream session, so that values arrive in the text forms
/// [`super::value`] reads.
const SESSION_OPTIONS: &str = "-c TimeZone=UTC -c DateStyle=ISO -c bytea_output=hex";

/// How often the replication session reports the acknowledged LSN.
const STATUS_INTERVAL: Duration = Duration::from_secs(1);

/// Where the upstream database is and which publication and slot to read.
#[derive(Debug, Clone)]
pub(crate) struct CdcConfig {
    /// `hostname` (default `127.0.0.1`).
    pub host: String,
    /// `port` (default 5432).
    pub port: u16,
    /// `username` (default `postgres`).
    pub user: String,
    /// `password` (default empty).
    pub password: String,
    /// `database.name` (required).
    pub database: String,
    /// `publication.name` (default `fluxion_publication`).
    pub publication: String,
    /// `slot.name` (default `fluxion_slot`).
    pub slot: String,
}

impl CdcConfig {
    /// Reads the connection options; `database.name` is required.
    pub fn from_options(options: &SourceOptions) -> Result<Self, ConnectorError> {
        let text = |name: &str, default: &str| options.text(name).unwrap_or(default).to_string();
        let database =
            options
                .text("database.name")
                .ok_or_else(|| ConnectorError::MissingOption {
                    connector: CONNECTOR.into(),
                    option: "database.name".into(),
                })?;
        let slot = text("slot.name", "fluxion_slot");
        if slot.is_empty()
            || slot.len() > 63
            || !slot
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
        {
            return Err(ConnectorError::InvalidOption {
                option: "slot.name".into(),
                reason: format!(
                    "\"{slot}\": a slot name is 1 to 63 lower-case letters, digits and underscores"
                ),
            });
        }
        Ok(Self {
            host: text("hostname", "127.0.0.1"),
            port: options.parsed("port")?.unwrap_or(5432),
            user: text("username", "postgres"),
            password: text("password", ""),
            database: database.to_string(),
            publication: text("publication.name", "fluxion_publication"),
            slot,
        })
    }

    /// The settings of an ordinary (SQL) connection.
    pub fn sql(&self) -> tokio_postgres::Config {
        let mut config = tokio_postgres::Config::new();
        config
            .host(&self.host)
            .port(self.port)
            .user(&self.user)
            .password(&self.password)
            .dbname(&self.database)
            .options(SESSION_OPTIONS)
            .application_name("fluxion")
            .connect_timeout(Duration::from_secs(10));
        config
    }

    /// The settings of a replication session on `slot`, streaming from `start` and
    /// acknowledging `acknowledged` until told more is durable.
    pub fn replication(&self, slot: &str, start: Lsn, acknowledged: Lsn) -> ReplicationConfig {
        ReplicationConfig::new(
            self.host.as_str(),
            self.user.as_str(),
            self.password.as_str(),
            self.database.as_str(),
            slot,
            self.publication.as_str(),
        )
        .with_port(self.port)
        .with_start_lsn(start)
        .with_ack_lsn(acknowledged)
        .with_status_interval(STATUS_INTERVAL)
        .with_wakeup_interval(STATUS_INTERVAL)
        .with_options(SESSION_OPTIONS)
        .with_application_name("fluxion")
    }

    /// Where the upstream is, for error messages.
    pub fn address(&self) -> String {
        format!(
            "PostgreSQL at {}:{} (database \"{}\")",
            self.host, self.port, self.database
        )
    }
}
