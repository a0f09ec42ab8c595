//! The pgwire response of an executed statement: its rows are encoded as the client reads
//! them (see `coord::QueryRows`) and stop at the client's cancel request.

use std::sync::Arc;

use coord::{CopyOptions, ExecuteResponse, QueryRows, TransactionEffect};
use futures::stream::BoxStream;
use futures::{stream, Stream, StreamExt};
use pgwire::api::portal::Format;
use pgwire::api::results::{CopyResponse, QueryResponse, Response, Tag};
use pgwire::api::ClientInfo;
use pgwire::error::PgWireResult;
use pgwire::messages::copy::CopyData;

use crate::copy_out::copy_data;
use crate::rows::{data_rows, field_infos};
use crate::sqlstate::to_pgwire;

/// The batches of a result, computed as they are read; an error ends them.
type Rows = BoxStream<'static, Result<arrow::array::RecordBatch, coord::CoordError>>;

/// How an executed statement's rows go to the client.
pub(crate) struct RowOutput<'a> {
    /// The column formats (text when `None`).
    format: Option<&'a Format>,
    /// The time zone `timestamptz` values are shown in.
    zone: &'a str,
    /// Changes when the client cancels the statement, whose rows then stop.
    cancels: Option<tokio::sync::watch::Receiver<()>>,
}

impl<'a> RowOutput<'a> {
    /// Rows for `client`'s statement, shown in `format` and `zone`.
    pub(crate) fn new<C: ClientInfo>(
        client: &C,
        format: Option<&'a Format>,
        zone: &'a str,
    ) -> Self {
        Self {
            format,
            zone,
            cancels: crate::startup::registration_of(client).map(|r| r.backend().cancels()),
        }
    }
}

/// The pgwire response for an executed statement, its rows sent as `output` says.
pub(crate) fn to_response(
    response: ExecuteResponse,
    effect: TransactionEffect,
    output: RowOutput<'_>,
) -> PgWireResult<Response> {
    let RowOutput {
        format,
        zone,
        cancels,
    } = output;
    Ok(match response {
        ExecuteResponse::Rows { schema, rows } => {
            let rows = stoppable(rows, cancels);
            Response::Query(query_response(&schema, rows, format, zone))
        }
        ExecuteResponse::CopyOut {
            schema,
            rows,
            options,
        } => {
            let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            let columns = names.len();
            let data = copy_out_data(names, stoppable(rows, cancels), options, zone.to_string());
            Response::CopyOut(CopyResponse::new(0, columns, data))
        }
        ExecuteResponse::Fetched { schema, batches } => {
            let batches = stream::iter(batches.into_iter().map(Ok)).boxed();
            let mut response = query_response(&schema, batches, format, zone);
            response.set_command_tag("FETCH");
            Response::Query(response)
        }
        ExecuteResponse::Deallocate { name } => Response::Execution(Tag::new(match name {
            Some(_) => "DEALLOCATE",
            None => "DEALLOCATE ALL",
        })),
        ExecuteResponse::Command(tag) => match effect {
            TransactionEffect::Begin => Response::TransactionStart(Tag::new(&tag)),
            TransactionEffect::End => Response::TransactionEnd(Tag::new(&tag)),
            TransactionEffect::None => Response::Execution(Tag::new(&tag)),
        },
        ExecuteResponse::CopyIn { columns, format } => {
            let code = match format {
                coord::CopyFormat::Text | coord::CopyFormat::Csv => 0,
            };
            Response::CopyIn(CopyResponse::new(code, columns, stream::empty()))
        }
        ExecuteResponse::EmptyQuery => Response::EmptyQuery,
        ExecuteResponse::Subscribe(_) | ExecuteResponse::CopySubscribe { .. } => {
            return Err(to_pgwire(&coord::CoordError::Internal(
                "a subscription reached the buffered response path".into(),
            )))
        }
    })
}

/// The rows of a result as a pgwire response: each batch is encoded as the client reads
/// it, and an error ends them.
fn query_response(
    schema: &arrow::datatypes::SchemaRef,
    batches: Rows,
    format: Option<&Format>,
    zone: &str,
) -> QueryResponse {
    let fields = Arc::new(field_infos(schema, format, Some(zone)));
    let encoded = fields.clone();
    let rows = batches.flat_map(move |batch| {
        let rows = batch
            .map_err(|e| to_pgwire(&e))
            .and_then(|batch| data_rows(encoded.clone(), &[batch]));
        match rows {
            Ok(rows) => stream::iter(rows.into_iter().map(Ok)).left_stream(),
            Err(error) => stream::once(async { Err(error) }).right_stream(),
        }
    });
    QueryResponse::new(fields, rows)
}

/// `rows`, ended with 57014 when `cancels` changes (the client cancels the statement).
fn stoppable(rows: QueryRows, cancels: Option<tokio::sync::watch::Receiver<()>>) -> Rows {
    match cancels {
        Some(mut cancels) => rows.stopped_by(async move {
            if cancels.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
            coord::CoordError::Canceled
        }),
        None => rows.boxed(),
    }
}

/// The COPY data of `rows` (columns `names`) laid out as `options` say, each batch as the
/// client reads it; a header goes before the first row (alone, if there are none).
fn copy_out_data(
    names: Vec<String>,
    rows: Rows,
    options: CopyOptions,
    zone: String,
) -> impl Stream<Item = PgWireResult<CopyData>> + Send {
    let mut pending_header = options.header;
    let batches = rows.map(Some).chain(stream::once(async { None }));
    batches.flat_map(move |batch| {
        let data = match batch {
            Some(Ok(batch)) if batch.num_rows() == 0 => Ok(Vec::new()),
            Some(Ok(batch)) => {
                let options = CopyOptions {
                    header: std::mem::take(&mut pending_header),
                    ..options.clone()
                };
                copy_data(&names, &[batch], &options, &zone)
            }
            Some(Err(error)) => Err(to_pgwire(&error)),
            None if std::mem::take(&mut pending_header) => copy_data(&names, &[], &options, &zone),
            None => Ok(Vec::new()),
        };
        match data {
            Ok(data) => stream::iter(data.into_iter().map(Ok)).left_stream(),
            Err(error) => stream::once(async { Err(error) }).right_stream(),
        }
    })
}
