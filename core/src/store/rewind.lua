-- Rewinds a session that is not running to one of its checkpoints, for a new run (resume
-- from_checkpoint), in one script: the calls open now are discarded (entries, answers,
-- deadlines, ownership), the log is cut back to the checkpoint's messages and the step count to
-- its steps, the stop, suspension and outcome of the last run are cleared, and the new run owns
-- the session. When the checkpoint suspended, its calls are restored, owned by the new run with
-- fresh deadlines: with mode 'suspend' the session awaits them again at once (no workflow, no
-- model call); with mode 'run' (a message that abandons them) the run drains them. A rewind
-- chunk, run_start and a new checkpoint (a copy of the restored one) are written. Exactly one of
-- two concurrent rewinds or resumes wins.
-- KEYS: state, stream, messages, checkpoints, pending, pendingRun, answers, openDeadlines,
--       rootOwnership, rootCompleted
-- ARGV: newRunId, nowMs, checkpointId, workflowId, rewindBody, runStartBody, mode ('run' |
--       'suspend'), userMessageJson ('' for none), abandon ('1' | '0'), suspensionJson ('' for
--       none), suspendedBody, ownerSessionId, then per restored call: toolCallId, pendingCallJson,
--       approvalRequestBody ('' for none), deadlineAtMs
local status = redis.call('HGET', state_key, 'status')
if not status then return {'session_not_found'} end
if status == 'active' then return {'already_running'} end
local record = redis.call('LINDEX', KEYS[4], ARGV[3])
if not record then return {'unknown_checkpoint'} end
local checkpoint = cjson.decode(record)

for _, id in ipairs(redis.call('HKEYS', KEYS[5])) do
  if redis.call('HGET', KEYS[9], id) == ARGV[12] then redis.call('HDEL', KEYS[9], id) end
end
redis.call('DEL', KEYS[5], KEYS[6], KEYS[7], KEYS[8])
if checkpoint.messageCount > 0 then
  redis.call('LTRIM', KEYS[3], 0, checkpoint.messageCount - 1)
else
  redis.call('DEL', KEYS[3])
end
redis.call('HDEL', state_key, 'output', 'error', 'suspension', 'resumeMessage', 'abandon', 'stop')
redis.call('HSET', state_key, 'runId', ARGV[1], 'stepCount', checkpoint.stepCount,
  'updatedAt', ARGV[2], 'workflowId', ARGV[4])
emit(ARGV[5])
-- The new checkpoint sits at run_start, before the chunks of the restored suspension.
local seq = emit(ARGV[6])

local restored = {}
for i = 13, #ARGV, 4 do
  local id = ARGV[i]
  redis.call('HSET', KEYS[5], id, ARGV[i + 1])
  redis.call('HSET', KEYS[6], id, ARGV[1])
  redis.call('HSET', KEYS[9], id, ARGV[12])
  redis.call('ZADD', KEYS[8], tonumber(ARGV[i + 3]), id)
  redis.call('ZREM', KEYS[10], id)
  restored[#restored + 1] = ARGV[i + 1]
end
local extra = ''
if ARGV[10] ~= '' then
  redis.call('HSET', state_key, 'suspension', ARGV[10])
  extra = ',"suspendedAt":' .. ARGV[2] .. ',"suspension":' .. ARGV[10] .. ',"pending":['
    .. table.concat(restored, ',') .. ']'
end
if ARGV[7] == 'suspend' then
  for i = 13, #ARGV, 4 do
    if ARGV[i + 2] ~= '' then emit(ARGV[i + 2]) end
  end
  redis.call('HSET', state_key, 'status', 'suspended_client_tool')
  emit(ARGV[11])
else
  redis.call('HSET', state_key, 'status', 'active')
  if ARGV[8] ~= '' then redis.call('HSET', state_key, 'resumeMessage', ARGV[8]) end
  if ARGV[9] == '1' then redis.call('HSET', state_key, 'abandon', '1') end
end
push_checkpoint(KEYS[4], redis.call('LLEN', KEYS[3]), checkpoint.stepCount, seq, extra)
return {'ok', checkpoint.stepCount}
