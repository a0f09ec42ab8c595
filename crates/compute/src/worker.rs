//! One timely worker: applies the controller's commands and steps its dataflows.

use std::collections::{BTreeMap, HashMap};
use std::sync::mpsc::{Receiver, TryRecvError};
use std::sync::Arc;
use std::time::Duration;

use differential_dataflow::input::InputSession;
use differential_dataflow::trace::TraceReader;
use plan::Plan;
use repr::{Diff, GlobalId, Row, Timestamp};
use timely::order::PartialOrder;
use timely::progress::Antichain;

use crate::arrangement::{
    arrange_rows, ArrangementLayout, ArrangementRegistry, ExportedArrangement,
};
use crate::arrangement_sizes::{ArrangementSizes, SizeLog};
use crate::command::{Command, DataflowDesc, PeekRequest, SubscriptionDesc};
use crate::controller::ComputeError;
use crate::errors::DataflowErrors;
use crate::frontier::{Frontier, Frontiers};
use crate::memory_meters;
use crate::peek::{self, PeekRead};
use crate::render::{self, RenderContext};
use crate::stream::{StreamInputs, StreamReader};
use crate::subscribe::{self, SinkMessage};
use crate::watermarks::WatermarkReaders;

/// The state of one worker thread.
pub(crate) struct ComputeWorker<'w> {
    timely: &'w mut timely::worker::Worker,
    commands: Receiver<Command>,
    errors: DataflowErrors,
    /// Where this worker reports its arrangements' progress.
    frontiers: Frontiers,
    /// What this worker last reported, by arrangement.
    reported: BTreeMap<GlobalId, Frontier>,
    /// Where this worker reports how much its arrangements hold.
    sizes: ArrangementSizes,
    /// The sizes of this worker's spines, by the collection they belong to.
    size_log: SizeLog,
    arrangements: ArrangementRegistry,
    inputs: BTreeMap<GlobalId, InputSession<Timestamp, (Row, Row), Diff>>,
    /// The streams, each with the inputs of the dataflows reading it.
    streams: BTreeMap<GlobalId, StreamInputs>,
    /// The watermark logs of the dataflows that wait for watermarks.
    watermarks: WatermarkReaders,
    /// The subscriptions' dataflows (their indexes and what they were built from), by
    /// subscription.
    subscriptions: BTreeMap<GlobalId, (usize, Arc<SubscriptionDesc>)>,
    /// Peeks waiting for their arrangement to catch up with their time.
    pending_peeks: Vec<Arc<PeekRequest>>,
    /// Peeks being read, a turn at a time.
    reading_peeks: Vec<PeekRead>,
    /// Reads before this time will not be requested any more (pending peeks aside).
    allowed_since: Timestamp,
}

impl<'w> ComputeWorker<'w> {
    pub fn new(
        timely: &'w mut timely::worker::Worker,
        commands: Receiver<Command>,
        errors: DataflowErrors,
        frontiers: Frontiers,
        sizes: ArrangementSizes,
    ) -> Self {
        let size_log = SizeLog::install(timely);
        Self {
            timely,
            commands,
            errors,
            frontiers,
            reported: BTreeMap::new(),
            sizes,
            size_log,
            arrangements: BTreeMap::new(),
            inputs: BTreeMap::new(),
            streams: BTreeMap::new(),
            watermarks: WatermarkReaders::default(),
            subscriptions: BTreeMap::new(),
            pending_peeks: Vec::new(),
            reading_peeks: Vec::new(),
            allowed_since: 0,
        }
    }

    /// Runs until told to shut down or the controller goes away.
    pub fn run(mut self) {
        loop {
            loop {
                match self.commands.try_recv() {
                    Ok(Command::Shutdown) | Err(TryRecvError::Disconnected) => return,
                    Ok(command) => self.handle(command),
                    Err(TryRecvError::Empty) => break,
                }
            }
            // A peek whose arrangement is already complete is answered before the worker
            // steps or parks, so a read does not wait for a park to time out.
            self.serve_peeks();
            let park = if !self.reading_peeks.is_empty() {
                Duration::ZERO
            } else if self.pending_peeks.is_empty() {
                Duration::from_millis(100)
            } else {
                Duration::from_millis(1)
            };
            self.timely.step_or_park(Some(park));
            self.serve_peeks();
            self.report_frontiers();
            self.size_log.report(self.timely.index(), &self.sizes);
        }
    }

