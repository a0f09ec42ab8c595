//! The `postgres` sink: a relation kept, row for row, in a table of another PostgreSQL.
//!
//! Each delivery is one upstream transaction: the rows of the keys that changed are upserted
//! (`INSERT … ON CONFLICT (key) DO UPDATE`), the keys that went away deleted, and the last
//! time delivered is written to a progress table (`fluxion_sink_progress`, one row per sink)
//! in the same transaction. After a restart delivery resumes after that time: the target is
//! never ahead of or behind its progress row.

use std::collections::BTreeMap;
use std::time::Duration;

use arrow::array::{Array, RecordBatch};
use arrow::datatypes::DataType;
use arrow::util::display::{ArrayFormatter, FormatOptions};
use repr::{ChangeBatch, Timestamp};
use tokio_postgres::{Client, NoTls};

use super::encode::changes_by_key;
use super::SinkSpec;
use crate::{ConnectorError, SourceOptions};

/// The connector's name in `connector = '…'`.
pub(crate) const CONNECTOR: &str = "postgres";

/// The progress table's default name.
const PROGRESS_TABLE: &str = "fluxion_sink_progress";

/// Where the target table is.
#[derive(Debug, Clone)]
pub(crate) struct PostgresSinkConfig {
    connection: tokio_postgres::Config,
    /// For messages: `host:port/database`.
    address: String,
    /// The target table's schema (`public` unless `table` names one).
    schema: String,
    /// The target table.
    table: String,
    /// The progress table, in the target's schema.
    progress_table: String,
}

impl PostgresSinkConfig {
    /// Reads the options of a `postgres` sink: `hostname`, `port`, `username`, `password`,
    /// `database.name` (required), `table` (required, `[schema.]table`),
    /// `progress.table`; the sink needs key columns.
    pub fn from_options(spec: &SinkSpec, options: &SourceOptions) -> Result<Self, ConnectorError> {
        let database = options.required(CONNECTOR, "database.name")?.to_string();
        let table = options.required(CONNECTOR, "table")?;
        let (schema, table) = match table.split_once('.') {
            Some((schema, table)) => (schema.to_string(), table.to_string()),
            None => ("public".to_string(), table.to_string()),
        };
        if options.text("key").is_none() || spec.key.is_empty() {
            return Err(ConnectorError::MissingOption {
                connector: CONNECTOR.into(),
                option: "key".into(),
            });
        }
        let host = options.text("hostname").unwrap_or("127.0.0.1").to_string();
        let port: u16 = options.parsed("port")?.unwrap_or(5432);
        let mut connection = tokio_postgres::Config::new();
        connection
            .host(&host)
            .port(port)
            .user(options.text("username").unwrap_or("postgres"))
            .password(options.text("password").unwrap_or(""))
            .dbname(&database)
            .options("-c TimeZone=UTC -c DateStyle=ISO -c IntervalStyle=postgres")
            .application_name("fluxion-sink")
            .connect_timeout(Duration::from_secs(10));
        let progress_table = options
            .text("progress.table")
            .unwrap_or(PROGRESS_TABLE)
            .to_string();
        let _ = options.connector();
        options.reject_unknown(CONNECTOR)?;
        Ok(Self {
            connection,
            address: format!("PostgreSQL at {host}:{port}/{database}"),
            schema,
            table,
            progress_table,
        })
    }
}

/// An open `postgres` sink.
#[derive(Debug)]
pub struct PostgresSink {
    spec: SinkSpec,
    config: PostgresSinkConfig,
    client: Client,
    /// The target's type of each of the relation's columns.
    column_types: Vec<String>,
    delivered: Option<Timestamp>,
}

