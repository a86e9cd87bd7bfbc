-- Records the calls a paused remote child waits on a person for, in its caller's session: per
-- call an entry of the caller's 'relayed' hash under a tree-unique id (derived by the caller
-- from the child and the producer's call id, so a retried record writes the same entries) and,
-- below the root, an ownership entry on the root, so the root's submit finds the call; the
-- group of the remote call ('via:<callId>', the ids space-separated) replaces the group of the
-- child's previous pause (its entries and their answers dropped). The child's cursor moves to
-- the paused end, which a follower of its next turn must not read again. Within the call's step
-- (step given) the step guard holds; for a child its caller's resume continued (step '') the
-- caller must still be suspended on the run awaiting the call; there, a pause that changes the
-- group writes the given `suspended` chunk on the caller's stream (and the root's again, for a
-- caller below it: see root_waits_again): its run waits on a person again, and a follower of its
-- stream stops there as at its first suspension. Twice changes nothing.
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local relayed_key = KEYS[5]
local ownership_key = KEYS[6]
local run_id = ARGV[1]
local step = ARGV[2] -- '' while the caller is suspended awaiting the call
local via_call_id = ARGV[3]
local child = ARGV[4]
local end_sequence = tonumber(ARGV[5])
local owner_session_id = ARGV[6]
local suspended_body = ARGV[7] -- '' within the call's step
local first_call = 8 -- then per relayed call: its id, its entry (JSON text)

local refused = follow_guard(run_id, step, pending_key, answers_key, via_call_id)
if refused then return {refused} end
local new_ids = {}
local listed = {}
for i = first_call, #ARGV - 1, 2 do
  new_ids[ARGV[i]] = true
  listed[#listed + 1] = ARGV[i]
end
local group_field = 'via:' .. via_call_id
local previous = redis.call('HGET', relayed_key, group_field)
if previous then
  for id in string.gmatch(previous, '%S+') do
    if not new_ids[id] then
      redis.call('HDEL', relayed_key, id, 'answer:' .. id)
      if state_key ~= root_state_key then redis.call('HDEL', ownership_key, id) end
    end
  end
end
for i = first_call, #ARGV - 1, 2 do
  redis.call('HSETNX', relayed_key, ARGV[i], ARGV[i + 1])
  if state_key ~= root_state_key then redis.call('HSET', ownership_key, ARGV[i], owner_session_id) end
end
local group = table.concat(listed, ' ')
redis.call('HSET', relayed_key, group_field, group)
if step == '' and suspended_body ~= '' and previous ~= group then
  emit(suspended_body)
  root_waits_again(suspended_body)
end
local cursor_field = 'remoteCursor:' .. child
local cursor = tonumber(redis.call('HGET', state_key, cursor_field) or '0') or 0
if end_sequence and end_sequence > cursor then
  redis.call('HSET', state_key, cursor_field, end_sequence)
end
return {'ok'}
