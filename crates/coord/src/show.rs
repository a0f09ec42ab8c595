//! SHOW, SET and EXPLAIN: statements that describe the system rather than change data.

use std::sync::Arc;

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::array::{RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema};
use repr::ItemKind;
use sql::{Explain, ObjectRef, Set, Show};

use crate::coordinator::Coordinator;
use crate::ddl::item_kind;
use crate::error::CoordError;
use crate::postgres_settings::{is_known_setting, unchangeable};
use crate::query_rows::QueryRows;
use crate::response::ExecuteResponse;
use crate::session::{
    reported_spelling, Session, Transaction, DEFAULT_TRANSACTION_ISOLATION, ISOLATION_LEVELS,
    TRANSACTION_ISOLATION,
};
use crate::timeouts::{self, TIMEOUT_SETTINGS};

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
        rows: QueryRows::computed(vec![batch]),
    }
}

impl Coordinator {
    /// `SHOW`.
    pub(crate) fn show(
        &self,
        session: &Session,
        show: Show,
    ) -> Result<ExecuteResponse, CoordError> {
        match show {
            Show::Variable(name) => self.show_variable(session, &name),
            Show::Objects(kind) => Ok(self.list(item_kind(kind))),
            Show::Create { name, kind } => self.show_create(session, &name, kind.map(item_kind)),
        }
    }

    /// `SHOW CREATE … name`: the item's name and the SQL that created it (which must be of
    /// `kind`, if given).
    pub(crate) fn show_create(
        &self,
        session: &Session,
        name: &ObjectRef,
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

    /// `SET`: a setting's new value (`DEFAULT`: its default). The setting must be one
    /// PostgreSQL has, or a custom `prefix.name`.
    pub(crate) fn set(
        &self,
        session: &mut Session,
        set: Set,
    ) -> Result<ExecuteResponse, CoordError> {
        match set {
            Set::Reset { name } => {
                let reset = Set::Variable {
                    name,
                    value: "DEFAULT".into(),
                };
                return self
                    .set(session, reset)
                    .map(|_| ExecuteResponse::command("RESET"));
            }
            Set::Variable { name, value } => {
                if !is_known_setting(&name) {
                    return Err(CoordError::unknown("configuration parameter", name));
                }
                if name == sql::ROLE {
                    self.set_role(session, &value)?;
                    return Ok(ExecuteResponse::command("SET"));
                }
                if let Some(reason) = unchangeable(&name) {
                    return Err(CoordError::CannotChangeSetting(reason));
                }
                let value = if value.eq_ignore_ascii_case("default") {
                    crate::session::DEFAULT_SETTINGS
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, v)| v.to_string())
                        .unwrap_or_default()
                } else {
                    value
                };
                match name.as_str() {
                    TRANSACTION_ISOLATION => {
                        set_isolation(session, isolation_level(&name, &value)?, false)
                    }
                    DEFAULT_TRANSACTION_ISOLATION => {
                        set_isolation(session, isolation_level(&name, &value)?, true)
                    }
                    timeout if TIMEOUT_SETTINGS.contains(&timeout) => {
                        let limit = timeouts::parse(&value).ok_or_else(|| {
                            CoordError::InvalidParameterValue {
                                name: name.clone(),
                                value: value.clone(),
                            }
                        })?;
                        session.set_variable(timeout, timeouts::display(limit))
                    }
                    "timezone" => {
                        let zone =
                            time_zone(&value).ok_or_else(|| CoordError::InvalidParameterValue {
                                name: "TimeZone".into(),
                                value: value.clone(),
                            })?;
                        session.set_variable("timezone", zone)
                    }
                    _ => session.set_variable(&name, value),
                }
            }
            Set::TransactionIsolation {
                level,
                session: all,
            } => set_isolation(session, level, all),
            Set::Ignored => {}
        }
        Ok(ExecuteResponse::command("SET"))
    }

    fn show_variable(&self, session: &Session, name: &str) -> Result<ExecuteResponse, CoordError> {
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
            "transaction isolation level" => self.show_variable(session, TRANSACTION_ISOLATION),
            sql::ROLE => Ok(text_rows(
                &[sql::ROLE],
                vec![vec![session.role().unwrap_or(sql::NO_ROLE).to_string()]],
            )),
            "session_authorization" => Ok(text_rows(
                &["session_authorization"],
                vec![vec![session.user().to_string()]],
            )),
            other => match session.variable(other) {
                Some(value) => Ok(text_rows(
                    &[reported_spelling(other).unwrap_or(other)],
                    vec![vec![value.to_string()]],
                )),
                None => Err(CoordError::unknown("configuration parameter", other)),
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

    /// `EXPLAIN`: the dataflow plan a query or view would run, one operator per line.
    pub(crate) async fn explain(
        &self,
        session: &mut Session,
        explain: Explain,
    ) -> Result<ExecuteResponse, CoordError> {
        let search_path = session.search_path();
        let ctx = self.plan_context(&search_path);
        let plan = match explain {
            Explain::Query(query) => {
                let logical = query.plan(&ctx).await?;
                sql::lower(&self.base_state, &logical)?
            }
            Explain::View(mut create) => {
                create.prepare(&ctx)?;
                let planned = self.plan_view(&create).await?;
                if create.materialized {
                    self.lower_materialized_view(&create, &planned)?
                } else {
                    self.lower_view(&planned)?
                }
            }
        };
        let text = plan::explain(&plan);
        Ok(text_rows(
            &["QUERY PLAN"],
            text.lines().map(|l| vec![l.to_string()]).collect(),
        ))
    }
}

/// Sets the isolation level of the session's transactions (`all`) or of the open block. As
/// in PostgreSQL, the block's level outside a block is only a warning; every level runs
/// serializable, which each of them allows.
fn set_isolation(session: &mut Session, level: String, all: bool) {
    let in_block = !matches!(session.transaction, Transaction::Idle);
    if all {
        session.set_variable(DEFAULT_TRANSACTION_ISOLATION, level.clone());
        if !in_block {
            session.set_variable(TRANSACTION_ISOLATION, level);
        }
    } else if in_block {
        session.set_variable(TRANSACTION_ISOLATION, level);
    } else {
        session.notice(
            "WARNING",
            "25P01",
            "SET TRANSACTION can only be used in transaction blocks",
        );
    }
}

/// `value` as an isolation level for setting `name`, in PostgreSQL's words.
fn isolation_level(name: &str, value: &str) -> Result<String, CoordError> {
    let level = value.trim().to_lowercase();
    match ISOLATION_LEVELS.contains(&level.as_str()) {
        true => Ok(level),
        false => Err(CoordError::InvalidParameterValue {
            name: name.to_string(),
            value: value.to_string(),
        }),
    }
}

/// The time zone `value` names, as `TimeZone` keeps it: an IANA name (`Europe/Berlin`), `UTC`
/// in any case (and `LOCAL`, the server's, which is UTC), or a number of hours east of UTC
/// (`SET TIME ZONE -7`) as an offset; `None` for anything else.
fn time_zone(value: &str) -> Option<String> {
    let value = value.trim();
    if ["utc", "gmt", "local"]
        .iter()
        .any(|u| value.eq_ignore_ascii_case(u))
    {
        return Some("UTC".into());
    }
    if let Ok(hours) = value.parse::<i8>() {
        return (-15..=15).contains(&hours).then(|| {
            format!(
                "{}{:02}:00",
                if hours < 0 { '-' } else { '+' },
                hours.unsigned_abs()
            )
        });
    }
    value.parse::<Tz>().is_ok().then(|| value.to_string())
}
