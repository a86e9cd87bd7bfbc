-- A remote child whose turn its caller's resume continued has ended: its end answers the
-- caller's remote call, once, as a local child's report does (the answer stored, the call out of
-- the open calls, subagent_end on the caller's stream), and the calls the child had relayed are
-- dropped with their answers; the caller's fold of the child's state waits for the caller's drain
-- ('remoteFold:<callId>'). Only while the caller is suspended on the run awaiting the call.
-- Replies as report_to_parent.lua does, so the caller can resume the session.
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local open_deadlines_key = KEYS[5]
local relayed_key = KEYS[6]
local ownership_key = KEYS[7]
local run_id = ARGV[1]
local tool_call_id = ARGV[2]
local answer_json = ARGV[3]
local subagent_end_body = ARGV[4]
local now = ARGV[5]
local fold_patch = ARGV[6] -- the caller's after_sub_agent patch (JSON text), or ''

local fields = redis.call('HMGET', state_key, 'status', 'runId', 'suspendedRunId')
local held = fields[2] == run_id or fields[3] == run_id
if not held or redis.call('HEXISTS', pending_key, tool_call_id) == 0 then return {'not_awaited'} end
if fields[1] == 'suspended_client_tool' and fields[2] == run_id
    and redis.call('HSETNX', answers_key, tool_call_id, answer_json) == 1 then
  redis.call('ZREM', open_deadlines_key, tool_call_id)
  emit(subagent_end_body)
  -- The resumed caller's drain stages it, as a local child's fold (see remote_fold).
  if fold_patch ~= '' then redis.call('HSET', state_key, 'remoteFold:' .. tool_call_id, fold_patch) end
  local group_field = 'via:' .. tool_call_id
  local group = redis.call('HGET', relayed_key, group_field) or ''
  for id in string.gmatch(group, '%S+') do
    redis.call('HDEL', relayed_key, id, 'answer:' .. id)
    if state_key ~= root_state_key then redis.call('HDEL', ownership_key, id) end
  end
  redis.call('HDEL', relayed_key, group_field)
end
fields = redis.call('HMGET', state_key, 'status', 'runId', 'suspendedRunId')
local open = redis.call('ZCOUNT', open_deadlines_key, '(' .. now, '+inf')
return {'answered', fields[1], fields[2], open, fields[3] or ''}
