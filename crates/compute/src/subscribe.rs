//! Subscriptions: a dataflow whose result is not arranged but sent, as it changes, to one
//! subscriber, together with the frontier that says which times are complete.
//!
//! Each worker's sink forwards its share of the result's updates `(row, time, diff)`, each
//! time advanced to the subscription's `as_of` (so everything up to `as_of` accumulates into
//! the snapshot at `as_of`), and reports its input frontier whenever it moves. A
//! [`SubscriptionUpdates`] merges the workers: a time is *closed* once every worker's frontier
//! has passed it; the consolidated updates of closed times are handed out in time order. The
//! workers never wait for the subscriber: what it has not taken yet is buffered here, up to
//! [`MAX_BUFFERED_UPDATES`], past which the subscription fails instead of growing.

use std::collections::BTreeMap;

use repr::{Diff, Row, Timestamp};
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::generic::operator::Operator;
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};

use crate::controller::ComputeError;
use crate::render::RowCollection;

/// Updates a subscription holds for a subscriber that has not taken them.
pub const MAX_BUFFERED_UPDATES: usize = 4 << 20;

/// What a worker's sink tells the subscription.
pub(crate) enum SinkMessage {
    /// Updates of the result, at their (advanced) times.
    Updates(Vec<(Row, Timestamp, Diff)>),
    /// The worker's frontier moved: it will send no update at a time before `upper` (`None`:
    /// at no time at all; the dataflow is done).
    Frontier {
        worker: usize,
        upper: Option<Timestamp>,
    },
    /// The subscription cannot run (its start is compacted away, its plan cannot render).
    Failed(ComputeError),
}

/// Ends `collection` in a sink that sends its updates and frontier to `sender`.
pub(crate) fn render_sink(
    collection: RowCollection<'_>,
    as_of: Timestamp,
    worker: usize,
    sender: UnboundedSender<SinkMessage>,
) {
    let mut reported: Option<Option<Timestamp>> = None;
    collection
        .inner
        .sink(Pipeline, "Subscribe", move |(input, frontier)| {
            let mut updates = Vec::new();
            input.for_each(|_time, data| {
                updates.extend(
                    data.drain(..)
                        .map(|(row, time, diff)| (row, time.max(as_of), diff)),
                );
            });
            if !updates.is_empty() {
                let _ = sender.send(SinkMessage::Updates(updates));
            }
            let upper = frontier.frontier().iter().next().copied();
            if reported != Some(upper) {
                reported = Some(upper);
                let _ = sender.send(SinkMessage::Frontier { worker, upper });
            }
        });
}

/// The changes of one closed time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClosedTime {
    /// The time.
    pub time: Timestamp,
    /// The consolidated changes at that time (never empty), in row order.
    pub updates: Vec<(Row, Diff)>,
}

/// What a subscription has to say when asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscriptionProgress {
    /// The times that closed since the last answer, in order, with their changes (times
    /// without changes are left out).
    pub closed: Vec<ClosedTime>,
    /// Every time before this is closed (`None`: the subscription has ended).
    pub upper: Option<Timestamp>,
}

/// A running subscription's merged output. Dropping it drops nothing in compute: the owner
/// drops the dataflow (see [`crate::ComputeController::drop_collection`]).
pub struct SubscriptionUpdates {
    receiver: UnboundedReceiver<SinkMessage>,
    /// Each worker's frontier (`None`: done).
    frontiers: Vec<Option<Timestamp>>,
    /// Updates at times not yet closed.
    pending: BTreeMap<Timestamp, Vec<(Row, Diff)>>,
    pending_updates: usize,
    /// The merged frontier last reported.
    upper: Option<Timestamp>,
}

impl SubscriptionUpdates {
    pub(crate) fn new(receiver: UnboundedReceiver<SinkMessage>, workers: usize) -> Self {
        Self {
            receiver,
            frontiers: vec![Some(0); workers],
            pending: BTreeMap::new(),
            pending_updates: 0,
            upper: Some(0),
        }
    }

