-- Forwards chunks a remote sub-agent's child streamed onto this session's stream (and, below the
-- root, its copy on the root's), each (child, childSequence) at most once, whatever the retries:
-- the session's state keeps, per child, the highest child sequence forwarded
-- ('remoteCursor:<child>'), which is also where a follower of the child resumes. The first call
-- for a child writes its subagent_start; a call with the child's usage rollup records it
-- ('remoteUsage:<child>', one per child: a repeat replaces it, never adds to it). Within the
-- call's step (step given) the step guard holds; for a child its caller's resume continued (step
-- '') the caller must still be suspended on the run awaiting the call (awaiting_remote_guard).
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local run_id = ARGV[1]
local step = ARGV[2] -- '' while the caller is suspended awaiting the call
local child = ARGV[3]
local start_body = ARGV[4] -- subagent_start, written by the first call for the child
local usage = ARGV[5] -- the child's rollup (JSON text), or ''
local tool_call_id = ARGV[6]
local first_pair = 7 -- then (childSequence, chunk body) pairs, in sequence order

local refused = follow_guard(run_id, step, pending_key, answers_key, tool_call_id)
if refused then return {refused} end
local cursor_field = 'remoteCursor:' .. child
local stored = redis.call('HGET', state_key, cursor_field)
local cursor = 0
if stored then
  cursor = tonumber(stored)
else
  emit(start_body)
end
local appended = 0
for i = first_pair, #ARGV - 1, 2 do
  local sequence = tonumber(ARGV[i])
  if sequence and sequence > cursor then
    emit(ARGV[i + 1])
    cursor = sequence
    appended = appended + 1
  end
end
redis.call('HSET', state_key, cursor_field, cursor)
if usage ~= '' then redis.call('HSET', state_key, 'remoteUsage:' .. child, usage) end
return {'ok', cursor, appended}
