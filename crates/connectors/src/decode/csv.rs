//! Splitting one CSV record (a line) into its fields, with RFC 4180 quoting inside the line.
//!
//! As in PostgreSQL's `COPY … (FORMAT csv)`, an unquoted empty field is NULL and a quoted one
//! (`""`) is the empty string; `""` inside a quoted field is one `"`.

use std::borrow::Cow;

/// One field of a CSV record.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum CsvField<'a> {
    /// An unquoted empty field: NULL.
    Empty,
    /// The field's text.
    Text(Cow<'a, str>),
}

/// The fields of `line` separated by `delimiter` (an ASCII byte other than `"`), or why the
/// line is not CSV.
pub(super) fn split_fields(line: &str, delimiter: u8) -> Result<Vec<CsvField<'_>>, String> {
    let bytes = line.as_bytes();
    let mut fields = Vec::new();
    let mut start = 0;
    loop {
        let (field, end) = if bytes.get(start) == Some(&b'"') {
            quoted_field(line, start)?
        } else {
            let end = bytes[start..]
                .iter()
                .position(|&b| b == delimiter)
                .map_or(bytes.len(), |p| start + p);
            let text = &line[start..end];
            let field = if text.is_empty() {
                CsvField::Empty
            } else {
                CsvField::Text(Cow::Borrowed(text))
            };
            (field, end)
        };
        fields.push(field);
        match bytes.get(end) {
            None => return Ok(fields),
            Some(&b) if b == delimiter => start = end + 1,
            Some(_) => {
                return Err(format!(
                    "unexpected character after the closing quote at byte {end}"
                ))
            }
        }
    }
}

/// The quoted field whose opening quote is at `start`, and the byte after its closing quote.
fn quoted_field(line: &str, start: usize) -> Result<(CsvField<'_>, usize), String> {
    let bytes = line.as_bytes();
    let mut text: Option<String> = None;
    let mut segment = start + 1;
    loop {
        let quote = bytes[segment..]
            .iter()
            .position(|&b| b == b'"')
            .map(|p| segment + p)
            .ok_or_else(|| format!("unterminated quoted field starting at byte {start}"))?;
        if bytes.get(quote + 1) == Some(&b'"') {
            text.get_or_insert_with(String::new)
                .push_str(&line[segment..=quote]);
            segment = quote + 2;
            continue;
        }
        let field = match text {
            Some(mut text) => {
                text.push_str(&line[segment..quote]);
                Cow::Owned(text)
            }
            None => Cow::Borrowed(&line[segment..quote]),
        };
        return Ok((CsvField::Text(field), quote + 1));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> CsvField<'_> {
        CsvField::Text(Cow::Borrowed(s))
    }

    #[test]
    fn splits_plain_and_quoted_fields() {
        assert_eq!(
            split_fields(r#"1,"a, ""b""",,"""#, b',').unwrap(),
            vec![text("1"), text(r#"a, "b""#), CsvField::Empty, text("")]
        );
        assert_eq!(
            split_fields("x\ty", b'\t').unwrap(),
            vec![text("x"), text("y")]
        );
        assert_eq!(split_fields("", b',').unwrap(), vec![CsvField::Empty]);
    }

    #[test]
    fn malformed_quoting_is_an_error() {
        assert!(split_fields(r#""open,1"#, b',').is_err());
        assert!(split_fields(r#""a"b,1"#, b',').is_err());
    }
}
