//! SUBSCRIBE: planning a subscription and starting its dataflow; the output is moved to the
//! subscriber by `pipelines` (see [`pipelines::Subscription`]).
//!
//! Without `AS OF`, a subscription starts from the last committed write (the snapshot
//! includes everything acknowledged); `AS OF t` starts it at `t - 1`, so that a subscriber
//! who saw every change up to `_timestamp` `s` and resumes `AS OF s + 1 WITH (SNAPSHOT =
//! false)` receives every later change exactly once.

use std::sync::atomic::Ordering;

use datafusion::arrow::datatypes::SchemaRef;
use pipelines::{output_schema, DataflowGuard, OutputShape, Subscription};
use repr::{GlobalId, ItemKind, RowCodec};
use sql::{Query, Subscribe, SubscribeTarget};

use crate::coordinator::Coordinator;
use crate::error::CoordError;
use crate::session::Session;

impl Coordinator {
    /// Starts the subscription `subscribe` describes.
    pub(crate) async fn subscribe(
        &self,
        session: &mut Session,
        subscribe: &Subscribe,
    ) -> Result<Subscription, CoordError> {
        if let Some(durable) = self.durable_subscription_named(session, subscribe)? {
            return self.subscribe_durable(durable, subscribe).await;
        }
        let plan = self.plan_subscription(session, subscribe).await?;
        let query_schema = plan.schema().clone();
        let codec = RowCodec::new(query_schema.clone())
            .map_err(|e| CoordError::unsupported(e.to_string()))?;
        let id = GlobalId::transient(self.next_transient_id.fetch_add(1, Ordering::Relaxed));
        // Under the sequencer no commit interleaves: the dataflow starts from the state at
        // the read time, and the streams it reads are fed their history up to it.
        let sequencer = self.lock_sequencer().await?;
        let read_time = self.oracle.read_time();
        // `AS OF t` starts at `t`: the snapshot holds what happened before it, and every
        // change at `t` or later follows. Without it, the snapshot holds every committed write.
        let as_of = match &subscribe.as_of {
            Some(as_of) => as_of.evaluate(&self.base_state).await?.saturating_sub(1),
            None => read_time,
        };
        let imports = plan.imports();
        let updates = self.compute.subscribe(id, plan, as_of)?;
        let guard = DataflowGuard::new(self.compute.clone(), id);
        self.hydrate_streams(id, imports, as_of, None).await?;
        drop(sequencer);
        let shape = OutputShape {
            schema: output_schema(&query_schema, subscribe.progress),
            codec,
            as_of,
            snapshot: subscribe.snapshot,
            progress: subscribe.progress,
        };
        let subscription = Subscription::forward(updates, shape, guard);
        tracing::debug!(subscription = %id, as_of, "subscription started");
        Ok(subscription)
    }

    /// The columns a subscription produces, without starting it.
    pub(crate) async fn subscription_schema(
        &self,
        session: &mut Session,
        subscribe: &Subscribe,
    ) -> Result<SchemaRef, CoordError> {
        if let Some(durable) = self.durable_subscription_named(session, subscribe)? {
            return Ok(output_schema(&durable.query_schema, subscribe.progress));
        }
        let plan = self.plan_subscription(session, subscribe).await?;
        Ok(output_schema(plan.schema(), subscribe.progress))
    }

    /// The dataflow plan of what `subscribe` watches.
    pub(crate) async fn plan_subscription(
        &self,
        session: &mut Session,
        subscribe: &Subscribe,
    ) -> Result<plan::Plan, CoordError> {
        let scan;
        let query = match &subscribe.target {
            SubscribeTarget::Query(query) => query,
            SubscribeTarget::Object(name) => {
                let item = self.resolve_item(session, name)?;
                if item.relation().is_none() && item.kind != ItemKind::View {
                    return Err(CoordError::WrongObjectType {
                        name: item.name.clone(),
                        expected: "a table, source, view or materialized view",
                        hint: None,
                    });
                }
                scan = Query::scan(&item.schema, &item.name, &[])?;
                &scan
            }
        };
        let search_path = session.search_path();
        let logical = query.plan(&self.plan_context(&search_path)).await?;
        let plan = sql::lower(&self.base_state, &logical)?;
        self.check_maintained_reads(session, &plan)?;
        Ok(plan)
    }
}
