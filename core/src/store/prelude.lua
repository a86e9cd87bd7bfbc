-- Shared by every Baton script. Every script's KEYS start with the session's state hash and its
-- stream, named here; each script names its other keys, and its ARGV, at its top. A chunk body
-- is a JSON object without its opening brace; the sequence goes in front.
local state_key = KEYS[1]
local stream_key = KEYS[2]
-- Every invocation also passes, after the keys its script declares, the state hash and the stream
-- of the session tree's root (the session's own for a root): a child's chunks are copied there.
local root_state_key = KEYS[#KEYS - 1]
local root_stream_key = KEYS[#KEYS]

-- The statuses of a session that has ended: no run executes and none waits for answers.
local ended_statuses = { completed = true, failed = true, interrupted = true }

local function is_ended(status)
  return ended_statuses[status] == true
end

-- Takes one token from a submit bucket (a hash of its tokens and the time, in ms, they were
-- counted at), refilled continuously at `rate` tokens a ms up to `capacity`; the bucket expires
-- once full again. Returns nil when taken, else the ms until a token is available (and nothing
-- is written). Every script that spends a root's submit token spends it here (submit_answer,
-- take_submit_token), so a root has one bucket whatever the answer.
local function take_token(bucket_key, capacity, rate, now, now_text)
  local bucket = redis.call('HMGET', bucket_key, 'tokens', 'at')
  local tokens = tonumber(bucket[1]) or capacity
  local at = tonumber(bucket[2]) or now
  tokens = math.min(capacity, tokens + math.max(0, now - at) * rate)
  if tokens < 1 then return math.ceil((1 - tokens) / rate) end
  redis.call('HSET', bucket_key, 'tokens', tostring(tokens - 1), 'at', now_text)
  redis.call('PEXPIRE', bucket_key, math.ceil(capacity / rate))
  return nil
end

-- A chunk's header (its stream, session, agent and run ids) is the same for every chunk a run of
-- a session writes, so a stream entry does not repeat it: the entry holds the rest of the chunk
-- (field c, from its timestamp on) and the header's key (field h, a number below 2^23, which a
-- stream entry stores in 4 bytes), and the state hash of the stream's session keeps the header
-- once, as 'chunkHeader:<key>', in the shortest form a reader can rebuild it from
-- (store/stream.rs), so that the hash stays within Redis's compact encoding
-- (hash-max-listpack-value, 64 bytes by default):
-- * the run id alone, for a chunk of the session itself on its own stream (the stream id is the
--   state's streamId, the session id is in the key, the agent id is the session's);
-- * '^.<suffix>:<key>', for a chunk of a session below the root copied to the root's stream
--   (which carries the root's streamId: a chunk on a stream names that stream), where the
--   session is '<root>.<suffix>' and its own state holds the run id under that key;
-- * '.<suffix>:<key>', the same as earlier versions wrote it, when a copy kept the child's
--   streamId (read back as written);
-- * the whole header, else (and in hashes written by earlier versions, under 8 hex digits).
-- The key is taken from the header's SHA-1, and the next ones in turn when a field holds another
-- header already (a few at most). The sequence is the entry's id. A reader puts the chunk back
-- together byte for byte. A header that does not have the expected form, or finds no key free,
-- is stored in the entry, as the whole chunk in c with no h.
local chunk_header_pattern = '^"streamId":"([^"]*)","sessionId":"([^"]*)","agentId":"([^"]*)",'
  .. '"runId":"([^"]*)",(.*)$'
local chunk_header_keys = 8388608
local chunk_header_probes = 8

-- The session id in a state key ('<prefix>:{<root>}:<session>:state').
local function session_of(state)
  return string.match(state, ':([^:{}]+):state$')
end

-- The form in which the state hash `state` keeps a chunk header (see above). `origin` is nil, or
-- for a copy on the root's stream {state = the chunk's own session's state, key = the header's
-- key there, nil if it kept the chunk whole}.
local function stored_chunk_header(state, origin, header, ids)
  if ids.session ~= ids.agent or ids.run == '' or string.find(ids.run, '^[.]') then return header end
  local session = session_of(state)
  if origin == nil then
    if ids.session == session and ids.stream == redis.call('HGET', state, 'streamId') then
      return ids.run
    end
    return header
  end
  local prefix = session .. '.'
  if origin.key and string.sub(ids.session, 1, #prefix) == prefix
      and ids.session == session_of(origin.state)
      and ids.stream == redis.call('HGET', state, 'streamId')
      and redis.call('HGET', origin.state, 'chunkHeader:' .. origin.key) == ids.run then
    return '^' .. string.sub(ids.session, #session + 1) .. ':' .. origin.key
  end
  return header
end

-- The entry fields of a chunk body (see above) for the stream of the session whose state is
-- `state`, and the header's key (nil when the entry holds the whole chunk); `origin` as in
-- stored_chunk_header.
local function chunk_entry_fields(state, origin, seq, body)
  local stream_id, session_id, agent_id, run_id, rest = string.match(body, chunk_header_pattern)
  if stream_id then
    local header = string.sub(body, 1, #body - #rest)
    local ids = {stream = stream_id, session = session_id, agent = agent_id, run = run_id}
    local form = stored_chunk_header(state, origin, header, ids)
    local first = tonumber(string.sub(redis.sha1hex(header), 1, 6), 16)
    for probe = 0, chunk_header_probes - 1 do
      local key = tostring((first + probe) % chunk_header_keys)
      local field = 'chunkHeader:' .. key
      local stored = redis.call('HGET', state, field)
      if not stored then
        redis.call('HSET', state, field, form)
        stored = form
      end
      if stored == form then return {'c', rest, 'h', key}, key end
    end
  end
  return {'c', '{"sequence":' .. seq .. ',' .. body}, nil
end

-- Appends a sequenced chunk to one stream, trimmed to its session's maxChunks (0 or unset: all);
-- `origin` as in stored_chunk_header. Returns the sequence and the header's key (see
-- chunk_entry_fields).
local function append_chunk(state, origin, stream, body, max)
  local seq = redis.call('HINCRBY', state, 'lastSequence', 1)
  local fields, header_key = chunk_entry_fields(state, origin, seq, body)
  if max == nil then max = tonumber(redis.call('HGET', state, 'maxChunks') or '0') or 0 end
  if max > 0 then
    redis.call('XADD', stream, 'MAXLEN', max, seq .. '-0', unpack(fields))
  else
    redis.call('XADD', stream, seq .. '-0', unpack(fields))
  end
  return seq, header_key
end

-- Redis gives a stream's newest node room to grow (4 KB, stream-node-max-bytes) when it creates
-- it, and gives it back only when the node is full: a session that goes quiet (suspended or
-- ended) with a short stream would keep that room for as long as it waits. Writing the stream
-- back from its own DUMP allocates each node at its size. Done for a small stream only (a long
-- one wastes at most that one node's room, and copying it costs more); a Redis that refuses
-- DUMP or RESTORE (an ACL without @dangerous) just keeps the room.
--
-- A stream written back has no room to give until Redis starts a new node (the newest one grows
-- by what it is given). So a stream of more than one node is written back only when its shape
-- (its node count, its first entry and how many entries it lost) changed since the last time,
-- which the state of its session keeps; a stream of one node, the short session's, costs little
-- to write back and keeps nothing in the state.
local compact_stream_limit_bytes = 32768

-- The stream's node count and its shape (see above), or nil when XINFO does not tell.
local function stream_shape(stream)
  local info = redis.pcall('XINFO', 'STREAM', stream)
  if type(info) ~= 'table' then return nil end
  local nodes, length, added, first = nil, nil, nil, ''
  for i = 1, #info - 1, 2 do
    local name, value = info[i], info[i + 1]
    if name == 'radix-tree-keys' then nodes = value
    elseif name == 'length' then length = value
    elseif name == 'entries-added' then added = value
    elseif name == 'first-entry' and type(value) == 'table' then first = value[1] end
  end
  if not nodes or not length then return nil end
  local lost = added and tostring(added - length) or ''
  return nodes, nodes .. ':' .. first .. ':' .. lost
end

local function compact_stream(state, stream)
  local nodes, shape = stream_shape(stream)
  local kept = nodes and nodes > 1
  if kept and redis.call('HGET', state, 'streamShape') == shape then return end
  local used = redis.pcall('MEMORY', 'USAGE', stream)
  if type(used) ~= 'number' or used > compact_stream_limit_bytes then return end
  local dump = redis.pcall('DUMP', stream)
  if type(dump) ~= 'string' then return end
  local ttl = redis.call('PTTL', stream)
  if ttl < 0 then ttl = 0 end
  local restored = redis.pcall('RESTORE', stream, ttl, dump, 'REPLACE')
  if kept and type(restored) == 'table' and restored.ok then
    redis.call('HSET', state, 'streamShape', shape)
  end
end

-- The chunk types a child keeps to its own stream: on the root's, the parent's subagent_end
-- and the root's own suspended chunk say the same, and a follower of the root stops at them.
-- They are also the chunks after which a session goes quiet (see compact_stream).
local own_stream_only = { ['end'] = true, suspended = true }

-- A chunk body (see emit_on) with its streamId replaced by `stream_id`.
local function with_stream_id(body, stream_id)
  local rest = string.match(body, '^"streamId":"[^"]*",(.*)$')
  if not rest or not stream_id then return body end
  return '"streamId":"' .. stream_id .. '",' .. rest
end

-- The field of the root's state that marks a session below it closed on the root's stream: its
-- subagent_end is there, and nothing more of it is copied after it (see emit_on). A stop closes
-- the open sessions below the one it stops before that one's end (stop_run.lua).
local function closed_field(session_id)
  return 'closed:' .. string.sub(session_id, #session_of(root_state_key) + 1)
end

-- Appends a chunk to the stream of the session whose state hash is `state` (another session of
-- the tree, for the scripts that span two) and, for a session below the root, a copy to the
-- root's stream under the root's next sequence and with the root's streamId (a reader
-- re-snapshots when a stream's id changes), until its subagent_end closes it there; the copy
-- keeps its sessionId and agentId, so a follower of the root can tell the sessions apart.
-- Returns the session's own sequence and the key of the chunk's header (see
-- chunk_entry_fields).
local function emit_on(state, stream, body, max)
  local seq, header_key = append_chunk(state, nil, stream, body, max)
  -- The body starts with the header (ids without quotes inside), then the type tag.
  local kind = string.match(body, '^"streamId":"[^"]*","sessionId":"[^"]*","agentId":"[^"]*",'
    .. '"runId":"[^"]*","timestamp":%d+,"type":"([%w_]+)"')
  if kind == 'subagent_end' then
    local child = string.match(body, '"subSessionId":"([^"]*)"')
    if child then redis.call('HSET', root_state_key, closed_field(child), '1') end
  end
  if own_stream_only[kind] then
    compact_stream(state, stream)
  elseif state ~= root_state_key
      and redis.call('HEXISTS', root_state_key, closed_field(session_of(state))) == 0 then
    local root_stream_id = redis.call('HGET', root_state_key, 'streamId')
    append_chunk(root_state_key, {state = state, key = header_key}, root_stream_key,
      with_stream_id(body, root_stream_id), nil)
  end
  return seq, header_key
end

-- A session keeps at most maxChunks chunks (0 or unset: all); the oldest are trimmed.
local max_chunks = nil
local function emit(body)
  if max_chunks == nil then
    max_chunks = tonumber(redis.call('HGET', state_key, 'maxChunks') or '0') or 0
  end
  return emit_on(state_key, stream_key, body, max_chunks)
end

-- A session below the root that waits on a person again while the root is suspended (a child
-- the tree's resume continued, which asks again; a caller whose remote child paused again) writes
-- the root's `suspended` chunk again on the root's stream: `body`, the session's own suspended
-- chunk, under the root's header and step. A follower of the root stops there, as at the root's
-- first suspension (a child's own suspended stays on its stream, see own_stream_only). Nothing
-- while the root's run works: its own suspension says so.
local function root_waits_again(body)
  if state_key == root_state_key then return end
  local root = redis.call('HMGET', root_state_key, 'status', 'streamId', 'runId', 'suspension')
  if root[1] ~= 'suspended_client_tool' or not root[2] or not root[3] then return end
  local rest = string.match(body,
    '^"streamId":"[^"]*","sessionId":"[^"]*","agentId":"[^"]*","runId":"[^"]*",(.*)$')
  if not rest then return end
  local step = root[4] and string.match(root[4], '"step":(%d+)')
  if step then rest = string.gsub(rest, '"step":%d+', '"step":' .. step, 1) end
  local root_id = session_of(root_state_key)
  emit_on(root_state_key, root_stream_key, '"streamId":"' .. root[2] .. '","sessionId":"'
    .. root_id .. '","agentId":"' .. root_id .. '","runId":"' .. root[3] .. '",' .. rest, nil)
end

-- An ended session's keys expire after the retention (ms, as text; '0' keeps them): set by the
-- script that ends the session, on the keys it declares.
local function expire_ended(retention_ms_text, keys)
  local retention_ms = tonumber(retention_ms_text) or 0
  if retention_ms <= 0 then return end
  for _, key in ipairs(keys) do redis.call('PEXPIRE', key, retention_ms) end
end

-- The keys an ended session leaves (see expire_ended): `keys`, its children map and, for the
-- root (whose end is the tree's), the tree's keys kept on the root (`root_keys`: its members,
-- the calls' owners, the drained calls' markers, the tree's call ids).
local function session_keys(keys, children_key, root_keys)
  keys[#keys + 1] = children_key
  if state_key == root_state_key then
    for _, key in ipairs(root_keys) do keys[#keys + 1] = key end
  end
  return keys
end

-- A new run of an ended session keeps its keys again (see expire_ended).
local function keep_keys(keys)
  for _, key in ipairs(keys) do redis.call('PERSIST', key) end
end

-- Whether the tree's root has been stopped (an interrupt or abort ended it): the stop is durable
-- on the root and every write of a session below it is fenced on it, so a session below a
-- stopped root writes nothing more (its own stop, which the root's stop makes next, is not
-- fenced). A next turn of the root makes it active again, and its new children write.
local function tree_stopped()
  if state_key == root_state_key then return false end
  local root = redis.call('HMGET', root_state_key, 'status', 'stop')
  return root[2] ~= false and is_ended(root[1])
end

-- Returns nil when the run may write, or the reason it may not. A run a stop is fencing (its
-- steps moved on between the stop's read and its script, see stop_run.lua) may not write: the
-- stop's next attempt then finds it where it read it.
local function run_guard(run_id)
  local fields = redis.call('HMGET', state_key, 'status', 'runId', 'stopping')
  if not fields[1] then return 'session_not_found' end
  if fields[2] ~= run_id then return 'run_superseded' end
  if fields[1] ~= 'active' or fields[3] == run_id then return 'run_not_active' end
  if tree_stopped() then return 'run_not_active' end
  return nil
end

-- Like run_guard, and also refuses work on a step that is already committed: a stale activity
-- attempt still running after its retry committed the step must not stage or stream again.
local function step_guard(run_id, step)
  local refused = run_guard(run_id)
  if refused then return refused end
  if tonumber(redis.call('HGET', state_key, 'stepCount')) >= tonumber(step) then
    return 'already_committed'
  end
  return nil
end

-- Returns nil when a remote child's follower may write on this session while the session is
-- suspended on run `run_id` awaiting the remote call `via_call_id` (pending, unanswered): the
-- follow of a remote child its caller's resume continued, or a relayed answer. A caller that
-- moved on (another run, a stop, the call answered or no longer pending) makes the follower
-- stale: 'already_committed'.
local function awaiting_remote_guard(run_id, pending_key, answers_key, via_call_id)
  local fields = redis.call('HMGET', state_key, 'status', 'runId')
  if not fields[1] then return 'session_not_found' end
  if fields[2] ~= run_id or fields[1] ~= 'suspended_client_tool' or tree_stopped()
      or redis.call('HEXISTS', pending_key, via_call_id) == 0
      or redis.call('HEXISTS', answers_key, via_call_id) == 1 then
    return 'already_committed'
  end
  return nil
end

-- The guard of a remote child's follower: the step guard within the call's step (step given),
-- awaiting_remote_guard while the caller is suspended awaiting the call (step '').
local function follow_guard(run_id, step, pending_key, answers_key, via_call_id)
  if step == '' then return awaiting_remote_guard(run_id, pending_key, answers_key, via_call_id) end
  return step_guard(run_id, step)
end

-- A field of the staged hash, scoped by run and step: '<name>:<runId>:<step>', and for one
-- call's result 'result:<runId>:<step>:<toolCallId>'.
local function staged_field(name, run_id, step, tool_call_id)
  local field = name .. ':' .. run_id .. ':' .. step
  if tool_call_id then field = field .. ':' .. tool_call_id end
  return field
end

-- Sets one call's staged field (see staged_field) unless it is set, after the step guard.
-- Returns nil when this call set it, else the reply saying why not (a refusal or 'already_staged').
local function stage_call_field(staged_key, name, run_id, step, tool_call_id, value)
  local refused = step_guard(run_id, step)
  if refused then return {refused} end
  local field = staged_field(name, run_id, step, tool_call_id)
  if redis.call('HSETNX', staged_key, field, value) == 0 then return {'already_staged'} end
  return nil
end

-- Appends a checkpoint record; its id is its index in the list, which only grows. A session with
-- a custom state records it too (as its text), so a rewind to the checkpoint restores it.
local function push_checkpoint(key, message_count, step_count, seq, extra)
  local id = redis.call('LLEN', key)
  local custom = redis.call('HGET', state_key, 'customState')
  local custom_part = custom and (',"customState":' .. custom) or ''
  redis.call('RPUSH', key, '{"id":' .. id .. ',"messageCount":' .. message_count .. ',"stepCount":'
    .. step_count .. ',"streamSequence":' .. seq .. (extra or '') .. custom_part .. '}')
  return id
end

-- The part of a checkpoint record (see push_checkpoint) for a step that suspended: when, what
-- it awaited and the pending entries it wrote, so a rewind to it can await the same calls again.
local function suspended_checkpoint_extra(suspended_at, suspension_json, pending_calls_json)
  return ',"suspendedAt":' .. suspended_at .. ',"suspension":' .. suspension_json .. ',"pending":['
    .. table.concat(pending_calls_json, ',') .. ']'
end

-- Makes a call of this script's session pending (keys: pending, ownership on the root session,
-- open_deadlines): its entry, the session that owns it and its deadline among the unanswered
-- calls. What the state says already is not stored again: the run that awaits a session's calls
-- is always the session's run (a claim and a release move them all), and a root owns the calls
-- it has pending, so only a session below the root gets an ownership entry.
local function register_pending(keys, id, call_json, owner_session_id, deadline_at)
  redis.call('ZADD', keys.open_deadlines, tonumber(deadline_at), id)
  redis.call('HSET', keys.pending, id, call_json)
  if state_key ~= root_state_key then redis.call('HSET', keys.ownership, id, owner_session_id) end
end

-- Ends a drained call's pending state (keys: as register_pending, pending_run, and answers and
-- completed on the root session): it keeps answering already_completed until its marker
-- expires. pendingRun is no longer written; a call pending since an earlier version has an entry.
local function clear_pending(keys, id, marker_expiry)
  redis.call('HDEL', keys.pending, id)
  redis.call('HDEL', keys.pending_run, id)
  redis.call('HDEL', keys.answers, id)
  redis.call('HDEL', keys.ownership, id)
  redis.call('ZREM', keys.open_deadlines, id)
  redis.call('ZADD', keys.completed, tonumber(marker_expiry), id)
end

-- An end chunk's body with the session's custom state (`customState`, JSON text written by the
-- Rust side, never decoded here) as its `state` field, for a session that has one.
local function with_custom_state(state, body)
  local custom = redis.call('HGET', state, 'customState')
  if not custom then return body end
  return string.sub(body, 1, -2) .. ',"state":' .. custom .. '}'
end

-- Appends a staged step to the log (keys: staged, messages, checkpoints, usage): the assistant
-- message, the results of its calls in call order except the awaited ones (a set of ids), the
-- usage record, the step count, the custom state changed by the calls' staged patches with its
-- state_patch chunk, step_end and a checkpoint; then drops the step's staged fields.
-- `checkpoint_extra` ('' or ',"field":…') goes into the checkpoint record; `finish` ('' or a JSON
-- object) into the turn, as its chat metadata. `state_fold` is
-- {before, after, body}: a step with staged patches and an empty body is not committed, the
-- reply hands the state and the patches to the caller, which folds them (Lua would round
-- numbers) and commits again with the state it read (`before`, a fence), the state after and
-- the state_patch chunk. Returns nil and step_end's sequence, or a reply to return.
local function append_staged_step(keys, run_id, step_text, now, step_end_body, awaited,
    checkpoint_extra, state_fold, finish)
  local step = tonumber(step_text)
  local committed = tonumber(redis.call('HGET', state_key, 'stepCount'))
  if committed >= step then return {'already_committed'} end
  if committed ~= step - 1 then return {'step_out_of_order', committed} end
  local turn_field = staged_field('turn', run_id, step_text)
  local calls_field = staged_field('calls', run_id, step_text)
  local usage_field = staged_field('usage', run_id, step_text)
  local turn = redis.call('HGET', keys.staged, turn_field)
  if not turn then return {'not_staged'} end
  local call_ids = cjson.decode(redis.call('HGET', keys.staged, calls_field))
  local results = {}
  local fields = {turn_field, calls_field, usage_field, staged_field('emitted', run_id, step_text),
    staged_field('attempt', run_id, step_text)}
  -- Changes staged for this step by calls a resumed run drained (not calls of the turn) go
  -- first, in the order of their call ids; then the turn's calls' changes, in call order.
  local patches = {}
  if redis.call('HEXISTS', state_key, 'customState') == 1 then
    local turn_calls = {}
    for _, id in ipairs(call_ids) do turn_calls[id] = true end
    local patch_prefix = staged_field('patch', run_id, step_text) .. ':'
    local drained = {}
    for _, field in ipairs(redis.call('HKEYS', keys.staged)) do
      if string.sub(field, 1, #patch_prefix) == patch_prefix then
        local id = string.sub(field, #patch_prefix + 1)
        if not turn_calls[id] then drained[#drained + 1] = id end
      end
    end
    table.sort(drained)
    for _, id in ipairs(drained) do
      local field = patch_prefix .. id
      patches[#patches + 1] = id
      patches[#patches + 1] = redis.call('HGET', keys.staged, field)
      fields[#fields + 1] = field
    end
  end
  for _, id in ipairs(call_ids) do
    if not awaited[id] then
      local field = staged_field('result', run_id, step_text, id)
      local result = redis.call('HGET', keys.staged, field)
      if not result then return {'missing_result', id} end
      results[#results + 1] = result
      fields[#fields + 1] = field
      local patch_field = staged_field('patch', run_id, step_text, id)
      local patch = redis.call('HGET', keys.staged, patch_field)
      if patch then
        patches[#patches + 1] = id
        patches[#patches + 1] = patch
        fields[#fields + 1] = patch_field
      end
    end
  end
  if #patches > 0 then
    local current = redis.call('HGET', state_key, 'customState') or ''
    if state_fold.body == '' then
      local reply = {'state_patches', current}
      for _, value in ipairs(patches) do reply[#reply + 1] = value end
      return reply
    end
    if current ~= state_fold.before then return {'state_moved'} end
  end
  -- A finishing step's turn keeps the chat message's server metadata (the turn is a JSON object
  -- without a finish field: the staging never writes one).
  if finish ~= '' then turn = string.sub(turn, 1, -2) .. ',"finish":' .. finish .. '}' end
  redis.call('RPUSH', keys.messages, turn)
  for _, result in ipairs(results) do redis.call('RPUSH', keys.messages, result) end
  redis.call('RPUSH', keys.usage, redis.call('HGET', keys.staged, usage_field))
  redis.call('HSET', state_key, 'stepCount', step, 'updatedAt', now)
  if #patches > 0 then
    redis.call('HSET', state_key, 'customState', state_fold.after)
    emit(state_fold.body)
  end
  local seq = emit(step_end_body)
  push_checkpoint(keys.checkpoints, redis.call('LLEN', keys.messages), step, seq, checkpoint_extra)
  -- The start markers of at-most-once tools (see mark_tool_started.lua) of this step, including
  -- those a resume's drain wrote for approved calls, and the questions its calls stopped on (see
  -- stage_tool_asks.lua) are not in the call list: find them by name.
  local started_prefix = staged_field('started', run_id, step_text) .. ':'
  local asks_prefix = staged_field('asks', run_id, step_text) .. ':'
  for _, field in ipairs(redis.call('HKEYS', keys.staged)) do
    if string.sub(field, 1, #started_prefix) == started_prefix
      or string.sub(field, 1, #asks_prefix) == asks_prefix then
      fields[#fields + 1] = field
    end
  end
  redis.call('HDEL', keys.staged, unpack(fields))
  return nil, seq
end
