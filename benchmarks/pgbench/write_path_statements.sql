-- The write path's own SQL for one mission.create, statement for statement as PostgreSQL's
-- log showed it (2026-12-03: the lock with four reads, then the event, the projection row, the
-- command record and the head, then COMMIT), sent by pgbench with no Python around it and one
-- round trip per statement. It tells how much of the gap to gapless_append.sql is the SQL a
-- command needs and how much is the Python around it (docs/benchmarks.md, "Where the time
-- goes"). It writes into the world `make bench` leaves behind (group bench-g00, agent
-- bench-a00), one new mission, event and record per transaction:
--   pgbench -h 127.0.0.1 -U postgres -n -T 8 -c 1 -f benchmarks/pgbench/write_path_statements.sql mw_bench
\set r random(1, 1000000000)
BEGIN;
SELECT head_sequence, head_hash, clock_timestamp() FROM ledger_grouplog WHERE group_id = 'bench-g00' FOR UPDATE \gset
SELECT a.session_epoch, k.public_key FROM registry_agent a LEFT JOIN registry_agentkey k ON k.agent_id = a.id AND k.revoked_at IS NULL WHERE a.id = 'bench-a00' ORDER BY k.id;
SELECT command_id, content_digest, status, response FROM ledger_commandrecord WHERE group_id = 'bench-g00' AND actor = 'agent:bench-a00' AND command_id IN ('cmd-x-:r');
SELECT "id", "group_id", "principal", "roles", "epoch", "active" FROM "registry_membership" WHERE "group_id" = 'bench-g00' AND "principal" IN ('agent:bench-a00');
SELECT "id", "group_id", "mission_id", "state", "goal", "limits", "used", "parent", "children", "work_items", "created_by", "created_sequence", "link", "usage_series" FROM "work_mission" WHERE "group_id" = 'bench-g00' AND "mission_id" IN ('m-x-:r');
\set next :head_sequence + 1
INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document) VALUES ('bench-g00', :next, 'evt_' || md5(random()::text), 'mission.created', 'cmd-x-:r', 'agent:bench-a00', now(), 'sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1', '{"actor":"agent:bench-a00","command_id":"cmd-60-ad524832","group":"bench-g00","body":{"goal":"Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.","mission":"m-60","budgets":{"money":5.0,"tokens":200000}},"event_id":"evt_3ad98579f52745dc8eea3a84e8560e2a","hash":"sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1","prev_hash":"sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1","recorded_at":"2026-12-03T08:04:51.578647Z","sequence":61,"type":"mission.created"}');
INSERT INTO "work_mission" ("group_id", "mission_id", "state", "goal", "limits", "used", "parent", "children", "work_items", "created_by", "created_sequence", "link", "usage_series") VALUES ('bench-g00', 'm-x-:r-' || :next, 'active', 'Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.', '{"money": 5.0, "tokens": 200000}', '{}', NULL, '[]', '[]', 'agent:bench-a00', :next, NULL, '[]');
INSERT INTO "ledger_commandrecord" ("group_id", "actor", "command_id", "content_digest", "status", "response", "accepted_at") VALUES ('bench-g00', 'agent:bench-a00', 'cmd-x-:r-' || :next, 'sha256:6e23890e8c24d495d23f0ce380c51fcf66e229e92e4d71eb26584534bf3ab806', 201, '{"events": [{"type": "mission.created", "event_id": "evt_3ad98579f52745dc8eea3a84e8560e2a", "sequence": 61}], "result": {"mission": "m-60-ad524832"}, "command": "cmd-60"}', now());
UPDATE ledger_grouplog SET head_sequence = :next, head_hash = 'sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1' WHERE group_id = 'bench-g00';
COMMIT;
