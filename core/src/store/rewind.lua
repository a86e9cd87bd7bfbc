-- Rewinds a session that is not running to one of its checkpoints, for a new run (resume
-- from_checkpoint), in one script: the calls open now are discarded (entries, answers,
-- deadlines, ownership), the log is cut back to the checkpoint's messages and the step count to
-- its steps, the stop, suspension and outcome of the last run are cleared, and the new run owns
-- the session. When the checkpoint suspended, its calls are restored, pending for the new run
-- with fresh deadlines (see register_pending): with mode 'suspend' the session awaits them again
-- at once (no workflow, no model call); with mode 'run' (a message that abandons them) the run
-- drains them. The custom state goes back to the checkpoint's. A rewind chunk, run_start and a
-- new checkpoint (a copy of the restored one) are written. The checkpoints after the one
-- restored are abandoned: a later rewind to one of them is refused. Exactly one of two
-- concurrent rewinds or resumes wins.
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]
local pending_key = KEYS[5]
local pending_run_key = KEYS[6]
local answers_key = KEYS[7]
local open_deadlines_key = KEYS[8]
local ownership_key = KEYS[9]
local completed_key = KEYS[10]
local usage_key = KEYS[11]
local children_key = KEYS[12]
local tree_key = KEYS[13]
local call_ids_key = KEYS[14]
local new_run_id = ARGV[1]
local now = ARGV[2]
local checkpoint_id = ARGV[3]
local workflow_id = ARGV[4] -- '' for the resumed run's derived one (store/session.rs)
local rewind_body = ARGV[5]
local run_start_body = ARGV[6]
local suspend = ARGV[7] == 'suspend' -- else 'run'
local user_message_json = ARGV[8] -- '' for none
local abandon = ARGV[9] == '1'
local suspension_json = ARGV[10] -- '' for none
local suspended_body = ARGV[11]
local owner_session_id = ARGV[12]
local custom_state = ARGV[13] -- the checkpoint's custom state (JSON text), or '' for none
-- Keep at most this many of the checkpoint's messages ('' for all of them): an edit of a message
-- the earliest checkpoint holds (a chat's first) cuts it too and sends the new one.
local keep_at_most = tonumber(ARGV[14])
-- Then per restored call: toolCallId, pendingCallJson, approvalRequestBody ('' for none),
-- deadlineAtMs.
local first_call = 15

local status = redis.call('HGET', state_key, 'status')
if not status then return {'session_not_found'} end
if status == 'active' then return {'already_running'} end
local record = redis.call('LINDEX', checkpoints_key, checkpoint_id)
if not record then return {'unknown_checkpoint'} end
-- A checkpoint a rewind went back past is on an abandoned branch: the log it counts messages of
-- was cut, so it cannot be restored. The abandoned ids are kept as [from, to] ranges.
local target = tonumber(checkpoint_id)
local abandoned = cjson.decode(redis.call('HGET', state_key, 'abandonedCheckpoints') or '[]')
for _, range in ipairs(abandoned) do
  if target >= range[1] and target <= range[2] then return {'abandoned_checkpoint'} end
end
local latest = redis.call('LLEN', checkpoints_key) - 1
if latest > target then
  abandoned[#abandoned + 1] = {target + 1, latest}
  redis.call('HSET', state_key, 'abandonedCheckpoints', cjson.encode(abandoned))
end
local checkpoint = cjson.decode(record)

for _, id in ipairs(redis.call('HKEYS', pending_key)) do
  if redis.call('HGET', ownership_key, id) == owner_session_id then
    redis.call('HDEL', ownership_key, id)
  end
end
redis.call('DEL', pending_key, pending_run_key, answers_key, open_deadlines_key)
local kept = checkpoint.messageCount
if keep_at_most and keep_at_most < kept then kept = keep_at_most end
if kept > 0 then
  redis.call('LTRIM', messages_key, 0, kept - 1)
else
  redis.call('DEL', messages_key)
end
redis.call('HDEL', state_key, 'output', 'error', 'suspension', 'suspendedRunId', 'resumeMessage',
  'abandon', 'stop', 'stoppedCalls')
redis.call('HSET', state_key, 'runId', new_run_id, 'stepCount', checkpoint.stepCount,
  'updatedAt', now, 'workflowId', workflow_id)
if custom_state ~= '' then redis.call('HSET', state_key, 'customState', custom_state) end
emit(rewind_body)
-- The new checkpoint sits at run_start, before the chunks of the restored suspension.
keep_keys(session_keys({state_key, stream_key, messages_key, checkpoints_key, usage_key},
  children_key, {tree_key, ownership_key, completed_key, call_ids_key}))
local seq = emit(run_start_body)

local pending_keys = {
  pending = pending_key, pending_run = pending_run_key, ownership = ownership_key,
  open_deadlines = open_deadlines_key,
}
local restored = {}
for i = first_call, #ARGV, 4 do
  register_pending(pending_keys, ARGV[i], ARGV[i + 1], owner_session_id, ARGV[i + 3])
  -- A restored call may have been drained before: it is pending again, not completed.
  redis.call('ZREM', completed_key, ARGV[i])
  restored[#restored + 1] = ARGV[i + 1]
end
local extra = ''
if suspension_json ~= '' then
  redis.call('HSET', state_key, 'suspension', suspension_json)
  extra = suspended_checkpoint_extra(now, suspension_json, restored)
end
if suspend then
  for i = first_call, #ARGV, 4 do
    if ARGV[i + 2] ~= '' then emit(ARGV[i + 2]) end
  end
  redis.call('HSET', state_key, 'status', 'suspended_client_tool')
  emit(suspended_body)
else
  redis.call('HSET', state_key, 'status', 'active')
  if user_message_json ~= '' then
    redis.call('HSET', state_key, 'resumeMessage', user_message_json)
  end
  if abandon then redis.call('HSET', state_key, 'abandon', '1') end
end
push_checkpoint(checkpoints_key, redis.call('LLEN', messages_key), checkpoint.stepCount, seq, extra)
return {'ok', checkpoint.stepCount}
