-- Records one server tool's result for a step, first answer wins, and reports it on the stream.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local tool_message = ARGV[4]
local tool_end_body = ARGV[5]

local refused = step_guard(run_id, step)
if refused then return {refused} end
local field = staged_field('result', run_id, step, tool_call_id)
if redis.call('HSETNX', staged_key, field, tool_message) == 0 then return {'already_staged'} end
emit(tool_end_body)
return {'ok'}
