//! Text functions clients use that DataFusion lacks: `quote_ident`, `parse_ident`, `format`,
//! `json_build_object`, `pg_typeof`.

use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::{ScalarUDF, Signature, TypeSignature, Volatility};

use super::{any_arity, invalid_argument, row_function, text, text_arg};
use sql::quote_ident;

pub(super) fn functions() -> Vec<ScalarUDF> {
    let immutable = Volatility::Immutable;
    let variadic = |volatility| {
        Signature::one_of(
            vec![TypeSignature::Nullary, TypeSignature::VariadicAny],
            volatility,
        )
    };
    vec![
        row_function(
            "quote_ident",
            any_arity(&[1], immutable),
            DataType::Utf8,
            |args| Ok(text(text_arg(&args[0]).map(|t| quote_ident(&t)))),
        ),
        row_function(
            "quote_literal",
            any_arity(&[1], immutable),
            DataType::Utf8,
            |args| Ok(text(text_arg(&args[0]).map(|t| quote_literal(&t)))),
        ),
        row_function(
            "quote_nullable",
            any_arity(&[1], immutable),
            DataType::Utf8,
            |args| {
                Ok(text(Some(text_arg(&args[0]).map_or_else(
                    || "NULL".to_string(),
                    |t| quote_literal(&t),
                ))))
            },
        ),
        row_function(
            "parse_ident",
            any_arity(&[1, 2], immutable),
            DataType::List(Arc::new(Field::new("item", DataType::Utf8, true))),
            |args| {
                let Some(name) = text_arg(&args[0]) else {
                    return Ok(ScalarValue::Null);
                };
                let parts: Vec<ScalarValue> = parse_ident(&name)?
                    .into_iter()
                    .map(|p| ScalarValue::Utf8(Some(p)))
                    .collect();
                Ok(ScalarValue::List(ScalarValue::new_list_nullable(
                    &parts,
                    &DataType::Utf8,
                )))
            },
        ),
        row_function(
            "format",
            variadic(Volatility::Stable),
            DataType::Utf8,
            |args| {
                let Some(pattern) = args.first().and_then(text_arg) else {
                    return Ok(text(None));
                };
                Ok(text(Some(format(&pattern, &args[1..])?)))
            },
        ),
        row_function(
            "__like_escape",
            any_arity(&[2], immutable),
            DataType::Utf8,
            |args| {
                let (Some(pattern), Some(escape)) = (text_arg(&args[0]), text_arg(&args[1])) else {
                    return Ok(text(None));
                };
                Ok(text(Some(backslash_escaped(&pattern, &escape)?)))
            },
        ),
        row_function(
            "json_build_object",
            variadic(Volatility::Stable),
            DataType::Utf8,
            |args| {
                if args.len() % 2 != 0 {
                    return Err(invalid_argument(
                        "argument list must have even number of elements",
                    ));
                }
                let members: Vec<String> = args
                    .chunks(2)
                    .map(|pair| {
                        let key = text_arg(&pair[0]).unwrap_or_default();
                        format!("{} : {}", json_string(&key), json_value(&pair[1]))
                    })
                    .collect();
                Ok(text(Some(format!("{{{}}}", members.join(", ")))))
            },
        ),
    ]
}

