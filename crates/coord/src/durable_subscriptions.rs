//! Durable subscriptions (`CREATE SUBSCRIPTION sub FROM obj WITH (retention = '…')`): an
//! object's changes, kept on disk for a while, so that subscribers can come and go (and the
//! server can restart) without losing or repeating a change.
//!
//! The coordinator records the subscription, plans what it watches and starts the dataflow
//! whose changes the logger (in `pipelines`, see [`pipelines::DurableSubscriptions`])
//! appends to the subscription's log; `SUBSCRIBE TO sub [AS OF t]` is served from the log.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use pipelines::{DataflowGuard, DurableSubscriptions, Subscription, SubscriptionLog};
use repr::{GlobalId, ItemKind};

use crate::catalog::{Item, ItemDetails};
use crate::coordinator::Coordinator;
use crate::ddl::stored_name;
use crate::error::CoordError;
use crate::response::ExecuteResponse;
use crate::session::Session;
use sql::{CreateSubscription, ObjectRef, Subscribe, SubscribeTarget};

impl Coordinator {
    /// `CREATE SUBSCRIPTION`.
    pub(crate) async fn create_subscription(
        &self,
        session: &mut Session,
        mut create: CreateSubscription,
    ) -> Result<ExecuteResponse, CoordError> {
        create.name = self.name_for_new_item(session, &create.name)?;
        let from = self.resolve_watched(session, &mut create.from)?;
        let (schema, name) = stored_name(&create.name);
        let create_sql = create.to_string();
        let _sequencer = self.lock_sequencer().await?;
        if self.exists(session, &schema, &name, create.if_not_exists)? {
            return Ok(ExecuteResponse::command("CREATE SUBSCRIPTION"));
        }
        let watched = Subscribe {
            target: SubscribeTarget::Object(create.from.clone()),
            snapshot: true,
            progress: false,
            as_of: None,
        };
        // Planned in the session, whose role may not maintain what some relations hold.
        self.plan_subscription(session, &watched).await?;
        let id = self.record_item(
            session,
            &schema,
            &name,
            ItemKind::Subscription,
            &create_sql,
            vec![from.id],
        )?;
        let undo = self.undo_if_abandoned(session, id);
        let installed = self
            .install_subscription(id, &create_sql, &create, from.id)
            .await;
        undo.finished();
        if let Err(e) = installed {
            self.undo_create(id)?;
            return Err(e);
        }
        Ok(ExecuteResponse::command("CREATE SUBSCRIPTION"))
    }

    /// The table, source, view or materialized view whose changes a durable subscription or
    /// a sink watches; `name` is qualified with its schema (for the stored SQL).
    pub(crate) fn resolve_watched(
        &self,
        session: &Session,
        name: &mut ObjectRef,
    ) -> Result<Item, CoordError> {
        let item = self.resolve_item(session, name)?;
        if item.relation().is_none() && item.kind != ItemKind::View {
            return Err(CoordError::WrongObjectType {
                name: item.name.clone(),
                expected: "a table, source, view or materialized view",
                hint: None,
            });
        }
        *name = ObjectRef::qualified(&item.schema, &item.name);
        Ok(item)
    }

    /// Puts subscription `id` into the catalog and starts its logger, from the current
    /// contents of `from` (reconciled with what its log already holds). The caller holds the
    /// sequencer.
    pub(crate) async fn install_subscription(
        &self,
        id: GlobalId,
        create_sql: &str,
        create: &CreateSubscription,
        from: GlobalId,
    ) -> Result<(), CoordError> {
        let (schema, name) = stored_name(&create.name);
        self.catalog
            .write()
            .unwrap_or_else(|p| p.into_inner())
            .insert(Item {
                id,
                name,
                schema,
                kind: ItemKind::Subscription,
                create_sql: create_sql.to_string(),
                depends_on: vec![from],
                details: ItemDetails::Subscription { from },
            });
        self.start_logger(&self.subscriptions, id, &create.from, create.retention)
            .await
            .map(drop)
    }

    /// Starts logging the changes of `from` to log `id` of `registry`, from its current
    /// contents (reconciled with what the log already holds), keeping `retention` of history.
    pub(crate) async fn start_logger(
        &self,
        registry: &Arc<DurableSubscriptions>,
        id: GlobalId,
        from: &ObjectRef,
        retention: Duration,
    ) -> Result<Arc<SubscriptionLog>, CoordError> {
        let target = Subscribe {
            target: SubscribeTarget::Object(from.clone()),
            snapshot: true,
            progress: false,
            as_of: None,
        };
        let plan = self
            .plan_subscription(&mut Session::new("fluxion", 0, &[]), &target)
            .await?;
        let opened = registry.open_log(id, plan.schema().clone()).await?;
        let as_of = self.oracle.read_time();
        let dataflow = GlobalId::transient(self.next_transient_id.fetch_add(1, Ordering::Relaxed));
        let imports = plan.imports();
        let updates = self.compute.subscribe(dataflow, plan, as_of)?;
        let guard = DataflowGuard::new(self.compute.clone(), dataflow);
        self.hydrate_streams(dataflow, imports, as_of, None).await?;
        Ok(registry.start_logger(opened, retention, as_of, updates, guard))
    }

    /// The durable subscription a SUBSCRIBE names, if it names one.
    pub(crate) fn durable_subscription_named(
        &self,
        session: &Session,
        subscribe: &Subscribe,
    ) -> Result<Option<Arc<SubscriptionLog>>, CoordError> {
        let SubscribeTarget::Object(name) = &subscribe.target else {
            return Ok(None);
        };
        let item = self.resolve_item(session, name)?;
        if item.kind != ItemKind::Subscription {
            return Ok(None);
        }
        self.subscriptions.get(item.id).map(Some).ok_or_else(|| {
            CoordError::Internal(format!("subscription {} is not running", item.name))
        })
    }

    /// `SUBSCRIBE TO sub`: served from the subscription's log.
    pub(crate) async fn subscribe_durable(
        &self,
        subscription: Arc<SubscriptionLog>,
        subscribe: &Subscribe,
    ) -> Result<Subscription, CoordError> {
        let as_of = match &subscribe.as_of {
            Some(as_of) => as_of.evaluate(&self.base_state).await?.saturating_sub(1),
            None => self.oracle.read_time(),
        };
        Ok(subscription.serve(as_of, subscribe.snapshot, subscribe.progress)?)
    }

    /// Starts every durable subscription's logger again after a restart.
    pub(crate) async fn recover_subscriptions(
        &self,
        items: &[storage::CatalogItem],
    ) -> Result<(), CoordError> {
        for item in items.iter().filter(|i| i.kind == ItemKind::Subscription) {
            let Some(sql::Statement::CreateSubscription(create)) =
                sql::parse(&item.create_sql)?.pop()
            else {
                return Err(CoordError::Internal(format!(
                    "stored SQL of {} is not CREATE SUBSCRIPTION",
                    item.name
                )));
            };
            let from = item.depends_on.first().copied().ok_or_else(|| {
                CoordError::Internal(format!("subscription {} watches nothing", item.name))
            })?;
            self.install_subscription(item.id, &item.create_sql, &create, from)
                .await?;
        }
        Ok(self.subscriptions.remove_orphans()?)
    }
}
