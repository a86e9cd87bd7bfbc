-- Appends the chunks a model step streams (step start, text deltas), each exactly once even
-- when the activity is retried: chunk i of a step is written only if i chunks were written before.
-- KEYS: state, stream, staged
-- ARGV: runId, step, firstIndex, body...
local refused = step_guard(ARGV[1], ARGV[2])
if refused then return {refused} end
local counter_field = 'emitted:' .. ARGV[1] .. ':' .. ARGV[2]
local written = tonumber(redis.call('HGET', KEYS[3], counter_field) or '0')
local index = tonumber(ARGV[3])
local appended = 0
for i = 4, #ARGV do
  if index == written then
    emit(ARGV[i])
    written = written + 1
    appended = appended + 1
  end
  index = index + 1
end
redis.call('HSET', KEYS[3], counter_field, written)
return {'ok', appended}
