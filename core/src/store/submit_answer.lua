-- Stores a client's answer to a pending call of the session, first answer wins, and says what
-- the stored answer means for the batch. Nothing is written on any refusal.
-- KEYS: state, stream, pending, pendingRun, answers, rootOwnership, rootCompleted, openDeadlines
-- ARGV: toolCallId, answerJson, nowMs, ownerSessionId
local id = ARGV[1]
local now = tonumber(ARGV[3])

-- 'caller_resumes' once every pending call is answered or past its deadline: the unanswered
-- calls are the members of openDeadlines, scored by deadline, so this is O(log n) whatever the
-- size of the batch.
local function batch_continuation()
  if redis.call('ZCOUNT', KEYS[8], '(' .. ARGV[3], '+inf') > 0 then return 'awaiting_batch' end
  return 'caller_resumes'
end

if redis.call('HGET', KEYS[6], id) ~= ARGV[4] or redis.call('HEXISTS', KEYS[3], id) == 0 then
  -- Drained calls keep answering already_completed until their marker's expiry.
  local expiry = redis.call('ZSCORE', KEYS[7], id)
  if expiry and tonumber(expiry) > now then return {'already_completed', 'consumed'} end
  return {'unknown_tool_call'}
end
local fields = redis.call('HMGET', state_key, 'runId', 'status', 'stop')
local call_run = redis.call('HGET', KEYS[4], id)
-- The recorded stop wins: nothing is stored for a stopped run's call.
if fields[3] and cjson.decode(fields[3]).runId == call_run then return {'run_stopped'} end
if call_run ~= fields[1] then return {'run_superseded'} end
-- A resume has claimed the batch: an unanswered call is being drained as lapsed.
if fields[2] ~= 'suspended_client_tool' then return {'already_completed', 'consumed'} end
if redis.call('HSETNX', KEYS[5], id, ARGV[2]) == 0 then
  return {'already_completed', batch_continuation()}
end
redis.call('ZREM', KEYS[8], id)
redis.call('HSET', state_key, 'updatedAt', ARGV[3])
return {'accepted', batch_continuation()}
