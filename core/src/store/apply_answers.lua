-- Drains a resumed run's answered (or lapsed, or abandoned) calls into the log, in the order the
-- model made them, each with its tool_end chunk; ends each call's pending state (see
-- clear_pending; expired completed markers are reaped here) and the suspension; then appends the
-- resume's user message, if any, after the results. Applying twice changes nothing. Given the
-- resumed step's step_start, writes it last, as the step's chunk 0 for the attempt given (see
-- emit_model_chunks.lua): the drain comes before any attempt at that step streams, so a drain
-- that applies finds nothing of the step on the stream.
local messages_key = KEYS[3]
local pending_key = KEYS[4]
local pending_run_key = KEYS[5]
local answers_key = KEYS[6]
local ownership_key = KEYS[7]
local completed_key = KEYS[8]
local open_deadlines_key = KEYS[9]
local staged_key = KEYS[10]
local run_id = ARGV[1]
local now = ARGV[2]
local wait_ms = ARGV[3] -- the calls' client-tool wait, added to the session's total
local step_start_body = ARGV[4] -- '' for none
local next_step = ARGV[5]
local attempt = ARGV[6]
-- Then per call: toolCallId, toolMessage, toolEndBody, markerExpiryMs, extraChunkCount, and that
-- many chunk bodies written after its tool_end (an approved call's tool_data).
local first_call = 7

local refused = run_guard(run_id)
if refused then return {refused} end
local state = redis.call('HMGET', state_key, 'suspension', 'resumeMessage')
if not state[1] and not state[2] then return {'already_applied'} end
redis.call('HINCRBY', state_key, 'clientToolWaitMs', wait_ms)
local pending_keys = {
  pending = pending_key, pending_run = pending_run_key, answers = answers_key,
  ownership = ownership_key, completed = completed_key, open_deadlines = open_deadlines_key,
}
local i = first_call
while i <= #ARGV do
  redis.call('RPUSH', messages_key, ARGV[i + 1])
  emit(ARGV[i + 2])
  local extra = tonumber(ARGV[i + 4])
  for k = 1, extra do emit(ARGV[i + 4 + k]) end
  clear_pending(pending_keys, ARGV[i], ARGV[i + 3])
  i = i + 5 + extra
end
redis.call('ZREMRANGEBYSCORE', completed_key, '-inf', now)
if state[2] then redis.call('RPUSH', messages_key, state[2]) end
redis.call('HDEL', state_key, 'suspension', 'suspendedRunId', 'resumeMessage', 'abandon', 'stop',
  'stoppedCalls')
redis.call('HSET', state_key, 'updatedAt', now)
local emitted_field = staged_field('emitted', run_id, next_step)
if step_start_body ~= '' and not redis.call('HGET', staged_key, emitted_field) then
  redis.call('HSET', staged_key, staged_field('attempt', run_id, next_step), attempt,
    emitted_field, 1)
  emit(step_start_body)
  return {'ok', 1}
end
return {'ok', 0}
