-- Claims a suspended session for a new run: refuses a running session and a batch with calls
-- still awaited (naming them); else makes the new run the session's run, takes the pending calls
-- over for it and reports the run's start. Exactly one of two concurrent claims wins.
-- KEYS: state, stream, pending, pendingRun, answers
-- ARGV: newRunId, nowMs, runStartBody
local fields = redis.call('HMGET', state_key, 'status', 'stepCount')
local status = fields[1]
if not status then return {'session_not_found'} end
if status == 'active' then return {'already_running'} end
if status ~= 'suspended_client_tool' then return {'not_resumable', status} end
local now = tonumber(ARGV[2])
local entries = redis.call('HGETALL', KEYS[3])
local awaited = {}
for i = 1, #entries, 2 do
  if redis.call('HEXISTS', KEYS[5], entries[i]) == 0
      and cjson.decode(entries[i + 1]).deadlineAt > now then
    awaited[#awaited + 1] = entries[i]
  end
end
if #awaited > 0 then return {'awaiting', unpack(awaited)} end
redis.call('HSET', state_key, 'status', 'active', 'runId', ARGV[1], 'updatedAt', ARGV[2])
for i = 1, #entries, 2 do redis.call('HSET', KEYS[4], entries[i], ARGV[1]) end
emit(ARGV[3])
return {'ok', tonumber(fields[2])}
