-- KEYS: state, stream, messages, checkpoints
-- ARGV: agentType, runId, streamId, rootSessionId, nowMs, runStartBody, workflowId, maxChunks
--       (0: keep every chunk), message...
if redis.call('EXISTS', state_key) == 1 then return {'session_exists'} end
redis.call('HSET', state_key,
  'agentType', ARGV[1], 'runId', ARGV[2], 'streamId', ARGV[3], 'rootSessionId', ARGV[4],
  'status', 'active', 'stepCount', 0, 'lastSequence', 0, 'createdAt', ARGV[5], 'updatedAt', ARGV[5],
  'workflowId', ARGV[7], 'maxChunks', ARGV[8])
for i = 9, #ARGV do redis.call('RPUSH', KEYS[3], ARGV[i]) end
local seq = emit(ARGV[6])
push_checkpoint(KEYS[4], redis.call('LLEN', KEYS[3]), 0, seq, '')
return {'ok', seq}
