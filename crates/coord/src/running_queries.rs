//! The most queries computing at once (`--max-running-queries`). Each query computes on a
//! thread of its own (see [`crate::query_rows`]), which stays until its rows are read or
//! dropped: an open portal or cursor keeps one. A client that opens portal after portal
//! would otherwise start thread after thread until the process could start no more; past
//! the limit a query fails with 53000 and every other session goes on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::error::CoordError;

/// How many queries compute now, and how many may; an extension of the planning state's
/// configuration, where the coordinator puts it.
#[derive(Debug)]
pub(crate) struct RunningQueries {
    running: AtomicUsize,
    limit: usize,
}

impl RunningQueries {
    /// At most `limit` queries computing at once.
    pub(crate) fn new(limit: usize) -> Self {
        RunningQueries {
            running: AtomicUsize::new(0),
            limit,
        }
    }

    /// A place for one more query, held until its computation ends; 53000 past the limit.
    pub(crate) fn admit(self: &Arc<Self>) -> Result<QueryPlace, CoordError> {
        let admitted = self
            .running
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < self.limit).then_some(running + 1)
            });
        match admitted {
            Ok(_) => Ok(QueryPlace(self.clone())),
            Err(_) => Err(CoordError::TooManyQueries { limit: self.limit }),
        }
    }
}

/// One query's place among the running ones; given back when dropped.
#[derive(Debug)]
pub(crate) struct QueryPlace(Arc<RunningQueries>);

impl Drop for QueryPlace {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn places_past_the_limit_are_refused_until_one_is_given_back() {
        let running = Arc::new(RunningQueries::new(2));
        let first = running.admit().expect("first");
        let _second = running.admit().expect("second");
        assert!(matches!(
            running.admit(),
            Err(CoordError::TooManyQueries { limit: 2 })
        ));
        drop(first);
        assert!(running.admit().is_ok());
    }
}
