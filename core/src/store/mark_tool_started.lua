-- Records that an at-most-once server tool is about to run a call: the start marker (when, in
-- ms). A marker that is already there means an earlier attempt started the call.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local now = ARGV[4]

return stage_call_field(staged_key, 'started', run_id, step, tool_call_id, now) or {'ok'}
