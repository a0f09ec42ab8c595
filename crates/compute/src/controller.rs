//! The controller: starts the timely workers and talks to them through commands.

use std::collections::BTreeMap;
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::Thread;
use std::time::Duration;

use plan::Plan;
use repr::{Diff, GlobalId, Row, Timestamp};
use timely::WorkerConfig;

use crate::arrangement::ArrangementLayout;
use crate::arrangement_sizes::{ArrangementSizes, InputSize};
use crate::command::{Command, DataflowDesc, PeekFilter, PeekRequest, SubscriptionDesc};
use crate::errors::DataflowErrors;
use crate::frontier::Frontiers;
use crate::render;
use crate::subscribe::SubscriptionUpdates;
use crate::worker::ComputeWorker;

/// What can go wrong in compute.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ComputeError {
    /// The timely workers could not be started.
    #[error("could not start compute workers: {0}")]
    Startup(String),
    /// A plan cannot be rendered (a type without a row encoding, a malformed plan).
    #[error("cannot build dataflow: {0}")]
    InvalidPlan(String),
    /// The arrangement to read does not exist (dropped meanwhile).
    #[error("no arrangement for {0}")]
    UnknownArrangement(GlobalId),
    /// Reading at the requested time is no longer possible.
    #[error("{id} can no longer be read at time {time}: it is compacted through {since}")]
    Compacted {
        /// The arrangement.
        id: GlobalId,
        /// The requested time.
        time: Timestamp,
        /// Its compaction frontier.
        since: Timestamp,
    },
    /// The workers stopped.
    #[error("compute workers are shut down")]
    Shutdown,
    /// The dataflow was stopped (it needed more memory than its budget, or reads one that
    /// was stopped); the message says why.
    #[error("{0}")]
    Stopped(String),
    /// A subscription's output was not taken and piled up.
    #[error("the subscription fell behind: {buffered} updates not yet taken")]
    SubscriberTooSlow {
        /// The updates waiting.
        buffered: usize,
    },
}

/// Owns the timely workers and broadcasts commands to them.
pub struct ComputeController {
    channels: Mutex<Vec<Sender<Command>>>,
    threads: Vec<Thread>,
    errors: DataflowErrors,
    frontiers: Frontiers,
    sizes: ArrangementSizes,
    /// The dataflows stopped, with why.
    stopped: Mutex<BTreeMap<GlobalId, String>>,
    guards: Mutex<Option<timely::communication::WorkerGuards<()>>>,
}

impl std::fmt::Debug for ComputeController {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputeController")
            .field("workers", &self.threads.len())
            .finish()
    }
}

impl ComputeController {
    /// Starts `workers` timely worker threads in this process.
    pub fn start(workers: usize) -> Result<Self, ComputeError> {
        let workers = workers.max(1);
        let errors = DataflowErrors::default();
        let (senders, receivers): (Vec<_>, Vec<_>) = (0..workers).map(|_| mpsc::channel()).unzip();
        let receivers = Arc::new(Mutex::new(
            receivers.into_iter().map(Some).collect::<Vec<_>>(),
        ));
        let (thread_tx, thread_rx) = mpsc::channel();
        let thread_tx = Mutex::new(thread_tx);
        let worker_errors = errors.clone();
        let frontiers = Frontiers::new(workers);
        let worker_frontiers = frontiers.clone();
        let sizes = ArrangementSizes::new(workers);
        let worker_sizes = sizes.clone();
        let config = timely::Config {
            communication: timely::CommunicationConfig::Process(workers),
            worker: WorkerConfig::default().idle_spin(Duration::ZERO),
        };
        let guards = timely::execute(config, move |worker| {
            let index = worker.index();
            let receiver = receivers.lock().unwrap_or_else(|p| p.into_inner())[index].take();
            let Some(receiver) = receiver else {
                tracing::error!(index, "compute worker started twice");
                return;
            };
            // The controller waits for every worker's thread handle before it sends anything.
            let _ = thread_tx
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .send((index, std::thread::current()));
            ComputeWorker::new(
                worker,
                receiver,
                worker_errors.clone(),
                worker_frontiers.clone(),
                worker_sizes.clone(),
            )
            .run();
        })
        .map_err(ComputeError::Startup)?;
        let mut threads: Vec<Option<Thread>> = vec![None; workers];
        for _ in 0..workers {
            let (index, thread) = thread_rx
                .recv_timeout(Duration::from_secs(30))
                .map_err(|e| ComputeError::Startup(e.to_string()))?;
            threads[index] = Some(thread);
        }
        tracing::info!(workers, "compute workers started");
        Ok(Self {
            channels: Mutex::new(senders),
            threads: threads.into_iter().flatten().collect(),
            errors,
            frontiers,
            sizes,
            stopped: Mutex::default(),
            guards: Mutex::new(Some(guards)),
        })
    }

    /// The number of workers.
    pub fn workers(&self) -> usize {
        self.threads.len()
    }

    /// Counters of rows that failed inside dataflows.
    pub fn errors(&self) -> &DataflowErrors {
        &self.errors
    }

