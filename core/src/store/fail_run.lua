-- Ends an active run as failed with a typed error, reports it with the end chunk and drops what
-- the run had staged. A run that already ended is left as it is.
local staged_key = KEYS[3]
local messages_key = KEYS[4]
local checkpoints_key = KEYS[5]
local usage_key = KEYS[6]
local children_key = KEYS[7]
local tree_key = KEYS[8]
local ownership_key = KEYS[9]
local completed_key = KEYS[10]
local call_ids_key = KEYS[11]
local run_id = ARGV[1]
local now = ARGV[2]
local error_json = ARGV[3]
local end_body = ARGV[4]
local retention_ms = ARGV[5]

local refused = run_guard(run_id)
if refused then return {refused} end
redis.call('HSET', state_key, 'status', 'failed', 'error', error_json, 'updatedAt', now)
local seq = emit(with_custom_state(state_key, end_body))
redis.call('DEL', staged_key)
expire_ended(retention_ms, session_keys({state_key, stream_key, messages_key, checkpoints_key,
  usage_key}, children_key, {tree_key, ownership_key, completed_key, call_ids_key}))
return {'ok', seq}
