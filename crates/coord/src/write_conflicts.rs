//! Writes that read without the sequencer: what such a write read, what the commits ordered
//! meanwhile wrote, and the check between the two.
//!
//! An UPDATE, DELETE or INSERT that commits by itself reads before it writes (the rows it
//! changes, the keys it must not duplicate). Holding the sequencer through that read would
//! serialize every writer, so it reads a snapshot of every commit ordered so far (the
//! visible time and the commits in flight), recording what it read: the primary keys it
//! looked up in each table, or the whole table. When it commits, under the sequencer, the
//! [`RecentWrites`] of the commits ordered after its snapshot must not touch anything it
//! read; otherwise it is run again (see [`crate::write`]). Reads that cannot be checked this
//! way (a view, a source, a stream) make it run again holding the sequencer throughout.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Mutex;

use repr::{GlobalId, Row, Timestamp};

/// The rows of one table a statement read.
#[derive(Debug)]
enum TableRead {
    /// Only rows with these primary keys.
    Keys(BTreeSet<Row>),
    /// Any row.
    All,
}

/// What one statement read, recorded as it reads.
#[derive(Debug, Default)]
pub(crate) struct ReadSet {
    reads: Mutex<Reads>,
}

#[derive(Debug, Default)]
struct Reads {
    tables: BTreeMap<GlobalId, TableRead>,
    /// A relation whose changes are not recorded as writes to it (a view, a source).
    untracked: bool,
}

impl ReadSet {
    /// Records a read of the rows of `table` with primary key `key`.
    pub fn key(&self, table: GlobalId, key: Row) {
        self.keys(table, [key]);
    }

    /// Records a read of the rows of `table` with these primary keys.
    pub fn keys(&self, table: GlobalId, keys: impl IntoIterator<Item = Row>) {
        let mut reads = self.lock();
        match reads
            .tables
            .entry(table)
            .or_insert_with(|| TableRead::Keys(BTreeSet::new()))
        {
            TableRead::Keys(read) => read.extend(keys),
            TableRead::All => {}
        }
    }

    /// Records a read of every row of `table`.
    pub fn all(&self, table: GlobalId) {
        self.lock().tables.insert(table, TableRead::All);
    }

    /// Records a read of a relation whose changes cannot be checked.
    pub fn untracked(&self) {
        self.lock().untracked = true;
    }

    /// Whether a read could not be recorded in a form that can be checked.
    pub fn is_untracked(&self) -> bool {
        self.lock().untracked
    }

