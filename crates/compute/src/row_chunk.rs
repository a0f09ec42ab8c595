//! Flat chunks of `((key row, value row), time, diff)` updates, for the batchers of row-keyed
//! arrangements.
//!
//! Before an arrangement seals updates into a batch, its batcher sorts, consolidates and merges
//! them. Held as `Vec<((Row, Row), time, diff)>`, every update is two heap rows, every
//! comparison follows two pointers into memory the cache has not seen, and every merge moves
//! the rows' owners. A [`RowChunk`] keeps its rows' bytes back to back in one buffer and, beside
//! each update, the first eight bytes of its key: comparisons of different keys mostly decide
//! on that prefix and read nothing else, and merging copies bytes from buffer to buffer.
//!
//! [`RowChunkMerger`] merges and splits chains of chunks for differential's `MergeBatcher`, and
//! a chain of chunks seals into the same flat batches as before (see `arrangement`).

use std::cmp::Ordering;

use differential_dataflow::batcher::merge::{Extractor, Merger};
use differential_dataflow::consolidation::Consolidate;
use differential_dataflow::trace::implementations::ord_neu::BuilderInput;
use differential_dataflow::trace::implementations::BatchContainer;
use repr::{Diff, Row, Timestamp};
use timely::container::{Accountable, DrainContainer, PushInto, SizableContainer};
use timely::progress::frontier::{Antichain, AntichainRef};

use crate::row_container::{RowContainer, RowRef};

/// The updates a chunk holds before the batcher counts it full.
const CHUNK_UPDATES: usize = 4096;

/// The row bytes a chunk holds before the batcher counts it full.
const CHUNK_BYTES: usize = 256 * 1024;

/// One update of a [`RowChunk`]: where its rows are, its key's prefix, its time and diff.
#[derive(Clone, Copy, Debug)]
struct Entry {
    /// The key's first eight bytes, big-endian and zero-padded: when two prefixes differ, the
    /// keys differ the same way.
    prefix: u64,
    /// Where the key's bytes begin in the chunk's buffer; the value's follow them.
    start: usize,
    key_len: usize,
    value_len: usize,
    time: Timestamp,
    diff: Diff,
}

/// A chunk of `((key row, value row), time, diff)` updates with the rows' bytes in one buffer.
#[derive(Default)]
pub(crate) struct RowChunk {
    bytes: Vec<u8>,
    entries: Vec<Entry>,
}

impl RowChunk {
    fn key(&self, entry: &Entry) -> &[u8] {
        &self.bytes[entry.start..entry.start + entry.key_len]
    }

    fn value(&self, entry: &Entry) -> &[u8] {
        let start = entry.start + entry.key_len;
        &self.bytes[start..start + entry.value_len]
    }

    fn push(&mut self, key: &[u8], value: &[u8], time: Timestamp, diff: Diff) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(key);
        self.bytes.extend_from_slice(value);
        self.entries.push(Entry {
            prefix: key_prefix(key),
            start,
            key_len: key.len(),
            value_len: value.len(),
            time,
            diff,
        });
    }

    /// Appends `entry` of `other` with `diff` in place of its own.
    fn push_from(&mut self, other: &RowChunk, entry: &Entry, diff: Diff) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(
            &other.bytes[entry.start..entry.start + entry.key_len + entry.value_len],
        );
        self.entries.push(Entry {
            start,
            diff,
            ..*entry
        });
    }

    fn len(&self) -> usize {
        self.entries.len()
    }

    fn is_full(&self) -> bool {
        self.entries.len() >= CHUNK_UPDATES || self.bytes.len() >= CHUNK_BYTES
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.entries.clear();
    }
}

/// A key's first eight bytes as a big-endian integer, zero-padded.
fn key_prefix(key: &[u8]) -> u64 {
    let mut prefix = [0u8; 8];
    let len = key.len().min(8);
    prefix[..len].copy_from_slice(&key[..len]);
    u64::from_be_bytes(prefix)
}

