-- Gives a suspended session back to its suspended run when the run that claimed it never
-- started (its workflow start failed): the claim is undone (status, run) and a
-- `suspended` chunk says the session waits again, so the caller or the suspended run's deadline
-- workflow can resume it. Answers stored stay. Only a claim whose run is still the session's,
-- active and not yet drained (the suspension is still recorded) is released.
local claimed_run_id = ARGV[1]
local now = ARGV[2]
local suspended_body = ARGV[3]

local fields = redis.call('HMGET', state_key, 'status', 'runId', 'suspension')
if not fields[1] then return {'session_not_found'} end
-- Not held any more: nothing to release (the reply every store write gives a done write).
if fields[2] ~= claimed_run_id or fields[1] ~= 'active' or not fields[3] then
  return {'already_applied'}
end
-- The suspended run, which the claim kept aside (a suspension written by an earlier version
-- names it itself).
local suspended_run_id = redis.call('HGET', state_key, 'suspendedRunId')
  or cjson.decode(fields[3]).runId
redis.call('HSET', state_key, 'status', 'suspended_client_tool', 'runId', suspended_run_id,
  'updatedAt', now)
redis.call('HDEL', state_key, 'resumeMessage', 'abandon', 'suspendedRunId')
emit(suspended_body)
return {'ok'}
