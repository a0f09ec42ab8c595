//! An output of the source that reads an upstream table: its declared columns matched to
//! the table's by name, and the rows of `pgoutput` messages and snapshots turned into
//! changes to it.
//!
//! An output with a key gets `Upsert`s and key `Delete`s (a changed key deletes the old
//! one). An output without one gets `Insert`s, and an update or delete becomes a `Delete`
//! of the whole old row (then the `Insert` of the new one): this needs the upstream table
//! to send whole old rows (`REPLICA IDENTITY FULL`).

use arrow::datatypes::SchemaRef;
use serde_json::{Map, Value as Json};
use tokio_postgres::Client;

use super::catalog::{quote_ident, UpstreamTable};
use super::changes::{ChangeList, RowKind};
use super::pgoutput::{Tuple, TupleValue};
use super::value::{self, Value};
use crate::{ConnectorError, SourceOutput};

/// An output reading one upstream table.
#[derive(Debug)]
pub(crate) struct TableOutput {
    /// Its index among the source's outputs.
    pub index: usize,
    /// The upstream table as the output names it (`public.orders`).
    pub reference: String,
    /// The upstream table.
    pub table: UpstreamTable,
    /// Its declared columns.
    pub schema: SchemaRef,
    /// Its key columns, if it has a key.
    key: Option<Vec<usize>>,
    /// For each declared column, its place in the table's tuples as the latest `Relation`
    /// message lists them.
    positions: Vec<Option<usize>>,
}

/// A declared column's value as upstream sent it.
#[derive(Debug, Clone, Copy)]
enum Raw<'a> {
    Null,
    Unchanged,
    Missing,
    Text(&'a str),
}

impl TableOutput {
    /// The output `output` (number `index`), checked against its upstream table.
    pub async fn resolve(
        client: &Client,
        index: usize,
        output: &SourceOutput,
    ) -> Result<Self, ConnectorError> {
        let table = UpstreamTable::describe(client, &output.reference).await?;
        let positions = output
            .schema
            .fields()
            .iter()
            .map(|field| {
                value::check_supported(field.data_type()).map_err(ConnectorError::Schema)?;
                let position = table.columns.iter().position(|c| c.name == *field.name());
                match position {
                    Some(position) => Ok(Some(position)),
                    None => Err(ConnectorError::UpstreamColumnNotFound {
                        table: output.reference.clone(),
                        column: field.name().clone(),
                    }),
                }
            })
            .collect::<Result<_, _>>()?;
        Ok(Self {
            index,
            reference: output.reference.clone(),
            table,
            schema: output.schema.clone(),
            key: output.key.clone(),
            positions,
        })
    }

    /// The query that reads the declared columns of the whole table.
    pub fn select(&self) -> String {
        let columns: Vec<String> = self
            .schema
            .fields()
            .iter()
            .map(|f| quote_ident(f.name()))
            .collect();
        let list = if columns.is_empty() {
            "NULL".to_string()
        } else {
            columns.join(", ")
        };
        format!("SELECT {list} FROM {}", self.table.quoted_name)
    }

    /// Takes note of the table's columns as a `Relation` message lists them.
    pub fn relation_changed(&mut self, columns: &[String]) {
        self.positions = self
            .schema
            .fields()
            .iter()
            .map(|field| columns.iter().position(|c| c == field.name()))
            .collect();
    }

    /// A row of the snapshot (text per declared column).
    pub fn snapshot_row(
        &self,
        texts: &[Option<&str>],
        changes: &mut ChangeList,
    ) -> Result<(), String> {
        let raws: Vec<Raw> = texts
            .iter()
            .map(|text| text.map_or(Raw::Null, Raw::Text))
            .collect();
        let (row, _) = self.convert(&raws, |_| true)?;
        changes.push(self.index, self.new_row_kind(), row, Vec::new());
        Ok(())
    }

    /// An inserted row.
    pub fn insert(&self, new: &Tuple, changes: &mut ChangeList) -> Result<(), String> {
        let (row, unchanged) = self.convert(&self.raws(new), |_| true)?;
        changes.push(self.index, self.new_row_kind(), row, unchanged);
        Ok(())
    }

    /// An updated row; `old` is the old key or row if upstream sent it.
    pub fn update(
        &self,
        old: Option<&Tuple>,
        new: &Tuple,
        changes: &mut ChangeList,
    ) -> Result<(), String> {
        let (row, unchanged) = self.convert(&self.raws(new), |_| true)?;
        match &self.key {
            Some(key) => {
                let old_key = old.map(|old| self.old_key(key, old)).transpose()?;
                let new_key: Vec<&Value> = key.iter().map(|&i| &row[i]).collect();
                let moved = old_key.filter(|old_key| old_key.iter().collect::<Vec<_>>() != new_key);
                if let Some(old_key) = moved {
                    changes.push(
                        self.index,
                        RowKind::Delete,
                        self.key_row(key, old_key),
                        vec![],
                    );
                }
                changes.push(self.index, RowKind::Upsert, row, unchanged);
            }
            None => {
                let old = old.ok_or(
                    "an update to a table read without a key needs REPLICA IDENTITY FULL upstream",
                )?;
                let (old_row, _) = self.convert(&self.raws(old), |_| false)?;
                let mut new_row = row;
                for &i in &unchanged {
                    new_row[i] = old_row[i].clone();
                }
                changes.push(self.index, RowKind::Delete, old_row, vec![]);
                changes.push(self.index, RowKind::Insert, new_row, vec![]);
            }
        }
        Ok(())
    }

