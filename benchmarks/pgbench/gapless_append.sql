-- One gapless append, as the write path does it: lock the group's head row, take the next
-- sequence from it, advance it and insert the event in the same transaction.
-- Variables: -D groups=N (groups are drawn at random), -D payload=<~600 bytes>, -D hash=<71>.
\set g random(1, :groups)
BEGIN;
SELECT head FROM bench_head WHERE g = :g FOR UPDATE \gset
\set next :head + 1
UPDATE bench_head SET head = :next, hash = :hash WHERE g = :g;
INSERT INTO bench_event (g, seq, event_id, recorded_at, document) VALUES (:g, :next, gen_random_uuid()::text, clock_timestamp(), :payload);
COMMIT;
