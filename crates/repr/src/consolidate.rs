//! Adding up updates.

use crate::{Diff, Row};

/// Sums the diffs of equal rows and drops rows that cancel out.
pub fn consolidate(mut rows: Vec<(Row, Diff)>) -> Vec<(Row, Diff)> {
    rows.sort();
    let mut out: Vec<(Row, Diff)> = Vec::with_capacity(rows.len());
    for (row, diff) in rows {
        match out.last_mut() {
            Some((last, total)) if *last == row => *total += diff,
            _ => out.push((row, diff)),
        }
    }
    out.retain(|(_, diff)| *diff != 0);
    out
}
