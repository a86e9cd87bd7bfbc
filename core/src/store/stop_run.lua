-- Records a durable stop on the session's current run and ends it at once: interrupt leaves the
-- session `interrupted`, abort `failed` with framework_cancelled; the end chunk reports it. The
-- stop record stays so a late submit to the stopped run's calls answers run_stopped, until the
-- next turn drains those calls as not executed. A run that is not running is left alone, and so
-- is a session whose run is no longer the one the caller read (the record and the chunk name it).
local kind = ARGV[1] -- 'interrupt' | 'abort'
local now = ARGV[2]
local stop_json = ARGV[3]
local error_json = ARGV[4] -- with abort
local end_body = ARGV[5]
local expected_run_id = ARGV[6]

local fields = redis.call('HMGET', state_key, 'status', 'runId')
if not fields[1] then return {'session_not_found'} end
if fields[2] ~= expected_run_id then return {'run_superseded', fields[2]} end
if is_ended(fields[1]) then return {'not_running', fields[1]} end
redis.call('HSET', state_key, 'stop', stop_json, 'updatedAt', now)
if kind == 'abort' then
  redis.call('HSET', state_key, 'status', 'failed', 'error', error_json)
  redis.call('HINCRBY', state_key, 'aborts', 1)
else
  redis.call('HSET', state_key, 'status', 'interrupted')
end
emit(end_body)
return {'ok', fields[2]}
