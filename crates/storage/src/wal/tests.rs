//! The log's behaviour through its public API, plus crash states built file by file.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use repr::{ChangeBatch, Diff, GlobalId};

use super::files::{list_dir, segment_file_name, snapshot_file_name, temporary_file_name};
use super::test_data::{kv_change, kv_contents, kv_keys, kv_record, rich_batch};
use super::*;

fn open(dir: &Path) -> (Wal, Vec<WalRecord>) {
    Wal::open(dir).unwrap()
}

fn open_small(dir: &Path, segment_bytes: u64) -> (Wal, Vec<WalRecord>) {
    Wal::open_with_options(dir, WalOptions { segment_bytes }).unwrap()
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    list_dir(dir)
        .unwrap()
        .segments
        .into_iter()
        .map(|s| s.1)
        .collect()
}

fn file_names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|name| name != files::LOCK_FILE)
        .collect();
    names.sort();
    names
}

fn len(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// The consolidated `(table, k, v)` contents as `(table, k, v, diff)` rows of one batch each.
fn snapshot_of(contents: &BTreeMap<(u64, i64, String), Diff>) -> Vec<(GlobalId, ChangeBatch)> {
    let mut by_table: BTreeMap<u64, Vec<(i64, &str, Diff)>> = BTreeMap::new();
    for ((table, k, v), diff) in contents {
        by_table.entry(*table).or_default().push((*k, v, *diff));
    }
    by_table
        .into_iter()
        .map(|(table, rows)| (GlobalId(table), kv_change(0, &rows)))
        .collect()
}

#[test]
fn wal_is_send_and_sync() {
    fn shareable<T: Send + Sync + 'static>() {}
    shareable::<Wal>();
}

#[test]
fn records_survive_reopen_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let rows = rich_batch();
    let record = WalRecord {
        progress: Vec::new(),
        stream_ends: Vec::new(),
        watermarks: Vec::new(),
        time: 7,
        changes: vec![
            (
                GlobalId(1),
                ChangeBatch {
                    time: 7,
                    rows: rows.clone(),
                    diffs: vec![1, -1, 2],
                },
            ),
            (GlobalId(2), kv_change(7, &[(1, "x", 1)])),
        ],
    };
    {
        let (wal, replay) = open(dir.path());
        assert!(replay.is_empty());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(wal.append(record)).unwrap();
        wal.append_blocking(kv_record(8, &[(2, &[(1, "x", -1)])]))
            .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(replay.len(), 2);
    assert_eq!(replay[0].time, 7);
    let (id, batch) = &replay[0].changes[0];
    assert_eq!((*id, batch.time), (GlobalId(1), 7));
    assert_eq!(batch.rows, rows);
    assert_eq!(batch.diffs, vec![1, -1, 2]);
    assert_eq!(kv_keys(&replay[1..]), vec![(8, 2, 1)]);
    assert_eq!(
        kv_contents(&replay[1..]),
        BTreeMap::from([((2, 1, "x".to_string()), -1)])
    );
}

#[test]
fn a_batch_at_another_time_than_its_record_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    let record = WalRecord {
        progress: Vec::new(),
        stream_ends: Vec::new(),
        watermarks: Vec::new(),
        time: 5,
        changes: vec![(GlobalId(1), kv_change(4, &[(1, "a", 1)]))],
    };
    let err = wal.append_blocking(record).unwrap_err();
    assert!(
        matches!(err, StorageError::InvalidChangeBatch { .. }),
        "{err}"
    );
}

