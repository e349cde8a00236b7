-- The write path's SQL for one mission.create exactly as it sends it since 2026-12-04: BEGIN,
-- then one query of the lock and the four reads under it, then one query of the four writes
-- and the COMMIT (`\;` makes pgbench send a line's statements as one query, as
-- `statements.sent_as_one` and `reads.run_together` do), parameters quoted into the text.
-- Same world and command as write_path_statements.sql (read its header). PostgreSQL alone
-- running it tells the least time a command can take however fast the Python around it
-- (docs/benchmarks.md, "Where the time goes"):
--   pgbench -h 127.0.0.1 -U postgres -n -T 8 -c 1 -f benchmarks/pgbench/write_path_as_sent.sql mw_bench
\set r random(1000000, 1000000000)
BEGIN;
SELECT head_sequence, head_hash, clock_timestamp() FROM ledger_grouplog WHERE group_id = 'bench-g00' FOR UPDATE \;
SELECT a.session_epoch, k.public_key FROM registry_agent a LEFT JOIN registry_agentkey k ON k.agent_id = a.id AND k.revoked_at IS NULL WHERE a.id = 'bench-a00' ORDER BY k.id \;
SELECT command_id, content_digest, status, response FROM ledger_commandrecord WHERE group_id = 'bench-g00' AND actor = 'agent:bench-a00' AND command_id IN ('cmd-201-6d6ba555') \;
SELECT "id", "group_id", "mission_id", "state", "goal", "limits", "used", "parent", "children", "work_items", "created_by", "created_sequence", "link", "usage_series" FROM "work_mission" WHERE "group_id" = 'bench-g00' AND "mission_id" IN ('m-201-6d6ba555') \;
SELECT "id", "group_id", "principal", "roles", "epoch", "active" FROM "registry_membership" WHERE "group_id" = 'bench-g00' AND "principal" IN ('agent:bench-a00');
INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document) VALUES ('bench-g00', (:r), 'evt_:r', 'mission.created', 'cmd-201-6d6ba555', 'agent:bench-a00', '2026-12-04 15:39:52.152943+00:00'::timestamptz, 'sha256:4ca37d1d8964a4cf18858b1366a2c77de7c59db838dcce90a374bfbcadc15104', '{"actor":"agent:bench-a00","command_id":"cmd-201-6d6ba555","event_id":"evt_f2d24ccb274a4a728f6e714dc452e64b","group":"bench-g00","hash":"sha256:4ca37d1d8964a4cf18858b1366a2c77de7c59db838dcce90a374bfbcadc15104","payload":{"budgets":{"money":5,"tokens":200000},"goal":"Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.","mission":"m-201-6d6ba555"},"prev_hash":"sha256:fb1f02c38b930bf316c9424662b4579235deb5d741e719968833b63bfb5062eb","recorded_at":"2026-12-04T15:39:52.152943Z","sequence":202,"type":"mission.created"}') \;
INSERT INTO "work_mission" ("group_id", "mission_id", "state", "goal", "limits", "used", "parent", "children", "work_items", "created_by", "created_sequence", "link", "usage_series") VALUES ('bench-g00', 'm-:r', 'active', 'Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.', '{"money":5.0,"tokens":200000}'::jsonb, '{}'::jsonb, NULL, '[]'::jsonb, '[]'::jsonb, 'agent:bench-a00', 202, NULL, '[]'::jsonb) \;
INSERT INTO "ledger_commandrecord" ("group_id", "actor", "command_id", "content_digest", "status", "response", "accepted_at") VALUES ('bench-g00', 'agent:bench-a00', 'cmd-:r', 'sha256:a8b3daafaaaca8422d10663f2bc5bcffa965d14398128ca178077a76a2bb6bcf', 201, '{"command_id":"cmd-201-6d6ba555","events":[{"event_id":"evt_f2d24ccb274a4a728f6e714dc452e64b","sequence":202,"type":"mission.created"}],"result":{"mission":"m-201-6d6ba555"}}'::jsonb, '2026-12-04 15:39:52.152943+00:00'::timestamptz) \;
UPDATE ledger_grouplog SET head_sequence = 202, head_hash = 'sha256:4ca37d1d8964a4cf18858b1366a2c77de7c59db838dcce90a374bfbcadc15104' WHERE group_id = 'bench-g00' \;
COMMIT;
