//! Batches of one relation's rows for a range of event numbers.

use std::ops::Range;
use std::sync::Arc;

use arrow::array::{ArrayRef, Int64Array, RecordBatch, StringBuilder, TimestampMicrosecondArray};
use arrow::datatypes::SchemaRef;
use arrow::error::ArrowError;

use super::fields::{
    extra, pick, price, push_credit_card, push_email, push_name, push_string, Channels, US_CITIES,
    US_STATES,
};
use super::model::{
    auction_id, bid_auction, bidder, category, kind, person_id, seller, EventTimes,
};
use super::rng::{Rng, Stream};
use super::{schema, NexmarkTable};

/// The average size of a person in bytes, which `extra` makes up.
const AVG_PERSON_SIZE: usize = 200;
/// The average size of an auction in bytes.
const AVG_AUCTION_SIZE: usize = 500;
/// The average size of a bid in bytes.
const AVG_BID_SIZE: usize = 100;

/// Makes the rows of one relation.
pub(super) trait Rows: Send {
    /// The rows of this relation among the events numbered `events`.
    fn batch(&mut self, events: Range<u64>) -> Result<RecordBatch, ArrowError>;
}

/// The generator of `table`'s rows under `seed`, with event times `times`.
pub(super) fn rows(table: NexmarkTable, seed: u64, times: EventTimes) -> Box<dyn Rows> {
    match table {
        NexmarkTable::Person => Box::new(Generator::<PersonColumns>::new(seed, times, ())),
        NexmarkTable::Auction => Box::new(Generator::<AuctionColumns>::new(seed, times, ())),
        NexmarkTable::Bid => Box::new(Generator::<BidColumns>::new(
            seed,
            times,
            Channels::new(seed),
        )),
    }
}

/// One event, as the columns see it.
struct Event<'a> {
    /// The event number.
    n: u64,
    /// The event's own random stream.
    rng: Rng,
    /// The event time in milliseconds.
    millis: i64,
    /// The event times of the sequence.
    times: &'a EventTimes,
}

impl Event<'_> {
    /// The event time in microseconds (the `date_time` columns' unit).
    fn micros(&self) -> i64 {
        self.millis.saturating_mul(1000)
    }
}

/// The columns of one relation's batch, filled row by row.
trait Columns {
    /// The relation.
    const TABLE: NexmarkTable;
    /// What every row draws on besides its event (made once per source).
    type Context: Send;
    /// Empty columns with room for `rows` rows.
    fn with_capacity(rows: usize) -> Self;
    /// Appends the row of `event`.
    fn push(&mut self, event: &mut Event<'_>, context: &Self::Context);
    /// The columns, in schema order.
    fn finish(self) -> Vec<ArrayRef>;
}

/// Rows of one relation: each event's row is drawn from a stream keyed by (seed, event number).
struct Generator<C: Columns> {
    /// The seed of every event's random stream.
    seed: u64,
    /// The event times of the sequence.
    times: EventTimes,
    /// The relation's columns.
    schema: SchemaRef,
    /// What the rows draw on besides their events.
    context: C::Context,
}

impl<C: Columns> Generator<C> {
    /// A generator of `C`'s rows.
    fn new(seed: u64, times: EventTimes, context: C::Context) -> Self {
        Self {
            seed,
            times,
            schema: schema(C::TABLE),
            context,
        }
    }
}

impl<C: Columns> Rows for Generator<C> {
    fn batch(&mut self, events: Range<u64>) -> Result<RecordBatch, ArrowError> {
        let numbers = events.filter(|&n| kind(n) == C::TABLE);
        let mut columns = C::with_capacity(numbers.clone().count());
        for n in numbers {
            let mut event = Event {
                n,
                rng: Rng::new(self.seed, Stream::Event, n),
                millis: self.times.millis(n),
                times: &self.times,
            };
            columns.push(&mut event, &self.context);
        }
        RecordBatch::try_new(Arc::clone(&self.schema), columns.finish())
    }
}

/// Appends the text `fill` writes (into `scratch`, reused) to `builder`; returns its length.
fn append_with(
    builder: &mut StringBuilder,
    scratch: &mut String,
    fill: impl FnOnce(&mut String),
) -> usize {
    scratch.clear();
    fill(scratch);
    builder.append_value(&*scratch);
    scratch.len()
}

/// A finished `BIGINT` column.
fn int64(values: Vec<i64>) -> ArrayRef {
    Arc::new(Int64Array::from(values))
}

/// A finished `TIMESTAMP` column.
fn timestamps(values: Vec<i64>) -> ArrayRef {
    Arc::new(TimestampMicrosecondArray::from(values))
}

/// A finished `VARCHAR` column.
fn text(mut builder: StringBuilder) -> ArrayRef {
    Arc::new(builder.finish())
}

/// An empty `VARCHAR` builder for `rows` values of about `average` bytes.
fn strings(rows: usize, average: usize) -> StringBuilder {
    StringBuilder::with_capacity(rows, rows * average)
}

/// The columns of `person`.
struct PersonColumns {
    id: Vec<i64>,
    name: StringBuilder,
    email_address: StringBuilder,
    credit_card: StringBuilder,
    city: StringBuilder,
    state: StringBuilder,
    date_time: Vec<i64>,
    extra: StringBuilder,
    scratch: String,
}

impl Columns for PersonColumns {
    const TABLE: NexmarkTable = NexmarkTable::Person;
    type Context = ();

