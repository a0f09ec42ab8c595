-- Nexmark q5 (Hot Items) as an EMIT ON WINDOW CLOSE view, over a bid source with Flink's
-- Nexmark watermark (date_time - 4 s): each window's hot auctions once the window has closed,
-- the state only of the open windows, as Flink's windowing TVFs keep it. The window's start is
-- in the result: it is the column the watermark closes.
CREATE MATERIALIZED VIEW nexmark_q5 AS
SELECT AuctionBids.auction, AuctionBids.num, AuctionBids.starttime
FROM (
    SELECT bid.auction, count(*) AS num, window_start AS starttime, window_end AS endtime
    FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
    GROUP BY bid.auction, window_start, window_end
) AS AuctionBids
JOIN (
    SELECT max(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
    FROM (
        SELECT count(*) AS num, window_start AS starttime, window_end AS endtime
        FROM HOP(bid, date_time, INTERVAL '2' SECOND, INTERVAL '10' SECOND)
        GROUP BY bid.auction, window_start, window_end
    ) AS CountBids
    GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON  AuctionBids.starttime = MaxBids.starttime
AND AuctionBids.endtime   = MaxBids.endtime
AND AuctionBids.num >= MaxBids.maxn
EMIT ON WINDOW CLOSE;
