use std::sync::Arc;

use arrow::array::{
    Array, AsArray, BinaryArray, BooleanArray, Date32Array, Decimal128Array, Float32Array,
    Float64Array, Int16Array, Int32Array, Int64Array, StringArray, TimestampMicrosecondArray,
};
use arrow::datatypes::{DataType, Field, Schema, TimeUnit};

use super::*;

fn options(pairs: &[(&str, &str)]) -> SourceOptions {
    SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

fn records<'a>(lines: &[&'a str]) -> Vec<RawRecord<'a>> {
    lines
        .iter()
        .enumerate()
        .map(|(i, line)| RawRecord {
            bytes: line.as_bytes(),
            position: format!("t:{}", i + 1),
        })
        .collect()
}

fn decode(decoder: &Decoder, lines: &[&'static str]) -> Decoded {
    decoder.decode(&records(lines)).unwrap()
}

fn clicks() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("user_id", DataType::Int64, false),
        Field::new("url", DataType::Utf8, true),
        Field::new(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            true,
        ),
    ]))
}

fn every_type() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("a", DataType::Int16, true),
        Field::new("b", DataType::Int32, true),
        Field::new("c", DataType::Int64, true),
        Field::new("d", DataType::Float32, true),
        Field::new("e", DataType::Float64, true),
        Field::new("f", DataType::Decimal128(10, 2), true),
        Field::new("g", DataType::Boolean, true),
        Field::new("h", DataType::Utf8, true),
        Field::new("i", DataType::Date32, true),
        Field::new("j", DataType::Timestamp(TimeUnit::Microsecond, None), true),
        Field::new("k", DataType::Binary, true),
    ]))
}

/// 2024-01-02 03:04:05.123456 UTC in microseconds.
const TS: i64 = 1_704_164_645_123_456;