#[test]
fn a_torn_tail_is_cut_and_appends_continue() {
    let dir = tempfile::tempdir().unwrap();
    let segment;
    let good_len;
    {
        let (wal, _) = open(dir.path());
        segment = segments(dir.path()).remove(0);
        wal.append_blocking(kv_record(1, &[(1, &[(1, "a", 1)])]))
            .unwrap();
        wal.append_blocking(kv_record(2, &[(1, &[(2, "b", 1)])]))
            .unwrap();
        good_len = len(&segment);
        wal.append_blocking(kv_record(3, &[(1, &[(3, "c", 1)])]))
            .unwrap();
    }
    let full_len = len(&segment);
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .unwrap()
        .set_len(full_len - 3)
        .unwrap();
    {
        let (wal, replay) = open(dir.path());
        assert_eq!(kv_keys(&replay), vec![(1, 1, 1), (2, 1, 2)]);
        assert_eq!(len(&segment), good_len);
        wal.append_blocking(kv_record(4, &[(1, &[(4, "d", 1)])]))
            .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(kv_keys(&replay), vec![(1, 1, 1), (2, 1, 2), (4, 1, 4)]);
}

#[test]
fn a_bad_checksum_drops_only_the_last_record() {
    let dir = tempfile::tempdir().unwrap();
    let segment;
    let last_frame_offset;
    {
        let (wal, _) = open(dir.path());
        segment = segments(dir.path()).remove(0);
        wal.append_blocking(kv_record(1, &[(1, &[(1, "a", 1)])]))
            .unwrap();
        wal.append_blocking(kv_record(2, &[(1, &[(2, "b", 1)])]))
            .unwrap();
        last_frame_offset = len(&segment);
        wal.append_blocking(kv_record(3, &[(1, &[(3, "c", 1)])]))
            .unwrap();
    }
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes[last_frame_offset as usize + 5] ^= 0x40; // inside the CRC field
    std::fs::write(&segment, &bytes).unwrap();
    {
        let (wal, replay) = open(dir.path());
        assert_eq!(kv_keys(&replay), vec![(1, 1, 1), (2, 1, 2)]);
        assert_eq!(len(&segment), last_frame_offset);
        wal.append_blocking(kv_record(5, &[(1, &[(5, "e", 1)])]))
            .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(kv_keys(&replay), vec![(1, 1, 1), (2, 1, 2), (5, 1, 5)]);
}

#[test]
fn a_bad_record_in_an_earlier_segment_drops_the_later_segments() {
    let dir = tempfile::tempdir().unwrap();
    {
        // Tiny segments: every record gets its own.
        let (wal, _) = open_small(dir.path(), 1);
        for t in 1..=4 {
            wal.append_blocking(kv_record(t, &[(1, &[(t as i64, "x", 1)])]))
                .unwrap();
        }
    }
    let files = segments(dir.path());
    assert_eq!(files.len(), 4);
    let mut bytes = std::fs::read(&files[1]).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    std::fs::write(&files[1], &bytes).unwrap();
    {
        let (wal, replay) = open_small(dir.path(), 1);
        assert_eq!(kv_keys(&replay), vec![(1, 1, 1)]);
        assert_eq!(segments(dir.path()), files[..2].to_vec());
        assert_eq!(len(&files[1]), 0);
        wal.append_blocking(kv_record(9, &[(1, &[(9, "x", 1)])]))
            .unwrap();
    }
    let (_wal, replay) = open_small(dir.path(), 1);
    assert_eq!(kv_keys(&replay), vec![(1, 1, 1), (9, 1, 9)]);
}

#[test]
fn a_record_that_passes_its_checksum_but_does_not_decode_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = open(dir.path());
        wal.append_blocking(kv_record(1, &[(1, &[(1, "a", 1)])]))
            .unwrap();
    }
    let segment = segments(dir.path()).remove(0);
    let mut bytes = std::fs::read(&segment).unwrap();
    bytes.extend(segment::frame(b"\x01 not a record").unwrap());
    std::fs::write(&segment, &bytes).unwrap();
    let err = Wal::open(dir.path()).unwrap_err();
    assert!(matches!(err, StorageError::CorruptRecord { .. }), "{err}");
}

