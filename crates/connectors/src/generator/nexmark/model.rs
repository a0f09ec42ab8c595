//! The event sequence: which relation event `n` belongs to, the ids it names, and its event
//! time (GENERATOR.md §1, §2 and §5).

use super::rng::Rng;
use super::NexmarkTable;

/// People per epoch of the interleaving.
const PERSON_PROPORTION: u64 = 1;
/// Auctions per epoch.
const AUCTION_PROPORTION: u64 = 3;
/// Events per epoch (1 person, 3 auctions, 46 bids).
const TOTAL_PROPORTION: u64 = 50;
/// The id of the first person.
const FIRST_PERSON_ID: i64 = 1000;
/// The id of the first auction.
const FIRST_AUCTION_ID: i64 = 1000;
/// The first category.
const FIRST_CATEGORY_ID: i64 = 10;
/// The number of categories.
const NUM_CATEGORIES: u64 = 5;
/// One auction in this many is not by a hot seller.
const HOT_SELLERS_RATIO: u64 = 4;
/// One bid in this many is not for a hot auction.
const HOT_AUCTION_RATIO: u64 = 2;
/// One bid in this many is not by a hot bidder.
const HOT_BIDDERS_RATIO: u64 = 4;
/// Consecutive ids that share one hot seller, bidder or auction.
const HOT_KEY_SPAN: u64 = 100;
/// People a random person is drawn from (the most recent ones).
const NUM_ACTIVE_PEOPLE: u64 = 1000;
/// People a random person may name that do not exist yet.
const PERSON_ID_LEAD: u64 = 10;
/// Auctions a random auction is drawn from (the most recent ones).
const NUM_IN_FLIGHT_AUCTIONS: u64 = 100;
/// Auctions a random auction may name that do not exist yet.
const AUCTION_ID_LEAD: u64 = 10;
/// Event time 0: 2015-07-15 00:00:00 UTC, in milliseconds (Beam's `BASE_TIME`).
const BASE_TIME_MS: i64 = 1_436_918_400_000;

/// The relation of event `n`.
pub(super) fn kind(n: u64) -> NexmarkTable {
    match n % TOTAL_PROPORTION {
        rem if rem < PERSON_PROPORTION => NexmarkTable::Person,
        rem if rem < PERSON_PROPORTION + AUCTION_PROPORTION => NexmarkTable::Auction,
        _ => NexmarkTable::Bid,
    }
}

/// The id of the person of event `n`.
pub(super) fn person_id(n: u64) -> i64 {
    FIRST_PERSON_ID + last_person(n) as i64
}

/// The id of the auction of event `n`.
pub(super) fn auction_id(n: u64) -> i64 {
    FIRST_AUCTION_ID + last_auction(n) as i64
}

/// The seller of the auction of event `n`: with probability 3/4 the hot seller (the first of
/// the last 100 people), else a random active person.
pub(super) fn seller(n: u64, rng: &mut Rng) -> i64 {
    let base0 = if rng.below(HOT_SELLERS_RATIO) > 0 {
        last_person(n) / HOT_KEY_SPAN * HOT_KEY_SPAN
    } else {
        random_person(n, rng)
    };
    FIRST_PERSON_ID + base0 as i64
}

/// The auction the bid of event `n` is for: with probability 1/2 the hot auction (the first
/// of the last 100 auctions), else a random in-flight auction.
pub(super) fn bid_auction(n: u64, rng: &mut Rng) -> i64 {
    let base0 = if rng.below(HOT_AUCTION_RATIO) > 0 {
        last_auction(n) / HOT_KEY_SPAN * HOT_KEY_SPAN
    } else {
        random_auction(n, rng)
    };
    FIRST_AUCTION_ID + base0 as i64
}

/// The bidder of the bid of event `n`: with probability 3/4 the hot bidder (the second of the
/// last 100 people, so that it is not the hot seller), else a random active person.
pub(super) fn bidder(n: u64, rng: &mut Rng) -> i64 {
    let base0 = if rng.below(HOT_BIDDERS_RATIO) > 0 {
        last_person(n) / HOT_KEY_SPAN * HOT_KEY_SPAN + 1
    } else {
        random_person(n, rng)
    };
    FIRST_PERSON_ID + base0 as i64
}

/// A uniform category, 10 to 14.
pub(super) fn category(rng: &mut Rng) -> i64 {
    FIRST_CATEGORY_ID + rng.below(NUM_CATEGORIES) as i64
}

/// The base-0 id of the last person generated at or before event `n` (one per epoch, first).
fn last_person(n: u64) -> u64 {
    n / TOTAL_PROPORTION
}

/// The base-0 id of the last auction generated at or before event `n` (0 before the first).
fn last_auction(n: u64) -> u64 {
    let (epoch, offset) = (n / TOTAL_PROPORTION, n % TOTAL_PROPORTION);
    if offset < PERSON_PROPORTION {
        (epoch * AUCTION_PROPORTION).saturating_sub(1)
    } else {
        epoch * AUCTION_PROPORTION + (offset - PERSON_PROPORTION).min(AUCTION_PROPORTION - 1)
    }
}

/// A random active person as of event `n`, base 0: one of the last 1000, or one of the next 10.
fn random_person(n: u64, rng: &mut Rng) -> u64 {
    let people = last_person(n) + 1;
    let active = people.min(NUM_ACTIVE_PEOPLE);
    people - active + rng.below(active + PERSON_ID_LEAD)
}

/// A random in-flight auction as of event `n`, base 0: one of the last 100, or of the next 10.
fn random_auction(n: u64, rng: &mut Rng) -> u64 {
    let last = last_auction(n);
    let first = last.saturating_sub(NUM_IN_FLIGHT_AUCTIONS);
    first + rng.below(last - first + 1 + AUCTION_ID_LEAD)
}

/// When each event happens: `BASE_TIME_MS + floor(n · inter-event delay in µs) / 1000`.
#[derive(Clone, Copy, Debug)]
pub(super) struct EventTimes {
    delay_us: f64,
}

impl EventTimes {
    /// Event times for `rate` events per second of event time (`rate > 0`).
    pub(super) fn new(rate: f64) -> Self {
        Self {
            delay_us: 1e6 / rate,
        }
    }

    /// The event time of event `n`, in milliseconds since the Unix epoch.
    pub(super) fn millis(&self, n: u64) -> i64 {
        BASE_TIME_MS.saturating_add((n as f64 * self.delay_us) as i64 / 1000)
    }

    /// How long an auction created at event `n` runs, in milliseconds: `1 + uniform(2·h)`,
    /// where `h` is the event-time distance to the auction created 100 auctions later.
    pub(super) fn auction_length(&self, n: u64, rng: &mut Rng) -> i64 {
        let ahead = NUM_IN_FLIGHT_AUCTIONS * TOTAL_PROPORTION / AUCTION_PROPORTION;
        let horizon = self
            .millis(n.saturating_add(ahead))
            .saturating_sub(self.millis(n));
        let length = rng.below(u64::try_from(horizon.saturating_mul(2)).unwrap_or(0).max(1));
        1 + i64::try_from(length).unwrap_or(i64::MAX - 1)
    }
}
