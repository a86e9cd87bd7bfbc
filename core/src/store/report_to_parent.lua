-- A child session that has ended answers its parent's sub-agent call, once: the answer is stored
-- as a submitted one would be, the call leaves the parent's open calls, and subagent_end goes on
-- the parent's stream. Only a parent suspended on the call is answered here: a parent whose run
-- still waits for the child's workflow stages the result itself. Replies with the parent's
-- status and run, how many of its calls are still open, and the suspended run a claim set aside
-- (empty if none), so the caller can resume it.
local parent_state_key = KEYS[3]
local parent_stream_key = KEYS[4]
local parent_pending_key = KEYS[5]
local parent_answers_key = KEYS[6]
local parent_open_deadlines_key = KEYS[7]
local tool_call_id = ARGV[1]
local answer_json = ARGV[2]
local subagent_end_body = ARGV[3]
local now = ARGV[4]

if redis.call('HEXISTS', parent_pending_key, tool_call_id) == 0 then return {'not_awaited'} end
if redis.call('HSETNX', parent_answers_key, tool_call_id, answer_json) == 1 then
  redis.call('ZREM', parent_open_deadlines_key, tool_call_id)
  emit_on(parent_state_key, parent_stream_key, subagent_end_body)
end
local parent = redis.call('HMGET', parent_state_key, 'status', 'runId', 'suspendedRunId')
local open = redis.call('ZCOUNT', parent_open_deadlines_key, '(' .. now, '+inf')
-- The suspended run (kept aside by a claim until the new run's drain) lets a retried report
-- find the run an earlier attempt claimed.
return {'answered', parent[1], parent[2], open, parent[3] or ''}
