-- Creates a fork: a new root session holding another session's log up to one of its
-- checkpoints, with that checkpoint's step count, custom state and (for a step that suspended)
-- its suspension as the fork's checkpoint 0, the original's metadata, and the run_start chunk.
-- No run holds it (status interrupted): a rewind to checkpoint 0 replays from there, a message
-- starts the next turn. An existing session is left as it is. One slot: the fork's own keys.
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]
local agent_type = ARGV[1]
local run_id = ARGV[2]
local stream_id = ARGV[3]
local now = ARGV[4]
local run_start_body = ARGV[5]
local step_count = ARGV[6]
local checkpoint_extra = ARGV[7] -- the suspension part of the checkpoint record, or ''
local custom_state = ARGV[8] -- JSON object, or '' for an agent without custom state
local meta = ARGV[9] -- the original's metadata (JSON), or ''
local forked_from = ARGV[10] -- '<sessionId>:<checkpointId>'
local stream_max_chunks = ARGV[11]
local first_message = 12 -- then the log up to the checkpoint, one JSON message per argument

if redis.call('EXISTS', state_key) == 1 then return {'session_exists'} end
redis.call('HSET', state_key,
  'agentType', agent_type, 'runId', run_id, 'streamId', stream_id,
  'status', 'interrupted', 'stepCount', step_count, 'lastSequence', 0,
  'createdAt', now, 'updatedAt', now, 'maxChunks', stream_max_chunks,
  'forkedFrom', forked_from)
if custom_state ~= '' then redis.call('HSET', state_key, 'customState', custom_state) end
if meta ~= '' then redis.call('HSET', state_key, 'meta', meta) end
for i = first_message, #ARGV do redis.call('RPUSH', messages_key, ARGV[i]) end
local seq = emit(run_start_body)
push_checkpoint(checkpoints_key, redis.call('LLEN', messages_key), tonumber(step_count), seq,
  checkpoint_extra)
return {'ok', seq}
