//! `nexmark`: the people, auctions and bids of the Nexmark benchmark, as one global event
//! sequence (`../shared/nexmark/GENERATOR.md` beside the checkout).
//!
//! Event `n` is a person, an auction or a bid by `n mod 50` (1:3:46); its ids follow from `n`
//! and its other fields are drawn from a random stream keyed by (`nexmark.seed`, `n`). So the
//! three sources `person`, `auction` and `bid` with the same options describe one consistent
//! sequence, and a resumed source continues with exactly the rows an uninterrupted one makes.
//!
//! Options: `nexmark.table.type` (`Person`, `Auction` or `Bid`; required),
//! `nexmark.event.rate` (events a second of the whole sequence, default 10000, `0` = as fast
//! as possible), `nexmark.event.num` (events in all, then the source ends; default unbounded),
//! `nexmark.seed` (default 0), `nexmark.max.chunk.size` (events per batch, default 1024,
//! at most 2^20). Event `n` happens at 2015-07-15 00:00:00 UTC + `n / rate` seconds (whole
//! milliseconds; an unpaced source uses the default density of 10000 events a second), not at
//! wall-clock time. The position is the number of the next event.

mod fields;
mod model;
mod rng;
mod rows;

use std::sync::Arc;

use arrow::datatypes::{DataType, Field, Schema, SchemaRef, TimeUnit};

use self::model::EventTimes;
use self::rows::Rows;
use crate::pacing::Pacer;
use crate::{ConnectorError, SourceBatch, SourceOptions, SourceReader};

/// Events a second when `nexmark.event.rate` is not given (Java nexmark's `firstEventRate`).
const DEFAULT_RATE: f64 = 10_000.0;
/// Events per batch when `nexmark.max.chunk.size` is not given.
const DEFAULT_CHUNK_SIZE: u64 = 1024;
/// The largest `nexmark.max.chunk.size`.
const MAX_CHUNK_SIZE: u64 = 1 << 20;

/// Which Nexmark relation a source produces.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NexmarkTable {
    /// People (1 event in 50).
    Person,
    /// Auctions (3 events in 50).
    Auction,
    /// Bids (46 events in 50).
    Bid,
}

impl NexmarkTable {
    /// Every relation.
    const ALL: [NexmarkTable; 3] = [Self::Person, Self::Auction, Self::Bid];

    /// From option `nexmark.table.type` (`Person`, `Auction` or `Bid`, in any case).
    pub(crate) fn from_options(options: &SourceOptions) -> Result<NexmarkTable, ConnectorError> {
        let option = "nexmark.table.type";
        let text = options
            .text(option)
            .ok_or_else(|| ConnectorError::MissingOption {
                connector: "nexmark".into(),
                option: option.into(),
            })?;
        Self::ALL
            .into_iter()
            .find(|table| table.name().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| ConnectorError::InvalidOption {
                option: option.into(),
                reason: format!("\"{text}\": expected Person, Auction or Bid"),
            })
    }

    /// The relation's name as the option spells it.
    fn name(self) -> &'static str {
        match self {
            Self::Person => "Person",
            Self::Auction => "Auction",
            Self::Bid => "Bid",
        }
    }
}

/// The columns of `table`, as in the Nexmark `CREATE SOURCE` statements.
pub(crate) fn schema(table: NexmarkTable) -> SchemaRef {
    use DataType::{Int64, Utf8};
    let timestamp = DataType::Timestamp(TimeUnit::Microsecond, None);
    let columns: &[(&str, DataType)] = match table {
        NexmarkTable::Person => &[
            ("id", Int64),
            ("name", Utf8),
            ("email_address", Utf8),
            ("credit_card", Utf8),
            ("city", Utf8),
            ("state", Utf8),
            ("date_time", timestamp),
            ("extra", Utf8),
        ],
        NexmarkTable::Auction => &[
            ("id", Int64),
            ("item_name", Utf8),
            ("description", Utf8),
            ("initial_bid", Int64),
            ("reserve", Int64),
            ("date_time", timestamp.clone()),
            ("expires", timestamp),
            ("seller", Int64),
            ("category", Int64),
            ("extra", Utf8),
        ],
        NexmarkTable::Bid => &[
            ("auction", Int64),
            ("bidder", Int64),
            ("price", Int64),
            ("channel", Utf8),
            ("url", Utf8),
            ("date_time", timestamp),
            ("extra", Utf8),
        ],
    };
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|(name, data_type)| Field::new(*name, data_type.clone(), false))
            .collect::<Vec<_>>(),
    ))
}

