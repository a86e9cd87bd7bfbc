-- Moves a staged step into the log (see append_staged_step). With a final flag it also completes
-- the run. Committing a step twice changes nothing.
local staged_key = KEYS[3]
local messages_key = KEYS[4]
local checkpoints_key = KEYS[5]
local usage_key = KEYS[6]
local children_key = KEYS[7]
local tree_key = KEYS[8]
local ownership_key = KEYS[9]
local completed_key = KEYS[10]
local call_ids_key = KEYS[11]
local run_id = ARGV[1]
local step = ARGV[2]
local now = ARGV[3]
local step_end_body = ARGV[4]
local final = ARGV[5] == '1'
local output = ARGV[6] -- with final
local end_body = ARGV[7] -- with final
local retention_ms = ARGV[8] -- with final
local state_before = ARGV[9] -- '' until the caller folded the step's state patches
local state_after = ARGV[10]
local state_patch_body = ARGV[11]
local finish = ARGV[12] -- with final: the chat message's server metadata, kept on the turn

local refused = run_guard(run_id)
if refused then
  if refused == 'run_not_active' and final then
    local status = redis.call('HGET', state_key, 'status')
    if status == 'completed' then return {'already_committed'} end
  end
  return {refused}
end
local step_keys = {
  staged = staged_key, messages = messages_key, checkpoints = checkpoints_key, usage = usage_key,
}
local state_fold = {before = state_before, after = state_after, body = state_patch_body}
local refusal, seq = append_staged_step(step_keys, run_id, step, now, step_end_body, {}, '',
  state_fold, final and finish or '')
if refusal then return refusal end
if final then
  redis.call('HSET', state_key, 'status', 'completed', 'output', output)
  seq = emit(with_custom_state(state_key, end_body))
  expire_ended(retention_ms, session_keys({state_key, stream_key, staged_key, messages_key,
    checkpoints_key, usage_key}, children_key,
    {tree_key, ownership_key, completed_key, call_ids_key}))
end
return {'ok', seq}
