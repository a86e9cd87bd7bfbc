-- Creates a session with its first run: the state hash (status active, no step committed), the
-- initial log, the run_start chunk and checkpoint 0. An existing session is left as it is. The
-- session's root is in its key (the hash tag), so the state does not repeat it.
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]
local agent_type = ARGV[1]
local run_id = ARGV[2]
local stream_id = ARGV[3]
local now = ARGV[4]
local run_start_body = ARGV[5]
local workflow_id = ARGV[6] -- '' for the first run's derived one (store/session.rs)
local stream_max_chunks = ARGV[7] -- 0: keep every chunk
local valid_until = tonumber(ARGV[8]) -- ms on Redis's clock; 0: no deadline
local custom_state = ARGV[9] -- JSON object, or '' for an agent without custom state
local meta = ARGV[10] -- the session's userId, tags and metadata (JSON), or '' for none
local owner = ARGV[11] -- the service that started it through the mount (JSON), or ''
local first_message = 12 -- then the initial log, one JSON message per argument

-- A start whose caller gave up (its command timed out while Redis did not answer, so it was told
-- 503 and started no workflow) is not applied late: it would leave a session active for ever.
if valid_until > 0 then
  local time = redis.call('TIME')
  local now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  if now_ms > valid_until then return {'expired'} end
end
if redis.call('EXISTS', state_key) == 1 then return {'session_exists'} end
redis.call('HSET', state_key,
  'agentType', agent_type, 'runId', run_id, 'streamId', stream_id,
  'status', 'active', 'stepCount', 0, 'lastSequence', 0,
  'createdAt', now, 'updatedAt', now, 'maxChunks', stream_max_chunks)
if workflow_id ~= '' then redis.call('HSET', state_key, 'workflowId', workflow_id) end
if custom_state ~= '' then redis.call('HSET', state_key, 'customState', custom_state) end
if meta ~= '' then redis.call('HSET', state_key, 'meta', meta) end
if owner ~= '' then redis.call('HSET', state_key, 'owner', owner) end
for i = first_message, #ARGV do redis.call('RPUSH', messages_key, ARGV[i]) end
local seq = emit(run_start_body)
push_checkpoint(checkpoints_key, redis.call('LLEN', messages_key), 0, seq, '')
return {'ok', seq}
