-- Records a durable stop on the session's current run and ends it at once: interrupt leaves the
-- session `interrupted`, abort `failed` with framework_cancelled; the end chunk reports it. The
-- stop record stays so a late submit to the stopped run's calls answers run_stopped, until the
-- next turn drains those calls as not executed. A run that is not running is left alone.
-- KEYS: state, stream
-- ARGV: kind ('interrupt' | 'abort'), nowMs, stopJson, errorJson (abort), endBody
local fields = redis.call('HMGET', state_key, 'status', 'runId')
if not fields[1] then return {'session_not_found'} end
if fields[1] ~= 'active' and fields[1] ~= 'suspended_client_tool' then
  return {'not_running', fields[1]}
end
redis.call('HSET', state_key, 'stop', ARGV[3], 'updatedAt', ARGV[2])
if ARGV[1] == 'abort' then
  redis.call('HSET', state_key, 'status', 'failed', 'error', ARGV[4])
  redis.call('HINCRBY', state_key, 'aborts', 1)
else
  redis.call('HSET', state_key, 'status', 'interrupted')
end
emit(ARGV[5])
return {'ok', fields[2]}
