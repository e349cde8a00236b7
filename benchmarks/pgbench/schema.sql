-- The ceiling's table pair: a head row per group and the events after it, shaped like
-- ledger_grouplog / ledger_event (gapless (g, seq) slot, unique event id, ~600-byte document).
DROP TABLE IF EXISTS bench_event;
DROP TABLE IF EXISTS bench_head;
CREATE TABLE bench_head (
    g integer PRIMARY KEY,
    head bigint NOT NULL DEFAULT 0,
    hash text NOT NULL DEFAULT 'sha256:0000000000000000000000000000000000000000000000000000000000000000'
);
CREATE TABLE bench_event (
    g integer NOT NULL REFERENCES bench_head (g),
    seq bigint NOT NULL,
    event_id text NOT NULL UNIQUE,
    recorded_at timestamptz NOT NULL,
    document text NOT NULL,
    PRIMARY KEY (g, seq)
);
