-- Records one tool call's result for a step, first answer wins, and reports it on the stream
-- (a sub-agent call's result also with its subagent_end chunk).
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local tool_message = ARGV[4]
local tool_end_body = ARGV[5]
local first_extra_chunk = 6 -- then the chunks written after tool_end

local refused = step_guard(run_id, step)
if refused then return {refused} end
local field = staged_field('result', run_id, step, tool_call_id)
if redis.call('HSETNX', staged_key, field, tool_message) == 0 then return {'already_staged'} end
emit(tool_end_body)
for i = first_extra_chunk, #ARGV do emit(ARGV[i]) end
return {'ok'}
