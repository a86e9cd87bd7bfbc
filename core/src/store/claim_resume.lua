-- Claims a session for a new run. `continue` needs a suspended session whose batch is complete
-- (every call answered or past its deadline); `with_message` also takes an ended session (the
-- next turn) and, with abandon set, a partial batch (its open calls are abandoned). A running
-- session and a partial batch otherwise are refused, naming the awaited calls. On success the new
-- run becomes the session's run, takes the pending calls over, the message waits in the state
-- for the run to append it after the drained results, and the run's start is reported. Exactly
-- one of two concurrent claims wins.
-- KEYS: state, stream, pending, pendingRun, answers, openDeadlines
-- ARGV: newRunId, nowMs, runStartBody, mode ('continue' | 'with_message'), abandon ('1' | '0'),
--       userMessageJson ('' for continue), workflowId, expectedRunId ('' for any)
local fields = redis.call('HMGET', state_key, 'status', 'stepCount', 'runId')
local status = fields[1]
if not status then return {'session_not_found'} end
if ARGV[8] ~= '' and fields[3] ~= ARGV[8] then return {'not_resumable', 'superseded'} end
if status == 'active' then return {'already_running'} end
local with_message = ARGV[4] == 'with_message'
local calls = {}
if status == 'suspended_client_tool' then
  calls = redis.call('HKEYS', KEYS[3])
  local awaited = redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. ARGV[2], '+inf')
  if #awaited > 0 and not (with_message and ARGV[5] == '1') then
    return {'awaiting', unpack(awaited)}
  end
elseif not (with_message
    and (status == 'completed' or status == 'failed' or status == 'interrupted')) then
  return {'not_resumable', status}
end
-- The calls of a stopped run stay its own (a late submit answers run_stopped) until the new run
-- drains them as not executed.
redis.call('HSET', state_key, 'status', 'active', 'runId', ARGV[1], 'updatedAt', ARGV[2],
  'workflowId', ARGV[7])
redis.call('HDEL', state_key, 'output', 'error')
if with_message then redis.call('HSET', state_key, 'resumeMessage', ARGV[6]) end
if ARGV[5] == '1' then redis.call('HSET', state_key, 'abandon', '1') end
for _, id in ipairs(calls) do redis.call('HSET', KEYS[4], id, ARGV[1]) end
emit(ARGV[3])
return {'ok', tonumber(fields[2])}
