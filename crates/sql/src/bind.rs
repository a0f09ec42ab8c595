//! Parameters of prepared statements: counting the `$n` placeholders, typing the ones the
//! client declared, and binding values into them.
//!
//! Parameter types are inferred by planning the statement with its placeholders (DataFusion
//! infers `id = $1` from `id`'s type); a type the client declared wins. Binding replaces each
//! placeholder by a literal of its type, so a bound statement runs through the same path as
//! a simple query. (A prepared point query takes its values as they are instead, typed by
//! [`parameter_value`]: see [`crate::PointQueryTemplate`].)

use std::ops::ControlFlow;

use datafusion::arrow::datatypes::DataType;
use datafusion::common::ScalarValue;
use datafusion::sql::sqlparser::ast::{visit_expressions_mut, Expr, Value, ValueWithSpan};
use datafusion::sql::sqlparser::dialect::PostgreSqlDialect;
use datafusion::sql::sqlparser::parser::Parser;

use crate::literals::normalize_literals;
use crate::statement::{CopySource, DeclareTarget, Explain, Statement, Subscribe, SubscribeTarget};
use crate::SqlError;

impl Statement {
    /// The highest `$n` placeholder in the statement (0: none).
    pub fn parameter_count(&self) -> usize {
        let mut count = 0;
        let mut copy = self.clone();
        copy.visit_expressions(&mut |expr| {
            if let Some(n) = placeholder(expr) {
                count = count.max(n);
            }
            ControlFlow::Continue(())
        });
        count
    }

    /// The statement with every `$n` replaced by the n-th value (`None` is NULL) as a literal
    /// of its type.
    pub fn bind(&self, values: &[(Option<String>, DataType)]) -> Result<Statement, SqlError> {
        let mut bound = self.replace_placeholders(|n, p| match values.get(n.wrapping_sub(1)) {
            Some((value, data_type)) => literal(value.as_deref(), data_type).map(Some),
            None => Err(SqlError::InvalidStatement(format!(
                "there is no parameter {p}"
            ))),
        })?;
        // Bound values are literals now: spell them as DataFusion reads them.
        bound.visit_parts(&mut |part| part.normalize_literals());
        Ok(bound)
    }

    /// The statement with each `$n` whose type the client declared (by position; `None`:
    /// infer it) cast to that type, so that planning infers the result columns from it as
    /// PostgreSQL does (`SELECT $1` with an `int8` parameter returns an `int8` column).
    pub fn with_declared_types(
        &self,
        declared: &[Option<DataType>],
    ) -> Result<Statement, SqlError> {
        self.replace_placeholders(|n, p| match declared.get(n.wrapping_sub(1)) {
            Some(Some(data_type)) => {
                parse_expr(&format!("CAST({p} AS {})", sql_type_name(data_type))).map(Some)
            }
            _ => Ok(None),
        })
    }

    /// The statement with each placeholder `$n` (spelled `p`) replaced by what `replace(n, p)`
    /// returns (`None`: kept); the first error stops the walk and is returned.
    fn replace_placeholders(
        &self,
        mut replace: impl FnMut(usize, &str) -> Result<Option<Expr>, SqlError>,
    ) -> Result<Statement, SqlError> {
        let mut replaced = self.clone();
        let mut failure = None;
        replaced.visit_expressions(&mut |expr| {
            let Expr::Value(ValueWithSpan {
                value: Value::Placeholder(p),
                ..
            }) = &*expr
            else {
                return ControlFlow::Continue(());
            };
            let n = placeholder(expr).unwrap_or(0);
            match replace(n, p) {
                Ok(Some(new)) => *expr = new,
                Ok(None) => {}
                Err(e) => {
                    failure = Some(e);
                    return ControlFlow::Break(());
                }
            }
            ControlFlow::Continue(())
        });
        match failure {
            Some(e) => Err(e),
            None => Ok(replaced),
        }
    }

    /// Calls `f` on every expression of the statement's syntax, until it breaks.
    fn visit_expressions(&mut self, f: &mut dyn FnMut(&mut Expr) -> ControlFlow<()>) {
        self.visit_parts(&mut |part| part.visit_expressions(f));
    }

