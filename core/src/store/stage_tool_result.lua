-- Records one tool call's result for a step, first answer wins, and reports it on the stream
-- (a sub-agent call's result also with its subagent_end chunk). The call's change of the custom
-- state, if any, is staged with it (the step's commit applies it and reports it).
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local tool_message = ARGV[4]
local tool_end_body = ARGV[5]
local state_patch = ARGV[6] -- the call's RFC 6902 patch of the custom state, or ''
local first_extra_chunk = 7 -- then the chunks written after tool_end

local refusal = stage_call_field(staged_key, 'result', run_id, step, tool_call_id, tool_message)
if refusal then return refusal end
if state_patch ~= '' then
  redis.call('HSET', staged_key, staged_field('patch', run_id, step, tool_call_id), state_patch)
end
emit(tool_end_body)
for i = first_extra_chunk, #ARGV do emit(ARGV[i]) end
return {'ok'}
