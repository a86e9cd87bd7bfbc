-- Starts the child session of a sub-agent call, once. Guarded by the parent's run and step (a
-- superseded, stopped or committed parent step starts nothing, nor a parent whose tree's root
-- was stopped), it writes the child's state (with
-- its parent and the call), initial log, run_start chunk and checkpoint 0, records the child in
-- the tree and in the parent's children, and writes subagent_start on the parent's stream. A
-- child that exists (a retried start) is left as it is and its run is named.
local messages_key = KEYS[3]
local checkpoints_key = KEYS[4]
local tree_key = KEYS[5]
local parent_state_key = KEYS[6]
local parent_stream_key = KEYS[7]
local parent_children_key = KEYS[8]
local parent_run_id = ARGV[1]
local parent_step = ARGV[2]
local tool_call_id = ARGV[3]
local child_session_id = ARGV[4]
local agent_type = ARGV[5]
local run_id = ARGV[6]
local stream_id = ARGV[7]
local parent_session_id = ARGV[8]
local now = ARGV[9]
local run_start_body = ARGV[10]
local workflow_id = ARGV[11] -- '' for the first run's derived one (store/session.rs)
local subagent_start_body = ARGV[12]
local custom_state = ARGV[13] -- the child's JSON object, or '' for an agent without one
local first_message = 14 -- then the initial log, one JSON message per argument

if redis.call('EXISTS', state_key) == 1 then
  local fields = redis.call('HMGET', state_key, 'runId', 'streamId')
  return {'exists', fields[1], fields[2]}
end
local parent = redis.call('HMGET', parent_state_key, 'status', 'runId', 'stepCount', 'maxChunks',
  'meta')
if not parent[1] then return {'session_not_found'} end
if parent[2] ~= parent_run_id then return {'run_superseded'} end
if parent[1] ~= 'active' then return {'run_not_active'} end
if tonumber(parent[3]) >= tonumber(parent_step) then return {'already_committed'} end
-- A parent below a stopped root starts no child (see tree_stopped).
if parent_state_key ~= root_state_key then
  local root = redis.call('HMGET', root_state_key, 'status', 'stop')
  if root[2] and is_ended(root[1]) then return {'run_not_active'} end
end

redis.call('HSET', state_key,
  'agentType', agent_type, 'runId', run_id, 'streamId', stream_id,
  'status', 'active', 'stepCount', 0, 'lastSequence', 0,
  'createdAt', now, 'updatedAt', now,
  'maxChunks', parent[4] or '0', 'parentSessionId', parent_session_id,
  'parentToolCallId', tool_call_id)
if workflow_id ~= '' then redis.call('HSET', state_key, 'workflowId', workflow_id) end
if custom_state ~= '' then redis.call('HSET', state_key, 'customState', custom_state) end
-- A child inherits its parent's userId, tags and metadata.
if parent[5] then redis.call('HSET', state_key, 'meta', parent[5]) end
for i = first_message, #ARGV do redis.call('RPUSH', messages_key, ARGV[i]) end
-- The parent's subagent_start first: on the root's stream it comes before anything of the child
-- (its run_start), so a reader demultiplexing by agentId knows the child before its chunks.
emit_on(parent_state_key, parent_stream_key, subagent_start_body)
local seq = emit(run_start_body)
push_checkpoint(checkpoints_key, redis.call('LLEN', messages_key), 0, seq, '')
redis.call('SADD', tree_key, child_session_id)
redis.call('HSET', parent_children_key, tool_call_id, child_session_id)
return {'created', run_id, stream_id}
