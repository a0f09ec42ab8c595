CREATE SCHEMA analytics;
CREATE TABLE orders (
  id bigint PRIMARY KEY,
  customer text NOT NULL,
  amount numeric(12,2),
  created_at timestamptz,
  tags text[],
  attrs jsonb
);
CREATE INDEX orders_customer_idx ON orders (customer);
COMMENT ON TABLE orders IS 'Customer orders';
COMMENT ON COLUMN orders.amount IS 'Order total in EUR';
CREATE TABLE customers (name text PRIMARY KEY, region varchar(20), vip boolean NOT NULL DEFAULT false);
CREATE VIEW big_orders AS SELECT id, customer, amount FROM orders WHERE amount > 100;
CREATE MATERIALIZED VIEW analytics.customer_totals AS
  SELECT customer, count(*) AS order_count, sum(amount) AS total FROM orders GROUP BY customer;
COMMENT ON MATERIALIZED VIEW analytics.customer_totals IS 'Totals per customer';
INSERT INTO customers VALUES ('ann', 'north', true), ('bob', 'south', false);
INSERT INTO orders VALUES
  (1, 'ann', 10.50, '2026-01-01 10:00:00+00', '{a,b}', '{"k": 1}'),
  (2, 'bob', 250.00, '2026-01-02 11:30:00+00', '{}', '{"k": 2}'),
  (3, 'ann', 120.25, '2026-01-03 12:45:00+00', NULL, NULL);
