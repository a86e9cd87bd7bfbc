-- Shared by every Baton script. KEYS[1] is always the session's state hash and KEYS[2] its
-- stream. A chunk body is a JSON object without its opening brace; the sequence goes in front.
local state_key = KEYS[1]
local stream_key = KEYS[2]

-- A session keeps at most maxChunks chunks (0 or unset: all); the oldest are trimmed.
local max_chunks = nil
local function emit(body)
  local seq = redis.call('HINCRBY', state_key, 'lastSequence', 1)
  local chunk = '{"sequence":' .. seq .. ',' .. body
  if max_chunks == nil then
    max_chunks = tonumber(redis.call('HGET', state_key, 'maxChunks') or '0') or 0
  end
  if max_chunks > 0 then
    redis.call('XADD', stream_key, 'MAXLEN', max_chunks, seq .. '-0', 'c', chunk)
  else
    redis.call('XADD', stream_key, seq .. '-0', 'c', chunk)
  end
  return seq
end

-- Returns nil when the run may write, or the reason it may not.
local function run_guard(run_id)
  local fields = redis.call('HMGET', state_key, 'status', 'runId')
  if not fields[1] then return 'session_not_found' end
  if fields[2] ~= run_id then return 'run_superseded' end
  if fields[1] ~= 'active' then return 'run_not_active' end
  return nil
end

-- Like run_guard, and also refuses work on a step that is already committed: a stale activity
-- attempt still running after its retry committed the step must not stage or stream again.
local function step_guard(run_id, step)
  local refused = run_guard(run_id)
  if refused then return refused end
  if tonumber(redis.call('HGET', state_key, 'stepCount')) >= tonumber(step) then
    return 'already_committed'
  end
  return nil
end

-- Appends a checkpoint record; its id is its index in the list, which only grows.
local function push_checkpoint(key, message_count, step_count, seq, extra)
  local id = redis.call('LLEN', key)
  redis.call('RPUSH', key, '{"id":' .. id .. ',"messageCount":' .. message_count .. ',"stepCount":'
    .. step_count .. ',"streamSequence":' .. seq .. (extra or '') .. '}')
  return id
end

-- Appends a staged step to the log (KEYS[3] staged, KEYS[4] messages, KEYS[5] checkpoints,
-- KEYS[6] usage): the assistant message, the results of its calls in call order except the
-- awaited ones (a set of ids), the usage record, the step count, step_end and a checkpoint; then
-- drops the step's staged fields. `checkpoint_extra` ('' or ',"field":…') goes into the
-- checkpoint record. Returns nil and step_end's sequence, or a refusal reply.
local function append_staged_step(run_id, step_text, now, step_end_body, awaited, checkpoint_extra)
  local step = tonumber(step_text)
  local committed = tonumber(redis.call('HGET', state_key, 'stepCount'))
  if committed >= step then return {'already_committed'} end
  if committed ~= step - 1 then return {'step_out_of_order', committed} end
  local prefix = run_id .. ':' .. step_text
  local turn = redis.call('HGET', KEYS[3], 'turn:' .. prefix)
  if not turn then return {'not_staged'} end
  local call_ids = cjson.decode(redis.call('HGET', KEYS[3], 'calls:' .. prefix))
  local results = {}
  local fields = {'turn:' .. prefix, 'calls:' .. prefix, 'usage:' .. prefix, 'emitted:' .. prefix}
  for _, id in ipairs(call_ids) do
    if not awaited[id] then
      local field = 'result:' .. prefix .. ':' .. id
      local result = redis.call('HGET', KEYS[3], field)
      if not result then return {'missing_result', id} end
      results[#results + 1] = result
      fields[#fields + 1] = field
    end
  end
  redis.call('RPUSH', KEYS[4], turn)
  for _, result in ipairs(results) do redis.call('RPUSH', KEYS[4], result) end
  redis.call('RPUSH', KEYS[6], redis.call('HGET', KEYS[3], 'usage:' .. prefix))
  redis.call('HSET', state_key, 'stepCount', step, 'updatedAt', now)
  local seq = emit(step_end_body)
  push_checkpoint(KEYS[5], redis.call('LLEN', KEYS[4]), step, seq, checkpoint_extra)
  redis.call('HDEL', KEYS[3], unpack(fields))
  return nil, seq
end