/// Orders two updates by key, value and time, as `((Row, Row), Timestamp)` order.
fn compare(left: &RowChunk, a: &Entry, right: &RowChunk, b: &Entry) -> Ordering {
    a.prefix
        .cmp(&b.prefix)
        .then_with(|| left.key(a).cmp(right.key(b)))
        .then_with(|| left.value(a).cmp(right.value(b)))
        .then_with(|| a.time.cmp(&b.time))
}

impl Accountable for RowChunk {
    fn record_count(&self) -> i64 {
        i64::try_from(self.entries.len()).unwrap_or(i64::MAX)
    }
}

impl PushInto<((Row, Row), Timestamp, Diff)> for RowChunk {
    fn push_into(&mut self, ((key, value), time, diff): ((Row, Row), Timestamp, Diff)) {
        self.push(key.as_bytes(), value.as_bytes(), time, diff);
    }
}

impl SizableContainer for RowChunk {
    fn at_capacity(&self) -> bool {
        self.is_full()
    }

    fn ensure_capacity(&mut self, _stash: &mut Option<Self>) {}
}

impl Consolidate for RowChunk {
    fn len(&self) -> usize {
        self.entries.len()
    }

    fn clear(&mut self) {
        RowChunk::clear(self);
    }

    /// Sorts the updates and writes them to `target` consolidated: one update per `(key,
    /// value, time)`, none with a zero diff, and no bytes of the updates that cancelled.
    fn consolidate_into(&mut self, target: &mut Self) {
        let mut entries = std::mem::take(&mut self.entries);
        entries.sort_unstable_by(|a, b| compare(self, a, self, b));
        target.clear();
        let mut pending: Option<Entry> = None;
        for entry in entries.drain(..) {
            match &mut pending {
                Some(sum) if compare(self, sum, self, &entry) == Ordering::Equal => {
                    sum.diff += entry.diff;
                }
                _ => {
                    if let Some(sum) = pending.replace(entry) {
                        if sum.diff != 0 {
                            target.push_from(self, &sum, sum.diff);
                        }
                    }
                }
            }
        }
        if let Some(sum) = pending.filter(|sum| sum.diff != 0) {
            target.push_from(self, &sum, sum.diff);
        }
        self.entries = entries;
    }
}

/// Drains a [`RowChunk`] as borrowed `(key, value, time, diff)` updates.
pub(crate) struct RowChunkDrain<'a> {
    bytes: &'a [u8],
    entries: std::vec::Drain<'a, Entry>,
}

impl<'a> Iterator for RowChunkDrain<'a> {
    type Item = (RowRef<'a>, RowRef<'a>, Timestamp, Diff);

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.entries.next()?;
        let key_end = entry.start + entry.key_len;
        Some((
            RowRef::new(&self.bytes[entry.start..key_end]),
            RowRef::new(&self.bytes[key_end..key_end + entry.value_len]),
            entry.time,
            entry.diff,
        ))
    }
}

impl DrainContainer for RowChunk {
    type Item<'a> = (RowRef<'a>, RowRef<'a>, Timestamp, Diff);
    type DrainIter<'a> = RowChunkDrain<'a>;

    fn drain(&mut self) -> RowChunkDrain<'_> {
        RowChunkDrain {
            bytes: &self.bytes,
            entries: self.entries.drain(..),
        }
    }
}

/// How a sorted chain of chunks seals into a batch with flat keys and values.
impl BuilderInput<RowContainer, RowContainer> for RowChunk {
    type Key<'a> = RowRef<'a>;
    type Val<'a> = RowRef<'a>;
    type Time = Timestamp;
    type Diff = Diff;

    fn into_parts<'a>(item: Self::Item<'a>) -> (RowRef<'a>, RowRef<'a>, Timestamp, Diff) {
        item
    }

    fn key_eq(this: &RowRef<'_>, other: RowRef<'_>) -> bool {
        *this == RowContainer::reborrow(other)
    }

    fn val_eq(this: &RowRef<'_>, other: RowRef<'_>) -> bool {
        *this == RowContainer::reborrow(other)
    }

    fn key_val_upd_counts(chain: &[Self]) -> (usize, usize, usize) {
        let (mut keys, mut values, mut updates) = (0, 0, 0);
        let mut previous: Option<(&[u8], &[u8])> = None;
        for chunk in chain {
            for entry in &chunk.entries {
                let (key, value) = (chunk.key(entry), chunk.value(entry));
                match previous {
                    Some((previous_key, _)) if previous_key != key => {
                        keys += 1;
                        values += 1;
                    }
                    Some((_, previous_value)) if previous_value != value => values += 1,
                    Some(_) => {}
                    None => {
                        keys += 1;
                        values += 1;
                    }
                }
                updates += 1;
                previous = Some((key, value));
            }
        }
        (keys, values, updates)
    }
}