    fn handle(&mut self, command: Command) {
        match command {
            Command::CreateInput {
                id,
                layout,
                upper,
                debug_name,
            } => self.create_input(id, layout, upper, &debug_name),
            Command::CreateStream { id } => {
                self.streams.entry(id).or_default();
            }
            Command::CreateDataflow(desc) => self.create_dataflow(&desc),
            Command::CreateSubscription(desc) => self.create_subscription(&desc),
            Command::Append { id, time, updates } => self.append(id, time, &updates),
            Command::AppendStream { id, time, rows } => {
                let share = self.share();
                match self.streams.get_mut(&id) {
                    Some(stream) => stream.append(time, &rows, share),
                    None => tracing::error!(stream = %id, "append to a stream that does not exist"),
                }
            }
            Command::HydrateStream {
                dataflow,
                stream,
                rows,
                done,
            } => {
                let share = self.share();
                if let Some(stream) = self.streams.get_mut(&stream) {
                    stream.hydrate(dataflow, &rows, share);
                }
                let _ = done.send(());
            }
            Command::FinishHydration { dataflow, upper } => {
                for stream in self.streams.values_mut() {
                    stream.finish_hydration(dataflow, upper);
                }
            }
            Command::AdvanceWatermark {
                source,
                time,
                watermark,
            } => self.watermarks.advance(source, time, watermark),
            Command::HydrateWatermarks {
                dataflow,
                source,
                steps,
            } => self.watermarks.hydrate(dataflow, source, &steps),
            Command::AdvanceInputs { upper } => {
                for input in self.inputs.values_mut() {
                    if *input.time() < upper {
                        input.advance_to(upper);
                    }
                    input.flush();
                }
                for stream in self.streams.values_mut() {
                    stream.advance_to(upper);
                }
            }
            Command::Peek(request) => self.pending_peeks.push(request),
            Command::AllowCompaction { since } => {
                self.allowed_since = self.allowed_since.max(since);
                self.compact();
            }
            Command::Drop { id } => self.drop_collection(id),
            Command::Stop { id, message } => self.stop(id, &message),
            Command::Shutdown => {}
        }
    }

    fn create_input(
        &mut self,
        id: GlobalId,
        layout: ArrangementLayout,
        upper: Timestamp,
        name: &str,
    ) {
        let dataflow_index = self.timely.next_dataflow_index();
        let first_operator = self.timely.peek_identifier();
        let mut input = InputSession::new();
        let trace = self.timely.dataflow_named(name, |scope| {
            arrange_rows(input.to_collection(scope), &format!("Arrange {name}")).trace
        });
        self.size_log.own(
            id,
            first_operator..self.timely.peek_identifier(),
            memory_meters::take_built(),
        );
        input.advance_to(upper);
        input.flush();
        self.inputs.insert(id, input);
        self.register(id, trace, layout, dataflow_index);
    }

    fn create_dataflow(&mut self, desc: &DataflowDesc) {
        let dataflow_index = self.timely.next_dataflow_index();
        let first_operator = self.timely.peek_identifier();
        let arrangements = &mut self.arrangements;
        let streams = &self.streams;
        let mut stream_readers = BTreeMap::new();
        let mut watermark_logs = Vec::new();
        let errors = self.errors.clone();
        let layout = desc.layout.clone();
        let result = self.timely.dataflow_named(&desc.debug_name, |scope| {
            let mut context = RenderContext {
                scope,
                arrangements,
                streams,
                stream_readers: &mut stream_readers,
                stream_collections: BTreeMap::new(),
                rendered: HashMap::new(),
                dataflow: desc.id,
                errors,
                watermark_logs: &mut watermark_logs,
            };
            let rows = context.render(&desc.plan)?;
            let pairs = match &layout {
                ArrangementLayout::BySelf => rows.map(|row| (row, Row::default())),
                ArrangementLayout::ByColumns(columns) => {
                    render::render_key_by(rows, desc.plan.schema(), columns, None)?
                }
            };
            Ok::<_, render::RenderError>(
                arrange_rows(pairs, &format!("Arrange {}", desc.debug_name)).trace,
            )
        });
        let meters = memory_meters::take_built();
        match result {
            Ok(trace) => {
                self.size_log.own(
                    desc.id,
                    first_operator..self.timely.peek_identifier(),
                    meters,
                );
                self.add_stream_readers(desc.id, stream_readers);
                self.watermarks.add(desc.id, watermark_logs);
                self.register(desc.id, trace, layout, dataflow_index)
            }
            Err(e) => {
                tracing::error!(dataflow = %desc.id, error = %e.0, "dataflow could not be rendered");
                self.timely.drop_dataflow(dataflow_index);
                self.frontiers.forget(desc.id);
                self.sizes.forget(desc.id);
            }
        }
    }

