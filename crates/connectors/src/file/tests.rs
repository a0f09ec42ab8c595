use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow::array::AsArray;
use arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};

use super::*;
use crate::{open_source, source_schema, BadRecord, Format, Include};

fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]))
}

fn options(pairs: &[(&str, &str)]) -> SourceOptions {
    SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
}

fn context(format: Option<(&str, &str)>, resume: Option<&str>) -> SourceContext {
    let mut context = SourceContext::new(schema());
    context.format = format.map(|(envelope, encoding)| Format::parse(envelope, encoding).unwrap());
    context.resume = resume.map(str::to_string);
    context
}

fn open(path: &Path, extra: &[(&str, &str)], resume: Option<&str>) -> FileReader {
    let path = path.to_str().unwrap();
    let mut pairs = vec![("connector", "file"), ("path", path)];
    pairs.extend_from_slice(extra);
    FileReader::open(&options(&pairs), &context(None, resume)).unwrap()
}

/// The ids a batch inserted.
fn ids(batch: &SourceBatch) -> Vec<i64> {
    batch
        .changes
        .iter()
        .flat_map(|c| match &c.change {
            Change::Insert(rows) => rows.column(0).as_primitive::<Int64Type>().values().to_vec(),
            other => panic!("not an insert: {other:?}"),
        })
        .collect()
}

/// Every batch until the source ends.
fn read_to_end(reader: &mut FileReader) -> Vec<SourceBatch> {
    std::iter::from_fn(|| reader.next_batch().unwrap()).collect()
}

fn json_lines(ids: std::ops::Range<i64>) -> String {
    ids.map(|i| format!("{{\"id\": {i}, \"name\": \"n{i}\"}}\n"))
        .collect()
}

fn append(path: &Path, text: &str) {
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// The next batch of a followed source that has anything in it.
fn next_nonempty(reader: &mut FileReader) -> SourceBatch {
    for _ in 0..20 {
        let batch = reader.next_batch().unwrap().unwrap();
        if !batch.changes.is_empty() || !batch.errors.is_empty() {
            return batch;
        }
    }
    panic!("no new lines were read");
}

#[test]
fn malformed_json_lines_are_reported_and_the_rest_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.jsonl");
    let text: String = (0..200)
        .map(|i| match i % 10 {
            4 => format!("{{\"id\": \"x{i}\"}}\n"),
            9 => format!("{{\"id\": {i},\n"),
            _ => format!("{{\"id\": {i}}}\r\n"),
        })
        .collect();
    std::fs::write(&path, text).unwrap();
    let batches = read_to_end(&mut open(&path, &[], None));
    let good: Vec<i64> = batches.iter().flat_map(ids).collect();
    assert_eq!(good.len(), 160);
    assert!(good.iter().all(|i| i % 10 != 4 && i % 10 != 9));
    let errors: Vec<&BadRecord> = batches.iter().flat_map(|b| &b.errors).collect();
    let name = path.to_str().unwrap();
    let expected: Vec<String> = (0..200)
        .filter(|i| i % 10 == 4 || i % 10 == 9)
        .map(|i| format!("{name}:{}", i + 1))
        .collect();
    assert_eq!(
        errors
            .iter()
            .map(|e| e.position.clone())
            .collect::<Vec<_>>(),
        expected
    );
    assert!(
        errors[0].error.contains("\"x4\" is not a valid bigint"),
        "{:?}",
        errors[0]
    );
    assert_eq!(errors[1].raw, "{\"id\": 9,");
    assert!(errors[1].error.contains("invalid JSON"), "{:?}", errors[1]);
}

#[test]
fn csv_with_a_header_and_malformed_lines() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("people.csv");
    let mut text = String::from("id;name\n");
    for i in 0..100 {
        text += &match i % 10 {
            0 => format!("{i};n;extra\n"),
            _ => format!("{i};\"n {i}\"\n"),
        };
    }
    std::fs::write(&path, text).unwrap();
    let pairs = [
        ("connector", "file"),
        ("path", path.to_str().unwrap()),
        ("csv.header", "true"),
        ("csv.delimiter", ";"),
    ];
    let mut reader =
        FileReader::open(&options(&pairs), &context(Some(("plain", "csv")), None)).unwrap();
    let batches = read_to_end(&mut reader);
    assert_eq!(batches.iter().map(|b| ids(b).len()).sum::<usize>(), 90);
    let errors: Vec<&BadRecord> = batches.iter().flat_map(|b| &b.errors).collect();
    assert_eq!(errors.len(), 10);
    assert!(
        errors[0].position.ends_with("people.csv:2"),
        "{:?}",
        errors[0]
    );
    assert_eq!(errors[0].error, "expected 2 fields, found 3");
}

#[test]
fn a_directory_or_a_glob_is_read_in_name_order() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.jsonl"), json_lines(3..5)).unwrap();
    std::fs::write(dir.path().join("a.jsonl"), json_lines(0..3)).unwrap();
    std::fs::write(dir.path().join("c.txt"), json_lines(5..6)).unwrap();
    let all: Vec<i64> = read_to_end(&mut open(dir.path(), &[], None))
        .iter()
        .flat_map(ids)
        .collect();
    assert_eq!(all, [0, 1, 2, 3, 4, 5]);
    let pattern = dir.path().join("*.jsonl");
    let matched: Vec<i64> = read_to_end(&mut open(&pattern, &[], None))
        .iter()
        .flat_map(ids)
        .collect();
    assert_eq!(matched, [0, 1, 2, 3, 4]);
}

