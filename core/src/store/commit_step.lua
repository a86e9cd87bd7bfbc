-- Moves a staged step into the log (see append_staged_step). With a final flag it also completes
-- the run. Committing a step twice changes nothing.
-- KEYS: state, stream, staged, messages, checkpoints, usage
-- ARGV: runId, step, nowMs, stepEndBody, final ('1' or '0'), output, endBody
local refused = run_guard(ARGV[1])
if refused then
  if refused == 'run_not_active' and ARGV[5] == '1' then
    local status = redis.call('HGET', state_key, 'status')
    if status == 'completed' then return {'already_committed'} end
  end
  return {refused}
end
local refusal, seq = append_staged_step(ARGV[1], ARGV[2], ARGV[3], ARGV[4], {})
if refusal then return refusal end
if ARGV[5] == '1' then
  redis.call('HSET', state_key, 'status', 'completed', 'output', ARGV[6])
  seq = emit(ARGV[7])
end
return {'ok', seq}
