-- Records the assistant turn of a step (not yet part of the log) and announces its tool calls.
-- A second call for the same step changes nothing and reports 'already_staged'.
--
-- A tool call id names one call in the whole session tree (a submit finds a call by it on the
-- root), whatever the model returns: the root's callIds hash records every id the tree's
-- sessions staged. A turn with an id the tree has already (or twice, or empty, or of Baton's own
-- form) is not staged: the reply names each such call (its position, from 1) with Baton's own id
-- for it, derived from the session, the step and the position, so a retry derives the same; the
-- caller gives those calls these ids (keeping the model's for the provider) and stages again.
-- An id recorded by this session for this step or a later one is free again: a rewind dropped
-- that step, or an earlier attempt at it staged nothing.
local staged_key = KEYS[3]
local call_ids_key = KEYS[4]
local run_id = ARGV[1]
local step = ARGV[2]
local assistant_message = ARGV[3]
local call_ids_json = ARGV[4]
local usage_record = ARGV[5]
local first_tool_start = 6 -- then one tool_start chunk body per call

local refused = step_guard(run_id, step)
if refused then return {refused} end
local turn_field = staged_field('turn', run_id, step)
if redis.call('HEXISTS', staged_key, turn_field) == 1 then return {'already_staged'} end

local session = session_of(state_key)
local root_session = session_of(root_state_key)
local suffix = ''
if session ~= root_session then suffix = string.sub(session, #root_session + 1) end
local step_number = tonumber(step)

-- Baton's own id for the call at `position` of this step of this session.
local function baton_id(position)
  return 'bt_' .. string.sub(redis.sha1hex(session .. '\n' .. step .. '\n' .. position), 1, 20)
end

-- Whether `id`, as recorded in callIds (`recorded`), is taken by a call other than this one.
local function taken(recorded)
  if not recorded then return false end
  local recorded_step, recorded_suffix = string.match(recorded, '^(%d+)(.*)$')
  return not (recorded_suffix == suffix and tonumber(recorded_step) >= step_number)
end

local call_ids = cjson.decode(call_ids_json)
local renamed = {}
local seen = {}
for position, id in ipairs(call_ids) do
  local own = baton_id(position)
  local collides = id == '' or seen[id]
    or (string.sub(id, 1, 3) == 'bt_' and id ~= own)
    or taken(redis.call('HGET', call_ids_key, id))
  if collides then
    renamed[#renamed + 1] = position
    renamed[#renamed + 1] = own
  end
  seen[id] = true
end
if #renamed > 0 then
  local reply = {'renamed'}
  for _, value in ipairs(renamed) do reply[#reply + 1] = value end
  return reply
end

redis.call('HSET', staged_key, turn_field, assistant_message,
  staged_field('calls', run_id, step), call_ids_json,
  staged_field('usage', run_id, step), usage_record)
for _, id in ipairs(call_ids) do redis.call('HSET', call_ids_key, id, step .. suffix) end
for i = first_tool_start, #ARGV do emit(ARGV[i]) end
return {'ok'}
