-- Commits a step that awaits client calls, and suspends the run, in one script: the staged step
-- without the awaited calls' results (see append_staged_step), each awaited call pending for the
-- run (see register_pending), the suspension context and status suspended_client_tool; a
-- tool_approval_request chunk per approval and a question chunk per tool's question; then the
-- suspended chunk (and, for a session below a suspended root, the root's again: see
-- root_waits_again). Twice changes nothing.
local staged_key = KEYS[3]
local messages_key = KEYS[4]
local checkpoints_key = KEYS[5]
local usage_key = KEYS[6]
local pending_key = KEYS[7]
local ownership_key = KEYS[8]
local open_deadlines_key = KEYS[9]
local run_id = ARGV[1]
local step = ARGV[2]
local now = ARGV[3]
local step_end_body = ARGV[4]
local suspension_json = ARGV[5]
local suspended_body = ARGV[6]
local owner_session_id = ARGV[7]
local state_before = ARGV[8] -- '' until the caller folded the step's state patches
local state_after = ARGV[9]
local state_patch_body = ARGV[10]
local finish = ARGV[11] -- the chat message's server metadata, kept on the turn
-- Then per awaited call: toolCallId, pendingCallJson, personRequestBody ('' for a client call),
-- deadlineAtMs, and the model's call it stands for (its own id, or for a question a tool's call
-- stopped on, that call's: it has no result in the step either).
local first_call = 12

local refused = run_guard(run_id)
if refused then
  if refused == 'run_not_active' then
    local fields = redis.call('HMGET', state_key, 'status', 'stepCount', 'runId')
    if fields[1] == 'suspended_client_tool' and fields[3] == run_id
        and tonumber(fields[2]) >= tonumber(step) then
      return {'already_committed'}
    end
  end
  return {refused}
end
local awaited = {}
local pending_calls_json = {}
for i = first_call, #ARGV, 5 do
  awaited[ARGV[i + 4]] = true
  pending_calls_json[#pending_calls_json + 1] = ARGV[i + 1]
end
local step_keys = {
  staged = staged_key, messages = messages_key, checkpoints = checkpoints_key, usage = usage_key,
}
local extra = suspended_checkpoint_extra(now, suspension_json, pending_calls_json)
local state_fold = {before = state_before, after = state_after, body = state_patch_body}
local refusal, seq = append_staged_step(step_keys, run_id, step, now, step_end_body, awaited, extra,
  state_fold, finish)
if refusal then return refusal end
local pending_keys = {
  pending = pending_key, ownership = ownership_key, open_deadlines = open_deadlines_key,
}
for i = first_call, #ARGV, 5 do
  register_pending(pending_keys, ARGV[i], ARGV[i + 1], owner_session_id, ARGV[i + 3])
  if ARGV[i + 2] ~= '' then emit(ARGV[i + 2]) end
end
redis.call('HSET', state_key, 'status', 'suspended_client_tool', 'suspension', suspension_json)
seq = emit(suspended_body)
root_waits_again(suspended_body)
return {'ok', seq}