    /// Builds a subscription's dataflow: the plan, ending in a sink that sends its updates.
    fn create_subscription(&mut self, desc: &Arc<SubscriptionDesc>) {
        if let Some(since) = self.compacted_past(&desc.plan, desc.as_of) {
            let _ = desc
                .sender
                .send(SinkMessage::Failed(ComputeError::Compacted {
                    id: desc.id,
                    time: desc.as_of,
                    since,
                }));
            return;
        }
        let dataflow_index = self.timely.next_dataflow_index();
        let arrangements = &mut self.arrangements;
        let streams = &self.streams;
        let mut stream_readers = BTreeMap::new();
        let mut watermark_logs = Vec::new();
        let errors = self.errors.clone();
        let worker = self.timely.index();
        let result = self
            .timely
            .dataflow_named(&format!("Subscribe {}", desc.id), |scope| {
                let mut context = RenderContext {
                    scope,
                    arrangements,
                    streams,
                    stream_readers: &mut stream_readers,
                    stream_collections: BTreeMap::new(),
                    rendered: HashMap::new(),
                    dataflow: desc.id,
                    errors,
                    watermark_logs: &mut watermark_logs,
                };
                let rows = context.render(&desc.plan)?;
                subscribe::render_sink(rows, desc.as_of, worker, desc.sender.clone());
                Ok::<_, render::RenderError>(())
            });
        // A subscription's state is not counted: it has no arrangement of its own to report.
        drop(memory_meters::take_built());
        match result {
            Ok(()) => {
                self.add_stream_readers(desc.id, stream_readers);
                self.watermarks.add(desc.id, watermark_logs);
                self.subscriptions
                    .insert(desc.id, (dataflow_index, desc.clone()));
            }
            Err(e) => {
                let _ = desc
                    .sender
                    .send(SinkMessage::Failed(ComputeError::InvalidPlan(e.0)));
                self.timely.drop_dataflow(dataflow_index);
            }
        }
    }

    /// The compaction frontier of an arrangement `plan` reads, if it has passed `as_of`.
    fn compacted_past(&mut self, plan: &Plan, as_of: Timestamp) -> Option<Timestamp> {
        plan.imports().into_iter().find_map(|id| {
            let arrangement = self.arrangements.get_mut(&id)?;
            let since = arrangement.trace.get_logical_compaction();
            (!since.less_equal(&as_of)).then(|| since.first().copied().unwrap_or(Timestamp::MAX))
        })
    }

    /// Registers the stream inputs a new dataflow `dataflow` created.
    fn add_stream_readers(
        &mut self,
        dataflow: GlobalId,
        readers: BTreeMap<GlobalId, InputSession<Timestamp, Row, Diff>>,
    ) {
        for (stream, input) in readers {
            if let Some(stream) = self.streams.get_mut(&stream) {
                stream.add_reader(StreamReader {
                    dataflow,
                    input,
                    hydrating: true,
                });
            }
        }
    }

    fn register(
        &mut self,
        id: GlobalId,
        mut trace: crate::arrangement::RowTrace,
        layout: ArrangementLayout,
        dataflow_index: usize,
    ) {
        let since = Antichain::from_elem(self.compaction_frontier());
        trace.set_logical_compaction(since.borrow());
        trace.set_physical_compaction(since.borrow());
        self.arrangements.insert(
            id,
            ExportedArrangement {
                trace,
                layout,
                dataflow_index,
            },
        );
    }

    fn append(&mut self, id: GlobalId, time: Timestamp, updates: &[((Row, Row), Diff)]) {
        let Some(input) = self.inputs.get_mut(&id) else {
            tracing::error!(input = %id, "append to an input that does not exist");
            return;
        };
        let (index, peers) = (self.timely.index(), self.timely.peers());
        for (position, (pair, diff)) in updates.iter().enumerate() {
            if position % peers == index {
                input.update_at(pair.clone(), time.max(*input.time()), *diff);
            }
        }
    }