    /// The frontiers of every arrangement, as the workers report them.
    pub fn frontiers(&self) -> &Frontiers {
        &self.frontiers
    }

    /// How much each arrangement's dataflow holds, as the workers report it.
    pub fn arrangement_sizes(&self) -> &ArrangementSizes {
        &self.sizes
    }

    /// Creates a table's input, arranged by `layout`, with its frontier at `upper`.
    pub fn create_input(
        &self,
        id: GlobalId,
        layout: ArrangementLayout,
        upper: Timestamp,
        debug_name: &str,
    ) {
        self.frontiers.track(id);
        self.sizes.track(id);
        self.broadcast(|| Command::CreateInput {
            id,
            layout: layout.clone(),
            upper,
            debug_name: debug_name.to_string(),
        });
    }

    /// Creates stream `id`: an append-only input that is not arranged (see `stream`).
    pub fn create_stream(&self, id: GlobalId) {
        self.broadcast(|| Command::CreateStream { id });
    }

    /// Builds a dataflow on every worker. The plan is checked first, so a plan that cannot be
    /// rendered is refused here rather than failing inside the workers.
    pub fn create_dataflow(&self, desc: DataflowDesc) -> Result<(), ComputeError> {
        render::validate(&desc.plan)?;
        self.check_imports(&desc.plan)?;
        self.frontiers.track(desc.id);
        self.sizes.track(desc.id);
        let desc = Arc::new(desc);
        self.broadcast(|| Command::CreateDataflow(desc.clone()));
        Ok(())
    }

    /// Appends `(key, value)` updates to a table's input at `time`.
    pub fn append(&self, id: GlobalId, time: Timestamp, updates: Vec<crate::KeyedUpdate>) {
        let appended = updates
            .iter()
            .fold(InputSize::default(), |size, ((key, value), diff)| {
                let bytes = (key.as_bytes().len() + value.as_bytes().len()) as i64;
                InputSize {
                    rows: size.rows + diff,
                    bytes: size.bytes + diff * bytes,
                }
            });
        self.sizes.count_appended(id, appended);
        let updates = Arc::new(updates);
        self.broadcast(|| Command::Append {
            id,
            time,
            updates: updates.clone(),
        });
    }

    /// Starts subscription `id`: `plan` computed from `as_of` on, its updates (earlier ones at
    /// `as_of`) sent to the returned [`SubscriptionUpdates`]. Drop it with
    /// [`Self::drop_collection`].
    pub fn subscribe(
        &self,
        id: GlobalId,
        plan: Plan,
        as_of: Timestamp,
    ) -> Result<SubscriptionUpdates, ComputeError> {
        render::validate(&plan)?;
        self.check_imports(&plan)?;
        let (sender, receiver) = tokio::sync::mpsc::unbounded_channel();
        let desc = Arc::new(SubscriptionDesc {
            id,
            plan,
            as_of,
            sender,
        });
        self.broadcast(|| Command::CreateSubscription(desc.clone()));
        Ok(SubscriptionUpdates::new(receiver, self.workers()))
    }

    /// Appends rows to stream `id` at `time`: every dataflow reading it receives them.
    pub fn append_stream(&self, id: GlobalId, time: Timestamp, rows: Vec<(Row, Diff)>) {
        let rows = Arc::new(rows);
        self.broadcast(|| Command::AppendStream {
            id,
            time,
            rows: rows.clone(),
        });
    }

    /// Feeds part of stream `stream`'s history, rows at their times, to the new dataflow
    /// `dataflow`, and waits until every worker has taken it: history is fed a part at a
    /// time, so that no more than a part waits in the workers' queues.
    ///
    /// The caller feeds all of it before inputs advance past the current time (it holds the
    /// sequencer).
    pub async fn hydrate_stream(
        &self,
        dataflow: GlobalId,
        stream: GlobalId,
        rows: Vec<(Row, Timestamp, Diff)>,
    ) -> Result<(), ComputeError> {
        let (done, mut acknowledged) = tokio::sync::mpsc::unbounded_channel();
        let rows = Arc::new(rows);
        self.broadcast(|| Command::HydrateStream {
            dataflow,
            stream,
            rows: rows.clone(),
            done: done.clone(),
        });
        drop(done);
        for _ in 0..self.workers() {
            acknowledged.recv().await.ok_or(ComputeError::Shutdown)?;
        }
        Ok(())
    }

    /// Ends the hydration of `dataflow`: it has been fed every stream's history before
    /// `upper`, and its inputs of them go on from there (see `stream`).
    pub fn finish_hydration(&self, dataflow: GlobalId, upper: Timestamp) {
        self.broadcast(|| Command::FinishHydration { dataflow, upper });
    }

    /// Tells the dataflows waiting for source `source`'s watermark that it is `watermark`
    /// (microseconds) from `time` on. Sent before the inputs pass `time`.
    pub fn advance_watermark(&self, source: GlobalId, time: Timestamp, watermark: i64) {
        self.broadcast(|| Command::AdvanceWatermark {
            source,
            time,
            watermark,
        });
    }

