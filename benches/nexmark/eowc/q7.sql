-- Nexmark q7 (Highest Bid) as an EMIT ON WINDOW CLOSE view, over a bid source with Flink's
-- Nexmark watermark (date_time - 4 s): the join of each bid with its window's maximum is an
-- interval join (the bid's time within the 10 s before the window's end), whose rows close,
-- and are forgotten, once both sides' watermarks have passed them.
CREATE MATERIALIZED VIEW nexmark_q7 AS
SELECT B.auction, B.price, B.bidder, B.date_time, B.extra
FROM bid B
JOIN (
    SELECT MAX(price) AS maxprice, window_end AS date_time
    FROM TUMBLE(bid, date_time, INTERVAL '10' SECOND)
    GROUP BY window_start, window_end
) B1 ON B.price = B1.maxprice
WHERE B.date_time BETWEEN B1.date_time - INTERVAL '10' SECOND AND B1.date_time
EMIT ON WINDOW CLOSE;