    fn with_capacity(rows: usize) -> Self {
        Self {
            id: Vec::with_capacity(rows),
            name: strings(rows, 12),
            email_address: strings(rows, 16),
            credit_card: strings(rows, 19),
            city: strings(rows, 8),
            state: strings(rows, 2),
            date_time: Vec::with_capacity(rows),
            extra: strings(rows, 140),
            scratch: String::new(),
        }
    }

    fn push(&mut self, event: &mut Event<'_>, _: &()) {
        self.date_time.push(event.micros());
        let rng = &mut event.rng;
        self.id.push(person_id(event.n));
        let name = append_with(&mut self.name, &mut self.scratch, |s| push_name(rng, s));
        let email = append_with(&mut self.email_address, &mut self.scratch, |s| {
            push_email(rng, s)
        });
        let card = append_with(&mut self.credit_card, &mut self.scratch, |s| {
            push_credit_card(rng, s)
        });
        let city = pick(rng, &US_CITIES);
        self.city.append_value(city);
        let state = pick(rng, &US_STATES);
        self.state.append_value(state);
        let size = 8 + name + email + card + city.len() + state.len();
        self.extra.append_value(extra(rng, size, AVG_PERSON_SIZE));
    }

    fn finish(self) -> Vec<ArrayRef> {
        vec![
            int64(self.id),
            text(self.name),
            text(self.email_address),
            text(self.credit_card),
            text(self.city),
            text(self.state),
            timestamps(self.date_time),
            text(self.extra),
        ]
    }
}

/// The columns of `auction`.
struct AuctionColumns {
    id: Vec<i64>,
    item_name: StringBuilder,
    description: StringBuilder,
    initial_bid: Vec<i64>,
    reserve: Vec<i64>,
    date_time: Vec<i64>,
    expires: Vec<i64>,
    seller: Vec<i64>,
    category: Vec<i64>,
    extra: StringBuilder,
    scratch: String,
}

impl Columns for AuctionColumns {
    const TABLE: NexmarkTable = NexmarkTable::Auction;
    type Context = ();

    fn with_capacity(rows: usize) -> Self {
        Self {
            id: Vec::with_capacity(rows),
            item_name: strings(rows, 12),
            description: strings(rows, 52),
            initial_bid: Vec::with_capacity(rows),
            reserve: Vec::with_capacity(rows),
            date_time: Vec::with_capacity(rows),
            expires: Vec::with_capacity(rows),
            seller: Vec::with_capacity(rows),
            category: Vec::with_capacity(rows),
            extra: strings(rows, 390),
            scratch: String::new(),
        }
    }

    fn push(&mut self, event: &mut Event<'_>, _: &()) {
        self.date_time.push(event.micros());
        let (n, rng) = (event.n, &mut event.rng);
        self.id.push(auction_id(n));
        self.seller.push(seller(n, rng));
        self.category.push(category(rng));
        let initial_bid = price(rng);
        self.initial_bid.push(initial_bid);
        let length = event.times.auction_length(n, rng);
        self.expires
            .push(event.millis.saturating_add(length).saturating_mul(1000));
        let item_name = append_with(&mut self.item_name, &mut self.scratch, |s| {
            push_string(rng, s, 20, ' ')
        });
        let description = append_with(&mut self.description, &mut self.scratch, |s| {
            push_string(rng, s, 100, ' ')
        });
        self.reserve.push(initial_bid + price(rng));
        let size = 8 + item_name + description + 5 * 8;
        self.extra.append_value(extra(rng, size, AVG_AUCTION_SIZE));
    }

    fn finish(self) -> Vec<ArrayRef> {
        vec![
            int64(self.id),
            text(self.item_name),
            text(self.description),
            int64(self.initial_bid),
            int64(self.reserve),
            timestamps(self.date_time),
            timestamps(self.expires),
            int64(self.seller),
            int64(self.category),
            text(self.extra),
        ]
    }
}

/// The columns of `bid`.
struct BidColumns {
    auction: Vec<i64>,
    bidder: Vec<i64>,
    price: Vec<i64>,
    channel: StringBuilder,
    url: StringBuilder,
    date_time: Vec<i64>,
    extra: StringBuilder,
}

impl Columns for BidColumns {
    const TABLE: NexmarkTable = NexmarkTable::Bid;
    type Context = Channels;

    fn with_capacity(rows: usize) -> Self {
        Self {
            auction: Vec::with_capacity(rows),
            bidder: Vec::with_capacity(rows),
            price: Vec::with_capacity(rows),
            channel: strings(rows, 8),
            url: strings(rows, 52),
            date_time: Vec::with_capacity(rows),
            extra: strings(rows, 68),
        }
    }

    fn push(&mut self, event: &mut Event<'_>, context: &Self::Context) {
        self.date_time.push(event.micros());
        let (n, rng) = (event.n, &mut event.rng);
        self.auction.push(bid_auction(n, rng));
        self.bidder.push(bidder(n, rng));
        self.price.push(price(rng));
        let (channel, url) = context.pick(rng);
        self.channel.append_value(channel);
        self.url.append_value(url);
        self.extra.append_value(extra(rng, 4 * 8, AVG_BID_SIZE));
    }

    fn finish(self) -> Vec<ArrayRef> {
        vec![
            int64(self.auction),
            int64(self.bidder),
            int64(self.price),
            text(self.channel),
            text(self.url),
            timestamps(self.date_time),
            text(self.extra),
        ]
    }
}