impl PostgresSink {
    /// Connects, and creates the target and progress tables if they do not exist.
    pub(crate) async fn open(
        spec: SinkSpec,
        config: PostgresSinkConfig,
    ) -> Result<Self, ConnectorError> {
        let (client, connection) = config
            .connection
            .connect(NoTls)
            .await
            .map_err(|e| upstream(&config, "connect to", &e))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::warn!(error = %e, "a postgres sink's connection ended");
            }
        });
        let mut sink = Self {
            spec,
            config,
            client,
            column_types: Vec::new(),
            delivered: None,
        };
        sink.create_tables().await?;
        sink.column_types = sink.target_column_types().await?;
        Ok(sink)
    }

    /// The last time written to the progress table.
    pub async fn resume(&mut self) -> Result<Option<Timestamp>, ConnectorError> {
        let sql = format!(
            "SELECT last_timestamp FROM {} WHERE sink = $1",
            self.progress_table()
        );
        let row = self
            .client
            .query_opt(&sql, &[&self.spec.identity])
            .await
            .map_err(|e| upstream(&self.config, "read the progress of", &e))?;
        self.delivered = row.map(|row| row.get::<_, i64>(0) as Timestamp);
        Ok(self.delivered)
    }

    /// The last time written to the progress table.
    pub fn delivered_through(&self) -> Option<Timestamp> {
        self.delivered
    }

    /// Applies the times' changes and their progress in one transaction.
    pub async fn deliver(&mut self, batches: &[ChangeBatch]) -> Result<(), ConnectorError> {
        let batches: Vec<&ChangeBatch> = batches
            .iter()
            .filter(|b| self.delivered.is_none_or(|done| b.time > done))
            .collect();
        let Some(last) = batches.last().map(|b| b.time) else {
            return Ok(());
        };
        let (upserts, deletes) = self.final_rows(&batches)?;
        let delete = (!deletes.is_empty()).then(|| self.delete_statement(&deletes));
        let upsert = (!upserts.is_empty()).then(|| self.upsert_statement(&upserts));
        let progress = format!(
            "INSERT INTO {} (sink, last_timestamp) VALUES ($1, $2) \
             ON CONFLICT (sink) DO UPDATE SET last_timestamp = EXCLUDED.last_timestamp, \
             updated_at = now()",
            self.progress_table()
        );
        let transaction = self
            .client
            .transaction()
            .await
            .map_err(|e| upstream(&self.config, "begin a transaction in", &e))?;
        let config = &self.config;
        if let Some((sql, params)) = delete {
            transaction
                .execute(&sql, &params_refs(&params))
                .await
                .map_err(|e| upstream(config, "delete from", &e))?;
        }
        if let Some((sql, params)) = upsert {
            transaction
                .execute(&sql, &params_refs(&params))
                .await
                .map_err(|e| upstream(config, "upsert into", &e))?;
        }
        let last_signed = i64::try_from(last)
            .map_err(|_| ConnectorError::Upstream(format!("time {last} is out of range")))?;
        transaction
            .execute(&progress, &[&self.spec.identity, &last_signed])
            .await
            .map_err(|e| upstream(config, "record progress in", &e))?;
        transaction
            .commit()
            .await
            .map_err(|e| upstream(config, "commit to", &e))?;
        self.delivered = Some(last);
        Ok(())
    }

    /// What the batches leave of each key that changed: rows to upsert and keys to delete,
    /// as text (`None` is NULL), one row per key.
    fn final_rows(&self, batches: &[&ChangeBatch]) -> Result<(TextRows, TextRows), ConnectorError> {
        let mut last: BTreeMap<Vec<u8>, (usize, usize, bool)> = BTreeMap::new();
        for (b, batch) in batches.iter().enumerate() {
            for (key, change) in changes_by_key(&self.spec, batch)? {
                let entry = match (change.after, change.before) {
                    (Some(row), _) => (b, row, true),
                    (None, Some(row)) => (b, row, false),
                    (None, None) => continue,
                };
                last.insert(key, entry);
            }
        }
        let texts: Vec<Vec<Vec<Option<String>>>> = batches
            .iter()
            .map(|batch| text_columns(&batch.rows))
            .collect::<Result<_, _>>()?;
        let mut upserts = TextRows::new(self.spec.schema.fields().len());
        let mut deletes = TextRows::new(self.spec.key.len());
        for (b, row, present) in last.into_values() {
            if present {
                upserts.push(texts[b].iter().map(|column| column[row].clone()));
            } else {
                deletes.push(self.spec.key.iter().map(|&c| texts[b][c][row].clone()));
            }
        }
        Ok((upserts, deletes))
    }

    fn upsert_statement(&self, rows: &TextRows) -> (String, Vec<Vec<Option<String>>>) {
        let names: Vec<String> = self.column_names();
        let aliases: Vec<String> = (0..names.len()).map(|i| format!("c{i}")).collect();
        let casts: Vec<String> = aliases
            .iter()
            .zip(&self.column_types)
            .map(|(alias, ty)| format!("u.{alias}::{ty}"))
            .collect();
        let arrays: Vec<String> = (1..=names.len()).map(|i| format!("${i}::text[]")).collect();
        let keys: Vec<String> = self.spec.key.iter().map(|&c| names[c].clone()).collect();
        let updates: Vec<String> = names
            .iter()
            .enumerate()
            .filter(|(c, _)| !self.spec.key.contains(c))
            .map(|(_, name)| format!("{name} = EXCLUDED.{name}"))
            .collect();
        let on_conflict = if updates.is_empty() {
            "DO NOTHING".to_string()
        } else {
            format!("DO UPDATE SET {}", updates.join(", "))
        };
        let sql = format!(
            "INSERT INTO {} ({}) SELECT {} FROM unnest({}) AS u({}) ON CONFLICT ({}) {on_conflict}",
            self.target_table(),
            names.join(", "),
            casts.join(", "),
            arrays.join(", "),
            aliases.join(", "),
            keys.join(", "),
        );
        (sql, rows.columns.clone())
    }

    fn delete_statement(&self, keys: &TextRows) -> (String, Vec<Vec<Option<String>>>) {
        let names = self.column_names();
        let mut conditions = Vec::new();
        let mut aliases = Vec::new();
        let mut arrays = Vec::new();
        for (i, &c) in self.spec.key.iter().enumerate() {
            conditions.push(format!("t.{} = u.k{i}::{}", names[c], self.column_types[c]));
            aliases.push(format!("k{i}"));
            arrays.push(format!("${}::text[]", i + 1));
        }
        let sql = format!(
            "DELETE FROM {} AS t USING unnest({}) AS u({}) WHERE {}",
            self.target_table(),
            arrays.join(", "),
            aliases.join(", "),
            conditions.join(" AND ")
        );
        (sql, keys.columns.clone())
    }

    /// Creates the target table (the relation's columns, its key as primary key) and the
    /// progress table, if they do not exist.
    async fn create_tables(&self) -> Result<(), ConnectorError> {
        let names = self.column_names();
        let columns: Vec<String> = self
            .spec
            .schema
            .fields()
            .iter()
            .zip(&names)
            .map(|(field, name)| Ok(format!("{name} {}", postgres_type(field.data_type())?)))
            .collect::<Result<_, ConnectorError>>()?;
        let keys: Vec<String> = self.spec.key.iter().map(|&c| names[c].clone()).collect();
        let sql = format!(
            "CREATE TABLE IF NOT EXISTS {} ({}, PRIMARY KEY ({}));
             CREATE TABLE IF NOT EXISTS {} (sink text PRIMARY KEY, last_timestamp bigint NOT NULL,
                 updated_at timestamptz NOT NULL DEFAULT now());",
            self.target_table(),
            columns.join(", "),
            keys.join(", "),
            self.progress_table()
        );
        self.client
            .batch_execute(&sql)
            .await
            .map_err(|e| upstream(&self.config, "create the target tables in", &e))
    }

    /// The target's type of each of the relation's columns, as SQL.
    async fn target_column_types(&self) -> Result<Vec<String>, ConnectorError> {
        let rows = self
            .client
            .query(
                "SELECT attname::text, format_type(atttypid, atttypmod) FROM pg_attribute \
                 WHERE attrelid = $1::text::regclass AND attnum > 0 AND NOT attisdropped",
                &[&self.target_table()],
            )
            .await
            .map_err(|e| upstream(&self.config, "read the target table's columns in", &e))?;
        let types: BTreeMap<String, String> = rows
            .iter()
            .map(|row| (row.get::<_, String>(0), row.get::<_, String>(1)))
            .collect();
        self.spec
            .schema
            .fields()
            .iter()
            .map(|field| {
                types.get(field.name()).cloned().ok_or_else(|| {
                    ConnectorError::Schema(format!(
                        "the target table {} has no column \"{}\"",
                        self.target_table(),
                        field.name()
                    ))
                })
            })
            .collect()
    }

    fn column_names(&self) -> Vec<String> {
        self.spec
            .schema
            .fields()
            .iter()
            .map(|f| quote_identifier(f.name()))
            .collect()
    }

    fn target_table(&self) -> String {
        format!(
            "{}.{}",
            quote_identifier(&self.config.schema),
            quote_identifier(&self.config.table)
        )
    }

    fn progress_table(&self) -> String {
        format!(
            "{}.{}",
            quote_identifier(&self.config.schema),
            quote_identifier(&self.config.progress_table)
        )
    }
}

