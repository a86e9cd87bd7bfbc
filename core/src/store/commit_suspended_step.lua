-- Commits a step that awaits client calls, and suspends the run, in one script: the staged step
-- without the awaited calls' results (see append_staged_step), one pending entry per awaited
-- call with the run that awaits it, the ownership of each call on the root session, the
-- suspension context and status suspended_client_tool; a tool_approval_request chunk per
-- approval; then the suspended chunk. Twice changes
-- nothing.
-- KEYS: state, stream, staged, messages, checkpoints, usage, pending, pendingRun, rootOwnership,
--       openDeadlines
-- ARGV: runId, step, nowMs, stepEndBody, suspensionJson, suspendedBody, ownerSessionId,
--       then toolCallId, pendingCallJson, approvalRequestBody ('' for a client call),
--       deadlineAtMs per call
local refused = run_guard(ARGV[1])
if refused then
  if refused == 'run_not_active' then
    local fields = redis.call('HMGET', state_key, 'status', 'stepCount', 'runId')
    if fields[1] == 'suspended_client_tool' and fields[3] == ARGV[1]
        and tonumber(fields[2]) >= tonumber(ARGV[2]) then
      return {'already_committed'}
    end
  end
  return {refused}
end
local awaited = {}
local pending = {}
for i = 8, #ARGV, 4 do
  awaited[ARGV[i]] = true
  pending[#pending + 1] = ARGV[i + 1]
end
-- The checkpoint keeps what the step awaits, for a rewind to it.
local extra = ',"suspendedAt":' .. ARGV[3] .. ',"suspension":' .. ARGV[5] .. ',"pending":['
  .. table.concat(pending, ',') .. ']'
local refusal, seq = append_staged_step(ARGV[1], ARGV[2], ARGV[3], ARGV[4], awaited, extra)
if refusal then return refusal end
for i = 8, #ARGV, 4 do
  redis.call('ZADD', KEYS[10], tonumber(ARGV[i + 3]), ARGV[i])
  redis.call('HSET', KEYS[7], ARGV[i], ARGV[i + 1])
  redis.call('HSET', KEYS[8], ARGV[i], ARGV[1])
  redis.call('HSET', KEYS[9], ARGV[i], ARGV[7])
  if ARGV[i + 2] ~= '' then emit(ARGV[i + 2]) end
end
redis.call('HSET', state_key, 'status', 'suspended_client_tool', 'suspension', ARGV[5])
seq = emit(ARGV[6])
return {'ok', seq}