#[test]
fn json_values_of_every_type() {
    let decoder = Decoder::new(Encoding::Json, every_type(), &options(&[])).unwrap();
    let decoded = decode(
        &decoder,
        &[
            r#"{"a": 1, "b": -2, "c": 3e3, "d": 1.5, "e": "2.25", "f": 12.345, "g": true,
                "h": "hi", "i": "2024-01-02", "j": "2024-01-02T03:04:05.123456Z", "k": "xy"}"#,
            r#"{"a": "7", "f": "-0.5", "g": "off", "h": {"n": [1, 2]}, "i": null,
                "j": "2024-01-02 05:04:05.123456+02"}"#,
        ],
    );
    assert_eq!(decoded.errors, vec![]);
    let rows = decoded.rows;
    assert_eq!(rows.num_rows(), 2);
    let a = rows
        .column(0)
        .as_any()
        .downcast_ref::<Int16Array>()
        .unwrap();
    assert_eq!(a.values(), &[1, 7]);
    let b = rows
        .column(1)
        .as_any()
        .downcast_ref::<Int32Array>()
        .unwrap();
    assert_eq!((b.value(0), b.is_null(1)), (-2, true));
    let c = rows
        .column(2)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(c.value(0), 3000);
    let d = rows
        .column(3)
        .as_any()
        .downcast_ref::<Float32Array>()
        .unwrap();
    assert_eq!(d.value(0), 1.5);
    let e = rows
        .column(4)
        .as_any()
        .downcast_ref::<Float64Array>()
        .unwrap();
    assert_eq!(e.value(0), 2.25);
    let f = rows
        .column(5)
        .as_any()
        .downcast_ref::<Decimal128Array>()
        .unwrap();
    assert_eq!((f.value(0), f.value(1)), (1234, -50));
    let g = rows
        .column(6)
        .as_any()
        .downcast_ref::<BooleanArray>()
        .unwrap();
    assert_eq!((g.value(0), g.value(1)), (true, false));
    let h = rows
        .column(7)
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap();
    assert_eq!((h.value(0), h.value(1)), ("hi", r#"{"n":[1,2]}"#));
    let i = rows
        .column(8)
        .as_any()
        .downcast_ref::<Date32Array>()
        .unwrap();
    assert_eq!((i.value(0), i.is_null(1)), (19724, true));
    let j = rows
        .column(9)
        .as_any()
        .downcast_ref::<TimestampMicrosecondArray>()
        .unwrap();
    assert_eq!((j.value(0), j.value(1)), (TS, TS));
    let k = rows
        .column(10)
        .as_any()
        .downcast_ref::<BinaryArray>()
        .unwrap();
    assert_eq!((k.value(0), k.is_null(1)), (&b"xy"[..], true));
}

#[test]
fn json_keys_match_exactly_first_then_ignoring_case() {
    let decoder = Decoder::new(Encoding::Json, clicks(), &options(&[])).unwrap();
    let decoded = decode(
        &decoder,
        &[
            r#"{"User_ID": 1, "URL": "a", "extra": [1]}"#,
            r#"{"URL": "upper", "url": "exact", "user_id": 2}"#,
            r#"{"user_id": 3}"#,
        ],
    );
    assert_eq!(decoded.errors, vec![]);
    let ids = decoded
        .rows
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>();
    assert_eq!(ids.values(), &[1, 2, 3]);
    let urls = decoded.rows.column(1).as_string::<i32>();
    assert_eq!(
        urls.iter().collect::<Vec<_>>(),
        [Some("a"), Some("exact"), None]
    );
    let ts = decoded.rows.column(2);
    assert_eq!(ts.null_count(), 3);
    assert_eq!(ts.data_type(), clicks().field(2).data_type());
}

#[test]
fn json_records_that_do_not_fit_are_bad_with_a_reason() {
    let decoder = Decoder::new(Encoding::Json, clicks(), &options(&[])).unwrap();
    let cases = [
        (
            r#"{"user_id": "abc"}"#,
            r#"column "user_id": "abc" is not a valid bigint"#,
        ),
        (r#"{"user_id": 1e30}"#, "out of range for bigint"),
        (r#"{"user_id": 1.5}"#, "not an integer"),
        (
            r#"{"user_id": {"x": 1}}"#,
            r#"column "user_id": expected bigint, found an object"#,
        ),
        (r#"{"url": "x"}"#, r#"column "user_id" cannot be null"#),
        (r#"{"user_id": null}"#, r#"column "user_id" cannot be null"#),
        (
            r#"{"user_id": 1, "ts": "yesterday"}"#,
            r#""yesterday" is not a valid timestamptz"#,
        ),
        (
            r#"{"user_id": 1, "ts": 17}"#,
            "expected timestamptz, found a number",
        ),
        (r#"[1, 2]"#, "expected a JSON object, found an array"),
        (r#"{"user_id": 1"#, "invalid JSON"),
        (r#"not json"#, "invalid JSON"),
    ];
    let lines: Vec<&'static str> = cases.iter().map(|(line, _)| *line).collect();
    let decoded = decode(&decoder, &lines);
    assert_eq!(decoded.rows.num_rows(), 0);
    assert_eq!(decoded.errors.len(), cases.len());
    for (i, ((line, reason), bad)) in cases.iter().zip(&decoded.errors).enumerate() {
        assert_eq!(bad.position, format!("t:{}", i + 1));
        assert_eq!(bad.raw, *line);
        assert!(bad.error.contains(reason), "{line}: {}", bad.error);
    }
}

#[test]
fn a_bad_record_between_good_ones_is_taken_back_whole() {
    let decoder = Decoder::new(Encoding::Json, every_type(), &options(&[])).unwrap();
    let decoded = decode(
        &decoder,
        &[
            r#"{"h": "first", "k": "1"}"#,
            r#"{"h": "half", "k": "2", "j": "never"}"#,
            r#"{"h": "second", "k": "3"}"#,
        ],
    );
    assert_eq!(decoded.errors.len(), 1);
    assert_eq!(decoded.errors[0].position, "t:2");
    let h = decoded.rows.column(7).as_string::<i32>();
    assert_eq!(
        h.iter().collect::<Vec<_>>(),
        [Some("first"), Some("second")]
    );
    let k = decoded.rows.column(10).as_binary::<i32>();
    assert_eq!(
        k.iter().collect::<Vec<_>>(),
        [Some(&b"1"[..]), Some(&b"3"[..])]
    );
}

#[test]
fn one_malformed_json_line_in_ten_is_isolated_exactly() {
    let decoder = Decoder::new(Encoding::Json, clicks(), &options(&[])).unwrap();
    let lines: Vec<String> = (0..1000)
        .map(|i| match i % 10 {
            3 => format!(r#"{{"user_id": "u{i}"}}"#),
            _ => format!(r#"{{"user_id": {i}, "url": "/p/{i}", "ts": "2024-01-01T00:00:00Z"}}"#),
        })
        .collect();
    let raw: Vec<RawRecord<'_>> = lines
        .iter()
        .enumerate()
        .map(|(i, line)| RawRecord {
            bytes: line.as_bytes(),
            position: format!("f:{}", i + 1),
        })
        .collect();
    let decoded = decoder.decode(&raw).unwrap();
    assert_eq!(decoded.rows.num_rows(), 900);
    let positions: Vec<&str> = decoded.errors.iter().map(|e| e.position.as_str()).collect();
    let expected: Vec<String> = (0..1000)
        .filter(|i| i % 10 == 3)
        .map(|i| format!("f:{}", i + 1))
        .collect();
    assert_eq!(positions, expected);
    let ids = decoded
        .rows
        .column(0)
        .as_primitive::<arrow::datatypes::Int64Type>();
    assert!(ids.values().iter().all(|id| id % 10 != 3));
}

#[test]
fn csv_fields_by_position_with_empty_as_null() {
    let decoder = Decoder::new(Encoding::Csv, clicks(), &options(&[])).unwrap();
    let decoded = decode(
        &decoder,
        &[
            "1,/a,2024-01-02 03:04:05.123456+00",
            r#"2,"/b, with comma","#,
            r#"3,"","#,
            "4,/d",
            "x,/e,",
            ",/f,",
            "6,/g,2024-13-01",
        ],
    );
    assert_eq!(decoded.rows.num_rows(), 3);
    let urls = decoded.rows.column(1).as_string::<i32>();
    assert_eq!(
        urls.iter().collect::<Vec<_>>(),
        [Some("/a"), Some("/b, with comma"), Some("")]
    );
    let ts = decoded
        .rows
        .column(2)
        .as_primitive::<arrow::datatypes::TimestampMicrosecondType>();
    assert_eq!(ts.value(0), TS);
    let errors: Vec<(&str, &str)> = decoded
        .errors
        .iter()
        .map(|e| (e.position.as_str(), e.error.as_str()))
        .collect();
    assert_eq!(errors[0], ("t:4", "expected 3 fields, found 2"));
    assert_eq!(
        errors[1],
        ("t:5", r#"column "user_id": "x" is not a valid bigint"#)
    );
    assert_eq!(errors[2], ("t:6", r#"column "user_id" cannot be null"#));
    assert_eq!(errors[3].0, "t:7");
}

#[test]
fn csv_delimiter_option() {
    let decoder = Decoder::new(
        Encoding::Csv,
        clicks(),
        &options(&[("csv.delimiter", "\\t")]),
    )
    .unwrap();
    let decoded = decode(&decoder, &["1\t/a,b\t"]);
    assert_eq!(decoded.errors, vec![]);
    assert_eq!(decoded.rows.column(1).as_string::<i32>().value(0), "/a,b");
    for bad in ["", ";;", "\""] {
        assert!(
            Decoder::new(Encoding::Csv, clicks(), &options(&[("csv.delimiter", bad)])).is_err()
        );
    }
}

#[test]
fn bytes_records_are_the_one_columns_value() {
    let binary = Arc::new(Schema::new(vec![Field::new(
        "data",
        DataType::Binary,
        false,
    )]));
    let decoder = Decoder::new(Encoding::Bytes, binary, &options(&[])).unwrap();
    let raw = [
        RawRecord {
            bytes: &[0xff, 0x00],
            position: "1".into(),
        },
        RawRecord {
            bytes: b"",
            position: "2".into(),
        },
    ];
    let decoded = decoder.decode(&raw).unwrap();
    let data = decoded.rows.column(0).as_binary::<i32>();
    assert_eq!(
        data.iter().collect::<Vec<_>>(),
        [Some(&[0xff, 0][..]), Some(&b""[..])]
    );

    let text = Arc::new(Schema::new(vec![Field::new("line", DataType::Utf8, false)]));
    let decoder = Decoder::new(Encoding::Bytes, text, &options(&[])).unwrap();
    let decoded = decoder.decode(&raw).unwrap();
    assert_eq!(decoded.rows.num_rows(), 1);
    assert!(decoded.errors[0].error.contains("invalid UTF-8"));
}

#[test]
fn schemas_a_decoder_cannot_read_are_errors() {
    let none = options(&[]);
    assert!(Decoder::new(Encoding::Bytes, clicks(), &none).is_err());
    assert!(Decoder::new(Encoding::Avro, clicks(), &none).is_err());
    assert!(Decoder::new(Encoding::Json, Arc::new(Schema::empty()), &none).is_err());
    let list = Arc::new(Schema::new(vec![Field::new(
        "l",
        DataType::new_list(DataType::Int64, true),
        true,
    )]));
    let error = Decoder::new(Encoding::Json, list, &none).unwrap_err();
    assert!(error.to_string().contains("column \"l\""), "{error}");
}
