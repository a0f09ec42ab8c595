//! Streaming a subscription to the client: rows (or COPY data) are sent and flushed as each
//! closed time arrives, until the client cancels, goes away, or the subscription fails.
//!
//! pgwire's own response path buffers a result's rows until the result ends, and a
//! subscription never ends by itself; so these loops write the messages themselves and flush
//! after every batch, waiting on the next batch and on the client's cancel request at once.

use std::fmt::Debug;
use std::sync::Arc;

use coord::{CopyOptions, Subscription};
use futures::future::{select, Either};
use futures::{Sink, SinkExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldInfo, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::copy::{CopyDone, CopyOutResponse};
use pgwire::messages::data::RowDescription;
use pgwire::messages::response::CommandComplete;
use pgwire::messages::PgWireBackendMessage;

use crate::copy_out::copy_data;
use crate::rows::{data_rows, field_infos};
use crate::sqlstate::to_pgwire;

/// How a subscription's rows reach the client.
#[derive(Debug, Clone)]
pub(crate) enum Delivery {
    /// As the statement's result rows (DataRow), described first with the simple protocol,
    /// `timestamptz` values in time zone `zone`.
    Rows {
        send_description: bool,
        format: Option<Format>,
        zone: String,
    },
    /// As COPY data (`COPY (SUBSCRIBE …) TO STDOUT`), `timestamptz` values in time zone
    /// `zone`.
    Copy { options: CopyOptions, zone: String },
}

/// A future that resolves when the client cancels the running statement.
pub(crate) type Cancel = futures::channel::oneshot::Receiver<()>;

/// Streams `subscription` to `client` until it ends (CommandComplete / CopyDone), fails, or
/// `cancel` fires (`QueryCanceled`); the caller sends ReadyForQuery.
pub(crate) async fn stream_subscription<C>(
    client: &mut C,
    mut subscription: Subscription,
    delivery: Delivery,
    cancel: Option<Cancel>,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let names: Vec<String> = subscription
        .schema
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut writer = match &delivery {
        Delivery::Rows {
            send_description,
            format,
            zone,
        } => {
            let fields = Arc::new(field_infos(
                &subscription.schema,
                format.as_ref(),
                Some(zone),
            ));
            if *send_description {
                let description = RowDescription::new(fields.iter().map(Into::into).collect());
                client
                    .feed(PgWireBackendMessage::RowDescription(description))
                    .await?;
            }
            Writer::Rows { fields, sent: 0 }
        }
        Delivery::Copy { options, zone } => {
            client
                .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
                    0,
                    names.len() as i16,
                    vec![0; names.len()],
                )))
                .await?;
            Writer::Copy {
                options: options.clone(),
                zone: zone.clone(),
                names,
                sent: 0,
            }
        }
    };
    client.flush().await?;
    let mut cancel = cancel.map(Box::pin);
    loop {
        let next = Box::pin(subscription.next());
        let batch = match cancel.take() {
            Some(cancelled) => match select(next, cancelled).await {
                Either::Left((batch, cancelled)) => {
                    cancel = Some(cancelled);
                    batch
                }
                Either::Right(_) => return Err(PgWireError::QueryCanceled),
            },
            None => next.await,
        };
        match batch {
            Some(Ok(batch)) => {
                writer.write(client, &batch).await?;
                client.flush().await?;
            }
            Some(Err(e)) => return Err(to_pgwire(&e.into())),
            None => return writer.finish(client).await,
        }
    }
}

/// Writes batches in one delivery's messages.
enum Writer {
    Rows {
        fields: Arc<Vec<FieldInfo>>,
        sent: usize,
    },
    Copy {
        options: CopyOptions,
        zone: String,
        names: Vec<String>,
        sent: usize,
    },
}

impl Writer {
    async fn write<C>(
        &mut self,
        client: &mut C,
        batch: &arrow::array::RecordBatch,
    ) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        match self {
            Writer::Rows { fields, sent } => {
                for row in data_rows(fields.clone(), std::slice::from_ref(batch))? {
                    *sent += 1;
                    client.feed(PgWireBackendMessage::DataRow(row)).await?;
                }
            }
            Writer::Copy {
                options,
                zone,
                names,
                sent,
            } => {
                for data in copy_data(names, std::slice::from_ref(batch), options, zone)? {
                    *sent += 1;
                    client.feed(PgWireBackendMessage::CopyData(data)).await?;
                }
                // A header goes before the first row only.
                options.header = false;
            }
        }
        Ok(())
    }

    /// Ends the result of a subscription that ended by itself.
    async fn finish<C>(self, client: &mut C) -> PgWireResult<()>
    where
        C: Sink<PgWireBackendMessage> + Unpin + Send,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let (tag, rows) = match self {
            Writer::Rows { sent, .. } => ("SUBSCRIBE", sent),
            Writer::Copy { sent, .. } => {
                client
                    .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
                    .await?;
                ("COPY", sent)
            }
        };
        let complete: CommandComplete = Tag::new(tag).with_rows(rows).into();
        client
            .send(PgWireBackendMessage::CommandComplete(complete))
            .await?;
        Ok(())
    }
}