/// A running Nexmark source: the rows of one relation, a chunk of events at a time.
pub(crate) struct NexmarkReader {
    /// The generator of the relation's rows.
    rows: Box<dyn Rows>,
    /// The number of the next event.
    next_event: u64,
    /// The number of events in the sequence (`u64::MAX` if unbounded).
    end: u64,
    /// Events per batch at most.
    chunk_size: u64,
    /// Releases events at `nexmark.event.rate`.
    pacer: Pacer,
}

impl NexmarkReader {
    /// Opens a source of the relation `nexmark.table.type`, resuming at event `resume` (a
    /// position this reader produced) or at event 0.
    pub(crate) fn open(
        options: &SourceOptions,
        resume: Option<&str>,
    ) -> Result<NexmarkReader, ConnectorError> {
        let table = NexmarkTable::from_options(options)?;
        let rate = event_rate(options)?;
        let end = options
            .parsed::<u64>("nexmark.event.num")?
            .unwrap_or(u64::MAX);
        let seed = options.parsed::<u64>("nexmark.seed")?.unwrap_or(0);
        let chunk_size = chunk_size(options)?;
        let next_event = match resume {
            Some(text) => text
                .parse()
                .map_err(|_| ConnectorError::InvalidPosition(text.to_string()))?,
            None => 0,
        };
        let density = if rate > 0.0 { rate } else { DEFAULT_RATE };
        Ok(Self {
            rows: rows::rows(table, seed, EventTimes::new(density)),
            next_event,
            end,
            chunk_size,
            pacer: Pacer::new(rate),
        })
    }
}

/// Option `nexmark.event.rate`: a finite number of events a second, at least 0.
fn event_rate(options: &SourceOptions) -> Result<f64, ConnectorError> {
    let option = "nexmark.event.rate";
    match options.parsed::<f64>(option)? {
        None => Ok(DEFAULT_RATE),
        Some(rate) if rate.is_finite() && rate >= 0.0 => Ok(rate),
        Some(rate) => Err(ConnectorError::InvalidOption {
            option: option.into(),
            reason: format!("{rate}: expected a number of events a second, at least 0"),
        }),
    }
}

/// Option `nexmark.max.chunk.size`: events per batch, 1 to 2^20.
fn chunk_size(options: &SourceOptions) -> Result<u64, ConnectorError> {
    let option = "nexmark.max.chunk.size";
    match options.parsed::<u64>(option)? {
        None => Ok(DEFAULT_CHUNK_SIZE),
        Some(size) if (1..=MAX_CHUNK_SIZE).contains(&size) => Ok(size),
        Some(size) => Err(ConnectorError::InvalidOption {
            option: option.into(),
            reason: format!("{size}: expected 1 to {MAX_CHUNK_SIZE} events"),
        }),
    }
}

impl SourceReader for NexmarkReader {
    fn next_batch(&mut self) -> Result<Option<SourceBatch>, ConnectorError> {
        let remaining = self.end.saturating_sub(self.next_event);
        if remaining == 0 {
            return Ok(None);
        }
        let count = self.pacer.take(self.chunk_size.min(remaining));
        let events = self.next_event..self.next_event + count;
        let rows = self.rows.batch(events)?;
        self.next_event += count;
        Ok(Some(SourceBatch::inserts(
            rows,
            self.next_event.to_string(),
        )))
    }
}

