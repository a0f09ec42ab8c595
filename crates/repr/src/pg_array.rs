//! PostgreSQL's text form of arrays: `{a,"b c",NULL}` in, and out.
//!
//! Arrow's casts between text and lists use their own notation (`[a, b]`); values a client
//! writes or reads as Postgres text go through these functions instead.

use std::sync::Arc;

use arrow::array::{Array, ArrayBuilder, ArrayRef, AsArray, ListArray, StringArray, StringBuilder};
use arrow::buffer::OffsetBuffer;
use arrow::datatypes::{DataType, Field};
use arrow::error::ArrowError;

/// The elements of a one-dimensional array literal; `None` is a NULL element.
pub fn parse_array_literal(text: &str) -> Result<Vec<Option<String>>, ArrowError> {
    let malformed = || ArrowError::ParseError(format!("malformed array literal: \"{text}\""));
    let trimmed = text.trim();
    // An explicit lower bound (`[0:1]={…}`, how int2vector subscripts print) is skipped.
    let trimmed = match trimmed.strip_prefix('[') {
        Some(_) => trimmed
            .split_once('=')
            .map(|(_, rest)| rest)
            .ok_or_else(malformed)?,
        None => trimmed,
    };
    let inner = trimmed
        .strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .ok_or_else(malformed)?;
    if inner.trim().is_empty() {
        return Ok(Vec::new());
    }
    let mut elements = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut in_quotes = false;
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.push(chars.next().ok_or_else(malformed)?),
            '"' => {
                in_quotes = !in_quotes;
                quoted = true;
            }
            '{' | '}' if !in_quotes => {
                return Err(ArrowError::ParseError(format!(
                    "multidimensional arrays are not supported: \"{text}\""
                )))
            }
            ',' if !in_quotes => {
                elements.push(element(std::mem::take(&mut current), quoted));
                quoted = false;
            }
            c if c.is_whitespace() && !in_quotes => {
                if !current.is_empty() && !quoted {
                    current.push(c);
                }
            }
            other => current.push(other),
        }
    }
    if in_quotes {
        return Err(malformed());
    }
    elements.push(element(current, quoted));
    Ok(elements)
}

fn element(text: String, quoted: bool) -> Option<String> {
    let text = if quoted {
        text
    } else {
        text.trim_end().to_string()
    };
    if !quoted && text.eq_ignore_ascii_case("NULL") {
        None
    } else {
        Some(text)
    }
}

/// Array literals (text) as lists of `target`'s element type.
pub fn text_to_list(texts: &StringArray, target: &DataType) -> Result<ArrayRef, ArrowError> {
    let DataType::List(_) = target else {
        return Err(ArrowError::CastError(format!(
            "cannot read array literals as {target}"
        )));
    };
    let mut elements = StringBuilder::new();
    let mut offsets = vec![0i32];
    for text in texts {
        if let Some(text) = text {
            for value in parse_array_literal(text)? {
                elements.append_option(value);
            }
        }
        offsets.push(elements.len() as i32);
    }
    let texts_list = ListArray::try_new(
        Arc::new(Field::new("item", DataType::Utf8, true)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(elements.finish()),
        texts.nulls().cloned(),
    )?;
    arrow::compute::cast(&(Arc::new(texts_list) as ArrayRef), target)
}

/// An element as it appears inside an array literal: quoted when it would not read back.
pub fn quote_element(element: &str) -> String {
    let needs_quotes = element.is_empty()
        || element.eq_ignore_ascii_case("null")
        || element
            .chars()
            .any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_whitespace());
    if needs_quotes {
        format!("\"{}\"", element.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        element.to_string()
    }
}

/// The elements of the list at `row` of a list column, as a slice of its values.
pub fn list_values(array: &ArrayRef, row: usize) -> Option<ArrayRef> {
    match array.data_type() {
        DataType::List(_) => Some(array.as_list::<i32>().value(row)),
        DataType::LargeList(_) => Some(array.as_list::<i64>().value(row)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::Int64Array;

    #[test]
    fn literals_split_into_elements() {
        assert_eq!(
            parse_array_literal(r#"{a,"b c",NULL,"NULL", d }"#).unwrap(),
            vec![
                Some("a".into()),
                Some("b c".into()),
                None,
                Some("NULL".into()),
                Some("d".into())
            ]
        );
        assert!(parse_array_literal("{}").unwrap().is_empty());
        assert!(parse_array_literal("a,b").is_err());
        assert!(parse_array_literal("{{1},{2}}").is_err());
    }

    #[test]
    fn text_becomes_typed_lists() {
        let texts = StringArray::from(vec![Some("{1,2}"), None, Some("{}")]);
        let target = DataType::List(Arc::new(Field::new("item", DataType::Int64, true)));
        let lists = text_to_list(&texts, &target).unwrap();
        let lists = lists.as_list::<i32>();
        let first = lists.value(0);
        let first = first.as_any().downcast_ref::<Int64Array>().unwrap();
        assert_eq!(first.values(), &[1, 2]);
        assert!(lists.is_null(1));
        assert_eq!(lists.value(2).len(), 0);
    }
}
