-- Records the assistant turn of a step (not yet part of the log) and announces its tool calls.
-- A second call for the same step changes nothing and reports 'already_staged'.
-- KEYS: state, stream, staged
-- ARGV: runId, step, assistantMessage, callIdsJson, usageRecord, toolStartBody...
local refused = step_guard(ARGV[1], ARGV[2])
if refused then return {refused} end
local prefix = ARGV[1] .. ':' .. ARGV[2]
if redis.call('HSETNX', KEYS[3], 'turn:' .. prefix, ARGV[3]) == 0 then
  return {'already_staged'}
end
redis.call('HSET', KEYS[3], 'calls:' .. prefix, ARGV[4], 'usage:' .. prefix, ARGV[5])
for i = 6, #ARGV do emit(ARGV[i]) end
return {'ok'}