    /// Waits until the merged frontier advances, then returns the times it closed.
    pub async fn next(&mut self) -> Result<SubscriptionProgress, ComputeError> {
        loop {
            let message = match self.receiver.recv().await {
                Some(message) => message,
                None => return Err(ComputeError::Shutdown),
            };
            self.absorb(message)?;
            // Take everything already queued before answering, so a busy subscription
            // answers with many closed times at once rather than one at a time.
            while let Ok(message) = self.receiver.try_recv() {
                self.absorb(message)?;
            }
            let upper = self.merged_upper();
            if upper != self.upper {
                self.upper = upper;
                return Ok(SubscriptionProgress {
                    closed: self.take_closed(upper),
                    upper,
                });
            }
        }
    }

    fn absorb(&mut self, message: SinkMessage) -> Result<(), ComputeError> {
        match message {
            SinkMessage::Updates(updates) => {
                self.pending_updates += updates.len();
                if self.pending_updates > MAX_BUFFERED_UPDATES {
                    return Err(ComputeError::SubscriberTooSlow {
                        buffered: self.pending_updates,
                    });
                }
                for (row, time, diff) in updates {
                    self.pending.entry(time).or_default().push((row, diff));
                }
            }
            SinkMessage::Frontier { worker, upper } => {
                if let Some(frontier) = self.frontiers.get_mut(worker) {
                    *frontier = upper;
                }
            }
            SinkMessage::Failed(error) => return Err(error),
        }
        Ok(())
    }

    /// The least frontier of the workers (`None` once all are done).
    fn merged_upper(&self) -> Option<Timestamp> {
        self.frontiers.iter().flatten().min().copied()
    }

    /// Removes and consolidates the pending times before `upper`.
    fn take_closed(&mut self, upper: Option<Timestamp>) -> Vec<ClosedTime> {
        let still_open = match upper {
            Some(upper) => self.pending.split_off(&upper),
            None => BTreeMap::new(),
        };
        let closed = std::mem::replace(&mut self.pending, still_open);
        self.pending_updates = self.pending.values().map(Vec::len).sum();
        closed
            .into_iter()
            .filter_map(|(time, updates)| {
                let updates = repr::consolidate(updates);
                (!updates.is_empty()).then_some(ClosedTime { time, updates })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(byte: u8) -> Row {
        Row::from_bytes(&[byte])
    }

    #[tokio::test]
    async fn a_time_closes_once_every_worker_passed_it() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut updates = SubscriptionUpdates::new(receiver, 2);
        sender
            .send(SinkMessage::Updates(vec![
                (row(1), 5, 1),
                (row(2), 7, 1),
                (row(1), 5, 1),
                (row(3), 5, 1),
                (row(3), 5, -1),
            ]))
            .unwrap();
        sender
            .send(SinkMessage::Frontier {
                worker: 0,
                upper: Some(8),
            })
            .unwrap();
        sender
            .send(SinkMessage::Frontier {
                worker: 1,
                upper: Some(6),
            })
            .unwrap();
        let progress = updates.next().await.unwrap();
        assert_eq!(progress.upper, Some(6));
        assert_eq!(
            progress.closed,
            vec![ClosedTime {
                time: 5,
                updates: vec![(row(1), 2)]
            }],
            "time 7 is still open on worker 1; the cancelled row is gone"
        );
        sender
            .send(SinkMessage::Frontier {
                worker: 1,
                upper: None,
            })
            .unwrap();
        let progress = updates.next().await.unwrap();
        assert_eq!(progress.upper, Some(8));
        assert_eq!(progress.closed[0].time, 7);
        drop(sender);
        assert!(updates.next().await.is_err(), "the workers went away");
    }

    #[tokio::test]
    async fn a_subscriber_too_far_behind_is_told_so() {
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let mut updates = SubscriptionUpdates::new(receiver, 1);
        let many: Vec<_> = (0..=MAX_BUFFERED_UPDATES).map(|_| (row(0), 1, 1)).collect();
        sender.send(SinkMessage::Updates(many)).unwrap();
        let error = updates.next().await.unwrap_err();
        assert!(
            matches!(error, ComputeError::SubscriberTooSlow { .. }),
            "{error}"
        );
    }
}
