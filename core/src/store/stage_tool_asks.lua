-- Records that a server tool's call of a step stopped to ask a person instead of answering (an
-- MCP server's input_required): the question and how the call goes on, as JSON. First one wins;
-- the step's suspension makes it the call's pending entry, and its commit drops the field.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local asked = ARGV[4]

return stage_call_field(staged_key, 'asks', run_id, step, tool_call_id, asked) or {'ok'}
