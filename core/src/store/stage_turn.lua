-- Records the assistant turn of a step (not yet part of the log) and announces its tool calls.
-- A second call for the same step changes nothing and reports 'already_staged'.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local assistant_message = ARGV[3]
local call_ids_json = ARGV[4]
local usage_record = ARGV[5]
local first_tool_start = 6 -- then one tool_start chunk body per call

local refused = step_guard(run_id, step)
if refused then return {refused} end
if redis.call('HSETNX', staged_key, staged_field('turn', run_id, step), assistant_message) == 0 then
  return {'already_staged'}
end
redis.call('HSET', staged_key, staged_field('calls', run_id, step), call_ids_json,
  staged_field('usage', run_id, step), usage_record)
for i = first_tool_start, #ARGV do emit(ARGV[i]) end
return {'ok'}
