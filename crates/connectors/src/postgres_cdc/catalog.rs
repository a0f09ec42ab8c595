//! What the upstream catalog says: the server's settings, a table's columns and key, the
//! publication and the replication slot.

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};
use pgwire_replication::Lsn;
use tokio_postgres::{Client, NoTls};

use super::config::CdcConfig;
use crate::ConnectorError;

/// The precision and scale of a `numeric` declared without them.
const UNCONSTRAINED_NUMERIC: (u8, i8) = (38, 10);

/// Opens an ordinary connection to the upstream, driven by a task on the current runtime.
pub(crate) async fn connect(config: &CdcConfig) -> Result<Client, ConnectorError> {
    let (client, connection) = config.sql().connect(NoTls).await.map_err(|e| {
        ConnectorError::Upstream(format!("cannot connect to {}: {e}", config.address()))
    })?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!("postgres-cdc connection ended: {e}");
        }
    });
    Ok(client)
}

/// An upstream error as a connector error, saying what was being done.
pub(crate) fn upstream(doing: &str) -> impl Fn(tokio_postgres::Error) -> ConnectorError + '_ {
    move |e| {
        let detail = e
            .as_db_error()
            .map_or_else(|| e.to_string(), |db| db.message().to_string());
        ConnectorError::Upstream(format!("{doing}: {detail}"))
    }
}

/// Fails unless the server decodes its WAL logically (`wal_level = logical`).
pub(crate) async fn check_wal_level(client: &Client) -> Result<(), ConnectorError> {
    let row = client
        .query_one("SELECT current_setting('wal_level')", &[])
        .await
        .map_err(upstream("reading wal_level"))?;
    let level: String = row.get(0);
    if level == "logical" {
        Ok(())
    } else {
        Err(ConnectorError::WalLevelNotLogical(level))
    }
}

/// An upstream table.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamTable {
    /// Its oid, which `pgoutput` messages name it by.
    pub oid: u32,
    /// Its schema-qualified name, quoted for SQL.
    pub quoted_name: String,
    /// Its columns in order.
    pub columns: Vec<UpstreamColumn>,
    /// The indexes in `columns` of its primary key, if it has one.
    pub key: Option<Vec<usize>>,
}

/// A column of an upstream table.
#[derive(Debug, Clone)]
pub(crate) struct UpstreamColumn {
    /// Its name.
    pub name: String,
    /// The Arrow type its values are read as by default.
    pub data_type: DataType,
    /// Whether it may be NULL.
    pub nullable: bool,
}

impl UpstreamTable {
    /// The table `reference` (`schema.table`, or a table on the search path) names.
    pub async fn describe(client: &Client, reference: &str) -> Result<Self, ConnectorError> {
        let doing = format!("reading the columns of \"{reference}\"");
        let table = client
            .query_opt(
                "SELECT c.oid, quote_ident(n.nspname) || '.' || quote_ident(c.relname) \
                 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace \
                 WHERE c.oid = to_regclass($1) AND c.relkind IN ('r', 'p')",
                &[&reference],
            )
            .await
            .map_err(upstream(&doing))?
            .ok_or_else(|| ConnectorError::UpstreamTableNotFound(reference.to_string()))?;
        let oid: u32 = table.get(0);
        let columns = client
            .query(
                "SELECT a.attname::text, t.typname::text, a.atttypmod, a.attnotnull, \
                        e.typname::text \
                 FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid \
                 LEFT JOIN pg_type e ON e.oid = t.typelem AND t.typcategory = 'A' \
                 WHERE a.attrelid = $1 AND a.attnum > 0 AND NOT a.attisdropped \
                 ORDER BY a.attnum",
                &[&oid],
            )
            .await
            .map_err(upstream(&doing))?
            .iter()
            .map(|row| {
                let not_null: bool = row.get(3);
                UpstreamColumn {
                    name: row.get(0),
                    data_type: arrow_type(row.get(1), row.get(2), row.get(4)),
                    nullable: !not_null,
                }
            })
            .collect::<Vec<_>>();
        let key_names: Vec<String> = client
            .query(
                "SELECT a.attname::text FROM pg_index i \
                 JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) \
                 WHERE i.indrelid = $1 AND i.indisprimary \
                 ORDER BY array_position(i.indkey::int2[], a.attnum)",
                &[&oid],
            )
            .await
            .map_err(upstream(&doing))?
            .iter()
            .map(|row| row.get(0))
            .collect();
        let key = (!key_names.is_empty()).then(|| {
            key_names
                .iter()
                .filter_map(|name| columns.iter().position(|c| &c.name == name))
                .collect()
        });
        Ok(Self {
            oid,
            quoted_name: table.get(1),
            columns,
            key,
        })
    }

    /// Its columns as an Arrow schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(Schema::new(
            self.columns
                .iter()
                .map(|c| Field::new(&c.name, c.data_type.clone(), c.nullable))
                .collect::<Vec<_>>(),
        ))
    }
}

/// The Arrow type a column of PostgreSQL type `type_name` (with modifier `typmod`; `element`
/// for an array) is read as.
fn arrow_type(type_name: &str, typmod: i32, element: Option<&str>) -> DataType {
    if let Some(element) = element {
        return match arrow_type(element, -1, None) {
            item @ (DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Utf8) => {
                DataType::List(Arc::new(Field::new("item", item, true)))
            }
            _ => DataType::Utf8,
        };
    }
    match type_name {
        "bool" => DataType::Boolean,
        "int2" => DataType::Int16,
        "int4" => DataType::Int32,
        "int8" => DataType::Int64,
        "float4" => DataType::Float32,
        "float8" => DataType::Float64,
        "numeric" => numeric_type(typmod),
        "date" => DataType::Date32,
        "time" => DataType::Time64(TimeUnit::Microsecond),
        "timestamp" => DataType::Timestamp(TimeUnit::Microsecond, None),
        "timestamptz" => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
        "bytea" => DataType::Binary,
        _ => DataType::Utf8,
    }
}