#[cfg(test)]
mod tests {
    use arrow::array::{AsArray, RecordBatch};
    use arrow::compute::concat_batches;
    use arrow::datatypes::{Int64Type, TimestampMicrosecondType};

    use super::*;

    /// 2015-07-15 00:00:00 UTC in microseconds.
    const BASE_TIME_US: i64 = 1_436_918_400_000_000;

    fn options(pairs: &[(&str, &str)]) -> SourceOptions {
        SourceOptions::new(pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())))
    }

    /// Every batch of an unpaced `table` source of `events` events with `more` options,
    /// resuming at `resume`, and the last position.
    fn read(
        table: &str,
        events: u64,
        more: &[(&str, &str)],
        resume: Option<&str>,
    ) -> (Vec<RecordBatch>, String) {
        let events = events.to_string();
        let mut pairs = vec![
            ("nexmark.table.type", table),
            ("nexmark.event.rate", "0"),
            ("nexmark.event.num", events.as_str()),
        ];
        pairs.extend_from_slice(more);
        let mut reader = NexmarkReader::open(&options(&pairs), resume).unwrap();
        let mut batches = Vec::new();
        let mut position = resume.unwrap_or("0").to_string();
        while let Some(batch) = reader.next_batch().unwrap() {
            position = batch.position.clone();
            batches.push(batch.into_inserted());
        }
        (batches, position)
    }

    /// All rows of an unpaced `table` source of `events` events, as one batch.
    fn rows(table: &str, events: u64, more: &[(&str, &str)], resume: Option<&str>) -> RecordBatch {
        let (batches, _) = read(table, events, more, resume);
        let table = NexmarkTable::ALL
            .into_iter()
            .find(|t| t.name() == table)
            .unwrap();
        concat_batches(&schema(table), &batches).unwrap()
    }

    fn int64(batch: &RecordBatch, column: &str) -> Vec<i64> {
        let column = batch.column_by_name(column).unwrap();
        column.as_primitive::<Int64Type>().values().to_vec()
    }

    fn micros(batch: &RecordBatch, column: &str) -> Vec<i64> {
        let column = batch.column_by_name(column).unwrap();
        column
            .as_primitive::<TimestampMicrosecondType>()
            .values()
            .to_vec()
    }

    fn strings(batch: &RecordBatch, column: &str) -> Vec<String> {
        let column = batch.column_by_name(column).unwrap().as_string::<i32>();
        column.iter().map(|v| v.unwrap().to_string()).collect()
    }

    /// The numbers of the events of `table` in `events`, by the 1:3:46 rule.
    fn numbers(table: NexmarkTable, events: std::ops::Range<u64>) -> Vec<u64> {
        events
            .filter(|n| {
                let rem = n % 50;
                match table {
                    NexmarkTable::Person => rem == 0,
                    NexmarkTable::Auction => (1..4).contains(&rem),
                    NexmarkTable::Bid => rem >= 4,
                }
            })
            .collect()
    }

    #[test]
    fn proportions_are_1_3_46() {
        let counts: Vec<usize> = ["Person", "Auction", "Bid"]
            .iter()
            .map(|table| rows(table, 5000, &[], None).num_rows())
            .collect();
        assert_eq!(counts, [100, 300, 4600]);
    }

    #[test]
    fn rows_do_not_depend_on_chunks_or_resuming() {
        for table in ["Person", "Auction", "Bid"] {
            let whole = rows(table, 5000, &[("nexmark.seed", "7")], None);
            let small = rows(
                table,
                5000,
                &[("nexmark.seed", "7"), ("nexmark.max.chunk.size", "7")],
                None,
            );
            assert_eq!(whole, small, "{table}");
            let (first, position) = read(
                table,
                2345,
                &[("nexmark.seed", "7"), ("nexmark.max.chunk.size", "333")],
                None,
            );
            assert_eq!(position, "2345");
            let (second, _) = read(table, 5000, &[("nexmark.seed", "7")], Some(&position));
            let resumed = concat_batches(&whole.schema(), first.iter().chain(&second)).unwrap();
            assert_eq!(whole, resumed, "{table}");
        }
    }

    #[test]
    fn seeds_change_the_rows() {
        let zero = rows("Bid", 1000, &[], None);
        let one = rows("Bid", 1000, &[("nexmark.seed", "1")], None);
        assert_ne!(strings(&zero, "extra"), strings(&one, "extra"));
        assert_ne!(int64(&zero, "price"), int64(&one, "price"));
    }

    #[test]
    fn ids_follow_the_event_numbers() {
        let start = 5_000_000;
        let resume = start.to_string();
        let range = start..start + 20_000;
        let people = rows("Person", range.end, &[], Some(&resume));
        let ids: Vec<i64> = numbers(NexmarkTable::Person, range.clone())
            .iter()
            .map(|n| 1000 + (n / 50) as i64)
            .collect();
        assert_eq!(int64(&people, "id"), ids);
        let auctions = rows("Auction", range.end, &[], Some(&resume));
        let ids: Vec<i64> = numbers(NexmarkTable::Auction, range.clone())
            .iter()
            .map(|n| 1000 + (n / 50 * 3 + n % 50 - 1) as i64)
            .collect();
        assert_eq!(int64(&auctions, "id"), ids);
    }

    #[test]
    fn references_stay_within_the_spec_ranges() {
        let start = 5_000_000;
        let resume = start.to_string();
        let range = start..start + 20_000;
        let auctions = rows("Auction", range.end, &[], Some(&resume));
        let sellers = int64(&auctions, "seller");
        let mut hot = 0;
        for (n, seller) in numbers(NexmarkTable::Auction, range.clone())
            .iter()
            .zip(&sellers)
        {
            let last_person = (n / 50) as i64;
            assert!((1000 + last_person - 999..=1000 + last_person + 10).contains(seller));
            hot += usize::from(*seller == 1000 + last_person / 100 * 100);
        }
        assert!((800..1000).contains(&hot), "{hot} of {}", sellers.len());

        let bids = rows("Bid", range.end, &[], Some(&resume));
        let events = numbers(NexmarkTable::Bid, range);
        let (auction, bidder) = (int64(&bids, "auction"), int64(&bids, "bidder"));
        for ((n, auction), bidder) in events.iter().zip(&auction).zip(&bidder) {
            let last_auction = (n / 50 * 3 + 2) as i64;
            assert!((1000 + last_auction - 100..=1000 + last_auction + 10).contains(auction));
            let last_person = (n / 50) as i64;
            assert!((1000 + last_person - 999..=1000 + last_person + 10).contains(bidder));
        }
    }

    #[test]
    fn fields_have_their_domains() {
        let auctions = rows("Auction", 20_000, &[], None);
        assert!(int64(&auctions, "category")
            .iter()
            .all(|c| (10..=14).contains(c)));
        let (initial, reserve) = (int64(&auctions, "initial_bid"), int64(&auctions, "reserve"));
        assert!(initial
            .iter()
            .zip(&reserve)
            .all(|(i, r)| (100..=100_000_000).contains(i) && r > i));
        let (created, expires) = (micros(&auctions, "date_time"), micros(&auctions, "expires"));
        assert!(created.iter().zip(&expires).all(|(c, e)| e > c));

        let people = rows("Person", 20_000, &[], None);
        assert!(strings(&people, "state")
            .iter()
            .all(|s| fields::US_STATES.contains(&s.as_str())));
        assert!(strings(&people, "credit_card")
            .iter()
            .all(|c| c.len() == 19 && c.split(' ').all(|g| g.len() == 4)));
        assert!(strings(&people, "email_address")
            .iter()
            .all(|e| e.ends_with(".com") && !e.starts_with(' ') && !e.contains(" @")));

        let bids = rows("Bid", 5000, &[], None);
        let channels = strings(&bids, "channel");
        let hot = channels
            .iter()
            .filter(|c| fields::HOT_CHANNELS.contains(&c.as_str()))
            .count();
        assert!((2000..2600).contains(&hot), "{hot}");
        assert!(strings(&bids, "url")
            .iter()
            .all(|u| u.starts_with("https://www.nexmark.com/") && u.contains("/item.htm?query=1")));
        let sizes = strings(&bids, "extra")
            .iter()
            .map(String::len)
            .collect::<Vec<_>>();
        assert!(sizes.iter().all(|s| (54..82).contains(s)));
    }

    #[test]
    fn event_times_follow_the_event_numbers() {
        let bids = rows("Bid", 5000, &[], None);
        let times = micros(&bids, "date_time");
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        assert_eq!(times[0], BASE_TIME_US);
        assert_eq!(
            *times.last().unwrap(),
            BASE_TIME_US + 4999 * 100 / 1000 * 1000
        );

        let pairs = [
            ("nexmark.table.type", "Person"),
            ("nexmark.event.rate", "50000"),
            ("nexmark.event.num", "5000"),
        ];
        let mut reader = NexmarkReader::open(&options(&pairs), None).unwrap();
        let mut times = Vec::new();
        while let Some(batch) = reader.next_batch().unwrap() {
            times.extend(micros(&batch.into_inserted(), "date_time"));
        }
        let expected: Vec<i64> = numbers(NexmarkTable::Person, 0..5000)
            .iter()
            .map(|n| BASE_TIME_US + (n * 20 / 1000 * 1000) as i64)
            .collect();
        assert_eq!(times, expected);
        assert!(times.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn event_num_ends_the_source() {
        let mut total = 0;
        for table in ["Person", "Auction", "Bid"] {
            let (batches, position) = read(table, 5000, &[("nexmark.max.chunk.size", "999")], None);
            assert_eq!(position, "5000");
            total += batches.iter().map(RecordBatch::num_rows).sum::<usize>();
        }
        assert_eq!(total, 5000);
        let (batches, _) = read("Bid", 5000, &[], Some("5000"));
        assert!(batches.is_empty());
    }

    #[test]
    fn every_option_is_read() {
        let options = options(&[
            ("connector", "nexmark"),
            ("nexmark.table.type", "bid"),
            ("nexmark.event.rate", "1000"),
            ("nexmark.event.num", "10"),
            ("nexmark.seed", "3"),
            ("nexmark.max.chunk.size", "64"),
        ]);
        NexmarkReader::open(&options, None).unwrap();
        options.connector();
        options.reject_unknown("nexmark").unwrap();
    }

    #[test]
    fn bad_options_are_errors() {
        let open = |pairs: &[(&str, &str)], resume| {
            let mut all = vec![("nexmark.table.type", "Bid")];
            all.extend_from_slice(pairs);
            NexmarkReader::open(&options(&all), resume).err()
        };
        for pairs in [
            [("nexmark.table.type", "Bids")],
            [("nexmark.event.rate", "-1")],
            [("nexmark.event.rate", "fast")],
            [("nexmark.event.rate", "NaN")],
            [("nexmark.event.rate", "inf")],
            [("nexmark.event.num", "-5")],
            [("nexmark.seed", "x")],
            [("nexmark.max.chunk.size", "0")],
            [("nexmark.max.chunk.size", "2000000")],
        ] {
            assert!(
                matches!(
                    open(&pairs, None),
                    Some(ConnectorError::InvalidOption { .. })
                ),
                "{pairs:?}"
            );
        }
        assert!(matches!(
            open(&[], Some("later")),
            Some(ConnectorError::InvalidPosition(_))
        ));
        assert!(matches!(
            NexmarkTable::from_options(&options(&[])),
            Err(ConnectorError::MissingOption { .. })
        ));
    }
}
