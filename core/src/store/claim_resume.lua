-- Claims a session for a new run. `continue` needs a suspended session whose batch is complete
-- (every call answered or past its deadline); `with_message` also takes an ended session (the
-- next turn) and, with abandon set, a partial batch (its open calls are abandoned). A running
-- session and a partial batch otherwise are refused, naming the awaited calls. On success the new
-- run becomes the session's run (and so the run that awaits the pending calls), the message waits in the state
-- for the run to append it after the drained results, and the run's start is reported. Exactly
-- one of two concurrent claims wins. The reply names the key of the new run's chunk header when
-- the state keeps the header as the run id alone (the caller knows the header then; '' else).
local pending_key = KEYS[3]
local open_deadlines_key = KEYS[4]
local messages_key = KEYS[5]
local checkpoints_key = KEYS[6]
local usage_key = KEYS[7]
local children_key = KEYS[8]
local tree_key = KEYS[9]
local ownership_key = KEYS[10]
local completed_key = KEYS[11]
local call_ids_key = KEYS[12]
local new_run_id = ARGV[1]
local now = ARGV[2]
local run_start_body = ARGV[3]
local with_message = ARGV[4] == 'with_message' -- else 'continue'
local abandon = ARGV[5] == '1'
local user_message_json = ARGV[6] -- '' for continue
local workflow_id = ARGV[7] -- '' for the resumed run's derived one (store/session.rs)
local expected_run_id = ARGV[8] -- '' for any

local fields = redis.call('HMGET', state_key, 'status', 'stepCount', 'runId')
local status = fields[1]
if not status then return {'session_not_found'} end
if expected_run_id ~= '' and fields[3] ~= expected_run_id then
  return {'not_resumable', 'superseded'}
end
if status == 'active' then return {'already_running'} end
local calls = {}
if status == 'suspended_client_tool' then
  calls = redis.call('HKEYS', pending_key)
  local awaited = redis.call('ZRANGEBYSCORE', open_deadlines_key, '(' .. now, '+inf')
  if #awaited > 0 and not (with_message and abandon) then
    return {'awaiting', unpack(awaited)}
  end
elseif not (with_message and is_ended(status)) then
  return {'not_resumable', status}
end
-- A stopped run's calls were closed by the stop; its record (a late submit answers run_stopped)
-- stays until the new run's drain.
-- The suspended run is the session's run until now: the suspension keeps it aside until the
-- drain, for a release of this claim.
if status == 'suspended_client_tool' then redis.call('HSET', state_key, 'suspendedRunId', fields[3]) end
redis.call('HSET', state_key, 'status', 'active', 'runId', new_run_id, 'updatedAt', now,
  'workflowId', workflow_id)
redis.call('HDEL', state_key, 'output', 'error')
if with_message then redis.call('HSET', state_key, 'resumeMessage', user_message_json) end
if abandon then redis.call('HSET', state_key, 'abandon', '1') end
-- Only an ended session's keys expire (see expire_ended): its next turn keeps them again.
if is_ended(status) then
  keep_keys(session_keys({state_key, stream_key, messages_key, checkpoints_key, usage_key},
    children_key, {tree_key, ownership_key, completed_key, call_ids_key}))
end
local _, header_key = emit(run_start_body)
local own_header_key = ''
if header_key and redis.call('HGET', state_key, 'chunkHeader:' .. header_key) == new_run_id then
  own_header_key = header_key
end
return {'ok', tonumber(fields[2]), own_header_key}
