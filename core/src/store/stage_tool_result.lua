-- Records one server tool's result for a step, first answer wins, and reports it on the stream.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local tool_message = ARGV[4]
local tool_end_body = ARGV[5]

local refusal = stage_call_field(staged_key, 'result', run_id, step, tool_call_id, tool_message)
if refusal then return refusal end
emit(tool_end_body)
return {'ok'}