#[test]
fn segments_rotate_and_replay_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let expected: Vec<_> = (1..=30).map(|t| (t, 1, t as i64)).collect();
    {
        let (wal, _) = open_small(dir.path(), 4 << 10);
        for t in 1..=30u64 {
            wal.append_blocking(kv_record(t, &[(1, &[(t as i64, "some text", 1)])]))
                .unwrap();
        }
    }
    assert!(segments(dir.path()).len() > 3, "{:?}", segments(dir.path()));
    {
        let (wal, replay) = open_small(dir.path(), 4 << 10);
        assert_eq!(kv_keys(&replay), expected);
        wal.append_blocking(kv_record(31, &[(1, &[(31, "x", 1)])]))
            .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(kv_keys(&replay).len(), 31);
}

#[test]
fn concurrent_appends_are_all_durable_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    const THREADS: u64 = 4;
    const PER_THREAD: u64 = 50;
    {
        let (wal, _) = open(dir.path());
        let wal = Arc::new(wal);
        let writers: Vec<_> = (0..THREADS)
            .map(|table| {
                let wal = wal.clone();
                std::thread::spawn(move || {
                    for i in 0..PER_THREAD {
                        let time = table * 1_000 + i + 1;
                        wal.append_blocking(kv_record(time, &[(table, &[(i as i64, "v", 1)])]))
                            .unwrap();
                    }
                })
            })
            .collect();
        for writer in writers {
            writer.join().unwrap();
        }
    }
    let (_wal, replay) = open(dir.path());
    let keys = kv_keys(&replay);
    assert_eq!(keys.len() as u64, THREADS * PER_THREAD);
    for table in 0..THREADS {
        let mine: Vec<i64> = keys.iter().filter(|k| k.1 == table).map(|k| k.2).collect();
        assert_eq!(
            mine,
            (0..PER_THREAD as i64).collect::<Vec<_>>(),
            "table {table}"
        );
    }
}

#[test]
fn appends_are_acknowledged_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    let mut receivers: Vec<_> = (1..=200)
        .map(|t| {
            wal.enqueue(&kv_record(t, &[(1, &[(t as i64, "v", 1)])]))
                .unwrap()
        })
        .collect();
    let last = receivers.pop().unwrap();
    last.blocking_recv().unwrap().unwrap();
    for (i, mut earlier) in receivers.into_iter().enumerate() {
        assert!(
            matches!(earlier.try_recv(), Ok(Ok(()))),
            "record {i} not yet acknowledged"
        );
    }
}

#[test]
fn queued_appends_share_one_fsync() {
    let dir = tempfile::tempdir().unwrap();
    let (wal, _) = open(dir.path());
    let receivers = {
        // The writer cannot write while we hold the segments, so appends pile up.
        let _held = wal.shared.lock_log();
        (1..=50)
            .map(|t| {
                wal.enqueue(&kv_record(t, &[(1, &[(t as i64, "v", 1)])]))
                    .unwrap()
            })
            .collect::<Vec<_>>()
    };
    for receiver in receivers {
        receiver.blocking_recv().unwrap().unwrap();
    }
    // At most the group the writer took before blocking, then everything else at once.
    assert!(wal.shared.syncs.load(Ordering::Relaxed) <= 2);
    drop(wal);
    assert_eq!(kv_keys(&open(dir.path()).1).len(), 50);
}

#[test]
fn a_failed_write_fails_waiters_and_refuses_later_appends() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = open(dir.path());
        wal.append_blocking(kv_record(1, &[(1, &[(1, "a", 1)])]))
            .unwrap();
        {
            let mut log = wal.shared.lock_log();
            let read_only = std::fs::File::open(&log.active.path).unwrap();
            log.active.replace_file(read_only);
        }
        let err = wal
            .append_blocking(kv_record(2, &[(1, &[(2, "b", 1)])]))
            .unwrap_err();
        assert!(matches!(err, StorageError::WalFailed(_)), "{err}");
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let err = runtime
            .block_on(wal.append(kv_record(3, &[(1, &[(3, "c", 1)])])))
            .unwrap_err();
        assert!(matches!(err, StorageError::WalFailed(_)), "{err}");
        let err = wal
            .checkpoint(1, vec![], vec![], vec![], vec![])
            .unwrap_err();
        assert!(matches!(err, StorageError::WalFailed(_)), "{err}");
    }
    let (wal, replay) = open(dir.path());
    assert_eq!(kv_keys(&replay), vec![(1, 1, 1)]);
    wal.append_blocking(kv_record(4, &[(1, &[(4, "d", 1)])]))
        .unwrap();
}