/// Rows of text values, stored by column (each column is one `text[]` parameter).
#[derive(Debug)]
struct TextRows {
    columns: Vec<Vec<Option<String>>>,
}

impl TextRows {
    fn new(width: usize) -> Self {
        Self {
            columns: vec![Vec::new(); width],
        }
    }

    fn push(&mut self, row: impl Iterator<Item = Option<String>>) {
        for (column, value) in self.columns.iter_mut().zip(row) {
            column.push(value);
        }
    }

    fn is_empty(&self) -> bool {
        self.columns.first().is_none_or(Vec::is_empty)
    }
}

fn params_refs(params: &[Vec<Option<String>>]) -> Vec<&(dyn tokio_postgres::types::ToSql + Sync)> {
    params
        .iter()
        .map(|p| p as &(dyn tokio_postgres::types::ToSql + Sync))
        .collect()
}

/// Each column of `rows` as PostgreSQL input text.
fn text_columns(rows: &RecordBatch) -> Result<Vec<Vec<Option<String>>>, ConnectorError> {
    let options = FormatOptions::default();
    rows.columns()
        .iter()
        .map(|column| {
            let formatter = ArrayFormatter::try_new(column.as_ref(), &options)?;
            Ok((0..column.len())
                .map(|i| (!column.is_null(i)).then(|| formatter.value(i).to_string()))
                .collect())
        })
        .collect()
}

