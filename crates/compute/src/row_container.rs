//! Flat storage for the rows of arrangement batches.
//!
//! A batch keeps every row's bytes back to back in one buffer, with one end offset per row, so
//! a batch of a million rows is a handful of allocations instead of a million, and merging two
//! batches copies bytes instead of cloning (and later freeing) one heap row per update. Rows
//! compare by their bytes, exactly as [`Row`] does, so batches sort the same either way.

use differential_dataflow::trace::implementations::{BatchContainer, OffsetList};
use repr::Row;
use timely::container::PushInto;

/// A row borrowed from a [`RowContainer`] (or from a [`Row`], or a batcher's chunk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct RowRef<'a>(&'a [u8]);

impl<'a> RowRef<'a> {
    /// The row whose encoding is `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        RowRef(bytes)
    }

    /// An owned copy of the row.
    pub fn to_row(self) -> Row {
        Row::from_bytes(self.0)
    }
}

impl AsRef<[u8]> for RowRef<'_> {
    fn as_ref(&self) -> &[u8] {
        self.0
    }
}

impl<'a> From<&'a Row> for RowRef<'a> {
    fn from(row: &'a Row) -> Self {
        RowRef(row.as_bytes())
    }
}

impl<'a> PartialEq<&'a Row> for RowRef<'a> {
    fn eq(&self, other: &&'a Row) -> bool {
        self.0 == other.as_bytes()
    }
}

/// The rows of one batch's keys or values, their bytes in one buffer.
pub(crate) struct RowContainer {
    bytes: Vec<u8>,
    /// Where each row's bytes end in `bytes`; row `i` begins where row `i - 1` ends.
    ends: OffsetList,
}

impl RowContainer {
    /// The bytes its buffers have allocated.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + crate::memory_meters::offset_bytes(&self.ends)
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        self.bytes.extend_from_slice(bytes);
        self.ends.push(self.bytes.len());
    }
}

impl PushInto<Row> for RowContainer {
    fn push_into(&mut self, row: Row) {
        self.push_bytes(row.as_bytes());
    }
}

impl PushInto<RowRef<'_>> for RowContainer {
    fn push_into(&mut self, row: RowRef<'_>) {
        self.push_bytes(row.0);
    }
}

impl Default for RowContainer {
    fn default() -> Self {
        Self::with_capacity(0)
    }
}

impl BatchContainer for RowContainer {
    type Owned = Row;
    type ReadItem<'a> = RowRef<'a>;

    fn into_owned<'a>(item: Self::ReadItem<'a>) -> Self::Owned {
        item.to_row()
    }

    fn push_ref(&mut self, item: Self::ReadItem<'_>) {
        self.push_bytes(item.0);
    }

    fn push_own(&mut self, item: &Self::Owned) {
        self.push_bytes(item.as_bytes());
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.ends.clear();
    }

    fn with_capacity(size: usize) -> Self {
        Self {
            bytes: Vec::new(),
            ends: OffsetList::with_capacity(size),
        }
    }

    fn merge_capacity(cont1: &Self, cont2: &Self) -> Self {
        Self {
            bytes: Vec::with_capacity(cont1.bytes.len() + cont2.bytes.len()),
            ends: OffsetList::with_capacity(cont1.len() + cont2.len()),
        }
    }

    fn reborrow<'b, 'a: 'b>(item: Self::ReadItem<'a>) -> Self::ReadItem<'b> {
        item
    }

    fn index(&self, index: usize) -> Self::ReadItem<'_> {
        let start = match index {
            0 => 0,
            _ => self.ends.index(index - 1),
        };
        RowRef(&self.bytes[start..self.ends.index(index)])
    }

    fn len(&self) -> usize {
        self.ends.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_read_back_as_pushed_and_compare_like_rows() {
        let rows: Vec<Row> = [&b""[..], b"a", b"ab", b"b", b"", b"\x00\xff"]
            .iter()
            .map(|b| Row::from_bytes(b))
            .collect();
        let mut container = RowContainer::with_capacity(2);
        for row in &rows {
            container.push_own(row);
        }
        assert_eq!(container.len(), rows.len());
        for (i, row) in rows.iter().enumerate() {
            assert_eq!(container.index(i), RowRef::from(row));
            assert_eq!(RowContainer::into_owned(container.index(i)), *row);
        }
        for a in 0..rows.len() {
            for b in 0..rows.len() {
                assert_eq!(
                    container.index(a).cmp(&container.index(b)),
                    rows[a].cmp(&rows[b])
                );
            }
        }
        let mut merged = RowContainer::merge_capacity(&container, &container);
        merged.push_ref(container.index(2));
        assert_eq!(merged.index(0).to_row(), rows[2]);
    }
}
