//! The commands the controller broadcasts to every worker.

use std::sync::Arc;

use plan::Plan;
use repr::{Diff, GlobalId, Row, Timestamp};
use tokio::sync::mpsc::UnboundedSender;

use crate::arrangement::ArrangementLayout;
use crate::controller::ComputeError;
use crate::subscribe::SinkMessage;

/// A dataflow to build: a plan whose result is arranged and exported under `id`.
#[derive(Debug, Clone)]
pub struct DataflowDesc {
    /// The id readers use to find the result.
    pub id: GlobalId,
    /// What to compute.
    pub plan: Plan,
    /// How the result is arranged.
    pub layout: ArrangementLayout,
    /// A readable name for logs.
    pub debug_name: String,
}

/// A subscription's dataflow: a plan whose updates are sent, not arranged.
pub(crate) struct SubscriptionDesc {
    /// The dataflow's (transient) id.
    pub id: GlobalId,
    /// What to compute.
    pub plan: Plan,
    /// The starting time: earlier updates are reported at it.
    pub as_of: Timestamp,
    /// Where each worker's sink sends.
    pub sender: UnboundedSender<SinkMessage>,
}

/// Which part of an arrangement a peek returns.
#[derive(Debug, Clone)]
pub enum PeekFilter {
    /// Every row.
    All,
    /// Rows whose arrangement key equals this key.
    Key(Row),
    /// Rows whose arrangement key is one of these keys.
    Keys(Vec<Row>),
}

/// A request to read an arrangement as of a time.
pub(crate) struct PeekRequest {
    pub target: GlobalId,
    pub time: Timestamp,
    pub filter: PeekFilter,
    pub reply: UnboundedSender<Result<Vec<(Row, Diff)>, ComputeError>>,
}

/// What a worker is told to do. Every worker receives every command, in the same order.
pub(crate) enum Command {
    /// Create a table's input and its arrangement, with the input already at `upper`.
    CreateInput {
        id: GlobalId,
        layout: ArrangementLayout,
        upper: Timestamp,
        debug_name: String,
    },
    /// Create a stream: an append-only input that is not arranged; each dataflow that reads
    /// it gets its own input, fed the history by `HydrateStream` and then every append.
    CreateStream { id: GlobalId },
    /// Build a dataflow.
    CreateDataflow(Arc<DataflowDesc>),
    /// Stop dataflow `id` (drop it, and fail the subscriptions that read it with `message`).
    Stop { id: GlobalId, message: Arc<String> },
    /// Build a subscription's dataflow.
    CreateSubscription(Arc<SubscriptionDesc>),
    /// Insert updates into a table's input at `time`; each worker takes its share.
    Append {
        id: GlobalId,
        time: Timestamp,
        updates: Arc<Vec<((Row, Row), Diff)>>,
    },
    /// Insert rows into every dataflow reading stream `id`, at `time`; each worker takes its
    /// share.
    AppendStream {
        id: GlobalId,
        time: Timestamp,
        rows: Arc<Vec<(Row, Diff)>>,
    },
    /// Give the dataflow `dataflow` part of stream `stream`'s history, then say so on `done`
    /// (the sender pauses between parts, bounding what is buffered).
    HydrateStream {
        dataflow: GlobalId,
        stream: GlobalId,
        rows: Arc<Vec<(Row, Timestamp, Diff)>>,
        done: UnboundedSender<()>,
    },
    /// Dataflow `dataflow` has been fed all its streams' history: its inputs of them close
    /// times before `upper` (or before the other readers', if later), and follow the others
    /// from now on.
    FinishHydration {
        dataflow: GlobalId,
        upper: Timestamp,
    },
    /// Source `source`'s watermark is `watermark` (microseconds) from `time` on; sent before
    /// the inputs pass `time`.
    AdvanceWatermark {
        source: GlobalId,
        time: Timestamp,
        watermark: i64,
    },
    /// Give the dataflow `dataflow` the history of source `source`'s watermark.
    HydrateWatermarks {
        dataflow: GlobalId,
        source: GlobalId,
        steps: Arc<Vec<(Timestamp, i64)>>,
    },
    /// Close every input up to (not including) `upper`.
    AdvanceInputs { upper: Timestamp },
    /// Read an arrangement.
    Peek(Arc<PeekRequest>),
    /// Reads at times before `since` will not be requested any more.
    AllowCompaction { since: Timestamp },
    /// Drop an arrangement, its dataflow and its input if it has one, or a stream.
    Drop { id: GlobalId },
    /// Stop the worker.
    Shutdown,
}