/// Merges sorted chains of [`RowChunk`]s, and splits them by time, for a `MergeBatcher`.
#[derive(Default)]
pub(crate) struct RowChunkMerger;

/// An empty chunk, from `stash` when it has one.
fn empty_chunk(stash: &mut Vec<RowChunk>) -> RowChunk {
    let mut chunk = stash.pop().unwrap_or_default();
    chunk.clear();
    chunk
}

/// The empty chunks a merge keeps for reuse: enough to refill its output as it goes, not a
/// copy of everything it consumed.
const STASHED_CHUNKS: usize = 2;

/// Keeps `chunk`'s buffers for reuse if `stash` has room; drops it otherwise.
fn recycle(mut chunk: RowChunk, stash: &mut Vec<RowChunk>) {
    if stash.len() < STASHED_CHUNKS {
        chunk.clear();
        stash.push(chunk);
    }
}

/// Pushes `chunk` to `chain` if it holds updates, leaving an empty one in its place.
fn ship(chunk: &mut RowChunk, chain: &mut Vec<RowChunk>, stash: &mut Vec<RowChunk>) {
    if chunk.len() > 0 {
        chain.push(std::mem::replace(chunk, empty_chunk(stash)));
    }
}

/// A position in a chain of chunks being merged.
struct ChainCursor {
    chunks: std::vec::IntoIter<RowChunk>,
    chunk: Option<RowChunk>,
    index: usize,
}

impl ChainCursor {
    fn new(chain: Vec<RowChunk>) -> Self {
        let mut chunks = chain.into_iter();
        let chunk = chunks.next();
        let mut cursor = Self {
            chunks,
            chunk,
            index: 0,
        };
        cursor.skip_exhausted(&mut Vec::new());
        cursor
    }

    /// Moves past chunks whose updates are all consumed, recycling them into `stash`.
    fn skip_exhausted(&mut self, stash: &mut Vec<RowChunk>) {
        while self
            .chunk
            .as_ref()
            .is_some_and(|chunk| self.index >= chunk.len())
        {
            if let Some(done) = self.chunk.take() {
                recycle(done, stash);
            }
            self.chunk = self.chunks.next();
            self.index = 0;
        }
    }

    fn current(&self) -> Option<(&RowChunk, Entry)> {
        self.chunk
            .as_ref()
            .map(|chunk| (chunk, chunk.entries[self.index]))
    }

    /// Copies what is left of the current chunk into `result` (shipping full chunks to
    /// `output`), then moves the untouched chunks after it to `output` whole.
    fn drain_into(
        mut self,
        result: &mut RowChunk,
        output: &mut Vec<RowChunk>,
        stash: &mut Vec<RowChunk>,
    ) {
        if let Some(chunk) = self.chunk.take() {
            for entry in &chunk.entries[self.index..] {
                result.push_from(&chunk, entry, entry.diff);
                if result.is_full() {
                    ship(result, output, stash);
                }
            }
        }
        ship(result, output, stash);
        output.extend(self.chunks);
    }
}

impl Merger for RowChunkMerger {
    type Chunk = RowChunk;

