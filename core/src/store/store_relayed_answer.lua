-- Stores a person's answer to a call a remote child waits on, once its producer accepted it
-- (the consumer relayed it there first): first answer wins. Only while the caller is suspended
-- on the run awaiting the remote call whose group lists the call. Replies with how many calls of
-- the group are still unanswered, so the caller can tell whether the child's batch is complete.
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local relayed_key = KEYS[5]
local run_id = ARGV[1]
local via_call_id = ARGV[2]
local id = ARGV[3]
local answer_json = ARGV[4]
local now = ARGV[5]

local refused = awaiting_remote_guard(run_id, pending_key, answers_key, via_call_id)
if refused then return {refused} end
local group = redis.call('HGET', relayed_key, 'via:' .. via_call_id) or ''
local listed = false
for member in string.gmatch(group, '%S+') do
  if member == id then listed = true end
end
if not listed or redis.call('HEXISTS', relayed_key, id) == 0 then return {'unknown_tool_call'} end
local tag = 'accepted'
if redis.call('HSETNX', relayed_key, 'answer:' .. id, answer_json) == 0 then
  tag = 'already_completed'
else
  redis.call('HSET', state_key, 'updatedAt', now)
end
local open = 0
for member in string.gmatch(group, '%S+') do
  if redis.call('HEXISTS', relayed_key, 'answer:' .. member) == 0 then open = open + 1 end
end
return {tag, open}
