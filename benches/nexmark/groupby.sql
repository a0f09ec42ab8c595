-- The keyed aggregate of the performance goals (not a Nexmark query): count and max per
-- auction over generated rows with 100,000 auctions. The bench creates the source `bids`.
CREATE MATERIALIZED VIEW bids_per_auction AS
SELECT auction, count(*) AS bids, max(price) AS max_price
FROM bids
GROUP BY auction;