    /// The tables read.
    pub fn tables(&self) -> Vec<GlobalId> {
        self.lock().tables.keys().copied().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Reads> {
        self.reads.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// Keys kept across all remembered commits; older commits are forgotten beyond it.
const MAX_REMEMBERED_KEYS: usize = 1 << 16;
/// A commit that writes more keys of one table is remembered as writing all of it.
const MAX_KEYS_PER_WRITE: usize = 1024;

/// The keys the latest commits wrote, table by table, oldest first.
#[derive(Debug)]
pub(crate) struct RecentWrites {
    log: Mutex<WriteLog>,
}

#[derive(Debug)]
struct WriteLog {
    writes: VecDeque<TableWrite>,
    /// Keys held by `writes` (a write of all keys counts one).
    keys: usize,
    /// The latest time of a forgotten write: a snapshot older than this cannot be checked.
    forgotten_through: Timestamp,
}

#[derive(Debug)]
struct TableWrite {
    time: Timestamp,
    table: GlobalId,
    /// The keys written (`None`: too many to keep, any key).
    keys: Option<BTreeSet<Row>>,
}

impl RecentWrites {
    /// Nothing remembered; snapshots through `floor` can be checked.
    pub fn new(floor: Timestamp) -> Self {
        Self {
            log: Mutex::new(WriteLog {
                writes: VecDeque::new(),
                keys: 0,
                forgotten_through: floor,
            }),
        }
    }

    /// Remembers that the commit at `time` (later than every remembered one) wrote these keys
    /// of `table`. The caller holds the sequencer.
    pub fn record<'a>(
        &self,
        time: Timestamp,
        table: GlobalId,
        keys: impl ExactSizeIterator<Item = &'a Row>,
    ) {
        let keys = (keys.len() <= MAX_KEYS_PER_WRITE).then(|| keys.cloned().collect());
        let mut log = self.lock();
        log.keys += keys.as_ref().map_or(1, BTreeSet::len);
        log.writes.push_back(TableWrite { time, table, keys });
        while log.keys > MAX_REMEMBERED_KEYS {
            let Some(forgotten) = log.writes.pop_front() else {
                break;
            };
            log.keys -= forgotten.keys.as_ref().map_or(1, BTreeSet::len);
            log.forgotten_through = log.forgotten_through.max(forgotten.time);
        }
    }

    /// Whether a commit after `through` wrote something `read` read (or may have: a write too
    /// old to be remembered, a read that cannot be checked). The caller holds the sequencer.
    pub fn changed_since(&self, through: Timestamp, read: &ReadSet) -> bool {
        let read = read.lock();
        let log = self.lock();
        if read.untracked || through < log.forgotten_through {
            return true;
        }
        log.writes
            .iter()
            .rev()
            .take_while(|write| write.time > through)
            .any(|write| match (read.tables.get(&write.table), &write.keys) {
                (None, _) => false,
                (Some(TableRead::All), _) | (Some(TableRead::Keys(_)), None) => true,
                (Some(TableRead::Keys(read)), Some(written)) => {
                    read.iter().any(|key| written.contains(key))
                }
            })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, WriteLog> {
        self.log.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(byte: u8) -> Row {
        Row::from_bytes(&[byte])
    }

    const T1: GlobalId = GlobalId(1);
    const T2: GlobalId = GlobalId(2);

    #[test]
    fn only_later_writes_of_read_keys_conflict() {
        let recent = RecentWrites::new(0);
        recent.record(5, T1, [key(1)].iter());
        recent.record(6, T2, [key(2)].iter());
        let read = ReadSet::default();
        read.key(T1, key(1));
        assert!(recent.changed_since(4, &read), "key 1 written at 5");
        assert!(!recent.changed_since(5, &read), "the snapshot holds time 5");
        read.key(T2, key(3));
        assert!(!recent.changed_since(5, &read), "another key of T2");
        read.all(T2);
        assert!(recent.changed_since(5, &read), "all of T2 read");
    }

    #[test]
    fn large_writes_and_forgotten_ones_conflict() {
        let recent = RecentWrites::new(10);
        let read = ReadSet::default();
        read.key(T1, key(1));
        assert!(recent.changed_since(9, &read), "before the floor");
        recent.record(11, T2, [key(0)].iter());
        assert!(!recent.changed_since(10, &read), "only T2 written");
        for time in 12..12 + MAX_REMEMBERED_KEYS as Timestamp {
            recent.record(time, T2, [key(0)].iter());
        }
        assert!(
            recent.changed_since(10, &read),
            "time 11 was forgotten: a snapshot before it cannot be checked"
        );
        assert!(
            !recent.changed_since(11, &read),
            "a snapshot holding 11 can"
        );
        let many: Vec<Row> = (0..=MAX_KEYS_PER_WRITE)
            .map(|i| Row::from_bytes(&i.to_be_bytes()))
            .collect();
        let latest = 12 + MAX_REMEMBERED_KEYS as Timestamp;
        recent.record(latest, T1, many.iter());
        assert!(
            recent.changed_since(latest - 1, &read),
            "a write of too many keys is a write of all"
        );
    }

    #[test]
    fn untracked_reads_always_conflict() {
        let recent = RecentWrites::new(0);
        let read = ReadSet::default();
        read.untracked();
        assert!(recent.changed_since(0, &read));
    }
}