/// `numeric(p, s)` as `Decimal128(p, s)`; one wider than Arrow's 38 digits as text.
fn numeric_type(typmod: i32) -> DataType {
    if typmod < 4 {
        let (precision, scale) = UNCONSTRAINED_NUMERIC;
        return DataType::Decimal128(precision, scale);
    }
    let packed = typmod - 4;
    let precision = (packed >> 16) & 0xffff;
    // The scale is an 11-bit signed number (negative scales exist since PostgreSQL 15).
    let scale = ((packed & 0x7ff) ^ 1024) - 1024;
    match (u8::try_from(precision), i8::try_from(scale)) {
        (Ok(precision @ 1..=38), Ok(scale)) => DataType::Decimal128(precision, scale),
        _ => DataType::Utf8,
    }
}

/// Makes `publication` publish `tables` (quoted names): creates it for them if it does not
/// exist, or adds those it lacks.
pub(crate) async fn ensure_publication(
    client: &Client,
    publication: &str,
    tables: &[String],
) -> Result<(), ConnectorError> {
    let doing = format!("setting up publication \"{publication}\"");
    let existing = client
        .query_opt(
            "SELECT puballtables FROM pg_publication WHERE pubname = $1",
            &[&publication],
        )
        .await
        .map_err(upstream(&doing))?;
    let quoted = quote_ident(publication);
    let statement = match existing {
        None if tables.is_empty() => format!("CREATE PUBLICATION {quoted}"),
        None => format!(
            "CREATE PUBLICATION {quoted} FOR TABLE {}",
            tables.join(", ")
        ),
        Some(row) if row.get::<_, bool>(0) => return Ok(()),
        Some(_) => {
            let published: Vec<String> = client
                .query(
                    "SELECT quote_ident(schemaname) || '.' || quote_ident(tablename) \
                     FROM pg_publication_tables WHERE pubname = $1",
                    &[&publication],
                )
                .await
                .map_err(upstream(&doing))?
                .iter()
                .map(|row| row.get(0))
                .collect();
            let mut missing: Vec<&str> = tables
                .iter()
                .filter(|t| !published.contains(t))
                .map(String::as_str)
                .collect();
            missing.dedup();
            if missing.is_empty() {
                return Ok(());
            }
            format!(
                "ALTER PUBLICATION {quoted} ADD TABLE {}",
                missing.join(", ")
            )
        }
    };
    client
        .batch_execute(&statement)
        .await
        .map_err(upstream(&doing))
}

/// A replication slot as `pg_replication_slots` shows it.
#[derive(Debug, Clone)]
pub(crate) struct SlotState {
    /// The output plugin (`pgoutput` for ours).
    pub plugin: Option<String>,
    /// The database it decodes.
    pub database: Option<String>,
    /// Everything before this LSN has been acknowledged and may be gone.
    pub confirmed_flush: Lsn,
}

/// The state of slot `slot`, if it exists.
pub(crate) async fn slot_state(
    client: &Client,
    slot: &str,
) -> Result<Option<SlotState>, ConnectorError> {
    let row = client
        .query_opt(
            "SELECT plugin::text, database::text, confirmed_flush_lsn::text \
             FROM pg_replication_slots WHERE slot_name = $1",
            &[&slot],
        )
        .await
        .map_err(upstream("reading the replication slot"))?;
    Ok(row.map(|row| SlotState {
        plugin: row.get(0),
        database: row.get(1),
        confirmed_flush: row
            .get::<_, Option<String>>(2)
            .and_then(|lsn| Lsn::parse(&lsn).ok())
            .unwrap_or(Lsn::ZERO),
    }))
}

/// Drops slot `slot` if it exists.
pub(crate) async fn drop_slot(client: &Client, slot: &str) -> Result<(), ConnectorError> {
    client
        .execute(
            "SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots \
             WHERE slot_name = $1",
            &[&slot],
        )
        .await
        .map_err(upstream(&format!("dropping replication slot \"{slot}\"")))?;
    Ok(())
}

/// `name` quoted as an SQL identifier.
pub(crate) fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn maps_upstream_types_to_arrow() {
        assert_eq!(arrow_type("int4", -1, None), DataType::Int32);
        assert_eq!(arrow_type("jsonb", -1, None), DataType::Utf8);
        // numeric(12,2): typmod = (12 << 16 | 2) + 4.
        assert_eq!(
            arrow_type("numeric", (12 << 16 | 2) + 4, None),
            DataType::Decimal128(12, 2)
        );
        assert_eq!(
            arrow_type("numeric", -1, None),
            DataType::Decimal128(38, 10)
        );
        assert_eq!(arrow_type("numeric", (60 << 16) + 4, None), DataType::Utf8);
        assert_eq!(
            arrow_type("_int4", -1, Some("int4")),
            DataType::List(Arc::new(Field::new("item", DataType::Int32, true)))
        );
        assert_eq!(arrow_type("_bool", -1, Some("bool")), DataType::Utf8);
        assert_eq!(
            arrow_type("timestamptz", -1, None),
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into()))
        );
    }

    #[test]
    fn reads_negative_numeric_scales() {
        // numeric(5,-2): the scale's 11 bits hold -2.
        assert_eq!(
            numeric_type((5 << 16 | (-2i32 & 0x7ff)) + 4),
            DataType::Decimal128(5, -2)
        );
    }

    #[test]
    fn quotes_identifiers() {
        assert_eq!(quote_ident("fluxion_pub"), "\"fluxion_pub\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
