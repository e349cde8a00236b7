-- The write path's SQL for one mission.create folded into two statements: the lock with the
-- four reads as subqueries of its SELECT, and the four writes as one data-modifying WITH.
-- Same rows, same world and same command as write_path_statements.sql (read its header);
-- it measures what folding the statements would buy before anyone writes it in Python
-- (docs/benchmarks.md, "Where the time goes"):
--   pgbench -h 127.0.0.1 -U postgres -n -T 8 -c 1 -f benchmarks/pgbench/write_path_folded.sql mw_bench
\set r random(1, 1000000000)
BEGIN;
SELECT g.head_sequence, g.head_hash, clock_timestamp() AS now,
  (SELECT json_agg(json_build_array(a.session_epoch, k.public_key) ORDER BY k.id) FROM registry_agent a LEFT JOIN registry_agentkey k ON k.agent_id = a.id AND k.revoked_at IS NULL WHERE a.id = 'bench-a00') AS standing,
  (SELECT json_agg(json_build_array(c.command_id, c.content_digest, c.status, c.response)) FROM ledger_commandrecord c WHERE c.group_id = 'bench-g00' AND c.actor = 'agent:bench-a00' AND c.command_id IN ('cmd-x-:r')) AS records,
  (SELECT json_agg(json_build_array(m.id, m.principal, m.roles, m.epoch, m.active)) FROM registry_membership m WHERE m.group_id = 'bench-g00' AND m.principal IN ('agent:bench-a00')) AS memberships,
  (SELECT json_agg(w) FROM work_mission w WHERE w.group_id = 'bench-g00' AND w.mission_id IN ('m-x-:r')) AS missions
FROM ledger_grouplog g WHERE g.group_id = 'bench-g00' FOR UPDATE OF g \gset
\set next :head_sequence + 1
WITH e AS (
  INSERT INTO ledger_event (group_id, sequence, event_id, type, command_id, actor, recorded_at, hash, document) VALUES ('bench-g00', :next, 'evt_' || md5(random()::text), 'mission.created', 'cmd-x-:r', 'agent:bench-a00', now(), 'sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1', '{"actor":"agent:bench-a00","command_id":"cmd-60-ad524832","group":"bench-g00","body":{"goal":"Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.","mission":"m-60","budgets":{"money":5.0,"tokens":200000}},"event_id":"evt_3ad98579f52745dc8eea3a84e8560e2a","hash":"sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1","prev_hash":"sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1","recorded_at":"2026-12-03T08:04:51.578647Z","sequence":61,"type":"mission.created"}')
), m AS (
  INSERT INTO work_mission (group_id, mission_id, state, goal, limits, used, parent, children, work_items, created_by, created_sequence, link, usage_series) VALUES ('bench-g00', 'm-x-:r-' || :next, 'active', 'Summarise the incident reports of November and list the follow-up actions. Summarise the incident reports of November and list the follow-up actions.', '{"money": 5.0, "tokens": 200000}', '{}', NULL, '[]', '[]', 'agent:bench-a00', :next, NULL, '[]')
), c AS (
  INSERT INTO ledger_commandrecord (group_id, actor, command_id, content_digest, status, response, accepted_at) VALUES ('bench-g00', 'agent:bench-a00', 'cmd-x-:r-' || :next, 'sha256:6e23890e8c24d495d23f0ce380c51fcf66e229e92e4d71eb26584534bf3ab806', 201, '{"events": [{"type": "mission.created", "event_id": "evt_3ad98579f52745dc8eea3a84e8560e2a", "sequence": 61}], "result": {"mission": "m-60-ad524832"}, "command": "cmd-60"}', now())
)
UPDATE ledger_grouplog SET head_sequence = :next, head_hash = 'sha256:b4d25677a5c20bca8adab38e4c5bf5d4b009817dbb17f1ce3e207410b83ca6e1' WHERE group_id = 'bench-g00';
COMMIT;