#[test]
fn a_second_handle_on_the_same_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (_wal, _) = open(dir.path());
    let err = Wal::open(dir.path()).unwrap_err();
    assert!(matches!(err, StorageError::WalInUse { .. }), "{err}");
}

#[test]
fn checkpoint_then_reopen_yields_the_snapshot_and_later_records_only() {
    let dir = tempfile::tempdir().unwrap();
    let history = [
        kv_record(1, &[(1, &[(1, "a", 1), (2, "b", 1)])]),
        kv_record(
            2,
            &[(1, &[(1, "a", -1), (1, "aa", 1)]), (2, &[(7, "x", 1)])],
        ),
        kv_record(3, &[(1, &[(2, "b", -1)])]),
        kv_record(4, &[(2, &[(8, "y", 1)])]),
    ];
    {
        let (wal, _) = open(dir.path());
        for record in &history[..3] {
            wal.append_blocking(record.clone()).unwrap();
        }
        wal.checkpoint(
            2,
            snapshot_of(&kv_contents(&history[..2])),
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
        wal.append_blocking(history[3].clone()).unwrap();
        let err = wal
            .append_blocking(kv_record(2, &[(1, &[(9, "late", 1)])]))
            .unwrap_err();
        assert!(matches!(
            err,
            StorageError::TimeNotAfterCheckpoint {
                time: 2,
                through: 2
            }
        ));
    }
    // The first segment holds time 3, after the checkpoint: it must stay.
    assert_eq!(segments(dir.path()).len(), 2);
    {
        let (wal, replay) = open(dir.path());
        assert_eq!(replay[0].time, 2);
        assert_eq!(kv_contents(&replay[..1]), kv_contents(&history[..2]));
        assert_eq!(
            kv_keys(&replay[1..]),
            vec![(3, 1, 2), (4, 2, 8)],
            "only records after the checkpoint follow the snapshot"
        );
        assert_eq!(kv_contents(&replay), kv_contents(&history));
        let err = wal
            .append_blocking(kv_record(1, &[(1, &[(9, "late", 1)])]))
            .unwrap_err();
        assert!(
            matches!(err, StorageError::TimeNotAfterCheckpoint { .. }),
            "{err}"
        );

        wal.checkpoint(
            4,
            snapshot_of(&kv_contents(&history)),
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
        // Not past the previous checkpoint: nothing happens, even with a wrong snapshot.
        wal.checkpoint(3, vec![], vec![], vec![], vec![]).unwrap();
    }
    assert_eq!(
        file_names(dir.path()),
        vec![snapshot_file_name(4), segment_file_name(4)],
        "old segments and the old snapshot are gone; a fresh segment takes appends"
    );
    let (_wal, replay) = open(dir.path());
    assert_eq!(replay.len(), 1);
    assert_eq!(replay[0].time, 4);
    assert_eq!(kv_contents(&replay), kv_contents(&history));
}

#[test]
fn large_tables_are_snapshotted_in_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let rows: Vec<(i64, &str, Diff)> = (0..150_000).map(|k| (k, "v", 1)).collect();
    {
        let (wal, _) = open(dir.path());
        wal.checkpoint(
            1,
            vec![(GlobalId(3), kv_change(0, &rows))],
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(replay[0].changes.len(), 3);
    let contents = kv_contents(&replay);
    assert_eq!(contents.len(), 150_000);
    assert_eq!(
        contents.keys().next_back(),
        Some(&(3, 149_999, "v".to_string()))
    );
}

#[test]
fn a_corrupt_snapshot_fails_the_open() {
    let dir = tempfile::tempdir().unwrap();
    {
        let (wal, _) = open(dir.path());
        wal.checkpoint(
            1,
            snapshot_of(&kv_contents(&[kv_record(1, &[(1, &[(1, "a", 1)])])])),
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
    }
    let path = dir.path().join(snapshot_file_name(1));
    let mut bytes = std::fs::read(&path).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    let err = Wal::open(dir.path()).unwrap_err();
    assert!(matches!(err, StorageError::CorruptSnapshot { .. }), "{err}");
}

/// Copies the WAL files of `from` into a fresh directory.
fn copy_dir(from: &Path) -> tempfile::TempDir {
    let to = tempfile::tempdir().unwrap();
    for name in file_names(from) {
        std::fs::copy(from.join(&name), to.path().join(&name)).unwrap();
    }
    to
}

#[test]
fn every_crash_point_of_a_checkpoint_reopens_to_the_same_contents() {
    let history = [
        kv_record(1, &[(1, &[(1, "a", 1), (2, "b", 1)])]),
        kv_record(2, &[(2, &[(10, "x", 1)])]),
        kv_record(3, &[(1, &[(1, "a", -1), (1, "aa", 1)])]),
        kv_record(4, &[(1, &[(2, "b", -1)]), (2, &[(11, "y", 1)])]),
    ];
    let expected = kv_contents(&history);

    // Before: a checkpoint through 2, then one segment per record for times 3 and 4.
    let before = tempfile::tempdir().unwrap();
    {
        let (wal, _) = open_small(before.path(), 1);
        for record in &history[..2] {
            wal.append_blocking(record.clone()).unwrap();
        }
        wal.checkpoint(
            2,
            snapshot_of(&kv_contents(&history[..2])),
            vec![],
            vec![],
            vec![],
        )
        .unwrap();
        for record in &history[2..] {
            wal.append_blocking(record.clone()).unwrap();
        }
    }
    let old_segments = segments(before.path());
    assert_eq!(old_segments.len(), 2);
    let old_snapshot = snapshot_file_name(2);
    assert!(before.path().join(&old_snapshot).exists());

    // After: the checkpoint through 4 run for real, to get its files.
    let after = copy_dir(before.path());
    {
        let (wal, _) = open_small(after.path(), 1);
        wal.checkpoint(4, snapshot_of(&expected), vec![], vec![], vec![])
            .unwrap();
    }
    let new_snapshot_name = snapshot_file_name(4);
    let new_snapshot = std::fs::read(after.path().join(&new_snapshot_name)).unwrap();
    let new_segment = segments(after.path()).pop().unwrap();
    let new_segment_name = new_segment.file_name().unwrap().to_owned();
    assert_eq!(
        file_names(after.path()),
        vec![new_snapshot_name.clone(), segment_file_name(4)]
    );

    let tmp_name = temporary_file_name(&new_snapshot_name);
    let old_segment_names: Vec<_> = old_segments
        .iter()
        .map(|p| p.file_name().unwrap().to_owned())
        .collect();
    // Each crash point as the files it leaves: (name, what to do).
    type Step<'a> = Box<dyn Fn(&Path) + 'a>;
    let rotated: Step = Box::new(|d| std::fs::write(d.join(&new_segment_name), b"").unwrap());
    let half_tmp: Step = Box::new(|d| {
        std::fs::write(d.join(&tmp_name), &new_snapshot[..new_snapshot.len() / 2]).unwrap()
    });
    let full_tmp: Step = Box::new(|d| std::fs::write(d.join(&tmp_name), &new_snapshot).unwrap());
    let renamed: Step =
        Box::new(|d| std::fs::rename(d.join(&tmp_name), d.join(&new_snapshot_name)).unwrap());
    let first_deleted: Step =
        Box::new(|d| std::fs::remove_file(d.join(&old_segment_names[0])).unwrap());
    let second_deleted: Step =
        Box::new(|d| std::fs::remove_file(d.join(&old_segment_names[1])).unwrap());
    let old_snapshot_deleted: Step =
        Box::new(|d| std::fs::remove_file(d.join(&old_snapshot)).unwrap());
    let steps = [
        ("new segment created", rotated),
        ("snapshot half written", half_tmp),
        ("snapshot written, not renamed", full_tmp),
        ("snapshot renamed", renamed),
        ("first old segment deleted", first_deleted),
        ("second old segment deleted", second_deleted),
        ("old snapshot deleted", old_snapshot_deleted),
    ];

    for crash_after in 0..=steps.len() {
        let state = copy_dir(before.path());
        for (_, step) in &steps[..crash_after] {
            step(state.path());
        }
        let point = if crash_after == 0 {
            "before the checkpoint"
        } else {
            steps[crash_after - 1].0
        };
        {
            let (wal, replay) = open_small(state.path(), 1);
            assert_eq!(kv_contents(&replay), expected, "crash point: {point}");
            let through = replay[0].time;
            let snapshot_in_place = crash_after >= 4;
            assert_eq!(
                through,
                if snapshot_in_place { 4 } else { 2 },
                "crash point: {point}"
            );
            assert!(
                replay[1..].iter().all(|r| r.time > through),
                "crash point: {point}: a record at or before the snapshot is replayed"
            );
            assert!(
                !state.path().join(&tmp_name).exists(),
                "crash point: {point}"
            );
            wal.append_blocking(kv_record(5, &[(2, &[(12, "z", 1)])]))
                .unwrap();
        }
        let (_wal, replay) = open_small(state.path(), 1);
        let mut with_five = expected.clone();
        with_five.insert((2, 12, "z".into()), 1);
        assert_eq!(
            kv_contents(&replay),
            with_five,
            "crash point: {point}, after an append"
        );
    }
}

#[test]
fn a_log_of_only_a_snapshot_gets_a_fresh_segment() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path()).unwrap();
    checkpoint::write_snapshot(
        dir.path(),
        &WalRecord {
            time: 9,
            changes: snapshot_of(&kv_contents(&[kv_record(9, &[(1, &[(1, "a", 1)])])])),
            progress: Vec::new(),
            stream_ends: Vec::new(),
            watermarks: Vec::new(),
        },
    )
    .unwrap();
    {
        let (wal, replay) = open(dir.path());
        assert_eq!(kv_keys(&replay), vec![(9, 1, 1)]);
        wal.append_blocking(kv_record(10, &[(1, &[(2, "b", 1)])]))
            .unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(kv_keys(&replay), vec![(9, 1, 1), (10, 1, 2)]);
}

#[test]
fn source_positions_and_stream_ends_survive_restarts_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let with_position = |time, position: &str| {
        let mut record = kv_record(time, &[(1, &[(time as i64, "x", 1)])]);
        record.progress = vec![(GlobalId(5), position.to_string())];
        record.stream_ends = vec![(GlobalId(5), time * 100)];
        record
    };
    {
        let (wal, _) = open(dir.path());
        wal.append_blocking(with_position(1, "10")).unwrap();
        wal.append_blocking(with_position(2, "20")).unwrap();
    }
    {
        let (wal, replay) = open(dir.path());
        let positions: Vec<_> = replay.iter().flat_map(|r| r.progress.clone()).collect();
        assert_eq!(
            positions,
            vec![
                (GlobalId(5), "10".to_string()),
                (GlobalId(5), "20".to_string())
            ]
        );
        wal.checkpoint(
            2,
            snapshot_of(&kv_contents(&replay)),
            vec![(GlobalId(5), "20".to_string())],
            vec![(GlobalId(5), 200)],
            vec![(GlobalId(5), 1_000)],
        )
        .unwrap();
        wal.append_blocking(with_position(3, "30")).unwrap();
    }
    let (_wal, replay) = open(dir.path());
    assert_eq!(replay.len(), 2, "the snapshot and the record after it");
    assert_eq!(replay[0].progress, vec![(GlobalId(5), "20".to_string())]);
    assert_eq!(replay[1].progress, vec![(GlobalId(5), "30".to_string())]);
    assert_eq!(replay[0].stream_ends, vec![(GlobalId(5), 200)]);
    assert_eq!(replay[1].stream_ends, vec![(GlobalId(5), 300)]);
    assert_eq!(replay[0].watermarks, vec![(GlobalId(5), 1_000)]);
}
