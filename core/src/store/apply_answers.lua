-- Drains a resumed run's answered (or lapsed, or abandoned) calls into the log, in the order the
-- model made them, each with its tool_end chunk; clears their pending entries and ownership,
-- leaves a completed marker per call (kept until its expiry; expired ones are reaped here) and
-- ends the suspension; then appends the resume's user message, if any, after the results.
-- Applying twice changes nothing.
-- KEYS: state, stream, messages, pending, pendingRun, answers, rootOwnership, rootCompleted,
--       openDeadlines
-- ARGV: runId, nowMs, waitMs (the calls' client-tool wait, added to the session's total), then
--       toolCallId, toolMessage, toolEndBody, markerExpiryMs per call
local refused = run_guard(ARGV[1])
if refused then return {refused} end
local state = redis.call('HMGET', state_key, 'suspension', 'resumeMessage')
if not state[1] and not state[2] then return {'already_applied'} end
redis.call('HINCRBY', state_key, 'clientToolWaitMs', ARGV[3])
for i = 4, #ARGV, 4 do
  local id = ARGV[i]
  redis.call('RPUSH', KEYS[3], ARGV[i + 1])
  emit(ARGV[i + 2])
  redis.call('HDEL', KEYS[4], id)
  redis.call('HDEL', KEYS[5], id)
  redis.call('HDEL', KEYS[6], id)
  redis.call('HDEL', KEYS[7], id)
  redis.call('ZREM', KEYS[9], id)
  redis.call('ZADD', KEYS[8], tonumber(ARGV[i + 3]), id)
end
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', ARGV[2])
if state[2] then redis.call('RPUSH', KEYS[3], state[2]) end
redis.call('HDEL', state_key, 'suspension', 'resumeMessage', 'abandon', 'stop')
redis.call('HSET', state_key, 'updatedAt', ARGV[2])
return {'ok'}
