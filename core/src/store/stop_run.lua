-- Records a durable stop on the session's current run and ends it at once: interrupt leaves the
-- session `interrupted`, abort `failed` with framework_cancelled; the end chunk reports it. A
-- suspended run's awaited calls are closed here, in the log, as not executed (each with its
-- tool_end chunk, before the end), and their pending state, ownership and stored answers are
-- cleared, as is whatever the run had staged: a stop leaves nothing behind it. A step the run
-- had begun streaming but not committed is announced as discarded (step_discarded, before any
-- tool_end and the end), so a reader drops its chunks as the log never holds it. The stop record
-- and the list of the calls it closed stay, so a late submit to one of them answers
-- run_stopped until the next turn. A run that is not running is left alone, and so is a session
-- whose run or status is no longer the one the caller read (the record and the chunk name it,
-- and the calls to close were read with it).
local messages_key = KEYS[3]
local staged_key = KEYS[4]
local pending_key = KEYS[5]
local pending_run_key = KEYS[6]
local answers_key = KEYS[7]
local ownership_key = KEYS[8]
local open_deadlines_key = KEYS[9]
local checkpoints_key = KEYS[10]
local usage_key = KEYS[11]
local children_key = KEYS[12]
local tree_key = KEYS[13]
local completed_key = KEYS[14]
local call_ids_key = KEYS[15]
local relayed_key = KEYS[16]
local kind = ARGV[1] -- 'interrupt' | 'abort'
local now = ARGV[2]
local stop_json = ARGV[3]
local error_json = ARGV[4] -- with abort
local end_body = ARGV[5]
local expected_run_id = ARGV[6]
local expected_status = ARGV[7]
local retention_ms = ARGV[8]
local expected_step_count = ARGV[9]
local discarded_body = ARGV[10] -- step_discarded for step expected_step_count + 1
local closing = tonumber(ARGV[11]) -- how many sessions below this one to close, then per
-- session: its id and its subagent_end chunk body, deepest first
local first_call = 12 -- after those, per awaited call: id, tool name, tool message, tool_end body

local fields = redis.call('HMGET', state_key, 'status', 'runId', 'stepCount')
if not fields[1] then return {'session_not_found'} end
if fields[2] ~= expected_run_id then return {'run_superseded', fields[2]} end
if is_ended(fields[1]) then return {'not_running', fields[1]} end
-- A run that suspended (or committed a step) since the read has calls (or a step) the caller did
-- not pass: read it again.
if fields[1] ~= expected_status or fields[3] ~= expected_step_count then
  -- A run stepping faster than a stop reads it would never be caught: it is fenced (its next
  -- write is refused run_not_active, as a stopped run's) until this stop's next attempt.
  if fields[1] == 'active' and expected_status == 'active' then
    redis.call('HSET', state_key, 'stopping', expected_run_id)
  end
  return {'run_superseded', fields[2]}
end
redis.call('HDEL', state_key, 'stopping')
local next_step = tostring(tonumber(expected_step_count) + 1)
if redis.call('HEXISTS', staged_key, staged_field('emitted', expected_run_id, next_step)) == 1
    or redis.call('HEXISTS', staged_key, staged_field('turn', expected_run_id, next_step)) == 1 then
  emit(discarded_body)
end
local reply = {'ok', fields[2]}
local closed = {}
local calls_from = first_call + 2 * closing
for i = calls_from, #ARGV, 4 do
  local id = ARGV[i]
  redis.call('RPUSH', messages_key, ARGV[i + 2])
  emit(ARGV[i + 3])
  redis.call('HDEL', pending_key, id)
  redis.call('HDEL', pending_run_key, id)
  redis.call('HDEL', answers_key, id)
  -- A call of a session below the root keeps its ownership entry (on the root): a late submit
  -- names the root, and the entry routes it to this session, whose stoppedCalls answer
  -- run_stopped. It goes with the root's keys.
  if state_key == root_state_key then redis.call('HDEL', ownership_key, id) end
  redis.call('ZREM', open_deadlines_key, id)
  closed[#closed + 1] = id
  reply[#reply + 1] = id
  reply[#reply + 1] = ARGV[i + 1]
end
-- The sessions below this one not closed yet on the root's stream are closed there before this
-- one's end (a session the stop does not reach yet stops next, and nothing more of it is
-- copied), so a reader demultiplexing the root's stream holds no open child.
for i = first_call, calls_from - 1, 2 do
  if redis.call('HEXISTS', root_state_key, closed_field(ARGV[i])) == 0 then emit(ARGV[i + 1]) end
end
redis.call('DEL', staged_key)
-- The calls a remote child relayed go with the call that awaited them.
redis.call('DEL', relayed_key)
redis.call('HDEL', state_key, 'suspension', 'suspendedRunId')
redis.call('HSET', state_key, 'stop', stop_json, 'updatedAt', now)
if #closed > 0 then redis.call('HSET', state_key, 'stoppedCalls', cjson.encode(closed)) end
if kind == 'abort' then
  redis.call('HSET', state_key, 'status', 'failed', 'error', error_json)
  redis.call('HINCRBY', state_key, 'aborts', 1)
else
  redis.call('HSET', state_key, 'status', 'interrupted')
end
emit(with_custom_state(state_key, end_body))
expire_ended(retention_ms, session_keys({state_key, stream_key, messages_key, checkpoints_key,
  usage_key}, children_key, {tree_key, ownership_key, completed_key, call_ids_key}))
return reply
