-- Records what a caller knows of the A2A task its call began (the consumer's side of an A2A
-- sub-agent), in the caller's state as 'a2aChild:<child>': 'sent' just before the call's message
-- goes out, then the task's id once the agent named it. Under the follow guard: within the call's
-- step, or while the caller is suspended awaiting the call. A 'sent' over an existing record
-- writes nothing and replies with the record, so an attempt learns what an earlier one left
-- (a 'sent' without a task: the message may have begun a task nobody knows of).
local pending_key = KEYS[3]
local answers_key = KEYS[4]
local run_id = ARGV[1]
local step = ARGV[2] -- '' while the caller is suspended awaiting the call
local tool_call_id = ARGV[3]
local child = ARGV[4]
local value = ARGV[5] -- 'sent', or the task id

local refused = follow_guard(run_id, step, pending_key, answers_key, tool_call_id)
if refused then return {refused} end
local field = 'a2aChild:' .. child
local before = redis.call('HGET', state_key, field)
if value == 'sent' and before then return {'ok', before} end
redis.call('HSET', state_key, field, value)
return {'ok', ''}