/// A LIKE pattern escaped with `escape` as the same pattern escaped with a backslash (the one
/// escape character DataFusion's LIKE knows).
fn backslash_escaped(pattern: &str, escape: &str) -> datafusion::error::Result<String> {
    let mut escape_chars = escape.chars();
    let escape = match (escape_chars.next(), escape_chars.next()) {
        (Some(c), None) => Some(c),
        (None, _) => None,
        _ => return Err(invalid_argument("invalid escape string")),
    };
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if Some(c) == escape {
            match chars.next() {
                Some(next) => {
                    out.push('\\');
                    out.push(next);
                }
                None => {
                    return Err(invalid_argument(
                        "LIKE pattern must not end with escape character",
                    ))
                }
            }
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// `quote_literal`: a string literal reading back as `text` (`E'…'` when it holds backslashes).
fn quote_literal(text: &str) -> String {
    let quoted = text.replace('\'', "''");
    if text.contains('\\') {
        format!("E'{}'", quoted.replace('\\', "\\\\"))
    } else {
        format!("'{quoted}'")
    }
}

/// `parse_ident`: the parts of a qualified identifier, unquoted and folded.
fn parse_ident(name: &str) -> datafusion::error::Result<Vec<String>> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut chars = name.trim().chars().peekable();
    let mut in_quotes = false;
    while let Some(c) = chars.next() {
        match c {
            '"' if in_quotes && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => in_quotes = !in_quotes,
            '.' if !in_quotes => parts.push(std::mem::take(&mut current)),
            c if in_quotes => current.push(c),
            c => current.extend(c.to_lowercase()),
        }
    }
    if in_quotes {
        return Err(invalid_argument(format!(
            "string is not a valid identifier: \"{name}\""
        )));
    }
    parts.push(current);
    if parts.iter().any(String::is_empty) {
        return Err(invalid_argument(format!(
            "string is not a valid identifier: \"{name}\""
        )));
    }
    Ok(parts)
}

/// `format(pattern, args…)` with `%s`, `%I` (identifier), `%L` (literal) and `%%`.
fn format(pattern: &str, args: &[ScalarValue]) -> datafusion::error::Result<String> {
    let mut out = String::new();
    let mut next = 0;
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let spec = chars
            .next()
            .ok_or_else(|| invalid_argument("unterminated format() type specifier"))?;
        if spec == '%' {
            out.push('%');
            continue;
        }
        let value = args
            .get(next)
            .ok_or_else(|| invalid_argument("too few arguments for format()"))?;
        next += 1;
        match spec {
            's' => out.push_str(&text_arg(value).unwrap_or_default()),
            'I' => {
                let name = text_arg(value).ok_or_else(|| {
                    invalid_argument("null values cannot be formatted as an SQL identifier")
                })?;
                out.push_str(&quote_ident(&name));
            }
            'L' => match text_arg(value) {
                Some(v) => out.push_str(&quote_literal(&v)),
                None => out.push_str("NULL"),
            },
            other => {
                return Err(invalid_argument(format!(
                    "unrecognized format() type specifier \"{other}\""
                )))
            }
        }
    }
    Ok(out)
}

fn json_string(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

/// A value as JSON, as `json_build_object` prints it.
fn json_value(value: &ScalarValue) -> String {
    if value.is_null() {
        return "null".into();
    }
    match value {
        ScalarValue::Boolean(Some(b)) => b.to_string(),
        ScalarValue::Int8(_)
        | ScalarValue::Int16(_)
        | ScalarValue::Int32(_)
        | ScalarValue::Int64(_)
        | ScalarValue::UInt8(_)
        | ScalarValue::UInt16(_)
        | ScalarValue::UInt32(_)
        | ScalarValue::UInt64(_)
        | ScalarValue::Float32(_)
        | ScalarValue::Float64(_)
        | ScalarValue::Decimal128(..) => value.to_string(),
        ScalarValue::List(list) => {
            let items: Vec<String> = (0..list.value(0).len())
                .filter_map(|i| ScalarValue::try_from_array(&list.value(0), i).ok())
                .map(|v| json_value(&v))
                .collect();
            format!("[{}]", items.join(","))
        }
        other => json_string(&text_arg(other).unwrap_or_default()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_quotes_identifiers_and_literals() {
        let args = [
            ScalarValue::Utf8(Some("public".into())),
            ScalarValue::Utf8(Some("My Table".into())),
            ScalarValue::Utf8(Some("it's".into())),
        ];
        assert_eq!(
            format("%I.%I = %L 100%%", &args).unwrap(),
            "public.\"My Table\" = 'it''s' 100%"
        );
    }

    #[test]
    fn like_escapes_become_backslashes() {
        assert_eq!(backslash_escaped("pg/_%", "/").unwrap(), "pg\\_%");
        assert_eq!(backslash_escaped("a\\b", "/").unwrap(), "a\\\\b");
        assert_eq!(backslash_escaped("a_b", "").unwrap(), "a_b");
    }

    #[test]
    fn identifiers_parse_into_parts() {
        assert_eq!(
            parse_ident("Public.\"My.T\"").unwrap(),
            vec!["public", "My.T"]
        );
        assert!(parse_ident("a..b").is_err());
    }
}
