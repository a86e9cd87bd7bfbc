-- Stores a client's answer to a pending call of the session, first answer wins, and says what
-- the stored answer means for the batch. Nothing is written on any refusal.
local pending_key = KEYS[3]
local pending_run_key = KEYS[4]
local answers_key = KEYS[5]
local ownership_key = KEYS[6]
local completed_key = KEYS[7]
local open_deadlines_key = KEYS[8]
local id = ARGV[1]
local answer_json = ARGV[2]
local now_text = ARGV[3]
local owner_session_id = ARGV[4]
local approval_id = ARGV[5] -- '' for a client tool's result
local now = tonumber(now_text)

-- 'caller_resumes' once every pending call is answered or past its deadline: the unanswered
-- calls are the members of openDeadlines, scored by deadline, so this is O(log n) whatever the
-- size of the batch.
local function batch_continuation()
  if redis.call('ZCOUNT', open_deadlines_key, '(' .. now_text, '+inf') > 0 then
    return 'awaiting_batch'
  end
  return 'caller_resumes'
end

if redis.call('HGET', ownership_key, id) ~= owner_session_id
    or redis.call('HEXISTS', pending_key, id) == 0 then
  -- A stop closed the calls of its run and cleared them; it listed them for this answer.
  local stopped = redis.call('HGET', state_key, 'stoppedCalls')
  if stopped then
    for _, stopped_id in ipairs(cjson.decode(stopped)) do
      if stopped_id == id then return {'run_stopped'} end
    end
  end
  -- Drained calls keep answering already_completed until their marker's expiry.
  local expiry = redis.call('ZSCORE', completed_key, id)
  if expiry and tonumber(expiry) > now then return {'already_completed', 'consumed'} end
  return {'unknown_tool_call'}
end
-- An approval names the request it answers: a stale id (of a call a rewind has since restored
-- under another run) must not land on the call, so it is compared here, with the write.
if approval_id ~= '' and cjson.decode(redis.call('HGET', pending_key, id)).approvalId ~= approval_id
    then
  return {'unknown_approval'}
end
local fields = redis.call('HMGET', state_key, 'runId', 'status', 'stop')
local call_run = redis.call('HGET', pending_run_key, id)
-- The recorded stop wins: nothing is stored for a stopped run's call.
if fields[3] and cjson.decode(fields[3]).runId == call_run then return {'run_stopped'} end
if call_run ~= fields[1] then return {'run_superseded'} end
-- A resume has claimed the batch: an unanswered call is being drained as lapsed.
if fields[2] ~= 'suspended_client_tool' then return {'already_completed', 'consumed'} end
if redis.call('HSETNX', answers_key, id, answer_json) == 0 then
  return {'already_completed', batch_continuation()}
end
redis.call('ZREM', open_deadlines_key, id)
redis.call('HSET', state_key, 'updatedAt', now_text)
return {'accepted', batch_continuation()}