#[test]
fn resuming_after_any_batch_reads_the_rest_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("1.jsonl"), json_lines(0..20)).unwrap();
    std::fs::write(
        dir.path().join("2.jsonl"),
        format!("\n{}\n", json_lines(20..35)),
    )
    .unwrap();
    let unterminated = json_lines(35..50);
    std::fs::write(dir.path().join("3.jsonl"), unterminated.trim_end()).unwrap();
    let small = |resume: Option<&str>| {
        let mut reader = open(dir.path(), &[], resume);
        reader.rules.max_records = 7;
        reader
    };
    let batches = read_to_end(&mut small(None));
    assert!(batches.len() > 5);
    let all: Vec<i64> = batches.iter().flat_map(ids).collect();
    assert_eq!(all, (0..50).collect::<Vec<_>>());
    for (k, batch) in batches.iter().enumerate() {
        let before: Vec<i64> = batches[..=k].iter().flat_map(ids).collect();
        let after: Vec<i64> = read_to_end(&mut small(Some(&batch.position)))
            .iter()
            .flat_map(ids)
            .collect();
        assert_eq!([before, after].concat(), all, "resumed after batch {k}");
    }
}

#[test]
fn a_bounded_source_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, json_lines(0..3)).unwrap();
    let mut reader = open(&path, &[], None);
    assert_eq!(ids(&reader.next_batch().unwrap().unwrap()), [0, 1, 2]);
    assert!(reader.next_batch().unwrap().is_none());
    assert!(reader.next_batch().unwrap().is_none());
}

#[test]
fn following_reads_appended_lines_complete_lines_only_and_new_files() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.jsonl");
    std::fs::write(&first, json_lines(0..2)).unwrap();
    let mut reader = open(&dir.path().join("*.jsonl"), &[("follow", "true")], None);
    assert_eq!(ids(&reader.next_batch().unwrap().unwrap()), [0, 1]);

    append(&first, "{\"id\": 2}\n{\"id\"");
    assert_eq!(ids(&next_nonempty(&mut reader)), [2]);
    let started = Instant::now();
    let idle = reader.next_batch().unwrap().unwrap();
    assert!(idle.changes.is_empty() && idle.errors.is_empty());
    assert!(started.elapsed() < Duration::from_secs(2));

    append(&first, ": 3}\n");
    let completed = next_nonempty(&mut reader);
    assert_eq!(ids(&completed), [3]);

    std::fs::write(dir.path().join("b.jsonl"), json_lines(4..6)).unwrap();
    let batch = next_nonempty(&mut reader);
    assert_eq!(ids(&batch), [4, 5]);

    let mut resumed = open(
        &dir.path().join("*.jsonl"),
        &[("follow", "true")],
        Some(&completed.position),
    );
    assert_eq!(ids(&next_nonempty(&mut resumed)), [4, 5]);
}

#[test]
fn a_file_that_shrank_is_read_again_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, json_lines(0..5)).unwrap();
    let position = read_to_end(&mut open(&path, &[], None))
        .pop()
        .unwrap()
        .position;
    std::fs::write(&path, json_lines(7..8)).unwrap();
    let again: Vec<i64> = read_to_end(&mut open(&path, &[], Some(&position)))
        .iter()
        .flat_map(ids)
        .collect();
    assert_eq!(again, [7]);
}

#[test]
fn bytes_lines_are_values() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("log");
    std::fs::write(&path, "one\ntwo\n").unwrap();
    let mut context = context(Some(("plain", "bytes")), None);
    context.outputs[0].schema = Arc::new(Schema::new(vec![Field::new(
        "data",
        DataType::Binary,
        false,
    )]));
    let pairs = [("connector", "file"), ("path", path.to_str().unwrap())];
    let mut reader = FileReader::open(&options(&pairs), &context).unwrap();
    let batch = reader.next_batch().unwrap().unwrap();
    let Change::Insert(rows) = &batch.changes[0].change else {
        panic!("not an insert");
    };
    let data = rows.column(0).as_binary::<i32>();
    assert_eq!(
        data.iter().collect::<Vec<_>>(),
        [Some(&b"one"[..]), Some(&b"two"[..])]
    );
}

#[test]
fn unusable_options_and_formats_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.jsonl");
    std::fs::write(&path, json_lines(0..1)).unwrap();
    let name = path.to_str().unwrap();
    let file = |extra: &[(&str, &str)]| {
        let mut pairs = vec![("connector", "file"), ("path", name)];
        pairs.extend_from_slice(extra);
        options(&pairs)
    };
    let is_format_error = |result: Result<crate::OpenedSource, ConnectorError>| {
        matches!(result, Err(ConnectorError::InvalidFormat(_)))
    };
    assert!(is_format_error(open_source(
        &file(&[]),
        context(Some(("upsert", "json")), None)
    )));
    assert!(is_format_error(open_source(
        &file(&[]),
        context(Some(("plain", "avro")), None)
    )));
    let mut with_include = context(None, None);
    with_include.include = vec![Include::parse("offset", None).unwrap()];
    assert!(is_format_error(open_source(&file(&[]), with_include)));

    assert!(open_source(&file(&[]), context(None, None)).is_ok());
    assert!(open_source(&file(&[("csv.header", "true")]), context(None, None)).is_err());
    assert!(open_source(&file(&[("follow", "maybe")]), context(None, None)).is_err());
    assert!(open_source(&file(&[("pat", "x")]), context(None, None)).is_err());
    assert!(open_source(&file(&[]), context(None, Some("{}"))).is_err());
    assert!(open_source(&options(&[("connector", "file")]), context(None, None)).is_err());
    let missing = options(&[("connector", "file"), ("path", "/nonexistent/*.jsonl")]);
    assert!(open_source(&missing, context(None, None)).is_err());
    assert!(source_schema(&file(&[])).is_err());
}
