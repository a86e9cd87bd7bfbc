-- Ends an active run as failed with a typed error, reports it with the end chunk and drops what
-- the run had staged. A run that already ended is left as it is.
-- KEYS: state, stream, staged
-- ARGV: runId, nowMs, errorJson, endBody
local refused = run_guard(ARGV[1])
if refused then return {refused} end
redis.call('HSET', state_key, 'status', 'failed', 'error', ARGV[3], 'updatedAt', ARGV[2])
local seq = emit(ARGV[4])
redis.call('DEL', KEYS[3])
return {'ok', seq}
