-- Distinct SQL sent by psycopg3_compat to PostgreSQL 15 (log_statement=all),
-- in first-seen order; regenerate with tests/clients/validate_against_pg.sh.
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = 'psycopg3_param', $2 = 'psycopg3_tx', $3 = 'psycopg3_rb', $4 = 'psycopg3_copy'
DELETE FROM customers WHERE name IN ($1, $2, $3, $4)
-- next
-- sent 12x via simple query
BEGIN
-- next
-- sent 3x via simple query, extended protocol (unnamed statement)
SELECT id, customer, amount, created_at, tags, attrs FROM orders ORDER BY id
-- next
-- sent 9x via simple query
COMMIT
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = '7', $2 = '5000000000', $3 = 'héllo', $4 = '-12.345', $5 = '2026-01-02 11:30:00+00', $6 = 't', $7 = '{x,"y z",NULL}', $8 = NULL
SELECT $1, $2, $3, $4, $5, $6, $7::text[], $8::text
-- next
-- sent 3x via extended protocol (unnamed statement)
-- first parameters: $1 = '2'
SELECT id FROM orders WHERE id = $1 ORDER BY id
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = 'ann'
SELECT id FROM orders WHERE customer = $1 ORDER BY id
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = '100.00'
SELECT id FROM orders WHERE amount > $1 ORDER BY id
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = '2026-01-02 00:00:00+00'
SELECT id FROM orders WHERE created_at >= $1 ORDER BY id
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = '{a,b}'
SELECT id FROM orders WHERE tags = $1 ORDER BY id
-- next
-- sent 2x via extended protocol (unnamed statement)
-- first parameters: $1 = 't'
SELECT name FROM customers WHERE vip = $1 ORDER BY name
-- next
-- sent 1x via extended protocol (unnamed statement)
-- first parameters: $1 = 'psycopg3_param', $2 = NULL, $3 = 'f'
INSERT INTO customers VALUES ($1, $2, $3)
-- next
-- sent 7x via extended protocol (unnamed statement)
-- first parameters: $1 = 'psycopg3_param'
SELECT region, vip FROM customers WHERE name = $1
-- next
-- sent 6x via extended protocol (named statement)
-- first parameters: $1 = '1'
SELECT customer, amount FROM orders WHERE id = $1
-- next
-- sent 3x via extended protocol (named statement)
-- first parameters: $1 = '3'
SELECT count(*) FROM orders WHERE id <= $1
-- next
-- sent 1x via simple query
INSERT INTO customers VALUES ('psycopg3_tx', 'east', false)
-- next
-- sent 1x via simple query
INSERT INTO customers VALUES ('psycopg3_rb', 'east', true)
-- next
-- sent 1x via simple query
SELECT count(*) FROM customers WHERE name = 'psycopg3_rb'
-- next
-- sent 3x via simple query
ROLLBACK
-- next
-- sent 1x via simple query
DEALLOCATE ALL
-- next
-- sent 1x via simple query
UPDATE customers SET region = 'west' WHERE name = 'psycopg3_tx'
-- next
-- sent 1x via simple query
COPY customers FROM STDIN
-- next
-- sent 1x via extended protocol (unnamed statement)
DECLARE "c1" CURSOR FOR SELECT id, customer FROM orders ORDER BY id
-- next
-- sent 4x via simple query
FETCH FORWARD 1 FROM "c1"
-- next
-- sent 1x via simple query
CLOSE "c1"
-- next
-- sent 1x via extended protocol (unnamed statement)
DECLARE "c2" CURSOR FOR SELECT amount FROM orders ORDER BY id
-- next
-- sent 1x via extended protocol (unnamed statement)
FETCH FORWARD 2 FROM "c2"
-- next
-- sent 1x via extended protocol (unnamed statement)
FETCH FORWARD ALL FROM "c2"
-- next
-- sent 1x via simple query
CLOSE "c2"
-- next
-- sent 1x via simple query
-- error: relation "no_such_table" does not exist at character 15
SELECT * FROM no_such_table
-- next
-- sent 2x via simple query
-- error: current transaction is aborted, commands ignored until end of transaction block
SELECT 1
-- next
-- sent 1x via extended protocol (failed in Parse, never executed)
-- error: relation "no_such_table" does not exist at character 15
SELECT * FROM no_such_table WHERE x = $1