    fn merge(
        &mut self,
        list1: Vec<RowChunk>,
        list2: Vec<RowChunk>,
        output: &mut Vec<RowChunk>,
        stash: &mut Vec<RowChunk>,
    ) {
        let mut left = ChainCursor::new(list1);
        let mut right = ChainCursor::new(list2);
        let mut result = empty_chunk(stash);
        loop {
            let (left_step, right_step) = {
                let (Some((left_chunk, a)), Some((right_chunk, b))) =
                    (left.current(), right.current())
                else {
                    break;
                };
                match compare(left_chunk, &a, right_chunk, &b) {
                    Ordering::Less => {
                        result.push_from(left_chunk, &a, a.diff);
                        (1, 0)
                    }
                    Ordering::Greater => {
                        result.push_from(right_chunk, &b, b.diff);
                        (0, 1)
                    }
                    Ordering::Equal => {
                        let diff = a.diff + b.diff;
                        if diff != 0 {
                            result.push_from(left_chunk, &a, diff);
                        }
                        (1, 1)
                    }
                }
            };
            left.index += left_step;
            right.index += right_step;
            if result.is_full() {
                ship(&mut result, output, stash);
            }
            left.skip_exhausted(stash);
            right.skip_exhausted(stash);
        }
        left.drain_into(&mut result, output, stash);
        right.drain_into(&mut result, output, stash);
    }

    fn len(chunk: &RowChunk) -> usize {
        chunk.len()
    }

    fn allocation(chunk: &RowChunk) -> (usize, usize, usize) {
        let entry = std::mem::size_of::<Entry>();
        (
            chunk.bytes.len() + chunk.entries.len() * entry,
            chunk.bytes.capacity() + chunk.entries.capacity() * entry,
            2,
        )
    }
}

impl Extractor for RowChunkMerger {
    type Time = Timestamp;

    fn extract(
        &mut self,
        merged: Vec<RowChunk>,
        upper: AntichainRef<Timestamp>,
        frontier: &mut Antichain<Timestamp>,
        readied: &mut Vec<RowChunk>,
        kept: &mut Vec<RowChunk>,
        stash: &mut Vec<RowChunk>,
    ) {
        let mut keep = empty_chunk(stash);
        let mut ready = empty_chunk(stash);
        for chunk in merged {
            let kept_updates = chunk
                .entries
                .iter()
                .filter(|entry| upper.less_equal(&entry.time))
                .count();
            if kept_updates == 0 {
                ship(&mut ready, readied, stash);
                readied.push(chunk);
                continue;
            }
            for entry in &chunk.entries {
                if upper.less_equal(&entry.time) {
                    frontier.insert(entry.time);
                }
            }
            if kept_updates == chunk.len() {
                ship(&mut keep, kept, stash);
                kept.push(chunk);
                continue;
            }
            for entry in &chunk.entries {
                let (target, chain) = if upper.less_equal(&entry.time) {
                    (&mut keep, &mut *kept)
                } else {
                    (&mut ready, &mut *readied)
                };
                target.push_from(&chunk, entry, entry.diff);
                if target.is_full() {
                    ship(target, chain, stash);
                }
            }
            recycle(chunk, stash);
        }
        ship(&mut keep, kept, stash);
        ship(&mut ready, readied, stash);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(bytes: &[u8]) -> Row {
        Row::from_bytes(bytes)
    }

    /// The chunk's updates as owned tuples, in order.
    fn updates(chunk: &mut RowChunk) -> Vec<((Row, Row), Timestamp, Diff)> {
        chunk
            .drain()
            .map(|(key, value, time, diff)| ((key.to_row(), value.to_row()), time, diff))
            .collect()
    }

    fn chunk_of(updates: &[((Row, Row), Timestamp, Diff)]) -> RowChunk {
        let mut chunk = RowChunk::default();
        for update in updates {
            chunk.push_into(update.clone());
        }
        chunk
    }

    /// Keys that share and differ in their first eight bytes, and keys shorter than eight.
    fn keys() -> Vec<Row> {
        [
            &b""[..],
            b"\0",
            b"a",
            b"a\0",
            b"a\x01",
            b"abcdefgh",
            b"abcdefgh\0",
            b"abcdefghi",
            b"abcdefgi",
            b"\xff\xff\xff\xff\xff\xff\xff\xff\xff",
        ]
        .iter()
        .map(|bytes| row(bytes))
        .collect()
    }

    /// Pseudo-random updates over `keys()`, with repeats that cancel and repeats that add up.
    fn random_updates(seed: u64, count: usize) -> Vec<((Row, Row), Timestamp, Diff)> {
        let keys = keys();
        let mut state = seed;
        let mut next = move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            state >> 33
        };
        (0..count)
            .map(|_| {
                let key = keys[next() as usize % keys.len()].clone();
                let value = keys[next() as usize % 3].clone();
                let time = next() % 4;
                let diff = [-1, 1, 1, 2][next() as usize % 4];
                ((key, value), time, diff)
            })
            .collect()
    }