    /// Calls `f` on each part of the statement that holds expressions.
    fn visit_parts(&mut self, f: &mut dyn FnMut(SyntaxPart<'_>)) {
        match self {
            Statement::Select(query) => f(SyntaxPart::Query(&mut query.0)),
            Statement::Insert(insert) => f(SyntaxPart::Insert(insert.ast_mut())),
            Statement::Update(update) => f(SyntaxPart::Update(update.ast_mut())),
            Statement::Delete(delete) => f(SyntaxPart::Delete(delete.ast_mut())),
            Statement::CopyTo(copy) => {
                if let CopySource::Query(query) = &mut copy.source {
                    f(SyntaxPart::Query(&mut query.0));
                }
            }
            Statement::Declare(declare) => match &mut declare.target {
                DeclareTarget::Query(query) => f(SyntaxPart::Query(&mut query.0)),
                DeclareTarget::Subscribe(subscribe) => subscription_parts(subscribe, f),
            },
            Statement::Explain(Explain::Query(query)) => f(SyntaxPart::Query(&mut query.0)),
            Statement::Subscribe(subscribe) | Statement::CopySubscribe { subscribe, .. } => {
                subscription_parts(subscribe, f)
            }
            _ => {}
        }
    }
}

/// The parts of a subscription that hold expressions.
fn subscription_parts(subscribe: &mut Subscribe, f: &mut dyn FnMut(SyntaxPart<'_>)) {
    if let SubscribeTarget::Query(query) = &mut subscribe.target {
        f(SyntaxPart::Query(&mut query.0));
    }
    if let Some(as_of) = &mut subscribe.as_of {
        f(SyntaxPart::Expr(&mut as_of.0));
    }
}

/// A piece of syntax tree inside a typed statement.
enum SyntaxPart<'a> {
    Query(&'a mut datafusion::sql::sqlparser::ast::Query),
    Insert(&'a mut datafusion::sql::sqlparser::ast::Insert),
    Update(&'a mut datafusion::sql::sqlparser::ast::Update),
    Delete(&'a mut datafusion::sql::sqlparser::ast::Delete),
    Expr(&'a mut Expr),
}

impl SyntaxPart<'_> {
    fn visit_expressions(self, f: &mut dyn FnMut(&mut Expr) -> ControlFlow<()>) {
        let _ = match self {
            SyntaxPart::Query(query) => visit_expressions_mut(query, &mut *f),
            SyntaxPart::Insert(insert) => visit_expressions_mut(insert, &mut *f),
            SyntaxPart::Update(update) => visit_expressions_mut(update, &mut *f),
            SyntaxPart::Delete(delete) => visit_expressions_mut(delete, &mut *f),
            SyntaxPart::Expr(expr) => visit_expressions_mut(expr, &mut *f),
        };
    }

    fn normalize_literals(self) {
        match self {
            SyntaxPart::Query(query) => normalize_literals(query),
            SyntaxPart::Insert(insert) => normalize_literals(insert),
            SyntaxPart::Update(update) => normalize_literals(update),
            SyntaxPart::Delete(delete) => normalize_literals(delete),
            SyntaxPart::Expr(expr) => normalize_literals(expr),
        }
    }
}

/// `n` of a `$n` placeholder.
fn placeholder(expr: &Expr) -> Option<usize> {
    match expr {
        Expr::Value(ValueWithSpan {
            value: Value::Placeholder(p),
            ..
        }) => p.strip_prefix('$').and_then(|n| n.parse::<usize>().ok()),
        _ => None,
    }
}

/// A parameter's value (text, `None` for NULL) as a generic plan takes it, for the types
/// whose text Arrow's cast reads exactly as binding the value into the statement would
/// (integers and text); `None` for other types and for text that is no value of the type
/// (binding reports that).
pub fn parameter_value(value: Option<&str>, data_type: &DataType) -> Option<ScalarValue> {
    if !matches!(
        data_type,
        DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Utf8
    ) {
        return None;
    }
    let value = match value {
        None => return ScalarValue::try_from(data_type).ok(),
        Some(text) => ScalarValue::Utf8(Some(text.to_string()))
            .cast_to(data_type)
            .ok()?,
    };
    (!value.is_null()).then_some(value)
}

/// A SQL literal of `data_type` with the given text value.
fn literal(value: Option<&str>, data_type: &DataType) -> Result<Expr, SqlError> {
    let type_name = sql_type_name(data_type);
    let text = match value {
        None => format!("CAST(NULL AS {type_name})"),
        Some(v) => {
            let quoted = format!("'{}'", v.replace('\'', "''"));
            match data_type {
                DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View | DataType::Null => {
                    quoted
                }
                _ => format!("CAST({quoted} AS {type_name})"),
            }
        }
    };
    parse_expr(&text)
}

fn parse_expr(text: &str) -> Result<Expr, SqlError> {
    Parser::new(&PostgreSqlDialect {})
        .try_with_sql(text)
        .and_then(|mut p| p.parse_expr())
        .map_err(|e| SqlError::Internal(format!("parameter literal {text}: {e}")))
}

/// The SQL name of an Arrow type, for casts.
fn sql_type_name(data_type: &DataType) -> String {
    match data_type {
        DataType::Boolean => "BOOLEAN".into(),
        DataType::Int8 | DataType::Int16 => "SMALLINT".into(),
        DataType::Int32 => "INTEGER".into(),
        DataType::Int64 => "BIGINT".into(),
        DataType::UInt8 | DataType::UInt16 | DataType::UInt32 | DataType::UInt64 => "BIGINT".into(),
        DataType::Float16 | DataType::Float32 => "REAL".into(),
        DataType::Float64 => "DOUBLE PRECISION".into(),
        DataType::Decimal128(p, s) | DataType::Decimal256(p, s) => format!("NUMERIC({p},{s})"),
        DataType::Date32 | DataType::Date64 => "DATE".into(),
        DataType::Timestamp(_, None) => "TIMESTAMP".into(),
        DataType::Timestamp(_, Some(_)) => "TIMESTAMP WITH TIME ZONE".into(),
        DataType::Time32(_) | DataType::Time64(_) => "TIME".into(),
        DataType::Interval(_) => "INTERVAL".into(),
        DataType::Binary | DataType::LargeBinary | DataType::BinaryView => "BYTEA".into(),
        DataType::List(item) | DataType::LargeList(item) => {
            format!("{}[]", sql_type_name(item.data_type()))
        }
        _ => "TEXT".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_bind_as_typed_literals() {
        let statement = crate::parse("SELECT $1 + 1 WHERE $2").unwrap().remove(0);
        assert_eq!(statement.parameter_count(), 2);
        let bound = statement
            .bind(&[
                (Some("41".into()), DataType::Int64),
                (None, DataType::Boolean),
            ])
            .unwrap();
        assert_eq!(bound.parameter_count(), 0);
        let Statement::Select(query) = bound else {
            panic!("not a query")
        };
        assert_eq!(
            query.to_string(),
            "SELECT CAST('41' AS BIGINT) + 1 WHERE CAST(NULL AS BOOLEAN)"
        );
    }

    #[test]
    fn parameter_values_are_typed_or_left_to_binding() {
        assert_eq!(
            parameter_value(Some("-42"), &DataType::Int32),
            Some(ScalarValue::Int32(Some(-42)))
        );
        assert_eq!(
            parameter_value(None, &DataType::Int64),
            Some(ScalarValue::Int64(None))
        );
        assert_eq!(
            parameter_value(Some("it's"), &DataType::Utf8),
            Some(ScalarValue::Utf8(Some("it's".into())))
        );
        assert_eq!(parameter_value(Some("40000"), &DataType::Int16), None);
        assert_eq!(parameter_value(Some("x"), &DataType::Int64), None);
        assert_eq!(parameter_value(Some("t"), &DataType::Boolean), None);
    }

    #[test]
    fn a_missing_value_is_an_error() {
        let statement = crate::parse("SELECT $2").unwrap().remove(0);
        assert!(statement.bind(&[(None, DataType::Int64)]).is_err());
    }
}
