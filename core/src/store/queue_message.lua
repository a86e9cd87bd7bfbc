-- Leaves a user message on a suspended root whose tree a resume continues: the root's resumed
-- run (started when its children have answered) appends it after the drained results. Fenced on
-- the root's suspended run.
local expected_run_id = ARGV[1]
local user_message_json = ARGV[2]

local fields = redis.call('HMGET', state_key, 'status', 'runId')
if not fields[1] then return {'session_not_found'} end
if fields[2] ~= expected_run_id then return {'run_superseded'} end
if fields[1] ~= 'suspended_client_tool' then return {'run_not_active'} end
redis.call('HSET', state_key, 'resumeMessage', user_message_json)
return {'ok'}