    /// This worker's index and the number of workers: a worker takes the rows at positions
    /// equal to its index modulo the number of workers.
    fn share(&self) -> (usize, usize) {
        (self.timely.index(), self.timely.peers())
    }

    fn drop_collection(&mut self, id: GlobalId) {
        self.inputs.remove(&id);
        self.streams.remove(&id);
        if let Some((dataflow_index, _)) = self.subscriptions.remove(&id) {
            self.timely.drop_dataflow(dataflow_index);
        }
        for stream in self.streams.values_mut() {
            stream.remove_readers(id);
        }
        self.watermarks.remove(id);
        if let Some(arrangement) = self.arrangements.remove(&id) {
            self.timely.drop_dataflow(arrangement.dataflow_index);
        }
        self.reported.remove(&id);
        self.size_log.forget(id);
    }

    /// Drops dataflow `id`, which was stopped, and fails the subscriptions reading it with
    /// `message`: what they read will not move again.
    fn stop(&mut self, id: GlobalId, message: &str) {
        self.drop_collection(id);
        let readers: Vec<GlobalId> = self
            .subscriptions
            .iter()
            .filter(|(_, (_, desc))| desc.plan.imports().contains(&id))
            .map(|(subscription, _)| *subscription)
            .collect();
        for subscription in readers {
            if let Some((_, desc)) = self.subscriptions.get(&subscription) {
                let _ = desc.sender.send(SinkMessage::Failed(ComputeError::Stopped(
                    message.to_string(),
                )));
            }
            self.drop_collection(subscription);
        }
    }

    /// Reports the frontiers of the arrangements that moved since the last report.
    fn report_frontiers(&mut self) {
        let worker = self.timely.index();
        let mut upper = Antichain::new();
        for (id, arrangement) in self.arrangements.iter_mut() {
            arrangement.trace.read_upper(&mut upper);
            let frontier = Frontier {
                upper: upper.first().copied().unwrap_or(Timestamp::MAX),
                since: arrangement
                    .trace
                    .get_logical_compaction()
                    .first()
                    .copied()
                    .unwrap_or(Timestamp::MAX),
            };
            if self.reported.insert(*id, frontier) != Some(frontier) {
                self.frontiers.report(worker, *id, frontier);
                // Batches may merge as soon as they are complete: reads always take every
                // batch up to the trace's upper, never a cut at an older time. Held back with
                // the logical frontier (the retained history), every commit's batch waited
                // unmerged, every read walked thousands of them, and releasing a hold merged
                // them all in one step.
                let physical = arrangement.trace.get_physical_compaction();
                if PartialOrder::less_equal(&physical, &upper.borrow()) {
                    arrangement.trace.set_physical_compaction(upper.borrow());
                }
            }
        }
    }

    /// Begins reading the peeks whose arrangement has caught up with their time, and reads
    /// each peek being read for one turn.
    fn serve_peeks(&mut self) {
        if self.pending_peeks.is_empty() && self.reading_peeks.is_empty() {
            return;
        }
        let arrangements = &mut self.arrangements;
        let reading = &mut self.reading_peeks;
        self.pending_peeks.retain(|request| {
            let Some(arrangement) = arrangements.get_mut(&request.target) else {
                let _ = request
                    .reply
                    .send(Err(ComputeError::UnknownArrangement(request.target)));
                return false;
            };
            if !peek::is_complete_at(arrangement, request.time) {
                return true;
            }
            match PeekRead::begin(arrangement, request.clone()) {
                Ok(read) => reading.push(read),
                Err((request, error)) => {
                    let _ = request.reply.send(Err(error));
                }
            }
            false
        });
        let before = self.reading_peeks.len();
        self.reading_peeks.retain_mut(|read| !read.step());
        if self.reading_peeks.len() < before {
            self.compact();
        }
    }

    /// The earliest time a reader may still ask for.
    fn compaction_frontier(&self) -> Timestamp {
        self.pending_peeks
            .iter()
            .map(|p| p.time)
            .chain(self.reading_peeks.iter().map(PeekRead::time))
            .fold(self.allowed_since, Timestamp::min)
    }

    fn compact(&mut self) {
        let frontier = Antichain::from_elem(self.compaction_frontier());
        for arrangement in self.arrangements.values_mut() {
            arrangement.trace.set_logical_compaction(frontier.borrow());
        }
    }
}
