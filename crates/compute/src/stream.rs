//! Streams: append-only inputs that are not arranged.
//!
//! A table is arranged once and every dataflow imports the arrangement, which holds its whole
//! contents in memory. An append-only source would grow that arrangement with its history
//! forever. A stream keeps nothing: each dataflow that reads it owns an input of its own.
//! When the dataflow is built, the coordinator feeds that input the stream's history (read
//! from the stream's durable log), no earlier than the dataflow's start; from then on every
//! append goes to every reader at the append's time. What stays in memory is what the dataflows
//! themselves keep (a count keeps one number), not the stream.
//!
//! While a reader is fed its history, commits go on (the coordinator does not hold them up
//! for a build): their appends reach it at their times, but their advances of the inputs do
//! not, so the history, at earlier times, can still go in. Once it is fed, the reader catches
//! up with the others.

use differential_dataflow::input::InputSession;
use repr::{Diff, GlobalId, Row, Timestamp};

/// One dataflow's input of a stream.
pub(crate) struct StreamReader {
    /// The dataflow that reads through this input.
    pub dataflow: GlobalId,
    /// The input, inside that dataflow.
    pub input: InputSession<Timestamp, Row, Diff>,
    /// Whether it is still fed its history (its input stays where it is until then).
    pub hydrating: bool,
}

/// The inputs of every dataflow reading one stream, on one worker.
#[derive(Default)]
pub(crate) struct StreamInputs {
    readers: Vec<StreamReader>,
    /// Every input not hydrating is closed for times before this.
    upper: Timestamp,
}

impl StreamInputs {
    /// Adds a dataflow's input; it receives appends from now on.
    pub fn add_reader(&mut self, reader: StreamReader) {
        self.readers.push(reader);
    }

    /// Drops the inputs of dataflow `dataflow`.
    pub fn remove_readers(&mut self, dataflow: GlobalId) {
        self.readers.retain(|reader| reader.dataflow != dataflow);
    }

    /// Gives every reader this worker's `share` (index, workers) of `rows` at `time`.
    pub fn append(&mut self, time: Timestamp, rows: &[(Row, Diff)], share: (usize, usize)) {
        for reader in &mut self.readers {
            insert_share(&mut reader.input, time, rows, share);
        }
    }

    /// Gives the readers of `dataflow` this worker's share of history rows, each at its time
    /// (or the input's, if that is later).
    pub fn hydrate(
        &mut self,
        dataflow: GlobalId,
        rows: &[(Row, Timestamp, Diff)],
        (index, workers): (usize, usize),
    ) {
        for reader in self.readers.iter_mut().filter(|r| r.dataflow == dataflow) {
            for (row, time, diff) in rows.iter().skip(index).step_by(workers.max(1)) {
                let time = (*time).max(*reader.input.time());
                reader.input.update_at(row.clone(), time, *diff);
            }
            reader.input.flush();
        }
    }

    /// Closes every reader's input for times before `upper`, but those still hydrating.
    pub fn advance_to(&mut self, upper: Timestamp) {
        self.upper = self.upper.max(upper);
        for reader in self.readers.iter_mut().filter(|r| !r.hydrating) {
            advance(&mut reader.input, upper);
        }
    }

    /// Ends the hydration of `dataflow`'s readers: their inputs close times before `upper`
    /// or before the other readers', whichever is later.
    pub fn finish_hydration(&mut self, dataflow: GlobalId, upper: Timestamp) {
        let upper = self.upper.max(upper);
        for reader in self.readers.iter_mut().filter(|r| r.dataflow == dataflow) {
            reader.hydrating = false;
            advance(&mut reader.input, upper);
        }
    }
}

fn advance(input: &mut InputSession<Timestamp, Row, Diff>, upper: Timestamp) {
    if *input.time() < upper {
        input.advance_to(upper);
    }
    input.flush();
}

/// Inserts the rows at positions `index` modulo `workers` into `input`, at `time` or, if the
/// input has already passed it, at the input's time.
fn insert_share(
    input: &mut InputSession<Timestamp, Row, Diff>,
    time: Timestamp,
    rows: &[(Row, Diff)],
    (index, workers): (usize, usize),
) {
    let time = time.max(*input.time());
    for (row, diff) in rows.iter().skip(index).step_by(workers.max(1)) {
        input.update_at(row.clone(), time, *diff);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reader(dataflow: u64) -> StreamReader {
        StreamReader {
            dataflow: GlobalId(dataflow),
            input: InputSession::new(),
            hydrating: true,
        }
    }

    fn times(stream: &StreamInputs) -> Vec<Timestamp> {
        stream.readers.iter().map(|r| *r.input.time()).collect()
    }

    #[test]
    fn a_reader_being_fed_stays_put_until_its_history_is_in() {
        let mut stream = StreamInputs::default();
        stream.add_reader(reader(1));
        stream.add_reader(reader(2));
        stream.finish_hydration(GlobalId(1), 5);
        assert_eq!(times(&stream), [5, 0]);
        stream.advance_to(10);
        assert_eq!(times(&stream), [10, 0], "the one still fed is not advanced");
        stream.finish_hydration(GlobalId(2), 3);
        assert_eq!(times(&stream), [10, 10], "it catches up with the others");
    }
}
