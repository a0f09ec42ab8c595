//! SHOW, SET and EXPLAIN: statements that describe the system rather than change data.

use std::sync::Arc;

use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use datafusion::sql::sqlparser::ast::{Expr, ObjectName, Set, Statement, Value, ValueWithSpan};
use storage::ItemKind;

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::naming::name_result_columns;
use crate::response::ExecuteResponse;
use crate::session::Session;

/// A response of text columns.
pub(crate) fn text_rows(columns: &[&str], rows: Vec<Vec<String>>) -> ExecuteResponse {
    let schema = Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ));
    let arrays = (0..columns.len())
        .map(|c| {
            Arc::new(
                rows.iter()
                    .map(|r| Some(r[c].as_str()))
                    .collect::<StringArray>(),
            ) as _
        })
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), arrays)
        .expect("invariant: text columns match their schema");
    ExecuteResponse::Rows {
        schema,
        batches: vec![batch],
    }
}

impl Coordinator {
    pub(crate) async fn show_or_set(
        &self,
        session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        match statement {
            Statement::Set(set) => self.set(session, set),
            Statement::ShowVariable { variable } => {
                let name = variable
                    .iter()
                    .map(|i| i.value.to_lowercase())
                    .collect::<Vec<_>>()
                    .join(" ");
                self.show(session, &name)
            }
            Statement::ShowTables { .. } => Ok(self.list(ItemKind::Table)),
            Statement::ShowViews { materialized, .. } => Ok(self.list(if materialized {
                ItemKind::MaterializedView
            } else {
                ItemKind::View
            })),
            Statement::ShowCreate { obj_name, .. } => self.show_create(session, &obj_name, None),
            Statement::Discard { .. } => Ok(ExecuteResponse::command("DISCARD ALL")),
            other => Err(CoordError::Unsupported(format!(
                "statement {}",
                other
                    .to_string()
                    .split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
            ))),
        }
    }

    /// `SHOW CREATE … name`: the item's name and the SQL that created it (which must be of
    /// `kind`, if given).
    pub(crate) fn show_create(
        &self,
        session: &Session,
        name: &ObjectName,
        kind: Option<ItemKind>,
    ) -> Result<ExecuteResponse, CoordError> {
        let item = self.resolve_item(session, name)?;
        if let Some(kind) = kind.filter(|k| *k != item.kind) {
            return Err(CoordError::WrongObjectType {
                name: item.name.clone(),
                expected: match kind {
                    ItemKind::Source => "a source",
                    _ => "an object of that kind",
                },
                hint: None,
            });
        }
        Ok(text_rows(
            &["name", "create_sql"],
            vec![vec![item.name.clone(), item.create_sql.clone()]],
        ))
    }

    fn set(&self, session: &mut Session, set: Set) -> Result<ExecuteResponse, CoordError> {
        match set {
            Set::SingleAssignment {
                variable, values, ..
            } => {
                let name = variable.to_string().to_lowercase();
                let value = values
                    .iter()
                    .map(setting_text)
                    .collect::<Vec<_>>()
                    .join(", ");
                self.set_variable(session, &name, value)
            }
            Set::SetTimeZone { value, .. } => {
                self.set_variable(session, "timezone", setting_text(&value))
            }
            Set::SetTransaction { .. } | Set::SetSessionParam(_) => {
                Ok(ExecuteResponse::command("SET"))
            }
            Set::SetNames { charset_name, .. } => {
                self.set_variable(session, "client_encoding", charset_name.to_string())
            }
            other => Err(CoordError::Unsupported(format!("{other}"))),
        }
    }

    fn set_variable(
        &self,
        session: &mut Session,
        name: &str,
        value: String,
    ) -> Result<ExecuteResponse, CoordError> {
        let name = match name {
            "time zone" => "timezone",
            other => other,
        };
        let value = if value.eq_ignore_ascii_case("default") {
            crate::session::DEFAULT_SETTINGS
                .iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| v.to_string())
                .unwrap_or_default()
        } else {
            value
        };
        session.set_variable(name, value);
        Ok(ExecuteResponse::command("SET"))
    }

    fn show(&self, session: &Session, name: &str) -> Result<ExecuteResponse, CoordError> {
        match name {
            "tables" => Ok(self.list(ItemKind::Table)),
            "views" => Ok(self.list(ItemKind::View)),
            "materialized views" => Ok(self.list(ItemKind::MaterializedView)),
            "indexes" => Ok(self.list(ItemKind::Index)),
            "sources" => Ok(self.list(ItemKind::Source)),
            "sinks" => Ok(self.list(ItemKind::Sink)),
            "subscriptions" => Ok(self.list(ItemKind::Subscription)),
            "all" => Ok(text_rows(
                &["name", "setting"],
                session
                    .variables
                    .iter()
                    .map(|(k, v)| vec![k.clone(), v.clone()])
                    .collect(),
            )),
            "transaction isolation level" => Ok(text_rows(
                &["transaction_isolation"],
                vec![vec![session
                    .variable("transaction_isolation")
                    .unwrap_or_default()
                    .to_string()]],
            )),
            other => match session.variable(other) {
                Some(value) => Ok(text_rows(&[other], vec![vec![value.to_string()]])),
                None => Err(CoordError::UnknownObject {
                    kind: "configuration parameter",
                    name: other.to_string(),
                }),
            },
        }
    }

    /// The names of the items of one kind.
    fn list(&self, kind: ItemKind) -> ExecuteResponse {
        let catalog = self.catalog.read().unwrap_or_else(|p| p.into_inner());
        let mut names: Vec<Vec<String>> = catalog
            .items()
            .filter(|i| i.kind == kind)
            .map(|i| vec![i.name.clone()])
            .collect();
        names.sort();
        text_rows(&["name"], names)
    }

    pub(crate) async fn explain(
        &self,
        _session: &mut Session,
        statement: Statement,
    ) -> Result<ExecuteResponse, CoordError> {
        let plan = match statement {
            Statement::Query(mut query) => {
                name_result_columns(&mut query);
                let logical = self
                    .plan_statement(&self.base_state, Statement::Query(query))
                    .await?;
                sql::lower(&self.base_state, &logical)?
            }
            Statement::CreateView(create) => {
                let planned = self.plan_view(&create).await?;
                self.lower_view(&planned)?
            }
            other => {
                return Err(CoordError::Unsupported(format!(
                    "EXPLAIN of {}",
                    other
                        .to_string()
                        .split_whitespace()
                        .next()
                        .unwrap_or_default()
                )))
            }
        };
        let text = plan::explain(&plan);
        Ok(text_rows(
            &["QUERY PLAN"],
            text.lines().map(|l| vec![l.to_string()]).collect(),
        ))
    }
}

/// A SET value as text: strings without quotes, identifiers and numbers as written.
fn setting_text(expr: &Expr) -> String {
    match expr {
        Expr::Value(ValueWithSpan {
            value: Value::SingleQuotedString(s) | Value::DoubleQuotedString(s),
            ..
        }) => s.clone(),
        Expr::Identifier(ident) => ident.value.clone(),
        other => other.to_string(),
    }
}
