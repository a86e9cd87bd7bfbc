-- Moves a staged step into the log: the assistant message, then one result per tool call in call
-- order, the usage record, the step count, a checkpoint and the step_end chunk. With a final
-- flag it also completes the run. Committing a step twice changes nothing.
-- KEYS: state, stream, staged, messages, checkpoints, usage
-- ARGV: runId, step, nowMs, stepEndBody, final ('1' or '0'), output, endBody
local refused = run_guard(ARGV[1])
if refused then
  if refused == 'run_not_active' and ARGV[5] == '1' then
    local status = redis.call('HGET', state_key, 'status')
    if status == 'completed' then return {'already_committed'} end
  end
  return {refused}
end
local step = tonumber(ARGV[2])
local committed = tonumber(redis.call('HGET', state_key, 'stepCount'))
if committed >= step then return {'already_committed'} end
if committed ~= step - 1 then return {'step_out_of_order', committed} end
local prefix = ARGV[1] .. ':' .. ARGV[2]
local turn = redis.call('HGET', KEYS[3], 'turn:' .. prefix)
if not turn then return {'not_staged'} end
local call_ids = cjson.decode(redis.call('HGET', KEYS[3], 'calls:' .. prefix))
local results = {}
for i, id in ipairs(call_ids) do
  local result = redis.call('HGET', KEYS[3], 'result:' .. prefix .. ':' .. id)
  if not result then return {'missing_result', id} end
  results[i] = result
end
redis.call('RPUSH', KEYS[4], turn)
for _, result in ipairs(results) do redis.call('RPUSH', KEYS[4], result) end
redis.call('RPUSH', KEYS[6], redis.call('HGET', KEYS[3], 'usage:' .. prefix))
redis.call('HSET', state_key, 'stepCount', step, 'updatedAt', ARGV[3])
local seq = emit(ARGV[4])
local count = redis.call('LLEN', KEYS[4])
redis.call('RPUSH', KEYS[5], '{"id":' .. step .. ',"messageCount":' .. count .. ',"stepCount":' .. step .. ',"streamSequence":' .. seq .. '}')
local fields = {'turn:' .. prefix, 'calls:' .. prefix, 'usage:' .. prefix, 'emitted:' .. prefix}
for _, id in ipairs(call_ids) do fields[#fields + 1] = 'result:' .. prefix .. ':' .. id end
redis.call('HDEL', KEYS[3], unpack(fields))
if ARGV[5] == '1' then
  redis.call('HSET', state_key, 'status', 'completed', 'output', ARGV[6])
  seq = emit(ARGV[7])
end
return {'ok', seq}
