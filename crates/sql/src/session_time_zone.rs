//! The session's time zone (`SET TIME ZONE`) where PostgreSQL reads or writes a local time:
//! text without an offset read as a `timestamptz` is that zone's local time; a `timestamp`
//! made a `timestamptz` is taken as local time there; a `timestamptz` made a `timestamp` or a
//! `date`, truncated (`date_trunc`) or taken apart (`extract`, `date_part`) works on its local
//! time there. A `timestamptz` is an instant (microseconds since the epoch, in UTC); only
//! these conversions depend on the zone, so the rule rewrites them to go through a
//! timestamp of the session's zone, which arrow's casts and DataFusion's functions read as
//! local time, and back.

use std::sync::Arc;

use datafusion::arrow::array::timezone::Tz;
use datafusion::arrow::datatypes::{DataType, TimeUnit};
use datafusion::common::config::{ConfigExtension, ConfigOptions};
use datafusion::common::extensions_options;
use datafusion::common::tree_node::Transformed;
use datafusion::common::DFSchema;
use datafusion::error::Result;
use datafusion::logical_expr::expr::ScalarFunction;
use datafusion::logical_expr::{cast, Expr, ExprSchemable, LogicalPlan};
use datafusion::optimizer::AnalyzerRule;

use crate::expression_rewrites::rewrite_expressions;

extensions_options! {
    /// The session's time zone, as the planner sees it.
    pub struct SessionTimeZone {
        /// An IANA zone (`Europe/Berlin`) or a fixed offset (`+05:00`), as arrow reads them.
        pub name: String, default = "UTC".to_string()
    }
}

impl ConfigExtension for SessionTimeZone {
    const PREFIX: &'static str = "fluxion_session";
}

impl SessionTimeZone {
    /// The zone of a session whose `timezone` setting is `setting`, if local times are to be
    /// read in it: a zone arrow knows, other than UTC (`None`: times are UTC already).
    pub fn of(setting: Option<&str>) -> Option<SessionTimeZone> {
        let name = setting?;
        (!name.eq_ignore_ascii_case("UTC") && name.parse::<Tz>().is_ok()).then(|| SessionTimeZone {
            name: name.to_string(),
        })
    }
}

/// The functions whose result depends on the zone their timestamp is read in.
const LOCAL_TIME_FUNCTIONS: [&str; 2] = ["date_trunc", "date_part"];

/// Rewrites the conversions the module documentation lists to use the session's time zone.
/// Runs after type coercion, which adds casts of its own (a literal compared with a
/// `timestamptz` column).
#[derive(Debug, Default)]
pub struct LocalTimes;

impl AnalyzerRule for LocalTimes {
    fn name(&self) -> &str {
        "local_times"
    }

    fn analyze(&self, plan: LogicalPlan, config: &ConfigOptions) -> Result<LogicalPlan> {
        let Some(zone) = config.extensions.get::<SessionTimeZone>() else {
            return Ok(plan);
        };
        let zone: Arc<str> = Arc::from(zone.name.as_str());
        rewrite_expressions(plan, is_candidate, |expr, schema| {
            in_zone(expr, schema, &zone)
        })
    }
}

fn is_candidate(expr: &Expr) -> bool {
    match expr {
        Expr::Cast(_) | Expr::TryCast(_) => true,
        Expr::ScalarFunction(function) => LOCAL_TIME_FUNCTIONS.contains(&function.name()),
        _ => false,
    }
}

/// `expr` reading or writing local time in `zone`, if it is one of the conversions above.
fn in_zone(expr: Expr, schema: &DFSchema, zone: &Arc<str>) -> Result<Transformed<Expr>> {
    match &expr {
        Expr::Cast(conversion) => {
            let from = conversion.expr.get_type(schema)?;
            let to = conversion.field.data_type();
            Ok(match local_cast(&conversion.expr, &from, to, zone) {
                Some(rewritten) => Transformed::yes(rewritten),
                None => Transformed::no(expr),
            })
        }
        Expr::ScalarFunction(function) if LOCAL_TIME_FUNCTIONS.contains(&function.name()) => {
            let Some(time) = function.args.get(1) else {
                return Ok(Transformed::no(expr));
            };
            let DataType::Timestamp(unit, Some(utc)) = time.get_type(schema)? else {
                return Ok(Transformed::no(expr));
            };
            let mut args = function.args.clone();
            args[1] = cast(time.clone(), zoned(unit, zone));
            let call = Expr::ScalarFunction(ScalarFunction::new_udf(function.func.clone(), args));
            // `date_trunc` gives a timestamp of the zone it read: the same instant in UTC.
            Ok(Transformed::yes(if function.name() == "date_trunc" {
                cast(call, DataType::Timestamp(unit, Some(utc)))
            } else {
                call
            }))
        }
        _ => Ok(Transformed::no(expr)),
    }
}

/// A cast of `inner` (of type `from`) to `to` that reads or writes local time in `zone`.
fn local_cast(inner: &Expr, from: &DataType, to: &DataType, zone: &Arc<str>) -> Option<Expr> {
    use DataType::{Date32, LargeUtf8, Timestamp, Utf8, Utf8View};
    match (from, to) {
        // Text without an offset, or a timestamp, is local time in the zone.
        (Utf8 | LargeUtf8 | Utf8View | Timestamp(_, None), Timestamp(unit, Some(_))) => {
            Some(cast(cast(inner.clone(), zoned(*unit, zone)), to.clone()))
        }
        // The instant's date in the zone.
        (Timestamp(unit, Some(_)), Date32) => {
            Some(cast(cast(inner.clone(), zoned(*unit, zone)), Date32))
        }
        // The instant's local time in the zone.
        (Timestamp(unit, Some(_)), Timestamp(_, None)) => {
            let local = datafusion::functions::datetime::to_local_time()
                .call(vec![cast(inner.clone(), zoned(*unit, zone))]);
            Some(cast(local, to.clone()))
        }
        _ => None,
    }
}

/// A timestamp of `unit` in `zone`.
fn zoned(unit: TimeUnit, zone: &Arc<str>) -> DataType {
    DataType::Timestamp(unit, Some(zone.clone()))
}