/// The PostgreSQL type a column of `data_type` is created with.
fn postgres_type(data_type: &DataType) -> Result<&'static str, ConnectorError> {
    Ok(match data_type {
        DataType::Boolean => "boolean",
        DataType::Int8 | DataType::Int16 | DataType::UInt8 => "smallint",
        DataType::Int32 | DataType::UInt16 => "integer",
        DataType::Int64 | DataType::UInt32 => "bigint",
        DataType::UInt64 | DataType::Decimal128(..) | DataType::Decimal256(..) => "numeric",
        DataType::Float16 | DataType::Float32 => "real",
        DataType::Float64 => "double precision",
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => "text",
        DataType::Date32 | DataType::Date64 => "date",
        DataType::Time32(_) | DataType::Time64(_) => "time",
        DataType::Timestamp(_, None) => "timestamp",
        DataType::Timestamp(_, Some(_)) => "timestamptz",
        DataType::Interval(_) => "interval",
        other => {
            return Err(ConnectorError::Schema(format!(
                "a postgres sink cannot write a column of type {other}"
            )))
        }
    })
}

/// `name` as a quoted SQL identifier.
fn quote_identifier(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

fn upstream(
    config: &PostgresSinkConfig,
    what: &str,
    error: &tokio_postgres::Error,
) -> ConnectorError {
    let detail = error
        .as_db_error()
        .map(|db| db.message().to_string())
        .unwrap_or_else(|| error.to_string());
    ConnectorError::Upstream(format!("cannot {what} {}: {detail}", config.address))
}