    /// What sorting and consolidating the updates as owned tuples gives.
    fn consolidated(
        mut updates: Vec<((Row, Row), Timestamp, Diff)>,
    ) -> Vec<((Row, Row), Timestamp, Diff)> {
        differential_dataflow::consolidation::consolidate_updates(&mut updates);
        updates
    }

    #[test]
    fn prefixes_order_keys_as_their_bytes_do() {
        let keys = keys();
        for a in &keys {
            for b in &keys {
                let (pa, pb) = (key_prefix(a.as_bytes()), key_prefix(b.as_bytes()));
                if pa != pb {
                    assert_eq!(pa.cmp(&pb), a.cmp(b), "{a:?} against {b:?}");
                }
            }
        }
    }

    #[test]
    fn consolidating_a_chunk_agrees_with_consolidating_tuples() {
        for seed in 0..20 {
            let input = random_updates(seed, 300);
            let mut chunk = chunk_of(&input);
            let mut target = RowChunk::default();
            chunk.consolidate_into(&mut target);
            assert_eq!(updates(&mut target), consolidated(input), "seed {seed}");
        }
    }

    /// Sorted, consolidated chains of small chunks, as the batcher's ladder holds them.
    fn chain_of(updates: Vec<((Row, Row), Timestamp, Diff)>, per_chunk: usize) -> Vec<RowChunk> {
        consolidated(updates)
            .chunks(per_chunk)
            .map(chunk_of)
            .collect()
    }

    fn flatten(chain: Vec<RowChunk>) -> Vec<((Row, Row), Timestamp, Diff)> {
        chain
            .into_iter()
            .flat_map(|mut chunk| updates(&mut chunk))
            .collect()
    }

    #[test]
    fn merging_chains_agrees_with_consolidating_their_union() {
        for seed in 0..20 {
            let first = random_updates(seed, 200);
            let second = random_updates(seed + 100, 150);
            let mut output = Vec::new();
            RowChunkMerger.merge(
                chain_of(first.clone(), 7),
                chain_of(second.clone(), 5),
                &mut output,
                &mut Vec::new(),
            );
            let expected = consolidated(first.into_iter().chain(second).collect());
            assert_eq!(flatten(output), expected, "seed {seed}");
        }
    }

    #[test]
    fn extracting_splits_by_time_and_reports_the_kept_frontier() {
        for seed in 0..20 {
            let input = consolidated(random_updates(seed, 200));
            let upper = Antichain::from_elem(2);
            let (mut frontier, mut readied, mut kept) = (Antichain::new(), Vec::new(), Vec::new());
            RowChunkMerger.extract(
                chain_of(input.clone(), 9),
                upper.borrow(),
                &mut frontier,
                &mut readied,
                &mut kept,
                &mut Vec::new(),
            );
            let (expected_kept, expected_ready): (Vec<_>, Vec<_>) =
                input.into_iter().partition(|(_, time, _)| *time >= 2);
            let expected_frontier = expected_kept.iter().map(|(_, time, _)| *time).min();
            assert_eq!(flatten(readied), expected_ready, "seed {seed}");
            assert_eq!(flatten(kept), expected_kept, "seed {seed}");
            assert_eq!(frontier.elements().first().copied(), expected_frontier);
        }
    }

    #[test]
    fn counts_of_a_chain_count_distinct_keys_and_pairs() {
        let input = consolidated(random_updates(7, 300));
        let chain = chain_of(input.clone(), 11);
        let keys = {
            let mut keys: Vec<_> = input.iter().map(|((key, _), _, _)| key.clone()).collect();
            keys.dedup();
            keys.len()
        };
        let pairs = {
            let mut pairs: Vec<_> = input.iter().map(|(pair, _, _)| pair.clone()).collect();
            pairs.dedup();
            pairs.len()
        };
        assert_eq!(
            RowChunk::key_val_upd_counts(&chain),
            (keys, pairs, input.len())
        );
    }
}
