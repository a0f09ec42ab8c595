//! The three Nexmark tables the `nexmark` connector generates, as the benchmark and the
//! PostgreSQL comparison test create them.

/// A Nexmark table: its source name, the generator's `nexmark.table.type`, its columns, and
/// which of every 50 events are its rows (`first..first + len`: 1 person, 3 auctions, 46 bids).
pub struct NexmarkTable {
    /// The name the source (and the comparison's PostgreSQL table) gets.
    pub name: &'static str,
    /// The connector's `nexmark.table.type`.
    pub table_type: &'static str,
    /// The column list, as `CREATE SOURCE` and `CREATE TABLE` take it.
    pub columns: &'static str,
    first: u64,
    len: u64,
}

impl NexmarkTable {
    /// The rows of this table among `events` generated events.
    pub fn rows(&self, events: u64) -> u64 {
        events / 50 * self.len + (events % 50).saturating_sub(self.first).min(self.len)
    }

    /// `CREATE SOURCE` for this table over `events` events, generated at `rate` events per
    /// second (`0`: as fast as possible), with a watermark on `date_time` trailing it by
    /// `watermark_delay_seconds` if given.
    pub fn create_source(
        &self,
        events: u64,
        rate: u64,
        watermark_delay_seconds: Option<u64>,
    ) -> String {
        let watermark = watermark_delay_seconds
            .map(|delay| {
                format!(", WATERMARK FOR date_time AS date_time - INTERVAL '{delay}' SECOND")
            })
            .unwrap_or_default();
        format!(
            "CREATE SOURCE {} ({}{watermark}) WITH (connector = 'nexmark', \
             nexmark.table.type = '{}', nexmark.event.rate = '{rate}', \
             nexmark.event.num = '{events}');\n",
            self.name, self.columns, self.table_type,
        )
    }
}

/// Person, auction and bid.
pub const NEXMARK_TABLES: [NexmarkTable; 3] = [
    NexmarkTable {
        name: "person",
        table_type: "Person",
        columns: "id BIGINT, name VARCHAR, email_address VARCHAR, credit_card VARCHAR, \
                  city VARCHAR, state VARCHAR, date_time TIMESTAMP, extra VARCHAR",
        first: 0,
        len: 1,
    },
    NexmarkTable {
        name: "auction",
        table_type: "Auction",
        columns: "id BIGINT, item_name VARCHAR, description VARCHAR, initial_bid BIGINT, \
                  reserve BIGINT, date_time TIMESTAMP, expires TIMESTAMP, seller BIGINT, \
                  category BIGINT, extra VARCHAR",
        first: 1,
        len: 3,
    },
    NexmarkTable {
        name: "bid",
        table_type: "Bid",
        columns: "auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, \
                  date_time TIMESTAMP, extra VARCHAR",
        first: 4,
        len: 46,
    },
];

/// The auction table (3 of every 50 events).
pub const AUCTION: &NexmarkTable = &NEXMARK_TABLES[1];

/// The bid table (46 of every 50 events).
pub const BID: &NexmarkTable = &NEXMARK_TABLES[2];