    /// Gives the new dataflow `dataflow` the history of source `source`'s watermark, as
    /// `(time, watermark)` steps; before its inputs pass the times it replays.
    pub fn hydrate_watermarks(
        &self,
        dataflow: GlobalId,
        source: GlobalId,
        steps: Vec<(Timestamp, i64)>,
    ) {
        let steps = Arc::new(steps);
        self.broadcast(|| Command::HydrateWatermarks {
            dataflow,
            source,
            steps: steps.clone(),
        });
    }

    /// Declares every input complete for times before `upper`.
    pub fn advance_inputs(&self, upper: Timestamp) {
        self.broadcast(|| Command::AdvanceInputs { upper });
    }

    /// Lets arrangements forget the distinction between times before `since`.
    pub fn allow_compaction(&self, since: Timestamp) {
        self.broadcast(|| Command::AllowCompaction { since });
    }

    /// Drops an arrangement, its dataflow and input, a stream, or a subscription.
    pub fn drop_collection(&self, id: GlobalId) {
        self.lock_stopped().remove(&id);
        self.forget(id);
        self.broadcast(|| Command::Drop { id });
    }

    /// Forgets what the workers reported of `id`, which they are about to drop: its
    /// errors, frontier (its waiters fail) and sizes.
    fn forget(&self, id: GlobalId) {
        self.errors.forget(id);
        self.frontiers.forget(id);
        self.sizes.forget(id);
    }

    /// Stops dataflow `id`, for the reason `message` gives: its dataflow is dropped, the
    /// subscriptions reading it fail, and reads of it fail with [`ComputeError::Stopped`]
    /// until it is dropped.
    pub fn stop(&self, id: GlobalId, message: String) {
        self.lock_stopped().insert(id, message.clone());
        self.forget(id);
        let message = Arc::new(message);
        self.broadcast(|| Command::Stop {
            id,
            message: message.clone(),
        });
    }

    /// Records that dataflow `id` is stopped, for the reason `message` gives, without
    /// building it (a restart keeps a stopped view stopped).
    pub fn mark_stopped(&self, id: GlobalId, message: String) {
        self.lock_stopped().insert(id, message);
    }

    /// Why dataflow `id` is stopped, if it is.
    pub fn stopped(&self, id: GlobalId) -> Option<String> {
        self.lock_stopped().get(&id).cloned()
    }

    /// Fails with [`ComputeError::Stopped`] if `plan` reads a stopped dataflow: what it
    /// built would never move.
    fn check_imports(&self, plan: &Plan) -> Result<(), ComputeError> {
        let stopped = self.lock_stopped();
        match plan.imports().iter().find_map(|id| stopped.get(id)) {
            Some(message) => Err(ComputeError::Stopped(message.clone())),
            None => Ok(()),
        }
    }

    fn lock_stopped(&self) -> MutexGuard<'_, BTreeMap<GlobalId, String>> {
        self.stopped.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Reads an arrangement's rows as of `time`, once every update at or before `time` is in
    /// it. Rows come back with their multiplicities, in no particular order.
    pub async fn peek(
        &self,
        target: GlobalId,
        time: Timestamp,
        filter: PeekFilter,
    ) -> Result<Vec<(Row, Diff)>, ComputeError> {
        if let Some(message) = self.stopped(target) {
            return Err(ComputeError::Stopped(message));
        }
        let (reply, mut answers) = tokio::sync::mpsc::unbounded_channel();
        let request = Arc::new(PeekRequest {
            target,
            time,
            filter,
            reply,
        });
        self.broadcast(|| Command::Peek(request.clone()));
        drop(request);
        let mut rows = Vec::new();
        for _ in 0..self.workers() {
            match answers.recv().await {
                // Stopped while the peek waited: say why.
                Some(Err(ComputeError::UnknownArrangement(id))) => {
                    return Err(self
                        .stopped(target)
                        .map_or(ComputeError::UnknownArrangement(id), ComputeError::Stopped));
                }
                Some(answer) => rows.extend(answer?),
                None => return Err(ComputeError::Shutdown),
            }
        }
        Ok(rows)
    }

    /// Stops the workers and waits for their threads.
    pub fn shutdown(&self) {
        self.broadcast(|| Command::Shutdown);
        self.frontiers.shut_down();
        let guards = self.guards.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(guards) = guards {
            for result in guards.join() {
                if let Err(e) = result {
                    tracing::error!(error = %e, "compute worker failed");
                }
            }
        }
    }

    /// Sends one command to every worker. Commands from concurrent callers are serialized so
    /// that every worker sees the same order.
    fn broadcast(&self, command: impl Fn() -> Command) {
        let channels = self.channels.lock().unwrap_or_else(|p| p.into_inner());
        for channel in channels.iter() {
            // A worker that stopped has dropped its receiver; peeks then see `Shutdown`.
            let _ = channel.send(command());
        }
        for thread in &self.threads {
            thread.unpark();
        }
    }
}