    /// A deleted row (its key, or all of it).
    pub fn delete(&self, old: &Tuple, changes: &mut ChangeList) -> Result<(), String> {
        let row = match &self.key {
            Some(key) => {
                let old_key = self.old_key(key, old)?;
                self.key_row(key, old_key)
            }
            None => self.convert(&self.raws(old), |_| false)?.0,
        };
        changes.push(self.index, RowKind::Delete, row, vec![]);
        Ok(())
    }

    /// The declared columns of a snapshot row as JSON text, for a bad record.
    pub fn raw_snapshot_text(&self, texts: &[Option<&str>]) -> String {
        let raws: Vec<Raw> = texts
            .iter()
            .map(|text| text.map_or(Raw::Null, Raw::Text))
            .collect();
        self.raw_text(&raws)
    }

    /// The declared columns of a tuple as JSON text, for a bad record.
    pub fn raw_tuple_text(&self, tuple: &Tuple) -> String {
        self.raw_text(&self.raws(tuple))
    }

    fn raw_text(&self, raws: &[Raw]) -> String {
        let columns: Map<String, Json> = self
            .schema
            .fields()
            .iter()
            .zip(raws)
            .filter_map(|(field, raw)| {
                let value = match raw {
                    Raw::Text(text) => Json::String(text.to_string()),
                    Raw::Null => Json::Null,
                    Raw::Unchanged | Raw::Missing => return None,
                };
                Some((field.name().clone(), value))
            })
            .collect();
        Json::Object(columns).to_string()
    }

    fn new_row_kind(&self) -> RowKind {
        if self.key.is_some() {
            RowKind::Upsert
        } else {
            RowKind::Insert
        }
    }

    /// The values of the declared columns in `tuple`.
    fn raws<'a>(&self, tuple: &'a Tuple) -> Vec<Raw<'a>> {
        self.positions
            .iter()
            .map(|position| match position.and_then(|p| tuple.get(p)) {
                None => Raw::Missing,
                Some(TupleValue::Null) => Raw::Null,
                Some(TupleValue::Unchanged) => Raw::Unchanged,
                Some(TupleValue::Text(text)) => Raw::Text(text),
            })
            .collect()
    }

    /// The key values of an old tuple, all of which must be set.
    fn old_key(&self, key: &[usize], old: &Tuple) -> Result<Vec<Value>, String> {
        let raws = self.raws(old);
        let (row, _) = self.convert(&raws, |i| key.contains(&i))?;
        key.iter()
            .map(|&i| match (&row[i], raws[i]) {
                (_, Raw::Text(_)) => Ok(row[i].clone()),
                _ => Err(format!(
                    "upstream did not send key column \"{}\" of the old row (set its REPLICA \
                     IDENTITY to the declared key, or FULL)",
                    self.schema.field(i).name()
                )),
            })
            .collect()
    }

    /// A row with `values` in the key columns and NULL elsewhere.
    fn key_row(&self, key: &[usize], values: Vec<Value>) -> Vec<Value> {
        let mut row = vec![Value::Null; self.schema.fields().len()];
        for (&i, value) in key.iter().zip(values) {
            row[i] = value;
        }
        row
    }

    /// The declared columns' values; a NULL is an error in a `NOT NULL` column that
    /// `must_be_set`. Also returns the columns that were not sent because they did not
    /// change.
    fn convert(
        &self,
        raws: &[Raw],
        must_be_set: impl Fn(usize) -> bool,
    ) -> Result<(Vec<Value>, Vec<usize>), String> {
        let mut unchanged = Vec::new();
        let row = self
            .schema
            .fields()
            .iter()
            .zip(raws)
            .enumerate()
            .map(|(i, (field, raw))| {
                let name = field.name();
                match raw {
                    Raw::Text(text) => value::parse(text, field.data_type())
                        .map_err(|e| format!("column \"{name}\": {e}")),
                    Raw::Null if field.is_nullable() || !must_be_set(i) => Ok(Value::Null),
                    Raw::Null => Err(format!("column \"{name}\" is NULL but declared NOT NULL")),
                    Raw::Unchanged => {
                        unchanged.push(i);
                        Ok(Value::Null)
                    }
                    Raw::Missing if must_be_set(i) => Err(format!(
                        "column \"{name}\" is no longer in upstream table \"{}\"",
                        self.reference
                    )),
                    Raw::Missing => Ok(Value::Null),
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok((row, unchanged))
    }
}
