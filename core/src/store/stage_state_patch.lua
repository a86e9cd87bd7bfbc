-- Stages a change of the custom state (an RFC 6902 patch) for a step, outside a call of that
-- step: a call drained by a resumed run (an approved tool's change, a sub-agent's fold into its
-- parent) has its result drained into the log, and its change goes with the run's next step's
-- commit. First change wins.
local staged_key = KEYS[3]
local run_id = ARGV[1]
local step = ARGV[2]
local tool_call_id = ARGV[3]
local state_patch = ARGV[4]

return stage_call_field(staged_key, 'patch', run_id, step, tool_call_id, state_patch) or {'ok'}
