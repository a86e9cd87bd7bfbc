-- A submit in one step: takes a token from the root's submit bucket, checks the answer against
-- the pending call it answers, stores it, first answer wins, and says what the stored answer
-- means for the batch. Nothing but the token is written on a refusal, and nothing at all when
-- the bucket is empty (the token is taken first, whatever the answer turns out to be, as a
-- rate limit in front of the submit would).
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local ownership_key = KEYS[5]
local completed_key = KEYS[6]
local open_deadlines_key = KEYS[7]
local submit_bucket_key = KEYS[8]
local tree_key = KEYS[9]
local id = ARGV[1]
local answer_json = ARGV[2]
local now_text = ARGV[3]
local owner_session_id = ARGV[4]
local approval_id = ARGV[5] -- '' for a client tool's result
local submit_kind = ARGV[6] -- 'client' (a result or error) or 'approval'
local bucket_capacity = tonumber(ARGV[7]) -- 0: no rate limit (or a token already taken)
local bucket_rate = tonumber(ARGV[8]) -- refill per ms
-- '1': the caller read no tree and passes no tree keys (below), so the answer is for a root
-- alone; a tree with sessions below the root is refused ('in_tree') before anything is written.
local root_alone = ARGV[9] == '1'
-- '1': the caller checked the answer against the question of the tool's call that asked a person
-- (the pending entry's `asked`, which only this script reads: it answers 'check_asked' with the
-- entry first, writing nothing, and the caller checks and comes again with this flag).
local asked_checked = ARGV[10] == '1'
local first_refused_tool = 11 -- then pairs (agentType, toolName) whose schema refuses the answer
local now = tonumber(now_text)
-- After the declared keys, and before the root's two (see the prelude), pairs (openDeadlines,
-- children) of every session of the tree, the root's included, when the tree has more than the
-- root; none for a session alone.
local tree_keys_from = 10
local tree_keys_to = #KEYS - 2

-- The calls of a session still neither answered nor past their deadline, not counting its
-- sub-agent calls (a suspended child's calls are counted on the child): the members of its
-- openDeadlines, scored by deadline, less those of its children's calls.
local function open_calls(deadlines_key, children_key)
  local open = redis.call('ZCOUNT', deadlines_key, '(' .. now_text, '+inf')
  if open == 0 or not children_key then return open end
  for _, call_id in ipairs(redis.call('HKEYS', children_key)) do
    local deadline = redis.call('ZSCORE', deadlines_key, call_id)
    if deadline and tonumber(deadline) > now then open = open - 1 end
  end
  return open
end

-- 'caller_resumes' once every pending call of the tree is answered or past its deadline (the
-- batch rule holds across a tree: a resume of the root continues the whole tree only then), so
-- exactly one answer, the last, completes the batch. A session alone counts its own calls in
-- O(log n) whatever the size of the batch; a tree, each session's.
local function batch_continuation()
  if tree_keys_to < tree_keys_from then
    if open_calls(open_deadlines_key, nil) > 0 then return 'awaiting_batch' end
    return 'caller_resumes'
  end
  for index = tree_keys_from, tree_keys_to, 2 do
    if open_calls(KEYS[index], KEYS[index + 1]) > 0 then return 'awaiting_batch' end
  end
  return 'caller_resumes'
end

-- Whether the caller found the answer refused by the schema of this agent's tool.
local function refused_by_schema(agent_type, tool_name)
  for i = first_refused_tool, #ARGV, 2 do
    if ARGV[i] == agent_type and ARGV[i + 1] == tool_name then return true end
  end
  return false
end

if root_alone and redis.call('SCARD', tree_key) > 0 then return {'in_tree'} end

if bucket_capacity > 0 then
  local wait_ms = take_token(submit_bucket_key, bucket_capacity, bucket_rate, now, now_text)
  if wait_ms then return {'rate_limited', wait_ms} end
end

-- The caller names the root when it does not know the owner: a call of a session below the root
-- is answered on that session's keys, by a second invocation that takes no token. A root's own
-- calls have no ownership entry (see register_pending).
local owner = redis.call('HGET', ownership_key, id)
if owner and owner ~= owner_session_id then return {'owned_by', owner} end

if (not owner and state_key ~= root_state_key) or redis.call('HEXISTS', pending_key, id) == 0 then
  -- A stop closed the calls of its run and cleared them; it listed them for this answer.
  local stopped = redis.call('HGET', state_key, 'stoppedCalls')
  if stopped then
    for _, stopped_id in ipairs(cjson.decode(stopped)) do
      if stopped_id == id then return {'run_stopped'} end
    end
  end
  -- Drained calls keep answering already_completed until their marker's expiry.
  local expiry = redis.call('ZSCORE', completed_key, id)
  if expiry and tonumber(expiry) > now then return {'already_completed', 'consumed'} end
  return {'unknown_tool_call'}
end
local call_json = redis.call('HGET', pending_key, id)
local call = cjson.decode(call_json)
local fields = redis.call('HMGET', state_key, 'runId', 'status', 'stop', 'agentType')
local run_id = fields[1] or ''
-- The answer must be of the call's kind and pass its tool's schema (checked by the caller
-- against every agent's tools, since only this script knows which tool the call is of).
-- Every sub-agent transport's kind starts with 'sub_agent' (a local child's is just that).
if string.sub(call.kind, 1, 9) == 'sub_agent' then return {'awaits_sub_agent', call.toolName, run_id} end
if call.kind ~= submit_kind then return {'wrong_kind', call.toolName, run_id, call.kind} end
if call.asked and not asked_checked then return {'check_asked', call_json, call.toolName, run_id} end
if fields[4] and refused_by_schema(fields[4], call.toolName) then
  return {'refused_by_schema', call.toolName, run_id, fields[4]}
end
-- An approval names the request it answers: a stale id (of a call a rewind has since restored
-- under another run) must not land on the call, so it is compared here, with the write.
if approval_id ~= '' and call.approvalId ~= approval_id then
  return {'unknown_approval', call.toolName, run_id}
end
-- The recorded stop wins: nothing is stored for a stopped run's call (the session's run awaits
-- its pending calls).
if fields[3] and cjson.decode(fields[3]).runId == run_id then
  return {'run_stopped', call.toolName, run_id}
end
-- A resume has claimed the batch: an unanswered call is being drained as lapsed.
if fields[2] ~= 'suspended_client_tool' then
  return {'already_completed', 'consumed', call.toolName, run_id}
end
if redis.call('HSETNX', answers_key, id, answer_json) == 0 then
  return {'already_completed', batch_continuation(), call.toolName, run_id}
end
redis.call('ZREM', open_deadlines_key, id)
redis.call('HSET', state_key, 'updatedAt', now_text)
return {'accepted', batch_continuation(), call.toolName, run_id}
